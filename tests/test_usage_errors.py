"""Bad command lines: a usage error (exit 4) with a message that names the valid choices."""

import pytest

from conftest import FAST

DIGEST = ("--qcrypto-digest", "sha256")


@pytest.mark.parametrize("args, message", [
    (("--qcrypto-digest", "sha265"), "unknown digest 'sha265'; did you mean sha256"),
    (("--qcrypto-digest", "aes-128-cbc"), "aes-128-cbc is a cipher: use --qcrypto-cipher"),
    (("--qcrypto-cipher", "aes-128-cbd"), "unknown cipher 'aes-128-cbd'; did you mean"),
    (("--qcrypto-cipher", "nosuch"), "Valid ciphers: aes-128-cbc"),
    (("--qcrypto-digest", ","), "no algorithm name given"),
    ((*DIGEST, "--qcrypto-plugin", "opensll"), "unknown crypto plugin 'opensll'; did you mean 'openssl'? Valid"),
    ((*DIGEST, "--qcrypto-plugin", "nosuch"), "Valid plugins: openssl, hashlib, pycryptodome"),
    ((*DIGEST, "--qcrypto-plugin", "openssl", "--qcrypto-plugin", "openssl-3"),
     "'openssl-3' names the same plugin as 'openssl'"),
    ((*DIGEST, "--qcrypto-plugin", "hashlib,hashlib"), "same plugin"),
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


def test_bad_marker_arguments_are_a_collection_error_with_a_message(pytester):
    pytester.makepyfile('''
import pytest
@pytest.mark.qcrypto(algorithms=["sha265"])
def test_x(qcrypto_case, qcrypto_context):
    pass
''')
    r = pytester.runpytest()
    assert r.ret == pytest.ExitCode.INTERRUPTED  # pytest stops on collection errors
    out = r.stdout.str()
    assert "@pytest.mark.qcrypto: algorithms: unknown algorithm 'sha265'; did you mean sha256" in out
    assert "Traceback" not in out


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
