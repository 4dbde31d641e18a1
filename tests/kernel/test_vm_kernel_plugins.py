"""What the kernel plugins list on a real kernel, and devcrypto's refusal of an empty AEAD
encryption on a real cryptodev-linux module: one boot of ``tests/kernel/vm.py`` running
``tests/kernel/kernel_plugins_guest.py``.

The afalg half needs only the VM.  The devcrypto half needs ``cryptodev.ko`` built for the
VM's kernel (``tests/kernel/cryptodev_module.py``: a cryptodev-linux checkout named by
``QCRYPTO_CRYPTODEV_SRC`` and Debian's headers of that kernel); where it cannot be built its
tests skip with the reason.  The empty encryption itself is never sent: on cryptodev-linux
1.14 it oopses the kernel and hangs the guest.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

import pytest

import cryptodev_module
import vm
from pytest_qcrypto.measure import limits
from test_vm import ROOT, TIMEOUT, prepared

pytestmark = pytest.mark.kernel_vm

def guest_report(request: pytest.FixtureRequest, script: str, *args: str) -> dict[str, Any]:
    """One boot running ``script`` with ``args``, and the path of ``cryptodev.ko`` last when one
    can be built: the JSON report the script prints last, with ``devcrypto_unavailable`` added
    (why the module is not in it; None when it is).  Skips when the VM cannot run."""
    machine = prepared(request)
    version = sorted(p.name for p in machine.module_dir.iterdir())[0]
    argv = [sys.executable, script, *args]
    why = None
    try:
        argv.append(str(cryptodev_module.build(version)))
    except vm.VMUnavailable as exc:
        why = str(exc)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "COV_", "_PYTEST"))}
    result = machine.run(argv, cwd=ROOT, env=env, timeout=TIMEOUT)
    if result.returncode != 0:
        pytest.fail(f"the guest run failed (exit {result.returncode}; 124: timed out after "
                    f"{TIMEOUT:g} s):\n{result.stderr[-3000:]}\nconsole:\n{result.console}",
                    pytrace=False)
    report = json.loads(result.stdout.strip().splitlines()[-1])
    report["devcrypto_unavailable"] = why
    return report


@pytest.fixture(scope="module")
def guest(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The guest's JSON report; ``devcrypto_unavailable`` says why the module is not in it."""
    return guest_report(request, "tests/kernel/kernel_plugins_guest.py")


@pytest.fixture(scope="module")
def devcrypto(guest: dict[str, Any]) -> dict[str, Any]:
    if guest["devcrypto_unavailable"]:
        pytest.skip(f"no cryptodev module for the VM: {guest['devcrypto_unavailable']}")
    report = guest["devcrypto"]
    assert "error" not in report, report["error"]
    return report


def test_afalg_lists_what_this_kernel_binds(guest: dict[str, Any]) -> None:
    afalg = guest["afalg"]
    binds = afalg["binds"]
    assert afalg["listed"] == sorted(n for n, ok in binds.items() if ok)
    absent = sorted(n for n, ok in binds.items() if not ok)
    assert "blake2s256" in absent  # Linux 6.1 has BLAKE2s as a library only, not an AF_ALG hash
    assert "sha256" in afalg["listed"] and "aes-128-gcm" in afalg["listed"]
    said = afalg["details"][0]
    assert said.startswith("algorithms listed: those this kernel binds (each kernel name bound "
                           "once); not in this kernel: "), said
    assert sorted(said.rsplit(": ", 1)[1].split(", ")) == absent
    # every run that uses afalg asks it, within the registry's limit (else: unavailable)
    assert afalg["seconds"] < limits.QUERY_TIMEOUT, afalg["seconds"]


def test_devcrypto_lists_what_the_module_opens(devcrypto: dict[str, Any]) -> None:
    assert devcrypto["version"] == "driver 1.14 loaded.", devcrypto["version"]
    assert devcrypto["listed"] == sorted(n for n, ok in devcrypto["opens"].items() if ok)
    assert "cast5-cbc" not in devcrypto["listed"]  # cryptodev-linux maps no kernel cipher to it
    assert {"sha256", "aes-128-cbc", "aes-128-gcm", "hmac-sha256"} <= set(devcrypto["listed"])


def test_devcrypto_refuses_an_empty_aead_encryption_before_any_ioctl(
        devcrypto: dict[str, Any]) -> None:
    for key in ("refused", "refused_aad", "refused_runner"):
        assert devcrypto[key] and devcrypto[key].startswith(
            "an AEAD encryption of an empty message is refused before the ioctl: on "
            "cryptodev-linux 1.14"), (key, devcrypto[key])
    assert devcrypto["sent_for_empty"] == []
    assert devcrypto["encrypt_16_matches"] is True
    assert devcrypto["decrypt_empty"] == ""


def test_devcrypto_times_the_null_cipher_and_says_it_beside_the_per_call_cost(
        devcrypto: dict[str, Any]) -> None:
    """CRYPTO_NULL (16 in cryptodev-linux's crypto/cryptodev.h, ecb(cipher_null) in its
    ioctl.c): one CIOCCRYPT per null request on the real module, and a -v run's notes give
    its positive figure beside each per-call cost."""
    assert devcrypto["null_what"] == "a 1-byte CIOCCRYPT of the null cipher (id 16)"
    assert devcrypto["null_sent"] == [0xC0306368] * 3  # CIOCCRYPT, kernel-abi.md 1.3
    run = devcrypto["null_run"]
    shown = f"{run['stdout'][-6000:]}\n{run['stderr'][-2000:]}"
    assert run["returncode"] == 0, shown
    lines = run["stdout"].splitlines()
    found = [m for m in map(re.compile(
        r"  devcrypto interface: (\d+(?:\.\d+)?) (ns|us|ms) per call \(null request: a 1-byte "
        r"CIOCCRYPT of the null cipher \(id 16\)\)").fullmatch, lines) if m]
    assert len(found) == 1 and float(found[0].group(1)) > 0, shown
    figure = f"{found[0].group(1)} {found[0].group(2)}"
    for alg in ("sha256", "aes-128-cbc"):
        fitted = [x for x in lines if x.startswith(f"  devcrypto {alg}: ")]
        assert len(fitted) == 1, shown
        assert (f", of which the interface (null request) {figure}, + " in fitted[0]
                or f" (the interface's null request alone: {figure}, more than that), + "
                in fitted[0]), shown
    print("\n".join(x for x in lines if x.startswith("  devcrypto ")))
