"""The kernel side of the ``afalg`` plugin: names, drivers and errors.

Catalog names to kernel crypto API names (:func:`kernel_name`), the drivers
``/proc/crypto`` lists (:func:`parse_proc_crypto`, :class:`Driver`), a
driver's ``cra_flags`` over ``NETLINK_CRYPTO`` (``linux/cryptouser.h``), and
errno texts.  Constants follow ``include/uapi/linux/if_alg.h``,
``linux/netlink.h`` and ``crypto.h``.  A helper of :mod:`.afalg`, not a plugin.
"""

from __future__ import annotations

import errno
import os
import re
import socket
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_qcrypto.algorithms.catalog import Algorithm, Kind

#: Bytes per send of a chunked buffer: ALG_MAX_PAGES (16) pages of 4 KiB, as libkcapi does.
CHUNK = 65536
#: AF_ALG socket types (if_alg.h ``salg_type``) per catalog kind.
SOCKET_TYPE = {Kind.DIGEST: "hash", Kind.CIPHER: "skcipher", Kind.AEAD: "aead",
               Kind.MAC: "hash"}
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
REFERENCE_NAMES = {"hash": ("sha256", "sha1", "md5"),
                    "skcipher": ("ecb(aes)", "cbc(aes)", "ctr(aes)"),
                    "aead": ("gcm(aes)", "ccm(aes)", "rfc7539(chacha20,poly1305)")}
#: Module name prefixes of off-CPU engines (drivers/crypto/), when NETLINK_CRYPTO cannot tell.
ENGINE_MODULES = (
    "atmel", "caam", "ccp", "ccree", "chcr", "hisi", "img_hash", "keembay", "marvell",
    "mv_cesa", "mxs_dcp", "n2_crypto", "nx_crypto", "omap", "qat", "qce", "rk_crypto",
    "s5p", "sahara", "safexcel", "crypto_safexcel", "stm32", "sun4i", "sun8i", "talitos",
    "virtio_crypto", "zynqmp", "aspeed", "amlogic", "mtk", "exynos", "artpec", "octeontx",
)

SocketFactory = Callable[[], Any]


#: Kernel names of the catalog's ciphers, AEADs and MACs other than AES's modes
#: (crypto/*.c ``cra_name``; HMAC and CMAC are templates over the digest or cipher).
_KEYED_NAMES = {
    "chacha20": "chacha20", "chacha20-poly1305": "rfc7539(chacha20,poly1305)",
    "des-ede3-cbc": "cbc(des3_ede)", "des-cbc": "cbc(des)", "bf-cbc": "cbc(blowfish)",
    "cast5-cbc": "cbc(cast5)", "cmac-aes-128": "cmac(aes)", "poly1305": "poly1305",
    **{f"hmac-{d}": f"hmac({d})" for d in ("md5", "sha1", "sha256", "sha384", "sha512")},
}
#: Hash names whose key is not set on the socket but sent as the first bytes of every
#: message: Poly1305's key is one-time, so crypto/poly1305_generic.c has no setkey and
#: takes the 32-byte key from the first 32 bytes of the data (Linux 6.1; the shash
#: was removed in 6.15, where bind gives ENOENT).
KEY_IN_DATA = frozenset({"poly1305"})
#: Kernel names whose generic C driver is not NAME with "-generic" added inside
#: (``afalg:soft``): these templates name their instances after what they build.
_SOFT_DRIVERS = {"gcm(aes)": "gcm_base(ctr(aes-generic),ghash-generic)",
                 "xts(aes)": "xts(ecb(aes-generic))"}


def kernel_name(alg: Algorithm) -> str | None:
    """The kernel crypto API name of a catalog algorithm, or None when it has none."""
    if not alg.keyed:
        return _DIGEST_NAMES.get(alg.name)
    if alg.family == "aes" and alg.mode in ("cbc", "ctr", "ecb", "xts", "gcm"):
        return f"{alg.mode}(aes)"
    return _KEYED_NAMES.get(alg.name)


def soft_driver(kname: str) -> str:
    """The driver name of the kernel's generic C implementation of ``kname``
    (what ``afalg:soft`` binds): each primitive gets its ``-generic`` driver,
    templates around it are instantiated over that (``cbc(aes)`` ->
    ``cbc(aes-generic)``, ``hmac(sha256)`` -> ``hmac(sha256-generic)``,
    ``sha256`` -> ``sha256-generic``; GCM and XTS by the names their templates
    give).  Kernels from 6.16 replace some ``-generic`` drivers by ``-lib``
    ones: there bind fails and the error lists the drivers there are.
    """
    if kname in _SOFT_DRIVERS:
        return _SOFT_DRIVERS[kname]
    return re.sub(r"([\w-]+)(?=[,)]|$)", r"\1-generic", kname)


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


def socket_error(exc: OSError) -> str:
    """Why socket(AF_ALG) failed, with what it means (one line)."""
    what = f"socket(AF_ALG) failed: {errno_text(exc)}"
    if exc.errno == errno.EAFNOSUPPORT:
        return f"{what}: this kernel has no AF_ALG (CONFIG_CRYPTO_USER_API, module af_alg)"
    if exc.errno in (errno.EPERM, errno.EACCES):
        return f"{what}: blocked by a seccomp or LSM policy (container runtimes often do)"
    return what


def netlink_flags(driver: str) -> int | None:
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
