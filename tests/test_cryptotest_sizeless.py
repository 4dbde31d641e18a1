"""cryptotest's lines are bytes per second at a buffer size: a public-key algorithm or a KDF
given to -a is a usage error (exit 4) that names the qcrypto speed flag that measures it,
not an empty output with exit 0 (found by a fresh-user trial)."""

import subprocess
import sys

import pytest

from pytest_qcrypto.commands import cryptotest
from pytest_qcrypto.commands.cryptotest import UsageError


@pytest.mark.parametrize(("name", "message"), [
    ("ed25519", "cryptotest: -a ed25519: a signature has no buffer size and cryptotest's "
                "lines are bytes per second: qcrypto speed -S ed25519 measures it"),
    ("ml-kem-768", "cryptotest: -a ml-kem-768: a KEM has no buffer size and cryptotest's "
                   "lines are bytes per second: qcrypto speed -S ml-kem-768 measures it"),
    ("scrypt-n1024", "cryptotest: -a scrypt-n1024-r8-p1: a KDF has no buffer size and "
                     "cryptotest's lines are bytes per second: qcrypto speed -K "
                     "scrypt-n1024-r8-p1 measures it"),
])
def test_a_size_less_algorithm_is_a_usage_error(name, message):
    with pytest.raises(UsageError) as info:
        cryptotest.parse(["-P", "openssl", "-a", name, "10", "16"])
    assert str(info.value) == message


def test_the_command_exits_4_with_one_line():
    r = subprocess.run([sys.executable, "-c", "from pytest_qcrypto.commands.cryptotest import main; "
                        "raise SystemExit(main())", "-P", "openssl", "-a", "ed25519"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 4
    assert r.stdout == ""
    assert r.stderr.strip().splitlines() == [
        "cryptotest: -a ed25519: a signature has no buffer size and cryptotest's lines are "
        "bytes per second: qcrypto speed -S ed25519 measures it"]


def test_the_cryptotest_layout_says_why_a_size_less_table_has_no_line():
    from pytest_qcrypto.measure.harness import Measurement
    from pytest_qcrypto.output.cryptotest_layout import cryptotest_lines
    from pytest_qcrypto.output.tables import Cell, assemble

    m = Measurement("ed25519", "openssl", 0, "sign", count=100, rounds_s=(0.1, 0.1, 0.1))
    table = assemble("ed25519", "", ["openssl"], {("openssl", "sign"): Cell(m)})
    assert cryptotest_lines([table]) == [
        "ed25519: no cryptotest line (no buffer size: its ops/s are in "
        "--qcrypto-format=qcrypto or openssl)"]
