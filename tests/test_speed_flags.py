"""qcrypto speed's algorithm flags given twice measure both; empty names and KDF names with a
loose end are refused (issue 24)."""

import pytest

from pytest_qcrypto.algorithms import catalog, settings
from pytest_qcrypto.commands import qcrypto as cli


def _args(*argv):
    ns, extra = cli.build_parser().parse_known_args(["speed", *argv])
    return cli.speed_args(ns, extra)


@pytest.mark.parametrize("flag, option, first, second", [
    ("-D", "digest", "sha256", "md5"), ("-C", "cipher", "aes-128-cbc", "aes-256-gcm"),
    ("-M", "mac", "hmac-sha256", "poly1305"), ("-S", "pkey", "ed25519", "x25519"),
    ("-K", "kdf", "scrypt", "pbkdf2-sha256")])
def test_a_flag_given_twice_measures_both(flag, option, first, second):
    args = _args(flag, first, flag, second)
    assert [args[i + 1] for i, a in enumerate(args) if a == f"--qcrypto-{option}"] == [
        first, second]


@pytest.mark.parametrize("flag", ["-C", "-D", "-M", "-S", "-K"])
def test_an_empty_name_is_refused(flag, capsys):
    assert cli.main(["speed", flag, ""]) == 4
    assert capsys.readouterr().err.startswith(f"ERROR: qcrypto speed: {flag}: an empty name; "
                                              f"give one, e.g. {flag} ")


@pytest.mark.parametrize("name, end", [("scrypt-", "a dash"), ("scrypt-n1024-", "a dash"),
                                       ("scrypt ", "a space"), ("argon2id-m1024 ", "a space")])
def test_a_kdf_name_with_a_loose_end_is_refused(name, end):
    with pytest.raises(settings.SettingsError, match=f"ends in {end}"):
        settings.parse_algorithms([name], catalog.OPTION_GROUPS["kdf"], "--qcrypto-kdf")


def test_a_comma_list_with_spaces_still_reads():
    found = settings.parse_algorithms(["scrypt, pbkdf2-sha256"], catalog.OPTION_GROUPS["kdf"],
                                      "--qcrypto-kdf")
    assert [a.family for a in found] == ["scrypt", "pbkdf2-sha256"]
