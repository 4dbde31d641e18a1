"""The contexts of the ``afalg`` plugin: one tfm socket and its operation socket.

What one timed operation sends is described in :mod:`.afalg`; here are the
digest, MAC, cipher and AEAD contexts that send it, and the buffer hygiene (a
rejected AEAD message's plaintext is wiped).  A helper of :mod:`.afalg`, not a
plugin.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterable
from itertools import cycle, islice, repeat
from typing import Any

from pytest_qcrypto.backends.afalg_kernel import (
    CHAINING_MODES,
    CHUNK,
    PAGE,
    SO_RCVBUFFORCE,
    SO_SNDBUFFORCE,
    errno_text,
)
from pytest_qcrypto.backends.base import AuthenticationError, Context, Runner, Unsupported, Workload
from pytest_qcrypto.algorithms.catalog import Algorithm, Kind

def _recv_exact(op: Any, out: memoryview) -> None:
    """Read exactly ``len(out)`` bytes of results from an operation socket."""
    got = 0
    while got < len(out):
        n = op.recv_into(out[got:], len(out) - got)
        if n <= 0:
            raise OSError(errno.EIO, f"AF_ALG returned {got} of {len(out)} result bytes")
        got += n


def wipe(buf: bytearray) -> None:
    """Zero ``buf`` in place (same object, same length): unauthenticated plaintext out."""
    buf[:] = bytes(len(buf))


def rejected_tag(exc: OSError) -> AuthenticationError:
    """EBADMSG from an AEAD decryption: the tag did not verify."""
    return AuthenticationError(f"the kernel rejected the tag: {errno_text(exc)}")


def _short(sent: int, wanted: int) -> OSError:
    return OSError(errno.EMSGSIZE, f"AF_ALG took {sent} of {wanted} bytes in one send")


def _lost(n: int) -> OSError:
    """What a timed loop raises when a request of ``n`` bytes was taken or returned short."""
    return OSError(errno.EIO, f"AF_ALG took or returned less than {n} bytes")


class _AfalgContext(Context):
    """A tfm socket (bound, keyed) and one operation socket accepted from it."""

    def __init__(self, algorithm: Algorithm, key: bytes, tfm: Any,
                 key_in_data: bool = False) -> None:
        super().__init__(algorithm, key)
        self.key_in_data = key_in_data
        self._tfm: Any = tfm
        self._op: Any = tfm.accept()[0]
        self._room = (0, 0)

    @property
    def op(self) -> Any:
        if self._op is None:
            raise ValueError(f"afalg {self.algorithm.name} context is closed")
        return self._op

    def reset(self) -> None:
        """Replace the operation socket (after an error its queued data make it unusable)."""
        old, self._op = self._op, self._tfm.accept()[0]
        self._room = (0, 0)
        old.close()

    def room(self, tx: int, rx: int) -> None:
        """Make one request of ``tx`` bytes in and ``rx`` bytes out fit the socket buffers.

        The kernel queues at most ``SO_SNDBUF`` (rounded down to pages) and
        maps results up to ``SO_RCVBUF``.  Raises :class:`Unsupported` when
        neither ``SO_*BUFFORCE`` (CAP_NET_ADMIN) nor ``SO_*BUF`` (capped by
        net.core.wmem_max / rmem_max) can make room.
        """
        if tx <= self._room[0] and rx <= self._room[1]:
            return
        op = self.op
        got = []
        wanted = ((tx + PAGE, socket.SO_SNDBUF, SO_SNDBUFFORCE, ("send", "SNDBUF", "wmem_max")),
                  (rx + 2 * PAGE, socket.SO_RCVBUF, SO_RCVBUFFORCE,
                   ("receive", "RCVBUF", "rmem_max")))
        for need, plain, force, what in wanted:
            have = op.getsockopt(socket.SOL_SOCKET, plain)
            if have < need:
                try:
                    op.setsockopt(socket.SOL_SOCKET, force, need)
                except OSError:
                    try:
                        op.setsockopt(socket.SOL_SOCKET, plain, need)
                    except OSError:
                        pass
                have = op.getsockopt(socket.SOL_SOCKET, plain)
            if have < need:
                raise Unsupported(
                    f"a {tx}-byte request does not fit the AF_ALG socket's {what[0]} buffer "
                    f"({have} bytes; SO_{what[1]} is capped by net.core.{what[2]} and "
                    f"SO_{what[1]}FORCE needs CAP_NET_ADMIN); {self.why_one_request()}")
            got.append(have)
        self._room = (got[0] - PAGE, got[1] - 2 * PAGE)

    def why_one_request(self) -> str:
        return "it cannot be sent in chunks"

    def too_big(self, exc: OSError, size: int) -> Exception:
        """The error to raise for a failed request of ``size`` bytes.

        The kernel keeps the scatter lists of one request in the socket's option
        memory (net.core.optmem_max, 20 KiB by default): a request of more than
        about 512 KiB fails with ENOMEM, or is taken only in part.  Above one
        chunk that is a limit of the kernel, reported as :class:`Unsupported`.
        """
        if exc.errno in (errno.ENOMEM, errno.EMSGSIZE) and size > CHUNK:
            try:
                with open("/proc/sys/net/core/optmem_max") as f:
                    limit = f"socket option memory, net.core.optmem_max = {f.read().strip()} bytes"
            except OSError:
                limit = "socket option memory"
            what = errno_text(exc) if exc.errno == errno.ENOMEM else str(exc.strerror)
            return Unsupported(f"the kernel cannot take a {size}-byte request on one AF_ALG "
                               f"socket: {what} ({limit}); {self.why_one_request()}")
        return exc

    def close(self) -> None:
        for attr in ("_op", "_tfm"):
            sock = getattr(self, attr, None)
            setattr(self, attr, None)
            if sock is not None:
                sock.close()


class _DigestContext(_AfalgContext):
    """A hash socket: each operation sends the buffer and reads ``out_size`` bytes back."""

    @property
    def out_size(self) -> int:
        return self.algorithm.digest_size

    def _parts(self, data: bytes) -> list[tuple[list[Any], int]]:
        """The buffers of each send (``sendmsg`` scatter list) with its flags: at most
        one chunk of ``data`` per send, the key first where the kernel takes it there."""
        view = memoryview(data)
        head = [self.key] if self.key_in_data else []
        if len(view) <= CHUNK:
            return [([*head, view], 0)]
        return [([*head, view[i:i + CHUNK]] if i == 0 else [view[i:i + CHUNK]],
                 socket.MSG_MORE if i + CHUNK < len(view) else 0)
                for i in range(0, len(view), CHUNK)]

    def _hash(self, data: bytes) -> bytes:
        op = self.op
        out = bytearray(self.out_size)
        try:
            for bufs, flags in self._parts(data):
                wanted = sum(len(b) for b in bufs)
                sent = op.sendmsg(bufs, [], flags)
                if sent != wanted:
                    raise _short(sent, wanted)
            _recv_exact(op, memoryview(out))
        except OSError:
            self.reset()
            raise
        return bytes(out)

    def digest(self, data: bytes) -> bytes:
        return self._hash(data)

    def runner(self, work: Workload) -> Runner:
        op = self.op
        out = bytearray(self.out_size)
        parts = self._parts(work.data)
        if len(parts) == 1 and len(parts[0][0]) == 1:
            def run(count: int, send: Any = op.send, recv_into: Any = op.recv_into,
                    buf: Any = parts[0][0][0], out: bytearray = out) -> None:
                for _ in repeat(None, count):
                    send(buf)
                    recv_into(out)

            return run

        def run_parts(count: int, sendmsg: Any = op.sendmsg, recv_into: Any = op.recv_into,
                      parts: list[tuple[list[Any], int]] = parts, out: bytearray = out,
                      none: list[Any] = []) -> None:
            for _ in repeat(None, count):
                for bufs, flags in parts:
                    sendmsg(bufs, none, flags)
                recv_into(out)

        return run_parts


class _MacContext(_DigestContext):
    """A keyed hash socket (``hmac(sha256)``, ``cmac(aes)``, ``poly1305``): the tag of
    each buffer under the key, ``tag_size`` bytes."""

    def __init__(self, algorithm: Algorithm, key: bytes, tfm: Any,
                 key_in_data: bool = False) -> None:
        if key_in_data and len(key) != algorithm.key_size:
            raise Unsupported(f"{algorithm.name} takes a {algorithm.key_size}-byte key, "
                              f"not {len(key)}")
        super().__init__(algorithm, key, tfm, key_in_data)

    @property
    def out_size(self) -> int:
        return self.algorithm.tag_size

    def digest(self, data: bytes) -> bytes:
        raise Unsupported(f"{self.algorithm.name} is not a digest")

    def mac(self, data: bytes) -> bytes:
        return self._hash(data)


class _CipherContext(_AfalgContext):
    @property
    def chains(self) -> bool:
        """Whether the kernel carries the IV across requests, so buffers can be chunked."""
        return self.algorithm.mode in CHAINING_MODES

    def why_one_request(self) -> str:
        return (f"{self.algorithm.name} is not chunked: its kernel implementations do not "
                "hand back the next IV")

    def _iv(self, iv: bytes) -> dict[str, bytes]:
        return {"iv": iv} if self.algorithm.iv_size else {}

    def _plan(self, size: int) -> list[tuple[int, int, int]]:
        """(offset, length, flags) of each send of a ``size``-byte buffer."""
        step = CHUNK if self.chains else max(size, 1)
        if not self.chains and size > CHUNK:
            self.room(size, size)
        return [(off, min(step, size - off), socket.MSG_MORE if off + step < size else 0)
                for off in range(0, size, step)]

    def _crypt(self, opcode: int, iv: bytes, data: bytes) -> bytes:
        op = self.op
        src, out = memoryview(data), bytearray(len(data))
        dst = memoryview(out)
        try:
            for i, (off, n, flags) in enumerate(self._plan(len(data))):
                if i == 0:
                    sent = op.sendmsg_afalg([src[off:off + n]], op=opcode, **self._iv(iv),
                                            flags=flags | socket.MSG_DONTWAIT)
                else:
                    sent = op.send(src[off:off + n], flags | socket.MSG_DONTWAIT)
                if sent != n:
                    raise _short(sent, n)
                _recv_exact(op, dst[off:off + n])
        except OSError as exc:
            self.reset()
            raise self.too_big(exc, len(data)) from None
        return bytes(out)

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        return self._crypt(socket.ALG_OP_ENCRYPT, iv, data)

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        return self._crypt(socket.ALG_OP_DECRYPT, iv, data)

    def runner(self, work: Workload) -> Runner:
        """Prime the socket with the operation and IV, then one request per buffer."""
        buf = memoryview(work.ciphertext if work.decrypt else work.data)
        out = bytearray(len(buf))
        dst = memoryview(out)
        plan = [(buf[off:off + n], dst[off:off + n], int(flags | socket.MSG_DONTWAIT), n)
                for off, n, flags in self._plan(len(buf))]
        opcode = socket.ALG_OP_DECRYPT if work.decrypt else socket.ALG_OP_ENCRYPT
        op = self.op
        op.sendmsg_afalg(op=opcode, **self._iv(work.iv), flags=socket.MSG_MORE)
        if len(plan) == 1:  # up to a chunk: one request a buffer, no inner loop
            def run_one(count: int, send: Any = op.send, recv_into: Any = op.recv_into,
                        one: tuple[memoryview, memoryview, int, int] = plan[0]) -> None:
                src, dst, flags, n = one
                for _ in repeat(None, count):
                    if send(src, flags) != n or recv_into(dst, n) != n:
                        raise _lost(n)

            return run_one

        def run(count: int, send: Any = op.send, recv_into: Any = op.recv_into,
                plan: list[tuple[memoryview, memoryview, int, int]] = plan) -> None:
            for _ in repeat(None, count):
                for src, dst, flags, n in plan:
                    if send(src, flags) != n or recv_into(dst, n) != n:
                        raise _lost(n)

        return run

    def roundtrip_runner(self, work: Workload) -> Runner:
        """One encryption of ``work.data`` and one decryption of ``work.ciphertext`` per
        iteration, each request carrying its operation and IV, as cryptotest's CIOCCRYPT
        does.  :meth:`runner` primes the socket with one operation for the whole loop, so an
        encrypt runner and a decrypt runner cannot take turns on it (the base class's
        composition would decrypt twice).  Up to a chunk, the loop is the four calls alone:
        the general one took 17-20% more time at 16 B (``benchmarks/kernel_loops.py``)."""
        legs = []
        for opcode, data in ((socket.ALG_OP_ENCRYPT, work.data),
                             (socket.ALG_OP_DECRYPT, work.ciphertext)):
            src, dst = memoryview(data), memoryview(bytearray(len(data)))
            legs.append((opcode, [(src[off:off + n], dst[off:off + n],
                                   int(flags | socket.MSG_DONTWAIT), n)
                                  for off, n, flags in self._plan(len(data))]))
        op, iv = self.op, self._iv(work.iv)
        if all(len(plan) == 1 for _, plan in legs):
            (enc, ((e_src, e_dst, e_flags, n),)), (dec, ((d_src, d_dst, d_flags, _),)) = legs
            args = ([e_src], {"op": enc, "flags": e_flags, **iv}, e_dst,
                    [d_src], {"op": dec, "flags": d_flags, **iv}, d_dst, n)

            def run_one(count: int, sendmsg: Any = op.sendmsg_afalg,
                        recv_into: Any = op.recv_into, args: tuple[Any, ...] = args) -> None:
                e_msg, e_kw, e_dst, d_msg, d_kw, d_dst, n = args
                for _ in repeat(None, count):
                    if (sendmsg(e_msg, **e_kw) != n or recv_into(e_dst, n) != n
                            or sendmsg(d_msg, **d_kw) != n or recv_into(d_dst, n) != n):
                        raise _lost(n)

            return run_one

        def run(count: int, sendmsg: Any = op.sendmsg_afalg, send: Any = op.send,
                recv_into: Any = op.recv_into, legs: list[Any] = legs) -> None:
            for _ in repeat(None, count):
                for opcode, plan in legs:
                    for i, (src, dst, flags, n) in enumerate(plan):
                        sent = (send(src, flags) if i else
                                sendmsg([src], op=opcode, flags=flags, **iv))
                        if sent != n or recv_into(dst, n) != n:
                            raise _lost(n)

        return run


class _AeadContext(_AfalgContext):
    def why_one_request(self) -> str:
        return "an AEAD message is authenticated as a whole and cannot be sent in chunks"

    def _request(self, opcode: int, iv: bytes, msg: bytes, assoclen: int,
                 out_size: int) -> bytearray:
        """One message through the kernel; ``out_size`` bytes of results.

        On any error the result buffer is zeroed first: a wrong tag
        (``EBADMSG``, raised as :class:`AuthenticationError`) comes after the
        kernel wrote the AAD and the unauthenticated plaintext into it.
        """
        out = bytearray(out_size)
        self.room(len(msg), out_size)
        op = self.op
        try:
            sent = op.sendmsg_afalg([msg], op=opcode, iv=iv, assoclen=assoclen,
                                    flags=socket.MSG_DONTWAIT)
            if sent != len(msg):
                raise _short(sent, len(msg))
            _recv_exact(op, memoryview(out))
        except OSError as exc:
            wipe(out)  # a decryption that failed may have left its plaintext there
            self.reset()
            if exc.errno == errno.EBADMSG:
                raise rejected_tag(exc) from None
            raise self.too_big(exc, len(msg)) from None
        return out

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        out = self._request(socket.ALG_OP_ENCRYPT, iv, aad + data, len(aad),
                            len(aad) + len(data) + self.algorithm.tag_size)
        return bytes(out[len(aad):])

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        tag = self.algorithm.tag_size
        if len(data) < tag:
            raise AuthenticationError(f"{len(data)} bytes cannot hold a {tag}-byte tag")
        out = self._request(socket.ALG_OP_DECRYPT, iv, aad + data, len(aad),
                            len(aad) + len(data) - tag)
        return bytes(out[len(aad):])

    def runner(self, work: Workload) -> Runner:
        tag = self.algorithm.tag_size
        op = self.op
        if work.decrypt:
            msg, out = [work.ciphertext], bytearray(len(work.ciphertext) - tag)
            nonces: Iterable[bytes] = repeat(work.nonces[0])
            opcode = socket.ALG_OP_DECRYPT
        else:
            msg, out = [work.data], bytearray(len(work.data) + tag)
            nonces = cycle(work.nonces)
            opcode = socket.ALG_OP_ENCRYPT
        self.room(len(msg[0]), len(out))
        flags, n = socket.MSG_DONTWAIT, len(out)

        def run(count: int, sendmsg: Any = op.sendmsg_afalg, recv_into: Any = op.recv_into,
                msg: list[bytes] = msg, out: bytearray = out) -> None:
            try:
                for nonce in islice(nonces, count):
                    sendmsg(msg, op=opcode, iv=nonce, assoclen=0, flags=flags)
                    if recv_into(out) != n:
                        raise OSError(errno.EIO, f"AF_ALG returned less than {n} bytes")
            except OSError as exc:
                wipe(out)  # the kernel wrote the unauthenticated plaintext before EBADMSG
                if exc.errno == errno.EBADMSG:
                    raise rejected_tag(exc) from None
                raise

        return run

#: The context class of each kind of algorithm.
CONTEXTS: dict[Kind, type[Context]] = {
    Kind.DIGEST: _DigestContext, Kind.CIPHER: _CipherContext, Kind.AEAD: _AeadContext,
    Kind.MAC: _MacContext}
