"""cryptodev-linux's module for the kernel VM: built from a source checkout, kept in the cache.

cryptodev-linux is not in Debian, and its source (GPL-2.0, github.com/cryptodev-linux) is
not part of this repository.  :func:`build` compiles ``cryptodev.ko`` from the checkout named
by ``QCRYPTO_CRYPTODEV_SRC`` (the version the kernel oops was seen on: tag
``cryptodev-linux-1.14``) against the VM kernel's headers (Debian's
``linux-headers-<version>``, under ``/usr/src``), once per source and kernel; the
guest inserts it with ``insmod``.  When any of that is missing, :class:`vm.VMUnavailable`
says what, in one line, and the tests that need the module skip with it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import vm

#: The environment variable naming a cryptodev-linux source checkout.
SOURCE_ENV = "QCRYPTO_CRYPTODEV_SRC"


def _stamp(src: Path) -> str:
    """A digest of the module's sources, so a changed checkout is built again."""
    h = hashlib.sha256()
    for path in sorted(src.glob("*.[ch]")) + sorted(src.glob("crypto/*.h")) + [src / "Makefile"]:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def build(version: str, cache: Path | None = None) -> Path:
    """``cryptodev.ko`` for kernel ``version`` (``6.1.0-57-amd64``), built once and cached."""
    source = os.environ.get(SOURCE_ENV)
    if not source:
        raise vm.VMUnavailable(f"no cryptodev-linux source: set {SOURCE_ENV} to a checkout of "
                               "cryptodev-linux (tag cryptodev-linux-1.14); it is not in "
                               "Debian or this repository")
    src = Path(source)
    if not (src / "ioctl.c").is_file() or not (src / "Makefile").is_file():
        raise vm.VMUnavailable(f"{SOURCE_ENV}={source} is not a cryptodev-linux checkout "
                               "(no ioctl.c or Makefile)")
    headers = Path("/usr/src") / f"linux-headers-{version}"
    if not (headers / "Makefile").is_file():
        raise vm.VMUnavailable(f"no headers of the VM kernel: {headers} (apt-get install "
                               f"linux-headers-{version})")
    if shutil.which("make") is None or shutil.which("gcc") is None:
        raise vm.VMUnavailable("make or gcc not found (Debian packages make, gcc)")
    cache = cache or vm.cache_dir()
    ko = cache / f"cryptodev-{version}-{_stamp(src)}.ko"
    if ko.exists():
        return ko
    with tempfile.TemporaryDirectory(prefix="qcrypto-cryptodev-") as tmp:
        tree = Path(tmp) / "src"
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns(".git", "*.o", "*.ko"))
        done = subprocess.run(["make", f"KERNEL_DIR={headers}", "-j2"], cwd=tree,
                              capture_output=True, text=True, timeout=600)
        built = tree / "cryptodev.ko"
        if done.returncode != 0 or not built.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise vm.VMUnavailable(f"building cryptodev.ko failed (exit {done.returncode}): "
                                   f"{tail[0]}")
        shutil.copyfile(built, ko.with_suffix(".tmp"))
        ko.with_suffix(".tmp").replace(ko)
    return ko
