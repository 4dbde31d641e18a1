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
implementation, and ``afalg:soft`` binds the kernel's generic C driver
(:func:`soft_driver`: ``cbc(aes-generic)``, ``hmac(sha256-generic)``), never
CPU-instruction code (AES-NI, AVX2) nor an off-CPU engine.  After the bind,
``/proc/crypto`` names the driver that does the work (:attr:`Context.driver`);
whether it runs off the CPU (:attr:`Context.hardware`) comes from the driver's
``CRYPTO_ALG_KERN_DRIVER_ONLY`` flag, asked over ``NETLINK_CRYPTO``
(``linux/cryptouser.h``), or failing that guessed from its module.

What one timed operation sends (sizes in bytes):

* digest: the buffer (in 64 KiB sends with ``MSG_MORE`` above 64 KiB), then
  ``recv`` of the digest: the kernel hashes from a fresh state and finalizes.
* MAC: a keyed hash socket (``hmac(sha256)``, ``cmac(aes)``), the key set on
  the tfm before ``accept()``; one operation is the buffer sent as a digest's
  is, then ``recv`` of the tag: the kernel starts from the keyed state each
  time.  Poly1305 (``poly1305``, where the kernel has it) has no key on the
  socket: each operation sends the 32-byte key and the buffer in one
  ``sendmsg``, which is how the kernel takes its one-time key.
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
for a ``recv`` that a single thread never makes.  The interface's own cost is a
null request, 1 byte to ``ecb(cipher_null)`` (:mod:`.afalg_null`).
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends.afalg_contexts import CONTEXTS
from pytest_qcrypto.backends.afalg_kernel import (  # noqa: F401  (CHUNK: users and tests)
    CHUNK,
    CRYPTO_ALG_KERN_DRIVER_ONLY,
    ENGINE_MODULES,
    KEY_IN_DATA,
    PROC_CRYPTO,
    REFERENCE_NAMES,
    SOCKET_TYPE,
    Driver,
    SocketFactory,
    describe_drivers,
    drivers_of,
    errno_text,
    kernel_name,
    parse_proc_crypto,
    socket_error,
    soft_driver,
)
from pytest_qcrypto.backends.afalg_kernel import netlink_flags as _netlink_flags
from pytest_qcrypto.backends.afalg_null import NULL_CIPHER, null_request
from pytest_qcrypto.backends.base import (Context, CryptoPlugin, NullRequest, Unavailable,
                                          Unsupported)
from pytest_qcrypto.algorithms.catalog import Algorithm

#: Why the public-key kinds and KDFs are not afalg rows (:meth:`AfalgPlugin.open` raises it).
NO_PKEY = ("the kernel's AF_ALG offers no public-key or password-hashing interface to user "
           "space: its socket types are hash, skcipher, aead and rng (an akcipher socket, "
           "algif_akcipher, was proposed but never merged), and it has no PBKDF2, scrypt or "
           "Argon2; the kernel's RSA and ECDH serve its own users and keyctl's KEYCTL_PKEY_* "
           "calls on keyring keys, an interface this plugin does not drive")


class AfalgPlugin(CryptoPlugin):
    """Linux kernel crypto through AF_ALG; ``afalg:DRIVER`` pins a driver.

    ``socket_factory`` makes an unbound AF_ALG socket (default
    ``socket.socket(AF_ALG, SOCK_SEQPACKET, 0)``) and ``proc_crypto`` is the
    path of /proc/crypto: both exist so that tests can stand in for the kernel.
    """

    outside_process = ("the kernel does the work (AF_ALG sockets), out of reach"
                       " of a user-space instruction count")

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
        self._missing: dict[tuple[str, str], str] | None = None
        #: why :meth:`supported` lists what the plugin maps, not what this kernel has
        self.unchecked = ""

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
        """Catalog algorithms with a kernel name that this kernel binds (each name bound once
        and kept); every mapped one, unchecked (:attr:`unchecked` says why), where no
        AF_ALG socket can be made."""
        mapped = _mapped()
        missing = self.missing()
        return frozenset(n for key, names in mapped.items() if key not in missing
                         for n in names)

    def why_unsupported(self, name: str) -> str:
        """What the bind of ``name``'s kernel name said when :meth:`supported` asked."""
        alg = catalog.lookup(name)
        kname = kernel_name(alg) if alg is not None else None
        if alg is None or kname is None:
            return ""
        said = self.missing().get((SOCKET_TYPE[alg.kind], kname))
        return f"this kernel has no {SOCKET_TYPE[alg.kind]} {kname} (bind: {said})" if said else ""

    def missing(self) -> dict[tuple[str, str], str]:
        """``(socket type, kernel name)`` of the mapped names this kernel does not bind, with
        the bind's errno text; asked once.  Empty, and :attr:`unchecked` set, when no AF_ALG
        socket can be made."""
        if self._missing is None:
            self._missing = {}
            try:
                self.probe()
            except Unavailable as exc:
                self.unchecked = f"not checked against this kernel: {exc}"
                return self._missing
            for sock_type, kname in _mapped():
                try:
                    self.new_socket_bound(sock_type, kname).close()
                except OSError as exc:
                    self._missing[(sock_type, kname)] = errno_text(exc)
        return self._missing

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
        return _driver_details(self)

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
            for name in REFERENCE_NAMES.get(sock_type, ()):
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
        if record.module.startswith(ENGINE_MODULES):
            return True
        return False if record.module == "kernel" or not record.is_async else None

    def null_request(self) -> NullRequest:
        """One-byte requests to the kernel's null cipher (:mod:`.afalg_null`); Unsupported
        with the kernel's reason when it cannot be bound, keyed or primed."""
        try:
            return null_request(self.new_socket_bound(*NULL_CIPHER))
        except (AttributeError, OSError) as exc:
            said = errno_text(exc) if isinstance(exc, OSError) else "no socket.AF_ALG"
            raise Unsupported(f"no null request: {NULL_CIPHER[0]} {NULL_CIPHER[1]}: "
                              f"{said}") from None

    # -- contexts -------------------------------------------------------------------

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        """Bind, key and accept; :class:`Unsupported` with the kernel's reason on failure."""
        if not algorithm.rules.sized:
            raise Unsupported(NO_PKEY)
        kname = kernel_name(algorithm)
        if kname is None:
            raise Unsupported(f"afalg has no kernel name for {algorithm.name}")
        sock_type = SOCKET_TYPE[algorithm.kind]
        pinned = soft_driver(kname) if variant == "soft" else variant
        tfm = _bind(self, algorithm, sock_type, kname, pinned, soft=variant == "soft")
        try:
            _set_key_and_tag(tfm, algorithm, key, kname, _label(kname, pinned))
            record = _identify(self, algorithm, sock_type, kname, pinned)
            cls = CONTEXTS[algorithm.kind]
            ctx = cls(algorithm, key, tfm, key_in_data=kname in KEY_IN_DATA)
        except BaseException:
            tfm.close()
            raise
        if record is not None:
            ctx.driver = record.driver
            ctx.hardware = self.is_hardware(record)
        return ctx


# -- helpers of AfalgPlugin: listing, binding and identifying drivers ---------------


def _mapped() -> dict[tuple[str, str], list[str]]:
    """Catalog names by ``(socket type, kernel name)``, for each algorithm with a kernel name."""
    mapped: dict[tuple[str, str], list[str]] = {}
    for alg in catalog.ALGORITHMS:
        kname = kernel_name(alg)
        if kname is not None:
            mapped.setdefault((SOCKET_TYPE[alg.kind], kname), []).append(alg.name)
    return mapped


def _driver_details(plugin: AfalgPlugin) -> list[str]:
    """:meth:`AfalgPlugin.details`: each mapped kernel name and its drivers, or how to enable it."""
    mapped = _mapped()
    try:
        plugin.probe()
    except Unavailable:
        return ["to enable: a kernel with CONFIG_CRYPTO_USER_API_HASH, _SKCIPHER and _AEAD "
                "(modules af_alg, algif_hash, algif_skcipher, algif_aead), and a policy "
                "that allows socket(AF_ALG)"]
    missing = plugin.missing()
    records = plugin.read_drivers()
    absent = [n for key in missing for n in mapped[key]]
    lines = [plugin.unchecked or "algorithms listed: those this kernel binds (each kernel "
             "name bound once)" + (f"; not in this kernel: {', '.join(absent)}" if absent
                                   else ""),
             "drivers (from /proc/crypto; 'afalg' takes the first, "
             "'afalg:DRIVER' pins one):"]
    for (sock_type, kname), names in mapped.items():
        label = f"  {sock_type} {kname} [{', '.join(names)}]"
        if (sock_type, kname) in missing:
            lines.append(f"{label}: not in this kernel (bind: {missing[(sock_type, kname)]})")
        else:
            lines.append(f"{label}: {describe_drivers(drivers_of(records, kname, sock_type))}")
    return lines


def _set_key_and_tag(tfm: Any, algorithm: Algorithm, key: bytes, kname: str,
                     label: str) -> None:
    """Key the bound ``tfm`` (and set an AEAD's tag size); :class:`Unsupported` when refused.

    A hash in :data:`KEY_IN_DATA` (Poly1305) has no key on the socket: its contexts
    send the key before each message.
    """
    if algorithm.key_size and kname not in KEY_IN_DATA:
        try:
            tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY, key)
        except OSError as exc:
            raise Unsupported(f"{label} rejects a "
                              f"{len(key)}-byte key: {errno_text(exc)}") from None
    if algorithm.has_tag:
        try:
            tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_AEAD_AUTHSIZE, None,
                           algorithm.tag_size)
        except OSError as exc:
            raise Unsupported(f"{label} rejects a "
                              f"{algorithm.tag_size}-byte tag: {errno_text(exc)}") from None


def _label(kname: str, variant: str | None) -> str:
    """``driver 'DRIVER'`` when pinned, else ``the kernel's NAME``: the subject of an error."""
    return f"driver '{variant}'" if variant else f"the kernel's {kname}"


def _bind(plugin: AfalgPlugin, alg: Algorithm, sock_type: str, kname: str,
          variant: str | None, soft: bool = False) -> Any:
    """The tfm socket bound to ``variant or kname``; :class:`Unsupported` or
    :class:`Unavailable` with the kernel's reason when the bind fails.  ``soft``:
    ``variant`` is :func:`soft_driver`'s name for ``afalg:soft``, said in the error."""
    try:
        return plugin.new_socket_bound(sock_type, variant or kname)
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
    if not plugin.type_available(sock_type):
        raise Unsupported(
            f"AF_ALG type '{sock_type}' is not available: bind() gives [ENOENT] for every "
            f"{sock_type} algorithm tried (module algif_{sock_type} missing or blacklisted)")
    if not variant:
        raise Unsupported(f"the kernel has no {sock_type} algorithm '{kname}' for {alg.name}: "
                          "bind() gives [ENOENT] (not built, or its module cannot load)")
    what = "afalg:soft binds the generic C driver, but " if soft else ""
    raise Unsupported(f"{what}the kernel has no {sock_type} driver '{variant}': bind() gives "
                      f"[ENOENT]; {_drivers_here(plugin, sock_type, kname)}")


def _drivers_here(plugin: AfalgPlugin, sock_type: str, kname: str) -> str:
    """``drivers of cbc(aes) here: ...``, binding ``kname`` first to instantiate templates."""
    try:
        plugin.new_socket_bound(sock_type, kname).close()
    except OSError as exc:
        return f"the kernel has no {kname} at all (bind: {errno_text(exc)})"
    found = drivers_of(plugin.read_drivers(), kname, sock_type)
    return f"drivers of {kname} here: {describe_drivers(found)}"


def _identify(plugin: AfalgPlugin, alg: Algorithm, sock_type: str, kname: str,
              variant: str | None) -> Driver | None:
    """The /proc/crypto record of the implementation just bound (None if not listed)."""
    records = plugin.read_drivers()
    if variant:
        pinned = [r for r in records if r.driver == variant and r.usable_as(sock_type)]
        if not pinned:
            best = drivers_of(records, variant, sock_type)  # a cra_name was given
            return best[0] if best else None
        if pinned[0].name != kname:
            raise Unsupported(
                f"driver '{variant}' implements {pinned[0].name}, not {kname} ({alg.name}); "
                f"{_drivers_here(plugin, sock_type, kname)}")
        return pinned[0]
    best = drivers_of(records, kname, sock_type)
    return best[0] if best else None


#: The built-in plugin of this module (found by :func:`pytest_qcrypto.backends.builtin_plugins`).
PLUGINS = [AfalgPlugin]
