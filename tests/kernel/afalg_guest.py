"""The afalg plugin against a real Linux kernel: run inside the kernel VM only.

``tests/kernel/test_vm.py`` boots the VM (``tests/kernel/vm.py``) and runs this
file there with pytest; its name keeps it out of the host's collection.  It
checks, for every algorithm the plugin maps that the guest kernel has:

* the known-answer vectors (``pytest_qcrypto.checks.known_answers``), including the rejection
  of a tampered AEAD tag;
* byte-identical output with the ``openssl`` plugin at 16, 4096, 65536 and
  81920 bytes (and above the socket buffer, where the kernel allows);
* driver pinning (``afalg:DRIVER``), the reasons of every skip, and the timed
  loops (one short measurement each, never asserting a speed);
* that a wrong tag leaves no plaintext behind: the kernel writes the AAD and
  the unauthenticated plaintext into the receive buffer before ``EBADMSG``,
  and the plugin zeroes every such buffer (one-shot and timed-loop paths).
"""

from __future__ import annotations

import errno
import os
import socket
import subprocess

import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.checks import known_answers as kat
from pytest_qcrypto.backends import AuthenticationError, Unsupported, Workload, afalg_contexts
from pytest_qcrypto.backends.afalg import CHUNK, AfalgPlugin, kernel_name, soft_driver
from pytest_qcrypto.backends.openssl import OpenSSLPlugin
from pytest_qcrypto.measure.bench import BenchContext, Randomness
from pytest_qcrypto.measure.registry import Selection

AFALG = AfalgPlugin()
OPENSSL = OpenSSLPlugin()
MAPPED = [a for a in catalog.ALGORITHMS if kernel_name(a) is not None]
AEADS = [a for a in MAPPED if a.kind == catalog.AEAD]
SIZES = (16, 4096, 65536, 81920)
#: Above the default socket buffer (208 KiB): chunked for CBC/CTR/ECB, SO_SNDBUF raised otherwise.
LARGE = 5 * CHUNK
RNG = Randomness(8439)


def ids(alg: catalog.Algorithm) -> str:
    return alg.name


@pytest.fixture(scope="module", autouse=True)
def afalg_works() -> None:
    AFALG.probe()  # Unavailable here is an error: the VM kernel has AF_ALG


def open_or_skip(alg: catalog.Algorithm, key: bytes, variant: str | None = None):
    try:
        return AFALG.open(alg, key, variant)
    except Unsupported as exc:
        pytest.skip(f"afalg {alg.name}: {exc}")


class _Reference:
    """MACs and the 64-bit block ciphers outside pyca's openssl plugin: stdlib hmac,
    pyca's CMAC and Poly1305, pycryptodome's DES, Blowfish and CAST (one-shot calls)."""

    def __init__(self, alg: catalog.Algorithm, key: bytes) -> None:
        self.alg, self.key = alg, key

    def mac(self, data: bytes) -> bytes:
        import hmac
        from cryptography.hazmat.primitives import cmac, poly1305
        from cryptography.hazmat.primitives.ciphers import algorithms
        if self.alg.name.startswith("hmac-"):
            return hmac.digest(self.key, data, self.alg.family)
        if self.alg.name == "poly1305":
            return poly1305.Poly1305.generate_tag(self.key, data)
        c = cmac.CMAC(algorithms.AES(self.key))
        c.update(data)
        return c.finalize()

    def _cipher(self, iv: bytes):  # type: ignore[no-untyped-def]
        from Crypto.Cipher import CAST, DES, Blowfish
        module = {"des-cbc": DES, "bf-cbc": Blowfish, "cast5-cbc": CAST}[self.alg.name]
        return module.new(self.key, module.MODE_CBC, iv=iv)

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        return self._cipher(iv).encrypt(data)

    def close(self) -> None:
        pass


def reference(alg: catalog.Algorithm, key: bytes):  # type: ignore[no-untyped-def]
    """The openssl plugin's context where it has the algorithm, else :class:`_Reference`."""
    if alg.kind != catalog.MAC and alg.name in OPENSSL.supported():
        return OPENSSL.open(alg, key)
    return _Reference(alg, key)


def same_as_openssl(alg: catalog.Algorithm, size: int) -> None:
    key = RNG.key(alg)
    data = RNG.bytes(size)
    ours = open_or_skip(alg, key)
    ref = reference(alg, key)
    try:
        if alg.kind == catalog.MAC:
            assert ours.mac(data) == ref.mac(data)
            assert ours.mac(data) == ref.mac(data)
            return
        if alg.kind == catalog.DIGEST:
            assert ours.digest(data) == ref.digest(data)
            return
        iv = RNG.bytes(alg.iv_size)
        aad = RNG.bytes(20) if alg.kind == catalog.AEAD else b""
        sealed = ref.encrypt(iv, data, aad)
        assert ours.encrypt(iv, data, aad) == sealed
        assert ours.decrypt(iv, sealed, aad) == data
    finally:
        ours.close()
        ref.close()


@pytest.mark.parametrize("alg", MAPPED, ids=ids)
def test_known_answers(alg: catalog.Algorithm) -> None:
    open_or_skip(alg, RNG.key(alg)).close()
    ran = kat.check_vectors("afalg", alg, lambda key: AFALG.open(alg, key))
    assert ran == len(kat.vectors(alg.name)) > 0


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("alg", MAPPED, ids=ids)
def test_same_bytes_as_openssl(alg: catalog.Algorithm, size: int) -> None:
    same_as_openssl(alg, size)


@pytest.mark.parametrize("alg", MAPPED, ids=ids)
def test_same_bytes_above_the_socket_buffer(alg: catalog.Algorithm) -> None:
    same_as_openssl(alg, LARGE)


@pytest.mark.parametrize("alg", [catalog.lookup(n) for n in ("sha256", "aes-128-ctr",
                                                             "des-ede3-cbc")], ids=ids)
def test_one_mebibyte_in_chunks(alg: catalog.Algorithm) -> None:
    same_as_openssl(alg, 1 << 20)


@pytest.mark.parametrize("alg", AEADS, ids=ids)
def test_wrong_tag_is_an_authentication_failure(alg: catalog.Algorithm) -> None:
    key, nonce, data = RNG.key(alg), RNG.bytes(alg.iv_size), RNG.bytes(4096)
    ctx = open_or_skip(alg, key)
    try:
        sealed = bytearray(ctx.encrypt(nonce, data))
        sealed[-1] ^= 0x80
        with pytest.raises(AuthenticationError, match="EBADMSG"):
            ctx.decrypt(nonce, bytes(sealed))
        sealed[-1] ^= 0x80  # the context is still usable afterwards
        assert ctx.decrypt(nonce, bytes(sealed)) == data
    finally:
        ctx.close()


def test_the_kernel_leaves_unauthenticated_plaintext_in_the_receive_buffer() -> None:
    """The hazard itself, with bare socket calls: algif_aead decrypts into the caller's
    buffer, then checks the tag."""
    alg = catalog.lookup("aes-128-gcm")
    key, nonce, aad, data = RNG.key(alg), RNG.bytes(12), RNG.bytes(20), RNG.bytes(4096)
    bad = bytearray(OPENSSL.open(alg, key).encrypt(nonce, data, aad))
    bad[-1] ^= 0x80
    with socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0) as tfm:
        tfm.bind(("aead", "gcm(aes)"))
        tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY, key)
        tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_AEAD_AUTHSIZE, None, alg.tag_size)
        op, _ = tfm.accept()
        with op:
            op.sendmsg_afalg([aad + bytes(bad)], op=socket.ALG_OP_DECRYPT, iv=nonce,
                             assoclen=len(aad))
            out = bytearray(len(aad) + len(data))
            with pytest.raises(OSError) as info:
                op.recv_into(out)
    assert info.value.errno == errno.EBADMSG
    assert out == aad + data


class _Kept(bytearray):
    """Every bytearray the afalg contexts make, kept so the test can read it afterwards."""

    made: list[bytearray] = []

    def __init__(self, *args: object) -> None:
        super().__init__(*args)
        _Kept.made.append(self)


@pytest.mark.parametrize("alg", AEADS, ids=ids)
def test_wrong_tag_leaves_no_plaintext_in_any_buffer(alg: catalog.Algorithm,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    key, nonce, aad, data = RNG.key(alg), RNG.bytes(alg.iv_size), RNG.bytes(20), RNG.bytes(4096)
    ctx = open_or_skip(alg, key)
    monkeypatch.setattr(afalg_contexts, "bytearray", _Kept, raising=False)
    try:
        bad = bytearray(ctx.encrypt(nonce, data, aad))
        bad[-1] ^= 0x80
        _Kept.made = []
        with pytest.raises(AuthenticationError, match="EBADMSG"):
            ctx.decrypt(nonce, bytes(bad), aad)
        assert [len(b) for b in _Kept.made] == [len(aad) + len(data)]  # AAD || plaintext
        assert _Kept.made[0] == bytes(len(aad) + len(data))

        bad = bytearray(ctx.encrypt(nonce, data))  # the timed loop sends no AAD
        bad[-1] ^= 0x80
        _Kept.made = []
        run = ctx.runner(Workload(data, nonces=(nonce,), decrypt=True, ciphertext=bytes(bad)))
        assert [len(b) for b in _Kept.made] == [len(data)]  # its reused output buffer
        with pytest.raises(AuthenticationError, match="EBADMSG"):
            run(1)
        assert _Kept.made[0] == bytes(len(data))
    finally:
        ctx.close()


@pytest.mark.parametrize("alg", [a for a in AEADS + [catalog.lookup("aes-256-xts")]], ids=ids)
def test_message_too_large_for_one_request_is_skipped_with_the_reason(
        alg: catalog.Algorithm) -> None:
    ctx = open_or_skip(alg, RNG.key(alg))
    try:
        with pytest.raises(Unsupported, match=r"cannot take a 4194\d+-byte request.*optmem_max"
                                              r".*(cannot be sent in chunks|is not chunked)"):
            ctx.encrypt(RNG.bytes(alg.iv_size), RNG.bytes(4 << 20))
        data = RNG.bytes(4096)  # and the context goes on working
        iv = RNG.bytes(alg.iv_size)
        assert ctx.decrypt(iv, ctx.encrypt(iv, data)) == data
    finally:
        ctx.close()


@pytest.mark.parametrize("size", (16, LARGE))
@pytest.mark.parametrize("name", ("sha256", "aes-128-cbc", "aes-128-xts", "chacha20",
                                  "aes-128-gcm", "hmac-sha256", "cmac-aes-128", "poly1305",
                                  "des-cbc"))
@pytest.mark.parametrize("decrypt", (False, True), ids=("encrypt", "decrypt"))
def test_timed_loop_runs_and_leaves_the_context_correct(name: str, size: int,
                                                        decrypt: bool) -> None:
    alg = catalog.lookup(name)
    assert alg is not None
    if decrypt and not alg.can_decrypt:
        pytest.skip(f"{alg.word}s have no decrypt direction")
    ctx = open_or_skip(alg, RNG.key(alg))
    bench = BenchContext(Selection("afalg", AFALG), alg, ctx, RNG)
    try:
        m = bench.measure(size, decrypt=decrypt, min_time=0.001, rounds=1)
        assert m.count >= 1 and m.driver
        same = bench.workload(size)  # one-shot calls after the loop still give the right bytes
        kat.check_round_trip("afalg", alg, ctx, same)
        if alg.kind == catalog.MAC:
            assert ctx.mac(same.data) == reference(alg, ctx.key).mac(same.data)
    finally:
        bench.close()


@pytest.mark.parametrize("alg", MAPPED, ids=ids)
def test_driver_named_from_proc_crypto(alg: catalog.Algorithm) -> None:
    ctx = open_or_skip(alg, RNG.key(alg))
    try:
        drivers = {d.driver: d for d in AFALG.read_drivers()}
        assert ctx.driver in drivers
        assert drivers[ctx.driver].name == kernel_name(alg)
        assert ctx.hardware is False  # QEMU has no crypto engine: every driver is CPU code
    finally:
        ctx.close()


def test_pinned_driver_does_the_work() -> None:
    alg = catalog.lookup("sha256")
    ctx = open_or_skip(alg, b"", "sha256-generic")
    try:
        assert ctx.driver == "sha256-generic"
        assert ctx.digest(b"abc") == OPENSSL.open(alg, b"").digest(b"abc")
    finally:
        ctx.close()
    assert kat.check_vectors("afalg:sha256-generic", alg,
                             lambda key: AFALG.open(alg, key, "sha256-generic")) == 3


#: What ``afalg:soft`` must find on Debian's 6.1 kernel: the generic C driver of each.
SOFT = ("sha256", "hmac-sha256", "cmac-aes-128", "poly1305", "aes-128-cbc", "aes-128-ctr",
        "aes-128-gcm", "aes-128-xts", "chacha20-poly1305", "des-ede3-cbc", "des-cbc", "bf-cbc",
        "cast5-cbc")


@pytest.mark.parametrize("name", SOFT)
def test_soft_binds_the_generic_c_driver(name: str) -> None:
    alg = catalog.lookup(name)
    assert alg is not None
    kname = kernel_name(alg)
    ctx = AFALG.open(alg, RNG.key(alg), "soft")  # Unsupported here is a failure
    try:
        assert ctx.driver == soft_driver(kname) and "generic" in ctx.driver
        assert ctx.hardware is False
    finally:
        ctx.close()
    assert kat.check_vectors("afalg:soft", alg, lambda key: AFALG.open(alg, key, "soft")) > 0


def test_new_algorithms_are_in_this_kernel() -> None:
    """Debian's 6.1 has every MAC and 64-bit cipher the plugin maps (none silently skipped)."""
    for name in ("hmac-md5", "hmac-sha1", "hmac-sha256", "hmac-sha384", "hmac-sha512",
                 "cmac-aes-128", "poly1305", "des-cbc", "bf-cbc", "cast5-cbc"):
        alg = catalog.lookup(name)
        assert alg is not None
        AFALG.open(alg, RNG.key(alg)).close()


def test_pinned_template_instance_driver() -> None:
    alg = catalog.lookup("aes-128-cbc")
    ctx = open_or_skip(alg, RNG.key(alg), "cbc(aes-generic)")
    try:
        assert ctx.driver == "cbc(aes-generic)"
    finally:
        ctx.close()


def test_unknown_driver_lists_the_drivers_the_kernel_has() -> None:
    with pytest.raises(Unsupported) as info:
        AFALG.open(catalog.lookup("sha256"), b"", "sha256-nonexistent")
    text = str(info.value)
    assert "no hash driver 'sha256-nonexistent'" in text and "sha256-generic (priority 100)" in text


def test_driver_of_another_type_lists_the_drivers_of_this_algorithm() -> None:
    with pytest.raises(Unsupported, match=r"no skcipher driver 'sha256-generic'.*"
                                          r"drivers of cbc\(aes\) here: .*cbc-aes-aesni"):
        AFALG.open(catalog.lookup("aes-128-cbc"), bytes(16), "sha256-generic")


def test_driver_of_another_algorithm_is_refused() -> None:
    with pytest.raises(Unsupported, match="'sha1-generic' implements sha1, not sha256"):
        AFALG.open(catalog.lookup("sha256"), b"", "sha1-generic")


def test_details_list_drivers_with_priorities() -> None:
    lines = AFALG.details()
    line = next(x for x in lines if x.strip().startswith("skcipher cbc(aes) "))
    assert "cbc-aes-aesni (priority 400)" in line
    assert any("hash sha256 [sha256]: " in x and "sha256-generic (priority 100)" in x
               for x in lines)


@pytest.mark.skipif(not os.path.isdir("/run/qcrypto-vm"),
                    reason="unloads a kernel module: only inside the throw-away kernel VM")
def test_zz_missing_socket_type_is_named() -> None:
    """With algif_aead unloaded and module loading off, the reason names the type."""
    with open("/proc/sys/kernel/modprobe") as f:
        modprobe = f.read().strip()
    try:
        with open("/proc/sys/kernel/modprobe", "w") as f:
            f.write("/nonexistent\n")
        done = subprocess.run(["rmmod", "algif_aead"], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot unload algif_aead: {done.stderr.strip()}")
        plugin = AfalgPlugin()
        with pytest.raises(Unsupported, match=r"AF_ALG type 'aead' is not available: bind\(\) "
                                              r"gives \[ENOENT\].*algif_aead"):
            plugin.open(catalog.lookup("aes-128-gcm"), bytes(16))
        plugin.open(catalog.lookup("sha256"), b"").close()  # other types go on
    finally:
        with open("/proc/sys/kernel/modprobe", "w") as f:
            f.write(modprobe + "\n")
        # the kernel loads algif_aead again on the next aead bind
