"""The ``afalg`` plugin: the Linux kernel crypto API through ``AF_ALG`` sockets.

Pure Python: :mod:`socket` only (``AF_ALG``, ``sendmsg_afalg``), following
``include/uapi/linux/if_alg.h`` and ``Documentation/crypto/userspace-if.rst``.
A context is one *tfm* socket bound to ``(type, name)`` and keyed once, plus
one *operation* socket from ``accept()``; :meth:`Context.close` closes both.

Names: catalog names map to kernel names (:func:`kernel_name`), e.g.
``aes-128-cbc`` -> ``skcipher cbc(aes)``, ``chacha20-poly1305`` -> ``aead
rfc7539(chacha20,poly1305)``.  ``afalg`` binds that name, so the kernel picks
its highest-priority driver; ``afalg:DRIVER`` binds a driver name instead
(``afalg:sha256-generic``, ``afalg:cbc-aes-aesni``), which pins one
implementation.  After the bind, ``/proc/crypto`` names the driver that does
the work (:attr:`Context.driver`); whether it runs off the CPU
(:attr:`Context.hardware`) comes from the driver's ``CRYPTO_ALG_KERN_DRIVER_ONLY``
flag, asked over ``NETLINK_CRYPTO`` (``linux/cryptouser.h``), or failing that
guessed from its module.

What one timed operation sends (sizes in bytes):

* digest: the buffer (in 64 KiB sends with ``MSG_MORE`` above 64 KiB), then
  ``recv`` of the digest: the kernel hashes from a fresh state and finalizes.
* cipher: one request per buffer.  The operation and IV are set once when the
  timed loop is made; after that the kernel carries the IV from one request to
  the next (CBC, CTR), like a streaming context.  Above 64 KiB a CBC, CTR or
  ECB buffer goes in 64 KiB chunks with ``MSG_MORE``, each chunk read back
  before the next is sent (the kernel chains the IV across chunks, so the
  output is byte-identical to a one-shot call).  XTS and ChaCha20 do not chain
  across requests on Linux 6.1, so their buffers go in one request; one larger
  than the socket's send buffer (``net.core.wmem_default``, 208 KiB) needs a
  larger ``SO_SNDBUF``, see below.
* AEAD: one whole message per operation with its own nonce: send
  ``AAD || plaintext`` with ``assoclen``, read ``AAD || ciphertext || tag``;
  decrypt sends ``AAD || ciphertext || tag`` and a wrong tag is ``EBADMSG``
  (raised as :class:`AuthenticationError`).  By then algif_aead has already
  written the AAD and the unauthenticated plaintext into the receive buffer
  (seen on Linux 6.1); every buffer that received them is zeroed before the
  error is raised, on the one-shot path and in the timed loop, as the
  devcrypto plugin does.  A message cannot be chunked: one
  larger than the socket buffers is made to fit with ``SO_SNDBUF`` /
  ``SO_RCVBUF`` (or the ``...FORCE`` options with ``CAP_NET_ADMIN``), and is
  skipped with the reason when that is not permitted.

Sends use ``MSG_DONTWAIT``: a blocking send beyond the socket buffer would wait
for a ``recv`` that a single thread never makes.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import cycle, islice, repeat
from typing import Any

from pytest_qcrypto import catalog
from pytest_qcrypto.backends.base import (
    AuthenticationError,
    Context,
    CryptoPlugin,
    Runner,
    Unavailable,
    Unsupported,
    Workload,
)
from pytest_qcrypto.catalog import Algorithm, Kind

#: Bytes per send of a chunked buffer: ALG_MAX_PAGES (16) pages of 4 KiB, as libkcapi does.
CHUNK = 65536
#: AF_ALG socket types (if_alg.h ``salg_type``) per catalog kind.
SOCKET_TYPE = {Kind.DIGEST: "hash", Kind.CIPHER: "skcipher", Kind.AEAD: "aead"}
#: /proc/crypto ``type`` values each AF_ALG socket type can bind (crypto/algif_*.c).
COMPATIBLE_TYPES = {"hash": ("shash", "ahash"), "skcipher": ("skcipher", "lskcipher"),
                    "aead": ("aead",)}
#: Modes whose kernel implementations hand back the next IV, so a buffer can be chunked.
CHAINING_MODES = frozenset({"cbc", "ctr", "ecb"})
#: crypto.h: the algorithm is an off-CPU engine reached through a driver.
CRYPTO_ALG_KERN_DRIVER_ONLY = 0x1000
#: linux/netlink.h and linux/cryptouser.h.
NETLINK_CRYPTO = 21
CRYPTO_MSG_GETALG = 0x13
NLMSG_ERROR = 2
NLM_F_REQUEST = 1
#: socket(7): options that ignore net.core.wmem_max / rmem_max (CAP_NET_ADMIN).
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
PAGE = 4096
PROC_CRYPTO = "/proc/crypto"

#: Kernel names of the catalog's digests (crypto/*.c ``cra_name``).
_DIGEST_NAMES = {
    "md5": "md5", "sha1": "sha1", "sha224": "sha224", "sha256": "sha256",
    "sha384": "sha384", "sha512": "sha512", "sha3-224": "sha3-224", "sha3-256": "sha3-256",
    "sha3-384": "sha3-384", "sha3-512": "sha3-512", "blake2b512": "blake2b-512",
    "blake2s256": "blake2s-256", "sm3": "sm3",
}
#: Algorithms of each type that a working kernel nearly always has: when binding one
#: of these also fails with ENOENT, the socket type itself is missing.
_REFERENCE_NAMES = {"hash": ("sha256", "sha1", "md5"),
                    "skcipher": ("ecb(aes)", "cbc(aes)", "ctr(aes)"),
                    "aead": ("gcm(aes)", "ccm(aes)", "rfc7539(chacha20,poly1305)")}
#: Module name prefixes of off-CPU engines (drivers/crypto/), when NETLINK_CRYPTO cannot tell.
_ENGINE_MODULES = (
    "atmel", "caam", "ccp", "ccree", "chcr", "hisi", "img_hash", "keembay", "marvell",
    "mv_cesa", "mxs_dcp", "n2_crypto", "nx_crypto", "omap", "qat", "qce", "rk_crypto",
    "s5p", "sahara", "safexcel", "crypto_safexcel", "stm32", "sun4i", "sun8i", "talitos",
    "virtio_crypto", "zynqmp", "aspeed", "amlogic", "mtk", "exynos", "artpec", "octeontx",
)

SocketFactory = Callable[[], Any]


def kernel_name(alg: Algorithm) -> str | None:
    """The kernel crypto API name of a catalog algorithm, or None when it has none."""
    if not alg.keyed:
        return _DIGEST_NAMES.get(alg.name)
    if alg.family == "aes" and alg.mode in ("cbc", "ctr", "ecb", "xts", "gcm"):
        return f"{alg.mode}(aes)"
    return {"chacha20": "chacha20", "chacha20-poly1305": "rfc7539(chacha20,poly1305)",
            "des-ede3-cbc": "cbc(des3_ede)"}.get(alg.name)


def errno_text(exc: OSError) -> str:
    """``[ENOENT] No such file or directory``: the errno's symbol and message."""
    code = exc.errno or 0
    return f"[{errno.errorcode.get(code, code)}] {exc.strerror or os.strerror(code)}"


# -- /proc/crypto ---------------------------------------------------------------------


@dataclass(frozen=True)
class Driver:
    """One record of /proc/crypto (crypto/proc.c): an implementation of ``name``."""

    name: str
    driver: str
    module: str = "kernel"
    priority: int = 0
    type: str = ""
    internal: bool = False
    selftest: str = "passed"
    is_async: bool = False

    def usable_as(self, sock_type: str) -> bool:
        """Whether AF_ALG can bind this record with ``sock_type`` (crypto_alg_lookup rules)."""
        return (self.type in COMPATIBLE_TYPES.get(sock_type, ()) and not self.internal
                and self.selftest in ("passed", "unknown"))


def parse_proc_crypto(text: str) -> list[Driver]:
    """The records of a /proc/crypto text: blank-line separated ``key : value`` lines."""
    found: list[Driver] = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if "name" not in fields or "driver" not in fields:
            continue
        try:
            priority = int(fields.get("priority", "0"))
        except ValueError:
            priority = 0
        found.append(Driver(fields["name"], fields["driver"], fields.get("module", "kernel"),
                            priority, fields.get("type", ""), fields.get("internal") == "yes",
                            fields.get("selftest", "passed"), fields.get("async") == "yes"))
    return found


def drivers_of(records: Iterable[Driver], name: str, sock_type: str) -> list[Driver]:
    """Bindable implementations of ``name``, highest priority (the kernel's choice) first."""
    return sorted((r for r in records if r.name == name and r.usable_as(sock_type)),
                  key=lambda r: -r.priority)


def describe_drivers(drivers: Sequence[Driver]) -> str:
    """``sha256-avx2 (priority 170), sha256-generic (priority 100)``."""
    return ", ".join(f"{d.driver} (priority {d.priority})" for d in drivers) or "none"


# -- the plugin -----------------------------------------------------------------------


class AfalgPlugin(CryptoPlugin):
    """Linux kernel crypto through AF_ALG; ``afalg:DRIVER`` pins a driver.

    ``socket_factory`` makes an unbound AF_ALG socket (default
    ``socket.socket(AF_ALG, SOCK_SEQPACKET, 0)``) and ``proc_crypto`` is the
    path of /proc/crypto: both exist so that tests can stand in for the kernel.
    """

    name = "afalg"
    default_rank = 40
    aliases = ("af_alg",)
    library = "Linux kernel crypto API (AF_ALG sockets)"
    description = "the Linux kernel's crypto drivers through AF_ALG sockets"

    def __init__(self, socket_factory: SocketFactory | None = None,
                 proc_crypto: str = PROC_CRYPTO) -> None:
        self._socket_factory = socket_factory
        self.proc_crypto = proc_crypto
        self._types: dict[str, bool] = {}
        self._flags: dict[str, int | None] = {}

    def new_socket(self) -> Any:
        """An unbound AF_ALG socket; ``OSError`` or ``AttributeError`` when there is none."""
        if self._socket_factory is not None:
            return self._socket_factory()
        return socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0)

    # -- availability ---------------------------------------------------------------

    def probe(self) -> None:
        """Create (and close) one AF_ALG socket; :class:`Unavailable` says why that fails."""
        try:
            self.new_socket().close()
        except AttributeError:
            raise Unavailable("this Python has no socket.AF_ALG (AF_ALG is Linux only)") from None
        except OSError as exc:
            raise Unavailable(socket_error(exc)) from None

    def version(self) -> str:
        return f"Linux {os.uname().release} kernel crypto API (AF_ALG)"

    def implementation(self, algorithm: Algorithm) -> str:
        """``the Linux 6.1.0 kernel's crypto drivers``; each result names the driver bound."""
        return f"the Linux {os.uname().release} kernel's crypto drivers"

    def supported(self) -> frozenset[str]:
        """Catalog algorithms with a kernel name; whether this kernel has one shows at bind."""
        return frozenset(a.name for a in catalog.ALGORITHMS if kernel_name(a) is not None)

    def read_drivers(self) -> list[Driver]:
        """Every record of /proc/crypto (empty when it cannot be read)."""
        try:
            with open(self.proc_crypto, encoding="utf-8", errors="replace") as f:
                return parse_proc_crypto(f.read())
        except OSError:
            return []

    def details(self) -> list[str]:
        """Each mapped kernel algorithm with its drivers and priorities, from /proc/crypto.

        When AF_ALG works, each name is bound first, so that template instances
        such as ``cbc(aes)`` exist (and show) before /proc/crypto is read.
        """
        mapped: dict[tuple[str, str], list[str]] = {}
        for alg in catalog.ALGORITHMS:
            kname = kernel_name(alg)
            if kname is not None:
                mapped.setdefault((SOCKET_TYPE[alg.kind], kname), []).append(alg.name)
        try:
            self.probe()
        except Unavailable:
            return ["to enable: a kernel with CONFIG_CRYPTO_USER_API_HASH, _SKCIPHER and _AEAD "
                    "(modules af_alg, algif_hash, algif_skcipher, algif_aead), and a policy "
                    "that allows socket(AF_ALG)"]
        missing: dict[tuple[str, str], str] = {}
        for sock_type, kname in mapped:
            try:
                self.new_socket_bound(sock_type, kname).close()
            except OSError as exc:
                missing[(sock_type, kname)] = errno_text(exc)
        records = self.read_drivers()
        lines = ["drivers (from /proc/crypto; 'afalg' takes the first, "
                 "'afalg:DRIVER' pins one):"]
        for (sock_type, kname), names in mapped.items():
            label = f"  {sock_type} {kname} [{', '.join(names)}]"
            if (sock_type, kname) in missing:
                lines.append(f"{label}: not in this kernel (bind: {missing[(sock_type, kname)]})")
            else:
                lines.append(f"{label}: {describe_drivers(drivers_of(records, kname, sock_type))}")
        return lines

    def new_socket_bound(self, sock_type: str, name: str) -> Any:
        """An AF_ALG socket bound to ``(sock_type, name)``; the socket is closed on error."""
        tfm = self.new_socket()
        try:
            tfm.bind((sock_type, name))
        except BaseException:
            tfm.close()
            raise
        return tfm

    def type_available(self, sock_type: str) -> bool:
        """Whether AF_ALG has ``sock_type`` at all (False: algif_<type> missing or blocked).

        bind() gives ENOENT both for an unknown algorithm and for a missing
        socket type; binding algorithms nearly every kernel has tells them apart.
        """
        if sock_type not in self._types:
            ok = False
            for name in _REFERENCE_NAMES.get(sock_type, ()):
                try:
                    self.new_socket_bound(sock_type, name).close()
                    ok = True
                    break
                except OSError:
                    continue
            self._types[sock_type] = ok
        return self._types[sock_type]

    def driver_flags(self, driver: str) -> int | None:
        """``cra_flags`` of a driver from NETLINK_CRYPTO CRYPTO_MSG_GETALG, or None.

        None when the kernel has no crypto_user (CONFIG_CRYPTO_USER), a policy
        blocks it, or it does not answer within a second.
        """
        if driver not in self._flags:
            self._flags[driver] = _netlink_flags(driver)
        return self._flags[driver]

    def is_hardware(self, record: Driver) -> bool | None:
        """True for an off-CPU engine, False for CPU code (generic C or CPU instructions)."""
        flags = self.driver_flags(record.driver)
        if flags is not None:
            return bool(flags & CRYPTO_ALG_KERN_DRIVER_ONLY)
        if record.module.startswith(_ENGINE_MODULES):
            return True
        return False if record.module == "kernel" or not record.is_async else None

    # -- contexts -------------------------------------------------------------------

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        """Bind, key and accept; :class:`Unsupported` with the kernel's reason on failure."""
        kname = kernel_name(algorithm)
        if kname is None:
            raise Unsupported(f"afalg has no kernel name for {algorithm.name}")
        sock_type = SOCKET_TYPE[algorithm.kind]
        tfm = self._bind(algorithm, sock_type, kname, variant)
        try:
            if algorithm.key_size:
                try:
                    tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY, key)
                except OSError as exc:
                    raise Unsupported(f"{self._label(kname, variant)} rejects a "
                                      f"{len(key)}-byte key: {errno_text(exc)}") from None
            if algorithm.has_tag:
                try:
                    tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_AEAD_AUTHSIZE, None,
                                   algorithm.tag_size)
                except OSError as exc:
                    raise Unsupported(f"{self._label(kname, variant)} rejects a "
                                      f"{algorithm.tag_size}-byte tag: {errno_text(exc)}") from None
            record = self._identify(algorithm, sock_type, kname, variant)
            cls = _CONTEXTS[algorithm.kind]
            ctx = cls(algorithm, key, tfm)
        except BaseException:
            tfm.close()
            raise
        if record is not None:
            ctx.driver = record.driver
            ctx.hardware = self.is_hardware(record)
        return ctx

    @staticmethod
    def _label(kname: str, variant: str | None) -> str:
        return f"driver '{variant}'" if variant else f"the kernel's {kname}"

    def _bind(self, alg: Algorithm, sock_type: str, kname: str, variant: str | None) -> Any:
        try:
            return self.new_socket_bound(sock_type, variant or kname)
        except AttributeError:
            raise Unavailable("this Python has no socket.AF_ALG (AF_ALG is Linux only)") from None
        except ValueError as exc:  # Python refuses names of 64 bytes or more
            raise Unsupported(f"cannot bind '{variant or kname}': {exc}") from None
        except OSError as exc:
            if exc.errno in (errno.EAFNOSUPPORT, errno.EPERM, errno.EACCES):
                raise Unavailable(socket_error(exc)) from None
            if exc.errno != errno.ENOENT:
                raise Unsupported(f"bind(('{sock_type}', '{variant or kname}')) failed: "
                                  f"{errno_text(exc)}") from None
        if not self.type_available(sock_type):
            raise Unsupported(
                f"AF_ALG type '{sock_type}' is not available: bind() gives [ENOENT] for every "
                f"{sock_type} algorithm tried (module algif_{sock_type} missing or blacklisted)")
        if not variant:
            raise Unsupported(f"the kernel has no {sock_type} algorithm '{kname}' for {alg.name}: "
                              "bind() gives [ENOENT] (not built, or its module cannot load)")
        raise Unsupported(f"the kernel has no {sock_type} driver '{variant}': bind() gives "
                          f"[ENOENT]; {self._drivers_here(sock_type, kname)}")

    def _drivers_here(self, sock_type: str, kname: str) -> str:
        """``drivers of cbc(aes) here: ...``, binding ``kname`` first to instantiate templates."""
        try:
            self.new_socket_bound(sock_type, kname).close()
        except OSError as exc:
            return f"the kernel has no {kname} at all (bind: {errno_text(exc)})"
        found = drivers_of(self.read_drivers(), kname, sock_type)
        return f"drivers of {kname} here: {describe_drivers(found)}"

    def _identify(self, alg: Algorithm, sock_type: str, kname: str,
                  variant: str | None) -> Driver | None:
        """The /proc/crypto record of the implementation just bound (None if not listed)."""
        records = self.read_drivers()
        if variant:
            pinned = [r for r in records if r.driver == variant and r.usable_as(sock_type)]
            if not pinned:
                best = drivers_of(records, variant, sock_type)  # a cra_name was given
                return best[0] if best else None
            if pinned[0].name != kname:
                raise Unsupported(
                    f"driver '{variant}' implements {pinned[0].name}, not {kname} ({alg.name}); "
                    f"{self._drivers_here(sock_type, kname)}")
            return pinned[0]
        best = drivers_of(records, kname, sock_type)
        return best[0] if best else None


def socket_error(exc: OSError) -> str:
    """Why socket(AF_ALG) failed, with what it means (one line)."""
    what = f"socket(AF_ALG) failed: {errno_text(exc)}"
    if exc.errno == errno.EAFNOSUPPORT:
        return f"{what}: this kernel has no AF_ALG (CONFIG_CRYPTO_USER_API, module af_alg)"
    if exc.errno in (errno.EPERM, errno.EACCES):
        return f"{what}: blocked by a seccomp or LSM policy (container runtimes often do)"
    return what


def _netlink_flags(driver: str) -> int | None:
    """``cra_flags`` of ``driver`` via CRYPTO_MSG_GETALG (struct crypto_user_alg, 208 bytes)."""
    name = driver.encode()
    if len(name) >= 64:
        return None
    payload = bytes(64) + name.ljust(64, b"\0") + bytes(64) + bytes(16)
    request = struct.pack("=IHHII", 16 + len(payload), CRYPTO_MSG_GETALG, NLM_F_REQUEST, 1, 0)
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_CRYPTO) as nl:
            nl.settimeout(1.0)
            nl.send(request + payload)
            reply = nl.recv(65536)
    except (OSError, AttributeError):
        return None
    if len(reply) < 16 + 208:
        return None
    _, msg_type, _, _, _ = struct.unpack_from("=IHHII", reply)
    if msg_type != CRYPTO_MSG_GETALG:
        return None
    return struct.unpack_from("=I", reply, 16 + 192 + 12)[0]


# -- contexts -------------------------------------------------------------------------


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


class _AfalgContext(Context):
    """A tfm socket (bound, keyed) and one operation socket accepted from it."""

    def __init__(self, algorithm: Algorithm, key: bytes, tfm: Any) -> None:
        super().__init__(algorithm, key)
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
    def _parts(self, data: bytes) -> list[tuple[memoryview, int]]:
        view = memoryview(data)
        if len(view) <= CHUNK:
            return [(view, 0)]
        return [(view[i:i + CHUNK], socket.MSG_MORE if i + CHUNK < len(view) else 0)
                for i in range(0, len(view), CHUNK)]

    def digest(self, data: bytes) -> bytes:
        op = self.op
        out = bytearray(self.algorithm.digest_size)
        try:
            for part, flags in self._parts(data):
                sent = op.send(part, flags)
                if sent != len(part):
                    raise _short(sent, len(part))
            _recv_exact(op, memoryview(out))
        except OSError:
            self.reset()
            raise
        return bytes(out)

    def runner(self, work: Workload) -> Runner:
        op = self.op
        out = bytearray(self.algorithm.digest_size)
        parts = self._parts(work.data)
        if len(parts) == 1:
            def run(count: int, send: Any = op.send, recv_into: Any = op.recv_into,
                    buf: memoryview = parts[0][0], out: bytearray = out) -> None:
                for _ in repeat(None, count):
                    send(buf)
                    recv_into(out)

            return run

        def run_chunked(count: int, send: Any = op.send, recv_into: Any = op.recv_into,
                        parts: list[tuple[memoryview, int]] = parts, out: bytearray = out) -> None:
            for _ in repeat(None, count):
                for part, flags in parts:
                    send(part, flags)
                recv_into(out)

        return run_chunked


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

        def run(count: int, send: Any = op.send, recv_into: Any = op.recv_into,
                plan: list[tuple[memoryview, memoryview, int, int]] = plan) -> None:
            for _ in repeat(None, count):
                for src, dst, flags, n in plan:
                    if send(src, flags) != n or recv_into(dst, n) != n:
                        raise OSError(errno.EIO, f"AF_ALG took or returned less than {n} bytes")

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
_CONTEXTS: dict[Kind, type[Context]] = {
    Kind.DIGEST: _DigestContext, Kind.CIPHER: _CipherContext, Kind.AEAD: _AeadContext}



#: The built-in plugin of this module (found by :func:`pytest_qcrypto.backends.builtin_plugins`).
PLUGINS = [AfalgPlugin]
