"""The shared types of crypto plugins: what every backend module builds on.

:class:`CryptoPlugin` (a backend), :class:`Context` (one keyed context),
:class:`Workload` (what one measurement feeds it), :data:`Runner` (the timed loop),
and the errors :class:`Unavailable`, :class:`Unsupported` and
:class:`AuthenticationError`.  Users' ``conftest.py`` files import them from
:mod:`pytest_qcrypto.backends`, which re-exports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from itertools import repeat

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.algorithms.catalog import Algorithm
from pytest_qcrypto.backends import aligned

#: Runs ``count`` operations back to back; the only code inside the timed window.
Runner = Callable[[int], None]


class Unavailable(Exception):
    """The plugin cannot be used on this machine; ``str()`` says why (one line)."""


class Unsupported(Exception):
    """The plugin (or its driver) cannot do this algorithm or this size; ``str()`` says why."""


class AuthenticationError(Exception):
    """An AEAD tag did not verify: the message was rejected, as it must be."""


@dataclass(frozen=True)
class NullRequest:
    """The smallest request an interface takes, to an algorithm that does no work.

    Its time is the interface's own cost per call (system call, copies, the kernel's
    request set-up), shown beside an algorithm's per-call cost
    (:mod:`pytest_qcrypto.measure.interface_cost`).  ``what`` says what one request is
    (``a 1-byte skcipher ecb(cipher_null) request``); ``run(count)`` makes ``count``
    requests back to back; ``close()`` releases what they used.
    """

    what: str
    run: Runner
    close: Callable[[], None]


@dataclass(frozen=True)
class Workload:
    """What one measurement feeds a context.

    ``data`` is the plaintext buffer (``size`` bytes).  ``iv`` is the cipher IV
    (empty for ECB and digests).  AEADs take one nonce per operation from
    ``nonces`` (cycled) and ``aad`` (empty unless a grid asks for one: 13 bytes under
    ``--qcrypto-size=tls``, as ``openssl speed -aead``).  When ``decrypt`` is true,
    ``ciphertext`` is what the loop decrypts: for ciphers ``data`` encrypted
    under ``iv``, for AEADs ``data`` sealed under ``nonces[0]`` (ciphertext
    followed by the tag), and every operation uses ``nonces[0]``.  A round trip
    (:meth:`Context.roundtrip_runner`) gets ``ciphertext`` as a decryption does.
    """

    data: bytes
    iv: bytes = b""
    nonces: tuple[bytes, ...] = ()
    decrypt: bool = False
    ciphertext: bytes = b""
    #: the direction timed, for the kinds without a buffer size (``sign``, ``verify``,
    #: ``keygen``, ``derive``, ``encaps``, ``decaps``, ``encrypt``, ``decrypt``): then ``data``
    #: is the 32-byte message (signatures, RSA encryption) or the 16-byte password and ``iv``
    #: the 16-byte salt (KDFs), and the other fields are empty
    operation: str = ""
    #: the AAD every AEAD operation authenticates (sealed into ``ciphertext`` too); only
    #: given to a context whose :attr:`Context.takes_aad` is true
    aad: bytes = b""
    #: ``--qcrypto-misalign=N``: ``data`` and ``ciphertext`` start N bytes past a 64-byte
    #: boundary (:mod:`.aligned`), and so must the outputs (:meth:`output`); None: anywhere.
    #: Only given to a context whose :attr:`Context.places_buffers` is true.
    misalign: int | None = None
    #: ``--qcrypto-update-size=N`` (digests and MACs): ``data`` is fed in N-byte ``update()``
    #: calls, the last one shorter (:meth:`pieces`); None: one ``update()``.  Only given to a
    #: context whose :attr:`Context.feeds_pieces` is true.
    update_size: int | None = None

    def pieces(self) -> list[memoryview]:
        """``data`` cut in :attr:`update_size`-byte slices (views, no copy; one slice when
        None), in order."""
        view, step = memoryview(self.data), self.update_size or len(self.data) or 1
        return [view[i:i + step] for i in range(0, len(view), step)]

    @property
    def size(self) -> int:
        """Buffer size in bytes."""
        return len(self.data)

    def output(self, n: int) -> bytearray | memoryview:
        """A writable ``n``-byte output buffer for the timed loop, placed as :attr:`misalign`
        asks (a plain ``bytearray`` when it is None)."""
        return bytearray(n) if self.misalign is None else aligned.placed(n, self.misalign)


class Context:
    """One keyed context of one algorithm in one plugin.

    One-shot methods (used for known-answer tests and round trips; each call is
    independent of earlier calls):

    * digests: :meth:`digest`;
    * ciphers: :meth:`encrypt` / :meth:`decrypt` with an IV;
    * AEADs: :meth:`encrypt` returns ciphertext followed by the tag, and
      :meth:`decrypt` takes that and raises :class:`AuthenticationError` when
      the tag does not verify;
    * MACs: :meth:`mac` returns the tag of ``data`` under the context's key.

    The public-key kinds (no buffer size) keep a key pair made when the context is opened
    (or set by :meth:`load_private`); keys, signatures and ciphertexts cross between plugins
    as bytes in the standards' encodings (see :meth:`public_key`):

    * signatures: :meth:`sign`, :meth:`verify` (and :meth:`generate_key_pair` in a plugin
      that declares :attr:`CryptoPlugin.generates_signature_keys`);
    * key agreement: :meth:`agree`;
    * KEMs: :meth:`encapsulate`, :meth:`decapsulate`;
    * RSA encryption: :meth:`public_encrypt`, :meth:`private_decrypt`;
    * KDFs (no key pair): :meth:`derive_key`.

    :meth:`runner` returns the timed loop.  ``driver`` names the implementation
    that did the work when the plugin can tell (a kernel driver), and
    ``hardware`` says whether it runs off the CPU (None: unknown).
    """

    driver: str | None = None
    hardware: bool | None = None
    #: whether :meth:`runner` authenticates :attr:`Workload.aad` (an AEAD whose timed loop
    #: passes it); a context without it is skipped under a grid that gives an AAD
    takes_aad: bool = False
    #: whether :meth:`runner` times the buffers where :attr:`Workload.misalign` put them: its
    #: input as given (not copied) and its outputs from :meth:`Workload.output`; a context
    #: without it is skipped under ``--qcrypto-misalign``
    places_buffers: bool = False
    #: whether :meth:`runner` feeds a digest or MAC in :meth:`Workload.pieces` when
    #: :attr:`Workload.update_size` is set (:func:`piecewise_runner`); a context without it
    #: is skipped under ``--qcrypto-update-size``
    feeds_pieces: bool = False

    def __init__(self, algorithm: Algorithm, key: bytes) -> None:
        self.algorithm = algorithm
        self.key = key

    def digest(self, data: bytes) -> bytes:
        raise Unsupported(f"{self.algorithm.name} is not a digest")

    def encrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        raise Unsupported(f"{self.algorithm.name} is not a cipher")

    def mac(self, data: bytes) -> bytes:
        """The MAC (tag, ``algorithm.tag_size`` bytes) of ``data`` under this context's key."""
        raise Unsupported(f"{self.algorithm.name} is not a MAC")

    def decrypt(self, iv: bytes, data: bytes, aad: bytes = b"") -> bytes:
        raise Unsupported(f"{self.algorithm.name} is not a cipher")

    # -- the public-key kinds and KDFs ---------------------------------------------------

    def public_key(self) -> bytes:
        """This context's public key: raw for Ed25519/Ed448/X25519/X448 (RFC 8032, RFC 7748),
        the SEC1 uncompressed point for P-256/P-384, DER SubjectPublicKeyInfo for RSA, the
        FIPS 203/204 encoding for ML-KEM (encapsulation key) and ML-DSA."""
        raise Unsupported(f"{self.algorithm.name} has no public key")

    def load_private(self, private: bytes) -> None:
        """Replace the key pair by the one of ``private`` (known-answer checks): the 32- or
        57-byte seed of Ed25519/Ed448 (RFC 8032), the scalar of X25519/X448 (RFC 7748), the
        64-byte seed d || z of ML-KEM (FIPS 203), the 32-byte seed xi of ML-DSA (FIPS 204),
        DER PKCS#8 for RSA and ECDSA.  :class:`Unsupported` when the library cannot."""
        raise Unsupported(f"{self.algorithm.name}: this plugin cannot load a private key")

    def sign(self, message: bytes) -> bytes:
        """A signature of ``message`` with this context's private key (ECDSA: DER-encoded;
        RSA: PSS or PKCS#1 v1.5 over the message's SHA-256 digest, as the algorithm says)."""
        raise Unsupported(f"{self.algorithm.name} is not a signature")

    def verify(self, public_key: bytes, message: bytes, signature: bytes) -> bool:
        """Whether ``signature`` of ``message`` verifies under ``public_key`` (False when it
        does not, never an exception for a bad signature)."""
        raise Unsupported(f"{self.algorithm.name} is not a signature")

    def generate_key_pair(self) -> None:
        """Replace the key pair by a new one made as one timed ``keygen`` operation of
        :meth:`runner` makes it (signatures, in a plugin that declares
        :attr:`CryptoPlugin.generates_signature_keys`): before a keygen cell is timed, the
        new key must differ from the one before, sign a message and verify its signature."""
        raise Unsupported(f"{self.algorithm.name}: this plugin does not generate signature keys")

    def agree(self, peer_public: bytes) -> bytes:
        """The shared secret of this context's private key and ``peer_public`` (raw X25519 /
        X448 output, the ECDH x coordinate)."""
        raise Unsupported(f"{self.algorithm.name} is not a key agreement")

    def encapsulate(self, public_key: bytes) -> tuple[bytes, bytes]:
        """``(ciphertext, shared secret)`` encapsulated to ``public_key`` (FIPS 203)."""
        raise Unsupported(f"{self.algorithm.name} is not a KEM")

    def decapsulate(self, ciphertext: bytes) -> bytes:
        """The shared secret of ``ciphertext`` under this context's private key (FIPS 203:
        a ciphertext that was tampered with gives an unrelated secret, not an error)."""
        raise Unsupported(f"{self.algorithm.name} is not a KEM")

    def public_encrypt(self, public_key: bytes, plaintext: bytes) -> bytes:
        """``plaintext`` encrypted to ``public_key`` (RSA-OAEP, SHA-256, MGF1-SHA-256)."""
        raise Unsupported(f"{self.algorithm.name} is not a public-key encryption")

    def private_decrypt(self, ciphertext: bytes) -> bytes:
        """``ciphertext`` decrypted with this context's private key; raises
        :class:`AuthenticationError` when it does not decrypt."""
        raise Unsupported(f"{self.algorithm.name} is not a public-key encryption")

    def derive_key(self, password: bytes, salt: bytes, *, secret: bytes = b"",
                   associated_data: bytes = b"") -> bytes:
        """The key (``algorithm.digest_size`` bytes) derived from ``password`` and ``salt``
        with the algorithm's parameters (``algorithm.params``); HKDF takes ``password`` as
        its input key material and an empty info.  ``secret`` and ``associated_data`` are
        Argon2's optional inputs K and X (RFC 9106 section 3.1; its known answer uses
        them): a plugin that cannot take them raises :class:`Unsupported` when they are
        not empty, and every other KDF rejects them that way too.  bcrypt's key is the
        23-byte hash decoded from its modular-crypt string."""
        raise Unsupported(f"{self.algorithm.name} is not a KDF")

    def runner(self, work: Workload) -> Runner:
        """The timed loop for ``work``: a callable that runs ``count`` operations.

        For the kinds without a buffer size, ``work.operation`` says which; what it needs
        beyond ``work.data`` (a signature to verify, a peer's public key, a ciphertext to
        decapsulate or decrypt) the context makes here, before the loop, in its own library.
        """
        raise NotImplementedError

    def roundtrip_runner(self, work: Workload) -> Runner:
        """The timed loop of a round trip (``--qcrypto-roundtrip``, FreeBSD cryptotest's
        iteration): ``count`` iterations of one encryption of ``work.data`` and one
        decryption of ``work.ciphertext`` (AEADs: a fresh nonce from ``work.nonces`` for the
        encryption; the decryption verifies the tag, as :meth:`runner` does for ``decrypt``).

        The default composes this context's own encrypt and decrypt runners, one operation
        of each per iteration.  A plugin may override it with a tighter loop; one whose two
        runners cannot be interleaved on one context (they share a socket or a session
        whose direction is set once) must.
        """
        encrypt = self.runner(replace(work, decrypt=False))
        decrypt = self.runner(replace(work, decrypt=True))

        def run(count: int, encrypt: Runner = encrypt, decrypt: Runner = decrypt) -> None:
            for _ in repeat(None, count):
                encrypt(1)
                decrypt(1)

        return run

    def close(self) -> None:
        """Release what the context holds (a session, a socket).  Safe to call twice."""


def piecewise_runner(new: Callable[[], object], work: Workload, finish: str = "digest") -> Runner:
    """The timed loop of a digest or MAC fed in pieces (``--qcrypto-update-size``, as the
    kernel's tcrypt varies the bytes per update): per operation, a fresh state from ``new()``,
    one ``update()`` per slice of :meth:`Workload.pieces`, then its ``finish`` method
    (``digest``, ``finalize``)."""
    pieces = work.pieces()

    def run(count: int) -> None:
        for _ in repeat(None, count):
            state: object = new()
            update = state.update  # type: ignore[attr-defined]
            for piece in pieces:
                update(piece)
            getattr(state, finish)()

    return run


def call_loop(call: Callable[..., object], *args: object) -> Runner:
    """A runner that calls ``call(*args)`` ``count`` times (the arguments bound once, in C
    by :func:`functools.partial`): the loop of the public-key and KDF contexts, whose one
    operation (tens of microseconds and more) dwarfs the partial's tens of nanoseconds."""
    op = partial(call, *args) if args else call

    def run(count: int, op: Callable[[], object] = op) -> None:
        for _ in repeat(None, count):
            op()

    return run


class CryptoPlugin:
    """A crypto backend, known to the user by ``name`` (and ``aliases``).

    Subclasses set ``name``, ``library`` and ``description`` (built-in plugins also
    ``default_rank``) and implement
    :meth:`probe`, :meth:`version`, :meth:`supported` and :meth:`open`.  Library
    imports belong inside those methods, so that a test run that never asks
    for this plugin never imports its library.  ``variant`` is what follows a
    colon in the typed name (``afalg:sha256-generic``), for plugins that pin a
    driver; others reject it in :meth:`open`.
    """

    name: str = ""
    aliases: tuple[str, ...] = ()
    #: Where a built-in plugin stands in the default order (smaller first): with no
    #: ``--qcrypto-plugin``, the first available built-in plugin is measured.
    default_rank: int = 1000
    library: str = ""
    description: str = ""
    #: Why this plugin's work happens outside the Python process (a kernel, a device), in a
    #: few words; ``--qcrypto-measure=instructions`` refuses the plugin with it.  Empty: the
    #: work runs in the process, where its instructions can be counted.
    outside_process: str = ""
    #: Whether its signature contexts time ``keygen`` (one key pair per operation, ready to
    #: sign with: openssl speed 3.5's keygen/s) beside ``sign`` and ``verify``: their
    #: :meth:`Context.runner` takes ``Workload.operation == "keygen"`` and their
    #: :meth:`Context.generate_key_pair` makes a key the same way (checked before timing).
    #: False (the default): its signatures have no keygen cell, no column and no skip.
    #: RSA never has one (:attr:`~pytest_qcrypto.algorithms.catalog.Algorithm.directions`).
    generates_signature_keys: bool = False

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"

    def probe(self) -> None:
        """Raise :class:`Unavailable` with the reason if this plugin cannot run here."""

    def version(self) -> str:
        """The library (and version) doing the work, e.g. ``OpenSSL 3.0.13 30 Jan 2024``."""
        return ""

    def supported(self) -> frozenset[str]:
        """Canonical catalog names this plugin can do, asked of the library."""
        return frozenset()

    def implementation(self, algorithm: Algorithm) -> str:
        """Which code does ``algorithm`` in this plugin, in a few words (``CPython's _blake2``).

        Shown in ``--qcrypto-list`` and saved for each measured algorithm in a
        results file (``plugins.NAME.implementations``).  The default is
        :meth:`version` (else :attr:`library`): override it when one plugin's
        algorithms come from different code, as hashlib's BLAKE2 (CPython's own)
        and SHA-2 (OpenSSL's) do.  It may raise as :meth:`version` may; callers
        show ``unknown (the error)`` instead.
        """
        return self.version() or self.library or self.name

    def open(self, algorithm: Algorithm, key: bytes, variant: str | None = None) -> Context:
        """A keyed context; raises :class:`Unsupported` or :class:`Unavailable` with a reason."""
        raise NotImplementedError

    def details(self) -> list[str]:
        """Extra lines for ``--qcrypto-list`` (drivers, priorities); none by default."""
        return []

    def why_unsupported(self, name: str) -> str:
        """Why catalog algorithm ``name``, not in :meth:`supported`, is not, in a few words
        (the kernel plugins: what the kernel said when asked); ``""`` when unknown."""
        return ""

    def null_request(self) -> NullRequest | None:
        """A :class:`NullRequest` to time the interface's own cost per call (the kernel
        plugins); None (the default): the plugin has no interface of its own to time, and
        nothing is shown.  Raises :class:`Unsupported` saying why when it has one but this
        machine refuses it (a device without a null cipher)."""
        return None


def implementation_text(plugin: CryptoPlugin, name: str) -> str:
    """``plugin.implementation`` of catalog algorithm ``name``, never raising.

    A plugin whose method raises gets ``unknown (ErrorType: message)``, as
    :meth:`CryptoPlugin.version` does where it is shown.
    """
    alg = catalog.lookup(name)
    if alg is None:
        return f"unknown (no catalog algorithm {name!r})"
    try:
        return str(plugin.implementation(alg))
    except Exception as exc:  # a third-party plugin must not break a listing or a save
        return f"unknown ({type(exc).__name__}: {exc})"


def describe_implementations(implementations: dict[str, str]) -> str:
    """``blake2b512, blake2s256 from CPython's _blake2; the others from OpenSSL 3.0.19``.

    ``implementations`` maps algorithm names to :meth:`CryptoPlugin.implementation`
    texts.  Algorithms are grouped by text; the largest group (the first of
    equals) is named last as "the others", or "all" when there is one group
    (an empty mapping gives "").
    """
    groups: dict[str, list[str]] = {}
    for name, text in implementations.items():
        groups.setdefault(text, []).append(name)
    if len(groups) <= 1:
        return "".join(f"all from {text}" for text in groups)
    largest = max(groups, key=lambda text: len(groups[text]))
    parts = [f"{', '.join(names)} from {text}" for text, names in groups.items()
             if text != largest]
    return "; ".join(parts + [f"the others from {largest}"])
