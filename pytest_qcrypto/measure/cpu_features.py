"""Which crypto-relevant CPU features a process sees: by ``CPUID`` (as the code runs) and by
``/proc/cpuinfo`` (what the kernel reports for the host CPU).

Under valgrind the ``CPUID`` instruction is answered by valgrind's own CPU model, which
leaves out what it cannot emulate (valgrind 3.19: AVX-512, and SHA-NI on the AMD CPUs the
project runs on), so a library that picks its code path by ``CPUID`` (OpenSSL does) takes
another path there than natively.  :func:`seen` asks ``CPUID`` itself (x86-64 Linux only:
a few bytes of machine code run through ``ctypes``); :func:`host` reads the flags line of
``/proc/cpuinfo``.  Both return the names of :data:`CRYPTO_FLAGS` present, in that order.
"""

from __future__ import annotations

import ctypes
import mmap
import os
from pathlib import Path

#: The flags that decide a crypto library's code path, by their ``/proc/cpuinfo`` names,
#: with their ``CPUID`` place: (leaf, register, bit); leaf 7 is sub-leaf 0.
CRYPTO_FLAGS: dict[str, tuple[int, str, int]] = {
    "sse4_1": (1, "ecx", 19), "sse4_2": (1, "ecx", 20), "ssse3": (1, "ecx", 9),
    "pclmulqdq": (1, "ecx", 1), "aes": (1, "ecx", 25), "avx": (1, "ecx", 28),
    "avx2": (7, "ebx", 5), "bmi2": (7, "ebx", 8), "adx": (7, "ebx", 19),
    "sha_ni": (7, "ebx", 29), "avx512f": (7, "ebx", 16), "avx512bw": (7, "ebx", 30),
    "avx512vl": (7, "ebx", 31), "gfni": (7, "ecx", 8), "vaes": (7, "ecx", 9),
    "vpclmulqdq": (7, "ecx", 10),
}

# void cpuid(uint32 leaf, uint32 subleaf, uint32 out[4]) for the System V x86-64 ABI:
# push rbx; mov r8, rdx; mov eax, edi; mov ecx, esi; cpuid;
# mov [r8], eax; mov [r8+4], ebx; mov [r8+8], ecx; mov [r8+12], edx; pop rbx; ret
_CPUID_CODE = bytes.fromhex("534989d089f889f10fa241890041895804418948084189500c5bc3")
_REGISTERS = ("eax", "ebx", "ecx", "edx")


def _cpuid(leaf: int) -> dict[str, int]:
    buf = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    try:
        buf.write(_CPUID_CODE)
        address = ctypes.addressof(ctypes.c_char.from_buffer(buf))
        out = (ctypes.c_uint32 * 4)()
        fn = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32,
                              ctypes.POINTER(ctypes.c_uint32))(address)
        fn(leaf, 0, out)
        del fn
        return dict(zip(_REGISTERS, out))
    finally:
        try:
            buf.close()
        except BufferError:  # a ctypes view still holds it: left to the garbage collector
            pass


def seen() -> tuple[str, ...] | None:
    """The :data:`CRYPTO_FLAGS` that ``CPUID`` reports to this process (under valgrind: its
    CPU model's); None where it cannot be asked (not x86-64 Linux, no executable memory)."""
    machine = os.uname()  # not platform: a counting process would import it under valgrind
    if machine.machine.lower() not in ("x86_64", "amd64") or machine.sysname != "Linux":
        return None
    try:
        leaves = {1: _cpuid(1), 7: _cpuid(7) if _cpuid(0)["eax"] >= 7 else {}}
    except (OSError, ValueError, TypeError):
        return None
    return tuple(name for name, (leaf, reg, bit) in CRYPTO_FLAGS.items()
                 if leaves[leaf].get(reg, 0) >> bit & 1)


def host(cpuinfo: Path = Path("/proc/cpuinfo")) -> tuple[str, ...] | None:
    """The :data:`CRYPTO_FLAGS` of the first ``flags`` line of ``/proc/cpuinfo`` (what the
    kernel says the CPU has); None without one (not Linux, not x86)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            flags = set(value.split())
            return tuple(name for name in CRYPTO_FLAGS if name in flags)
    return None
