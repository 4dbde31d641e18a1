#!/usr/bin/env python3
"""How often the regression gate catches a known slowdown, and how often it fails a run that
did not change: the gate as a CI team meets it, with met / not-met verdicts.

Run from the repository (the package installed, e.g. ``pip install -e .``)::

    python benchmarks/gate_power.py                  # about 8 minutes; writes qcrypto-gate-power.json
    python benchmarks/gate_power.py --json out.json  # elsewhere
    python benchmarks/gate_power.py --tiny           # a smoke run: 2 runs per condition, exit 0

Five crypto plugins ``slow00`` ... ``slow30`` wrap the real ``hashlib`` plugin: each round
runs the real ``count`` operations and then ``count * s / (1 - s)`` more of the same, so its
throughput is exactly ``1 - s`` of the real one (``s`` = 0%, 5%, 10%, 20%, 30%).  One pytest
run (default rounds, min-time and confirmation tries) saves a baseline with every ``s`` set
to 0; then ``K`` compare runs (``pytest --qcrypto-compare``, default 10% threshold, one
pytest process each, the cells of all five slowdowns in one run) in two conditions: quiet,
and beside a neighbour process spinning on one CPU.  A cell that fails (JUnit verdict
``regression``) is a detection; ``slow00`` failing is a false alarm.  Plain runs (the same
cells, no compare) interleaved with the compare runs give the time a gated run costs.

Targets (issue 14): quiet, 10% threshold: 10% slowdowns caught in at least 19 of 20, false
alarms at most 1 in 20; busy neighbour: 20% caught in at least 19 of 20, false alarms at most
1 in 20; a gated run at most 2x the wall time of a plain one.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchlib import Neighbour, cell_properties, timed_run
from pytest_qcrypto.gate import stats as gate_stats
from pytest_qcrypto.measure import machine

SLOWDOWNS = (0.0, 0.05, 0.10, 0.20, 0.30)
SIZE = 4096
THRESHOLD = 10.0

CONFTEST = '''
import json, os
from pytest_qcrypto.backends.hashlib import HashlibPlugin

EXTRA = json.loads(os.environ.get("GATE_POWER_EXTRA", "{}"))


class Slowed(HashlibPlugin):
    """hashlib doing the real work, then the extra fraction EXTRA[name] of it again."""
    aliases = ()
    default_rank = 990

    def open(self, algorithm, key, variant=None):
        ctx = super().open(algorithm, key, variant)
        extra, real = float(EXTRA.get(self.name, 0.0)), ctx.runner

        def runner(work):
            run = real(work)

            def slowed(count):
                run(count)
                more = round(count * extra)
                if more:
                    run(more)
            return slowed
        ctx.runner = runner
        return ctx


def pytest_qcrypto_plugins():
    return [type(f"Slow{n}", (Slowed,), {"name": n, "library": "hashlib, slowed"})()
            for n in NAMES]
'''


def name(s: float) -> str:
    return f"slow{round(s * 100):02d}"


def extra_env(slowed: bool) -> dict[str, str]:
    extra = {name(s): (s / (1 - s) if slowed else 0.0) for s in SLOWDOWNS}
    return {"GATE_POWER_EXTRA": json.dumps(extra)}


def pytest_args(min_time: float | None) -> list[str]:
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
            "--qcrypto-digest", "sha256", "--qcrypto-size", str(SIZE),
            "--qcrypto-plugin", ",".join(name(s) for s in SLOWDOWNS)]
    # a smoke run (--tiny) takes no pause before a confirmation try: it checks the script
    return args + (["--qcrypto-min-time", str(min_time), "--qcrypto-confirm-pause=0"]
                   if min_time else [])


def run(where: Path, args: list[str], slowed: bool) -> tuple[float, subprocess.CompletedProcess]:
    return timed_run(where, args, extra_env(slowed), 600)


def verdicts(junit: Path) -> dict[str, dict[str, str]]:
    """Per plugin: the JUnit properties of its cell."""
    return {cell.split(":")[1]: props for cell, props in cell_properties(junit).items()}


def condition(where: Path, label: str, k: int, min_time: float | None,
              say: Any) -> dict[str, Any]:
    """``k`` compare runs (and a plain run after every second one) in this condition."""
    caught = {name(s): 0 for s in SLOWDOWNS}
    statuses: dict[str, list[str]] = {name(s): [] for s in SLOWDOWNS}
    p_values: dict[str, list[float]] = {name(s): [] for s in SLOWDOWNS}
    gated_s, plain_s = [], []
    for i in range(k):
        seconds, done = run(where, pytest_args(min_time) + [
            "--qcrypto-compare", "base.json", "--junitxml", "junit.xml"], True)
        if done.returncode not in (0, 1):
            raise SystemExit(f"gate_power: a compare run failed ({done.returncode}):\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-2000:]}")
        gated_s.append(seconds)
        for plugin, props in verdicts(where / "junit.xml").items():
            statuses[plugin].append(props.get("qcrypto_verdict", "?"))
            caught[plugin] += props.get("qcrypto_verdict", "").startswith("regression")
            if "qcrypto_p_value" in props:
                p_values[plugin].append(float(props["qcrypto_p_value"]))
        if i % 2 == 1:
            plain_s.append(run(where, pytest_args(min_time), True)[0])
        say(f"  {label} run {i + 1}/{k}: {seconds:.1f} s, failed: "
            + (", ".join(p for p, v in statuses.items() if v[-1].startswith("regression"))
               or "none"))
    return {"runs": k, "caught": caught, "statuses": statuses, "p_values": p_values,
            "gated_s": gated_s, "plain_s": plain_s,
            "gated_over_plain": (statistics.median(gated_s) / statistics.median(plain_s)
                                 if plain_s else None)}


def targets(out: dict[str, Any]) -> list[dict[str, Any]]:
    quiet, busy = out["conditions"]["quiet"], out["conditions"]["busy"]

    def rate(cond: dict[str, Any], s: float) -> tuple[int, int]:
        return cond["caught"][name(s)], cond["runs"]

    rows = []
    for label, cond, s in (("quiet", quiet, 0.10), ("busy", busy, 0.20)):
        hit, k = rate(cond, s)
        rows.append({"target": f"{label}: {s:.0%} slowdowns caught in >= 95% of runs",
                     "got": f"{hit}/{k}", "met": hit >= 0.95 * k})
        fa, k = rate(cond, 0.0)
        rows.append({"target": f"{label}: false alarms in <= 5% of runs",
                     "got": f"{fa}/{k}", "met": fa <= 0.05 * k})
    ratios = [c["gated_over_plain"] for c in (quiet, busy) if c["gated_over_plain"]]
    worst = max(ratios) if ratios else float("nan")
    rows.append({"target": "a gated run at most 2x the time of a plain one",
                 "got": f"{worst:.2f}x", "met": worst <= 2.0})
    return rows


def table(out: dict[str, Any]) -> list[str]:
    lines = [f"{'slowdown':>9} {'extra work':>10}  " + "  ".join(
        f"{c:>22}" for c in out["conditions"])]
    for s in SLOWDOWNS:
        cells = []
        for cond in out["conditions"].values():
            hit, k = cond["caught"][name(s)], cond["runs"]
            what = "false alarms" if s == 0 else "caught"
            cells.append(f"{what} {hit:>2}/{k} ({hit / k:4.0%})")
        lines.append(f"{s:>9.0%} {s / (1 - s):>10.1%}  " + "  ".join(f"{c:>22}" for c in cells))
    times = "  ".join(f"{label}: gated {statistics.median(c['gated_s']):.1f} s, plain "
                      f"{statistics.median(c['plain_s']):.1f} s (median)"
                      for label, c in out["conditions"].items() if c["plain_s"])
    return lines + [times]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write the figures here (default: qcrypto-gate-power.json; --tiny: none)")
    p.add_argument("--runs", type=int, default=20, help="compare runs per condition (default 20)")
    p.add_argument("--tiny", action="store_true",
                   help="a smoke run: 2 runs per condition, min-time 0.01 s; exit 0")
    args = p.parse_args(argv)
    k, min_time = (2, 0.01) if args.tiny else (args.runs, None)
    say = lambda text: print(text, flush=True)  # noqa: E731
    out: dict[str, Any] = {
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": machine.fingerprint(), "load_start": os.getloadavg(),
        "settings": {"slowdowns": SLOWDOWNS, "size": SIZE, "threshold_pct": THRESHOLD,
                     "runs": k, "min_time_s": min_time or "default", "rule": gate_stats.RULE,
                     "false_alarm_rate": gate_stats.ALPHA},
        "conditions": {}}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gate-power-") as tmp:
        where = Path(tmp)
        names = [name(s) for s in SLOWDOWNS]
        (where / "conftest.py").write_text(f"NAMES = {names!r}\n" + CONFTEST)
        seconds, done = run(where, pytest_args(min_time) + ["--qcrypto-save", "base.json"], False)
        if done.returncode != 0:
            raise SystemExit(f"gate_power: the baseline run failed:\n{done.stdout[-3000:]}"
                             f"\n{done.stderr[-2000:]}")
        say(f"baseline saved in {seconds:.1f} s (every slowdown 0)")
        out["conditions"]["quiet"] = condition(where, "quiet", k, min_time, say)
        with Neighbour("while True: pass"):  # spinning on one CPU
            out["conditions"]["busy"] = condition(where, "busy", k, min_time, say)
    out["seconds"] = time.perf_counter() - started
    out["load_end"] = os.getloadavg()
    out["verdicts"] = targets(out)
    say(f"\ngate power: sha256 hashlib-wrapped {SIZE} B, threshold {THRESHOLD:g}%, {k} compare "
        f"runs per condition, {gate_stats.RULE} at {gate_stats.ALPHA:g}")
    for line in table(out):
        say(line)
    met = sum(v["met"] for v in out["verdicts"])
    for v in out["verdicts"]:
        say(f"  {'met' if v['met'] else 'NOT MET'}: {v['target']}: {v['got']}")
    say(f"targets met: {met} of {len(out['verdicts'])}; {out['seconds']:.0f} s in all; load "
        f"{out['load_start'][0]:.2f} at the start, {out['load_end'][0]:.2f} at the end"
        + ("; a tiny run: not worth quoting" if args.tiny else ""))
    path = args.json or (None if args.tiny else "qcrypto-gate-power.json")
    if path:
        Path(path).write_text(json.dumps(out, indent=1) + "\n")
        say(f"figures written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
