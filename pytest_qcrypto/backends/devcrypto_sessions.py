"""Sessions of the ``devcrypto`` plugin: the device, its buffers and one session on it.

:class:`Session` builds the ``/dev/crypto`` requests of :mod:`.devcrypto`'s
contexts with the ctypes structs of :mod:`.cryptodev_abi`; :class:`LinuxSession`
(cryptodev-linux) and :class:`FreeBSDSession` (cryptodev(4)) open it.  The
kernel hazards it rules out are listed in :mod:`.devcrypto`.  A helper of
:mod:`.devcrypto`, not a plugin.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import os
from collections.abc import Callable
from typing import Any, Protocol

import pytest_qcrypto.backends.cryptodev_abi as abi_mod
from pytest_qcrypto.backends.base import Unsupported
from pytest_qcrypto.backends.cryptodev_abi import Abi, AlgorithmIds
from pytest_qcrypto.algorithms.catalog import Algorithm

DEVICE = "/dev/crypto"
#: GCM tag lengths (bytes) cryptodev-linux handles; 5 and 9 crash the kernel.
SAFE_GCM_TAGS = frozenset({4, 8, 12, 13, 14, 15, 16})


class Device(Protocol):
    """An open /dev/crypto: ``ioctl(request, arg, mutate)`` as :func:`fcntl.ioctl` on its fd."""

    fd: int
    ioctl: Callable[..., Any]

    def close(self) -> None: ...


class DeviceFile:
    """The real device: ``os.open(path, O_RDWR)``; ``ioctl`` is :func:`fcntl.ioctl` on the fd.

    With ``mutate=True`` the kernel's writes land in the ctypes struct; with
    ``mutate=False`` the struct stays as it was (what the timed loops use).
    """

    def __init__(self, path: str = DEVICE) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        self.ioctl: Callable[..., Any] = functools.partial(fcntl.ioctl, self.fd)

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


def loop_ioctl(device: Device) -> tuple[Callable[..., Any], int]:
    """``(call, fd)`` for a timed loop: ``call(fd, request, arg, False)`` does what
    ``device.ioctl(request, arg, False)`` does.

    For :class:`DeviceFile`'s own ``ioctl`` (a ``functools.partial`` of :func:`fcntl.ioctl`
    on the fd) that is :func:`fcntl.ioctl` itself: one call layer less, which was 5% of a
    16-byte AES-128-CBC round trip (two CIOCCRYPT) on cryptodev-linux 1.14 in the kernel VM
    (2026-12-04, ``benchmarks/kernel_loops.py``).  Any other ``ioctl`` (a test double, a
    device that counts its calls) is called through a wrapper, and ``fd`` is -1.
    """
    call = device.ioctl
    if (isinstance(call, functools.partial) and call.func is fcntl.ioctl
            and len(call.args) == 1 and not call.keywords):
        return fcntl.ioctl, call.args[0]

    def wrapped(fd: int, request: int, arg: Any, mutate: bool = False) -> Any:
        return call(request, arg, mutate)

    return wrapped, -1


#: The kernel's names where Python's errno table gives an alias (ENOTSUP is EOPNOTSUPP on Linux).
ERRNO_NAMES = {errno.EOPNOTSUPP: "EOPNOTSUPP"}


def errno_text(exc: OSError) -> str:
    """``[EINVAL] Invalid argument``: the errno's symbol and message."""
    code = exc.errno or 0
    name = ERRNO_NAMES.get(code) or errno.errorcode.get(code, str(code))
    return f"[{name}] {exc.strerror or os.strerror(code)}"


#: Why an AEAD encryption of an empty message is refused (kernel-abi.md section 7).
EMPTY_AEAD = ("an AEAD encryption of an empty message is refused before the ioctl: on "
              "cryptodev-linux 1.14 (Linux 6.1, aesni) it oopses the kernel in the zero-copy "
              "AEAD path (crypto_auth_zc_aead -> gcmaes_crypt_by_sg, NULL pointer) and the "
              "calling process hangs")


def check_aead_shape(decrypt: bool, src_size: int, tag_len: int) -> None:
    """Refuse an AEAD request cryptodev-linux's zero-copy path mishandles, before any ioctl:
    an encryption of 0 bytes (:data:`EMPTY_AEAD`), a decryption of fewer bytes than the tag.

    ``src_size``: bytes of ``src`` (plaintext to encrypt; ciphertext || tag to decrypt).
    A decryption of an empty message with its tag (``src_size == tag_len``) was seen to be
    safe and is sent.
    """
    if not decrypt and src_size == 0:
        raise Unsupported(EMPTY_AEAD)
    if decrypt and src_size < tag_len:
        raise Unsupported(f"an AEAD decryption of {src_size} bytes is refused before the "
                          f"ioctl: it cannot hold the {tag_len}-byte tag (a shape never sent to "
                          "cryptodev-linux, whose zero-copy path crashes on empty encryptions)")


def check_tag_length(tag_len: int) -> None:
    """Refuse a GCM tag length cryptodev-linux mishandles (5 and 9 oops the kernel)."""
    if tag_len not in SAFE_GCM_TAGS:
        raise Unsupported(f"a {tag_len}-byte GCM tag is refused: cryptodev-linux takes 4, 8 "
                          "or 12 to 16 bytes, and some other lengths crash the kernel")


class Buffer:
    """A ctypes byte array kept alive for as long as a request points at it."""

    def __init__(self, size: int, data: bytes | None = None) -> None:
        self.size = size
        self.array = (ctypes.c_char * max(size, 1))()
        if data:
            ctypes.memmove(self.array, data, len(data))

    @classmethod
    def of(cls, data: bytes) -> Buffer:
        return cls(len(data), data)

    @property
    def address(self) -> int | None:
        """The address for a pointer field (None = NULL for an empty buffer)."""
        return ctypes.addressof(self.array) if self.size else None

    def at(self, offset: int) -> int:
        return ctypes.addressof(self.array) + offset

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        return self.array.raw[start:self.size if end is None else end]

    def wipe(self) -> None:
        ctypes.memset(self.array, 0, len(self.array))


# -- sessions ---------------------------------------------------------------------------


class Session:
    """One session on an open device; :meth:`close` frees it (CIOCFSESSION), once.

    Builders return ``(request, struct)``; the caller issues
    ``device.ioctl(request, struct, False)``.  The struct holds its buffers
    (``struct.buffers``), so the memory its pointers name lives as long as it.
    ``aead`` sessions only ever build AEAD requests: :meth:`crypt_request`
    refuses them.
    """

    driver: str | None = None
    hardware: bool | None = None

    def __init__(self, device: Device, abi: Abi, alg: Algorithm, ids: AlgorithmIds,
                 key: bytes, variant: str | None = None) -> None:
        self.device, self.abi, self.alg, self.ids = device, abi, alg, ids
        self.variant = variant
        self.aead = alg.has_tag
        self.ses: int | None = None
        self._key = Buffer.of(key) if ids.cipher else None
        # a MAC's key (HMAC, Poly1305) is the session's mac key: mackey / mackeylen
        self._mackey = Buffer.of(key) if ids.mac and alg.keyed else None

    def _create_failed(self, exc: OSError, what: str) -> Unsupported:
        note = self.abi.refusals.get(self.alg.name) if exc.errno == errno.EINVAL else None
        return Unsupported(f"/dev/crypto ({self.abi.name}) rejected {self.alg.name} at session "
                           f"creation ({what}): {errno_text(exc)}"
                           + (f" ({note})" if note else ""))

    def _session_fields(self, op: Any) -> str:
        op.cipher, op.mac = self.ids.cipher, self.ids.mac
        if self._key is not None:
            op.keylen, op.key = self._key.size, self._key.address
        if self._mackey is not None:
            op.mackeylen, op.mackey = self._mackey.size, self._mackey.address
            return (f"cipher={self.ids.cipher} mac={self.ids.mac} "
                    f"mackeylen={self._mackey.size}")
        return f"cipher={self.ids.cipher} mac={self.ids.mac} keylen={op.keylen}"

    def open(self) -> None:
        """Create the session and learn its driver; :class:`Unsupported` when refused."""
        raise NotImplementedError

    def close(self) -> None:
        """Free the session; a failure to free is ignored (the fd is closed next)."""
        if self.ses is None:
            return
        ses, self.ses = self.ses, None
        try:
            self.device.ioctl(self.abi.requests["CIOCFSESSION"], ctypes.c_uint32(ses), False)
        except OSError:
            pass

    def crypt_request(self, decrypt: bool, src: Buffer, dst: Buffer | None,
                      mac: Buffer | None = None, iv: Buffer | None = None) -> tuple[int, Any]:
        """A CIOCCRYPT request: a digest into ``mac``, or a cipher from ``src`` to ``dst``."""
        if self.aead:
            raise RuntimeError(f"refusing CIOCCRYPT on the AEAD session of {self.alg.name}: "
                               "cryptodev-linux oopses on it")
        cls = self.abi.structs["crypt_op"]
        op = cls(ses=self.ses, op=self.abi.cop_decrypt if decrypt else self.abi.cop_encrypt,
                 flags=0, len=src.size, src=src.address,
                 dst=dst.address if dst is not None else None,
                 mac=mac.address if mac is not None else None,
                 iv=iv.address if iv is not None else None)
        op.buffers = (src, dst, mac, iv)  # alive for as long as the request is
        return self.abi.requests["CIOCCRYPT"], op

    def aead_dst_size(self, decrypt: bool, src_size: int) -> int:
        """Bytes of ``dst`` an AEAD request of ``src_size`` bytes in may pin or write."""
        raise NotImplementedError

    def aead_request(self, decrypt: bool, iv: Buffer, aad: Buffer, src: Buffer,
                     dst: Buffer) -> tuple[int, Any]:
        """An AEAD request: encrypt ``src`` into ``dst`` = ciphertext || tag; decrypt
        ``src`` = ciphertext || tag into ``dst`` (the plaintext at its start).

        ``dst`` must hold :meth:`aead_dst_size` bytes, else :class:`ValueError`
        before any ioctl (the kernel would pin memory past the buffer).
        """
        need = self.aead_dst_size(decrypt, src.size)
        if dst.size < need:
            raise ValueError(f"an AEAD {'decryption' if decrypt else 'encryption'} of "
                             f"{src.size} bytes needs a {need}-byte output buffer, "
                             f"not {dst.size}")
        return self._aead_request(decrypt, iv, aad, src, dst)

    def _aead_request(self, decrypt: bool, iv: Buffer, aad: Buffer, src: Buffer,
                      dst: Buffer) -> tuple[int, Any]:
        raise NotImplementedError


class LinuxSession(Session):
    """A cryptodev-linux session: CIOCGSESSION, then CIOCGSESSINFO for the driver.

    cryptodev-linux cannot be told a driver: the kernel takes its highest-priority
    one.  A ``variant`` is therefore a check of the kernel's choice: ``DRIVER``
    must be the session's ``cra_driver_name``, ``soft`` a driver without
    ``SIOP_FLAG_KERNEL_DRIVER_ONLY`` (CPU code: generic C or CPU instructions);
    otherwise :class:`Unsupported` names the driver the kernel chose.
    """

    def open(self) -> None:
        op = abi_mod.LinuxSessionOp()
        what = self._session_fields(op)
        try:
            self.device.ioctl(self.abi.requests["CIOCGSESSION"], op, True)
        except OSError as exc:
            raise self._create_failed(exc, f"CIOCGSESSION {what}") from None
        self.ses = op.ses
        info = abi_mod.LinuxSessionInfoOp(ses=op.ses)
        try:
            self.device.ioctl(self.abi.requests["CIOCGSESSINFO"], info, True)
        except OSError as exc:
            if self.variant:  # modules before 1.0 have no CIOCGSESSINFO
                raise Unsupported(f"devcrypto:{self.variant} cannot check the driver of the "
                                  f"session: CIOCGSESSINFO failed: {errno_text(exc)}") from None
            return  # driver unknown
        names = info.cipher_info if self.ids.cipher else info.hash_info
        self.driver = names.cra_driver_name.decode(errors="replace") or None
        self.hardware = bool(info.flags & abi_mod.SIOP_FLAG_KERNEL_DRIVER_ONLY)
        self._check_variant()

    def _check_variant(self) -> None:
        """:class:`Unsupported` when the driver the kernel chose is not the one pinned."""
        if not self.variant:
            return
        chose = f"the kernel chose '{self.driver}' for {self.alg.name}"
        why = ("cryptodev-linux always takes the highest-priority driver (afalg:DRIVER can "
               "pin another)")
        if self.variant == "soft":
            if self.hardware:
                raise Unsupported(f"devcrypto:soft wants a driver that runs on the CPU, but "
                                  f"{chose}, an off-CPU engine (SIOP_FLAG_KERNEL_DRIVER_ONLY); "
                                  f"{why}")
        elif self.driver != self.variant:
            raise Unsupported(f"devcrypto:{self.variant}: {chose}, not '{self.variant}'; {why}")

    def aead_dst_size(self, decrypt: bool, src_size: int) -> int:
        """``len`` to decrypt (ciphertext || tag), ``len + tag_len`` to encrypt: what
        ``cryptodev_get_dst_len`` (authenc.c) pins, though GCM writes the plaintext only."""
        return src_size if decrypt else src_size + self.alg.tag_size

    def _aead_request(self, decrypt: bool, iv: Buffer, aad: Buffer, src: Buffer,
                      dst: Buffer) -> tuple[int, Any]:
        tag_len = self.alg.tag_size
        check_tag_length(tag_len)
        check_aead_shape(decrypt, src.size, tag_len)
        if aad.size > abi_mod.LINUX_MAX_AAD:
            raise Unsupported(f"cryptodev-linux takes at most {abi_mod.LINUX_MAX_AAD} bytes "
                              f"of AAD, not {aad.size}")
        op = abi_mod.LinuxCryptAuthOp(
            ses=self.ses, op=self.abi.cop_decrypt if decrypt else self.abi.cop_encrypt,
            flags=0, len=src.size, auth_len=aad.size, auth_src=aad.address, src=src.address,
            dst=dst.address, tag=None, tag_len=tag_len, iv=iv.address, iv_len=iv.size)
        op.buffers = (iv, aad, src, dst)  # alive for as long as the request is
        return self.abi.requests["CIOCAUTHCRYPT"], op


class FreeBSDSession(Session):
    """A FreeBSD session: CIOCGSESSION2 (any driver, or the pinned one), CIOCFINDDEV.

    ``variant``: ``soft`` asks for ``crid = CRYPTO_FLAG_SOFTWARE`` (a software
    driver: cryptosoft, aesni, ossl, armv8crypto; needs kern.crypto.allow_soft=1),
    a driver name (``aesni0``) for its crid from CIOCFINDDEV.
    """

    def _find(self, crid: int, name: str = "") -> Any:
        find = abi_mod.FreeBSDCryptFindOp(crid=crid, name=name.encode())
        self.device.ioctl(self.abi.requests["CIOCFINDDEV"], find, True)
        return find

    def open(self) -> None:
        crid = abi_mod.CRYPTO_FLAG_HARDWARE | abi_mod.CRYPTO_FLAG_SOFTWARE
        if self.variant == "soft":
            crid = abi_mod.CRYPTO_FLAG_SOFTWARE
        elif self.variant:
            try:
                crid = self._find(-1, self.variant).crid
            except OSError as exc:
                raise Unsupported(f"/dev/crypto has no driver '{self.variant}' "
                                  f"(CIOCFINDDEV: {errno_text(exc)})") from None
        op = abi_mod.FreeBSDSession2Op(crid=crid)
        what = self._session_fields(op)
        try:
            self.device.ioctl(self.abi.requests["CIOCGSESSION2"], op, True)
        except OSError as exc:
            failed = self._create_failed(exc, f"CIOCGSESSION2 {what} crid={crid:#x}")
            if exc.errno == errno.EINVAL and self.alg.name not in self.abi.refusals:
                failed = Unsupported(f"{failed} (software drivers need sysctl "
                                     "kern.crypto.allow_soft=1)")
            raise failed from None
        self.ses = op.ses
        try:
            name = self._find(op.crid).name.decode(errors="replace")
        except OSError:
            return
        self.driver = name or None
        self.hardware = name.rstrip("0123456789") not in abi_mod.FREEBSD_SOFTWARE_DRIVERS

    def aead_dst_size(self, decrypt: bool, src_size: int) -> int:
        """The payload (``cryptodev_aead`` copies out ``len`` bytes); to encrypt, the tag
        after it (its own pointer, aimed into ``dst``)."""
        return src_size - self.alg.tag_size if decrypt else src_size + self.alg.tag_size

    def _aead_request(self, decrypt: bool, iv: Buffer, aad: Buffer, src: Buffer,
                      dst: Buffer) -> tuple[int, Any]:
        tag = self.alg.tag_size
        n = src.size - tag if decrypt else src.size
        op = abi_mod.FreeBSDCryptAead(
            ses=self.ses, op=self.abi.cop_decrypt if decrypt else self.abi.cop_encrypt,
            flags=0, len=n, aadlen=aad.size, ivlen=iv.size, src=src.address, dst=dst.address,
            aad=aad.address, tag=src.at(n) if decrypt else dst.at(n), iv=iv.address)
        op.buffers = (iv, aad, src, dst)  # alive for as long as the request is
        return self.abi.requests["CIOCCRYPTAEAD"], op
