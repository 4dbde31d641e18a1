"""The ``devcrypto`` plugin: kernel crypto drivers through ``/dev/crypto`` ioctls.

Pure Python: :func:`fcntl.ioctl` on ctypes structs from
:mod:`pytest_qcrypto.backends.cryptodev_abi`, which speaks two ABIs:
cryptodev-linux (``crypto/cryptodev.h``, the out-of-tree ``cryptodev.ko``)
and FreeBSD's cryptodev(4).  A context is one open ``/dev/crypto`` file
descriptor and one session on it, both released by :meth:`Context.close`.

The row of the table keeps the name ``devcrypto``; the context's ``driver``
names the implementation the kernel chose (cryptodev-linux ``CIOCGSESSINFO``:
``cbc-aes-aesni``, ``sha256-avx2``; FreeBSD ``CIOCFINDDEV``: ``aesni0``,
``ccr0``) and ``hardware`` says whether it is an off-CPU engine
(``SIOP_FLAG_KERNEL_DRIVER_ONLY`` on Linux; any FreeBSD driver but cryptosoft,
aesni, ossl and armv8crypto).  False means software: generic C code or CPU
instructions, reached through the device.

What one timed operation is (sizes in bytes):

* digest: one ``CIOCCRYPT`` with ``flags = 0`` (reset and finalize): the
  digest of the buffer.
* cipher: one ``CIOCCRYPT`` per buffer with the same IV each time (the IV is
  written back only with ``COP_FLAG_WRITE_IV``, which is not set), zero-copy
  from one source buffer to one output buffer.
* AEAD: one whole message with its own nonce and a 16-byte tag
  (``CIOCAUTHCRYPT`` for GCM on Linux, ``CIOCCRYPTAEAD`` on FreeBSD).  The
  output buffer holds every byte the kernel may pin or write
  (:meth:`Session.aead_dst_size`): on cryptodev-linux that is the ciphertext
  and tag in both directions, although a decryption writes only the plaintext.

Kernel hazards this module rules out (kernel-abi.md section 7, seen on a real
cryptodev-linux 1.14): a GCM tag length other than 4, 8 or 12..16 bytes, and
``CIOCCRYPT`` on an AEAD session, oops the kernel; the request builders refuse
both before any ioctl.  A failed AEAD decryption leaves unauthenticated
plaintext in the output buffer; it is wiped before the error is raised.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import os
from collections.abc import Callable
from itertools import cycle, islice, repeat
from typing import Any, Protocol

from pytest_qcrypto.backends.base import (
    AuthenticationError,
    Context,
    CryptoPlugin,
    Runner,
    Unavailable,
    Unsupported,
    Workload,
)
from pytest_qcrypto.backends import cryptodev_abi as abi_mod
from pytest_qcrypto.backends.cryptodev_abi import Abi, AlgorithmIds
from pytest_qcrypto.catalog import Algorithm, Kind

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


#: The kernel's names where Python's errno table gives an alias (ENOTSUP is EOPNOTSUPP on Linux).
ERRNO_NAMES = {errno.EOPNOTSUPP: "EOPNOTSUPP"}


def errno_text(exc: OSError) -> str:
    """``[EINVAL] Invalid argument``: the errno's symbol and message."""
    code = exc.errno or 0
    name = ERRNO_NAMES.get(code) or errno.errorcode.get(code, str(code))
    return f"[{name}] {exc.strerror or os.strerror(code)}"


def check_tag_length(tag_len: int) -> None:
    """Refuse a GCM tag length cryptodev-linux mishandles (5 and 9 oops the kernel)."""
    if tag_len not in SAFE_GCM_TAGS:
        raise Unsupported(f"a {tag_len}-byte GCM tag is refused: cryptodev-linux takes 4, 8 "
                          "or 12 to 16 bytes, and some other lengths crash the kernel")


class _Buffer:
    """A ctypes byte array kept alive for as long as a request points at it."""

    def __init__(self, size: int, data: bytes | None = None) -> None:
        self.size = size
        self.array = (ctypes.c_char * max(size, 1))()
        if data:
            ctypes.memmove(self.array, data, len(data))

    @classmethod
    def of(cls, data: bytes) -> _Buffer:
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
                 key: bytes) -> None:
        self.device, self.abi, self.alg, self.ids = device, abi, alg, ids
        self.aead = alg.has_tag
        self.ses: int | None = None
        self._key = _Buffer.of(key) if ids.cipher else None

    def _create_failed(self, exc: OSError, what: str) -> Unsupported:
        return Unsupported(f"/dev/crypto ({self.abi.name}) rejected {self.alg.name} at session "
                           f"creation ({what}): {errno_text(exc)}")

    def _session_fields(self, op: Any) -> str:
        op.cipher, op.mac = self.ids.cipher, self.ids.mac
        if self._key is not None:
            op.keylen, op.key = self._key.size, self._key.address
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

    def crypt_request(self, decrypt: bool, src: _Buffer, dst: _Buffer | None,
                      mac: _Buffer | None = None, iv: _Buffer | None = None) -> tuple[int, Any]:
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

    def aead_request(self, decrypt: bool, iv: _Buffer, aad: _Buffer, src: _Buffer,
                     dst: _Buffer) -> tuple[int, Any]:
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

    def _aead_request(self, decrypt: bool, iv: _Buffer, aad: _Buffer, src: _Buffer,
                      dst: _Buffer) -> tuple[int, Any]:
        raise NotImplementedError


class LinuxSession(Session):
    """A cryptodev-linux session: CIOCGSESSION, then CIOCGSESSINFO for the driver."""

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
        except OSError:
            return  # modules before 1.0 have no CIOCGSESSINFO: driver unknown
        names = info.cipher_info if self.ids.cipher else info.hash_info
        self.driver = names.cra_driver_name.decode(errors="replace") or None
        self.hardware = bool(info.flags & abi_mod.SIOP_FLAG_KERNEL_DRIVER_ONLY)

    def aead_dst_size(self, decrypt: bool, src_size: int) -> int:
        """``len`` to decrypt (ciphertext || tag), ``len + tag_len`` to encrypt: what
        ``cryptodev_get_dst_len`` (authenc.c) pins, though GCM writes the plaintext only."""
        return src_size if decrypt else src_size + self.alg.tag_size

    def _aead_request(self, decrypt: bool, iv: _Buffer, aad: _Buffer, src: _Buffer,
                      dst: _Buffer) -> tuple[int, Any]:
        tag_len = self.alg.tag_size
        check_tag_length(tag_len)
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
    """A FreeBSD session: CIOCGSESSION2 (any driver, or the pinned one), CIOCFINDDEV."""

    def __init__(self, *args: Any, variant: str | None = None) -> None:
        super().__init__(*args)
        self.variant = variant

    def _find(self, crid: int, name: str = "") -> Any:
        find = abi_mod.FreeBSDCryptFindOp(crid=crid, name=name.encode())
        self.device.ioctl(self.abi.requests["CIOCFINDDEV"], find, True)
        return find

    def open(self) -> None:
        crid = abi_mod.CRYPTO_FLAG_HARDWARE | abi_mod.CRYPTO_FLAG_SOFTWARE
        if self.variant:
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
            if exc.errno == errno.EINVAL:
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

    def _aead_request(self, decrypt: bool, iv: _Buffer, aad: _Buffer, src: _Buffer,
                      dst: _Buffer) -> tuple[int, Any]:
        tag = self.alg.tag_size
        n = src.size - tag if decrypt else src.size
        op = abi_mod.FreeBSDCryptAead(
            ses=self.ses, op=self.abi.cop_decrypt if decrypt else self.abi.cop_encrypt,
            flags=0, len=n, aadlen=aad.size, ivlen=iv.size, src=src.address, dst=dst.address,
            aad=aad.address, tag=src.at(n) if decrypt else dst.at(n), iv=iv.address)
        op.buffers = (iv, aad, src, dst)  # alive for as long as the request is
        return self.abi.requests["CIOCCRYPTAEAD"], op


# -- the plugin -------------------------------------------------------------------------


class DevcryptoPlugin(CryptoPlugin):
    """Kernel crypto through /dev/crypto (cryptodev-linux or FreeBSD cryptodev(4)).

    ``path``, ``device`` (a callable opening a :class:`Device`, default
    :class:`DeviceFile`) and ``abi`` (default: the running system's) exist so
    that tests can put a stand-in for the kernel behind the same code.
    """

    name = "devcrypto"
    default_rank = 50
    aliases = ("cryptodev", "dev-crypto")
    library = "/dev/crypto (cryptodev-linux or FreeBSD cryptodev)"
    description = "kernel crypto drivers through /dev/crypto ioctls"

    def __init__(self, path: str = DEVICE, device: Callable[[str], Device] | None = None,
                 abi: Abi | None = None) -> None:
        self.path = path
        self._device = device
        self._abi = abi

    @property
    def abi(self) -> Abi | None:
        return self._abi if self._abi is not None else abi_mod.host_abi()

    def open_device(self) -> Device:
        """Open the device (``OSError`` as the kernel says)."""
        return (self._device or DeviceFile)(self.path)

    def _unavailable(self, exc: OSError, abi: Abi) -> Unavailable:
        if exc.errno == errno.ENOENT:
            return Unavailable(f"no {self.path} here: {abi.load_hint}")
        return Unavailable(f"cannot open {self.path}: {errno_text(exc)}")

    def probe(self) -> None:
        """Open and close the device once; :class:`Unavailable` with what to load."""
        abi = self.abi
        if abi is None:
            raise Unavailable(f"no /dev/crypto ABI for {os.uname().sysname} "
                              "(cryptodev-linux and FreeBSD only)")
        try:
            self.open_device().close()
        except OSError as exc:
            raise self._unavailable(exc, abi) from None

    def version(self) -> str:
        abi = self.abi
        return f"{abi.name if abi else 'no'} ABI on {self.path} ({os.uname().sysname} " \
               f"{os.uname().release})"

    def implementation(self, algorithm: Algorithm) -> str:
        """``the kernel's crypto drivers behind /dev/crypto``; each result names the session's."""
        return f"the kernel's crypto drivers behind {self.path}"

    def supported(self) -> frozenset[str]:
        """Catalog algorithms this ABI has ids for; whether the driver takes them shows at open."""
        abi = self.abi
        return frozenset(abi.algorithms) if abi is not None else frozenset()

    def details(self) -> list[str]:
        abi = self.abi
        if abi is None:
            return [f"device: {self.path} (no ABI for {os.uname().sysname})"]
        present = os.path.exists(self.path) if self._device is None else True
        lines = [f"device: {self.path} ({'present' if present else 'absent'}), ABI {abi.name} "
                 f"({abi.encoding.name}: CIOCGSESSION={abi.requests['CIOCGSESSION']:#x}, "
                 f"CIOCCRYPT={abi.requests['CIOCCRYPT']:#x})"]
        if not present:
            lines.append(f"to enable: {abi.load_hint}")
        lines.append("each session reports its driver ('cbc-aes-aesni', a hardware engine) "
                     "in the notes under the table")
        return lines

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        """Open the device and one session; :class:`Unsupported` with the errno if refused."""
        abi = self.abi
        if abi is None:
            raise Unavailable(f"no /dev/crypto ABI for {os.uname().sysname}")
        ids = abi.algorithms.get(algorithm.name)
        if ids is None:
            raise Unsupported(f"{abi.name} /dev/crypto has no {algorithm.name}")
        if variant and abi.linux:
            raise Unsupported(f"cryptodev-linux cannot pin a driver (got ':{variant}'); "
                              "the kernel picks its highest-priority one")
        try:
            device = self.open_device()
        except OSError as exc:
            raise self._unavailable(exc, abi) from None
        session: Session = (LinuxSession(device, abi, algorithm, ids, key) if abi.linux else
                            FreeBSDSession(device, abi, algorithm, ids, key, variant=variant))
        try:
            session.open()
            cls = _CONTEXTS[algorithm.kind]
            ctx = cls(algorithm, key, session)
        except BaseException:
            session.close()
            device.close()
            raise
        return ctx


# -- contexts ---------------------------------------------------------------------------


class _DevcryptoContext(Context):
    """An open device and one session on it; :meth:`close` frees both, once."""

    def __init__(self, algorithm: Algorithm, key: bytes, session: Session) -> None:
        super().__init__(algorithm, key)
        self.session: Session | None = session
        self.driver = session.driver
        self.hardware = session.hardware

    @property
    def live(self) -> Session:
        if self.session is None:
            raise ValueError(f"devcrypto {self.algorithm.name} context is closed")
        return self.session

    def close(self) -> None:
        session, self.session = self.session, None
        if session is not None:
            try:
                session.close()
            finally:
                session.device.close()


class _DigestContext(_DevcryptoContext):
    def digest(self, data: bytes) -> bytes:
        s = self.live
        src, mac = _Buffer.of(data), _Buffer(abi_mod.AALG_MAX_RESULT_LEN)
        request, op = s.crypt_request(False, src, None, mac=mac)
        s.device.ioctl(request, op, False)
        return mac.read(0, self.algorithm.digest_size)

    def runner(self, work: Workload) -> Runner:
        s = self.live
        src, mac = _Buffer.of(work.data), _Buffer(abi_mod.AALG_MAX_RESULT_LEN)
        request, op = s.crypt_request(False, src, None, mac=mac)

        def run(count: int, ioctl: Any = s.device.ioctl, request: int = request, op: Any = op,
                keep: tuple[_Buffer, ...] = (src, mac)) -> None:
            for _ in repeat(None, count):
                ioctl(request, op, False)

        return run


class _CipherContext(_DevcryptoContext):
    def _crypt(self, decrypt: bool, iv: bytes, data: bytes) -> bytes:
        s = self.live
        src, dst = _Buffer.of(data), _Buffer(len(data))
        ivb = _Buffer.of(iv) if iv else None
        request, op = s.crypt_request(decrypt, src, dst, iv=ivb)
        s.device.ioctl(request, op, False)
        return dst.read()

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        return self._crypt(False, iv, data)

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        return self._crypt(True, iv, data)

    def runner(self, work: Workload) -> Runner:
        s = self.live
        src = _Buffer.of(work.ciphertext if work.decrypt else work.data)
        dst = _Buffer(src.size)
        ivb = _Buffer.of(work.iv) if work.iv else None
        request, op = s.crypt_request(work.decrypt, src, dst, iv=ivb)

        def run(count: int, ioctl: Any = s.device.ioctl, request: int = request, op: Any = op,
                keep: tuple[Any, ...] = (src, dst, ivb)) -> None:
            for _ in repeat(None, count):
                ioctl(request, op, False)

        return run


class _AeadContext(_DevcryptoContext):
    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        s = self.live
        src = _Buffer.of(data)
        dst = _Buffer(s.aead_dst_size(False, src.size))
        request, op = s.aead_request(False, _Buffer.of(iv), _Buffer.of(aad), src, dst)
        s.device.ioctl(request, op, False)
        return dst.read(0, len(data) + self.algorithm.tag_size)

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        s = self.live
        tag = self.algorithm.tag_size
        if len(data) < tag:
            raise AuthenticationError(f"{len(data)} bytes cannot hold a {tag}-byte tag")
        src = _Buffer.of(data)
        dst = _Buffer(s.aead_dst_size(True, src.size))
        request, op = s.aead_request(True, _Buffer.of(iv), _Buffer.of(aad), src, dst)
        try:
            s.device.ioctl(request, op, False)
        except OSError as exc:
            dst.wipe()  # the kernel leaves unauthenticated plaintext there
            if exc.errno == errno.EBADMSG:
                raise AuthenticationError(f"the driver rejected the tag: {errno_text(exc)}") \
                    from None
            raise
        return dst.read(0, len(data) - tag)

    def runner(self, work: Workload) -> Runner:
        s = self.live
        aad = _Buffer(0)
        if work.decrypt:
            src = _Buffer.of(work.ciphertext)
            dst = _Buffer(s.aead_dst_size(True, src.size))
            nonce = _Buffer.of(work.nonces[0])
            requests = [s.aead_request(True, nonce, aad, src, dst)]
            keep: tuple[Any, ...] = (src, dst, nonce, aad)
        else:
            src = _Buffer.of(work.data)
            dst = _Buffer(s.aead_dst_size(False, src.size))
            nonces = [_Buffer.of(n) for n in work.nonces]
            requests = [s.aead_request(False, n, aad, src, dst) for n in nonces]
            keep = (src, dst, nonces, aad)
        pool = cycle(requests)

        def run(count: int, ioctl: Any = s.device.ioctl, keep: tuple[Any, ...] = keep) -> None:
            try:
                for request, op in islice(pool, count):
                    ioctl(request, op, False)
            except OSError as exc:
                dst.wipe()
                if exc.errno == errno.EBADMSG:
                    raise AuthenticationError(f"the driver rejected the tag: "
                                              f"{errno_text(exc)}") from None
                raise

        return run

#: The context class of each kind of algorithm.
_CONTEXTS: dict[Kind, type[Context]] = {
    Kind.DIGEST: _DigestContext, Kind.CIPHER: _CipherContext, Kind.AEAD: _AeadContext}



#: The built-in plugin of this module (found by :func:`pytest_qcrypto.backends.builtin_plugins`).
PLUGINS = [DevcryptoPlugin]
