#!/usr/bin/env python3
"""The A/B recipe on a shared machine: both versions measured in one job, their rounds taken
in turn, the new judged against the old.  How often does it fail code that did not change,
and does it catch a 20% slowdown?

Run from the repository (the package installed)::

    python benchmarks/ab_gate.py            # 5 A/B runs per neighbour condition
    python benchmarks/ab_gate.py --runs 2   # fewer
    python benchmarks/ab_gate.py --tiny     # a smoke run: 1 run per condition, 16 B only

``benchmarks/gate_drift.py`` runs the same part with :func:`ab_part`.

Each A/B run is one pytest process (as ``examples/ab/ab.sh`` runs it): sha256 in
``openssl``, ``hashlib`` and ``slowed`` at 16, 256 and 4096 B, measured here (``@local``)
and in a second interpreter of the same environment (``--qcrypto-target=old=popen//...``),
``--qcrypto-interleave``, ``--qcrypto-compare-target=old``, rounds of 20 ms, 7 a try.
``slowed`` wraps hashlib: in the target it does the real work only, here the work and then
25% of it again (throughput 0.8 of the target's: a 20% slowdown).  The conditions take turns,
as in ``gate_drift.py``: no neighbour, a process spinning on one CPU, one copying 64 MiB
buffers.  A *false alarm* is a regression among ``openssl`` and ``hashlib`` (the same code on
both sides); a *detection* a ``slowed`` cell that failed as a regression.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from benchlib import Neighbour, cell_properties, timed_run

SIZES = (16, 256, 4096)
EXTRA = 0.25  # work done again: throughput 1 / 1.25 = 0.8 of the real one
CONDITIONS = ("none", "spin", "memory")
NEIGHBOURS = {"spin": "while True: pass",
              "memory": "a = bytearray(64 << 20)\nwhile True: b = bytes(a)"}

PLUGINS = '''
import os
from pytest_qcrypto.backends.hashlib import HashlibPlugin


class Slowed(HashlibPlugin):
    """hashlib doing the real work, then the fraction ``extra`` of it again."""
    name = "slowed"
    aliases = ()
    default_rank = 990
    library = "hashlib, slowed"

    def __init__(self, extra=0.0):
        super().__init__()
        self.extra = extra

    def open(self, algorithm, key, variant=None):
        ctx = super().open(algorithm, key, variant)
        real, extra = ctx.runner, self.extra

        def runner(work):
            run = real(work)

            def slowed(count):
                run(count)
                if round(count * extra):
                    run(round(count * extra))
            return slowed
        ctx.runner = runner
        return ctx


def target():
    """The old side: the real work only."""
    return [Slowed(0.0)]
'''

CONFTEST = '''
import os
from ab_plugins import Slowed


def pytest_qcrypto_plugins():
    return [Slowed(float(os.environ["AB_GATE_EXTRA"]))]
'''


class Part(NamedTuple):
    summary: dict[str, Any]
    lines: list[str]
    rows: list[dict[str, Any]]


def pytest_args(sizes: Sequence[int]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
            "--qcrypto-digest=sha256", "--qcrypto-plugin=openssl,hashlib,slowed",
            "--qcrypto-size=" + ",".join(map(str, sizes)),
            f"--qcrypto-target=old=popen//python={sys.executable}", "--qcrypto-interleave",
            "--qcrypto-compare-target=old", "--qcrypto-min-time=0.02", "--qcrypto-rounds=7",
            "--junitxml=junit.xml"]


def one_run(where: Path, label: str, sizes: Sequence[int]) -> dict[str, Any]:
    env = {"AB_GATE_EXTRA": str(EXTRA), "QCRYPTO_TARGET_PLUGINS": "ab_plugins:target",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(where),
                                                       os.environ.get("PYTHONPATH")]))}
    with Neighbour(NEIGHBOURS.get(label), settle_s=0.5):
        seconds, done = timed_run(where, pytest_args(sizes), env, 600)
    if done.returncode not in (0, 1):
        raise SystemExit(f"ab_gate: an A/B run failed ({done.returncode}):\n"
                         f"{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
    cells = {c: p.get("qcrypto_verdict", "?") for c, p in cell_properties(
        where / "junit.xml").items() if "@local" in c}
    same = {c: v for c, v in cells.items() if ":slowed@" not in c}
    return {"condition": label, "seconds": seconds, "exit": done.returncode,
            "load": os.getloadavg()[0], "verdicts": cells,
            "false_alarm": any(v.startswith("regression") for v in same.values()),
            "failed_same": sorted(c for c, v in same.items() if v.startswith("regression")),
            "caught": sorted(c for c, v in cells.items() if ":slowed@" in c
                             and v.startswith("regression"))}


def ab_part(runs: int, sizes: Sequence[int] = SIZES,
            say: Callable[[str], Any] = print) -> Part:
    """``runs`` A/B runs per neighbour condition (the conditions taking turns); progress to
    ``say``.  No targets: the A/B recipe has none in issue 23; the rows say what was seen."""
    started = time.perf_counter()
    out: dict[str, Any] = {"settings": {"sizes": list(sizes), "slowdown": 1 - 1 / (1 + EXTRA),
                                        "runs_per_condition": runs, "min_time_s": 0.02,
                                        "rounds": 7}, "load_start": os.getloadavg()}
    done: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ab-gate-") as tmp:
        where = Path(tmp)
        (where / "ab_plugins.py").write_text(PLUGINS)
        (where / "conftest.py").write_text(CONFTEST)
        for i in range(runs * len(CONDITIONS)):
            label = CONDITIONS[i % len(CONDITIONS)]
            r = one_run(where, label, sizes)
            done.append(r)
            say(f"  A/B {i + 1}/{runs * len(CONDITIONS)} ({label}): {r['seconds']:.1f} s, "
                f"same code failed: {', '.join(r['failed_same']) or 'none'}; caught: "
                f"{', '.join(r['caught']) or 'none'}")
    out["runs"] = done
    out["seconds"] = time.perf_counter() - started
    rows, lines = [], [f"A/B recipe (both versions in one run, interleaved, "
                       f"--qcrypto-compare-target): sha256 openssl/hashlib/slowed at "
                       f"{'/'.join(map(str, sizes))} B, slowed 20%, threshold 10%, {runs} runs "
                       f"per condition, {out['seconds']:.0f} s"]
    for label in CONDITIONS:
        mine = [r for r in done if r["condition"] == label]
        fa = sum(r["false_alarm"] for r in mine)
        caught = {s: sum(any(c.endswith(f"@local:{s}:digest") for c in r["caught"])
                         for r in mine) for s in sizes}
        out.setdefault("summary", {})[label] = {"runs": len(mine), "false_alarms": fa,
                                                "caught": {str(s): n for s, n in caught.items()}}
        lines.append(f"  {label:<7} same code failed {fa}/{len(mine)}; 20% caught "
                     + ", ".join(f"{n}/{len(mine)} at {s} B" for s, n in caught.items()))
        rows.append({"target": f"A/B, {label}: same code failed (measured, no target)",
                     "got": f"{fa}/{len(mine)}", "met": True})
    return Part(out, lines, rows)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=5, help="A/B runs per condition (default 5)")
    p.add_argument("--tiny", action="store_true", help="a smoke run: 1 per condition, 16 B")
    p.add_argument("--json", default=None, metavar="PATH", help="write the figures here")
    args = p.parse_args(argv)
    part = ab_part(1 if args.tiny else args.runs, (16,) if args.tiny else SIZES,
                   lambda text: print(text, flush=True))
    for line in part.lines:
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(part.summary, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
