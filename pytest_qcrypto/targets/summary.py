"""The lines ``--qcrypto-target`` adds under the tables (see :mod:`pytest_qcrypto.pytest_side.targets`).

* the legend: each target's spec and machine, then every field in which the machines,
  the plugins' versions or their per-algorithm implementations differ (as ``qcrypto
  report`` prints for joined files, :func:`pytest_qcrypto.output.report.legend`), and each
  target that was not used, with the reason;
* with ``--qcrypto-interleave``: one table per algorithm and direction (size-less
  algorithms: one per algorithm, a column per operation) of each target's paired ratio against the first target (:class:`pytest_qcrypto.targets.pairs.Ratio`);
* with ``--qcrypto-compare-target``: the A/B verdict, one line, and one line per
  regressed cell.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.gate import verdicts as gate
from pytest_qcrypto.targets import pairs
from pytest_qcrypto.output import report


def legend_lines(targets: Any, ledger: Any) -> list[str]:
    """``targets:`` and a line per target, the differences, the unused targets."""
    files, labels, unused = [], [], []
    measured = [r.measurement for r in ledger.records]
    for name, link in targets.links.items():
        if link.problem:
            unused.append(f"  {name}: not used: {link.problem}")
            continue
        hello = link.hello()
        plugins = {}
        for m in measured:
            base, _, where = m.plugin.rpartition("@")
            if where != name or base in plugins:
                continue
            info = _plugin_info(hello, base)
            plugins[base] = {"version": info.get("version")}
        files.append(SimpleNamespace(path=link.spec, complete=True, settings={},
                                     machine=hello.get("machine", {}), plugins=plugins))
        labels.append(name)
    lines = report.legend(files, labels) if files else []
    if lines:
        lines[0] = "targets:"
    gone = [f"  {n}: {link.gone}" for n, link in targets.links.items() if link.gone]
    return lines + unused + gone


def _plugin_info(hello: dict[str, Any], base: str) -> dict[str, Any]:
    wanted = base.partition(":")[0].lower()
    for name, info in hello.get("plugins", {}).items():
        if wanted in (name.lower(), *(a.lower() for a in info.get("aliases", ()))):
            return info
    return {}


def ratio_lines(targets: Any) -> list[str]:
    """Each target's throughput over the first's, per cell measured interleaved: a table per
    algorithm and direction, a column per size; a size-less algorithm's table (signatures,
    KEMs, KDFs: size 0) has a column per operation.  A pair without a ratio (a zero figure)
    shows ``no ratio`` and a line saying why."""
    if not targets.options.interleave:
        return []
    ref = targets.reference
    rows: dict[tuple[str, str], dict[str, dict[int | str, str]]] = {}
    why: list[str] = []
    for (alg, base, size, _), cell in targets.cells.items():
        first = cell.interleaved.get(ref)
        if not cell.interleaved or not hasattr(first, "rounds_s"):
            continue
        for name, m in cell.interleaved.items():
            if name == ref or not hasattr(m, "rounds_s"):
                continue
            label = f"{base}@{name}/{ref}"
            column: int | str = size if size else str(m.direction)
            try:
                text = pairs.paired_ratio(first, m).text()
            except ValueError as exc:
                text = "no ratio"
                why.append(f"  {label} {alg} {_heading(column)}: no ratio: {exc}")
            key = (alg, str(m.direction) if size else "")
            rows.setdefault(key, {}).setdefault(label, {})[column] = text
    out: list[str] = []
    for (alg, direction), table in rows.items():
        columns = list(dict.fromkeys(c for cells in table.values() for c in cells))
        if direction:  # sized: columns by size; size-less: operations as measured
            columns.sort()
        width = max(len(label) for label in table) + 2
        heads = [_heading(c) for c in columns]
        cols = [max(len(h), *(len(c.get(s, "-")) for c in table.values())) + 2
                for h, s in zip(heads, columns)]
        what = catalog.lookup(alg)
        title = f"{alg} ({direction})" if direction and what is not None and what.can_decrypt \
            else alg
        if not out:
            out.append(f"interleaved: throughput over @{ref}'s, geometric mean of the paired "
                       "rounds [95% t-interval]")
        out.append(title.ljust(width) + "".join(h.rjust(c) for h, c in zip(heads, cols)))
        for label, cells in table.items():
            out.append(label.ljust(width)
                       + "".join(cells.get(s, "-").rjust(c) for s, c in zip(columns, cols)))
    return out + why


def _heading(column: int | str) -> str:
    """``4096 bytes`` for a size, the operation itself (``verify``) for a size-less cell."""
    return f"{column} bytes" if isinstance(column, int) else column


def ab_verdicts(targets: Any, ledger: Any) -> list[Any]:
    """The verdicts of the cells judged against the compare target."""
    ref = targets.options.compare
    if ref is None:
        return []
    return [v for (_, plugin, _, _), v in ledger.verdicts().items()
            if "@" in plugin and plugin.rpartition("@")[2] != ref]


def ab_judged(targets: Any, ledger: Any) -> list[Any]:
    """The verdicts of the cells actually judged against the compare target."""
    return [v for v in ab_verdicts(targets, ledger)
            if v.baseline is not None and not v.not_judged]


def ab_lines(targets: Any, ledger: Any) -> list[str]:
    """``qcrypto: A/B against @old: 4 cells judged, 1 regressed`` and each regression."""
    ref = targets.options.compare
    if ref is None:
        return []
    verdicts = ab_verdicts(targets, ledger)
    judged = ab_judged(targets, ledger)
    failed = [v for v in verdicts if v.failed]
    regressed = [v for v in judged if v.status == gate.REGRESSION]
    noise = [v for v in judged if v.status in (gate.NOISE, gate.BUSY)]
    if not judged:
        return [f"qcrypto: A/B against @{ref}: FAILED: no cell was judged (no other target "
                f"measured a cell that @{ref} measured); the gate never passes without "
                "judging"]
    word = "FAILED" if failed else "passed"
    lines = [f"qcrypto: A/B against @{ref}: {word}: {catalog.plural(len(judged), 'cell')} "
             f"judged, {len(regressed)} regressed"
             + (f", {len(noise)} slower within noise" if noise else "")]
    lines += [f"  {message}" for v in failed for message in v.failures]
    return lines
