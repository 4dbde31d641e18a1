"""Histories of results files for the history tests and benchmark: runs whose rounds are read
off a fake clock (each round's seconds computed, never measured), with seeded noise.

:func:`write_history` adds ``runs`` results files to a folder through
:func:`pytest_qcrypto.results.history.add`, one a day from 2026-11-01, each with its own git
commit (``commit_of(i)``), every cell of :data:`CELLS` (or ``cells``) at a level of its own
times a run-to-run noise of ``noise`` (lognormal sd) and a round-to-round one of 0.5%; from
run ``step_at`` on (1-based), the cell ``step_cell`` is ``factor`` times as fast; with
``version_at=(run, text)`` the plugin's version is ``text`` from that run on.
"""

from __future__ import annotations

import hashlib
import math
import random
from datetime import datetime, timedelta
from pathlib import Path

from pytest_qcrypto.results import history
from pytest_qcrypto.results.model import Result, ResultsFile

ALGORITHMS = ("sha256", "sha512", "sha1", "md5", "blake2b")
SIZES = (16, 64, 256, 1024, 4096, 8192)
#: 30 cells: (algorithm, plugin, size, direction)
CELLS = tuple((a, "openssl", s, "digest") for a in ALGORITHMS for s in SIZES)
STEP_CELL = ("sha256", "openssl", 4096, "digest")
MACHINE = {"cpu_model": "Test CPU 3000", "cpu_flags": ["aes", "sha_ni"], "architecture": "x86_64",
           "cores": 2, "os": "Linux", "kernel": "6.1.0", "libc": "glibc 2.36",
           "python": "CPython 3.11.7"}
COUNT = 4096
#: The first run's time (UTC); one run a day after it.
START = datetime(2026, 11, 1, 8)


def commit_of(run: int) -> str:
    """The 40-hex-digit commit of run ``run`` (1-based)."""
    return hashlib.sha1(f"commit {run}".encode()).hexdigest()


def result(cell: tuple[str, str, int, str], rate: float, rng: random.Random,
           plugin: str | None = None) -> Result:
    """``cell`` at ``rate`` bytes per second: 5 rounds of :data:`COUNT` operations whose
    seconds the fake clock gives, 0.5% apart."""
    algorithm, canonical, size, direction = cell
    rounds = tuple(COUNT * size / rate * math.exp(rng.gauss(0, 0.005)) for _ in range(5))
    median = sorted(rounds)[2]
    return Result(algorithm, plugin or canonical, size, direction, COUNT * size / median,
                  count=COUNT, rounds_s=rounds, cpu_s=rounds, canonical_plugin=canonical,
                  operation="hash one buffer")


def write_history(folder: Path, runs: int = 30, step_at: int = 18, factor: float = 0.8,
                  step_cell: tuple[str, str, int, str] | None = STEP_CELL,
                  cells: tuple[tuple[str, str, int, str], ...] = CELLS, noise: float = 0.015,
                  seed: int = 27, machine: dict | None = None, plugin: str | None = None,
                  version: str = "OpenSSL 3.0.13", version_at: tuple[int, str] | None = None
                  ) -> list[Path]:
    """Write the history (module doc); the paths written, in run order."""
    rng = random.Random(seed)
    base = {c: 2e8 * (1 + i % 7) * c[2] / (c[2] + 64) for i, c in enumerate(cells)}
    written = []
    for run in range(1, runs + 1):
        results = []
        for c in cells:
            rate = base[c] * math.exp(rng.gauss(0, noise))
            if c == step_cell and run >= step_at:
                rate *= factor
            results.append(result(c, rate, rng, plugin))
        name = plugin or "openssl"
        shown = version_at[1] if version_at and run >= version_at[0] else version
        doc = ResultsFile(results, machine=dict(machine or MACHINE),
                          plugins={name: {"canonical": name, "library": "pyca/cryptography",
                                          "version": shown, "drivers": []}},
                          created=(START + timedelta(days=run - 1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                          source={"git_commit": commit_of(run), "git_dirty": False},
                          settings={"rounds": 5})
        written.append(history.add(folder, doc))
    return written
