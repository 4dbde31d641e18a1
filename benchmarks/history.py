#!/usr/bin/env python3
"""How long ``qcrypto history`` takes, and how much memory, on a history of 1,000 runs x 300 cells.

Run from the repository (the package installed, e.g. ``pip install -e .``)::

    python benchmarks/history.py                  # 1,000 x 300; writes qcrypto-history.json
    python benchmarks/history.py --json out.json  # elsewhere
    python benchmarks/history.py --tiny           # a smoke run: 24 runs x 12 cells

A history folder is written first (not timed): ``--runs`` results files of ``--cells`` cells
each (digests x plugins x buffer sizes), whose rounds come off a fake clock with seeded noise
(1.5% run to run, 0.5% round to round), with a 15% slowdown in 3 cells from 70% of the runs on
and a 20% speed-up in 2 cells from 40%.  Then ``qcrypto history DIR --html=PAGE`` runs in a
child process, timed by the wall clock; its peak memory is the largest resident set of it and
of its reading processes (``getrusage(RUSAGE_CHILDREN).ru_maxrss``, KiB on Linux), and the
bound on all of them at once, the main process's peak plus one per reading process
(:data:`pytest_qcrypto.results.history.POOL_FROM`: one per CPU), each at most that largest.
The targets (issue 27): under 30 s and 1 GiB (1024 MiB) here.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ALGORITHMS = ("sha256", "sha512", "sha224", "sha384", "sha1", "md5", "blake2b", "blake2s",
              "sha3-256", "sha3-512")
PLUGINS = ("openssl", "hashlib", "pycryptodome")
SIZES = tuple(16 * 2 ** i for i in range(10))  # 16 to 8192 bytes
TARGET_S, TARGET_MIB = 30.0, 1024.0
COUNT = 4096


def cells(n: int) -> list[tuple[str, str, int]]:
    every = [(a, p, s) for a in ALGORITHMS for p in PLUGINS for s in SIZES]
    if n > len(every):
        raise SystemExit(f"--cells: at most {len(every)}")
    return every[:n]


def write_history(folder: Path, runs: int, n_cells: int, seed: int = 27) -> None:
    """The history folder (module doc), one file a run, named as --qcrypto-history names it."""
    rng = random.Random(seed)
    chosen = cells(n_cells)
    base = {c: 2e8 * (1 + i % 7) * c[2] / (c[2] + 64) for i, c in enumerate(chosen)}
    slow, fast = set(chosen[:3]), set(chosen[3:5])
    start = datetime(2026, 1, 1, tzinfo=timezone.utc)
    for run in range(runs):
        results = []
        for c in chosen:
            rate = base[c] * math.exp(rng.gauss(0, 0.015))
            rate *= 0.85 if c in slow and run >= runs * 0.7 else 1.0
            rate *= 1.2 if c in fast and run >= runs * 0.4 else 1.0
            rounds = [COUNT * c[2] / rate * math.exp(rng.gauss(0, 0.005)) for _ in range(5)]
            results.append({"algorithm": c[0], "plugin": c[1], "canonical_plugin": c[1],
                            "size": c[2], "direction": "digest", "operation": "",
                            "count": COUNT, "rounds_s": rounds, "cpu_s": rounds,
                            "bytes_per_second": COUNT * c[2] / sorted(rounds)[2], "jobs": 1,
                            "driver": None, "hardware": None, "test": None,
                            "cpu_wait_share": None, "threads": 1})
        created = (start + timedelta(hours=run)).strftime("%Y-%m-%dT%H:%M:%SZ")
        commit = f"{rng.getrandbits(160):040x}"
        doc = {"format": "pytest-qcrypto results", "schema_version": 2, "complete": True,
               "created": created, "tool": {"name": "pytest-qcrypto", "version": "0.1.0"},
               "settings": {"rounds": 5},
               "machine": {"cpu_model": "Bench CPU", "architecture": "x86_64", "cores": 2,
                           "cpu_flags": ["aes"], "os": "Linux", "kernel": "6.1.0",
                           "libc": "glibc 2.36", "python": "CPython 3.11.7"},
               "plugins": {p: {"canonical": p, "library": p, "version": "1.0", "drivers": []}
                           for p in PLUGINS},
               "results": results, "source": {"git_commit": commit, "git_dirty": False}}
        stamp = created.replace("-", "").replace(":", "")
        (folder / f"{stamp}-{commit[:12]}-{run:06x}.json").write_text(json.dumps(doc))


def measure(folder: Path, page: Path) -> dict[str, object]:
    """``qcrypto history FOLDER --html=PAGE`` in a child: wall seconds, exit code, peak memory."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "history",
                           str(folder), f"--html={page}"], capture_output=True, text=True,
                          cwd=folder.parent)
    wall = time.perf_counter() - t0
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak_kib <= before:
        peak_kib = before  # the generator's children (none) were larger: a bound all the same
    workers = os.cpu_count() or 1
    steps = [line for line in done.stdout.splitlines()
             if line.startswith(("REGRESSION:", "speed-up:", "slowdown:"))]
    return {"exit_code": done.returncode, "wall_s": round(wall, 3),
            "peak_rss_largest_process_mib": round(peak_kib / 1024, 1),
            "reading_processes": workers,
            "peak_rss_bound_mib": round(peak_kib * (1 + workers) / 1024, 1),
            "page_bytes": page.stat().st_size if page.exists() else 0,
            "steps_found": steps, "stderr": done.stderr.strip().splitlines()[-3:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cells", type=int, default=300)
    parser.add_argument("--tiny", action="store_true", help="24 runs x 12 cells, a smoke run")
    parser.add_argument("--json", default="qcrypto-history.json", help="where to write")
    args = parser.parse_args(argv)
    runs, n_cells = (24, 12) if args.tiny else (args.runs, args.cells)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "history"
        folder.mkdir()
        t0 = time.perf_counter()
        write_history(folder, runs, n_cells)
        written_s = time.perf_counter() - t0
        result = measure(folder, Path(tmp) / "history.html")
    met = {"time": result["wall_s"] < TARGET_S,
           "memory": result["peak_rss_bound_mib"] < TARGET_MIB}
    out = {"benchmark": "history", "runs": runs, "cells": n_cells, "tiny": args.tiny,
           "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                       "load": list(os.getloadavg())},
           "history_written_s": round(written_s, 3), **result,
           "targets": {"wall_s": TARGET_S, "memory_mib": TARGET_MIB}, "met": met,
           "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    print(f"qcrypto history on {runs} runs x {n_cells} cells: {result['wall_s']:.1f} s, "
          f"peak {result['peak_rss_largest_process_mib']:.0f} MiB in the largest process "
          f"(bound for all {1 + int(result['reading_processes'])}: "  # type: ignore[call-overload]
          f"{result['peak_rss_bound_mib']:.0f} MiB); exit {result['exit_code']}, "
          f"{len(result['steps_found'])} steps")  # type: ignore[arg-type]
    print(f"targets (under {TARGET_S:g} s, {TARGET_MIB:g} MiB): time "
          f"{'met' if met['time'] else 'NOT met'}, memory {'met' if met['memory'] else 'NOT met'}"
          + ("; a tiny run: not worth quoting" if args.tiny else ""))
    print(f"written to {args.json}")
    return 0 if result["exit_code"] in (0, 1) else 1


if __name__ == "__main__":
    sys.exit(main())
