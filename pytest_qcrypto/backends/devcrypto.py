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
* the interface's own cost (:meth:`DevcryptoPlugin.null_request`): one
  ``CIOCCRYPT`` of the null cipher (cryptodev-linux ``CRYPTO_NULL`` = 16 in
  ``crypto/cryptodev.h``, ``ecb(cipher_null)``, 1 byte; FreeBSD ``CRYPTO_NULL_CBC`` =
  16, 4 bytes) on a keyless session of its own.

Kernel hazards this module rules out (kernel-abi.md section 7, seen on a real
cryptodev-linux 1.14): a GCM tag length other than 4, 8 or 12..16 bytes,
``CIOCCRYPT`` on an AEAD session, and an AEAD encryption of an empty message
(the zero-copy path dereferences NULL) oops the kernel; the request builders
refuse all three with :class:`Unsupported` before any ioctl, and a decryption
too short to hold its tag too.  A failed AEAD decryption leaves unauthenticated
plaintext in the output buffer; it is wiped before the error is raised.
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Callable
from itertools import repeat
from typing import Any

import pytest_qcrypto.backends.cryptodev_abi as abi_mod
from pytest_qcrypto.backends.base import (Context, CryptoPlugin, NullRequest, Unavailable,
                                          Unsupported)
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
    loop_ioctl,
)
from pytest_qcrypto.backends.devcrypto_sessions import Buffer as _Buffer  # noqa: F401 (tests)
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.algorithms.catalog import Algorithm
from pytest_qcrypto.backends.devcrypto_contexts import CONTEXTS as _CONTEXTS

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

    def null_request(self) -> NullRequest:
        """One CIOCCRYPT of the null cipher per request, :attr:`Abi.null_size` bytes
        (cryptodev-linux CRYPTO_NULL = 16, ``ecb(cipher_null)``; FreeBSD CRYPTO_NULL_CBC =
        16), on a session of its own; :class:`Unsupported` saying why where the ABI has no
        null cipher, the device cannot be opened or refuses the session."""
        abi = self.abi
        if abi is None or not abi.null_cipher:
            raise Unsupported(f"no null request: no null cipher in {abi.name if abi else 'no'}"
                              " /dev/crypto ABI")
        try:
            device = self.open_device()
        except OSError as exc:
            raise Unsupported(f"no null request: {self._unavailable(exc, abi)}") from None
        try:
            made = _null_request(device, abi)
        except BaseException:
            device.close()
            raise

        def close() -> None:
            made.close()
            device.close()

        return NullRequest(made.what, made.run, close)

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


# -- the interface's own cost -----------------------------------------------------------


def _null_request(device: Device, abi: Abi) -> NullRequest:
    """Open a session of the ABI's null cipher (no key) on ``device`` and make the
    requests; :class:`Unsupported` with the errno when the device refuses the session."""
    if abi.linux:
        op: Any = abi_mod.LinuxSessionOp(cipher=abi.null_cipher)
        create = "CIOCGSESSION"
    else:
        op = abi_mod.FreeBSDSession2Op(cipher=abi.null_cipher, crid=abi_mod.CRYPTO_FLAG_HARDWARE
                                       | abi_mod.CRYPTO_FLAG_SOFTWARE)
        create = "CIOCGSESSION2"
    try:
        device.ioctl(abi.requests[create], op, True)
    except OSError as exc:
        raise Unsupported(f"no null request: /dev/crypto ({abi.name}) refuses a session of "
                          f"the null cipher ({create} cipher={abi.null_cipher} keylen=0): "
                          f"{errno_text(exc)}") from None
    ses, n = op.ses, abi.null_size
    src, dst = _Buffer(n, bytes(n)), _Buffer(n)
    crypt = abi.structs["crypt_op"](ses=ses, op=abi.cop_encrypt, flags=0, len=n,
                                    src=src.address, dst=dst.address, mac=None, iv=None)
    crypt.buffers = (src, dst)  # alive for as long as the request is

    ioctl, fd = loop_ioctl(device)  # as the contexts' loops call it

    def run(count: int, ioctl: Any = ioctl, fd: int = fd,
            request: int = abi.requests["CIOCCRYPT"], crypt: Any = crypt) -> None:
        for _ in repeat(None, count):
            ioctl(fd, request, crypt, False)

    def close() -> None:
        try:
            device.ioctl(abi.requests["CIOCFSESSION"], ctypes.c_uint32(ses), False)
        except OSError:
            pass

    return NullRequest(f"a {n}-byte CIOCCRYPT of the null cipher (id {abi.null_cipher})",
                       run, close)


#: The built-in plugin of this module (found by :func:`pytest_qcrypto.backends.builtin_plugins`).
PLUGINS = [DevcryptoPlugin]
