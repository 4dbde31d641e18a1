#!/usr/bin/env python3
"""Time to a result: our default matrix against pytest-benchmark's equivalent, and how close
each side's figures are to a hand-written tight loop.

Run from the repository, with pytest-benchmark installed (``pip install -e '.[bench]'``)::

    python benchmarks/time_to_result.py                # about 7 minutes; writes its JSON to
                                                       # benchmarks/results-DATE/
    python benchmarks/time_to_result.py --json out.json --repeats 5
    python benchmarks/time_to_result.py --tiny         # a smoke run: 1 repeat, 2 sizes, no JSON
    python benchmarks/time_to_result.py --ours=--qcrypto-min-time=0.05  # what if: recorded

The two sides measure the same 21 cells: sha256 in three plugins (openssl = pyca
cryptography, hashlib, pycryptodome) at qcrypto's seven sizes (16 B to 32 KiB):

- ours: ``pytest --qcrypto-digest=sha256 --qcrypto-plugin=openssl --qcrypto-plugin=hashlib
  --qcrypto-plugin=pycryptodome`` at the default min-time and rounds (given no path, it
  collects its matrix only), its table as csv to a file;
- pytest-benchmark: a test file of 21 cells (three functions x seven sizes), each
  ``benchmark(op)`` where ``op`` is one operation as our plugin times it (openssl and
  hashlib: ``h = pristine.copy(); h.update(buf); h.digest()`` / ``finalize()``;
  pycryptodome: ``SHA256Hash(buf).digest()``), at pytest-benchmark's defaults (its median
  time per call is its figure), its figures as ``--benchmark-json``.

Each runs as ``python -m pytest`` with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` and its one
plugin given by ``-p``, so that neither pays for the other or for any other installed
plugin.  A repeat runs each command twice, the order of the sides reversed every other repeat
(so that the drift of a shared machine hits both alike):

1. plain, in a folder without a conftest: its wall time (start to exit, the table included)
   is the side's wall-time figure;
2. bracketed, in a folder of its own whose ``conftest.py`` (loop_bracket.py) wraps
   ``pytest_runtest_call`` of the six loop cells' items (ours ``qcrypto::sha256[openssl-16]``,
   pytest-benchmark's ``test_openssl[16]``, ... at 16 B and 32 KiB): just before the item's
   call, and again just after it, it times the hand-written loop of that cell (``for _ in
   repeat(None, n)`` over the same calls, everything pre-bound; KiB/s, the median of three
   runs of about 0.1 s each).  The side's KiB/s for the cell (the same run's csv, or its
   ``--benchmark-json``) over the mean of the two brackets' KiB/s is its ratio to the tight
   loop.  Both sides are bracketed alike.

Why bracket: this machine's speed drifts in phases of a second or two (a neighbour on the
same core), so a loop timed seconds away from the cell's measurement (earlier versions timed
it once per repeat, after both commands) read up to 60% apart across repeats and its ratio
measured the drift, not our loop.  The loop's change across a cell (``bracket_gap``:
|after - before| over their mean) says how much the machine moved while it was measured.
The wall runs carry no conftest, and the bracketed runs' walls are not reported.

Nine repeats by default: with five, one or two repeats in which the machine dipped during
our 16-byte cell alone (ours 26% under both of its brackets) swung the median of a 16-byte
ratio past the 3% the target allows (2026-12-04, load under 1: ``time-to-result-125029``,
0.927 for pycryptodome at 16 B, against 1.000 in nine in-process pairs of ours and the loop
minutes later).

Reported, as the median over the repeats: each side's wall time and their ratio; each side's
KiB/s at 16 B and 32 KiB over its own brackets' mean.  Targets: ours <= 0.6 of
pytest-benchmark's wall time; our figures 0.97 to 1.03 of the tight loop.  The load average is
recorded before every repeat: the targets are meant for a machine at a load under 1.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from benchlib import write_json  # beside this script
from loop_bracket import LOOPS, conftest_text, read_brackets, split_cell

REPO = Path(__file__).resolve().parent.parent
PLUGINS = ("openssl", "hashlib", "pycryptodome")
SIZES = (16, 64, 256, 1024, 4096, 8192, 32768)
LOOP_SIZES = (16, 32768)
WALL_TARGET = 0.6
LOOP_RANGE = (0.97, 1.03)
KIB = 1024

PB_TESTS = '''import hashlib, os
import pytest
from Crypto.Hash.SHA256 import SHA256Hash
from cryptography.hazmat.primitives import hashes

SIZES = {sizes!r}


@pytest.mark.parametrize("size", SIZES)
def test_openssl(benchmark, size):
    copy, buf = hashes.Hash(hashes.SHA256()).copy, os.urandom(size)

    def op():
        h = copy()
        h.update(buf)
        h.finalize()
    benchmark(op)


@pytest.mark.parametrize("size", SIZES)
def test_hashlib(benchmark, size):
    copy, buf = hashlib.sha256().copy, os.urandom(size)

    def op():
        h = copy()
        h.update(buf)
        h.digest()
    benchmark(op)


@pytest.mark.parametrize("size", SIZES)
def test_pycryptodome(benchmark, size):
    buf = os.urandom(size)
    benchmark(lambda: SHA256Hash(buf).digest())
'''


def run_pytest(where: Path, plugin: str, args: list[str]) -> float:
    """Wall seconds of ``python -m pytest -p PLUGIN ARGS`` in ``where``, no other plugin."""
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", plugin, *args]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=where, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"time_to_result.py: {' '.join(cmd[2:])} failed "
                         f"({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    return wall


def ours(where: Path, sizes: tuple[int, ...], extra: list[str]) -> tuple[float, dict[str, float]]:
    """Our default matrix: (wall seconds, KiB/s by ``plugin:size``)."""
    out = where / "ours.csv"
    args = ["--qcrypto-digest=sha256", *[f"--qcrypto-plugin={p}" for p in PLUGINS],
            "--qcrypto-format=csv", f"--qcrypto-output={out}", *extra]
    if sizes != SIZES:
        args += [f"--qcrypto-size={s}" for s in sizes]
    wall = run_pytest(where, "pytest_qcrypto.plugin", args)
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    figures = {f"{r['plugin']}:{r['size']}": float(r["value"]) for r in rows
               if r["unit"] == "KiB/s" and r["value"]}
    return wall, figures


def theirs(where: Path, extra: list[str]) -> tuple[float, dict[str, float]]:
    """pytest-benchmark's 21 cells: (wall seconds, KiB/s by ``plugin:size`` from its median)."""
    out = where / "pb.json"
    wall = run_pytest(where, "pytest_benchmark.plugin",
                      ["test_pb.py", f"--benchmark-json={out}", *extra])
    figures = {}
    for b in json.loads(out.read_text())["benchmarks"]:
        plugin = b["name"].split("[")[0].removeprefix("test_")
        size = b["params"]["size"]
        figures[f"{plugin}:{size}"] = size / b["stats"]["median"] / KIB
    return wall, figures


#: Each side's node id of a loop cell's item.
ITEM_IDS = {"ours": "qcrypto::sha256[{plugin}-{size}]", "pb": "test_pb.py::test_{plugin}[{size}]"}
#: The prefix of each side's bracket keys in a repeat's record.
PREFIX = {"ours": "", "pb": "pb_"}


def bracketing_folder(plain: Path, side: str, counts: dict[str, int]) -> Path:
    """A folder beside ``plain`` for ``side``'s bracketed run: a copy of ``plain``'s test file
    and, the only difference, a ``conftest.py`` that brackets the side's loop cells' items
    with their tight loop (at ``counts`` operations)."""
    folder = plain.parent / f"{side}-bracketed"
    folder.mkdir()
    (folder / "test_pb.py").write_text((plain / "test_pb.py").read_text())
    items = {ITEM_IDS[side].format(plugin=plugin, size=size): (cell, n)
             for cell, n in counts.items() for plugin, size in [split_cell(cell)]}
    (folder / "conftest.py").write_text(conftest_text(items, folder / "brackets.json"))
    return folder


def one_repeat(k: int, where: Path, folders: dict[str, Path],
               run: dict[str, Callable[[Path], tuple[float, dict[str, float]]]]) -> dict[str, Any]:
    """Repeat ``k``: each side plain in ``where`` (its wall time; figures kept as
    ``SIDE_unbracketed``), then each side in its bracketing folder (figures and brackets)."""
    rep: dict[str, Any] = {"load_before": list(os.getloadavg()),
                           "order": ["ours", "pb"] if k % 2 == 0 else ["pb", "ours"]}
    for side in rep["order"]:
        rep[f"{side}_wall_s"], rep[f"{side}_unbracketed"] = run[side](where)
    for side in rep["order"]:
        brackets = folders[side] / "brackets.json"
        brackets.unlink(missing_ok=True)
        _, rep[side] = run[side](folders[side])
        p = PREFIX[side]
        rep[f"{p}loop_before"], rep[f"{p}loop_after"] = read_brackets(brackets)
        rep[f"{p}loop"] = bracket_mean(rep, p)
    return rep


def loop_counts(seconds: float) -> dict[str, int]:
    """Per loop cell, the power of two whose run takes about ``seconds`` (timed once here)."""
    counts = {}
    for plugin in PLUGINS:
        for size in LOOP_SIZES:
            loop, n = LOOPS[plugin](size), 1
            while True:
                t0 = time.perf_counter()
                loop(n)
                if time.perf_counter() - t0 >= seconds / 2:
                    break
                n *= 2
            counts[f"{plugin}:{size}"] = n * 2
    return counts


def bracket_mean(rep: dict[str, Any], prefix: str = "") -> dict[str, float]:
    """Per cell, the mean KiB/s of the loop just before and just after the side's measurement
    (``prefix``: ``""`` ours, ``"pb_"`` pytest-benchmark's)."""
    before, after = rep[f"{prefix}loop_before"], rep[f"{prefix}loop_after"]
    return {cell: (before[cell] + after[cell]) / 2 for cell in before}


def bracket_gap(rep: dict[str, Any], prefix: str, cell: str) -> float:
    """How far the loop moved across the cell's measurement: |after - before| / their mean."""
    before, after = rep[f"{prefix}loop_before"][cell], rep[f"{prefix}loop_after"][cell]
    return abs(after - before) / ((before + after) / 2)


def summarise(reps: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the repeats: walls, their ratio, each side's ratio to the mean of its
    brackets, and the brackets' gap."""
    med = statistics.median
    out: dict[str, Any] = {
        "ours_wall_s": med(r["ours_wall_s"] for r in reps),
        "pytest_benchmark_wall_s": med(r["pb_wall_s"] for r in reps),
        "wall_ratio": med(r["ours_wall_s"] / r["pb_wall_s"] for r in reps),
        "loop_ratio": {}, "bracket_gap": {}}
    loops = [(bracket_mean(r), bracket_mean(r, "pb_")) for r in reps]
    for cell in reps[0]["loop_before"]:
        out["loop_ratio"][cell] = {
            "ours": med(r["ours"][cell] / loop[cell] for r, (loop, _) in zip(reps, loops)),
            "pytest_benchmark": med(r["pb"][cell] / pb_loop[cell]
                                    for r, (_, pb_loop) in zip(reps, loops))}
        out["bracket_gap"][cell] = {"ours": med(bracket_gap(r, "", cell) for r in reps),
                                    "pytest_benchmark": med(bracket_gap(r, "pb_", cell)
                                                            for r in reps)}
    low, high = LOOP_RANGE
    out["verdicts"] = [
        {"what": f"our wall time <= {WALL_TARGET} of pytest-benchmark's "
                 f"({out['wall_ratio']:.3f})", "met": out["wall_ratio"] <= WALL_TARGET}] + [
        {"what": f"ours / tight loop for {cell} in {low}-{high} ({r['ours']:.3f})",
         "met": low <= r["ours"] <= high} for cell, r in out["loop_ratio"].items()]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", default=None, metavar="PATH", help="write the figures here "
                   "(default: benchmarks/results-DATE/time-to-result-HHMMSS.json; --tiny: none)")
    p.add_argument("--repeats", type=int, default=9, help="interleaved repeats (default 9)")
    p.add_argument("--ours", action="append", default=[], metavar="ARG",
                   help="one more option for our side (repeatable), e.g. "
                        "--ours=--qcrypto-min-time=0.05: what a default would give; recorded")
    p.add_argument("--tiny", action="store_true",
                   help="a smoke run: 1 repeat, 16 B and 32 KiB only, short rounds; no JSON")
    args = p.parse_args(argv)
    try:
        import pytest_benchmark  # noqa: F401
    except ImportError:
        print("time_to_result.py: needs pytest-benchmark: pip install -e '.[bench]'")
        return 2
    repeats, sizes = (1, LOOP_SIZES) if args.tiny else (max(args.repeats, 1), SIZES)
    ours_extra = (["--qcrypto-min-time=0.005", "--qcrypto-rounds=1"] if args.tiny else []) \
        + args.ours
    pb_extra = ["--benchmark-max-time=0.005", "--benchmark-min-rounds=1"] if args.tiny else []
    started = datetime.now(timezone.utc)
    counts = loop_counts(0.01 if args.tiny else 0.1)
    reps: list[dict[str, Any]] = []
    run: dict[str, Callable[[Path], tuple[float, dict[str, float]]]] = {
        "ours": lambda folder: ours(folder, sizes, ours_extra),
        "pb": lambda folder: theirs(folder, pb_extra)}
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(tmp) / "plain"
        where.mkdir()
        (where / "test_pb.py").write_text(PB_TESTS.format(sizes=sizes))
        folders = {side: bracketing_folder(where, side, counts) for side in run}
        for k in range(repeats):
            rep = one_repeat(k, where, folders, run)
            reps.append(rep)
            print(f"repeat {k + 1}/{repeats} (load {rep['load_before'][0]:.2f}): ours "
                  f"{rep['ours_wall_s']:.2f} s, pytest-benchmark {rep['pb_wall_s']:.2f} s",
                  flush=True)
    summary = summarise(reps)
    loads = [r["load_before"][0] for r in reps] + [os.getloadavg()[0]]
    print(f"wall time to the table (median of {repeats}): ours {summary['ours_wall_s']:.2f} s, "
          f"pytest-benchmark {summary['pytest_benchmark_wall_s']:.2f} s, ratio "
          f"{summary['wall_ratio']:.3f}; load average (1 min) {min(loads):.2f} to "
          f"{max(loads):.2f} on {os.cpu_count()} CPUs")
    print(f"{'cell':<20}{'ours / loop':>13}{'gap':>7}{'pytest-benchmark / loop':>25}{'gap':>7}"
          "   (loop: the mean of its brackets; gap: |after - before| / mean)")
    for cell, r in summary["loop_ratio"].items():
        gap = summary["bracket_gap"][cell]
        print(f"{cell:<20}{r['ours']:>13.3f}{gap['ours']:>7.1%}{r['pytest_benchmark']:>25.3f}"
              f"{gap['pytest_benchmark']:>7.1%}")
    for v in summary["verdicts"]:
        print(f"{'met' if v['met'] else 'NOT MET':>8}  {v['what']}")
    out = {"benchmark": "time-to-result", "date": started.isoformat(timespec="seconds"),
           "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                       "platform": platform.platform(), "load_average_1min": loads},
           "versions": versions(), "repeats": repeats, "sizes": list(sizes),
           "ours_options": ours_extra, "loop_counts": counts, **summary, "per_repeat": reps}
    write_json(out, args.json, "time-to-result", started, args.tiny)
    return 0


def versions() -> dict[str, str]:
    from importlib.metadata import version

    return {name: version(name) for name in ("pytest", "pytest-benchmark", "cryptography",
                                             "pycryptodome")}


if __name__ == "__main__":
    sys.exit(main())
