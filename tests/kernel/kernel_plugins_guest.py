"""Run inside the kernel VM: what the kernel plugins list, and devcrypto's refusals on a real
cryptodev-linux module.  ``tests/kernel/test_vm_kernel_plugins.py`` starts it.

``python tests/kernel/kernel_plugins_guest.py [CRYPTODEV_KO]`` prints one JSON object:

* ``afalg``: what ``AfalgPlugin().supported()`` lists and how long it took (seconds, the
  first call of the boot, kernel modules loading), and, found here by binding an
  ``AF_ALG`` socket to each kernel name the plugin maps, which of them this kernel has;
* ``devcrypto`` (with a module path: it is inserted first): the module's load line, what
  ``DevcryptoPlugin().supported()`` lists and which algorithms the plugin opens a context of;
  then, on an AES-128-GCM context, the ``Unsupported`` text an empty encryption gets (by
  ``encrypt()`` and by a timed-loop runner) and the ioctls sent meanwhile (none may be: the
  real call oopses this module), and, to show the session works, a 16-byte encryption and an
  empty decryption with its tag, compared with pyca/cryptography; then the null request
  (CRYPTO_NULL = 16): the ioctls of 3 requests, and a ``-v`` run of the plugin (``null_run``:
  its command line, exit status and output) whose notes give the interface's own cost.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends import Unsupported, Workload
from pytest_qcrypto.backends.afalg import SOCKET_TYPE, AfalgPlugin, kernel_name
from pytest_qcrypto.backends.devcrypto import DeviceFile, DevcryptoPlugin


def afalg_report() -> dict[str, Any]:
    started = time.monotonic()
    listed = sorted(AfalgPlugin().supported())  # first, on a fresh boot: modules load here
    seconds = time.monotonic() - started
    binds = {}
    for alg in catalog.ALGORITHMS:
        kname = kernel_name(alg)
        if kname is None:
            continue
        sock = socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0)
        try:
            sock.bind((SOCKET_TYPE[alg.kind], kname))
            binds[alg.name] = True
        except OSError:
            binds[alg.name] = False
        finally:
            sock.close()
    return {"listed": listed, "seconds": seconds, "binds": binds,
            "details": AfalgPlugin().details()}


class CountingDevice(DeviceFile):
    """The real /dev/crypto, each ioctl's request number noted before it is sent."""

    sent: list[int] = []

    def __init__(self, path: str) -> None:
        super().__init__(path)
        real = self.ioctl

        def ioctl(request: int, arg: Any, mutate: bool = False) -> Any:
            CountingDevice.sent.append(request)
            return real(request, arg, mutate)

        self.ioctl = ioctl


def refusal(call: Any) -> str | None:
    try:
        call()
    except Unsupported as exc:
        return str(exc)
    return None


def insert_cryptodev(ko: str) -> tuple[str | None, str]:
    """``insmod ko``: (the error, or None; the module's load line, ``driver 1.14 loaded.``)."""
    loaded = subprocess.run(["insmod", ko], capture_output=True, text=True)
    if loaded.returncode != 0:
        return f"insmod {ko}: {loaded.stderr.strip()}", ""
    log = subprocess.run(["dmesg"], capture_output=True, text=True).stdout.splitlines()
    return None, next((line.split("cryptodev: ", 1)[1] for line in log
                       if "cryptodev: driver" in line), "")


def devcrypto_report(ko: str) -> dict[str, Any]:
    error, version = insert_cryptodev(ko)
    if error:
        return {"error": error}
    plugin = DevcryptoPlugin(device=CountingDevice)
    opens = {}
    for name in sorted(plugin.abi.algorithms):
        alg = catalog.lookup(name)
        try:
            plugin.open(alg, bytes(range(1, alg.key_size + 1))).close()
            opens[name] = True
        except Unsupported:
            opens[name] = False
    listed = sorted(DevcryptoPlugin().supported())
    gcm = catalog.lookup("aes-128-gcm")
    key, nonce = bytes(range(16)), bytes(range(12))
    ctx = plugin.open(gcm, key)
    CountingDevice.sent.clear()
    refused = refusal(lambda: ctx.encrypt(nonce, b""))
    refused_aad = refusal(lambda: ctx.encrypt(nonce, b"", b"header"))
    refused_runner = refusal(lambda: ctx.runner(Workload(b"", nonces=(nonce,))))
    sent_for_empty = list(CountingDevice.sent)
    box = AESGCM(key)
    sealed = ctx.encrypt(nonce, bytes(16))
    opened_empty = ctx.decrypt(nonce, box.encrypt(nonce, b"", None))
    ctx.close()
    null = plugin.null_request()
    CountingDevice.sent.clear()
    null.run(3)
    null_sent = list(CountingDevice.sent)
    null.close()
    return {"null_what": null.what, "null_sent": null_sent,
            "null_run": null_run(), "version": version, "listed": listed, "opens": opens, "refused": refused,
            "refused_aad": refused_aad, "refused_runner": refused_runner,
            "sent_for_empty": sent_for_empty,
            "encrypt_16_matches": sealed == box.encrypt(nonce, bytes(16), None),
            "decrypt_empty": opened_empty.hex()}


#: A -v run of devcrypto (the notes: where the time goes, the interface's null request).
NULL_RUN = [sys.executable, "-m", "pytest", "-p", "pytest_qcrypto.plugin", "-p",
            "no:cacheprovider", "--qcrypto-cipher", "aes-128-cbc", "--qcrypto-digest", "sha256",
            "--qcrypto-plugin", "devcrypto", "--qcrypto-size", "16,256,4096",
            "--qcrypto-min-time", "0.01", "--qcrypto-rounds", "3", "-v"]


def null_run() -> dict[str, Any]:
    done = subprocess.run(NULL_RUN, capture_output=True, text=True, timeout=600,
                          env=dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1"))
    return {"argv": NULL_RUN, "returncode": done.returncode, "stdout": done.stdout,
            "stderr": done.stderr}


def main() -> int:
    report: dict[str, Any] = {"kernel": os.uname().release, "afalg": afalg_report()}
    if len(sys.argv) > 1:
        report["devcrypto"] = devcrypto_report(sys.argv[1])
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
