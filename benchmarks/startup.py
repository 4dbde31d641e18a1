#!/usr/bin/env python3
"""What registering pytest-qcrypto costs a pytest run that never asks for a benchmark.

Run from the repository (the package installed, e.g. ``pip install -e .``)::

    python benchmarks/startup.py                   # about 1 minute; writes qcrypto-startup.json
    python benchmarks/startup.py --json out.json   # elsewhere
    python benchmarks/startup.py --before REV      # the "before" tree (default: 8e590e5,
                                                   # the last commit before the layout issue)
    python benchmarks/startup.py --tiny            # a smoke run: 2 rounds, no "before"

A one-test project (``def test_one(): assert True``) is run by ``python -m pytest`` in three
variants, with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` so that no other installed plugin takes
part: pytest alone; pytest with ``-p pytest_qcrypto.plugin`` from this tree; and the same from
the ``before`` tree (``git archive REV pytest_qcrypto``, put first on ``PYTHONPATH``).

Two measures, each reported for "before" and "after":
- import time (``python -X importtime``): the self time of every module that our plugin's
  imports brought in (``pytest_qcrypto*`` and whatever they imported), summed, and its share
  of pytest's own (the self time of every import of the pytest-alone run), the median over
  the rounds; also the list of ``pytest_qcrypto`` modules that were imported;
- wall time of the whole run, the three variants interleaved round by round (this machine's
  speed drifts in phases of a second or two, so variants taken back to back would each sample
  one phase); the plugin's cost is the median of the per-round differences.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from datetime import datetime, timezone
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: The last commit before the layout issue (22): the flat package that imported ~60 modules.
BEFORE = "8e590e5"
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)$")


def importtime_tree(stderr: str) -> list[tuple[int, int, str, str | None]]:
    """``(self_us, level, module, parent)`` of each ``-X importtime`` line (parent: the import
    that caused it, None at the top); the lines come children first (post-order)."""
    entries: list[tuple[int, int, str]] = []
    for line in stderr.splitlines():
        m = _LINE.match(line)
        if m:
            entries.append((int(m.group(1)), len(m.group(3)) // 2, m.group(4)))
    parents: dict[int, str | None] = {}
    stack: list[int] = []
    for i, (_, level, name) in enumerate(entries):
        while stack and entries[stack[-1]][1] > level:
            parents[stack.pop()] = name
        stack.append(i)
    return [(us, level, name, parents.get(i)) for i, (us, level, name) in enumerate(entries)]


def ours_us(tree: list[tuple[int, int, str, str | None]]) -> tuple[int, list[str]]:
    """Self time (microseconds) of every import that pytest_qcrypto brought in, and our
    modules by name."""
    ours_by_index: list[bool] = [False] * len(tree)
    # a parent comes after its children: walk from the end so each parent is decided first
    decided: dict[str, bool] = {}
    for i in range(len(tree) - 1, -1, -1):
        _, _, name, parent = tree[i]
        mine = name.startswith("pytest_qcrypto") or (parent is not None and decided.get(parent, False))
        ours_by_index[i] = mine
        decided[name] = mine
    total = sum(us for (us, *_), mine in zip(tree, ours_by_index) if mine)
    return total, sorted({name for _, _, name, _ in tree if name.startswith("pytest_qcrypto")})


def run_once(project: Path, plugin_path: Path | None, importtime: bool) -> tuple[float, str]:
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    args = [sys.executable] + (["-X", "importtime"] if importtime else []) + [
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"]
    if plugin_path is not None:
        env["PYTHONPATH"] = str(plugin_path)
        args += ["-p", "pytest_qcrypto.plugin"]
    start = time.perf_counter()
    r = subprocess.run(args, cwd=project, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - start
    if r.returncode != 0:
        raise SystemExit(f"startup.py: the one-test run failed ({r.returncode}):\n{r.stdout}"
                         f"{r.stderr[-2000:]}")
    return seconds, r.stderr


def before_tree(rev: str, where: Path) -> Path:
    """``pytest_qcrypto`` as it was at ``rev``, unpacked under ``where``."""
    data = subprocess.run(["git", "archive", "--format=tar", rev, "pytest_qcrypto"], cwd=REPO,
                          capture_output=True, check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as tar:
        tar.extractall(where, filter="data")
    return where


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", default=None, metavar="PATH",
                   help="write the figures here (default: qcrypto-startup.json; --tiny: none)")
    p.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    p.add_argument("--before", default=BEFORE, metavar="REV",
                   help=f"the tree to compare with (default {BEFORE}); 'none' to skip it")
    p.add_argument("--tiny", action="store_true", help="a smoke run: 2 rounds, no before")
    args = p.parse_args(argv)
    rounds = 2 if args.tiny else args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "test_one.py").write_text("def test_one():\n    assert True\n")
        variants: dict[str, Path | None] = {"pytest alone": None, "after": REPO}
        if not args.tiny and args.before != "none":
            variants["before"] = before_tree(args.before, Path(tmp) / "before")
        wall: dict[str, list[float]] = {v: [] for v in variants}
        imports: dict[str, list[int]] = {v: [] for v in variants}
        modules: dict[str, list[str]] = {}
        for _ in range(rounds):
            for name, path in variants.items():  # interleaved: one of each per round
                seconds, _ = run_once(project, path, importtime=False)
                wall[name].append(seconds)
                _, stderr = run_once(project, path, importtime=True)
                tree = importtime_tree(stderr)
                if path is None:
                    imports[name].append(sum(us for us, *_ in tree))
                else:
                    us, mods = ours_us(tree)
                    imports[name].append(us)
                    modules[name] = mods
    pytest_us = statistics.median(imports["pytest alone"])
    out: dict[str, object] = {
        "benchmark": "startup", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average": os.getloadavg()},
        "rounds": rounds, "before": None if "before" not in variants else args.before,
        "pytest_import_ms": round(pytest_us / 1000, 1),
        "pytest_alone_wall_s": round(statistics.median(wall["pytest alone"]), 3),
        "variants": {}}
    lines = [f"pytest's own imports in a one-test run: {pytest_us / 1000:.1f} ms "
             f"(median of {rounds}); the whole run {out['pytest_alone_wall_s']:.3f} s"]
    for name in [v for v in ("before", "after") if v in variants]:
        us = statistics.median(imports[name])
        extra = statistics.median(a - b for a, b in zip(wall[name], wall["pytest alone"]))
        out["variants"][name] = {  # type: ignore[index]
            "plugin_import_ms": round(us / 1000, 1),
            "share_of_pytest_imports": round(us / pytest_us, 3),
            "wall_s": round(statistics.median(wall[name]), 3),
            "wall_extra_s": round(extra, 3),
            "modules": modules.get(name, [])}
        lines.append(f"{name:>6}: the plugin's imports {us / 1000:6.1f} ms = "
                     f"{us / pytest_us:5.1%} of pytest's; run +{extra * 1000:.0f} ms "
                     f"(median of per-round differences); {len(modules.get(name, []))} "
                     "pytest_qcrypto modules")
    print("\n".join(lines))
    path = args.json or (None if args.tiny else "qcrypto-startup.json")
    if path:
        Path(path).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
