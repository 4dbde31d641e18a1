#!/usr/bin/env python3
"""The instruction gate (``--qcrypto-measure=instructions``) on a shared machine: does it fail
code that did not change beside a neighbour, and does it catch 2% extra work?

Run from the repository (the package installed, e.g. ``pip install -e .``; valgrind, or a
PMU that ``perf_event_open`` counts instructions with)::

    python benchmarks/instructions_gate.py            # 20 compares per condition
    python benchmarks/instructions_gate.py --runs 5   # fewer
    python benchmarks/instructions_gate.py --tiny     # a smoke run: 1 compare per condition

``benchmarks/gate_drift.py`` runs the same part with :func:`instruction_part`.

Two crypto plugins wrap the real ``hashlib`` plugin: ``same`` is hashlib, and ``more02`` runs
each round's ``count`` operations and then ``round(count * 0.02)`` more, 2% extra work.  One
pytest run saves a baseline of both with no extra work (sha256, ``--sizes``, default 16 B);
then ``--runs`` compare runs (``pytest --qcrypto-compare``, each its own process, default
instruction threshold) in each neighbour condition: none, a process spinning on one CPU, a
process writing over 256 MiB in a loop.  Every compare counts both cells: ``same`` failing is
a false alarm; ``more02`` failing (JUnit verdict ``regression``) a detection.

The pytest runs load no other pytest plugin (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``, ``-p
pytest_qcrypto.plugin``: a test extra such as hypothesis's plugin is not part of a gate job),
and keep their bytecode in the run's temporary folder (``PYTHONPYCACHEPREFIX``; this machine
sets ``PYTHONDONTWRITEBYTECODE``, under which every run, and every counting process under
valgrind, compiled the package from source), as an installed package has its bytecode.

Targets (issue 23, Done when): the same code fails in 0 of 20 compares in every condition,
2% extra work is caught in 20 of 20.  JSON goes to
``benchmarks/results-<date>/instructions-gate-<HHMMSS>.json`` (``--json`` elsewhere; none
for ``--tiny`` unless given), with the text table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from benchlib import Neighbour, cell_properties, timed_run
from pytest_qcrypto.gate import counted as counted_gate
from pytest_qcrypto.measure import counting, machine

EXTRA = 0.02
SAME, MORE = "same", "more02"
CONDITIONS = ("none", "spinning", "memory")
HERE = Path(__file__).resolve().parent

CONFTEST = '''
import json, os
from pytest_qcrypto.backends.hashlib import HashlibPlugin

EXTRA = json.loads(os.environ.get("INSTRUCTIONS_GATE_EXTRA", "{}"))


class Wrapped(HashlibPlugin):
    """hashlib doing the real work, then round(count * EXTRA[name]) more operations."""
    aliases = ()
    default_rank = 990

    def open(self, algorithm, key, variant=None):
        ctx = super().open(algorithm, key, variant)
        extra, real = float(EXTRA.get(self.name, 0.0)), ctx.runner

        def runner(work):
            run = real(work)

            def more(count):
                run(count)
                n = round(count * extra)
                if n:
                    run(n)
            return more
        ctx.runner = runner
        return ctx


class Same(Wrapped):
    name, library = "same", "hashlib, wrapped"


class More02(Wrapped):
    name, library = "more02", "hashlib, wrapped"


def pytest_qcrypto_plugins():
    return [Same(), More02()]
'''

NEIGHBOURS = {
    "spinning": "while True: pass",
    "memory": ("b = bytearray(256 << 20)\n"
               "while True:\n"
               "    for i in range(0, len(b), 4096):\n"
               "        b[i] = (b[i] + 1) & 255\n"),
}


def pytest_args(sizes: Sequence[int], plugins: Sequence[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "pytest_qcrypto.plugin",
            "-q", "--qcrypto-measure=instructions", "--qcrypto-digest", "sha256",
            "--qcrypto-size", ",".join(map(str, sizes)), "--qcrypto-plugin", ",".join(plugins)]


def run(where: Path, args: list[str], extra: float) -> tuple[float, subprocess.CompletedProcess]:
    return timed_run(where, args, {"INSTRUCTIONS_GATE_EXTRA": json.dumps({MORE: extra}),
                                   "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                                   "PYTHONPYCACHEPREFIX": str(where / "pycache"),
                                   "PYTHONDONTWRITEBYTECODE": ""}, 3600)


def verdicts(junit: Path) -> dict[str, str]:
    """``plugin:size`` -> the JUnit verdict of that cell."""
    return {":".join(cell.split(":")[1:3]): props.get("qcrypto_verdict", "?")
            for cell, props in cell_properties(junit).items()}


def per_operation(saved: Path) -> dict[str, float]:
    """``plugin:size`` -> instructions an operation, from a results file."""
    doc = json.loads(saved.read_text())
    return {f"{r['plugin']}:{r['size']}": r["instructions"]["per_operation"]
            for r in doc["results"]}


def condition(where: Path, name: str, k: int, sizes: Sequence[int], base: dict[str, float],
              say: Callable[[str], Any]) -> dict[str, Any]:
    """``k`` compare runs beside neighbour ``name``, each counting both cells."""
    out: dict[str, Any] = {"runs": k, "compares": []}
    plugins = [SAME, MORE]
    with Neighbour(NEIGHBOURS.get(name), settle_s=1.0):  # running before the first compare
        for i in range(k):
            for stale in ("now.json", "junit.xml"):
                (where / stale).unlink(missing_ok=True)
            seconds, done = run(where, pytest_args(sizes, plugins) + [
                "--qcrypto-compare", "base.json", "--qcrypto-save", "now.json",
                "--junitxml", "junit.xml"], EXTRA)
            if done.returncode not in (0, 1):
                raise SystemExit(f"instructions_gate: a compare run ended with "
                                 f"{done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
            got = verdicts(where / "junit.xml") if (where / "junit.xml").exists() else {}
            counts = per_operation(where / "now.json") if (where / "now.json").exists() else {}
            cells = {cell: {"verdict": got.get(cell, "?"), "per_operation": counts.get(cell),
                            "change_pct": (counts[cell] - base[cell]) / base[cell] * 100
                            if cell in counts else None} for cell in sorted(set(got) | set(counts))}
            record = {"plugins": plugins, "seconds": seconds, "exit": done.returncode,
                      "load": os.getloadavg()[0], "cells": cells}
            if set(cells) != {f"{p}:{s}" for p in plugins for s in sizes} or not all(
                    judged(v["verdict"]) for v in cells.values()):
                record["output"] = (done.stdout[-3000:] + done.stderr[-1000:]).splitlines()
            out["compares"].append(record)
            failed = [c for c, v in cells.items() if v["verdict"].startswith("regression")]
            say(f"  {name} compare {i + 1}/{k}: {seconds:.1f} s, failed: "
                f"{', '.join(failed) or 'none'}")
    return summarize(out, sizes)


def judged(verdict: str) -> bool:
    """A JUnit verdict that passed or failed the cell (not ``?``, not ``not judged: ...``)."""
    return verdict == "ok" or verdict.startswith("regression")


def summarize(out: dict[str, Any], sizes: Sequence[int]) -> dict[str, Any]:
    for plugin in (SAME, MORE):
        for size in sizes:
            cell = f"{plugin}:{size}"
            missing = {"verdict": "not counted", "change_pct": None}
            seen = [c["cells"].get(cell, missing) for c in out["compares"]
                    if plugin in c["plugins"]]
            changes = [v["change_pct"] for v in seen if v["change_pct"] is not None]
            out.setdefault("cells", {})[cell] = {
                "counted": len(seen),  # compares that asked for it (judged or not)
                "failed": sum(v["verdict"].startswith("regression") for v in seen),
                "judged": sum(judged(v["verdict"]) for v in seen),
                "change_pct_min": min(changes) if changes else None,
                "change_pct_max": max(changes) if changes else None}
    return out


def targets(out: dict[str, Any], sizes: Sequence[int]) -> list[dict[str, Any]]:
    """One row per condition, size and target: ``target``, ``got`` and ``met`` (a bool: a
    cell that was asked for and not judged does not meet its target)."""
    rows = []
    for name, cond in out["conditions"].items():
        for size in sizes:
            same, more = cond["cells"][f"{SAME}:{size}"], cond["cells"][f"{MORE}:{size}"]
            rows.append({"target": f"instructions, {name}: same code at {size} B fails in 0 "
                                   f"compares",
                         "got": f"{same['failed']}/{same['counted']}",
                         "met": same["failed"] == 0 and same["judged"] == same["counted"] > 0})
            rows.append({"target": f"instructions, {name}: 2% extra work at {size} B caught "
                                   f"in every compare",
                         "got": f"{more['failed']}/{more['counted']}",
                         "met": more["counted"] > 0 and more["failed"] == more["counted"]})
    return rows


def table(out: dict[str, Any], sizes: Sequence[int]) -> list[str]:
    conds = list(out["conditions"])
    lines = [f"{'cell':<22}" + "".join(f"{c:>31}" for c in conds)]
    for plugin, what in ((SAME, "false alarms"), (MORE, "caught")):
        for size in sizes:
            row = f"{plugin + ' ' + str(size) + ' B':<22}"
            for c in conds:
                s = out["conditions"][c]["cells"][f"{plugin}:{size}"]
                lo, hi = s["change_pct_min"], s["change_pct_max"]
                span = f" ({lo:+.3f}..{hi:+.3f}%)" if lo is not None else ""
                row += f" {what + ' ' + str(s['failed']) + '/' + str(s['counted']) + span:>30}"
            lines.append(row)
    return lines


class Part(NamedTuple):
    """What :func:`instruction_part` gives back: the figures (JSON-ready), the text table
    (a heading line, then one line per cell) and the target rows (``target``, ``got``,
    ``met``)."""

    summary: dict[str, Any]
    lines: list[str]
    rows: list[dict[str, Any]]


def instruction_part(runs: int, sizes: Sequence[int] = (16,),
                     say: Callable[[str], Any] = print) -> Part:
    """The instruction gate's part of issue 23's targets: a baseline of ``same`` and
    ``more02`` (no extra work), then ``runs`` compare runs in each neighbour condition of
    :data:`CONDITIONS`, each counting both cells; progress goes to ``say``.

    Without a way to count (no valgrind, no PMU) nothing runs: the summary says why
    (``problem``), and every target row is unmet with that reason.
    """
    sizes = list(sizes)
    out: dict[str, Any] = {
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine.fingerprint(), "load_start": os.getloadavg(),
        "settings": {"algorithm": "sha256", "plugin": "hashlib, wrapped", "sizes": sizes,
                     "extra_work": EXTRA, "runs": runs,
                     "threshold_pct": counted_gate.DEFAULT_THRESHOLD,
                     "target_instructions": counting.TARGET_INSTRUCTIONS},
        "conditions": {}}
    try:
        out["method"] = how = counting.method()
    except counting.CountingError as exc:
        out["problem"] = str(exc)
        rows = [{"target": f"instructions, {c}: {what} at {s} B", "got": f"not run: {exc}",
                 "met": False} for c in CONDITIONS for s in sizes
                for what in ("same code fails in 0 compares", "2% extra work caught")]
        return Part(out, [f"instruction gate: not run: {exc}"], rows)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="instructions-gate-") as tmp:
        where = Path(tmp)
        (where / "conftest.py").write_text(CONFTEST)
        seconds, done = run(where, pytest_args(sizes, [SAME, MORE]) +
                            ["--qcrypto-save", "base.json"], 0.0)
        if done.returncode != 0:
            raise SystemExit(f"instructions_gate: the baseline run failed:\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        base = per_operation(where / "base.json")
        out["baseline"] = {"seconds": seconds, "per_operation": base}
        say(f"instruction gate: baseline counted in {seconds:.1f} s (no extra work): " +
            ", ".join(f"{c} {v:.1f}" for c, v in base.items()))
        for name in CONDITIONS:
            out["conditions"][name] = condition(where, name, runs, sizes, base, say)
    out["seconds"] = time.perf_counter() - started
    out["load_end"] = os.getloadavg()
    compares = [c["seconds"] for cond in out["conditions"].values() for c in cond["compares"]]
    out["compare_seconds"] = {"median": sorted(compares)[len(compares) // 2],
                              "min": min(compares), "max": max(compares)} if compares else {}
    rows = targets(out, sizes)
    lines = [f"instruction gate: sha256 hashlib-wrapped, {'/'.join(map(str, sizes))} B, "
             f"threshold {counted_gate.DEFAULT_THRESHOLD:g}%, counted by {how}, {runs} compares "
             f"per condition, each counting the same code and 2% extra work (change against "
             f"the baseline's count in brackets); {out['seconds']:.0f} s in all, a compare "
             f"{out['compare_seconds'].get('median', 0):.1f} s (median)", *table(out, sizes)]
    return Part(out, lines, rows)


def default_json() -> Path:
    now = datetime.now()
    return HERE / f"results-{now:%Y-%m-%d}" / f"instructions-gate-{now:%H%M%S}.json"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20, help="compares per condition (default 20)")
    p.add_argument("--sizes", default="16", help="sizes in bytes, comma-separated (default 16: the "
                   "smallest operation, where a stray instruction weighs most)")
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write the figures here (default benchmarks/results-<date>/"
                        "instructions-gate-<HHMMSS>.json; --tiny: none)")
    p.add_argument("--tiny", action="store_true",
                   help="a smoke run: 1 compare per condition, 16 B; exit 0")
    args = p.parse_args(argv)
    k = 1 if args.tiny else args.runs
    sizes = [16] if args.tiny else [int(s) for s in args.sizes.split(",")]
    said: list[str] = []
    say = lambda text: (print(text, flush=True), said.append(text))  # noqa: E731
    part = instruction_part(k, sizes, say)
    if "problem" in part.summary:
        say(f"instructions_gate: {part.summary['problem']}")
        return 2
    out = part.summary
    out["verdicts"] = part.rows
    say("")
    for line in part.lines:
        say(line)
    for v in part.rows:
        say(f"  {'met' if v['met'] else 'NOT MET'}: {v['target']}: {v['got']}")
    met = sum(bool(v["met"]) for v in part.rows)
    say(f"targets met: {met} of {len(part.rows)}; {out['seconds']:.0f} s in all; load "
        f"{out['load_start'][0]:.2f} at the start, {out['load_end'][0]:.2f} at the end"
        + ("; a tiny run: not worth quoting" if args.tiny else ""))
    path = Path(args.json) if args.json else (None if args.tiny else default_json())
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(out, indent=1) + "\n")
        path.with_suffix(".txt").write_text("\n".join(said[said.index("") + 1:]) + "\n")
        say(f"figures written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
