"""The /dev/crypto ABIs as data: ctypes structs, ioctl request numbers, algorithm ids.

Two ABIs share the ``'c'`` ioctl group and little else:

* cryptodev-linux (the out-of-tree ``cryptodev.ko``), ``crypto/cryptodev.h`` of
  release 1.14: sessions with ``CIOCGSESSION``, requests with ``CIOCCRYPT`` and,
  for GCM, ``CIOCAUTHCRYPT``; ``CIOCGSESSINFO`` names the driver.
  ``COP_ENCRYPT`` is 0.
* FreeBSD's cryptodev(4), ``sys/opencrypto/cryptodev.h`` (13 and later):
  sessions with ``CIOCGSESSION2`` and a driver id (``crid``), requests with
  ``CIOCCRYPT`` and ``CIOCCRYPTAEAD``, driver names from ``CIOCFINDDEV``.
  ``COP_ENCRYPT`` is 1.  The same id can mean different algorithms: 23 is
  AES-ECB on Linux and AES-CTR (ICM) on FreeBSD.

Request numbers are computed from ``ctypes.sizeof`` of the structs with the
platform's ``_IOC`` packing (Linux ``include/uapi/asm-generic/ioctl.h``, the
powerpc/mips/sparc/alpha variant, FreeBSD ``sys/sys/ioccom.h``), never copied
as constants, so a 32-bit process gets its own numbers as the C headers do.
Structs use ctypes' default (C) alignment; every pointer is a ``c_void_p``.
"""

from __future__ import annotations

import ctypes
import platform
import sys
from ctypes import c_char, c_int, c_uint, c_uint16, c_uint32, c_void_p
from dataclasses import dataclass, field

from pytest_qcrypto.algorithms import catalog

# -- ioctl request packing ----------------------------------------------------------------


@dataclass(frozen=True)
class IocEncoding:
    """How one kernel packs (direction, group, number, argument size) into a request.

    Bits, low to high: 8 of number, 8 of group, ``size_bits`` of size, then the
    direction flags shifted by ``dir_shift``.  ``write`` means the kernel reads
    the argument (``_IOW``), ``read`` that it writes it back (``_IOR``).
    """

    name: str
    size_bits: int
    dir_shift: int
    none: int
    write: int
    read: int

    def ioc(self, direction: int, group: str, nr: int, size: int) -> int:
        """``_IOC(direction, group, nr, size)``; ``ValueError`` when the size does not fit."""
        if not 0 <= size < 1 << self.size_bits:
            raise ValueError(f"{size}-byte ioctl argument does not fit {self.name}'s "
                             f"{self.size_bits}-bit size field")
        return (direction << self.dir_shift) | (size << 16) | (ord(group) << 8) | nr

    def iow(self, group: str, nr: int, ctype: type) -> int:
        return self.ioc(self.write, group, nr, ctypes.sizeof(ctype))

    def ior(self, group: str, nr: int, ctype: type) -> int:
        return self.ioc(self.read, group, nr, ctypes.sizeof(ctype))

    def iowr(self, group: str, nr: int, ctype: type) -> int:
        return self.ioc(self.read | self.write, group, nr, ctypes.sizeof(ctype))


#: x86, x86_64, arm, arm64, riscv, s390 (asm-generic/ioctl.h): 14-bit size, WRITE=1, READ=2.
LINUX_GENERIC = IocEncoding("Linux asm-generic _IOC", size_bits=14, dir_shift=30,
                            none=0, write=1, read=2)
#: powerpc, mips, sparc, alpha: 13-bit size, NONE=1, READ=2, WRITE=4.
LINUX_ALTERNATE = IocEncoding("Linux powerpc/mips/sparc/alpha _IOC", size_bits=13,
                              dir_shift=29, none=1, write=4, read=2)
#: FreeBSD ioccom.h: IOC_VOID 0x20000000, IOC_OUT (_IOR) 0x40000000, IOC_IN (_IOW) 0x80000000.
FREEBSD_IOC = IocEncoding("FreeBSD ioccom.h", size_bits=13, dir_shift=29,
                          none=1, write=4, read=2)


def linux_encoding(machine: str | None = None) -> IocEncoding:
    """The ``_IOC`` packing of a Linux machine (``platform.machine()`` by default)."""
    machine = (machine or platform.machine()).lower()
    if machine.startswith(("ppc", "powerpc", "mips", "sparc", "alpha")):
        return LINUX_ALTERNATE
    return LINUX_GENERIC


# -- cryptodev-linux structs (crypto/cryptodev.h) -------------------------------------------

CRYPTODEV_MAX_ALG_NAME = 64


class LinuxSessionOp(ctypes.Structure):
    """``struct session_op``: in: cipher/mac ids and keys; out: ``ses``."""

    _fields_ = [("cipher", c_uint32), ("mac", c_uint32), ("keylen", c_uint32),
                ("key", c_void_p), ("mackeylen", c_uint32), ("mackey", c_void_p),
                ("ses", c_uint32)]


class LinuxAlgInfo(ctypes.Structure):
    """``struct alg_info`` inside session_info_op: cra_name and cra_driver_name."""

    _fields_ = [("cra_name", c_char * CRYPTODEV_MAX_ALG_NAME),
                ("cra_driver_name", c_char * CRYPTODEV_MAX_ALG_NAME)]


class LinuxSessionInfoOp(ctypes.Structure):
    """``struct session_info_op`` (CIOCGSESSINFO): driver names, alignmask, SIOP_FLAG_*."""

    _fields_ = [("ses", c_uint32), ("cipher_info", LinuxAlgInfo), ("hash_info", LinuxAlgInfo),
                ("alignmask", c_uint16), ("flags", c_uint32)]


class LinuxCryptOp(ctypes.Structure):
    """``struct crypt_op`` (CIOCCRYPT): one cipher or hash request."""

    _fields_ = [("ses", c_uint32), ("op", c_uint16), ("flags", c_uint16), ("len", c_uint32),
                ("src", c_void_p), ("dst", c_void_p), ("mac", c_void_p), ("iv", c_void_p)]


class LinuxCryptAuthOp(ctypes.Structure):
    """``struct crypt_auth_op`` (CIOCAUTHCRYPT): one AEAD request."""

    _fields_ = [("ses", c_uint32), ("op", c_uint16), ("flags", c_uint16), ("len", c_uint32),
                ("auth_len", c_uint32), ("auth_src", c_void_p), ("src", c_void_p),
                ("dst", c_void_p), ("tag", c_void_p), ("tag_len", c_uint32), ("iv", c_void_p),
                ("iv_len", c_uint32)]


class CrParam(ctypes.Structure):
    """``struct crparam``: one big-number parameter of an asymmetric request."""

    _fields_ = [("crp_p", c_void_p), ("crp_nbits", c_uint32)]


class CryptKop(ctypes.Structure):
    """``struct crypt_kop`` (CIOCKEY); its last u32 is crk_pad1 on Linux, crk_crid on FreeBSD."""

    _fields_ = [("crk_op", c_uint32), ("crk_status", c_uint32), ("crk_iparams", c_uint16),
                ("crk_oparams", c_uint16), ("crk_pad1", c_uint32), ("crk_param", CrParam * 8)]


class LinuxCphashOp(ctypes.Structure):
    """``struct cphash_op`` (CIOCCPHASH)."""

    _fields_ = [("dst_ses", c_uint32), ("src_ses", c_uint32)]


# -- FreeBSD structs (sys/opencrypto/cryptodev.h) -------------------------------------------


class FreeBSDSessionOp(ctypes.Structure):
    """``struct session_op`` (deprecated CIOCGSESSION; forces crid = hardware)."""

    _fields_ = [("cipher", c_uint32), ("mac", c_uint32), ("keylen", c_uint32),
                ("key", c_void_p), ("mackeylen", c_int), ("mackey", c_void_p),
                ("ses", c_uint32)]


class FreeBSDSession2Op(ctypes.Structure):
    """``struct session2_op`` (CIOCGSESSION2): in: ids, keys, crid; out: ses, chosen crid.

    ``ivlen`` and ``maclen`` (FreeBSD 14) were ``pad`` before: zero means default.
    """

    _fields_ = [("cipher", c_uint32), ("mac", c_uint32), ("keylen", c_uint32),
                ("key", c_void_p), ("mackeylen", c_int), ("mackey", c_void_p),
                ("ses", c_uint32), ("crid", c_int), ("ivlen", c_int), ("maclen", c_int),
                ("pad", c_int * 2)]


class FreeBSDCryptOp(ctypes.Structure):
    """``struct crypt_op`` (CIOCCRYPT): the Linux layout, with COP_ENCRYPT = 1."""

    _fields_ = [("ses", c_uint32), ("op", c_uint16), ("flags", c_uint16), ("len", c_uint),
                ("src", c_void_p), ("dst", c_void_p), ("mac", c_void_p), ("iv", c_void_p)]


class FreeBSDCryptAead(ctypes.Structure):
    """``struct crypt_aead`` (CIOCCRYPTAEAD): ``len`` excludes the tag, kept apart in ``tag``."""

    _fields_ = [("ses", c_uint32), ("op", c_uint16), ("flags", c_uint16), ("len", c_uint),
                ("aadlen", c_uint), ("ivlen", c_uint), ("src", c_void_p), ("dst", c_void_p),
                ("aad", c_void_p), ("tag", c_void_p), ("iv", c_void_p)]


class FreeBSDCryptFindOp(ctypes.Structure):
    """``struct crypt_find_op`` (CIOCFINDDEV): crid <-> driver name (``aesni0``)."""

    _fields_ = [("crid", c_int), ("name", c_char * 32)]


# -- the two ABIs ----------------------------------------------------------------------------


@dataclass(frozen=True)
class AlgorithmIds:
    """What a catalog algorithm is in one ABI: cipher and mac ids (0 = none), IV length."""

    cipher: int = 0
    mac: int = 0
    iv_size: int = 0


@dataclass(frozen=True)
class Abi:
    """One /dev/crypto ABI on one machine: requests, op codes, algorithm ids, structs."""

    name: str
    encoding: IocEncoding
    requests: dict[str, int]
    cop_encrypt: int
    cop_decrypt: int
    algorithms: dict[str, AlgorithmIds]
    load_hint: str
    structs: dict[str, type[ctypes.Structure]] = field(default_factory=dict)
    #: Why the kernel may refuse an algorithm at session creation (catalog name -> text),
    #: added to the skip reason of an EINVAL there.
    refusals: dict[str, str] = field(default_factory=dict)
    #: The null cipher's id (the interface's own cost, :meth:`DevcryptoPlugin.null_request`)
    #: and the bytes of one null request (its block size); 0: the ABI has none.
    null_cipher: int = 0
    null_size: int = 1

    @property
    def linux(self) -> bool:
        return self.name == "cryptodev-linux"


# cryptodev-linux constants (crypto/cryptodev.h)
COP_FLAG_NONE = 0
COP_FLAG_UPDATE, COP_FLAG_FINAL, COP_FLAG_WRITE_IV, COP_FLAG_NO_ZC = 1, 2, 4, 8
COP_FLAG_RESET = 64
SIOP_FLAG_KERNEL_DRIVER_ONLY = 1
#: enum cryptodev_crypto_op_t: CRYPTO_NULL = 16, which ioctl.c maps to ecb(cipher_null)
#: (key size 0, IV size 0, block size 1).
LINUX_CRYPTO_NULL = 16
AALG_MAX_RESULT_LEN = 64
#: Largest AAD cryptodev-linux takes in one CIOCAUTHCRYPT (PAGE_SIZE; EINVAL above).
LINUX_MAX_AAD = 4096

# FreeBSD constants (sys/opencrypto/cryptodev.h)
CRYPTO_FLAG_HARDWARE = 0x01000000
CRYPTO_FLAG_SOFTWARE = 0x02000000
#: FreeBSD rejects longer CIOCCRYPT / CIOCCRYPTAEAD requests with E2BIG (256 KiB - 4).
FREEBSD_MAX_REQUEST = 256 * 1024 - 4
#: CRYPTO_NULL_CBC = 16 (sys/opencrypto/cryptodev.h), block size NULL_BLOCK_LEN = 4
#: (sys/opencrypto/xform_enc.h), no key, no IV.  Not run on FreeBSD here.
FREEBSD_CRYPTO_NULL_CBC, FREEBSD_NULL_BLOCK = 16, 4
#: FreeBSD drivers that run on the CPU (cryptosoft: generic C; the others: CPU instructions).
FREEBSD_SOFTWARE_DRIVERS = ("cryptosoft", "aesni", "ossl", "armv8crypto")


def _aes(cbc: int, ctr: int, gcm: int, ecb: int | None = None,
         xts: int | None = None) -> dict[str, AlgorithmIds]:
    """The ids of the catalog's AES algorithms (every key size uses the same id)."""
    ids = {"cbc": (cbc, 16), "ctr": (ctr, 16), "gcm": (gcm, 12), "ecb": (ecb, 0),
           "xts": (xts, 16)}
    out: dict[str, AlgorithmIds] = {}
    for alg in catalog.ALGORITHMS:
        ident, iv = ids.get(alg.mode, (None, 0)) if alg.family == "aes" else (None, 0)
        if ident is not None:
            out[alg.name] = AlgorithmIds(cipher=ident, iv_size=iv)
    return out


#: The 64-bit block ciphers in CBC mode, same ids in both ABIs (CRYPTO_DES_CBC,
#: CRYPTO_BLF_CBC, CRYPTO_CAST_CBC): 8-byte IV.
_CBC64 = {"des-cbc": AlgorithmIds(cipher=1, iv_size=8), "bf-cbc": AlgorithmIds(cipher=3, iv_size=8),
          "cast5-cbc": AlgorithmIds(cipher=4, iv_size=8)}
#: The HMACs, same ids in both ABIs (CRYPTO_*_HMAC; the key goes in ``mackey``).
_HMACS = {"hmac-md5": AlgorithmIds(mac=6), "hmac-sha1": AlgorithmIds(mac=7),
          "hmac-sha256": AlgorithmIds(mac=18), "hmac-sha384": AlgorithmIds(mac=19),
          "hmac-sha512": AlgorithmIds(mac=20)}

#: enum cryptodev_crypto_op_t values for the catalog (kernel-abi.md section 1.4).
LINUX_IDS: dict[str, AlgorithmIds] = {
    "md5": AlgorithmIds(mac=13), "sha1": AlgorithmIds(mac=14),
    "sha224": AlgorithmIds(mac=103), "sha256": AlgorithmIds(mac=104),
    "sha384": AlgorithmIds(mac=105), "sha512": AlgorithmIds(mac=106),
    **_aes(cbc=11, ctr=21, gcm=50, ecb=23, xts=22),
    "des-ede3-cbc": AlgorithmIds(cipher=2, iv_size=8),
    **_CBC64, **_HMACS,
}
#: cryptodev-linux 1.14's ioctl.c maps no kernel algorithm to CRYPTO_CAST_CBC.
LINUX_REFUSALS = {"cast5-cbc": "cryptodev-linux 1.14 maps no kernel cipher to "
                               "CRYPTO_CAST_CBC (4)"}

#: FreeBSD 13+ ids /dev/crypto accepts (section 2.4).  AES-XTS is left out: its IV
#: there is an 8-byte block number, not the catalog's 16-byte tweak.
FREEBSD_IDS: dict[str, AlgorithmIds] = {
    "sha1": AlgorithmIds(mac=14), "sha224": AlgorithmIds(mac=34),
    "sha256": AlgorithmIds(mac=35), "sha384": AlgorithmIds(mac=36),
    "sha512": AlgorithmIds(mac=37), "blake2b512": AlgorithmIds(mac=29),
    "blake2s256": AlgorithmIds(mac=30),
    **_aes(cbc=11, ctr=23, gcm=25),
    "chacha20": AlgorithmIds(cipher=31, iv_size=16),
    "chacha20-poly1305": AlgorithmIds(cipher=41, iv_size=12),
    **{k: v for k, v in _HMACS.items() if k != "hmac-md5"},
    "poly1305": AlgorithmIds(mac=38),
    # FreeBSD 12 and earlier only: 13.0 removed them from /dev/crypto (EINVAL at session
    # creation, said in the skip reason); cryptotest still names them.
    **_CBC64, "hmac-md5": AlgorithmIds(mac=6),
}
#: What FreeBSD 13.0 removed from /dev/crypto (sys/opencrypto/cryptodev.c).
FREEBSD_REFUSALS = {name: "FreeBSD 13.0 removed DES, Blowfish, CAST and MD5-HMAC from "
                          "/dev/crypto; only 12 and earlier have them"
                    for name in (*_CBC64, "hmac-md5")}


def linux_abi(machine: str | None = None) -> Abi:
    """cryptodev-linux's requests for this (or the named) Linux machine."""
    e = linux_encoding(machine)
    u32 = c_uint32
    requests = {
        "CRIOGET": e.iowr("c", 101, u32),
        "CIOCGSESSION": e.iowr("c", 102, LinuxSessionOp),
        "CIOCFSESSION": e.iow("c", 103, u32),
        "CIOCCRYPT": e.iowr("c", 104, LinuxCryptOp),
        "CIOCKEY": e.iowr("c", 105, CryptKop),
        "CIOCASYMFEAT": e.ior("c", 106, u32),
        "CIOCGSESSINFO": e.iowr("c", 107, LinuxSessionInfoOp),
        "CIOCAUTHCRYPT": e.iowr("c", 109, LinuxCryptAuthOp),
        "CIOCASYNCCRYPT": e.iow("c", 110, LinuxCryptOp),
        "CIOCASYNCFETCH": e.ior("c", 111, LinuxCryptOp),
        "CIOCCPHASH": e.iow("c", 112, LinuxCphashOp),
    }
    structs: dict[str, type[ctypes.Structure]] = {
        "session_op": LinuxSessionOp, "session_info_op": LinuxSessionInfoOp,
        "crypt_op": LinuxCryptOp, "crypt_auth_op": LinuxCryptAuthOp,
        "crypt_kop": CryptKop, "cphash_op": LinuxCphashOp}
    return Abi("cryptodev-linux", e, requests, cop_encrypt=0, cop_decrypt=1,
               algorithms=LINUX_IDS, structs=structs, refusals=LINUX_REFUSALS,
               null_cipher=LINUX_CRYPTO_NULL, null_size=1,
               load_hint="load the cryptodev-linux module: modprobe cryptodev "
                         "(out of tree: packaged by OpenWrt, Yocto and as DKMS); "
                         "FreeBSD: kldload cryptodev")


def freebsd_abi() -> Abi:
    """FreeBSD's cryptodev(4) requests (13 and later; CRIOGET only for 12)."""
    e = FREEBSD_IOC
    u32 = c_uint32
    requests = {
        "CRIOGET": e.iowr("c", 100, u32),
        "CIOCGSESSION": e.iowr("c", 101, FreeBSDSessionOp),
        "CIOCFSESSION": e.iow("c", 102, u32),
        "CIOCCRYPT": e.iowr("c", 103, FreeBSDCryptOp),
        "CIOCKEY": e.iowr("c", 104, CryptKop),
        "CIOCASYMFEAT": e.ior("c", 105, u32),
        "CIOCGSESSION2": e.iowr("c", 106, FreeBSDSession2Op),
        "CIOCKEY2": e.iowr("c", 107, CryptKop),
        "CIOCFINDDEV": e.iowr("c", 108, FreeBSDCryptFindOp),
        "CIOCCRYPTAEAD": e.iowr("c", 109, FreeBSDCryptAead),
    }
    structs: dict[str, type[ctypes.Structure]] = {
        "session_op": FreeBSDSessionOp, "session2_op": FreeBSDSession2Op,
        "crypt_op": FreeBSDCryptOp, "crypt_aead": FreeBSDCryptAead,
        "crypt_find_op": FreeBSDCryptFindOp, "crypt_kop": CryptKop}
    return Abi("FreeBSD", e, requests, cop_encrypt=1, cop_decrypt=2,
               algorithms=FREEBSD_IDS, structs=structs, refusals=FREEBSD_REFUSALS,
               null_cipher=FREEBSD_CRYPTO_NULL_CBC, null_size=FREEBSD_NULL_BLOCK,
               load_hint="load cryptodev(4): kldload cryptodev; software and CPU-instruction "
                         "drivers also need sysctl kern.crypto.allow_soft=1; Linux: "
                         "modprobe cryptodev (cryptodev-linux)")


def host_abi() -> Abi | None:
    """The ABI of the running system, or None where /dev/crypto has no ABI we speak."""
    if sys.platform.startswith("linux"):
        return linux_abi()
    if sys.platform.startswith("freebsd"):
        return freebsd_abi()
    return None
