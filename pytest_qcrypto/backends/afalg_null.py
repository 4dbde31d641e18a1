"""The ``afalg`` plugin's null request: what the AF_ALG interface itself costs per call.

The kernel's null cipher (``crypto/crypto_null.c``: ``ecb(cipher_null)``, key
size 0, IV size 0, block size 1) copies its input to its output and does nothing
else, so a request to it costs what every AF_ALG request costs before any
algorithm runs: the ``sendmsg`` and ``recvmsg`` system calls, the socket's
scatter lists, the kernel's request set-up.  One null request is what the
plugin's own cipher loop (:meth:`.afalg_contexts._CipherContext.runner`) sends
per buffer, with the smallest buffer the cipher takes (:data:`NULL_SIZE`): the
socket is primed once with the operation (``sendmsg`` with ``MSG_MORE``); each
request is one ``send`` of the buffer with ``MSG_DONTWAIT`` and one
``recv_into`` of the result.  A helper of :mod:`.afalg`, not a plugin.
"""

from __future__ import annotations

import errno
import socket
from itertools import repeat
from typing import Any

from pytest_qcrypto.backends.base import NullRequest

#: The socket type and name the null request binds (crypto/crypto_null.c ``cra_name``).
NULL_CIPHER = ("skcipher", "ecb(cipher_null)")
#: Bytes per null request: the null cipher's block size (NULL_BLOCK_SIZE, 1).
NULL_SIZE = 1


def null_request(tfm: Any) -> NullRequest:
    """The :class:`NullRequest` of ``tfm``, an AF_ALG socket bound to :data:`NULL_CIPHER`.

    The key set is empty (the null cipher's key size is 0); ``OSError`` as the kernel
    says when it refuses the key, the ``accept()`` or the priming ``sendmsg``.  The
    sockets are closed on error and by the request's ``close()``.
    """
    op = None
    try:
        tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY, b"")
        op = tfm.accept()[0]
        op.sendmsg_afalg(op=socket.ALG_OP_ENCRYPT, flags=socket.MSG_MORE)
    except BaseException:
        if op is not None:
            op.close()
        tfm.close()
        raise
    src = memoryview(bytes(NULL_SIZE))
    dst = memoryview(bytearray(NULL_SIZE))

    def run(count: int, send: Any = op.send, recv_into: Any = op.recv_into,
            src: memoryview = src, dst: memoryview = dst, n: int = NULL_SIZE,
            flags: int = int(socket.MSG_DONTWAIT)) -> None:
        for _ in repeat(None, count):
            if send(src, flags) != n or recv_into(dst, n) != n:
                raise OSError(errno.EIO, f"AF_ALG took or returned less than {n} bytes")

    def close() -> None:
        op.close()
        tfm.close()

    return NullRequest(f"a {NULL_SIZE}-byte {NULL_CIPHER[0]} {NULL_CIPHER[1]} request "
                       "(send + recv)", run, close)
