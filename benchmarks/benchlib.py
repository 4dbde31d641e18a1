"""What the benchmark scripts share: a neighbour process on one CPU, a timed pytest run and the
qcrypto properties of a JUnit file (the gate benchmarks), and where a script's JSON goes
(:func:`write_json`).

Imported by those scripts from their own folder (``python benchmarks/NAME.py`` puts it first on
``sys.path``); not part of the package.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

#: The repository: results go to its ``benchmarks/results-DATE/``.
REPO = Path(__file__).resolve().parent.parent


def write_json(out: Mapping[str, Any], path: str | None, name: str, started: datetime,
               tiny: bool = False) -> None:
    """Write ``out`` as JSON to ``path`` (``--json``), else, unless ``tiny``, to
    ``benchmarks/results-DATE/NAME-HHMMSS.json`` of ``started``; say where."""
    where = path or (None if tiny else str(
        REPO / "benchmarks" / f"results-{started:%Y-%m-%d}" / f"{name}-{started:%H%M%S}.json"))
    if where:
        Path(where).parent.mkdir(parents=True, exist_ok=True)
        Path(where).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {where}")


class Neighbour:
    """A process running ``code`` on one CPU (the last) while the block runs; none for ``None``.

    ``settle_s``: seconds to let it start before the block's first run."""

    def __init__(self, code: str | None, settle_s: float = 0.0) -> None:
        self.code, self.settle_s = code, settle_s
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Neighbour:
        if self.code:
            self.proc = subprocess.Popen([sys.executable, "-c", self.code])
            try:
                os.sched_setaffinity(self.proc.pid, {max(os.sched_getaffinity(0))})
            except (AttributeError, OSError):
                pass
            time.sleep(self.settle_s)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()


def timed_run(where: Path, args: list[str], env: Mapping[str, str],
              timeout: float) -> tuple[float, subprocess.CompletedProcess[str]]:
    """Run ``args`` in ``where`` with ``env`` added to this environment: (wall seconds, result)."""
    start = time.perf_counter()
    done = subprocess.run(args, cwd=where, env={**os.environ, **env}, capture_output=True,
                          text=True, timeout=timeout)
    return time.perf_counter() - start, done


def cell_properties(junit: Path) -> dict[str, dict[str, str]]:
    """Per cell (its ``qcrypto_cell``, ``sha256:openssl:16:digest``): the JUnit properties."""
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = {p.get("name"): p.get("value") for p in case.findall("properties/property")}
        if "qcrypto_cell" in props:
            out[str(props["qcrypto_cell"])] = props
    return out
