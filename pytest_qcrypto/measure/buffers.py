"""How a cell's buffers are laid out beyond their size: the AEAD's AAD of a named grid, their
place in memory (``--qcrypto-misalign``) and a digest's or MAC's bytes per ``update()``
(``--qcrypto-update-size``: the buffer fed in N-byte calls, the last one shorter, as the
kernel's tcrypt varies the bytes per update; a fresh state each operation).

``--qcrypto-size=tls`` gives every AEAD a 13-byte AAD beside each record, as
``openssl speed -aead`` does (:mod:`pytest_qcrypto.algorithms.size_grids`).
``--qcrypto-misalign=N`` (0 to 63) puts the input buffer (and a decryption's ciphertext) N
bytes past a 64-byte boundary, and the plugin puts its outputs there too
(:meth:`Workload.output <pytest_qcrypto.backends.base.Workload.output>`), as
``openssl speed -misalign N`` does (:mod:`pytest_qcrypto.backends.aligned`).  A plugin's
context says whether its timed loop does each (:attr:`Context.takes_aad
<pytest_qcrypto.backends.base.Context.takes_aad>`, ``places_buffers``); :func:`problem` turns
one that does not into a skipped cell with the reason, never a figure without it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pytest_qcrypto.algorithms.catalog import DIGEST, MAC, Algorithm
from pytest_qcrypto.algorithms.settings import MAX_SIZE, SettingsError, whole_number
from pytest_qcrypto.backends.aligned import MAX_MISALIGN, placed_copy
from pytest_qcrypto.backends.base import Workload

#: The kinds ``--qcrypto-update-size`` feeds in pieces: digests and MACs.
PIECEWISE = (DIGEST, MAC)


def problem(context: Any, alg: Algorithm, aad: int, misalign: int | None = None,
            update_size: int | None = None) -> str | None:
    """Why ``context`` cannot time ``alg`` with ``aad`` bytes of AAD (0: none; only AEADs take
    one), buffers placed ``misalign`` bytes past a 64-byte boundary (None: anywhere) and a
    digest or MAC fed ``update_size`` bytes an ``update()`` (None: at once; other kinds
    ignore it), or None."""
    if context is None:
        return None
    if update_size and alg.kind in PIECEWISE and not getattr(context, "feeds_pieces", False):
        return (f"this plugin's timed loop feeds the buffer at once; --qcrypto-update-size="
                f"{update_size} cannot be measured with it")
    if aad and alg.rules.nonce_per_operation and not getattr(context, "takes_aad", False):
        return (f"this plugin's timed loop takes no AAD; the {aad}-byte AAD of the tls grid "
                "(openssl speed -aead) cannot be measured with it")
    if misalign is not None and not getattr(context, "places_buffers", False):
        return (f"this plugin's timed loop does not time buffers where qcrypto places them; "
                f"--qcrypto-misalign={misalign} cannot be measured with it")
    return None


def shaped(work: Workload, misalign: int | None, update_size: int | None = None) -> Workload:
    """``work`` with its data and ciphertext copied ``misalign`` bytes past a 64-byte boundary
    (:func:`pytest_qcrypto.backends.aligned.placed_copy`; None: as they are) and, for a digest
    or MAC, its ``update_size``; ``work`` itself when neither is given."""
    if update_size and not work.nonces and not work.iv:  # (only digest and MAC loops read it)
        work = replace(work, update_size=update_size)
    if misalign is None:
        return work
    return replace(work, data=placed_copy(work.data, misalign),
                   ciphertext=placed_copy(work.ciphertext, misalign), misalign=misalign)


def parse_update_size(text: object, where: str = "--qcrypto-update-size") -> int:
    """Bytes per ``update()`` of a digest or MAC, 1 to :data:`~pytest_qcrypto.algorithms.settings.MAX_SIZE`."""
    return whole_number(text, where, 1, MAX_SIZE, noun="a whole number of bytes")


def parse_misalign(text: object, where: str = "--qcrypto-misalign") -> int:
    """Bytes past a 64-byte boundary, 0 to 63 (openssl speed's ``MAX_MISALIGNMENT``)."""
    try:
        return whole_number(text, where, 0, MAX_MISALIGN, noun="a whole number of bytes")
    except SettingsError as exc:
        raise SettingsError(f"{exc} (0 to {MAX_MISALIGN}: bytes past a 64-byte boundary)") \
            from None
