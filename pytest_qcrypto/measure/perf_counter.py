"""User-space instruction counts from the CPU's PMU: ``perf_event_open`` through ``ctypes``.

``instructions:u`` (``PERF_TYPE_HARDWARE``, ``PERF_COUNT_HW_INSTRUCTIONS``, kernel and
hypervisor excluded) of the calling thread.  Linux x86-64 and arm64 only.  Many virtual
machines have no PMU (the project's development VM answers ``ENOENT``): :func:`problem`
then says so and counting falls back to valgrind (:mod:`pytest_qcrypto.measure.counting`).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import struct

#: ``__NR_perf_event_open`` per machine.
SYSCALLS = {"x86_64": 298, "amd64": 298, "aarch64": 241, "arm64": 241}
_ENABLE, _DISABLE, _RESET = 0x2400, 0x2401, 0x2403
#: ``perf_event_attr`` flag bits: disabled, exclude_kernel, exclude_hv.
_FLAGS = 1 | 1 << 5 | 1 << 6
_ATTR_SIZE = 112


def open_counter(config: int = 1) -> int:
    """A file descriptor counting this thread's user-space instructions (``config`` 1,
    ``PERF_COUNT_HW_INSTRUCTIONS``; 0 counts cycles, ``PERF_COUNT_HW_CPU_CYCLES``), disabled;
    ``OSError`` with the kernel's errno when there is none."""
    nr = SYSCALLS.get(platform.machine().lower())
    if nr is None or platform.system() != "Linux":
        raise OSError(0, f"perf_event_open is not known on {platform.system()} "
                         f"{platform.machine()}")
    attr = ctypes.create_string_buffer(struct.pack("=IIQQQQQ", 0, _ATTR_SIZE, config, 0, 0, 0,
                                                   _FLAGS).ljust(_ATTR_SIZE, b"\0"))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    fd = libc.syscall(ctypes.c_long(nr), attr, ctypes.c_int(0), ctypes.c_int(-1),
                      ctypes.c_int(-1), ctypes.c_ulong(0))
    if fd < 0:
        err = ctypes.get_errno()
        event = "instructions:u" if config == 1 else f"hardware event {config}:u"
        raise OSError(err, f"perf_event_open({event}): {os.strerror(err)}")
    return int(fd)


def problem() -> str | None:
    """Why this machine cannot count instructions by its PMU, or None."""
    try:
        os.close(open_counter())
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


class Counter:
    """``with Counter() as c: work()``, then ``c.value``: the user-space instructions of
    the work (this thread)."""

    def __init__(self, config: int = 1) -> None:
        self.fd = open_counter(config)
        self.value = 0

    def __enter__(self) -> Counter:
        fcntl.ioctl(self.fd, _RESET, 0)
        fcntl.ioctl(self.fd, _ENABLE, 0)
        return self

    def __exit__(self, *exc: object) -> None:
        fcntl.ioctl(self.fd, _DISABLE, 0)
        self.value = struct.unpack("=Q", os.read(self.fd, 8))[0]
        os.close(self.fd)
