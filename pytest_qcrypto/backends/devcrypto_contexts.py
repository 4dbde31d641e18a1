"""The contexts of the ``devcrypto`` plugin: one /dev/crypto session each.

What one timed operation sends, and the kernel hazards the plugin rules out, are described
in :mod:`.devcrypto`; here are the digest, MAC, cipher and AEAD contexts whose loops send
requests built once outside the loop (one ``CIOCCRYPT`` or ``CIOCAUTHCRYPT`` an iteration, two
in a round trip, each a direct :func:`fcntl.ioctl` call: :func:`.devcrypto_sessions.loop_ioctl`),
and the buffer hygiene (a rejected AEAD message's plaintext is wiped).  A helper of
:mod:`.devcrypto`, not a plugin.
"""

from __future__ import annotations

import errno
from itertools import cycle, islice, repeat
from typing import Any

import pytest_qcrypto.backends.cryptodev_abi as abi_mod
from pytest_qcrypto.backends.base import AuthenticationError, Context, Runner, Unsupported, Workload
from pytest_qcrypto.backends.devcrypto_sessions import Buffer as _Buffer
from pytest_qcrypto.backends.devcrypto_sessions import Session, errno_text, loop_ioctl
from pytest_qcrypto.algorithms.catalog import Algorithm, Kind


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

        ioctl, fd = loop_ioctl(s.device)

        def run(count: int, ioctl: Any = ioctl, fd: int = fd, request: int = request,
                op: Any = op, keep: tuple[_Buffer, ...] = (src, mac)) -> None:
            for _ in repeat(None, count):
                ioctl(fd, request, op, False)

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

        ioctl, fd = loop_ioctl(s.device)

        def run(count: int, ioctl: Any = ioctl, fd: int = fd, request: int = request,
                op: Any = op, keep: tuple[Any, ...] = (src, dst, ivb)) -> None:
            for _ in repeat(None, count):
                ioctl(fd, request, op, False)

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
        ioctl, fd = loop_ioctl(s.device)

        def run(count: int, ioctl: Any = ioctl, fd: int = fd, enc_request: int = enc_request,
                enc_op: Any = enc_op, dec_request: int = dec_request, dec_op: Any = dec_op,
                keep: tuple[Any, ...] = tuple(keep)) -> None:
            for _ in repeat(None, count):
                ioctl(fd, enc_request, enc_op, False)
                ioctl(fd, dec_request, dec_op, False)

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
        ioctl, fd = loop_ioctl(s.device)

        def run(count: int, ioctl: Any = ioctl, fd: int = fd,
                keep: tuple[Any, ...] = keep) -> None:
            try:
                for request, op in islice(pool, count):
                    ioctl(fd, request, op, False)
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
        ioctl, fd = loop_ioctl(s.device)

        def run(count: int, ioctl: Any = ioctl, fd: int = fd, dec_request: int = dec_request,
                dec_op: Any = dec_op,
                keep: tuple[Any, ...] = (aad, src, dst, nonces, sealed, first, opened)) -> None:
            try:
                for request, op in islice(pool, count):
                    ioctl(fd, request, op, False)
                    ioctl(fd, dec_request, dec_op, False)
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
CONTEXTS: dict[Kind, type[Context]] = {
    Kind.DIGEST: _DigestContext, Kind.CIPHER: _CipherContext, Kind.AEAD: _AeadContext,
    Kind.MAC: _MacContext}
