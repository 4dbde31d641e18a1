"""The memory budget of a measurement: what a KDF's parameters need against what the machine
has free, checked before it runs (a derivation that does not fit would swap the machine to a
halt or wake the OOM killer, not give a figure).

The memory available is ``/proc/meminfo``'s MemAvailable, or what is left under this process's
cgroup memory limit (v2 ``memory.max`` less ``memory.current``, v1 ``memory.limit_in_bytes``
less ``memory.usage_in_bytes``) when that is lower; a measurement may take
:data:`ALLOWED_SHARE` of it, all its ``--qcrypto-jobs`` processes and threads together.
Where none of these can be read (not Linux), nothing is checked.  Nothing here imports pytest.
"""

from __future__ import annotations

import os

from pytest_qcrypto.algorithms.catalog import Algorithm
from pytest_qcrypto.algorithms.kdf_names import memory_advice, memory_needed

#: Where MemAvailable is read, and the cgroup file systems (tests point them elsewhere).
MEMINFO = "/proc/meminfo"
CGROUP_OF_SELF = "/proc/self/cgroup"
CGROUP_ROOT = "/sys/fs/cgroup"
#: The share of the available memory one measurement may take.
ALLOWED_SHARE = 0.5


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read(64).strip()
    except (OSError, ValueError):
        return None
    return int(text) if text.isdigit() and len(text) < 30 else None


def _meminfo() -> int | None:
    try:
        with open(MEMINFO, encoding="ascii", errors="replace") as f:
            for line in f:
                words = line.split()
                if words[:1] == ["MemAvailable:"] and len(words) >= 2 and words[1].isdigit():
                    return int(words[1]) * (1024 if words[2:3] == ["kB"] else 1)
    except OSError:
        pass
    return None


def _cgroup_left() -> int | None:
    """Bytes left under this process's cgroup memory limits (the lowest up its tree), or
    None when no limit is set or none can be read."""
    try:
        with open(CGROUP_OF_SELF, encoding="ascii", errors="replace") as f:
            lines = f.read(65536).splitlines()
    except OSError:
        return None
    left: list[int] = []
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if controllers == "":  # v2
            base, limit_file, used_file = CGROUP_ROOT, "memory.max", "memory.current"
        elif "memory" in controllers.split(","):  # v1
            base = os.path.join(CGROUP_ROOT, "memory")
            limit_file, used_file = "memory.limit_in_bytes", "memory.usage_in_bytes"
        else:
            continue
        parts = [p for p in path.split("/") if p not in ("", ".", "..")]
        for depth in range(len(parts), -1, -1):  # the cgroup, then up to the root of the view
            where = os.path.join(base, *parts[:depth])
            limit, used = (_read_int(os.path.join(where, limit_file)),
                           _read_int(os.path.join(where, used_file)))
            if limit is not None and limit < 2**60:  # "max" or v1's huge number: no limit
                left.append(max(0, limit - (used or 0)))
    return min(left) if left else None


def available() -> int | None:
    """Bytes of memory available to this process now (the lower of MemAvailable and what its
    cgroup limit leaves), or None when neither can be read."""
    figures = [n for n in (_meminfo(), _cgroup_left()) if n is not None]
    return min(figures) if figures else None


def gib(n: float) -> str:
    """``16.0 GiB`` (or MiB below one GiB)."""
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def problem(alg: Algorithm, copies: int = 1) -> str | None:
    """Why ``alg`` cannot be measured in the memory available (``copies`` derivations at once:
    jobs x threads), or None: ``scrypt-n4194304-r32-p16 needs 16.0 GiB; 21.3 GiB available,
    50% allowed: lower N or r``."""
    need = memory_needed(alg.family, alg.params) * max(1, copies) if alg.params else 0
    if need == 0:
        return None
    have = available()
    if have is None or need <= have * ALLOWED_SHARE:
        return None
    each = f" ({copies} at once)" if copies > 1 else ""
    advice = memory_advice(alg.family) + (" or run fewer jobs or threads" if copies > 1 else "")
    return (f"{alg.name} needs {gib(need)}{each}; {gib(have)} available, "
            f"{ALLOWED_SHARE:.0%} allowed: {advice}")
