"""The afalg plugin on this machine: every error path, chunking, AEAD layout, contexts.

This machine's kernel has no AF_ALG, so the plugin's socket calls go to
:class:`FakeAlgKernel`, a test double of the kernel side of AF_ALG
(``crypto/af_alg.c``, ``algif_hash.c``, ``algif_skcipher.c``,
``algif_aead.c``): bind by name or driver, keys, the send queue bounded by
SO_SNDBUF, MSG_MORE, IV chaining across requests, AAD || ciphertext || tag,
EBADMSG.  It fails the test (rather than hang) where the real kernel would
block.  The real kernel runs the same plugin code in ``tests/kernel/``.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import os
import socket
from pathlib import Path

import pytest
try:  # cryptography 43 and later; before, in primitives (the minimum-versions CI job)
    from cryptography.hazmat.decrepit.ciphers.algorithms import CAST5, Blowfish, TripleDES
except ImportError:
    from cryptography.hazmat.primitives.ciphers.algorithms import CAST5, Blowfish, TripleDES
from cryptography.hazmat.primitives import cmac, poly1305
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from conftest import FAST as _FAST
from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.measure import harness
from pytest_qcrypto.checks import known_answers as kat
from pytest_qcrypto.backends import AuthenticationError, Unavailable, Unsupported, Workload
from pytest_qcrypto.backends import afalg, afalg_contexts
from pytest_qcrypto.backends.afalg import CHUNK, AfalgPlugin, kernel_name, parse_proc_crypto
from pytest_qcrypto.backends.openssl import OpenSSLPlugin

SOL_ALG, ALG_SET_KEY, ALG_SET_AEAD_AUTHSIZE = 279, 1, 5
ALG_OP_DECRYPT, ALG_OP_ENCRYPT = 0, 1
MSG_MORE, MSG_DONTWAIT = 0x8000, 0x40
SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE = 7, 8, 32, 33
PAGE = 4096
OPENSSL = OpenSSLPlugin()
#: Fast matrix options; hypothesis's plugin is left out of the in-process runs (slow to load).
FAST = (*_FAST, "-p", "no:hypothesispytest")


def _hash(name):
    return lambda key: hashlib.new(name)


#: CBC ciphers of the double: what -> (block cipher, key lengths the kernel's setkey takes).
CBC = {"cbc": (algorithms.AES, (16, 24, 32)), "cbc-des": (TripleDES, (8,)),
       "cbc-bf": (Blowfish, tuple(range(4, 57))), "cbc-cast5": (CAST5, tuple(range(5, 17)))}


def _cbc(key, iv, enc, what="cbc"):
    key = key * 3 if what == "cbc-des" else key  # DES = TripleDES with K1 = K2 = K3
    c = Cipher(CBC[what][0](key), modes.CBC(iv))
    return c.encryptor() if enc else c.decryptor()


def _block(what):
    return 8 if what in CBC and what != "cbc" else 16


def _hash_of(what, key, message):
    """What a hash socket of the double returns for ``message`` (the key set on the tfm,
    or for poly1305 the first 32 bytes of the message, as crypto/poly1305_generic.c)."""
    if what.startswith("hmac-"):
        return hmac.new(key, message, what[5:]).digest()
    if what == "cmac":
        c = cmac.CMAC(algorithms.AES(key))
        c.update(message)
        return c.finalize()
    if what == "poly1305":
        if len(message) < 32:
            raise OSError(errno.ENOKEY, os.strerror(errno.ENOKEY))
        return poly1305.Poly1305.generate_tag(message[:32], message[32:])
    return hashlib.new(what, message).digest()


#: (type, cra_name) -> (driver, priority, what it computes)
ALGS = {
    ("hash", "sha256"): ("sha256-avx2", 170, "sha256"),
    ("hash", "sha1"): ("sha1-generic", 100, "sha1"),
    ("skcipher", "cbc(aes)"): ("cbc-aes-aesni", 400, "cbc"),
    ("skcipher", "ctr(aes)"): ("ctr-aes-aesni", 400, "ctr"),
    ("skcipher", "ecb(aes)"): ("ecb-aes-aesni", 400, "ecb"),
    ("skcipher", "xts(aes)"): ("xts-aes-aesni", 401, "xts"),
    ("aead", "gcm(aes)"): ("generic-gcm-aesni", 400, "gcm"),
    ("hash", "hmac(sha256)"): ("hmac(sha256-avx2)", 170, "hmac-sha256"),
    ("hash", "hmac(md5)"): ("hmac(md5-generic)", 100, "hmac-md5"),
    ("hash", "cmac(aes)"): ("cmac(aes-aesni)", 300, "cmac"),
    ("hash", "poly1305"): ("poly1305-simd", 300, "poly1305"),
    ("skcipher", "cbc(des)"): ("cbc(des-generic)", 100, "cbc-des"),
    ("skcipher", "cbc(blowfish)"): ("cbc-blowfish-asm", 300, "cbc-bf"),
    ("skcipher", "cbc(cast5)"): ("cbc-cast5-avx", 200, "cbc-cast5"),
    # crypto/crypto_null.c: no key, no IV, block size 1; output = input
    ("skcipher", "ecb(cipher_null)"): ("ecb-cipher_null", 100, "null"),
}
#: Extra drivers by name only (lower priority): bind pins them.
EXTRA_DRIVERS = {("hash", "sha256-generic"): ("sha256", 100, "sha256"),
                 ("hash", "hmac(sha256-generic)"): ("hmac(sha256)", 100, "hmac-sha256"),
                 ("skcipher", "cbc(aes-generic)"): ("cbc(aes)", 100, "cbc")}


def proc_crypto_text(algs=ALGS, extra=EXTRA_DRIVERS) -> str:
    blocks = []
    kinds = {"hash": "shash", "skcipher": "skcipher", "aead": "aead"}
    for (typ, name), (driver, prio, _) in algs.items():
        blocks.append(f"name         : {name}\ndriver       : {driver}\nmodule       : kernel\n"
                      f"priority     : {prio}\nrefcnt       : 1\nselftest     : passed\n"
                      f"internal     : no\ntype         : {kinds[typ]}\n")
    for (typ, driver), (name, prio, _) in extra.items():
        blocks.append(f"name         : {name}\ndriver       : {driver}\nmodule       : kernel\n"
                      f"priority     : {prio}\nrefcnt       : 1\nselftest     : passed\n"
                      f"internal     : no\ntype         : {kinds[typ]}\n")
    blocks.append("name         : sha256\ndriver       : __sha256-internal\nmodule       : kernel\n"
                  "priority     : 500\nselftest     : passed\ninternal     : yes\ntype         : shash\n")
    return "\n".join(blocks)


class FakeAlgKernel:
    """Test double of the kernel behind AF_ALG sockets (see the module docstring).

    ``types``: the socket types the kernel has (algif modules); ``sndbuf``:
    the op sockets' starting SO_SNDBUF/SO_RCVBUF (net.core.wmem_default);
    ``wmem_max`` caps SO_SNDBUF; ``privileged`` allows SO_*BUFFORCE;
    ``optmem``: the largest request (bytes) before ENOMEM.
    """

    def __init__(self, types=("hash", "skcipher", "aead"), sndbuf=212992, wmem_max=212992,
                 privileged=False, optmem=512 * 1024) -> None:
        self.types, self.sndbuf, self.wmem_max = set(types), sndbuf, wmem_max
        self.privileged, self.optmem = privileged, optmem
        self.open_sockets: set[object] = set()
        self.sends: list[tuple[int, int]] = []  # (bytes, flags) of every data send

    def socket(self) -> FakeTfm:
        return FakeTfm(self)

    def lookup(self, typ, name):
        if (typ, name) in ALGS:
            return ALGS[(typ, name)][2]
        for (t, _name), (driver, _, what) in ALGS.items():
            if t == typ and driver == name:
                return what
        if (typ, name) in EXTRA_DRIVERS:
            return EXTRA_DRIVERS[(typ, name)][2]
        return None


#: Unkeyed hashes of the double.
HASHES = ("sha256", "sha1")


class FakeTfm:
    def __init__(self, kernel: FakeAlgKernel) -> None:
        self.kernel, self.what, self.key, self.authsize = kernel, None, None, 16
        kernel.open_sockets.add(self)

    def bind(self, addr):
        typ, name = addr
        if typ not in self.kernel.types or self.kernel.lookup(typ, name) is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
        self.typ, self.what = typ, self.kernel.lookup(typ, name)

    def setsockopt(self, level, opt, value, optlen=None):
        assert level == SOL_ALG
        if opt == ALG_SET_KEY:
            if self.what == "poly1305" or self.what in HASHES:  # shash_no_setkey
                raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
            keys = CBC[self.what][1] if self.what in CBC else (16, 24, 32)
            if self.what in (*CBC, "ctr", "ecb", "gcm", "cmac") and len(value) not in keys:
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            if self.what == "null" and value:  # null_setkey: any key, but this is keyless
                raise AssertionError("the null cipher is keyed with an empty key")
            self.key = bytes(value)
        elif opt == ALG_SET_AEAD_AUTHSIZE:
            assert value is None
            self.authsize = optlen

    def accept(self):
        if self.what not in (*HASHES, "poly1305") and self.key is None:
            raise OSError(errno.ENOKEY, os.strerror(errno.ENOKEY))
        return FakeOp(self), None

    def close(self):
        self.kernel.open_sockets.discard(self)


class FakeOp:
    def __init__(self, tfm: FakeTfm) -> None:
        self.tfm, self.k = tfm, tfm.kernel
        self.k.open_sockets.add(self)
        self.queue, self.more, self.init = bytearray(), False, False
        self.enc, self.iv, self.assoclen = False, b"", 0
        self.sndbuf = self.rcvbuf = self.k.sndbuf
        self.message, self.digest = bytearray(), None

    # -- sending ----------------------------------------------------------------
    def sendmsg_afalg(self, msg=(), *, op, iv=None, assoclen=None, flags=0):
        data = b"".join(bytes(m) for m in msg)
        if self.tfm.typ == "hash":
            raise AssertionError("hashes take no op/IV control message")
        return self._send(data, flags, (op, iv, assoclen or 0))

    def sendmsg(self, buffers, ancdata=(), flags=0):
        assert not ancdata
        return self.send(b"".join(bytes(b) for b in buffers), flags)

    def send(self, data, flags=0):
        if self.tfm.typ == "hash":
            if not self.more:
                self.message = bytearray()
            self.message += bytes(data)
            self.more = bool(flags & MSG_MORE)
            self.digest = None if self.more else bytes(self.message)
            self.k.sends.append((len(data), flags))
            return len(data)
        return self._send(bytes(data), flags, None)

    def _send(self, data, flags, control):
        if self.init and not self.more and self.queue:
            raise OSError(errno.EINVAL, "send after a final send whose data were not read")
        if control is not None:
            op, iv, assoclen = control
            self.enc = op == ALG_OP_ENCRYPT
            if iv is not None:
                self.iv = bytes(iv)
            self.assoclen = assoclen
        self.init = True
        room = (self.sndbuf & ~(PAGE - 1)) - len(self.queue)
        take = len(data)
        if take > room:
            if not flags & MSG_DONTWAIT:
                raise AssertionError("a blocking send beyond SO_SNDBUF would hang forever")
            if room <= 0:
                raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
            take = room
        self.queue += data[:take]
        self.more = bool(flags & MSG_MORE) if take == len(data) else True
        if data:
            self.k.sends.append((take, flags))
        return take

    # -- receiving --------------------------------------------------------------
    def recv_into(self, buf, nbytes=0):
        view = memoryview(buf).cast("B")
        n = nbytes or len(view)
        if self.tfm.typ == "hash":
            digest = _hash_of(self.tfm.what, self.tfm.key, self.digest or b"")
            self.digest = None
            view[:len(digest)] = digest[:n]
            return min(n, len(digest))
        if self.tfm.typ == "aead":
            return self._aead(view, n)
        if not self.queue:
            raise AssertionError("recv with nothing queued would block forever")
        if len(self.queue) > self.k.optmem:
            raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))
        take = min(n, len(self.queue))
        if self.more:
            take -= take % _block(self.tfm.what)
        if take == 0:
            raise AssertionError("recv of less than a block while MSG_MORE is set would block")
        data = bytes(self.queue[:take])
        del self.queue[:take]
        view[:take] = self._skcipher(data)
        return take

    def _skcipher(self, data):
        key, what, iv = self.tfm.key, self.tfm.what, self.iv
        if what == "null":
            return data
        if what in CBC:
            if len(data) % _block(what):
                raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
            out = (lambda c: c.update(data) + c.finalize())(_cbc(key, iv, self.enc, what))
            self.iv = (out if self.enc else data)[-_block(what):]
            return out
        if what == "ctr":
            c = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
            out = c.update(data) + c.finalize()
            self.iv = ((int.from_bytes(iv, "big") + len(data) // 16) % (1 << 128)).to_bytes(16, "big")
            return out
        if what == "ecb":
            c = Cipher(algorithms.AES(key), modes.ECB())
            c = c.encryptor() if self.enc else c.decryptor()
            return c.update(data) + c.finalize()
        if what == "xts":  # Linux 6.1's generic xts does not hand back the next tweak
            c = Cipher(algorithms.AES(key), modes.XTS(iv))
            c = c.encryptor() if self.enc else c.decryptor()
            return c.update(data) + c.finalize()
        raise AssertionError(what)

    def _aead(self, view, n):
        if self.more or not self.init:
            raise AssertionError("AEAD recv before the whole message was sent would block")
        if len(self.queue) > self.k.optmem:
            raise OSError(errno.ENOMEM, os.strerror(errno.ENOMEM))
        msg, tag = bytes(self.queue), self.tfm.authsize
        aad, body = msg[:self.assoclen], msg[self.assoclen:]
        out_len = len(msg) + tag if self.enc else len(msg) - tag
        if n < out_len or out_len > self.rcvbuf - PAGE:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        gcm = AESGCM(self.tfm.key)
        if self.enc:
            out = aad + gcm.encrypt(self.iv, body, aad or None)
        else:
            from cryptography.exceptions import InvalidTag
            try:
                out = aad + gcm.decrypt(self.iv, body, aad or None)
            except InvalidTag:
                # algif_aead decrypts into the caller's pages before the tag is checked:
                # the AAD and the unauthenticated plaintext are there when EBADMSG comes.
                ctr = Cipher(algorithms.AES(self.tfm.key),
                             modes.CTR(self.iv + (2).to_bytes(4, "big"))).encryptor()
                leaked = aad + ctr.update(body[:-tag])
                view[:len(leaked)] = leaked
                raise OSError(errno.EBADMSG, os.strerror(errno.EBADMSG)) from None
        self.queue.clear()
        view[:len(out)] = out
        return len(out)

    # -- socket options -----------------------------------------------------------
    def setsockopt(self, level, opt, value):
        assert level == socket.SOL_SOCKET
        if opt in (SO_SNDBUFFORCE, SO_RCVBUFFORCE) and not self.k.privileged:
            raise PermissionError(errno.EPERM, os.strerror(errno.EPERM))
        size = value * 2 if opt in (SO_SNDBUFFORCE, SO_RCVBUFFORCE) \
            else min(value, self.k.wmem_max) * 2
        if opt in (SO_SNDBUF, SO_SNDBUFFORCE):
            self.sndbuf = size
        else:
            self.rcvbuf = size

    def getsockopt(self, level, opt):
        return self.sndbuf if opt == SO_SNDBUF else self.rcvbuf

    def close(self):
        self.k.open_sockets.discard(self)


# -- fixtures and helpers ---------------------------------------------------------------


@pytest.fixture
def kernel() -> FakeAlgKernel:
    return FakeAlgKernel()


@pytest.fixture
def plugin(kernel, tmp_path, monkeypatch) -> AfalgPlugin:
    proc = tmp_path / "crypto"
    proc.write_text(proc_crypto_text())
    monkeypatch.setattr(afalg, "_netlink_flags", lambda driver: None)
    return AfalgPlugin(socket_factory=kernel.socket, proc_crypto=str(proc))


def alg(name):
    a = catalog.lookup(name)
    assert a is not None
    return a


def key_for(a):
    return bytes(range(1, a.key_size + 1))


def raising(exc):
    def factory():
        raise exc
    return factory


# -- names, /proc/crypto ------------------------------------------------------------------


def test_kernel_names_of_the_catalog():
    assert kernel_name(alg("aes-256-cbc")) == "cbc(aes)"
    assert kernel_name(alg("aes-128-xts")) == "xts(aes)"
    assert kernel_name(alg("aes-128-gcm")) == "gcm(aes)"
    assert kernel_name(alg("chacha20")) == "chacha20"
    assert kernel_name(alg("chacha20-poly1305")) == "rfc7539(chacha20,poly1305)"
    assert kernel_name(alg("des-ede3-cbc")) == "cbc(des3_ede)"
    assert kernel_name(alg("blake2b512")) == "blake2b-512"
    assert kernel_name(alg("sha3-256")) == "sha3-256"
    assert kernel_name(alg("sha512-224")) is None  # Linux has no SHA-512/224
    assert kernel_name(alg("des-cbc")) == "cbc(des)"
    assert kernel_name(alg("bf-cbc")) == "cbc(blowfish)"
    assert kernel_name(alg("cast5-cbc")) == "cbc(cast5)"
    assert [kernel_name(alg(f"hmac-{d}")) for d in ("md5", "sha1", "sha256", "sha384",
                                                     "sha512")] == \
        ["hmac(md5)", "hmac(sha1)", "hmac(sha256)", "hmac(sha384)", "hmac(sha512)"]
    assert kernel_name(alg("cmac-aes-128")) == "cmac(aes)"
    assert kernel_name(alg("poly1305")) == "poly1305"
    assert afalg.SOCKET_TYPE[catalog.MAC] == "hash"


def test_soft_driver_is_the_generic_c_driver_of_every_primitive():
    soft = afalg.soft_driver
    assert soft("sha256") == "sha256-generic"
    assert soft("blake2b-512") == "blake2b-512-generic"
    assert soft("cbc(aes)") == "cbc(aes-generic)"
    assert soft("hmac(sha256)") == "hmac(sha256-generic)"
    assert soft("cmac(aes)") == "cmac(aes-generic)"
    assert soft("cbc(des3_ede)") == "cbc(des3_ede-generic)"
    assert soft("rfc7539(chacha20,poly1305)") == "rfc7539(chacha20-generic,poly1305-generic)"
    assert soft("gcm(aes)") == "gcm_base(ctr(aes-generic),ghash-generic)"
    assert soft("xts(aes)") == "xts(ecb(aes-generic))"


def test_parse_proc_crypto_and_the_kernel_choice():
    records = parse_proc_crypto(proc_crypto_text())
    best = afalg.drivers_of(records, "sha256", "hash")
    assert [d.driver for d in best] == ["sha256-avx2", "sha256-generic"]  # internal one left out
    assert afalg.drivers_of(records, "sha256", "skcipher") == []
    assert afalg.describe_drivers(best) == "sha256-avx2 (priority 170), sha256-generic (priority 100)"


def test_hardware_from_netlink_flags_or_the_module(plugin, monkeypatch):
    rec = afalg.Driver("cbc(aes)", "cbc-aes-caam", module="caamalg", is_async=True)
    monkeypatch.setattr(afalg, "_netlink_flags", lambda d: 0x1000 | 0x80)
    assert AfalgPlugin().is_hardware(rec) is True
    monkeypatch.setattr(afalg, "_netlink_flags", lambda d: 0x485)
    assert AfalgPlugin().is_hardware(rec) is False  # the kernel's flag wins over the name
    monkeypatch.setattr(afalg, "_netlink_flags", lambda d: None)
    assert AfalgPlugin().is_hardware(rec) is True
    assert AfalgPlugin().is_hardware(afalg.Driver("sha256", "sha256-avx2",
                                                  module="sha256_ssse3")) is False
    assert AfalgPlugin().is_hardware(afalg.Driver("x", "y", module="odd", is_async=True)) is None


# -- availability -------------------------------------------------------------------------


@pytest.mark.parametrize("exc, reason", [
    (OSError(errno.EAFNOSUPPORT, os.strerror(errno.EAFNOSUPPORT)),
     "socket(AF_ALG) failed: [EAFNOSUPPORT] Address family not supported by protocol: "
     "this kernel has no AF_ALG (CONFIG_CRYPTO_USER_API, module af_alg)"),
    (PermissionError(errno.EPERM, os.strerror(errno.EPERM)),
     "socket(AF_ALG) failed: [EPERM] Operation not permitted: blocked by a seccomp or LSM "
     "policy (container runtimes often do)"),
    (AttributeError("module 'socket' has no attribute 'AF_ALG'"),
     "this Python has no socket.AF_ALG (AF_ALG is Linux only)"),
])
def test_probe_reasons(exc, reason):
    with pytest.raises(Unavailable) as info:
        AfalgPlugin(socket_factory=raising(exc)).probe()
    assert str(info.value) == reason


def test_probe_of_this_machine_is_cheap_and_one_line():
    try:
        AfalgPlugin().probe()
    except Unavailable as exc:
        assert "\n" not in str(exc) and "AF_ALG" in str(exc)


def test_missing_algorithm(plugin):
    with pytest.raises(Unsupported, match=r"the kernel has no hash algorithm 'sha384' for sha384: "
                                          r"bind\(\) gives \[ENOENT\]"):
        plugin.open(alg("sha384"), b"")


def test_missing_socket_type_is_named_and_other_types_go_on(kernel, plugin):
    kernel.types.discard("aead")
    with pytest.raises(Unsupported) as info:
        plugin.open(alg("aes-128-gcm"), bytes(16))
    assert str(info.value) == ("AF_ALG type 'aead' is not available: bind() gives [ENOENT] for "
                               "every aead algorithm tried (module algif_aead missing or blacklisted)")
    plugin.open(alg("sha256"), b"").close()
    assert not kernel.open_sockets


def test_bad_key_is_refused_with_the_errno_and_sockets_are_closed(kernel, plugin):
    with pytest.raises(Unsupported, match=r"the kernel's cbc\(aes\) rejects a 5-byte key: \[EINVAL\]"):
        plugin.open(alg("aes-128-cbc"), b"12345")
    assert not kernel.open_sockets


# -- driver pinning -------------------------------------------------------------------------


def test_default_binds_the_highest_priority_driver(plugin):
    ctx = plugin.open(alg("sha256"), b"")
    assert (ctx.driver, ctx.hardware) == ("sha256-avx2", False)
    ctx.close()


def test_pinned_driver(plugin):
    ctx = plugin.open(alg("sha256"), b"", "sha256-generic")
    assert ctx.driver == "sha256-generic"
    assert ctx.digest(b"abc") == hashlib.sha256(b"abc").digest()
    ctx.close()


def test_unknown_driver_lists_the_drivers_there_are(plugin):
    with pytest.raises(Unsupported) as info:
        plugin.open(alg("sha256"), b"", "sha256-ni")
    assert str(info.value) == (
        "the kernel has no hash driver 'sha256-ni': bind() gives [ENOENT]; drivers of sha256 "
        "here: sha256-avx2 (priority 170), sha256-generic (priority 100)")


def test_driver_of_another_algorithm(plugin):
    with pytest.raises(Unsupported, match="driver 'sha1-generic' implements sha1, not sha256 "
                                          r"\(sha256\); drivers of sha256 here: sha256-avx2"):
        plugin.open(alg("sha256"), b"", "sha1-generic")


@pytest.mark.parametrize("name, driver", [("sha256", "sha256-generic"),
                                          ("hmac-sha256", "hmac(sha256-generic)"),
                                          ("aes-128-cbc", "cbc(aes-generic)"),
                                          ("des-cbc", "cbc(des-generic)")])
def test_soft_binds_the_generic_driver(plugin, name, driver):
    a = alg(name)
    ctx = plugin.open(a, key_for(a), "soft")
    assert (ctx.driver, ctx.hardware) == (driver, False)
    ctx.close()


def test_soft_without_a_generic_driver_says_so_and_lists_the_drivers(kernel, plugin):
    with pytest.raises(Unsupported) as info:
        plugin.open(alg("aes-128-ctr"), bytes(16), "soft")
    assert str(info.value) == (
        "afalg:soft binds the generic C driver, but the kernel has no skcipher driver "
        "'ctr(aes-generic)': bind() gives [ENOENT]; drivers of ctr(aes) here: ctr-aes-aesni "
        "(priority 400)")
    assert not kernel.open_sockets


def test_details_list_each_algorithm_with_drivers(plugin):
    lines = plugin.details()
    assert "  hash sha256 [sha256]: sha256-avx2 (priority 170), sha256-generic (priority 100)" \
        in lines
    assert any(x.startswith("  skcipher cbc(aes) [aes-128-cbc, aes-192-cbc, aes-256-cbc]: "
                            "cbc-aes-aesni (priority 400)") for x in lines)
    assert any(x.startswith("  hash sm3 [sm3]: not in this kernel (bind: [ENOENT]") for x in lines)


def test_supported_is_what_this_kernel_binds(kernel, plugin):
    """A real 6.1 kernel listed blake2s256 and sm3, which it does not have (issue 24): the
    list is now what a bind finds, and the details say what the plugin maps but is not here."""
    mapped = {a.name for a in catalog.ALGORITHMS if afalg.kernel_name(a) is not None}
    has = {n for n in mapped
           if kernel.lookup(afalg.SOCKET_TYPE[alg(n).kind], afalg.kernel_name(alg(n))) is not None}
    assert plugin.supported() == has
    assert {"sha256", "aes-128-cbc", "hmac-sha256"} <= has and "sm3" in mapped - has
    absent = ", ".join(sorted(mapped - has, key=[a.name for a in catalog.ALGORITHMS].index))
    assert plugin.details()[0] == ("algorithms listed: those this kernel binds (each kernel "
                                   f"name bound once); not in this kernel: {absent}")
    assert not kernel.open_sockets


def test_supported_without_af_alg_says_it_did_not_check():
    unchecked = AfalgPlugin(socket_factory=raising(OSError(errno.EAFNOSUPPORT, "x")))
    assert unchecked.supported() == {a.name for a in catalog.ALGORITHMS
                                     if afalg.kernel_name(a) is not None}
    assert unchecked.unchecked.startswith("not checked against this kernel: socket(AF_ALG) "
                                          "failed: [EAFNOSUPPORT]")


def test_details_when_unavailable_say_what_to_enable():
    lines = AfalgPlugin(socket_factory=raising(OSError(errno.EAFNOSUPPORT, "x"))).details()
    assert lines and "CONFIG_CRYPTO_USER_API_HASH" in lines[0]


# -- contexts: digests ------------------------------------------------------------------------


@pytest.mark.parametrize("size", (0, 16, CHUNK, CHUNK + 1, 300_000))
def test_digest_sends_at_most_one_chunk_at_a_time(kernel, plugin, size):
    data = os.urandom(size)
    ctx = plugin.open(alg("sha256"), b"")
    assert ctx.digest(data) == hashlib.sha256(data).digest()
    assert all(n <= CHUNK for n, _ in kernel.sends)
    assert [f & MSG_MORE for _, f in kernel.sends] == \
        [MSG_MORE] * (len(kernel.sends) - 1) + [0] * bool(kernel.sends)
    ctx.close()


@pytest.mark.parametrize("size", (16, 300_000))
def test_digest_runner(plugin, size):
    ctx = plugin.open(alg("sha256"), b"")
    run = ctx.runner(Workload(os.urandom(size)))
    run(3)
    timing = harness.time_runner(run, min_time=0.001, rounds=1)
    assert timing.count >= 1
    ctx.close()


# -- contexts: MACs ------------------------------------------------------------------------------


def _reference_mac(name, key, data):
    """The tag from pycryptodome: independent of the pyca code behind the double."""
    from Crypto.Cipher import AES
    from Crypto.Hash import CMAC, HMAC, MD5, SHA1, SHA256, SHA384, SHA512
    from Crypto.Hash import Poly1305 as _  # noqa: F401  (RFC 8439's raw MAC is below)
    if name.startswith("hmac-"):
        mods = {"md5": MD5, "sha1": SHA1, "sha256": SHA256, "sha384": SHA384, "sha512": SHA512}
        return HMAC.new(key, data, mods[name[5:]]).digest()
    if name == "cmac-aes-128":
        return CMAC.new(key, data, ciphermod=AES).digest()
    r = int.from_bytes(key[:16], "little") & 0x0ffffffc0ffffffc0ffffffc0fffffff
    acc, p = 0, (1 << 130) - 5  # RFC 8439 section 2.5.1
    for i in range(0, len(data), 16):
        block = data[i:i + 16] + b"\x01"
        acc = (acc + int.from_bytes(block, "little")) * r % p
    return ((acc + int.from_bytes(key[16:], "little")) % (1 << 128)).to_bytes(16, "little")


MACS = ("hmac-sha256", "hmac-md5", "cmac-aes-128", "poly1305")


@pytest.mark.parametrize("name", (*MACS, "des-cbc", "bf-cbc", "cast5-cbc"))
def test_known_answers_of_the_macs_and_64_bit_ciphers_through_the_double(kernel, plugin, name):
    a = alg(name)
    ran = kat.check_vectors("afalg", a, lambda key: plugin.open(a, key))
    assert ran == len(kat.vectors(name)) > 0
    assert not kernel.open_sockets


@pytest.mark.parametrize("size", (0, 16, 1000, CHUNK + 1, 300_000))
@pytest.mark.parametrize("name", MACS)
def test_mac_is_the_tag_of_the_buffer_under_the_key(kernel, plugin, name, size):
    a = alg(name)
    key, data = os.urandom(a.key_size), os.urandom(size)
    ctx = plugin.open(a, key)
    assert ctx.mac(data) == _reference_mac(name, key, data)
    assert ctx.mac(data) == _reference_mac(name, key, data)  # each MAC starts afresh
    extra = 32 if name == "poly1305" else 0  # its key goes first in every message
    assert kernel.sends[0][0] == min(size, CHUNK) + extra
    assert all(n <= CHUNK + extra for n, _ in kernel.sends)
    with pytest.raises(Unsupported, match=f"{name} is not a digest"):
        ctx.digest(data)
    ctx.close()


def test_mac_key_is_set_on_the_socket_except_poly1305s(kernel, plugin):
    ctx = plugin.open(alg("hmac-sha256"), b"k" * 32)
    assert ctx._tfm.key == b"k" * 32
    ctx.close()
    ctx = plugin.open(alg("poly1305"), b"k" * 32)
    assert ctx._tfm.key is None  # setsockopt(ALG_SET_KEY) would give ENOSYS
    ctx.close()


def test_poly1305_needs_a_32_byte_key_and_leaves_no_socket(kernel, plugin):
    with pytest.raises(Unsupported, match="^poly1305 takes a 32-byte key, not 16$"):
        plugin.open(alg("poly1305"), bytes(16))
    assert not kernel.open_sockets


@pytest.mark.parametrize("size", (16, 300_000))
@pytest.mark.parametrize("name", MACS)
def test_mac_runner_sends_each_buffer_and_reads_each_tag(kernel, plugin, name, size):
    a = alg(name)
    key, data = os.urandom(a.key_size), os.urandom(size)
    ctx = plugin.open(a, key)
    kernel.sends.clear()
    ctx.runner(Workload(data))(3)
    extra = 32 if name == "poly1305" else 0
    sends = -(-size // CHUNK)
    assert len(kernel.sends) == 3 * sends
    assert sum(n for n, _ in kernel.sends) == 3 * (size + extra)
    assert ctx.op.digest is None  # every tag was read
    assert ctx.mac(data) == _reference_mac(name, key, data)
    ctx.close()


# -- contexts: ciphers --------------------------------------------------------------------------


@pytest.mark.parametrize("size", (8, 4096, CHUNK, 300_000))
@pytest.mark.parametrize("name", ("des-cbc", "bf-cbc", "cast5-cbc"))
def test_64_bit_block_ciphers_match_pycryptodome(kernel, plugin, name, size):
    from Crypto.Cipher import CAST, DES, Blowfish as BF
    module = {"des-cbc": DES, "bf-cbc": BF, "cast5-cbc": CAST}[name]
    a = alg(name)
    key, iv, data = key_for(a), os.urandom(8), os.urandom(size)
    expect = module.new(key, module.MODE_CBC, iv=iv).encrypt(data)
    ctx = plugin.open(a, key)
    assert ctx.encrypt(iv, data) == expect
    assert ctx.decrypt(iv, expect) == data
    assert max(n for n, _ in kernel.sends) <= CHUNK
    run = ctx.runner(Workload(data, iv=iv))
    run(2)  # the kernel's IV runs on through both buffers
    assert ctx.op.iv == module.new(key, module.MODE_CBC, iv=iv).encrypt(data + data)[-8:]
    ctx.close()


@pytest.mark.parametrize("name", ("aes-128-cbc", "aes-256-ctr", "aes-128-ecb"))
@pytest.mark.parametrize("size", (16, 4096, CHUNK, 81920, 300_000, 1 << 20))
def test_cipher_output_is_byte_identical_to_openssl_at_every_size(kernel, plugin, name, size):
    a = alg(name)
    key, iv, data = key_for(a), os.urandom(a.iv_size), os.urandom(size)
    ctx = plugin.open(a, key)
    expect = OPENSSL.open(a, key).encrypt(iv, data)
    assert ctx.encrypt(iv, data) == expect
    assert ctx.decrypt(iv, expect) == data
    assert max(n for n, _ in kernel.sends) <= CHUNK  # chunked: never more than 64 KiB a send
    ctx.close()


def test_cipher_runner_in_chunks_continues_the_stream(kernel, plugin):
    a = alg("aes-128-cbc")
    key, iv, data = key_for(a), os.urandom(16), os.urandom(300_000)
    ctx = plugin.open(a, key)
    ctx.runner(Workload(data, iv=iv))(2)
    stream = OPENSSL.open(a, key).encrypt(iv, data + data)
    op = ctx.op
    assert op.iv == stream[-16:]  # the kernel's IV carried through both buffers
    assert ctx.encrypt(iv, data) == stream[:300_000]  # a one-shot call starts afresh
    ctx.close()


@pytest.mark.parametrize("name, size", [("aes-128-cbc", 4096), ("aes-128-cbc", 300_000),
                                        ("aes-256-xts", 4096), ("des-cbc", 64)])
def test_cipher_round_trip_encrypts_then_decrypts_in_every_iteration(kernel, plugin, name,
                                                                     size):
    a = alg(name)
    key, iv, data = key_for(a), os.urandom(a.iv_size), os.urandom(size)
    ctx = plugin.open(a, key)
    sealed = OPENSSL.open(a, key).encrypt(iv, data) if name != "des-cbc" else \
        ctx.encrypt(iv, data)
    op, ops, received = ctx.op, [], []
    sendmsg, recv_into = op.sendmsg_afalg, op.recv_into

    def spy_sendmsg(msg, *, op, **kw):
        ops.append(op)
        return sendmsg(msg, op=op, **kw)

    def spy_recv_into(dst, n):
        got = recv_into(dst, n)
        received.append(bytes(dst[:got]))
        return got

    op.sendmsg_afalg, op.recv_into = spy_sendmsg, spy_recv_into
    run = ctx.roundtrip_runner(Workload(data, iv=iv, ciphertext=sealed))
    ops.clear()
    run(3)
    assert ops == [ALG_OP_ENCRYPT, ALG_OP_DECRYPT] * 3
    legs = b"".join(received)
    assert legs == (sealed + data) * 3  # each request starts from the IV: no chaining across
    ctx.close()


def test_xts_goes_in_one_request_and_raises_the_send_buffer(kernel, plugin):
    kernel.wmem_max = 1 << 20
    a = alg("aes-128-xts")
    key = bytes(range(32))
    iv, data = os.urandom(16), os.urandom(300_000)
    ctx = plugin.open(a, key)
    assert ctx.encrypt(iv, data) == OPENSSL.open(a, key).encrypt(iv, data)
    assert max(n for n, _ in kernel.sends) == 300_000
    ctx.close()


def test_request_larger_than_the_socket_allows_is_skipped_with_the_reason(kernel, plugin):
    a = alg("aes-128-xts")
    ctx = plugin.open(a, bytes(range(32)))
    with pytest.raises(Unsupported) as info:
        ctx.encrypt(os.urandom(16), os.urandom(500_000))
    assert str(info.value) == (
        "a 500000-byte request does not fit the AF_ALG socket's send buffer (425984 bytes; "
        "SO_SNDBUF is capped by net.core.wmem_max and SO_SNDBUFFORCE needs CAP_NET_ADMIN); "
        "aes-128-xts is not chunked: its kernel implementations do not hand back the next IV")
    ctx.close()


def test_privileged_force_beyond_wmem_max(kernel, plugin):
    kernel.privileged = True
    a = alg("aes-128-gcm")
    key, nonce, data = bytes(16), os.urandom(12), os.urandom(450_000)
    ctx = plugin.open(a, key)
    assert ctx.encrypt(nonce, data) == AESGCM(key).encrypt(nonce, data, None)
    ctx.close()


def test_kernel_memory_limit_is_a_skip_with_the_reason_and_the_context_goes_on(kernel, plugin):
    kernel.privileged, kernel.optmem = True, 400_000
    a = alg("aes-128-gcm")
    ctx = plugin.open(a, bytes(16))
    with pytest.raises(Unsupported, match=r"the kernel cannot take a 450000-byte request on one "
                                          r"AF_ALG socket: \[ENOMEM\] .*optmem_max.*AEAD message "
                                          r"is authenticated as a whole and cannot be sent in chunks"):
        ctx.encrypt(os.urandom(12), os.urandom(450_000))
    nonce = os.urandom(12)
    assert ctx.decrypt(nonce, ctx.encrypt(nonce, b"still works")) == b"still works"
    ctx.close()


def test_an_error_at_one_size_is_an_oserror_with_the_errno(plugin):
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16))
    ctx.op.queue += b"x"  # a stale request the kernel refuses to append to
    ctx.op.init = True
    with pytest.raises(OSError) as info:
        ctx.encrypt(bytes(16), bytes(32))
    assert info.value.errno == errno.EINVAL
    assert ctx.encrypt(bytes(16), bytes(32))  # the op socket was replaced
    ctx.close()


# -- contexts: AEADs ----------------------------------------------------------------------------


def test_aead_layout_aad_ciphertext_tag(kernel, plugin):
    a = alg("aes-128-gcm")
    key, nonce, aad, data = bytes(range(16)), os.urandom(12), b"header", os.urandom(1000)
    ctx = plugin.open(a, key)
    sealed = ctx.encrypt(nonce, data, aad)
    assert sealed == AESGCM(key).encrypt(nonce, data, aad)  # ciphertext || tag, AAD dropped
    assert ctx.decrypt(nonce, sealed, aad) == data
    ctx.close()


def test_wrong_tag_is_an_authentication_failure_never_a_result(plugin):
    a = alg("aes-128-gcm")
    ctx = plugin.open(a, bytes(16))
    nonce = os.urandom(12)
    sealed = bytearray(ctx.encrypt(nonce, b"x" * 64))
    sealed[-1] ^= 1
    with pytest.raises(AuthenticationError, match=r"\[EBADMSG\]"):
        ctx.decrypt(nonce, bytes(sealed))
    sealed[-1] ^= 1
    assert ctx.decrypt(nonce, bytes(sealed)) == b"x" * 64
    ctx.close()


def test_aead_known_answers_through_the_double(plugin):
    a = alg("aes-128-gcm")
    assert kat.check_vectors("afalg", a, lambda key: plugin.open(a, key)) == 3


def test_aead_runner_uses_each_nonce_and_decrypt_runner_verifies(plugin):
    a = alg("aes-128-gcm")
    ctx = plugin.open(a, bytes(16))
    nonces = tuple(os.urandom(12) for _ in range(4))
    data = os.urandom(1024)
    run = ctx.runner(Workload(data, nonces=nonces))
    run(6)
    sealed = ctx.encrypt(nonces[0], data)
    ctx.runner(Workload(data, nonces=nonces, decrypt=True, ciphertext=sealed))(3)
    bad = sealed[:-1] + bytes([sealed[-1] ^ 1])
    with pytest.raises(AuthenticationError):
        ctx.runner(Workload(data, nonces=nonces, decrypt=True, ciphertext=bad))(1)
    ctx.close()


class _Kept(bytearray):
    """Every bytearray the afalg contexts make, kept so a test can read it afterwards."""

    made: list[bytearray] = []

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        _Kept.made.append(self)


@pytest.fixture
def kept_buffers(monkeypatch):
    """The result buffers afalg allocates (its module-level ``bytearray`` is shadowed)."""
    _Kept.made = []
    monkeypatch.setattr(afalg_contexts, "bytearray", _Kept, raising=False)
    return _Kept.made


def test_the_double_really_leaves_plaintext_behind(kernel):
    """The hazard the wipe guards against, shown on the double with the bare socket calls."""
    key, nonce, aad, data = bytes(16), bytes(12), b"header", b"A" * 32
    bad = bytearray(AESGCM(key).encrypt(nonce, data, aad))
    bad[-1] ^= 1
    tfm = kernel.socket()
    tfm.bind(("aead", "gcm(aes)"))
    tfm.setsockopt(SOL_ALG, ALG_SET_KEY, key)
    op, _ = tfm.accept()
    op.sendmsg_afalg([aad + bytes(bad)], op=ALG_OP_DECRYPT, iv=nonce, assoclen=len(aad),
                     flags=MSG_DONTWAIT)
    out = bytearray(len(aad) + len(data))
    with pytest.raises(OSError) as info:
        op.recv_into(out)
    assert info.value.errno == errno.EBADMSG
    assert out == aad + data


def test_failed_decrypt_wipes_every_buffer_that_received_plaintext(plugin, kept_buffers):
    a = alg("aes-128-gcm")
    key, nonce, aad, data = bytes(range(16)), os.urandom(12), b"header", b"secret plaintext" * 8
    ctx = plugin.open(a, key)
    bad = bytearray(ctx.encrypt(nonce, data, aad))
    bad[-1] ^= 1
    kept_buffers.clear()
    with pytest.raises(AuthenticationError, match=r"\[EBADMSG\]"):
        ctx.decrypt(nonce, bytes(bad), aad)
    assert [len(b) for b in kept_buffers] == [len(aad) + len(data)]  # AAD || plaintext
    assert kept_buffers[0] == bytes(len(aad) + len(data))

    bad = bytearray(ctx.encrypt(nonce, data))  # the timed loop sends no AAD
    bad[-1] ^= 1
    kept_buffers.clear()
    run = ctx.runner(Workload(data, nonces=(nonce,), decrypt=True, ciphertext=bytes(bad)))
    assert [len(b) for b in kept_buffers] == [len(data)]  # its reused output buffer
    with pytest.raises(AuthenticationError, match=r"\[EBADMSG\]"):
        run(1)
    assert kept_buffers[0] == bytes(len(data))
    ctx.close()


# -- context lifetime -----------------------------------------------------------------------------


def test_close_is_idempotent_and_releases_both_sockets(kernel, plugin):
    ctx = plugin.open(alg("aes-128-cbc"), bytes(16))
    assert len(kernel.open_sockets) == 2
    ctx.close()
    ctx.close()
    assert not kernel.open_sockets
    with pytest.raises(ValueError, match="closed"):
        ctx.encrypt(bytes(16), bytes(16))


def test_a_thousand_contexts_leave_no_socket_open(kernel, plugin):
    for _ in range(1000):
        plugin.open(alg("sha256"), b"").close()
    assert not kernel.open_sockets


# -- through pytest's command line ---------------------------------------------------------------


@pytest.fixture
def fake_kernel_plugin(kernel, tmp_path, monkeypatch):
    """The built-in afalg plugin, wired to the fake kernel for in-process pytester runs."""
    proc = tmp_path / "crypto"
    proc.write_text(proc_crypto_text())
    monkeypatch.setattr(afalg, "_netlink_flags", lambda driver: None)
    monkeypatch.setattr(AfalgPlugin, "new_socket", lambda self: kernel.socket())
    monkeypatch.setattr(AfalgPlugin, "read_drivers",
                        lambda self: parse_proc_crypto(proc.read_text()))
    return kernel


def test_main_command_without_af_alg_skips_both_kernel_plugins_with_reasons(pytester,
                                                                              monkeypatch):
    monkeypatch.setattr(AfalgPlugin, "new_socket", lambda self: (_ for _ in ()).throw(
        OSError(errno.EAFNOSUPPORT, os.strerror(errno.EAFNOSUPPORT))))
    monkeypatch.setattr("pytest_qcrypto.backends.devcrypto.DevcryptoPlugin.open_device",
                        lambda self: (_ for _ in ()).throw(
                            FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))))
    r = pytester.runpytest_inprocess(
        "--qcrypto-digest", "sha256", "--qcrypto-cipher", "aes-128-cbc",
        "--qcrypto-plugin", "afalg", "--qcrypto-plugin", "openssl",
        "--qcrypto-plugin", "devcrypto", "--qcrypto-size", "16,4096", *FAST)
    assert r.ret == 0
    out = r.stdout.str()
    assert out.count("  - afalg (all sizes) skipped: afalg: unavailable: socket(AF_ALG) failed: "
                     "[EAFNOSUPPORT]") == 2
    assert out.count("  - devcrypto (all sizes) skipped: devcrypto: unavailable: no /dev/crypto "
                     "here: load the cryptodev-linux module: modprobe cryptodev") == 2
    rows = [line.split() for line in r.outlines if line.startswith(("afalg ", "openssl "))]
    assert [row[0] for row in rows] == ["afalg", "openssl", "afalg", "openssl"]
    assert all(row[1:] == ["-", "-"] for row in rows if row[0] == "afalg")
    assert all(len(row) == 3 and all("." in c for c in row[1:]) for row in rows
               if row[0] == "openssl")
    r.assert_outcomes(passed=4, skipped=8)


def test_list_shows_both_kernel_plugins_and_why(pytester, monkeypatch):
    monkeypatch.setattr(AfalgPlugin, "new_socket", lambda self: (_ for _ in ()).throw(
        PermissionError(errno.EPERM, os.strerror(errno.EPERM))))
    r = pytester.runpytest_inprocess("--qcrypto-list", "-p", "no:hypothesispytest")
    assert r.ret == 0
    out = r.stdout.str()
    assert "afalg (aliases: af_alg): unavailable: socket(AF_ALG) failed: [EPERM] Operation " \
           "not permitted: blocked by a seccomp or LSM policy" in out
    assert "devcrypto (aliases: cryptodev, dev-crypto): " in out


def test_matrix_row_keeps_the_typed_name_and_the_note_names_the_driver(pytester,
                                                                      fake_kernel_plugin):
    r = pytester.runpytest_inprocess(
        "--qcrypto-digest", "sha256", "--qcrypto-plugin", "afalg:sha256-generic",
        "--qcrypto-plugin", "afalg", "--qcrypto-size", "16,100000", *FAST)
    assert r.ret == 0, r.stdout.str()
    rows = [line.split()[0] for line in r.outlines if line.startswith("afalg")]
    assert rows == ["afalg:sha256-generic", "afalg"]
    assert "  afalg:sha256-generic: driver sha256-generic (software)" in r.outlines
    assert "  afalg: driver sha256-avx2 (software)" in r.outlines
    assert not fake_kernel_plugin.open_sockets


def test_unknown_driver_skips_those_items_with_the_drivers_listed(pytester, fake_kernel_plugin):
    r = pytester.runpytest_inprocess(
        "--qcrypto-digest", "sha256", "--qcrypto-cipher", "aes-128-cbc",
        "--qcrypto-plugin", "afalg:sha256-generic", "--qcrypto-size", "16", *FAST)
    out = r.stdout.str()
    assert "  - afalg:sha256-generic (all sizes) skipped: afalg:sha256-generic aes-128-cbc: the " \
           "kernel has no skcipher driver 'sha256-generic': bind() gives [ENOENT]; drivers of " \
           "cbc(aes) here: cbc-aes-aesni (priority 400)" in out
    r.assert_outcomes(passed=1, skipped=1)


def test_contexts_close_when_a_test_fails(pytester, fake_kernel_plugin):
    pytester.makepyfile(test_user="""
        def test_fails_after_opening(qcrypto):
            ctx = qcrypto.open("aes-128-cbc", "afalg")
            ctx.measure(16, min_time=0.001, rounds=1)
            assert False, "the user's own check failed"
    """)
    r = pytester.runpytest_inprocess("test_user.py", "-p", "no:hypothesispytest")
    r.assert_outcomes(failed=1)
    assert not fake_kernel_plugin.open_sockets


def test_request_error_at_one_size_fails_that_item_with_errno_and_driver(pytester,
                                                                        fake_kernel_plugin,
                                                                        monkeypatch):
    def recv_into(self, buf, nbytes=0, original=FakeOp.recv_into):
        if (nbytes or len(memoryview(buf))) == 4096:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        return original(self, buf, nbytes)

    monkeypatch.setattr(FakeOp, "recv_into", recv_into)
    r = pytester.runpytest_inprocess("--qcrypto-cipher", "aes-128-cbc", "--qcrypto-plugin",
                                     "afalg", "--qcrypto-size", "16,4096,8192", *FAST)
    out = r.stdout.str()
    assert "afalg aes-128-cbc (driver cbc-aes-aesni) at 4096 bytes failed: [EINVAL] Invalid " \
           "argument" in out
    r.assert_outcomes(passed=2, failed=1)
    assert not fake_kernel_plugin.open_sockets


def test_source_says_what_one_operation_is():
    doc = Path(afalg.__file__).read_text()
    assert "one request per buffer" in doc and "if_alg.h" in doc


def test_mac_and_64_bit_cipher_tables_from_the_command_line(pytester, fake_kernel_plugin):
    r = pytester.runpytest_inprocess(
        "--qcrypto-mac", "hmac-sha256", "--qcrypto-mac", "poly1305", "--qcrypto-cipher",
        "bf-cbc", "--qcrypto-plugin", "afalg", "--qcrypto-size", "16,1024", *FAST)
    assert r.ret == 0, r.stdout.str()
    for header, driver in (("Benchmark results for 'hmac-sha256' MAC (KiB/s):",
                            "hmac(sha256-avx2)"),
                           ("Benchmark results for 'poly1305' MAC (KiB/s):", "poly1305-simd"),
                           ("Benchmark results for 'bf-cbc' cipher (KiB/s):",
                            "cbc-blowfish-asm")):
        at = r.outlines.index(header)
        row = next(x for x in r.outlines[at:] if x.startswith("afalg "))
        assert len(row.split()) == 3 and all("." in c for c in row.split()[1:]), row
        assert f"  afalg: driver {driver} (software)" in r.outlines[at:]
    r.assert_outcomes(passed=6)
    assert not fake_kernel_plugin.open_sockets


# -- the interface's own cost: the null request ----------------------------------------------


def test_null_request_is_one_byte_send_and_recv_on_ecb_cipher_null(kernel, plugin):
    request = plugin.null_request()
    assert request.what == "a 1-byte skcipher ecb(cipher_null) request (send + recv)"
    (tfm,) = [s for s in kernel.open_sockets if isinstance(s, FakeTfm)]
    (op,) = [s for s in kernel.open_sockets if isinstance(s, FakeOp)]
    assert (tfm.typ, tfm.what, tfm.key) == ("skcipher", "null", b"")
    assert op.enc and op.more and not kernel.sends  # primed with the operation, no data
    request.run(4)
    assert kernel.sends == [(1, MSG_DONTWAIT)] * 4  # as the cipher loop sends a buffer
    assert not op.queue
    request.close()
    assert not kernel.open_sockets


def test_a_kernel_without_cipher_null_says_why(kernel, plugin, monkeypatch):
    monkeypatch.delitem(ALGS, ("skcipher", "ecb(cipher_null)"))
    with pytest.raises(Unsupported) as e:
        plugin.null_request()
    assert str(e.value) == ("no null request: skcipher ecb(cipher_null): [ENOENT] "
                            "No such file or directory")
    assert not kernel.open_sockets
