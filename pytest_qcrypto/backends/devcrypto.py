"""The ``devcrypto`` plugin: kernel crypto drivers through ``/dev/crypto`` ioctls.

Pure Python: :func:`fcntl.ioctl` on ctypes structs from
:mod:`pytest_qcrypto.backends.cryptodev_abi`, which speaks two ABIs:
cryptodev-linux (``crypto/cryptodev.h``, the out-of-tree ``cryptodev.ko``)
and FreeBSD's cryptodev(4).  A context is one open ``/dev/crypto`` file
descriptor and one session on it, both released by :meth:`Context.close`.

``devcrypto:DRIVER`` pins a driver: on FreeBSD the session is created on it
(``CIOCFINDDEV`` gives its crid); cryptodev-linux cannot be told one, so the
session's driver from ``CIOCGSESSINFO`` must be DRIVER or the algorithm is
skipped naming the kernel's choice.  ``devcrypto:soft`` is a driver that runs
on the CPU: FreeBSD ``crid = CRYPTO_FLAG_SOFTWARE`` (needs
``kern.crypto.allow_soft=1``), on Linux a session without
``SIOP_FLAG_KERNEL_DRIVER_ONLY``.

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
* MAC (HMAC of both ABIs, ``CRYPTO_*_HMAC``; Poly1305 on FreeBSD, id 38): the
  key is the session's mac key (``mackey``/``mackeylen``), set up once; one
  ``CIOCCRYPT`` as for a digest, the tag written to ``mac``.
* cipher: one ``CIOCCRYPT`` per buffer with the same IV each time (the IV is
  written back only with ``COP_FLAG_WRITE_IV``, which is not set), zero-copy
  from one source buffer to one output buffer.
* AEAD: one whole message with its own nonce and a 16-byte tag
  (``CIOCAUTHCRYPT`` for GCM on Linux, ``CIOCCRYPTAEAD`` on FreeBSD).  The
  output buffer holds every byte the kernel may pin or write
  (:meth:`Session.aead_dst_size`): on cryptodev-linux that is the ciphertext
  and tag in both directions, although a decryption writes only the plaintext.

Kernel hazards this module rules out (kernel-abi.md section 7, seen on a real
cryptodev-linux 1.14): a GCM tag length other than 4, 8 or 12..16 bytes,
``CIOCCRYPT`` on an AEAD session, and an AEAD encryption of an empty message
(the zero-copy path dereferences NULL) oops the kernel; the request builders
refuse all three with :class:`Unsupported` before any ioctl, and a decryption
too short to hold its tag too.  A failed AEAD decryption leaves unauthenticated
plaintext in the output buffer; it is wiped before the error is raised.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from itertools import cycle, islice, repeat
from typing import Any

import pytest_qcrypto.backends.cryptodev_abi as abi_mod
from pytest_qcrypto.backends.base import (
    AuthenticationError,
    Context,
    CryptoPlugin,
    Runner,
    Unavailable,
    Unsupported,
    Workload,
)
from pytest_qcrypto.backends.cryptodev_abi import Abi
from pytest_qcrypto.backends.devcrypto_sessions import (  # noqa: F401  (names tests use)
    DEVICE,
    ERRNO_NAMES,
    SAFE_GCM_TAGS,
    Device,
    DeviceFile,
    FreeBSDSession,
    LinuxSession,
    Session,
    errno_text,
)
from pytest_qcrypto.backends.devcrypto_sessions import Buffer as _Buffer
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.algorithms.catalog import Algorithm, Kind

#: Why the public-key kinds and KDFs are not devcrypto rows (:meth:`DevCryptoPlugin.open`
#: raises it); see the project's kernel ABI notes.
NO_PKEY = ("/dev/crypto offers no public-key or password-hashing operation to measure: "
           "cryptodev-linux refuses CIOCKEY and reports no asymmetric features "
           "(CIOCASYMFEAT gives 0), FreeBSD removed CIOCKEY, CIOCKEY2 and CIOCASYMFEAT in 13 "
           "(before, they ran only modular exponentiation on a few hardware engines, not "
           "whole signatures), and neither ABI has a KDF")


# -- the plugin -------------------------------------------------------------------------


class DevcryptoPlugin(CryptoPlugin):
    """Kernel crypto through /dev/crypto (cryptodev-linux or FreeBSD cryptodev(4)).

    ``path``, ``device`` (a callable opening a :class:`Device`, default
    :class:`DeviceFile`) and ``abi`` (default: the running system's) exist so
    that tests can put a stand-in for the kernel behind the same code.
    """

    outside_process = ("the kernel or a device does the work (/dev/crypto), out of reach"
                       " of a user-space instruction count")

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
        self._refused: dict[str, str] | None = None
        #: why :meth:`supported` lists every algorithm with an id, not what the device opens
        self.unchecked = ""

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
        """Catalog algorithms this ABI has ids for and the device opens a session of (one
        session each, asked once); every one with an id, unchecked (:attr:`unchecked` says
        why), when the device cannot be opened."""
        abi = self.abi
        if abi is None:
            return frozenset()
        return frozenset(n for n in abi.algorithms if n not in self.refused())

    def why_unsupported(self, name: str) -> str:
        """What the device said when :meth:`supported` opened a session of ``name``."""
        return self.refused().get(name, "")

    def refused(self) -> dict[str, str]:
        """The algorithms with an id whose session the device refused, with its reason;
        empty, and :attr:`unchecked` set, when the device cannot be opened."""
        abi = self.abi
        if self._refused is not None or abi is None:
            return self._refused or {}
        self._refused = {}
        try:
            device = self.open_device()
        except OSError as exc:
            self.unchecked = f"not checked against the device: {self._unavailable(exc, abi)}"
            return self._refused
        try:
            for name, ids in abi.algorithms.items():
                alg = catalog.lookup(name)
                if alg is None:
                    continue
                session = (LinuxSession if abi.linux else FreeBSDSession)(
                    device, abi, alg, ids, bytes(range(1, alg.key_size + 1)))
                try:
                    session.open()
                except Unsupported as exc:
                    self._refused[name] = str(exc)
                finally:
                    session.close()
        finally:
            device.close()
        return self._refused

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
        else:
            refused = [n for n in catalog.names() if n in self.refused()]
            lines.append(self.unchecked or "algorithms listed: those the device opens a "
                         "session of" + (f"; refused here: {', '.join(refused)}" if refused
                                         else ""))
        lines.append("each session reports its driver ('cbc-aes-aesni', a hardware engine) "
                     "in the notes under the table")
        return lines

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        """Open the device and one session; :class:`Unsupported` with the errno if refused."""
        if not algorithm.rules.sized:
            raise Unsupported(NO_PKEY)
        abi = self.abi
        if abi is None:
            raise Unavailable(f"no /dev/crypto ABI for {os.uname().sysname}")
        ids = abi.algorithms.get(algorithm.name)
        if ids is None:
            raise Unsupported(f"{abi.name} /dev/crypto has no {algorithm.name}")
        try:
            device = self.open_device()
        except OSError as exc:
            raise self._unavailable(exc, abi) from None
        session: Session = (LinuxSession if abi.linux else FreeBSDSession)(
            device, abi, algorithm, ids, key, variant=variant)
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
    """A hash session: one CIOCCRYPT per buffer, the result written to ``mac``."""

    def _hash(self, data: bytes) -> bytes:
        s = self.live
        src, mac = _Buffer.of(data), _Buffer(abi_mod.AALG_MAX_RESULT_LEN)
        request, op = s.crypt_request(False, src, None, mac=mac)
        s.device.ioctl(request, op, False)
        return mac.read(0, self.algorithm.digest_size or self.algorithm.tag_size)

    def digest(self, data: bytes) -> bytes:
        return self._hash(data)

    def runner(self, work: Workload) -> Runner:
        s = self.live
        src, mac = _Buffer.of(work.data), _Buffer(abi_mod.AALG_MAX_RESULT_LEN)
        request, op = s.crypt_request(False, src, None, mac=mac)

        def run(count: int, ioctl: Any = s.device.ioctl, request: int = request, op: Any = op,
                keep: tuple[_Buffer, ...] = (src, mac)) -> None:
            for _ in repeat(None, count):
                ioctl(request, op, False)

        return run


class _MacContext(_DigestContext):
    """An HMAC or Poly1305 session (the key is the session's mac key): one CIOCCRYPT
    with ``flags = 0`` per buffer starts from the keyed state and writes the tag."""

    def digest(self, data: bytes) -> bytes:
        raise Unsupported(f"{self.algorithm.name} is not a digest")

    def mac(self, data: bytes) -> bytes:
        return self._hash(data)


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

    def roundtrip_runner(self, work: Workload) -> Runner:
        """Two CIOCCRYPT an iteration, as FreeBSD cryptotest's loop: encrypt ``work.data``,
        decrypt ``work.ciphertext``, on two requests built once here (the base class's
        composition calls two runners once each: 46% more time an iteration at 16 B on
        cryptodev-linux 1.14)."""
        s = self.live
        ivb = _Buffer.of(work.iv) if work.iv else None
        keep: list[Any] = [ivb]
        legs = []
        for decrypt, data in ((False, work.data), (True, work.ciphertext)):
            src = _Buffer.of(data)
            dst = _Buffer(src.size)
            keep += [src, dst]
            legs.append(s.crypt_request(decrypt, src, dst, iv=ivb))
        (enc_request, enc_op), (dec_request, dec_op) = legs

        def run(count: int, ioctl: Any = s.device.ioctl, enc_request: int = enc_request,
                enc_op: Any = enc_op, dec_request: int = dec_request, dec_op: Any = dec_op,
                keep: tuple[Any, ...] = tuple(keep)) -> None:
            for _ in repeat(None, count):
                ioctl(enc_request, enc_op, False)
                ioctl(dec_request, dec_op, False)

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
                raise _rejected(exc, dst) from None

        return run

    def roundtrip_runner(self, work: Workload) -> Runner:
        """Two CIOCAUTHCRYPT an iteration: seal ``work.data`` under the next nonce of
        ``work.nonces`` and open ``work.ciphertext`` (sealed under the first), checking its
        tag, on requests built once here, as :meth:`runner` builds its one."""
        s = self.live
        aad, src = _Buffer(0), _Buffer.of(work.data)
        dst = _Buffer(s.aead_dst_size(False, src.size))
        nonces = [_Buffer.of(n) for n in work.nonces]
        pool = cycle([s.aead_request(False, n, aad, src, dst) for n in nonces])
        sealed, first = _Buffer.of(work.ciphertext), _Buffer.of(work.nonces[0])
        opened = _Buffer(s.aead_dst_size(True, sealed.size))
        dec_request, dec_op = s.aead_request(True, first, aad, sealed, opened)

        def run(count: int, ioctl: Any = s.device.ioctl, dec_request: int = dec_request,
                dec_op: Any = dec_op,
                keep: tuple[Any, ...] = (aad, src, dst, nonces, sealed, first, opened)) -> None:
            try:
                for request, op in islice(pool, count):
                    ioctl(request, op, False)
                    ioctl(dec_request, dec_op, False)
            except OSError as exc:
                raise _rejected(exc, opened) from None

        return run


def _rejected(exc: OSError, dst: _Buffer) -> Exception:
    """What a failed AEAD request in a timed loop raises, ``dst`` wiped first (the kernel
    leaves unauthenticated plaintext there): :class:`AuthenticationError` for a rejected
    tag (``EBADMSG``), else ``exc``."""
    dst.wipe()
    if exc.errno == errno.EBADMSG:
        return AuthenticationError(f"the driver rejected the tag: {errno_text(exc)}")
    return exc

#: The context class of each kind of algorithm.
_CONTEXTS: dict[Kind, type[Context]] = {
    Kind.DIGEST: _DigestContext, Kind.CIPHER: _CipherContext, Kind.AEAD: _AeadContext,
    Kind.MAC: _MacContext}



#: The built-in plugin of this module (found by :func:`pytest_qcrypto.backends.builtin_plugins`).
PLUGINS = [DevcryptoPlugin]
