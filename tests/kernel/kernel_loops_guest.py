"""Run inside the kernel VM: each kernel plugin's timed loops against a bare loop of the same
system calls.  ``tests/kernel/test_vm_kernel_loops.py`` and ``benchmarks/kernel_loops.py``
start it.

``python tests/kernel/kernel_loops_guest.py [--rounds N] [--block S] [CRYPTODEV_KO]`` prints
one JSON object: ``kernel`` (release), ``rounds``, ``block_s``, and per plugin (``afalg``;
``devcrypto`` with a module path, inserted first; ``{"error": ...}`` when it cannot run) its
``driver`` and ``loops``, one entry per loop (``roundtrip``: encrypt then decrypt an
iteration; ``encrypt``: the one-direction loop) and size (16 and 4096 bytes) of AES-128-CBC:

* ``count``: iterations a timed block runs, fixed once from the bare loop (``--block``
  seconds, 0.1 by default);
* ``plugin_ns`` / ``bare_ns``: nanoseconds an iteration in each of ``rounds`` pairs (the
  plugin's loop and the bare one back to back, the order swapped every other pair: this
  machine's speed drifts in phases of a second or two, so blocks far apart do not compare);
* ``ratios``: plugin over bare, pair by pair, and ``ratio``: their median;
* ``calls``: the system calls of one iteration, counted (3 iterations, a third of the list)
  by stand-ins that note each call before making it, for the plugin's loop and the bare one
  (devcrypto: the ioctl request names; afalg: the socket methods, one system call each);
* ``bare_checked``: the bare loop's output is the plugin's (the same key, IV and buffer).

The plugin's loop is what the harness times: ``bench.open_context``, then
``BenchContext.workload(size, decrypt=roundtrip)`` and ``context.roundtrip_runner(work)`` or
``context.runner(work)`` (``pytest_qcrypto.measure.bench.prepare``).  The bare loops are
written here with ``fcntl.ioctl`` and the ``socket`` module only, their structs and buffers
built once outside the loop.  Constants: cryptodev-linux 1.14 ``crypto/cryptodev.h``
(``struct session_op``, ``struct crypt_op``, ``CRYPTO_AES_CBC = 11``, ``COP_ENCRYPT = 0``,
``COP_DECRYPT = 1``, ``CIOCGSESSION`` / ``CIOCFSESSION`` / ``CIOCCRYPT`` = ``_IOWR('c', 102)``
/ ``_IOW('c', 103)`` / ``_IOWR('c', 104)``) and Linux ``include/uapi/linux/if_alg.h``.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import gc
import json
import os
import socket
import statistics
import struct
import sys
import time
import traceback
from collections.abc import Callable
from itertools import repeat
from typing import Any

from kernel_plugins_guest import CountingDevice, insert_cryptodev  # beside this script
from pytest_qcrypto.backends.afalg import AfalgPlugin
from pytest_qcrypto.backends.devcrypto import DevcryptoPlugin
from pytest_qcrypto.measure import bench
from pytest_qcrypto.measure.registry import Selection

Runner = Callable[[int], None]
ALGORITHM = "aes-128-cbc"
SIZES = (16, 4096)
LOOPS = ("roundtrip", "encrypt")
#: Iterations of the counting run (the calls of one iteration are a third of its list).
COUNTED = 3

# -- cryptodev-linux 1.14, crypto/cryptodev.h (x86_64: pointers 8 bytes, natural alignment)
SESSION_OP = struct.Struct("@III4xPIPI4x")  # cipher, mac, keylen, key, mackeylen, mackey, ses
CRYPT_OP = struct.Struct("@IHHI4xPPPP")  # ses, op, flags, len, src, dst, mac, iv
CRYPTO_AES_CBC, COP_ENCRYPT, COP_DECRYPT = 11, 0, 1


def _ioc(direction: int, nr: int, size: int) -> int:
    """Linux's generic ``_IOC(dir, 'c', nr, size)``: WRITE = 1, READ = 2."""
    return (direction << 30) | (size << 16) | (ord("c") << 8) | nr


CIOCGSESSION = _ioc(3, 102, SESSION_OP.size)
CIOCFSESSION = _ioc(1, 103, 4)
CIOCCRYPT = _ioc(3, 104, CRYPT_OP.size)
REQUEST_NAMES = {CIOCGSESSION: "CIOCGSESSION", CIOCFSESSION: "CIOCFSESSION",
                 CIOCCRYPT: "CIOCCRYPT"}


# -- timing ------------------------------------------------------------------------------


def timed(run: Runner, count: int) -> int:
    """Nanoseconds ``run(count)`` takes, the garbage collector off (as the harness does)."""
    gc.disable()
    try:
        start = time.perf_counter_ns()
        run(count)
        return time.perf_counter_ns() - start
    finally:
        gc.enable()


def calibrate(run: Runner, block_s: float) -> int:
    """Iterations of ``run`` that take about ``block_s`` seconds (doubling from 1)."""
    n = 1
    while True:
        ns = timed(run, n)
        if ns >= block_s * 1e9 / 4:
            return max(1, round(n * block_s * 1e9 / ns))
        n *= 2


def compare(plugin: Runner, bare: Runner, rounds: int, block_s: float) -> dict[str, Any]:
    """``rounds`` pairs of blocks at one count (see the module docstring)."""
    count = calibrate(bare, block_s)
    for run in (plugin, bare):  # warm-up
        timed(run, max(1, count // 10))
    plugin_ns: list[float] = []
    bare_ns: list[float] = []
    for i in range(rounds):
        pair = [("plugin", plugin), ("bare", bare)]
        if i % 2:
            pair.reverse()
        took = {name: timed(run, count) / count for name, run in pair}
        plugin_ns.append(took["plugin"])
        bare_ns.append(took["bare"])
    ratios = [p / b for p, b in zip(plugin_ns, bare_ns)]
    return {"count": count, "plugin_ns": plugin_ns, "bare_ns": bare_ns, "ratios": ratios,
            "ratio": statistics.median(ratios)}


def per_iteration(sent: list[str]) -> list[str]:
    """The calls of one iteration, from those of :data:`COUNTED` iterations."""
    one = sent[:len(sent) // COUNTED]
    return one if one * COUNTED == sent else sent  # not a repeat: all of them, to be seen


def plugin_runner(bctx: bench.BenchContext, loop: str, size: int) -> tuple[Runner, Any]:
    """The harness's runner for ``loop`` at ``size`` bytes, and its workload."""
    work = bctx.workload(size, decrypt=loop == "roundtrip")
    ctx = bctx.context
    return (ctx.roundtrip_runner(work) if loop == "roundtrip" else ctx.runner(work)), work


# -- devcrypto ---------------------------------------------------------------------------


class BareSession:
    """A cryptodev-linux AES-128-CBC session on its own fd, opened with plain ``fcntl.ioctl``
    on ``struct.pack``ed structs; :meth:`runner` builds a bare loop's requests once."""

    def __init__(self, key: bytes) -> None:
        self.fd = os.open("/dev/crypto", os.O_RDWR | os.O_CLOEXEC)
        self.key = ctypes.create_string_buffer(key, len(key))
        op = bytearray(SESSION_OP.pack(CRYPTO_AES_CBC, 0, len(key),
                                       ctypes.addressof(self.key), 0, 0, 0))
        fcntl.ioctl(self.fd, CIOCGSESSION, op, True)
        self.ses = SESSION_OP.unpack(op)[-1]
        self.keep: list[Any] = []

    def request(self, cop: int, src: bytes, iv: Any) -> tuple[bytearray, Any]:
        """A ``struct crypt_op`` (as bytes) from ``src`` to a new buffer, and that buffer."""
        s = ctypes.create_string_buffer(src, len(src))
        d = ctypes.create_string_buffer(len(src))
        self.keep += [s, d]
        return bytearray(CRYPT_OP.pack(self.ses, cop, 0, len(src), ctypes.addressof(s),
                                       ctypes.addressof(d), 0, ctypes.addressof(iv))), d

    def runner(self, loop: str, work: Any, ioctl: Any = fcntl.ioctl) -> tuple[Runner, Any]:
        """(The bare loop, a check that its output is right after it ran.)"""
        iv = ctypes.create_string_buffer(work.iv, len(work.iv))
        self.keep.append(iv)
        enc, sealed = self.request(COP_ENCRYPT, work.data, iv)
        if loop == "encrypt":
            def run(count: int, ioctl: Any = ioctl, fd: int = self.fd, req: int = CIOCCRYPT,
                    enc: bytearray = enc) -> None:
                for _ in repeat(None, count):
                    ioctl(fd, req, enc, False)

            return run, lambda: sealed.raw
        dec, opened = self.request(COP_DECRYPT, work.ciphertext, iv)

        def roundtrip(count: int, ioctl: Any = ioctl, fd: int = self.fd, req: int = CIOCCRYPT,
                      enc: bytearray = enc, dec: bytearray = dec) -> None:
            for _ in repeat(None, count):
                ioctl(fd, req, enc, False)
                ioctl(fd, req, dec, False)

        return roundtrip, lambda: (sealed.raw, opened.raw)

    def close(self) -> None:
        fcntl.ioctl(self.fd, CIOCFSESSION, struct.pack("I", self.ses), False)
        os.close(self.fd)


def counting_ioctl(sent: list[str]) -> Any:
    def ioctl(fd: int, request: int, arg: Any, mutate: bool = False) -> Any:
        sent.append(REQUEST_NAMES.get(request, hex(request)))
        return fcntl.ioctl(fd, request, arg, mutate)
    return ioctl


def timed_entry(ctx: Any, loop: str, size: int, work: Any, run: Runner,
                bare: tuple[Runner, Callable[[], Any]], rounds: int,
                block_s: float) -> dict[str, Any]:
    """One loop's entry: the bare loop's output after one iteration checked against the
    plugin's own result (``bare_checked``), then :func:`compare`'s timings of both."""
    bare_run, output = bare
    bare_run(1)
    expected = (work.ciphertext, work.data) if loop == "roundtrip" else \
        ctx.context.encrypt(work.iv, work.data)
    return {"loop": loop, "size": size, "bare_checked": output() == expected,
            **compare(run, bare_run, rounds, block_s)}


def devcrypto_loops(rounds: int, block_s: float) -> dict[str, Any]:
    plain = bench.open_context(Selection("devcrypto", DevcryptoPlugin()), ALGORITHM)
    counted = bench.open_context(Selection("devcrypto", DevcryptoPlugin(device=CountingDevice)),
                                 ALGORITHM)
    bare = BareSession(plain.key or b"")
    loops = []
    try:
        for loop in LOOPS:
            for size in SIZES:
                run, work = plugin_runner(plain, loop, size)
                bare_run, output = bare.runner(loop, work)
                entry = timed_entry(plain, loop, size, work, run, (bare_run, output), rounds,
                                    block_s)
                counted_run, _ = plugin_runner(counted, loop, size)
                CountingDevice.sent.clear()
                counted_run(COUNTED)
                plugin_sent = [REQUEST_NAMES.get(r, hex(r)) for r in CountingDevice.sent]
                bare_sent: list[str] = []
                bare.runner(loop, work, counting_ioctl(bare_sent))[0](COUNTED)
                entry["calls"] = {"plugin": per_iteration(plugin_sent),
                                  "bare": per_iteration(bare_sent)}
                loops.append(entry)
        return {"driver": plain.driver, "loops": loops}
    finally:
        bare.close()
        plain.close()
        counted.close()


# -- afalg -------------------------------------------------------------------------------


class CountingSocket(socket.socket):
    """An AF_ALG socket that notes each send, sendmsg_afalg and recv_into before making it;
    the sockets it accepts count too."""

    sent: list[str] = []

    def accept(self) -> tuple[CountingSocket, Any]:
        fd, addr = self._accept()  # type: ignore[attr-defined]
        return CountingSocket(self.family, self.type, self.proto, fileno=fd), addr

    def send(self, *args: Any) -> int:
        CountingSocket.sent.append("send")
        return super().send(*args)

    def sendmsg_afalg(self, *args: Any, **kw: Any) -> int:
        CountingSocket.sent.append("sendmsg_afalg")
        return super().sendmsg_afalg(*args, **kw)

    def recv_into(self, *args: Any) -> int:
        CountingSocket.sent.append("recv_into")
        return super().recv_into(*args)


def bare_afalg(loop: str, key: bytes, work: Any,
               sock: Callable[..., Any] = socket.socket) -> tuple[Runner, Any, list[Any]]:
    """(The bare loop on a socket of its own, a check of its output, the sockets to close)."""
    tfm = sock(socket.AF_ALG, socket.SOCK_SEQPACKET, 0)
    tfm.bind(("skcipher", "cbc(aes)"))
    tfm.setsockopt(socket.SOL_ALG, socket.ALG_SET_KEY, key)
    op = tfm.accept()[0]
    n, flags = len(work.data), socket.MSG_DONTWAIT
    sealed, opened = bytearray(n), bytearray(n)
    if loop == "encrypt":
        op.sendmsg_afalg(op=socket.ALG_OP_ENCRYPT, iv=work.iv, flags=socket.MSG_MORE)

        def run(count: int, send: Any = op.send, recv_into: Any = op.recv_into,
                data: bytes = work.data, out: bytearray = sealed, n: int = n,
                flags: int = flags) -> None:
            for _ in repeat(None, count):
                send(data, flags)
                recv_into(out, n)

        return run, lambda: bytes(sealed), [op, tfm]

    def roundtrip(count: int, sendmsg: Any = op.sendmsg_afalg, recv_into: Any = op.recv_into,
                  data: list[bytes] = [work.data], ct: list[bytes] = [work.ciphertext],
                  iv: bytes = work.iv, enc: int = socket.ALG_OP_ENCRYPT,
                  dec: int = socket.ALG_OP_DECRYPT, sealed: bytearray = sealed,
                  opened: bytearray = opened, n: int = n, flags: int = flags) -> None:
        for _ in repeat(None, count):
            sendmsg(data, op=enc, iv=iv, flags=flags)
            recv_into(sealed, n)
            sendmsg(ct, op=dec, iv=iv, flags=flags)
            recv_into(opened, n)

    return roundtrip, lambda: (bytes(sealed), bytes(opened)), [op, tfm]


def afalg_loops(rounds: int, block_s: float) -> dict[str, Any]:
    plain = bench.open_context(Selection("afalg", AfalgPlugin()), ALGORITHM)
    counted = bench.open_context(Selection("afalg", AfalgPlugin(socket_factory=lambda:
                                 CountingSocket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0))),
                                 ALGORITHM)
    key, loops = plain.key or b"", []
    try:
        for loop in LOOPS:
            for size in SIZES:
                run, work = plugin_runner(plain, loop, size)
                bare_run, output, socks = bare_afalg(loop, key, work)
                entry = timed_entry(plain, loop, size, work, run, (bare_run, output), rounds,
                                    block_s)
                counted_run, _ = plugin_runner(counted, loop, size)
                counted_bare, _, counted_socks = bare_afalg(loop, key, work, CountingSocket)
                sent = {}
                for name, counted_loop in (("plugin", counted_run), ("bare", counted_bare)):
                    CountingSocket.sent.clear()
                    counted_loop(COUNTED)
                    sent[name] = per_iteration(list(CountingSocket.sent))
                entry["calls"] = sent
                for s in socks + counted_socks:
                    s.close()
                loops.append(entry)
        return {"driver": plain.driver, "loops": loops}
    finally:
        plain.close()
        counted.close()


def part(measure: Callable[[int, float], dict[str, Any]], rounds: int,
         block_s: float) -> dict[str, Any]:
    """``measure(rounds, block_s)``, or ``{"error": ...}`` with the traceback's last lines
    (the other plugin's part runs anyway)."""
    try:
        return measure(rounds, block_s)
    except Exception:
        return {"error": "".join(traceback.format_exc().splitlines(True)[-6:])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=7, help="pairs of timed blocks (default 7)")
    p.add_argument("--block", type=float, default=0.1,
                   help="seconds a timed block of the bare loop takes (default 0.1)")
    p.add_argument("ko", nargs="?", help="cryptodev.ko to insert (no devcrypto part without)")
    args = p.parse_args(argv)
    report: dict[str, Any] = {"kernel": os.uname().release, "rounds": args.rounds,
                              "block_s": args.block,
                              "afalg": part(afalg_loops, args.rounds, args.block)}
    if args.ko:
        error, version = insert_cryptodev(args.ko)
        report["devcrypto"] = {"error": error} if error else \
            {"version": version, **part(devcrypto_loops, args.rounds, args.block)}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
