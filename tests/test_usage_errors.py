"""Bad command lines: a usage error (exit 4) with a message that names the valid choices."""

import sys

import pytest

from conftest import FAST

DIGEST = ("--qcrypto-digest", "sha256")


@pytest.mark.parametrize("args, message", [
    (("--qcrypto-digest", "sha265"), "unknown digest 'sha265'; did you mean sha256"),
    (("--qcrypto-digest", "aes-128-cbc"), "aes-128-cbc is a cipher: use --qcrypto-cipher"),
    (("--qcrypto-cipher", "aes-128-cbd"), "unknown cipher 'aes-128-cbd'; did you mean"),
    (("--qcrypto-cipher", "nosuch"), "Valid ciphers: aes-128-cbc"),
    (("--qcrypto-digest", ","), "--qcrypto-digest: ',' has an empty element"),
    (("--qcrypto-digest", ""), "no algorithm name given"),
    ((*DIGEST, "--qcrypto-plugin", "opensll"), "unknown crypto plugin 'opensll'; did you mean 'openssl'? Valid"),
    ((*DIGEST, "--qcrypto-plugin", "nosuch"), "Valid plugins: openssl, hashlib, pycryptodome"),
    ((*DIGEST, "--qcrypto-plugin", "openssl", "--qcrypto-plugin", "openssl-3"),
     "'openssl-3' names the same plugin as 'openssl'"),
    ((*DIGEST, "--qcrypto-plugin", "hashlib,hashlib"),
     "--qcrypto-plugin: 'hashlib' is given twice; give each plugin once"),
    ((*DIGEST, "--qcrypto-history="), "--qcrypto-history: the PATH is empty; give a folder name"),
    ((*DIGEST, "--qcrypto-plugin", ",".join(["hashlib"] * 11)), "at most 10 plugins, got 11"),
    ((*DIGEST, "--qcrypto-size", "0"), "buffer size must be at least 1 byte, not 0"),
    ((*DIGEST, "--qcrypto-size", "-16"), "buffer size must be at least 1 byte, not -16"),
    ((*DIGEST, "--qcrypto-size", "abc"), "'abc' is not a whole number of bytes"),
    ((*DIGEST, "--qcrypto-size", "1.5"), "'1.5' is not a whole number of bytes"),
    ((*DIGEST, "--qcrypto-size", "99999999999"), "over the limit"),
    (("--qcrypto-cipher", "aes-128-cbc", "--qcrypto-size", "17"),
     "aes-128-cbc is a 128-bit block cipher in CBC mode without padding: the buffer size must be "
     "a multiple of its 16-byte block, not 17"),
    (("--qcrypto-cipher", "des-ede3-cbc", "--qcrypto-size", "12"), "8-byte block, not 12"),
    (("--qcrypto-cipher", "aes-128-xts", "--qcrypto-size", "8"),
     "aes-128-xts needs a buffer of at least 16 bytes, not 8"),
    ((*DIGEST, "--qcrypto-min-time", "0"), "--qcrypto-min-time: must be more than 0"),
    ((*DIGEST, "--qcrypto-min-time", "soon"), "'soon' is not a number of seconds"),
    ((*DIGEST, "--qcrypto-min-time", "nan"), "--qcrypto-min-time: must be more than 0"),
    ((*DIGEST, "--qcrypto-rounds", "0"), "--qcrypto-rounds: must be from 1 to 1000, not 0"),
    ((*DIGEST, "--qcrypto-seed", "x"), "--qcrypto-seed: 'x' is not a whole number"),
])
def test_usage_error(pytester, args, message):
    r = pytester.runpytest(*args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    err = r.stderr.str()
    assert message in err, err
    assert "Traceback" not in err + r.stdout.str()


def test_ciphers_accept_any_size_in_stream_modes(pytester):
    r = pytester.runpytest("--qcrypto-cipher", "aes-128-ctr,aes-128-gcm,chacha20",
                           "--qcrypto-plugin", "openssl", "--qcrypto-size", "17", *FAST)
    assert r.ret == 0


def test_bad_marker_arguments_fail_that_test_with_a_message(pytester):
    pytester.makepyfile('''
import pytest
@pytest.mark.qcrypto(algorithms=["sha265"])
def test_x(qcrypto_case, qcrypto_context):
    pass
''')
    r = pytester.runpytest()
    r.assert_outcomes(errors=1)  # that test errs at setup; the module's others still run
    out = r.stdout.str()
    assert "@pytest.mark.qcrypto: algorithms: unknown algorithm 'sha265'; did you mean sha256" in out
    assert "Traceback" not in out


def test_a_marker_size_the_algorithm_cannot_take_names_sizes_not_the_option(pytester):
    pytester.makepyfile('''
import pytest
@pytest.mark.qcrypto(algorithms=["aes-128-cbc"], plugins=["openssl"], sizes=[17])
def test_x(qcrypto_case, qcrypto_context):
    pass
''')
    r = pytester.runpytest()
    r.assert_outcomes(errors=1)
    assert ("test_x: @pytest.mark.qcrypto: sizes: aes-128-cbc is a 128-bit block cipher in CBC "
            "mode without padding") in r.stdout.str()


def test_third_party_plugin_with_a_bad_name_is_a_usage_error(pytester):
    pytester.makeconftest('''
from pytest_qcrypto.backends import CryptoPlugin
class Bad(CryptoPlugin):
    name = "has space"
def pytest_qcrypto_plugins():
    return [Bad()]
''')
    r = pytester.runpytest(*DIGEST)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "unusable name 'has space'" in r.stderr.str()


def test_third_party_hook_returning_junk_is_a_usage_error(pytester):
    pytester.makeconftest("def pytest_qcrypto_plugins():\n    return [42]\n")
    r = pytester.runpytest(*DIGEST)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "not a pytest_qcrypto CryptoPlugin" in r.stderr.str()


@pytest.mark.parametrize("args, message", [
    (("--qcrypto-cipher", "all", "--qcrypto-plugin", "hashlib"),
     "nothing to measure: hashlib supports no cipher"),
    (("--qcrypto-digest", "all", "--qcrypto-plugin", "missing"),
     "nothing to measure: missing: unavailable: libmissing is not installed"),
])
def test_nothing_to_measure_is_a_usage_error_not_exit_5(pytester, args, message):
    from conftest import TEST_PLUGINS

    pytester.makeconftest(TEST_PLUGINS)
    r = pytester.runpytest(*args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert message in r.stderr.str()


def test_failure_headline_is_the_node_id(pytester):
    from conftest import TEST_PLUGINS

    pytester.makeconftest(TEST_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "sha256", "--qcrypto-plugin", "wrong",
                           "--qcrypto-size", "16")
    r.stdout.fnmatch_lines(["_* qcrypto::sha256[[]wrong-16[]] _*"])


# -- ini keys: the message names the key and its file, not the command-line option ------------

BOOL_WORDS = "write true, yes, on, 1, y or t for true, false, no, off, 0, n or f for false"


@pytest.mark.parametrize("line, message", [
    ("qcrypto_min_time = abc", "qcrypto_min_time in tox.ini: 'abc' is not a number of seconds"),
    ("qcrypto_min_time = 0", "qcrypto_min_time in tox.ini: must be more than 0 and at most "
                             "3600 seconds, not 0"),
    ("qcrypto_rounds = x",
     "qcrypto_rounds in tox.ini: 'x' is not a whole number (only the ASCII digits 0-9)"),
    ("qcrypto_rounds = 0", "qcrypto_rounds in tox.ini: must be from 1 to 1000, not 0"),
    ("qcrypto_sizes = 16 abc", "qcrypto_sizes in tox.ini: 'abc' is not a whole number of bytes "
                               "(only the ASCII digits 0-9) nor a named grid: qnx, openssl, "
                               "tls or supercop"),
    ("qcrypto_sizes = 16,,32", "qcrypto_sizes in tox.ini: '16,,32' has an empty element; "
                               "separate sizes with single commas, e.g. 16,64"),
    ("qcrypto_sizes = 12", "qcrypto_sizes in tox.ini: des-ede3-cbc is a 64-bit block cipher in "
                           "CBC mode without padding: the buffer size must be a multiple of its "
                           "8-byte block, not 12"),
    ("qcrypto_timeout = zero", "qcrypto_timeout in tox.ini: 'zero' is not a number of seconds; "
                               "give a number of seconds more than 0 and at most 86400, or 'off' "
                               "for no limit"),
    ("qcrypto_confirm = x",
     "qcrypto_confirm in tox.ini: 'x' is not a whole number (only the ASCII digits 0-9)"),
    ("qcrypto_confirm = 99", "qcrypto_confirm in tox.ini: must be from 0 to 20, not 99"),
    ("qcrypto_allow_missing = maybe",
     f"qcrypto_allow_missing in tox.ini: 'maybe' is not true or false; {BOOL_WORDS}"),
    ("qcrypto_require_same_machine = sometimes",
     f"qcrypto_require_same_machine in tox.ini: 'sometimes' is not true or false; {BOOL_WORDS}"),
    ("qcrypto_plugins = opensll", "qcrypto_plugins in tox.ini: unknown crypto plugin 'opensll'; "
                                  "did you mean 'openssl'? Valid plugins: openssl, hashlib, "
                                  "pycryptodome, afalg, devcrypto (see pytest --qcrypto-list or "
                                  "qcrypto list)"),
    ("qcrypto_plugins = openssl openssl-3", "qcrypto_plugins in tox.ini: 'openssl-3' names the "
                                            "same plugin as 'openssl'; give each plugin once"),
    ("qcrypto_plugins = " + " ".join(["hashlib"] * 11),
     "qcrypto_plugins in tox.ini: at most 10 plugins, got 11 (" + ", ".join(["hashlib"] * 11)
     + ")"),
    ("qcrypto_threshold = x",  # the style the others follow
     "qcrypto_threshold in tox.ini: 'x' is not a percentage (write 10% or 10)"),
])
def test_bad_ini_value_names_the_key_and_the_file(pytester, line, message):
    pytester.makeini(f"[pytest]\n{line}\n")
    r = pytester.runpytest("--qcrypto-cipher", "des-ede3-cbc")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message}" in r.stderr.lines, r.stderr.str()
    assert "Traceback" not in r.stderr.str() + r.stdout.str()


def test_ini_file_is_named_as_found_and_the_command_line_still_wins(pytester):
    pytester.makefile(".ini", pytest="[pytest]\nqcrypto_rounds = many\n")
    r = pytester.runpytest(*DIGEST)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: qcrypto_rounds in pytest.ini: 'many' is not a whole number (only the ASCII "
            "digits 0-9)") in r.stderr.lines
    r = pytester.runpytest(*DIGEST, "--qcrypto-rounds", "none")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --qcrypto-rounds: 'none' is not a whole number (only the ASCII digits "
            "0-9)") in r.stderr.lines


@pytest.mark.parametrize("override, message", [
    ("qcrypto_min_time=abc", "-o qcrypto_min_time: 'abc' is not a number of seconds"),
    ("qcrypto_allow_missing=maybe",
     f"-o qcrypto_allow_missing: 'maybe' is not true or false; {BOOL_WORDS}"),
    ("qcrypto_threshold=x", "-o qcrypto_threshold: 'x' is not a percentage (write 10% or 10)"),
])
def test_an_ini_value_from_dash_o_says_so(pytester, override, message):
    r = pytester.runpytest(*DIGEST, "-o", override)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message}" in r.stderr.lines, r.stderr.str()


# -- sizes and whole numbers: no empty element, no empty list, ASCII digits only --------------

@pytest.mark.parametrize("args, message", [
    (("--qcrypto-size", "16,,32"), "--qcrypto-size: '16,,32' has an empty element; separate "
                                   "sizes with single commas, e.g. 16,64"),
    (("--qcrypto-size", "16,"), "--qcrypto-size: '16,' has an empty element; separate sizes "
                                "with single commas, e.g. 16,64"),
    (("--qcrypto-size", "16", "--qcrypto-size", ""),
     "--qcrypto-size: '16,' has an empty element; separate sizes with single commas, e.g. 16,64"),
    (("--qcrypto-size", ""), "--qcrypto-size: the list of sizes is empty; give sizes in bytes, "
                             "e.g. 16,64, or leave it out for the default "
                             "16,64,256,1024,4096,8192,32768"),
    (("--qcrypto-size", " "), "--qcrypto-size: the list of sizes is empty; give sizes in bytes, "
                              "e.g. 16,64, or leave it out for the default "
                              "16,64,256,1024,4096,8192,32768"),
    (("--qcrypto-size", "\u0661\u0666"),  # Arabic-Indic 16, which int() takes
     "--qcrypto-size: '\u0661\u0666' is not a whole number of bytes (only the ASCII digits 0-9)"
     " nor a named grid: qnx, openssl, tls or supercop"),
    (("--qcrypto-size", "1_024"),
     "--qcrypto-size: '1_024' is not a whole number of bytes (only the ASCII digits 0-9)"
     " nor a named grid: qnx, openssl, tls or supercop"),
    (("--qcrypto-size", "16k"),
     "--qcrypto-size: '16k' is not a whole number of bytes (only the ASCII digits 0-9)"
     " nor a named grid: qnx, openssl, tls or supercop"),
    (("--qcrypto-rounds", "\u0663"),
     "--qcrypto-rounds: '\u0663' is not a whole number (only the ASCII digits 0-9)"),
    (("--qcrypto-rounds", ""), "--qcrypto-rounds: '' is not a whole number (only the ASCII "
                               "digits 0-9)"),
    (("--qcrypto-min-time", ""), "--qcrypto-min-time: '' is not a number of seconds"),
    (("--qcrypto-confirm", "\u0663"),
     "--qcrypto-confirm: '\u0663' is not a whole number (only the ASCII digits 0-9)"),
    (("--qcrypto-seed", "\u0663"), "--qcrypto-seed: '\u0663' is not a whole number (only the "
                                   "ASCII digits 0-9, with an optional sign)"),
    # numbers of seconds, percentages, KiB/s and jobs: ASCII too (float() takes '\u0661')
    (("--qcrypto-min-time", "\u0661"), "--qcrypto-min-time: '\u0661' is not a number of seconds"),
    (("--qcrypto-min-time", "0_1"), "--qcrypto-min-time: '0_1' is not a number of seconds"),
    (("--qcrypto-timeout", "\u0666\u0660"), "--qcrypto-timeout: '\u0666\u0660' is not a number of "
                                         "seconds; give a number of seconds more than 0 and at "
                                         "most 86400, or 'off' for no limit"),
    (("--qcrypto-threshold", "\u0661\u0660%"),
     "--qcrypto-threshold: '\u0661\u0660%' is not a percentage (write 10% or 10)"),
    (("--qcrypto-jobs", "\u0662"), "--qcrypto-jobs: '\u0662' is not valid; give a whole number "
                                   "of worker processes from 1 up, or 'auto' for all * CPUs"),
])
def test_sizes_and_whole_numbers_are_strict(pytester, args, message):
    r = pytester.runpytest(*DIGEST, *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in r.stderr.str() + r.stdout.str()


def test_whole_numbers_keep_their_sign_and_spaces():
    from pytest_qcrypto.algorithms import settings

    assert settings.parse_sizes([" 16 , 64", "16"]) == (16, 64)
    assert settings.parse_sizes([]) == settings.DEFAULT_SIZES  # not given: the default
    assert settings.parse_rounds(" 3 ") == 3
    assert settings.whole_number(" -3 ", "x", -5, 5) == -3
    with pytest.raises(settings.SettingsError, match="x: '\u0663' is not a whole number"):
        settings.whole_number("\u0663", "x", -5, 5)
    with pytest.raises(settings.SettingsError, match="at least 1 byte, not -16"):
        settings.parse_sizes(["-16"])


# -- `all` in each option that asks for it must find something ---------------------------------

def _supporting(kinds):
    """The built-in plugins that support an algorithm of ``kinds`` on this machine."""
    from pytest_qcrypto.algorithms import catalog
    from pytest_qcrypto.backends import builtin_plugins
    from pytest_qcrypto.measure.registry import Registry

    registry = Registry(builtin_plugins())
    names = {a.name for a in catalog.ALGORITHMS if a.kind in kinds}
    return ", ".join(p.name for p in registry.plugins if registry.supported(p) & names)


@pytest.mark.parametrize("args", [
    ("--qcrypto-cipher", "all", "--qcrypto-plugin", "hashlib"),
    ("--qcrypto-cipher", "all", "--qcrypto-plugin", "hashlib", "--qcrypto-digest", "sha256"),
    ("--qcrypto-digest", "md5", "--qcrypto-cipher", "aes-128-cbc,all", "--qcrypto-plugin",
     "hashlib"),
])
def test_all_ciphers_of_a_digest_only_plugin_is_a_usage_error_also_beside_a_digest(pytester,
                                                                                    args):
    r = pytester.runpytest(*args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --qcrypto-cipher all: nothing to measure: hashlib supports no cipher or "
            f"AEAD. Plugins that support one here: {_supporting(('cipher', 'aead'))}; choose "
            "them with --qcrypto-plugin (see pytest --qcrypto-list or qcrypto list)"
            ) in r.stderr.lines, r.stderr.str()


def test_all_digests_of_an_unavailable_plugin_names_those_that_have_one(pytester):
    from conftest import TEST_PLUGINS

    pytester.makeconftest(TEST_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "all", "--qcrypto-cipher", "aes-128-ctr",
                           "--qcrypto-plugin", "missing")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --qcrypto-digest all: nothing to measure: missing: unavailable: libmissing "
            "is not installed (pip install libmissing). Plugins that support one here: "
            f"{_supporting(('digest',))}, wrong; choose them with --qcrypto-plugin (see pytest "
            "--qcrypto-list or qcrypto list)") in r.stderr.lines, r.stderr.str()


def test_all_in_both_options_asks_for_everything_like_openssl_speed(pytester):
    """``qcrypto speed -P hashlib`` (no -C/-D) passes both: the digests are enough."""
    r = pytester.runpytest("--qcrypto-digest", "all", "--qcrypto-cipher", "all",
                           "--qcrypto-plugin", "hashlib", "--qcrypto-size", "16", "-k", "md5",
                           *FAST)
    assert r.ret == 0, r.stderr.str()
    from conftest import TEST_PLUGINS

    pytester.makeconftest(TEST_PLUGINS)
    r = pytester.runpytest("--qcrypto-digest", "all", "--qcrypto-cipher", "all",
                           "--qcrypto-plugin", "missing")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: nothing to measure: missing: unavailable: libmissing is not installed (pip "
            "install libmissing). Plugins that support one here: "
            f"{_supporting(('digest', 'cipher', 'aead'))}, wrong; choose them with "
            "--qcrypto-plugin (see pytest --qcrypto-list or qcrypto list)"
            ) in r.stderr.lines, r.stderr.str()


# -- the qcrypto command points to `qcrypto list` once -----------------------------------------

def test_qcrypto_command_says_see_qcrypto_list_once(pytester, capsys):
    from pytest_qcrypto.commands import qcrypto as cli
    from pytest_qcrypto.algorithms import settings

    valid = ", ".join(n for n in settings.catalog.names("digest"))
    assert cli.main(["speed", "-D", "sha265"]) == pytest.ExitCode.USAGE_ERROR
    assert capsys.readouterr().err == (
        "ERROR: qcrypto speed: -D: unknown digest 'sha265'; did you mean sha256, sha3-256, "
        f"sha512? Valid digests: {valid}, or all (see qcrypto list)\n")
    r = pytester.runpytest("--qcrypto-digest", "sha265")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert ("ERROR: --qcrypto-digest: unknown digest 'sha265'; did you mean sha256, sha3-256, "
            f"sha512? Valid digests: {valid}, or all (see pytest --qcrypto-list or qcrypto list)"
            ) in r.stderr.lines


def test_qcrypto_command_plugin_errors_say_see_qcrypto_list_once(pytester):
    r = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "speed", "-D", "sha256",
                     "-P", "nope")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: unknown crypto plugin 'nope'; * Valid plugins: openssl, "
                            "* (see qcrypto list)"])
    r = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "speed", "-C", "all",
                     "-P", "hashlib")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: --qcrypto-cipher all: nothing to measure: hashlib supports "
                            "no cipher or AEAD. * (see qcrypto list)"])
    assert "pytest --qcrypto-list" not in r.stderr.str()


# -- empty elements in name lists; ini lists written with blanks --------------------------------

@pytest.mark.parametrize("args, message", [
    (("--qcrypto-digest", "sha256,,md5"), "--qcrypto-digest: 'sha256,,md5' has an empty element; "
                                          "separate digest names with single commas, e.g. "
                                          "sha256,md5"),
    (("--qcrypto-cipher", ",aes-128-cbc"), "--qcrypto-cipher: ',aes-128-cbc' has an empty "
                                           "element; separate cipher names with single commas, "
                                           "e.g. aes-128-cbc,aes-256-gcm"),
    (("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib,,openssl"),
     "--qcrypto-plugin: 'hashlib,,openssl' has an empty element; separate plugin names with "
     "single commas, e.g. openssl,hashlib"),
])
def test_an_empty_element_in_a_name_list_is_a_usage_error(pytester, args, message):
    r = pytester.runpytest(*args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {message}" in r.stderr.lines, r.stderr.str()


@pytest.mark.parametrize("ini", [
    "qcrypto_sizes = 16, 64\nqcrypto_plugins = hashlib, openssl",
    "qcrypto_sizes = 16 64\nqcrypto_plugins = hashlib openssl",
    "qcrypto_sizes = 16 ,64\nqcrypto_plugins = hashlib ,openssl",
])
def test_ini_lists_may_be_written_with_blanks(pytester, ini):
    pytester.makeini(f"[pytest]\n{ini}\n")
    r = pytester.runpytest("--qcrypto-digest", "sha256", *FAST)
    r.assert_outcomes(passed=4)
    r.stdout.fnmatch_lines(["plugin *16 *64", "hashlib *", "openssl *"])


@pytest.mark.parametrize("ini, message", [
    ("qcrypto_sizes = 16, , 64", "qcrypto_sizes in tox.ini: '16,,64' has an empty element"),
    ("qcrypto_plugins = hashlib,", "qcrypto_plugins in tox.ini: 'hashlib,' has an empty element"),
])
def test_an_empty_element_in_an_ini_list_is_named(pytester, ini, message):
    pytester.makeini(f"[pytest]\n{ini}\n")
    r = pytester.runpytest("--qcrypto-digest", "sha256")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: {message}; separate * with single commas, e.g. *"])


def test_overlong_plugin_names_are_cut_in_messages_and_driver_names_are_capped(pytester):
    r = pytester.runpytest(*DIGEST, "--qcrypto-plugin", "afalg:" + "x" * 3000)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert r.stderr.lines[0] == (
        f"ERROR: plugin name {'afalg:' + 'x' * 54!r}... (3006 characters): the driver name is "
        "3000 bytes; kernel crypto driver names are under 128 (CRYPTO_MAX_ALG_NAME)")
    r = pytester.runpytest(*DIGEST, "--qcrypto-plugin", "y" * 5000)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert r.stderr.lines[0].startswith(f"ERROR: unknown crypto plugin {'y' * 60!r}... (5000 "
                                        "characters). Valid plugins: openssl")
    assert len(r.stderr.lines[0]) < 300
