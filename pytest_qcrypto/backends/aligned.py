"""Buffers placed at a chosen distance past a 64-byte boundary (``--qcrypto-misalign=N``).

``openssl speed -misalign N`` (apps/speed.c, ``MAX_MISALIGNMENT`` 63) shifts its input and
output buffers N bytes past an aligned address, to find code whose unaligned path is slow.
Python puts a ``bytes`` object's data wherever its allocator did (CPython: 32 bytes into a
16-byte aligned object), so qcrypto places the buffers itself: :func:`placed` is a writable
``memoryview`` of ``n`` bytes whose first byte's address is ``N`` past a multiple of 64,
carved from a ``bytearray`` with room to spare (the view keeps it alive).  A plugin's context
whose timed loop takes such buffers (input as given, output from :meth:`Workload.output
<pytest_qcrypto.backends.base.Workload.output>`) says so with ``places_buffers = True``.
"""

from __future__ import annotations

import ctypes
from typing import Any

#: The boundary buffers are placed against, bytes (a cache line; openssl speed's ``MISALIGN``).
ALIGNMENT = 64
#: The largest distance past it (openssl speed's ``MAX_MISALIGNMENT``).
MAX_MISALIGN = ALIGNMENT - 1


def address(buffer: Any) -> int:
    """The address of the first byte of a writable buffer (``bytearray``, ``memoryview``)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(buffer))


def placed(n: int, misalign: int) -> memoryview:
    """A zeroed writable ``n``-byte buffer (``n`` >= 1) starting ``misalign`` (0 to 63)
    bytes past a 64-byte boundary; ``ValueError`` outside those."""
    if not 0 <= misalign <= MAX_MISALIGN or n < 1:
        raise ValueError(f"misalign must be 0 to {MAX_MISALIGN} and n at least 1, not "
                         f"{misalign} and {n}")
    raw = bytearray(n + 2 * ALIGNMENT)
    start = (-address(raw)) % ALIGNMENT + misalign
    return memoryview(raw)[start:start + n]


def placed_copy(data: bytes, misalign: int | None) -> Any:
    """``data`` copied into a :func:`placed` buffer; ``data`` itself when ``misalign`` is None
    (or ``data`` is empty)."""
    if misalign is None or not data:
        return data
    view = placed(len(data), misalign)
    view[:] = data
    return view
