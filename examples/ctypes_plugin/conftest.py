"""A custom crypto plugin: the system's libcrypto called through ctypes.

This is how a vendor library (a hardware SDK, an in-house implementation) joins
the speed matrix: subclass ``CryptoPlugin``, give ``Context`` a ``digest`` and a
timed ``runner``, and return the plugin from the ``pytest_qcrypto_plugins``
hook.  Run it from this folder::

    pytest --qcrypto-digest sha256,sha512 --qcrypto-plugin libcrypto --qcrypto-plugin hashlib

One operation is OpenSSL's one-shot ``EVP_Digest(data, len, md, NULL, EVP_sha256(), NULL)``
(libcrypto's public API, see the OpenSSL EVP_DigestInit(3) manual page): a fresh
context per buffer, as ``openssl speed`` times digests.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from itertools import repeat

from pytest_qcrypto.backends import Context, CryptoPlugin, Unavailable, Unsupported

#: catalog name -> libcrypto function returning the EVP_MD
_EVP_MD = {"sha1": "EVP_sha1", "sha256": "EVP_sha256", "sha512": "EVP_sha512", "md5": "EVP_md5"}


def _libcrypto() -> ctypes.CDLL:
    path = ctypes.util.find_library("crypto")
    if path is None:
        raise Unavailable("no libcrypto shared library found (install OpenSSL)")
    lib = ctypes.CDLL(path)
    lib.EVP_Digest.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_char_p,
                               ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.EVP_Digest.restype = ctypes.c_int
    lib.OpenSSL_version.argtypes = [ctypes.c_int]
    lib.OpenSSL_version.restype = ctypes.c_char_p
    for fn in _EVP_MD.values():
        getattr(lib, fn).restype = ctypes.c_void_p
    return lib


class LibcryptoContext(Context):
    def __init__(self, algorithm, key, lib):
        super().__init__(algorithm, key)
        self._lib = lib
        self._md = getattr(lib, _EVP_MD[algorithm.name])()
        self._out = ctypes.create_string_buffer(64)

    def digest(self, data):
        if self._lib.EVP_Digest(data, len(data), self._out, None, self._md, None) != 1:
            raise OSError("EVP_Digest failed")
        return self._out.raw[: self.algorithm.digest_size]

    def runner(self, work):
        def run(count, evp=self._lib.EVP_Digest, buf=work.data, n=len(work.data),
                out=self._out, md=self._md):
            for _ in repeat(None, count):
                evp(buf, n, out, None, md, None)

        return run


class LibcryptoPlugin(CryptoPlugin):
    name = "libcrypto"
    aliases = ("ctypes-openssl",)
    library = "the system libcrypto through ctypes"
    description = "example: a C library called through ctypes"

    def probe(self):
        _libcrypto()

    def version(self):
        return _libcrypto().OpenSSL_version(0).decode()

    def supported(self):
        return frozenset(_EVP_MD)

    def open(self, algorithm, key, variant=None):
        if algorithm.name not in _EVP_MD:
            raise Unsupported(f"this example wraps {', '.join(_EVP_MD)} only")
        return LibcryptoContext(algorithm, key, _libcrypto())


def pytest_qcrypto_plugins():
    return [LibcryptoPlugin()]
