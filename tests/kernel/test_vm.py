"""The afalg plugin on a real Linux kernel, booted under QEMU by ``tests/kernel/vm.py``.

One boot runs ``tests/kernel/in_guest.py``: the guest tests of
``afalg_guest.py`` (known answers, byte-for-byte agreement with ``openssl``,
wrong tags, driver pinning, skip reasons) and the main command, whose table
must have an ``afalg`` row of numbers and name the drivers, and an afalg run
with ``-v`` whose notes give the interface's own cost (a null request).  Where the VM
cannot run (no QEMU, no static busybox, no apt, the download fails) every test
here skips, and the reason is printed at the end of the run.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

import vm

pytestmark = pytest.mark.kernel_vm

ROOT = Path(__file__).resolve().parents[2]
NUMBER = r"\d+\.\d\d"
#: Seconds for one boot with both pytest runs (about 100 under TCG).
#: Seconds the guest may take (boot, every measurement, power-off); QCRYPTO_VM_TIMEOUT sets it.
try:
    TIMEOUT = float(os.environ.get("QCRYPTO_VM_TIMEOUT") or 300)
except ValueError:
    raise pytest.UsageError("QCRYPTO_VM_TIMEOUT: seconds, e.g. 600") from None


class _SkipNote:
    """Prints why the kernel VM tests skipped under the run's summary."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(f"kernel VM tests skipped: {self.reason}")


def prepared(request: pytest.FixtureRequest) -> Any:
    """``vm.prepare()``, or skip the caller's tests when the VM cannot run (and say why once,
    at the end of the run)."""
    try:
        return vm.prepare()
    except vm.VMUnavailable as exc:
        if not request.config.pluginmanager.has_plugin("qcrypto-kernel-vm-skip"):
            request.config.pluginmanager.register(_SkipNote(str(exc)), "qcrypto-kernel-vm-skip")
        pytest.skip(f"kernel VM unavailable: {exc}")


@pytest.fixture(scope="module")
def guest(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The JSON report of ``in_guest.py`` from one boot (skips when the VM cannot run)."""
    machine = prepared(request)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COV_", "_PYTEST"))}
    result = machine.run([sys.executable, "tests/kernel/in_guest.py"], cwd=ROOT, env=env,
                         timeout=TIMEOUT)
    if result.returncode == vm.TIMED_OUT:
        pytest.fail(f"the guest did not finish within {TIMEOUT:g} s (QEMU emulates the CPU "
                    "here, slower still on a loaded machine); raise QCRYPTO_VM_TIMEOUT, or "
                    "leave these tests out with -m \"not kernel_vm\"\nconsole (last lines):\n"
                    f"{result.console or '(empty)'}", pytrace=False)
    if result.returncode != 0:
        pytest.fail(f"the guest run failed (exit {result.returncode}):\n{result.stderr[-3000:]}"
                    f"\nconsole:\n{result.console}", pytrace=False)
    return json.loads(result.stdout.strip().splitlines()[-1])


def show(run: dict[str, Any]) -> str:
    return f"$ {' '.join(run['argv'])}\n{run['stdout'][-6000:]}\n{run['stderr'][-2000:]}"


def table(lines: list[str], header: str) -> tuple[list[str], list[str]]:
    """(rows, notes) of one table: the column line and rows, then the indented notes."""
    start = lines.index(header)
    rows, notes = [], []
    for line in lines[start + 1:]:
        if not line.strip() or line.startswith("="):
            break
        (notes if line.startswith("  ") else rows).append(line)
    return rows, notes


def test_guest_kernel_has_af_alg(guest: dict[str, Any]) -> None:
    assert re.match(r"\d+\.\d+", guest["kernel"])


def test_afalg_known_answers_and_byte_comparison_pass(guest: dict[str, Any]) -> None:
    run = guest["guest_tests"]
    assert run["returncode"] == 0, show(run)
    summary = run["stdout"].strip().splitlines()[-1]
    assert re.search(r"\d+ passed", summary) and "failed" not in summary, show(run)
    assert "error" not in summary, show(run)


def test_speed_table_has_an_afalg_row_of_numbers_and_drivers(guest: dict[str, Any]) -> None:
    run = guest["speed"]
    assert run["returncode"] == 0, show(run)
    lines = run["stdout"].splitlines()
    for header, driver in (("Benchmark results for 'sha256' digest (KiB/s):", r"sha256-\S+"),
                           ("Benchmark results for 'aes-128-cbc' cipher (KiB/s):",
                            r"cbc-aes-\S+|cbc\(aes-\S+\)")):
        rows, notes = table(lines, header)
        assert [r.split()[0] for r in rows] == ["plugin", "afalg", "openssl"], show(run)
        for row in rows[1:]:
            cells = row.split()[1:]
            assert len(cells) == 7 and all(re.fullmatch(NUMBER, c) for c in cells), row
        assert any(re.fullmatch(rf"  afalg: driver ({driver}) \(software\)", n) for n in notes), \
            show(run)


#: The MAC and 64-bit cipher tables of the guest's "macs" run: each header with the driver
#: ``afalg`` must name (the kernel's choice) and the one ``afalg:soft`` binds.
NEW_TABLES = (
    ("Benchmark results for 'hmac-sha256' MAC (KiB/s):", r"hmac\(sha256-\S+\)",
     "hmac(sha256-generic)"),
    ("Benchmark results for 'cmac-aes-128' MAC (KiB/s):", r"cmac\(aes-\S+\)",
     "cmac(aes-generic)"),
    ("Benchmark results for 'poly1305' MAC (KiB/s):", r"poly1305-\S+", "poly1305-generic"),
    ("Benchmark results for 'des-cbc' cipher (KiB/s):", r"cbc\(des-generic\)",
     "cbc(des-generic)"),
    ("Benchmark results for 'bf-cbc' cipher (KiB/s):", r"cbc-blowfish-\S+|cbc\(blowfish-\S+\)",
     "cbc(blowfish-generic)"),
    ("Benchmark results for 'cast5-cbc' cipher (KiB/s):", r"cbc-cast5-\S+|cbc\(cast5-\S+\)",
     "cbc(cast5-generic)"),
)


@pytest.mark.parametrize("header, driver, soft", NEW_TABLES, ids=[h.split("'")[1]
                                                                  for h, _, _ in NEW_TABLES])
def test_mac_and_64_bit_cipher_rows_have_numbers_and_drivers(guest: dict[str, Any], header: str,
                                                             driver: str, soft: str) -> None:
    run = guest["macs"]
    assert run["returncode"] == 0, show(run)
    rows, notes = table(run["stdout"].splitlines(), header)
    assert [r.split()[0] for r in rows] == ["plugin", "afalg", "afalg:soft"], show(run)
    for row in rows[1:]:
        cells = row.split()[1:]
        assert len(cells) == 7 and all(re.fullmatch(NUMBER, c) for c in cells), row
    assert any(re.fullmatch(rf"  afalg: driver ({driver}) \(software\)", n) for n in notes), \
        show(run)
    assert f"  afalg:soft: driver {soft} (software)" in notes, show(run)


#: cryptotest's line (FreeBSD's printf), its name column captured; a figure under a third of
#: both its size neighbours ends with our outlier mark (``  ? outlier: ...``).
CRYPTOTEST_LINE = re.compile(r" *\d+\.\d{3} sec, +(\d+) +(\S+) crypts, +(\d+) bytes, +\d+ byte/sec, "
                             r"+\d+\.\d Mb/sec(?:  \? outlier: .*)?")


def test_cryptotest_on_afalg_prints_its_lines_and_names_the_kernel_driver(
        guest: dict[str, Any]) -> None:
    """``cryptotest -v -P afalg -z 4``: a line per algorithm and size, 2 x 4 crypts for a
    cipher (encrypt + decrypt) and 4 for an HMAC, sizes 8 to 8192 (16 to 8192 for AES), and
    with -v the kernel's driver as cryptotest's ``device =`` line."""
    run = guest["cryptotest"]
    assert run["returncode"] == 0, show(run)
    lines = run["stdout"].splitlines()
    found = [m.groups() for m in map(CRYPTOTEST_LINE.fullmatch, lines) if m]
    sizes: dict[str, list[int]] = {}
    for crypts, name, size in found:
        assert int(crypts) == (4 if name in ("md5", "sha1", "sha256", "sha384", "sha512")
                               else 8), (name, crypts)
        sizes.setdefault(name, []).append(int(size))
    every = [8 << i for i in range(11)]
    for name in ("des", "3des", "blf", "cast", "sha1", "sha256", "sha384", "sha512"):
        assert sizes.get(name) == every, show(run)
    for name in ("aes", "aes192", "aes256"):
        assert sizes.get(name) == every[1:], show(run)
    assert list(sizes)[:4] == ["des", "3des", "blf", "cast"], show(run)  # cryptotest's order
    devices = {line.split("=", 1)[1].strip() for line in lines if line.startswith("device =")}
    assert "cbc(des-generic)" in devices and any(d.startswith("hmac(sha256") for d in devices), \
        show(run)


#: ``-v``'s note of the interface's own cost: seconds per null request, its unit captured.
INTERFACE_LINE = re.compile(r"  afalg interface: (\d+(?:\.\d+)?) (ns|us|ms) per call \(null "
                            r"request: a 1-byte skcipher ecb\(cipher_null\) request "
                            r"\(send \+ recv\)\)")


def test_verbose_notes_give_the_interface_cost_beside_the_per_call_cost(
        guest: dict[str, Any]) -> None:
    """``-v`` on afalg: a real null request to ``ecb(cipher_null)`` was timed, its figure is
    positive, and each fitted line says how much of its per-call cost the interface is."""
    run = guest["model"]
    assert run["returncode"] == 0, show(run)
    lines = run["stdout"].splitlines()
    found = [m for m in map(INTERFACE_LINE.fullmatch, lines) if m]
    assert len(found) == 1, show(run)
    assert float(found[0].group(1)) > 0, show(run)
    figure = f"{found[0].group(1)} {found[0].group(2)}"
    for alg in ("sha256", "aes-128-cbc"):
        fitted = [x for x in lines if x.startswith(f"  afalg {alg}: ")]
        assert len(fitted) == 1, show(run)
        assert (f", of which the interface (null request) {figure}, + " in fitted[0]
                or f" (the interface's null request alone: {figure}, more than that), + "
                in fitted[0]), show(run)
    print("\n".join(x for x in lines if x.startswith("  afalg ")))
