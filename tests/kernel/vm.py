"""A throw-away Linux kernel for the test suite: Debian's kernel package under QEMU.

This machine's kernel has no AF_ALG; Debian's has.  :func:`prepare` fetches
``linux-image-<version>-amd64-unsigned`` with ``apt-get download`` (once; kept
under ``~/.cache/pytest-qcrypto-kernel``, or ``$QCRYPTO_KERNEL_CACHE``),
unpacks the kernel and the modules a crypto test needs, and builds an
initramfs around the host's static busybox.  :meth:`Machine.run` boots it
(KVM when it is real hardware virtualisation, else TCG emulation), shares the
host's ``/`` read-only over virtio-9p with a tmpfs overlay on top (the guest
can write anywhere; nothing reaches the host), runs one host command as root
in the given directory with the given environment, and returns its exit
status, stdout and stderr.  A boot takes about 3 s under TCG.

Needs: qemu-system-x86_64 (Debian qemu-system-x86), a static busybox
(busybox-static), depmod and modprobe (kmod), dpkg-deb and apt-get.  When one
is missing, or the package cannot be fetched, :class:`VMUnavailable` says
which; the tests skip with that reason.  ``.ci/run`` installs them as root.

From a shell::

    python tests/kernel/vm.py [--cwd DIR] -- python -c 'import socket; print(socket.AF_ALG)'
"""

from __future__ import annotations

import argparse
import fcntl
import lzma
import os
import platform
import shlex
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

#: Modules inserted at boot, dependencies first; anything else loads on demand in the
#: guest (busybox modprobe over the 9p-shared module tree).
REQUIRED_MODULES = ("virtio_pci", "virtio_rng", "9pnet_virtio", "9p", "overlay")
CRYPTO_MODULES = ("af_alg", "algif_hash", "algif_skcipher", "algif_aead", "crypto_user",
                  "aesni_intel", "sha1_ssse3", "sha256_ssse3", "sha512_ssse3",
                  "ghash_clmulni_intel", "gcm", "ctr", "xts", "chacha20poly1305",
                  "chacha_x86_64", "poly1305_x86_64", "des3_ede_x86_64")
#: Parts of the kernel package unpacked (about 20 MB of its 400).
KEEP = ("boot/vmlinuz-", "boot/config-")
KEEP_MODULE_DIRS = ("kernel/crypto/", "kernel/arch/x86/crypto/", "kernel/lib/",
                    "kernel/fs/9p/", "kernel/fs/netfs/", "kernel/fs/fscache/",
                    "kernel/fs/overlayfs/", "kernel/net/9p/", "kernel/drivers/virtio/",
                    "kernel/drivers/char/hw_random/")
#: 9p message size: 512000 is the virtio transport's maximum in Linux 6.1 (4x faster than 8 KiB).
MSIZE = 512000
RUN_MOUNT = "/run/qcrypto-vm"
TIMED_OUT = 124
SETUP_FAILED = 125


class VMUnavailable(Exception):
    """The kernel VM cannot run here; ``str()`` says what is missing (one line)."""


@dataclass(frozen=True)
class GuestResult:
    """What the command did in the guest: exit status (124: timed out), output, console tail."""

    returncode: int
    stdout: str
    stderr: str
    console: str = ""


def cache_dir() -> Path:
    """Where the kernel and initramfs are kept between runs."""
    env = os.environ.get("QCRYPTO_KERNEL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "pytest-qcrypto-kernel"


# -- host tools --------------------------------------------------------------------------


def _which(name: str) -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return shutil.which(name, path=path)


def _is_static_elf(path: str) -> bool:
    """True for an ELF file without a PT_INTERP (dynamic loader) program header."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return False
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))


def find_tools() -> dict[str, str]:
    """Paths of the host tools the VM needs; :class:`VMUnavailable` names a missing one."""
    if platform.machine() != "x86_64":
        raise VMUnavailable(f"the kernel VM boots an amd64 kernel and needs an x86_64 host, "
                            f"not {platform.machine()}")
    packages = {"qemu-system-x86_64": "qemu-system-x86", "busybox": "busybox-static",
                "depmod": "kmod", "modprobe": "kmod", "dpkg-deb": "dpkg",
                "apt-get": "apt", "apt-cache": "apt"}
    tools: dict[str, str] = {}
    for tool, package in packages.items():
        found = _which(tool)
        if found is None:
            raise VMUnavailable(f"{tool} not found (Debian package {package}; "
                                ".ci/run installs it when run as root)")
        tools[tool] = found
    if not _is_static_elf(os.path.realpath(tools["busybox"])):
        raise VMUnavailable(f"{tools['busybox']} is not statically linked "
                            "(install busybox-static)")
    return tools


# -- the kernel package ------------------------------------------------------------------


def _run(argv: Sequence[str], what: str, timeout: float = 300, **kw: object) -> str:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise VMUnavailable(f"{what} failed: {exc}") from None
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
        raise VMUnavailable(f"{what} failed (exit {done.returncode}): {tail[0]}")
    return done.stdout


def kernel_package(tools: Mapping[str, str]) -> str:
    """``linux-image-<abi>-amd64-unsigned``, resolved from the linux-image-amd64 metapackage."""
    if os.environ.get("QCRYPTO_KERNEL_PACKAGE"):
        return os.environ["QCRYPTO_KERNEL_PACKAGE"]

    def resolve() -> str | None:
        try:
            out = subprocess.run([tools["apt-cache"], "depends", "linux-image-amd64"],
                                 capture_output=True, text=True, timeout=60).stdout
        except (OSError, subprocess.TimeoutExpired):
            return None
        for line in out.splitlines():
            dep = line.strip().removeprefix("Depends:").strip()
            if line.strip().startswith("Depends:") and dep.startswith("linux-image-"):
                return dep
        return None

    name = resolve()
    if name is None and os.geteuid() == 0:
        _run([tools["apt-get"], "update", "-qq"], "apt-get update")
        name = resolve()
    if name is None:
        raise VMUnavailable("apt-cache cannot resolve linux-image-amd64 "
                            "(no package lists: run apt-get update as root)")
    return name if name.endswith("-unsigned") else f"{name}-unsigned"


def _wanted(member: str) -> str | None:
    """Where a member of the package's data goes in our tree, or None to skip it."""
    name = member.removeprefix("./").removeprefix("usr/")
    if name.startswith(KEEP):
        return name
    if name.startswith("lib/modules/"):
        parts = name.split("/", 3)
        if len(parts) == 4 and (parts[3].startswith("modules.")
                                or parts[3].startswith(KEEP_MODULE_DIRS)):
            return name
    return None


def _unpack(deb: Path, dest: Path, tools: Mapping[str, str]) -> None:
    """Unpack the kernel and the crypto, virtio and 9p modules of a kernel .deb."""
    with subprocess.Popen([tools["dpkg-deb"], "--fsys-tarfile", str(deb)],
                          stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                target = _wanted(member.name)
                if target is None or not member.isfile():
                    continue
                path = dest / target
                path.parent.mkdir(parents=True, exist_ok=True)
                src = tar.extractfile(member)
                assert src is not None
                with open(path, "wb") as out:
                    shutil.copyfileobj(src, out)
    if proc.returncode != 0:
        raise VMUnavailable(f"dpkg-deb could not read {deb.name}")


def _vmlinux(vmlinuz: Path) -> Path | None:
    """The uncompressed ELF kernel inside a bzImage (QEMU boots it directly via PVH).

    Skips the guest's own XZ decompression, about 2 s under TCG.  None when the
    payload is not XZ.
    """
    data = vmlinuz.read_bytes()
    start = data.find(b"\xfd7zXZ\x00")
    if start < 0:
        return None
    try:
        elf = lzma.LZMADecompressor(lzma.FORMAT_XZ).decompress(data[start:])
    except lzma.LZMAError:
        return None
    if elf[:4] != b"\x7fELF":
        return None
    out = vmlinuz.with_name(vmlinuz.name.replace("vmlinuz", "vmlinux"))
    out.write_bytes(elf)
    return out


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def fetch_kernel(cache: Path, tools: Mapping[str, str]) -> Path:
    """The unpacked kernel tree under ``cache`` (fetched and unpacked on first use)."""
    tree = cache / "kernel"
    if (tree / ".done").exists():
        return tree
    package = kernel_package(tools)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        local = os.environ.get("QCRYPTO_KERNEL_DEB")
        if local:
            deb = Path(local)
        else:
            _run([tools["apt-get"], "download", "-q", "-o", "APT::Sandbox::User=root", package],
                 f"apt-get download {package}", cwd=tmp)
            debs = list(Path(tmp).glob("*.deb"))
            if not debs:
                raise VMUnavailable(f"apt-get download {package} left no .deb")
            deb = debs[0]
        shutil.rmtree(tree, ignore_errors=True)
        _unpack(deb, tree, tools)
    versions = sorted(p.name for p in (tree / "lib" / "modules").iterdir())
    if not versions or not list((tree / "boot").glob("vmlinuz-*")):
        raise VMUnavailable(f"{package} has no kernel or modules")
    _run([tools["depmod"], "-b", str(tree), versions[0]], "depmod")
    _vmlinux(tree / "boot" / f"vmlinuz-{versions[0]}")
    (tree / ".done").write_text(package + "\n")
    return tree


# -- the initramfs -----------------------------------------------------------------------

INIT = r"""#!/bin/busybox sh
# qcrypto-vm init: mount the host root read-only with a tmpfs overlay, run the command.
# (The host's /tmp stays visible: a checkout there must be reachable.)
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in /modules/*.ko; do insmod "$m" || echo "qcrypto-vm: insmod $m failed"; done
stop() { sync; poweroff -f; }
opts=trans=virtio,version=9p2000.L,msize=@MSIZE@
mkdir -p /qrun /lower /overlay /newroot /lib/modules
mount -t 9p -o $opts,cache=none qrun /qrun || { echo "qcrypto-vm: no run directory"; stop; }
fail() { echo "qcrypto-vm: $*" >> /qrun/stderr; echo 125 > /qrun/rc; stop; }
mount -t 9p -o $opts,ro,cache=loose hostroot /lower || fail "cannot mount the host root"
mount -t tmpfs -o mode=755 tmpfs /overlay && mkdir /overlay/upper /overlay/work
mount -t overlay -o lowerdir=/lower,upperdir=/overlay/upper,workdir=/overlay/work overlay \
  /newroot || fail "cannot mount the overlay"
mount -t proc proc /newroot/proc; mount -t sysfs sysfs /newroot/sys
mount -t devtmpfs devtmpfs /newroot/dev
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts; mount -t tmpfs tmpfs /newroot/dev/shm
mount -t tmpfs -o mode=755 tmpfs /newroot/run
mkdir -p /newroot@RUN@ && mount --bind /qrun /newroot@RUN@
mount --bind "/lower$(cat /qrun/moddir)" /lib/modules
echo /bin/modprobe > /proc/sys/kernel/modprobe
hostname qcrypto-vm
chroot /newroot /bin/sh @RUN@/command.sh </dev/null >/qrun/stdout 2>/qrun/stderr
echo $? > /qrun/rc
stop
"""


def _cpio(entries: Sequence[tuple[str, int, bytes]]) -> bytes:
    """A newc ("070701") cpio archive of (path, mode, data) entries, as the kernel unpacks."""
    out = bytearray()

    def add(name: str, mode: int, data: bytes, ino: int) -> None:
        encoded = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        out.extend(b"070701" + b"".join(b"%08X" % v for v in fields) + encoded)
        out.extend(b"\0" * (-len(out) % 4))
        out.extend(data)
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (name, mode, data) in enumerate(entries, start=1):
        add(name, mode, data, ino)
    add("TRAILER!!!", 0, b"", 0)
    return bytes(out)


def _boot_modules(tree: Path, version: str, tools: Mapping[str, str]) -> list[Path]:
    """Module files to insert at boot, each after its dependencies."""
    order: list[Path] = []
    for module in (*REQUIRED_MODULES, *CRYPTO_MODULES):
        done = subprocess.run([tools["modprobe"], "-d", str(tree), "-S", version,
                               "--show-depends", module], capture_output=True, text=True)
        if done.returncode != 0:
            if module in REQUIRED_MODULES:
                raise VMUnavailable(f"the kernel package has no module {module}")
            continue  # built in, or absent: the guest loads what it has on demand
        for line in done.stdout.splitlines():
            words = line.split()
            if len(words) >= 2 and words[0] == "insmod" and Path(words[1]) not in order:
                order.append(Path(words[1]))
    return order


def build_initramfs(tree: Path, version: str, tools: Mapping[str, str], dest: Path) -> Path:
    """The initramfs: busybox, the boot modules, and :data:`INIT`."""
    init = INIT.replace("@MSIZE@", str(MSIZE)).replace("@RUN@", RUN_MOUNT)
    entries: list[tuple[str, int, bytes]] = [
        (d, 0o040755, b"") for d in ("bin", "dev", "proc", "sys", "modules")]
    entries.append(("bin/busybox", 0o100755, Path(tools["busybox"]).read_bytes()))
    entries.append(("init", 0o100755, init.encode()))
    for i, module in enumerate(_boot_modules(tree, version, tools), start=1):
        entries.append((f"modules/{i:03d}-{module.name}", 0o100644, module.read_bytes()))
    tmp = dest.with_suffix(".tmp")
    tmp.write_bytes(_cpio(entries))
    tmp.replace(dest)
    return dest


# -- booting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Machine:
    """A prepared kernel: boot it with :meth:`run` as often as needed."""

    kernel: Path
    initramfs: Path
    module_dir: Path
    qemu: str

    def accel(self) -> list[str]:
        """KVM when /dev/kvm is real VT-x/AMD-V (not PVM, where a stock kernel hangs), else TCG."""
        flags = Path("/proc/cpuinfo").read_text().split()
        kvm = (os.access("/dev/kvm", os.R_OK | os.W_OK) and not Path("/sys/module/kvm_pvm").exists()
               and ("vmx" in flags or "svm" in flags))
        if kvm and os.environ.get("QCRYPTO_KERNEL_ACCEL", "auto") in ("auto", "kvm"):
            return ["-accel", "kvm", "-cpu", "host,-arch-capabilities"]
        return ["-accel", "tcg,tb-size=64", "-cpu", "max"]

    def command_line(self, run_dir: Path) -> list[str]:
        append = ("console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init acpi=noirq "
                  "8250.nr_uarts=1 tsc=reliable no_timer_check")
        machine = ["-machine", "pc"]
        if Path("/usr/share/qemu/qboot.rom").exists():
            machine += ["-bios", "/usr/share/qemu/qboot.rom"]
        return [self.qemu, "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                *machine, *self.accel(), "-m", "1024M", "-smp", "1",
                "-kernel", str(self.kernel), "-initrd", str(self.initramfs), "-append", append,
                "-serial", f"file:{run_dir / 'console.log'}", "-monitor", "none",
                "-device", "virtio-rng-pci",
                "-fsdev", "local,id=hostroot,path=/,security_model=none,readonly=on,"
                          "multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
                "-fsdev", f"local,id=qrun,path={run_dir},security_model=none",
                "-device", "virtio-9p-pci,fsdev=qrun,mount_tag=qrun"]

    def run(self, argv: Sequence[str], cwd: str | os.PathLike[str] | None = None,
            env: Mapping[str, str] | None = None, timeout: float = 120) -> GuestResult:
        """Boot, run ``argv`` as root in ``cwd`` with ``env``, power off; ``timeout`` in seconds."""
        env = dict(os.environ if env is None else env)
        with tempfile.TemporaryDirectory(prefix="qcrypto-vm-") as tmp:
            run_dir = Path(tmp)
            exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items()
                              if k.isidentifier() and k not in ("PWD", "OLDPWD", "SHLVL"))
            (run_dir / "command.sh").write_text(
                f"{exports}cd {shlex.quote(str(cwd or os.getcwd()))} || exit 125\n"
                f"exec {shlex.join(argv)}\n")
            (run_dir / "moddir").write_text(str(self.module_dir))
            try:
                qemu = subprocess.run(self.command_line(run_dir), stdin=subprocess.DEVNULL,
                                      capture_output=True, text=True, timeout=timeout)
                qemu_rc: int | None = qemu.returncode
            except subprocess.TimeoutExpired:
                qemu_rc = None

            def read(name: str) -> str:
                path = run_dir / name
                return path.read_text(errors="replace") if path.exists() else ""

            console = "\n".join(read("console.log").splitlines()[-40:])
            rc_text = read("rc").strip()
            if rc_text.isdigit():
                rc = int(rc_text)
            elif qemu_rc is None:
                rc = TIMED_OUT
            else:
                rc = SETUP_FAILED
            return GuestResult(rc, read("stdout"), read("stderr"), console)


def prepare(cache: Path | None = None) -> Machine:
    """Find the tools, fetch and unpack the kernel, build the initramfs (all cached).

    Raises :class:`VMUnavailable` with the reason when any step cannot be done.
    """
    tools = find_tools()
    cache = cache or cache_dir()
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise VMUnavailable(f"cannot create the kernel cache {cache}: {exc}") from None
    with _locked(cache / ".lock"):
        tree = fetch_kernel(cache, tools)
        version = sorted(p.name for p in (tree / "lib" / "modules").iterdir())[0]
        initramfs = cache / f"initramfs-{version}.cpio"
        stamp = f"{Path(__file__).stat().st_mtime_ns} {os.path.realpath(tools['busybox'])}"
        stamp_file = initramfs.with_suffix(".stamp")
        if (not initramfs.exists() or not stamp_file.exists()
                or stamp_file.read_text() != stamp):
            build_initramfs(tree, version, tools, initramfs)
            stamp_file.write_text(stamp)
    boot = tree / "boot"
    kernel = boot / f"vmlinux-{version}"
    if not kernel.exists():
        kernel = boot / f"vmlinuz-{version}"
    return Machine(kernel, initramfs, tree / "lib" / "modules", tools["qemu-system-x86_64"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cwd", default=os.getcwd(), help="directory to run in (default: here)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds before QEMU is killed")
    parser.add_argument("command", nargs="+", help="command and arguments (after --)")
    args = parser.parse_args(argv)
    try:
        machine = prepare()
    except VMUnavailable as exc:
        print(f"qcrypto-vm: unavailable: {exc}", file=sys.stderr)
        return SETUP_FAILED
    result = machine.run(args.command, cwd=args.cwd, timeout=args.timeout)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode in (TIMED_OUT, SETUP_FAILED):
        print(f"qcrypto-vm: exit {result.returncode}; console:\n{result.console}", file=sys.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
