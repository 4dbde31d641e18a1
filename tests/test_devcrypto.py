"""The devcrypto plugin: the /dev/crypto ABIs, sessions, and every error path.

cryptodev-linux is not packaged here and FreeBSD is not at hand, so sessions
run against :class:`CryptodevDouble`, an in-process test double of the kernel
side of /dev/crypto.  It is deliberately independent of the plugin's ABI
module: it knows the request numbers and field offsets only from the
reference tables of ``kernel-abi.md`` (x86_64 / amd64), reads and writes the
caller's memory through the pointers in the structs as the kernel does, and
reproduces what was seen on a real cryptodev-linux 1.14 module (section 7):
EINVAL for unknown ids and bad key lengths, EBADMSG with unauthenticated
plaintext left in the output, and a simulated kernel oops for the three misuses
that crash the real one.  Given the caller's buffers (``memory``), it also
checks each AEAD request's pointers against them as the kernel pins or copies
them (cryptodev-linux ``authenc.c`` ``cryptodev_get_dst_len``, FreeBSD
``cryptodev_aead``), with EFAULT for a range that runs past its buffer.  The
plugin reaches it through the one seam it has (the device object); the code
above that seam is what runs on /dev/crypto.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import hashlib
import hmac
import re
import os
import struct
import sys
from collections.abc import Callable
from typing import Any

import pytest
from cryptography.exceptions import InvalidTag
try:  # cryptography 43 and later
    from cryptography.hazmat.decrepit.ciphers.algorithms import CAST5, Blowfish, TripleDES
except ImportError:
    from cryptography.hazmat.primitives.ciphers.algorithms import CAST5, Blowfish, TripleDES
from cryptography.hazmat.primitives import poly1305
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

from conftest import FAST as _FAST
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.checks import known_answers as kat
from pytest_qcrypto.backends import AuthenticationError, Unavailable, Unsupported, Workload
from pytest_qcrypto.backends import cryptodev_abi as abi, devcrypto, devcrypto_contexts
from pytest_qcrypto.backends.devcrypto import DevcryptoPlugin
from pytest_qcrypto.backends.openssl import OpenSSLPlugin

FAST = (*_FAST, "-p", "no:hypothesispytest")
OPENSSL = OpenSSLPlugin()
LP64_X86 = ctypes.sizeof(ctypes.c_void_p) == 8

# -- reference values (kernel-abi.md sections 1.2, 1.3, 2.2, 2.3, 5) ----------------------

LINUX_REQUESTS = {
    "CRIOGET": 0xC0046365, "CIOCGSESSION": 0xC0306366, "CIOCFSESSION": 0x40046367,
    "CIOCCRYPT": 0xC0306368, "CIOCKEY": 0xC0906369, "CIOCASYMFEAT": 0x8004636A,
    "CIOCGSESSINFO": 0xC10C636B, "CIOCAUTHCRYPT": 0xC048636D, "CIOCASYNCCRYPT": 0x4030636E,
    "CIOCASYNCFETCH": 0x8030636F, "CIOCCPHASH": 0x40086370,
}
FREEBSD_REQUESTS = {
    "CRIOGET": 0xC0046364, "CIOCGSESSION": 0xC0306365, "CIOCFSESSION": 0x80046366,
    "CIOCCRYPT": 0xC0306367, "CIOCKEY": 0xC0906368, "CIOCASYMFEAT": 0x40046369,
    "CIOCGSESSION2": 0xC040636A, "CIOCKEY2": 0xC090636B, "CIOCFINDDEV": 0xC024636C,
    "CIOCCRYPTAEAD": 0xC040636D,
}
LINUX_SIZES = {"session_op": 48, "session_info_op": 268, "crypt_op": 48, "crypt_auth_op": 72,
               "crypt_kop": 144, "cphash_op": 8}
FREEBSD_SIZES = {"session_op": 48, "session2_op": 64, "crypt_op": 48, "crypt_aead": 64,
                 "crypt_find_op": 36, "crypt_kop": 144}
OFFSETS = {
    abi.LinuxSessionOp: {"cipher": 0, "mac": 4, "keylen": 8, "key": 16, "mackeylen": 24,
                         "mackey": 32, "ses": 40},
    abi.LinuxSessionInfoOp: {"ses": 0, "cipher_info": 4, "hash_info": 132, "alignmask": 260,
                             "flags": 264},
    abi.LinuxCryptOp: {"ses": 0, "op": 4, "flags": 6, "len": 8, "src": 16, "dst": 24, "mac": 32,
                       "iv": 40},
    abi.LinuxCryptAuthOp: {"ses": 0, "op": 4, "flags": 6, "len": 8, "auth_len": 12,
                           "auth_src": 16, "src": 24, "dst": 32, "tag": 40, "tag_len": 48,
                           "iv": 56, "iv_len": 64},
    abi.FreeBSDSession2Op: {"cipher": 0, "mac": 4, "keylen": 8, "key": 16, "mackeylen": 24,
                            "mackey": 32, "ses": 40, "crid": 44, "ivlen": 48, "maclen": 52,
                            "pad": 56},
    abi.FreeBSDCryptAead: {"ses": 0, "op": 4, "flags": 6, "len": 8, "aadlen": 12, "ivlen": 16,
                           "src": 24, "dst": 32, "aad": 40, "tag": 48, "iv": 56},
    abi.FreeBSDCryptFindOp: {"crid": 0, "name": 4},
}


# -- the test double ------------------------------------------------------------------------


class KernelOops(BaseException):
    """What the real module does for this request: a NULL dereference, a hung process."""


def _cbc(cls, key_size):
    return lambda key, iv: Cipher(cls(key), modes.CBC(iv))


def _des(key, iv):
    return Cipher(TripleDES(key * 3), modes.CBC(iv))  # DES = TripleDES with K1 = K2 = K3


def _hmac(name):
    return lambda key: hmac.new(key, digestmod=name)


class _Poly1305:
    """Poly1305 (RFC 8439 2.5) with hashlib's update/digest, as the double calls it."""

    def __init__(self, key: bytes) -> None:
        self.mac = poly1305.Poly1305(key)

    def update(self, data: bytes) -> None:
        self.mac.update(data)

    def digest(self) -> bytes:
        return self.mac.finalize()


class _Null:
    """The kernel's null cipher (crypto/crypto_null.c): output = input, no key, no IV."""

    def __init__(self, key: bytes, iv: bytes) -> None:
        assert key == b"" and iv == b""

    def encryptor(self) -> _Null:
        return self

    def decryptor(self) -> _Null:
        return self

    def update(self, data: bytes) -> bytes:
        return bytes(data)

    def finalize(self) -> bytes:
        return b""


def _stream(kind):
    return {"ctr": lambda key, iv: Cipher(algorithms.AES(key), modes.CTR(iv)),
            "xts": lambda key, iv: Cipher(algorithms.AES(key), modes.XTS(iv)),
            "ecb": lambda key, iv: Cipher(algorithms.AES(key), modes.ECB()),
            "chacha20": lambda key, iv: Cipher(algorithms.ChaCha20(key, iv), None)}[kind]


@dataclasses.dataclass
class Spec:
    """One algorithm id of the double: what it computes and its sizes (bytes)."""

    kind: str  # digest, mac (keyed: the session's mac key), cipher, aead
    make: Callable[..., Any]
    keys: tuple[int, ...] = ()  # cipher key lengths; for a mac, () takes any length
    block: int = 1
    iv: int = 0
    driver: str = ""


AES_KEYS = (16, 24, 32)
LINUX_SPECS = {
    13: Spec("digest", lambda: hashlib.md5(), driver="md5-generic"),
    14: Spec("digest", lambda: hashlib.sha1(), driver="sha1-avx2"),
    103: Spec("digest", lambda: hashlib.sha224(), driver="sha224-avx2"),
    104: Spec("digest", lambda: hashlib.sha256(), driver="sha256-avx2"),
    105: Spec("digest", lambda: hashlib.sha384(), driver="sha384-avx2"),
    106: Spec("digest", lambda: hashlib.sha512(), driver="sha512-avx2"),
    11: Spec("cipher", _cbc(algorithms.AES, 16), AES_KEYS, 16, 16, "cbc-aes-aesni"),
    21: Spec("cipher", _stream("ctr"), AES_KEYS, 1, 16, "ctr-aes-aesni"),
    22: Spec("cipher", _stream("xts"), (32, 64), 16, 16, "xts-aes-aesni"),
    23: Spec("cipher", _stream("ecb"), AES_KEYS, 16, 0, "ecb-aes-aesni"),
    2: Spec("cipher", _cbc(TripleDES, 24), (24,), 8, 8, "cbc-des3_ede-asm"),
    50: Spec("aead", AESGCM, AES_KEYS, 1, 12, "generic-gcm-aesni"),
    1: Spec("cipher", _des, (8,), 8, 8, "cbc(des-generic)"),
    3: Spec("cipher", _cbc(Blowfish, 16), tuple(range(4, 57)), 8, 8, "cbc-blowfish-asm"),
    # 4 (CRYPTO_CAST_CBC): cryptodev-linux 1.14 maps it to nothing, EINVAL
    # CRYPTO_NULL (crypto/cryptodev.h enum cryptodev_crypto_op_t: 16), ecb(cipher_null)
    16: Spec("cipher", _Null, (0,), 1, 0, "ecb-cipher_null"),
    6: Spec("mac", _hmac("md5"), driver="hmac(md5-generic)"),
    7: Spec("mac", _hmac("sha1"), driver="hmac(sha1-avx2)"),
    18: Spec("mac", _hmac("sha256"), driver="hmac(sha256-avx2)"),
    19: Spec("mac", _hmac("sha384"), driver="hmac(sha384-avx2)"),
    20: Spec("mac", _hmac("sha512"), driver="hmac(sha512-avx2)"),
}
FREEBSD_SPECS = {
    14: Spec("digest", lambda: hashlib.sha1()), 34: Spec("digest", lambda: hashlib.sha224()),
    35: Spec("digest", lambda: hashlib.sha256()), 36: Spec("digest", lambda: hashlib.sha384()),
    37: Spec("digest", lambda: hashlib.sha512()),
    29: Spec("digest", lambda: hashlib.blake2b()), 30: Spec("digest", lambda: hashlib.blake2s()),
    11: Spec("cipher", _cbc(algorithms.AES, 16), AES_KEYS, 16, 16),
    23: Spec("cipher", _stream("ctr"), AES_KEYS, 1, 16),
    31: Spec("cipher", _stream("chacha20"), (32,), 1, 16),
    25: Spec("aead", AESGCM, AES_KEYS, 1, 12),
    41: Spec("aead", ChaCha20Poly1305, (32,), 1, 12),
    7: Spec("mac", _hmac("sha1")), 18: Spec("mac", _hmac("sha256")),
    19: Spec("mac", _hmac("sha384")), 20: Spec("mac", _hmac("sha512")),
    38: Spec("mac", _Poly1305, (32,)),
    # CRYPTO_NULL_CBC (sys/opencrypto/cryptodev.h: 16), NULL_BLOCK_LEN 4
    16: Spec("cipher", _Null, (0,), 4, 0),
    # 1, 3, 4, 6 (DES, Blowfish, CAST, MD5-HMAC): removed in FreeBSD 13.0, EINVAL
}
LINUX_NR = {v: k for k, v in LINUX_REQUESTS.items()}
FREEBSD_NR = {v: k for k, v in FREEBSD_REQUESTS.items()}


def _peek(address: int, size: int) -> bytes:
    return ctypes.string_at(address, size) if size else b""


def _poke(address: int, data: bytes) -> None:
    if data:
        ctypes.memmove(address, data, len(data))


class DoubleDevice:
    """One open "/dev/crypto" of the double: a real fd (of /dev/null) so leaks show."""

    def __init__(self, double: CryptodevDouble) -> None:
        self.double = double
        self.fd = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
        double.open_fds.add(self.fd)

    def ioctl(self, request: int, arg: Any, mutate: bool = True) -> Any:
        """As fcntl.ioctl with a mutable buffer: the kernel sees a copy of ``arg``."""
        size = ctypes.sizeof(arg)
        raw = bytearray(_peek(ctypes.addressof(arg), size))
        self.double.calls.append(request)
        try:
            self.double.handle(request, raw)
        finally:
            if mutate:
                _poke(ctypes.addressof(arg), bytes(raw))
        return 0 if mutate else bytes(raw)

    def close(self) -> None:
        if self.fd >= 0:
            self.double.open_fds.discard(self.fd)
            os.close(self.fd)
            self.fd = -1


class CryptodevDouble:
    """Test double of the kernel side of /dev/crypto: ``linux=True`` for cryptodev-linux
    1.14, else FreeBSD 13+ cryptodev(4).  Configure: ``present``, ``rejected`` (id ->
    errno at session creation), ``max_len`` (a driver's request cap, EINVAL above),
    ``kernel_driver_only`` (SIOP_FLAG_KERNEL_DRIVER_ONLY), FreeBSD ``drivers`` (crid ->
    name) and ``allow_soft``.  ``memory``: the caller's buffers, each with ``address``
    and ``room`` (bytes); when set, an AEAD request's pointer range outside all of them
    is EFAULT, and ``pins`` records ("dst", bytes the kernel takes, room from there
    to the end of its buffer) for each destination."""

    def __init__(self, linux: bool = True) -> None:
        self.linux = linux
        self.present = True
        self.rejected: dict[int, int] = {}
        self.max_len: int | None = None
        self.kernel_driver_only = False
        self.drivers = {0: "cryptosoft0", 1: "aesni0"}
        self.allow_soft = True
        self.sessions: dict[int, dict[str, Any]] = {}
        self.open_fds: set[int] = set()
        self.calls: list[int] = []
        self.memory: list[Any] | None = None
        self.pins: list[tuple[str, int, int]] = []
        self._next = 0x51D0

    def open(self, path: str) -> DoubleDevice:
        if not self.present:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
        return DoubleDevice(self)

    def plugin(self) -> DevcryptoPlugin:
        return DevcryptoPlugin(device=self.open,
                               abi=abi.linux_abi("x86_64") if self.linux else abi.freebsd_abi())

    @staticmethod
    def fail(code: int) -> OSError:
        return OSError(code, os.strerror(code))

    def user(self, what: str, address: int, length: int) -> int:
        """Check that ``length`` bytes at ``address`` lie in one of the caller's buffers
        (EFAULT otherwise, as at a page edge); the room from ``address`` to its end."""
        if self.memory is None or length == 0:
            return length
        for buf in self.memory:
            if buf.address <= address < buf.address + buf.room:
                room = buf.address + buf.room - address
                if length <= room:
                    return room
                break
        raise OSError(errno.EFAULT, f"{os.strerror(errno.EFAULT)}: {what} takes {length} bytes")

    def pin_dst(self, address: int, length: int) -> None:
        self.pins.append(("dst", length, self.user("dst", address, length)))

    def handle(self, request: int, raw: bytearray) -> None:
        names = LINUX_NR if self.linux else FREEBSD_NR
        name = names.get(request)
        if name is None:
            raise self.fail(errno.EINVAL if self.linux else errno.ENOTTY)
        getattr(self, f"do_{name}")(raw)

    # -- sessions --------------------------------------------------------------------
    def _new_session(self, cipher: int, mac: int, key: bytes, mackey: bytes = b"",
                     crid: int = 0) -> int:
        specs = LINUX_SPECS if self.linux else FREEBSD_SPECS
        if cipher == mac == 0:
            raise self.fail(errno.EINVAL)
        ident = cipher or mac
        if ident in self.rejected:
            raise self.fail(self.rejected[ident])
        spec = specs.get(ident)
        if spec is None or (cipher and spec.kind in ("digest", "mac")) or \
                (mac and spec.kind not in ("digest", "mac")):
            raise self.fail(errno.EINVAL)
        if cipher and len(key) not in spec.keys:
            raise self.fail(errno.EINVAL)
        if spec.kind == "mac" and (len(mackey) > 512
                                   or (spec.keys and len(mackey) not in spec.keys)):
            raise self.fail(errno.EINVAL)  # CRYPTO_HMAC_MAX_KEY_LEN; Poly1305: 32 bytes
        self._next += 7
        self.sessions[self._next] = {"spec": spec, "key": key, "mackey": mackey,
                                     "tag_len": None, "crid": crid}
        return self._next

    def do_CIOCGSESSION(self, raw: bytearray) -> None:
        cipher, mac, keylen, key, mackeylen, mackey, _ = struct.unpack_from("<III4xQI4xQI", raw)
        struct.pack_into("<I", raw, 40, self._new_session(
            cipher, mac, _peek(key, keylen), _peek(mackey, mackeylen)))

    def do_CIOCGSESSION2(self, raw: bytearray) -> None:
        cipher, mac, keylen, key, mackeylen, mackey, _, crid = \
            struct.unpack_from("<III4xQi4xQIi", raw)
        hw, sw = abi.CRYPTO_FLAG_HARDWARE, abi.CRYPTO_FLAG_SOFTWARE
        if crid & (hw | sw):
            soft = [c for c, n in self.drivers.items()
                    if n.rstrip("0123456789") in ("cryptosoft", "aesni", "ossl", "armv8crypto")]
            hard = [c for c in self.drivers if c not in soft] if crid & hw else []
            # checkforsoftware(): without allow_soft, SOFTWARE alone is EINVAL and
            # HARDWARE|SOFTWARE is narrowed to HARDWARE
            usable = hard + (sorted(soft, reverse=True) if self.allow_soft and crid & sw else [])
            if not usable:
                raise self.fail(errno.EINVAL)
            crid = usable[0]  # hardware first, then accelerated software, then cryptosoft
        elif crid not in self.drivers:
            raise self.fail(errno.EINVAL)
        ses = self._new_session(cipher, mac, _peek(key, keylen), _peek(mackey, mackeylen), crid)
        struct.pack_into("<Ii", raw, 40, ses, crid)

    def do_CIOCFSESSION(self, raw: bytearray) -> None:
        ses, = struct.unpack_from("<I", raw)
        if self.sessions.pop(ses, None) is None and not self.linux:
            raise self.fail(errno.EINVAL)  # cryptodev-linux returns 0 for an unknown id

    def do_CIOCGSESSINFO(self, raw: bytearray) -> None:
        ses, = struct.unpack_from("<I", raw)
        s = self._session(ses)
        spec = s["spec"]
        where = 132 if spec.kind in ("digest", "mac") else 4
        struct.pack_into("<64s64s", raw, where, b"name", spec.driver.encode())
        struct.pack_into("<HxxI", raw, 260, 0, int(self.kernel_driver_only))

    def do_CIOCFINDDEV(self, raw: bytearray) -> None:
        crid, name = struct.unpack_from("<i32s", raw)
        if crid == -1:
            wanted = name.rstrip(b"\0").decode()
            found = [c for c, n in self.drivers.items() if n == wanted]
            if not found:
                raise self.fail(errno.ENOENT)
            struct.pack_into("<i", raw, 0, found[0])
        elif crid in self.drivers:
            struct.pack_into("<32s", raw, 4, self.drivers[crid].encode())
        else:
            raise self.fail(errno.ENOENT)

    def _session(self, ses: int) -> dict[str, Any]:
        if ses not in self.sessions:
            raise self.fail(errno.EINVAL)
        return self.sessions[ses]

    # -- requests --------------------------------------------------------------------
    def do_CIOCCRYPT(self, raw: bytearray) -> None:
        ses, op, flags, length, src, dst, mac, iv = struct.unpack_from("<IHHI4xQQQQ", raw)
        s = self._session(ses)
        spec = s["spec"]
        if spec.kind == "aead":
            raise KernelOops("CIOCCRYPT on an AEAD session: NULL pointer dereference")
        enc, dec = (0, 1) if self.linux else (1, 2)
        if op not in (enc, dec) or (spec.kind in ("digest", "mac") and op == dec and self.linux):
            raise self.fail(errno.EINVAL)
        if not self.linux and length > abi.FREEBSD_MAX_REQUEST:
            raise self.fail(errno.E2BIG)
        if self.max_len is not None and length > self.max_len:
            raise self.fail(errno.EINVAL)
        data = _peek(src, length)
        if spec.kind in ("digest", "mac"):
            h = spec.make(s["mackey"]) if spec.kind == "mac" else spec.make()
            h.update(data)
            _poke(mac, h.digest())
            return
        if length % spec.block or (spec.iv and not iv):
            raise self.fail(errno.EINVAL)
        c = spec.make(s["key"], _peek(iv, spec.iv))
        ctx = c.encryptor() if op == enc else c.decryptor()
        _poke(dst, ctx.update(data) + ctx.finalize())

    def do_CIOCAUTHCRYPT(self, raw: bytearray) -> None:
        (ses, op, flags, length, auth_len, auth_src, src, dst, _tag, tag_len, iv,
         _iv_len) = struct.unpack_from("<IHHIIQQQQI4xQI", raw)
        s = self._session(ses)
        if s["spec"].kind != "aead":
            raise self.fail(errno.EINVAL)
        if tag_len in (5, 9):
            raise KernelOops(f"tag_len {tag_len}: NULL pointer dereference in the GCM setup")
        if op == 0 and length == 0:
            raise KernelOops("encryption of an empty message: NULL pointer dereference in "
                             "crypto_auth_zc_aead -> gcmaes_crypt_by_sg (CR2 0xc)")
        tag_len = tag_len or s["tag_len"] or 16
        if tag_len > 16 or (s["tag_len"] not in (None, tag_len)) or flags or auth_len > 4096:
            raise self.fail(errno.EINVAL)
        s["tag_len"] = tag_len
        self.user("src", src, length)
        self.user("auth_src", auth_src, auth_len)
        self.user("iv", iv, 12)
        # cryptodev_get_dst_len: len (ciphertext || tag) to decrypt, len + tag_len to encrypt
        self.pin_dst(dst, length if op == 1 else length + tag_len)
        key, nonce, aad = s["key"], _peek(iv, 12), _peek(auth_src, auth_len)
        data = _peek(src, length)
        counter = nonce + (2).to_bytes(4, "big")  # GCM: the payload starts at counter 2
        ctr = Cipher(algorithms.AES(key), modes.CTR(counter)).encryptor()
        if op == 0:
            sealed = AESGCM(key).encrypt(nonce, data, aad or None)
            _poke(dst, sealed[:length + tag_len])  # ciphertext || tag truncated to tag_len
            struct.pack_into("<I", raw, 8, length + tag_len)
            return
        if length < tag_len:
            raise self.fail(errno.EINVAL)
        ct, tag = data[:-tag_len], data[-tag_len:]
        plaintext = ctr.update(ct)
        _poke(dst, plaintext)  # the real module writes it before checking the tag
        if AESGCM(key).encrypt(nonce, plaintext, aad or None)[len(ct):len(ct) + tag_len] != tag:
            raise self.fail(errno.EBADMSG)
        struct.pack_into("<I", raw, 8, length - tag_len)

    def do_CIOCCRYPTAEAD(self, raw: bytearray) -> None:
        ses, op, flags, length, aadlen, ivlen, src, dst, aad, tag, iv = \
            struct.unpack_from("<IHHIII4xQQQQQ", raw)
        s = self._session(ses)
        spec = s["spec"]
        if spec.kind != "aead" or ivlen != spec.iv or not iv:
            raise self.fail(errno.EINVAL)
        if length > abi.FREEBSD_MAX_REQUEST or aadlen > abi.FREEBSD_MAX_REQUEST:
            raise self.fail(errno.E2BIG)
        for what, address, size in (("src", src, length), ("aad", aad, aadlen),
                                    ("iv", iv, ivlen), ("tag", tag, 16)):
            self.user(what, address, size)
        self.pin_dst(dst, length)  # copyout of the payload; the tag has its own pointer
        box = spec.make(s["key"])
        nonce, data, aad_bytes = _peek(iv, ivlen), _peek(src, length), _peek(aad, aadlen)
        if op == 1:
            sealed = box.encrypt(nonce, data, aad_bytes or None)
            _poke(dst, sealed[:-16])
            _poke(tag, sealed[-16:])
            return
        try:
            _poke(dst, box.decrypt(nonce, data + _peek(tag, 16), aad_bytes or None))
        except InvalidTag:
            raise self.fail(errno.EBADMSG) from None


# -- fixtures -------------------------------------------------------------------------------


@pytest.fixture
def double() -> CryptodevDouble:
    return CryptodevDouble()


@pytest.fixture
def plugin(double) -> DevcryptoPlugin:
    return double.plugin()


def alg(name: str) -> catalog.Algorithm:
    a = catalog.lookup(name)
    assert a is not None
    return a


def key_for(a: catalog.Algorithm) -> bytes:
    return bytes(range(1, a.key_size + 1))


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


# -- the ABI layer ---------------------------------------------------------------------------


@pytest.mark.skipif(not LP64_X86, reason="reference values are for LP64 (x86_64, amd64)")
def test_linux_struct_sizes_and_request_numbers_match_the_reference():
    linux = abi.linux_abi("x86_64")
    assert {k: ctypes.sizeof(v) for k, v in linux.structs.items()} == LINUX_SIZES
    assert linux.requests == LINUX_REQUESTS
    assert abi.linux_abi("aarch64").requests == LINUX_REQUESTS  # same asm-generic encoding


@pytest.mark.skipif(not LP64_X86, reason="reference values are for LP64 (x86_64, amd64)")
def test_freebsd_struct_sizes_and_request_numbers_match_the_reference():
    bsd = abi.freebsd_abi()
    assert {k: ctypes.sizeof(v) for k, v in bsd.structs.items()} == FREEBSD_SIZES
    assert bsd.requests == FREEBSD_REQUESTS


@pytest.mark.skipif(not LP64_X86, reason="reference offsets are for LP64")
@pytest.mark.parametrize("struct_type", list(OFFSETS), ids=lambda t: t.__name__)
def test_field_offsets_match_the_reference(struct_type):
    assert {f: getattr(struct_type, f).offset for f in OFFSETS[struct_type]} == OFFSETS[struct_type]


def test_request_numbers_follow_the_encoding_formulas():
    e = abi.LINUX_GENERIC
    assert e.ioc(e.read | e.write, "c", 102, 48) == (3 << 30) | (48 << 16) | (0x63 << 8) | 102
    alt = abi.linux_abi("ppc64le").requests  # powerpc: 13-bit size, WRITE=4, READ=2
    assert alt["CIOCFSESSION"] == 0x80046367 and alt["CIOCASYMFEAT"] == 0x4004636A
    assert alt["CIOCGSESSION"] == LINUX_REQUESTS["CIOCGSESSION"]
    assert abi.linux_abi("mips64").requests == alt
    with pytest.raises(ValueError, match="does not fit"):
        abi.FREEBSD_IOC.ioc(6, "c", 1, 1 << 13)


def test_cop_codes_and_ids_differ_between_the_abis():
    linux, bsd = abi.linux_abi("x86_64"), abi.freebsd_abi()
    assert (linux.cop_encrypt, linux.cop_decrypt) == (0, 1)
    assert (bsd.cop_encrypt, bsd.cop_decrypt) == (1, 2)
    assert linux.algorithms["aes-128-ecb"].cipher == 23 == bsd.algorithms["aes-128-ctr"].cipher
    assert linux.algorithms["sha256"].mac == 104 and bsd.algorithms["sha256"].mac == 35
    assert "aes-128-xts" not in bsd.algorithms  # 8-byte block-number IV there
    assert "chacha20-poly1305" not in linux.algorithms


def test_host_abi_is_chosen_by_platform(monkeypatch):
    monkeypatch.setattr(abi.sys, "platform", "linux")
    assert abi.host_abi().name == "cryptodev-linux"
    monkeypatch.setattr(abi.sys, "platform", "freebsd14")
    assert abi.host_abi().name == "FreeBSD"
    monkeypatch.setattr(abi.sys, "platform", "darwin")
    assert abi.host_abi() is None


# -- availability ----------------------------------------------------------------------------


def test_supported_is_what_the_device_opens_a_session_of(double, plugin):
    """A real cryptodev-linux 1.14 refuses cast5-cbc, which --qcrypto-list offered (issue 24):
    the list is now what CIOCGSESSION takes, one session each, all closed again."""
    double.rejected[abi.linux_abi("x86_64").algorithms["sha384"].mac] = errno.EINVAL
    listed = plugin.supported()
    assert listed == set(LINUX_NAMES) - {"cast5-cbc", "sha384"}
    assert not double.sessions and not double.open_fds
    assert plugin.details()[1] == ("algorithms listed: those the device opens a session of; "
                                   "refused here: sha384, cast5-cbc")


def test_supported_without_the_device_says_it_did_not_check(double, plugin):
    double.present = False
    assert plugin.supported() == set(abi.linux_abi("x86_64").algorithms)
    assert plugin.unchecked == ("not checked against the device: no /dev/crypto here: "
                                f"{abi.linux_abi('x86_64').load_hint}")


def test_no_device_says_what_to_load(double, plugin):
    double.present = False
    with pytest.raises(Unavailable) as info:
        plugin.probe()
    assert str(info.value) == ("no /dev/crypto here: load the cryptodev-linux module: modprobe "
                               "cryptodev (out of tree: packaged by OpenWrt, Yocto and as DKMS); "
                               "FreeBSD: kldload cryptodev")
    assert "to enable: load the cryptodev-linux module" in "\n".join(DevcryptoPlugin(
        path="/nonexistent/crypto", abi=abi.linux_abi()).details())


def test_freebsd_without_device_says_kldload():
    with pytest.raises(Unavailable) as info:
        DevcryptoPlugin(path="/nonexistent/crypto", abi=abi.freebsd_abi()).probe()
    assert str(info.value) == (
        "no /nonexistent/crypto here: load cryptodev(4): kldload cryptodev; software and "
        "CPU-instruction drivers also need sysctl kern.crypto.allow_soft=1; Linux: modprobe "
        "cryptodev (cryptodev-linux)")


def test_device_permission_denied(double):
    def denied(path):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
    with pytest.raises(Unavailable, match=r"cannot open /dev/crypto: \[EACCES\] Permission denied"):
        DevcryptoPlugin(device=denied, abi=abi.linux_abi()).probe()


def test_no_abi_for_other_systems(monkeypatch):
    monkeypatch.setattr(abi.sys, "platform", "darwin")
    with pytest.raises(Unavailable, match="no /dev/crypto ABI for"):
        DevcryptoPlugin().probe()


def test_this_machine_has_no_dev_crypto():
    if os.path.exists("/dev/crypto"):
        pytest.skip("this machine has /dev/crypto")
    with pytest.raises(Unavailable, match="modprobe cryptodev"):
        DevcryptoPlugin().probe()


def test_the_real_device_path_issues_real_ioctls():
    """The real DeviceFile and fcntl.ioctl, on a file that is not /dev/crypto: ENOTTY."""
    plugin = DevcryptoPlugin(path=os.devnull, abi=abi.linux_abi())
    plugin.probe()
    before = open_fds()
    with pytest.raises(Unsupported) as info:
        plugin.open(alg("sha256"), b"")
    assert str(info.value) == ("/dev/crypto (cryptodev-linux) rejected sha256 at session creation "
                               "(CIOCGSESSION cipher=0 mac=104 keylen=0): [ENOTTY] Inappropriate "
                               "ioctl for device")
    assert open_fds() == before


def test_timed_loops_call_fcntl_ioctl_itself_on_the_real_device_and_doubles_through_theirs():
    """``loop_ioctl``: DeviceFile's ioctl (a partial of fcntl.ioctl) gives fcntl.ioctl and its
    fd, one call layer less; anything else (a double, a counting device) is still called."""
    import fcntl

    from pytest_qcrypto.backends.devcrypto import DeviceFile, loop_ioctl

    dev = DeviceFile(os.devnull)
    try:
        assert loop_ioctl(dev) == (fcntl.ioctl, dev.fd)
        seen: list[tuple[int, Any, bool]] = []
        dev.ioctl = lambda request, arg, mutate=True: seen.append((request, arg, mutate))
        call, fd = loop_ioctl(dev)
        assert fd == -1
        call(fd, 7, b"x", False)
        assert seen == [(7, b"x", False)]
    finally:
        dev.close()


# -- sessions and contexts -------------------------------------------------------------------


LINUX_NAMES = sorted(abi.LINUX_IDS)
FREEBSD_NAMES = sorted(abi.FREEBSD_IDS)
#: What the kernels refuse at session creation although the ABI has an id for it.
LINUX_REFUSED = {"cast5-cbc"}
FREEBSD_REFUSED = {"des-cbc", "bf-cbc", "cast5-cbc", "hmac-md5"}


@pytest.mark.parametrize("name", sorted(set(LINUX_NAMES) - LINUX_REFUSED))
def test_linux_known_answers(plugin, name):
    a = alg(name)
    assert kat.check_vectors("devcrypto", a, lambda key: plugin.open(a, key)) >= 1


@pytest.mark.parametrize("name", sorted(set(FREEBSD_NAMES) - FREEBSD_REFUSED))
def test_freebsd_known_answers(name):
    plugin = CryptodevDouble(linux=False).plugin()
    a = alg(name)
    assert kat.check_vectors("devcrypto", a, lambda key: plugin.open(a, key)) >= 1


@pytest.mark.parametrize("size", (16, 4096, 65536, 81920))
@pytest.mark.parametrize("name", [n for n in LINUX_NAMES if n in OPENSSL.supported()
                                  and n not in LINUX_REFUSED
                                  and alg(n).kind != catalog.MAC])
def test_same_bytes_as_openssl(plugin, name, size):
    a = alg(name)
    key, data = key_for(a), os.urandom(size)
    ours, ref = plugin.open(a, key), OPENSSL.open(a, key)
    if a.kind == catalog.DIGEST:
        assert ours.digest(data) == ref.digest(data)
    else:
        iv = os.urandom(a.iv_size)
        sealed = ref.encrypt(iv, data)
        assert ours.encrypt(iv, data) == sealed
        assert ours.decrypt(iv, sealed) == data
    ours.close()


def test_hmac_ids_of_both_abis_and_poly1305_on_freebsd():
    linux, bsd = abi.linux_abi("x86_64"), abi.freebsd_abi()
    macs = {f"hmac-{d}": i for d, i in (("md5", 6), ("sha1", 7), ("sha256", 18),
                                        ("sha384", 19), ("sha512", 20))}
    assert {n: linux.algorithms[n] for n in macs} == {n: abi.AlgorithmIds(mac=i)
                                                      for n, i in macs.items()}
    assert {n: bsd.algorithms[n] for n in macs} == {n: abi.AlgorithmIds(mac=i)
                                                    for n, i in macs.items()}
    assert bsd.algorithms["poly1305"] == abi.AlgorithmIds(mac=38)
    assert "poly1305" not in linux.algorithms and "cmac-aes-128" not in linux.algorithms
    for a in (linux, bsd):
        assert [a.algorithms[n] for n in ("des-cbc", "bf-cbc", "cast5-cbc")] == \
            [abi.AlgorithmIds(cipher=i, iv_size=8) for i in (1, 3, 4)]


@pytest.mark.parametrize("name, size", [("hmac-sha256", 0), ("hmac-sha512", 4096),
                                        ("hmac-md5", 81920), ("hmac-sha1", 16)])
def test_linux_hmac_is_keyed_by_the_sessions_mac_key(double, plugin, name, size):
    a = alg(name)
    key, data = os.urandom(131), os.urandom(size)  # longer than the block: hashed first
    ctx = plugin.open(a, key)
    ses = double.sessions[ctx.session.ses]
    assert (ses["key"], ses["mackey"]) == (b"", key)
    expect = hmac.new(key, data, name[5:]).digest()
    assert ctx.mac(data) == expect and ctx.mac(data) == expect  # each MAC starts afresh
    ctx.runner(Workload(data))(3)
    assert ctx.mac(data) == expect
    with pytest.raises(Unsupported, match=f"{name} is not a digest"):
        ctx.digest(data)
    ctx.close()
    assert not double.sessions and not double.open_fds


@pytest.mark.parametrize("name", ("des-cbc", "bf-cbc"))
def test_linux_64_bit_block_ciphers_match_pycryptodome(plugin, name):
    from Crypto.Cipher import DES, Blowfish
    module = {"des-cbc": DES, "bf-cbc": Blowfish}[name]
    a = alg(name)
    key, iv, data = key_for(a), os.urandom(8), os.urandom(4096)
    ctx = plugin.open(a, key)
    expect = module.new(key, module.MODE_CBC, iv=iv).encrypt(data)
    assert ctx.encrypt(iv, data) == expect and ctx.decrypt(iv, expect) == data
    ctx.close()


def test_freebsd_poly1305_is_rfc_8439s_mac():
    # pycryptodome's Poly1305 derives its key from a cipher: RFC 8439 2.5's arithmetic here
    a = alg("poly1305")
    key, data = os.urandom(32), os.urandom(1000)
    r = int.from_bytes(key[:16], "little") & 0x0ffffffc0ffffffc0ffffffc0fffffff
    acc, p = 0, (1 << 130) - 5
    for i in range(0, len(data), 16):
        acc = (acc + int.from_bytes(data[i:i + 16] + b"\x01", "little")) * r % p
    expect = ((acc + int.from_bytes(key[16:], "little")) % (1 << 128)).to_bytes(16, "little")
    ctx = CryptodevDouble(linux=False).plugin().open(a, key)
    assert ctx.mac(data) == expect
    ctx.close()


@pytest.mark.parametrize("linux, name, note", [
    (True, "cast5-cbc", "cryptodev-linux 1.14 maps no kernel cipher to CRYPTO_CAST_CBC (4)"),
    (False, "des-cbc", "FreeBSD 13.0 removed DES, Blowfish, CAST and MD5-HMAC from "
                       "/dev/crypto; only 12 and earlier have them"),
    (False, "hmac-md5", "FreeBSD 13.0 removed DES, Blowfish, CAST and MD5-HMAC from "
                        "/dev/crypto; only 12 and earlier have them")])
def test_what_the_kernel_refuses_is_skipped_saying_why(linux, name, note):
    double = CryptodevDouble(linux=linux)
    a = alg(name)
    with pytest.raises(Unsupported) as info:
        double.plugin().open(a, key_for(a))
    assert str(info.value).endswith(f": [EINVAL] Invalid argument ({note})")
    assert not double.sessions and not double.open_fds


def test_driver_and_hardware_flag_from_sessinfo(double, plugin):
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16))
    assert (ctx.driver, ctx.hardware) == ("cbc-aes-aesni", False)
    ctx.close()
    double.kernel_driver_only = True
    ctx = plugin.open(alg("sha256"), b"")
    assert (ctx.driver, ctx.hardware) == ("sha256-avx2", True)
    ctx.close()


def test_freebsd_driver_names_pinning_and_allow_soft():
    double = CryptodevDouble(linux=False)
    double.drivers[2] = "ccr0"
    plugin = double.plugin()
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16))
    assert (ctx.driver, ctx.hardware) == ("ccr0", True)
    ctx.close()
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16), "aesni0")
    assert (ctx.driver, ctx.hardware) == ("aesni0", False)
    ctx.close()
    with pytest.raises(Unsupported, match=r"no driver 'qat0' \(CIOCFINDDEV: \[ENOENT\]"):
        plugin.open(alg("aes-128-cbc"), bytes(16), "qat0")
    del double.drivers[2]
    double.allow_soft = False
    with pytest.raises(Unsupported, match=r"\[EINVAL\].*sysctl kern.crypto.allow_soft=1"):
        plugin.open(alg("sha256"), b"")
    assert not double.sessions and not double.open_fds


def test_linux_pinned_driver_is_the_kernels_choice_or_a_skip_naming_it(double, plugin):
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16), "cbc-aes-aesni")
    assert ctx.driver == "cbc-aes-aesni"
    ctx.close()
    with pytest.raises(Unsupported) as info:
        plugin.open(alg("sha256"), b"", "sha256-generic")
    assert str(info.value) == (
        "devcrypto:sha256-generic: the kernel chose 'sha256-avx2' for sha256, not "
        "'sha256-generic'; cryptodev-linux always takes the highest-priority driver "
        "(afalg:DRIVER can pin another)")
    assert not double.sessions and not double.open_fds  # the session was freed


def test_linux_soft_is_a_driver_that_runs_on_the_cpu(double, plugin):
    ctx = plugin.open(alg("hmac-sha256"), bytes(32), "soft")
    assert (ctx.driver, ctx.hardware) == ("hmac(sha256-avx2)", False)
    ctx.close()
    double.kernel_driver_only = True
    with pytest.raises(Unsupported) as info:
        plugin.open(alg("aes-128-cbc"), bytes(16), "soft")
    assert str(info.value) == (
        "devcrypto:soft wants a driver that runs on the CPU, but the kernel chose "
        "'cbc-aes-aesni' for aes-128-cbc, an off-CPU engine (SIOP_FLAG_KERNEL_DRIVER_ONLY); "
        "cryptodev-linux always takes the highest-priority driver (afalg:DRIVER can pin "
        "another)")
    assert not double.sessions and not double.open_fds


def test_linux_pin_without_sessinfo_cannot_be_checked(double, plugin, monkeypatch):
    def no_sessinfo(raw):
        raise double.fail(errno.EINVAL)
    monkeypatch.setattr(double, "do_CIOCGSESSINFO", no_sessinfo)
    with pytest.raises(Unsupported, match=r"^devcrypto:soft cannot check the driver of the "
                                          r"session: CIOCGSESSINFO failed: \[EINVAL\]"):
        plugin.open(alg("sha256"), b"", "soft")
    ctx = plugin.open(alg("sha256"), b"")  # unpinned: the driver is just unknown
    assert ctx.driver is None
    ctx.close()
    assert not double.sessions and not double.open_fds


def test_freebsd_soft_asks_for_a_software_driver():
    double = CryptodevDouble(linux=False)
    double.drivers[2] = "ccr0"
    plugin = double.plugin()
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16))
    assert ctx.driver == "ccr0"  # hardware first by default
    ctx.close()
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16), "soft")
    assert (ctx.driver, ctx.hardware) == ("aesni0", False)
    ctx.close()
    double.allow_soft = False
    with pytest.raises(Unsupported) as info:
        plugin.open(alg("hmac-sha256"), bytes(32), "soft")
    assert str(info.value) == (
        "/dev/crypto (FreeBSD) rejected hmac-sha256 at session creation (CIOCGSESSION2 "
        "cipher=0 mac=18 mackeylen=32 crid=0x2000000): [EINVAL] Invalid argument (software "
        "drivers need sysctl kern.crypto.allow_soft=1)")
    assert not double.sessions and not double.open_fds


def test_a_thousand_sessions_leak_neither_sessions_nor_fds(double, plugin):
    before = open_fds()
    for i in range(1000):
        ctx = plugin.open(alg("aes-128-gcm" if i % 2 else "sha256"), bytes(16))
        ctx.close()
    assert open_fds() == before
    assert not double.sessions and not double.open_fds


def test_close_is_idempotent_and_frees_the_session_then_the_fd(double, plugin):
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16))
    assert len(double.sessions) == 1 and len(double.open_fds) == 1
    ctx.close()
    ctx.close()
    assert not double.sessions and not double.open_fds
    assert double.calls.count(LINUX_REQUESTS["CIOCFSESSION"]) == 1
    with pytest.raises(ValueError, match="closed"):
        ctx.encrypt(bytes(16), bytes(16))


@pytest.mark.parametrize("code", (errno.EINVAL, errno.EOPNOTSUPP))
def test_algorithm_the_driver_rejects_is_skipped_with_the_errno(double, plugin, code):
    double.rejected[11] = code
    with pytest.raises(Unsupported) as info:
        plugin.open(alg("aes-128-cbc"), bytes(16))
    assert str(info.value) == (f"/dev/crypto (cryptodev-linux) rejected aes-128-cbc at session "
                               f"creation (CIOCGSESSION cipher=11 mac=0 keylen=16): "
                               f"[{devcrypto.ERRNO_NAMES.get(code, errno.errorcode[code])}] "
                               f"{os.strerror(code)}")
    assert not double.open_fds


def test_bad_key_length_is_einval_at_session_creation(double, plugin):
    with pytest.raises(Unsupported, match=r"keylen=5\): \[EINVAL\]"):
        plugin.open(alg("aes-128-cbc"), b"12345")


def test_request_error_at_one_size_is_an_oserror(double, plugin):
    double.max_len = 4096
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16))
    assert ctx.encrypt(bytes(16), bytes(4096))
    with pytest.raises(OSError) as info:
        ctx.runner(Workload(bytes(8192), iv=bytes(16)))(1)
    assert info.value.errno == errno.EINVAL
    ctx.close()


def test_freebsd_request_cap_is_e2big():
    plugin = CryptodevDouble(linux=False).plugin()
    ctx = plugin.open(alg("sha256"), b"")
    with pytest.raises(OSError) as info:
        ctx.digest(bytes(abi.FREEBSD_MAX_REQUEST + 4))
    assert info.value.errno == errno.E2BIG
    ctx.close()


# -- the kernel hazards of section 7 ----------------------------------------------------------


def test_no_path_of_an_aead_context_sends_cioccrypt(double, plugin):
    a = alg("aes-128-gcm")
    ctx = plugin.open(a, bytes(16))
    nonces = tuple(os.urandom(12) for _ in range(3))
    data = os.urandom(256)
    sealed = ctx.encrypt(nonces[0], data)
    ctx.decrypt(nonces[0], sealed)
    ctx.runner(Workload(data, nonces=nonces))(4)
    ctx.runner(Workload(data, nonces=nonces, decrypt=True, ciphertext=sealed))(2)
    with pytest.raises(Unsupported):
        ctx.digest(data)
    assert LINUX_REQUESTS["CIOCCRYPT"] not in double.calls
    ctx.close()


def test_cioccrypt_on_an_aead_session_is_refused_before_the_ioctl(double, plugin):
    ctx = plugin.open(alg("aes-128-gcm"), bytes(16))
    calls = len(double.calls)
    buf = devcrypto._Buffer(16)
    with pytest.raises(RuntimeError, match="refusing CIOCCRYPT on the AEAD session"):
        ctx.session.crypt_request(False, buf, buf)
    assert len(double.calls) == calls
    ctx.close()


@pytest.mark.parametrize("tag", (5, 9, 1, 17, 0))
def test_crashing_and_invalid_tag_lengths_never_reach_the_kernel(double, plugin, tag):
    a = dataclasses.replace(alg("aes-128-gcm"), tag_size=tag)
    ctx = plugin.open(a, bytes(16))
    calls = len(double.calls)
    with pytest.raises(Unsupported, match=f"a {tag}-byte GCM tag is refused"):
        ctx.encrypt(bytes(12), b"data")
    assert len(double.calls) == calls  # the double would have raised KernelOops for 5 and 9
    ctx.close()


@pytest.mark.parametrize("aad", (b"", b"header"), ids=("no-aad", "aad"))
def test_an_empty_aead_encryption_is_refused_before_the_ioctl(double, plugin, aad):
    """cryptodev-linux 1.14 oopses on it (the double raises KernelOops): ``Unsupported``
    naming the version and the zero-copy path, and no ioctl sent, by encrypt() and by a
    runner; a decryption of an empty message with its tag still goes (seen to be safe)."""
    ctx = plugin.open(alg("aes-128-gcm"), bytes(16))
    calls = len(double.calls)
    with pytest.raises(Unsupported, match=r"empty message is refused before the ioctl: on "
                       r"cryptodev-linux 1\.14 .*crypto_auth_zc_aead"):
        ctx.encrypt(bytes(12), b"", aad)
    with pytest.raises(Unsupported, match="cryptodev-linux 1.14"):
        ctx.runner(Workload(b"", nonces=(bytes(12),)))
    assert len(double.calls) == calls
    tag = AESGCM(bytes(16)).encrypt(bytes(12), b"", aad or None)
    assert ctx.decrypt(bytes(12), tag, aad) == b""
    with pytest.raises(Unsupported, match="cannot hold the 16-byte tag"):
        ctx.session.aead_request(True, devcrypto._Buffer.of(bytes(12)), devcrypto._Buffer(0),
                                 devcrypto._Buffer.of(tag[:15]), devcrypto._Buffer(15))
    ctx.close()


def test_freebsd_encrypts_an_empty_message():
    """The refusal is cryptodev-linux's alone: FreeBSD's cryptodev(4) seals an empty message."""
    plugin = CryptodevDouble(linux=False).plugin()
    ctx = plugin.open(alg("aes-128-gcm"), bytes(16))
    assert ctx.encrypt(bytes(12), b"") == AESGCM(bytes(16)).encrypt(bytes(12), b"", None)
    ctx.close()


@pytest.mark.parametrize("tag", sorted(devcrypto.SAFE_GCM_TAGS))
def test_safe_tag_lengths_are_sent(double, plugin, tag):
    a = dataclasses.replace(alg("aes-128-gcm"), tag_size=tag)
    ctx = plugin.open(a, bytes(16))
    sealed = ctx.encrypt(bytes(12), b"data")
    assert len(sealed) == 4 + tag
    ctx.close()


class _KeptBuffers(devcrypto._Buffer):
    made: list[devcrypto._Buffer] = []

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        _KeptBuffers.made.append(self)


@pytest.fixture
def kept_buffers(monkeypatch):
    _KeptBuffers.made = []
    for module in (devcrypto, devcrypto_contexts):  # its contexts' home, and the old one
        monkeypatch.setattr(module, "_Buffer", _KeptBuffers)
    return _KeptBuffers.made


def test_failed_decrypt_wipes_the_unauthenticated_plaintext(double, plugin, kept_buffers):
    a = alg("aes-128-gcm")
    key, nonce, data = bytes(range(16)), os.urandom(12), b"secret plaintext" * 8
    ctx = plugin.open(a, key)
    bad = bytearray(ctx.encrypt(nonce, data))
    bad[-1] ^= 1
    kept_buffers.clear()
    with pytest.raises(AuthenticationError, match=r"\[EBADMSG\]"):
        ctx.decrypt(nonce, bytes(bad))
    outputs = [b for b in kept_buffers if b.size >= len(data) and b.read() != bad]  # not src
    assert len(outputs) == 1 and not any(outputs[0].read())
    kept_buffers.clear()
    with pytest.raises(AuthenticationError):
        ctx.runner(Workload(data, nonces=(nonce,), decrypt=True, ciphertext=bytes(bad)))(1)
    outputs = [b for b in kept_buffers if b.size >= len(data) and b.read() != bad]
    assert len(outputs) == 1 and not any(outputs[0].read())
    ctx.close()


@dataclasses.dataclass
class Region:
    """One buffer of the caller's memory, as the double sees it: ``room`` bytes at ``address``."""

    address: int
    room: int
    owner: Any  # keeps the memory alive (and its address unique) for the whole test


@pytest.fixture
def mapped(monkeypatch):
    """``mapped(double)``: the plugin's buffers become the double's ``memory``, so it checks
    every AEAD pointer range against the buffer it points into."""
    def track(double: CryptodevDouble) -> CryptodevDouble:
        memory: list[Any] = []
        double.memory = memory

        class Tracked(devcrypto._Buffer):
            def __init__(self, *args: Any) -> None:
                super().__init__(*args)
                memory.append(Region(ctypes.addressof(self.array),
                                     ctypes.sizeof(self.array), self))

        for module in (devcrypto, devcrypto_contexts):  # its contexts' home, and the old one
            monkeypatch.setattr(module, "_Buffer", Tracked)
        return double
    return track


#: (bytes the kernel takes at dst, room the plugin gives it) for a 1000-byte message:
#: cryptodev-linux pins len (ciphertext || tag) to decrypt and len + tag_len to encrypt;
#: FreeBSD copies out len (the payload) and reads or writes the tag through its own pointer,
#: which the plugin places right after the ciphertext in dst when encrypting.
PINNED = {(True, False): (1016, 1016), (True, True): (1016, 1016),
          (False, False): (1000, 1016), (False, True): (1000, 1000)}


@pytest.mark.parametrize("decrypt", (False, True), ids=("encrypt", "decrypt"))
@pytest.mark.parametrize("linux", (True, False), ids=("cryptodev-linux", "freebsd"))
def test_aead_destination_holds_all_the_kernel_pins(mapped, linux, decrypt):
    double = mapped(CryptodevDouble(linux=linux))
    a = alg("aes-128-gcm")
    key, nonce, aad, data = bytes(range(16)), os.urandom(12), b"header", os.urandom(1000)
    ctx = double.plugin().open(a, key)
    if decrypt:
        assert ctx.decrypt(nonce, AESGCM(key).encrypt(nonce, data, aad), aad) == data
    else:
        assert ctx.encrypt(nonce, data, aad) == AESGCM(key).encrypt(nonce, data, aad)
    run = ctx.runner(Workload(data, nonces=(nonce,), decrypt=decrypt,
                              ciphertext=AESGCM(key).encrypt(nonce, data, None)))
    run(2)
    assert double.pins == [("dst", *PINNED[linux, decrypt])] * 3
    ctx.close()


@pytest.mark.parametrize("linux", (True, False), ids=("cryptodev-linux", "freebsd"))
def test_a_short_destination_is_refused_before_the_ioctl(linux):
    double = CryptodevDouble(linux=linux)
    ctx = double.plugin().open(alg("aes-128-gcm"), bytes(16))
    calls = len(double.calls)
    src, nonce, aad = devcrypto._Buffer(116), devcrypto._Buffer.of(bytes(12)), devcrypto._Buffer(0)
    need = 116 if linux else 100
    with pytest.raises(ValueError, match=f"^an AEAD decryption of 116 bytes needs a {need}-byte "
                                         "output buffer, not 99$"):
        ctx.session.aead_request(True, nonce, aad, src, devcrypto._Buffer(99))
    with pytest.raises(ValueError, match="^an AEAD encryption of 116 bytes needs a 132-byte "
                                         "output buffer, not 131$"):
        ctx.session.aead_request(False, nonce, aad, src, devcrypto._Buffer(131))
    assert len(double.calls) == calls
    ctx.close()


def test_the_double_faults_on_a_destination_shorter_than_it_pins(double, mapped):
    """The old sizing (len - tag bytes for a cryptodev-linux decrypt) is EFAULT here."""
    mapped(double)
    key, nonce, data = bytes(16), bytes(12), b"A" * 32
    sealed = AESGCM(key).encrypt(nonce, data, None)
    dev = double.open("/dev/crypto")
    keybuf, iv = devcrypto._Buffer.of(key), devcrypto._Buffer.of(nonce)
    sop = abi.LinuxSessionOp(cipher=50, keylen=16, key=keybuf.address)
    dev.ioctl(LINUX_REQUESTS["CIOCGSESSION"], sop)
    src, short = devcrypto._Buffer.of(sealed), devcrypto._Buffer(len(data))
    cop = abi.LinuxCryptAuthOp(ses=sop.ses, op=1, len=len(sealed), src=src.address,
                               dst=short.address, tag_len=16, iv=iv.address)
    with pytest.raises(OSError) as info:
        dev.ioctl(LINUX_REQUESTS["CIOCAUTHCRYPT"], cop, False)
    assert info.value.errno == errno.EFAULT
    assert str(info.value) == "[Errno 14] Bad address: dst takes 48 bytes"
    assert short.read() == bytes(32)  # refused before anything was written
    dev.close()


def test_the_double_really_leaves_plaintext_behind(double):
    """The hazard the wipe guards against, shown on the double itself."""
    key, nonce, data = bytes(16), bytes(12), b"A" * 32
    bad = bytearray(AESGCM(key).encrypt(nonce, data, None))
    bad[-1] ^= 1
    dev = double.open("/dev/crypto")
    keybuf = ctypes.create_string_buffer(key, 16)
    sop = abi.LinuxSessionOp(cipher=50, keylen=16, key=ctypes.addressof(keybuf))
    dev.ioctl(LINUX_REQUESTS["CIOCGSESSION"], sop)
    src, dst = ctypes.create_string_buffer(bytes(bad)), ctypes.create_string_buffer(32)
    iv = ctypes.create_string_buffer(nonce, 12)
    cop = abi.LinuxCryptAuthOp(ses=sop.ses, op=1, len=len(bad), src=ctypes.addressof(src),
                               dst=ctypes.addressof(dst), tag_len=16, iv=ctypes.addressof(iv))
    with pytest.raises(OSError):
        dev.ioctl(LINUX_REQUESTS["CIOCAUTHCRYPT"], cop, False)
    assert dst.raw == data
    with pytest.raises(KernelOops):
        dev.ioctl(LINUX_REQUESTS["CIOCCRYPT"], abi.LinuxCryptOp(ses=sop.ses), False)
    dev.close()


# -- through pytest's command line ------------------------------------------------------------


@pytest.fixture
def builtin_on_double(double, monkeypatch):
    """The built-in devcrypto plugin, its device replaced by the double (in-process runs)."""
    monkeypatch.setattr(DevcryptoPlugin, "open_device", lambda self: double.open(self.path))
    monkeypatch.setattr(DevcryptoPlugin, "abi", property(lambda self: abi.linux_abi("x86_64")))
    return double


def test_table_row_is_devcrypto_and_the_note_names_the_driver(pytester, builtin_on_double):
    r = pytester.runpytest_inprocess("--qcrypto-digest", "sha256", "--qcrypto-cipher",
                                     "aes-128-cbc", "--qcrypto-plugin", "devcrypto",
                                     "--qcrypto-plugin", "openssl", "--qcrypto-size", "16,4096",
                                     *FAST)
    assert r.ret == 0, r.stdout.str()
    assert [x.split()[0] for x in r.outlines if x.startswith("devcrypto")] == ["devcrypto"] * 2
    assert "  devcrypto: driver sha256-avx2 (software)" in r.outlines
    assert "  devcrypto: driver cbc-aes-aesni (software)" in r.outlines
    assert not builtin_on_double.sessions and not builtin_on_double.open_fds


def test_hardware_engine_is_labelled(pytester, builtin_on_double):
    builtin_on_double.kernel_driver_only = True
    r = pytester.runpytest_inprocess("--qcrypto-digest", "sha256", "--qcrypto-plugin",
                                     "devcrypto", "--qcrypto-size", "16", *FAST)
    assert "  devcrypto: driver sha256-avx2 (hardware)" in r.outlines


def test_error_at_one_size_fails_that_item_and_the_matrix_goes_on(pytester, builtin_on_double):
    builtin_on_double.max_len = 4096
    r = pytester.runpytest_inprocess("--qcrypto-cipher", "aes-128-cbc", "--qcrypto-plugin",
                                     "devcrypto", "--qcrypto-size", "16,4096,8192,32768", *FAST)
    out = r.stdout.str()
    assert "devcrypto aes-128-cbc (driver cbc-aes-aesni) at 8192 bytes failed: [EINVAL] " \
           "Invalid argument" in out
    r.assert_outcomes(passed=2, failed=2)
    assert not builtin_on_double.sessions and not builtin_on_double.open_fds


def test_rejected_algorithm_skips_that_item_only(pytester, builtin_on_double):
    builtin_on_double.rejected[11] = errno.EOPNOTSUPP
    r = pytester.runpytest_inprocess("--qcrypto-digest", "sha256", "--qcrypto-cipher",
                                     "aes-128-cbc", "--qcrypto-plugin", "devcrypto",
                                     "--qcrypto-size", "16", *FAST)
    assert "[EOPNOTSUPP] Operation not supported" in r.stdout.str()
    r.assert_outcomes(passed=1, skipped=1)


def test_contexts_close_when_a_test_fails(pytester, builtin_on_double):
    pytester.makepyfile(test_user="""
        def test_fails_after_opening(qcrypto):
            qcrypto.open("aes-128-gcm", "devcrypto").measure(64, min_time=0.001, rounds=1)
            qcrypto.open("sha256", "devcrypto")
            raise RuntimeError("the user's own check failed")
    """)
    r = pytester.runpytest_inprocess("test_user.py", "-p", "no:hypothesispytest")
    r.assert_outcomes(failed=1)
    assert not builtin_on_double.sessions and not builtin_on_double.open_fds


def test_list_shows_the_device_and_what_to_load(pytester, monkeypatch):
    monkeypatch.setattr(DevcryptoPlugin, "open_device", lambda self: (_ for _ in ()).throw(
        FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))))
    monkeypatch.setattr(DevcryptoPlugin, "abi", property(lambda self: abi.linux_abi("x86_64")))
    r = pytester.runpytest_inprocess("--qcrypto-list", "-p", "no:hypothesispytest")
    out = r.stdout.str()
    assert "devcrypto (aliases: cryptodev, dev-crypto): unavailable: no /dev/crypto here: load " \
           "the cryptodev-linux module: modprobe cryptodev" in out
    assert "  device: /dev/crypto" in out


def test_hmac_and_des_tables_from_the_command_line(pytester, builtin_on_double):
    r = pytester.runpytest_inprocess("--qcrypto-mac", "hmac-sha1", "--qcrypto-cipher", "des-cbc",
                                     "--qcrypto-cipher", "cast5-cbc", "--qcrypto-plugin",
                                     "devcrypto", "--qcrypto-size", "16,4096", *FAST)
    out = r.stdout.str()
    for header, driver in (("Benchmark results for 'hmac-sha1' MAC (KiB/s):", "hmac(sha1-avx2)"),
                           ("Benchmark results for 'des-cbc' cipher (KiB/s):",
                            "cbc(des-generic)")):
        at = r.outlines.index(header)
        row = next(x for x in r.outlines[at:] if x.startswith("devcrypto "))
        assert len(row.split()) == 3 and all("." in c for c in row.split()[1:]), row
        assert f"  devcrypto: driver {driver} (software)" in r.outlines[at:]
    assert "[EINVAL] Invalid argument (cryptodev-linux 1.14 maps no kernel cipher to " \
           "CRYPTO_CAST_CBC (4))" in out
    r.assert_outcomes(passed=4, skipped=2)
    assert not builtin_on_double.sessions and not builtin_on_double.open_fds


def test_cryptotest_z_16_on_the_double_runs_every_cipher_and_hmac_cryptodev_has(
        pytester, builtin_on_double, capfd):
    """``cryptotest -z 16`` with its default plugin, devcrypto (here the cryptodev-linux
    double): a line per algorithm the device takes, at 8 to 8192 bytes (AES from 16), 32
    crypts for a cipher (16 encryptions and 16 decryptions) and 16 for an HMAC; cast,
    which cryptodev-linux maps to no kernel cipher, is skipped as cryptotest skips it."""
    from pytest_qcrypto.commands import cryptotest

    pytester.chdir()
    code = cryptotest.main(["-z", "16"])
    out = capfd.readouterr().out
    assert code == 0, out
    line = re.compile(r" *\d+\.\d{3} sec, +(\d+) +(\S+) crypts, +(\d+) bytes, +\d+ byte/sec, "
                      r"+\d+\.\d Mb/sec(?:  \? outlier: .*)?")
    found = [line.fullmatch(x).groups() for x in out.splitlines()]
    every = [8 << i for i in range(11)]
    want = [(32, n, s) for n in ("des", "3des", "blf") for s in every]
    want += [(32, n, s) for n in ("aes", "aes192", "aes256") for s in every[1:]]
    want += [(16, n, s) for n in ("md5", "sha1", "sha256", "sha384", "sha512") for s in every]
    assert [(int(c), n, int(s)) for c, n, s in found] == want
    assert not builtin_on_double.sessions and not builtin_on_double.open_fds


# -- the round trip's own loop (cryptotest's iteration: two requests, built once) ---------

ROUNDTRIP_NAMES = [n for n in LINUX_NAMES if n not in LINUX_REFUSED
                   and alg(n).kind in (catalog.CIPHER, catalog.AEAD)]


@pytest.mark.parametrize("linux", [True, False])
@pytest.mark.parametrize("name", ["aes-128-cbc", "aes-256-gcm"])
def test_roundtrip_loop_is_two_requests_built_once(linux, name, kept_buffers):
    double = CryptodevDouble(linux=linux)
    a = alg(name)
    key, data = key_for(a), os.urandom(64)
    ctx = double.plugin().open(a, key)
    ref = OPENSSL.open(a, key)
    aead = a.kind == catalog.AEAD
    nonces = tuple(os.urandom(12) for _ in range(3)) if aead else ()
    iv = b"" if aead else os.urandom(a.iv_size)
    sealed = ref.encrypt(nonces[0] if aead else iv, data)
    run = ctx.roundtrip_runner(Workload(data, iv=iv, nonces=nonces, ciphertext=sealed))
    made, double.calls[:] = len(kept_buffers), []
    ours = {devcrypto.__file__, sys.modules[type(ctx).__module__].__file__,
            sys.modules[Workload.__module__].__file__}
    called: list[str] = []  # Python functions of the plugin (and its base class) called

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename in ours:
            called.append(frame.f_code.co_name)
    sys.setprofile(profile)
    try:
        run(5)
    finally:
        sys.setprofile(None)
    assert called == ["run"]  # the loop itself, no runner called per iteration (the base's)
    crypt = "CIOCCRYPT" if not aead else "CIOCAUTHCRYPT" if linux else "CIOCCRYPTAEAD"
    requests = LINUX_REQUESTS if linux else FREEBSD_REQUESTS
    assert double.calls == [requests[crypt]] * 10  # two a round trip, nothing else
    assert len(kept_buffers) == made  # no buffer built inside the loop
    contents = [b.read() for b in kept_buffers[:made]]
    assert data in contents  # what the decryption gave back
    # the last encryption: under the 5th nonce of the cycle (the 2nd), or the one IV
    assert ref.encrypt(nonces[4 % 3] if aead else iv, data) in contents
    ctx.close()


@pytest.mark.parametrize("name", ROUNDTRIP_NAMES)
def test_roundtrip_loop_of_every_cipher_and_aead_checks_on_the_double(double, plugin, name):
    a = alg(name)
    key, data = key_for(a), os.urandom(48 if a.mode == "xts" else 32)
    ctx = plugin.open(a, key)
    aead = a.kind == catalog.AEAD
    nonces = (os.urandom(a.iv_size),) if aead else ()
    iv = b"" if aead else os.urandom(a.iv_size)
    sealed = ctx.encrypt(nonces[0] if aead else iv, data)
    double.calls[:] = []
    ctx.roundtrip_runner(Workload(data, iv=iv, nonces=nonces, ciphertext=sealed))(3)
    assert len(double.calls) == 6 and len(set(double.calls)) == 1
    ctx.close()


def test_roundtrip_loop_with_a_bad_tag_wipes_and_says_authentication(double, plugin,
                                                                     kept_buffers):
    a = alg("aes-128-gcm")
    key, nonce, data = bytes(range(16)), os.urandom(12), b"secret plaintext" * 8
    ctx = plugin.open(a, key)
    bad = bytearray(ctx.encrypt(nonce, data))
    bad[-1] ^= 1
    kept_buffers.clear()
    run = ctx.roundtrip_runner(Workload(data, nonces=(nonce,), ciphertext=bytes(bad)))
    with pytest.raises(AuthenticationError, match=r"\[EBADMSG\]"):
        run(1)
    # the plaintext is left in the encryption's source only: the double wrote it into the
    # decryption's output before it refused the tag, and the loop wiped that
    assert sum(data in b.read() for b in kept_buffers) == 1
    ctx.close()


# -- the interface's own cost: the null request ----------------------------------------------


def test_linux_null_request_is_one_cioccrypt_of_crypto_null_per_call(double, plugin):
    # CRYPTO_NULL = 16 in cryptodev-linux's crypto/cryptodev.h (kernel-abi.md 1.4)
    request = plugin.null_request()
    assert request.what == "a 1-byte CIOCCRYPT of the null cipher (id 16)"
    assert [LINUX_NR[c] for c in double.calls] == ["CIOCGSESSION"]
    (session,) = double.sessions.values()
    assert session["spec"] is LINUX_SPECS[16] and session["key"] == b""
    request.run(5)
    assert [LINUX_NR[c] for c in double.calls] == ["CIOCGSESSION"] + ["CIOCCRYPT"] * 5
    request.close()
    assert [LINUX_NR[c] for c in double.calls][-1] == "CIOCFSESSION"
    assert len(double.calls) == 7 and not double.sessions and not double.open_fds


def test_freebsd_null_request_is_crypto_null_cbc_of_four_bytes():
    # CRYPTO_NULL_CBC = 16 in sys/opencrypto/cryptodev.h (kernel-abi.md 2.4)
    double = CryptodevDouble(linux=False)
    request = double.plugin().null_request()
    assert request.what == "a 4-byte CIOCCRYPT of the null cipher (id 16)"
    request.run(3)
    request.close()
    assert [FREEBSD_NR[c] for c in double.calls] == (
        ["CIOCGSESSION2"] + ["CIOCCRYPT"] * 3 + ["CIOCFSESSION"])
    assert not double.sessions and not double.open_fds


def test_a_device_without_the_null_cipher_says_why(double, plugin):
    double.rejected[16] = errno.EINVAL
    with pytest.raises(Unsupported) as e:
        plugin.null_request()
    assert str(e.value) == (
        "no null request: /dev/crypto (cryptodev-linux) refuses a session of the null cipher "
        "(CIOCGSESSION cipher=16 keylen=0): [EINVAL] Invalid argument")
    assert not double.open_fds


def test_no_device_no_null_request(double, plugin):
    double.present = False
    with pytest.raises(Unsupported, match="^no null request: no /dev/crypto here: load"):
        plugin.null_request()


def test_verbose_run_shows_the_interface_beside_the_per_call_cost(pytester, builtin_on_double):
    r = pytester.runpytest_inprocess("--qcrypto-cipher", "aes-128-cbc", "--qcrypto-plugin",
                                     "devcrypto", "--qcrypto-size", "16,256,4096", "-v", *FAST)
    assert r.ret == 0, r.stdout.str()
    fit = [x for x in r.outlines if x.startswith("  devcrypto aes-128-cbc: ")]
    assert len(fit) == 1 and ", of which the interface (null request) " in fit[0] \
        or " (the interface's null request alone: " in fit[0], r.stdout.str()
    line = [x for x in r.outlines if x.startswith("  devcrypto interface: ")]
    assert len(line) == 1 and line[0].endswith(
        " per call (null request: a 1-byte CIOCCRYPT of the null cipher (id 16))"), line
    assert not builtin_on_double.sessions and not builtin_on_double.open_fds
