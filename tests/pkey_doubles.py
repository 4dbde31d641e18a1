"""Test doubles for the size-less kinds (signatures, KEMs, KDFs): conftest texts of crypto
plugins made of pyca/cryptography calls, and a stand-in for ``pkey_checks.check``."""

from pytest_qcrypto.checks.known_answers import KnownAnswerError

#: A conftest adding ``doubleplug`` (ed25519, x25519, ml-kem-768, hkdf-sha256 with
#: pyca/cryptography) and ``peerplug`` (ed25519 the same way; BAD_SIGNATURE=1 in its
#: environment makes it sign with the wrong key), and ``slowplug`` whose ed25519 sign
#: sleeps SLOW_S seconds per operation.
PKEY_PLUGINS = '''
import os, time
from itertools import repeat
from cryptography.hazmat.primitives.asymmetric import ed25519, x25519
try:  # pyca 46 and later; the minimum-versions job runs pyca 35
    from cryptography.hazmat.primitives.asymmetric import mlkem
except ImportError:
    mlkem = None
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from pytest_qcrypto.backends import Context, CryptoPlugin

RAW = dict(encoding=__import__("cryptography.hazmat.primitives.serialization",
                                fromlist=["Encoding"]).Encoding.Raw,
           format=__import__("cryptography.hazmat.primitives.serialization",
                             fromlist=["PublicFormat"]).PublicFormat.Raw)

class PkeyContext(Context):
    slow = 0.0
    def __init__(self, algorithm, key, wrong=False):
        super().__init__(algorithm, key)
        name = algorithm.name
        if name == "ed25519":
            self.priv = ed25519.Ed25519PrivateKey.generate()
            self.other = ed25519.Ed25519PrivateKey.generate() if wrong else self.priv
        elif name == "x25519":
            self.priv = x25519.X25519PrivateKey.generate()
        elif name == "ml-kem-768":
            self.priv = mlkem.MLKEM768PrivateKey.generate()
    def public_key(self):
        pub = self.priv.public_key()
        return pub.public_bytes_raw() if hasattr(pub, "public_bytes_raw") else pub.public_bytes(**RAW)
    def sign(self, message):
        return self.other.sign(message)
    def verify(self, public_key, message, signature):
        try:
            ed25519.Ed25519PublicKey.from_public_bytes(public_key).verify(signature, message)
            return True
        except Exception:
            return False
    def encapsulate(self, public_key):
        secret, ct = mlkem.MLKEM768PublicKey.from_public_bytes(public_key).encapsulate()
        return ct, secret  # pyca returns (shared secret, ciphertext)
    def decapsulate(self, ciphertext):
        return self.priv.decapsulate(ciphertext)
    def agree(self, peer_public):
        return self.priv.exchange(x25519.X25519PublicKey.from_public_bytes(peer_public))
    def derive_key(self, password, salt):
        return HKDF(hashes.SHA256(), 32, salt, b"").derive(password)
    def runner(self, work):
        op, msg, name = work.operation, work.data, self.algorithm.name
        slow = self.slow
        if name == "ed25519" and op == "sign":
            def run(count):
                for _ in repeat(None, count):
                    self.priv.sign(msg)
                    if slow:
                        time.sleep(slow)
            return run
        if name == "ed25519" and op == "verify":
            pub, sig = self.priv.public_key(), self.priv.sign(msg)
            def run(count):
                for _ in repeat(None, count):
                    pub.verify(sig, msg)
            return run
        if op == "keygen":
            gen = {"ed25519": ed25519.Ed25519PrivateKey, "x25519": x25519.X25519PrivateKey,
                   "ml-kem-768": mlkem and mlkem.MLKEM768PrivateKey}[name].generate
            def run(count):
                for _ in repeat(None, count):
                    gen()
            return run
        if op == "derive" and name == "x25519":
            peer = x25519.X25519PrivateKey.generate().public_key()
            def run(count):
                for _ in repeat(None, count):
                    self.priv.exchange(peer)
            return run
        if op == "derive":
            def run(count):
                for _ in repeat(None, count):
                    self.derive_key(msg, work.iv)
            return run
        pub = self.priv.public_key()
        _, ct = pub.encapsulate()
        if op == "encaps":
            def run(count):
                for _ in repeat(None, count):
                    pub.encapsulate()
            return run
        def run(count):
            for _ in repeat(None, count):
                self.priv.decapsulate(ct)
        return run

class DoublePlug(CryptoPlugin):
    name = "doubleplug"
    library = "pyca/cryptography, from a conftest"
    def supported(self):
        return frozenset({"ed25519", "x25519", "hkdf-sha256"} | ({"ml-kem-768"} if mlkem else set()))
    def open(self, algorithm, key, variant=None):
        return PkeyContext(algorithm, key)

class PeerPlug(CryptoPlugin):
    name = "peerplug"
    library = "pyca/cryptography, from a conftest"
    def supported(self):
        return frozenset({"ed25519"})
    def open(self, algorithm, key, variant=None):
        return PkeyContext(algorithm, key, wrong=os.environ.get("BAD_SIGNATURE") == "1")

class SlowContext(PkeyContext):
    slow = float(os.environ.get("SLOW_S", "0"))

class SlowPlug(CryptoPlugin):
    name = "slowplug"
    library = "pyca/cryptography and time.sleep, from a conftest"
    def supported(self):
        return frozenset({"ed25519"})
    def open(self, algorithm, key, variant=None):
        return SlowContext(algorithm, key)

def pytest_qcrypto_plugins():
    return [DoublePlug(), PeerPlug(), SlowPlug()]
'''


def double_check(typed, alg, open_context, peers):
    """A stand-in for ``pytest_qcrypto.checks.pkey_checks.check``: for ed25519, a signature made by
    ``typed`` must verify in every peer (as the real one's cross-plugin check); KEMs: the peer
    decapsulates ``typed``'s ciphertext to the same secret.  Records its calls in CALLS."""
    CALLS.append((typed, alg.name, tuple(name for name, _ in peers)))
    ctx = open_context(alg)
    try:
        for name, opener in peers:
            peer = opener(alg)
            try:
                if alg.name == "ed25519":
                    message = b"m" * 32
                    if not peer.verify(ctx.public_key(), message, ctx.sign(message)):
                        raise KnownAnswerError(
                            f"{typed} ed25519: cross-plugin check: {name} rejects {typed}'s "
                            "signature")
            finally:
                peer.close()
    finally:
        ctx.close()


CALLS: list = []


#: A conftest with a fake clock and ``clockplug``: ed25519 signs in 50 us and verifies in
#: 125 us, ml-kem-768 keygen 40 us, encaps 25 us, decaps 30 us, scrypt (N=16384) derives in
#: 0.25 s, every time multiplied by the number in the environment's QSLOW (default 1).
CLOCK_PLUGIN = '''
import os, time
from pytest_qcrypto.backends import Context, CryptoPlugin

CLOCK = {"wall": 0, "cpu": 0}
SAVED = {}
COST_NS = {("ed25519", "sign"): 50_000, ("ed25519", "verify"): 125_000,
           ("ml-kem-768", "keygen"): 40_000, ("ml-kem-768", "encaps"): 25_000,
           ("ml-kem-768", "decaps"): 30_000, ("scrypt-n16384-r8-p1", "derive"): 250_000_000,
           ("scrypt-n1024-r8-p1", "derive"): 1_000_000}

def pytest_configure(config):
    SAVED.update(wall=time.perf_counter_ns, cpu=time.process_time_ns)
    time.perf_counter_ns = lambda: CLOCK["wall"]
    time.process_time_ns = lambda: CLOCK["cpu"]

def pytest_unconfigure(config):
    time.perf_counter_ns, time.process_time_ns = SAVED["wall"], SAVED["cpu"]

class Timed(Context):
    def runner(self, work):
        cost = COST_NS[(self.algorithm.name, work.operation)] * float(os.environ.get("QSLOW", "1"))
        assert len(work.data) == (16 if self.algorithm.name.startswith("scrypt") else 32)
        def run(count):
            CLOCK["wall"] += round(count * cost)
            CLOCK["cpu"] += round(count * cost)
        return run

class ClockPlug(CryptoPlugin):
    name = "clockplug"
    library = "a fake clock"
    def supported(self):
        return frozenset({"ed25519", "ml-kem-768", "scrypt-n16384-r8-p1", "sha256"})
    def open(self, algorithm, key, variant=None):
        return Timed(algorithm, key)

def pytest_qcrypto_plugins():
    return [ClockPlug()]
'''


def no_check(typed, alg, open_context, peers):
    """A ``pkey_checks.check`` that checks nothing (for the fake clock's plugin), recording
    its calls in CALLS."""
    CALLS.append((typed, alg.name, tuple(name for name, _ in peers)))
