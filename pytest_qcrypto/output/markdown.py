"""GitHub-flavoured markdown: the results tables, the change grid, the regression gate's tables.

The ``markdown`` layout (:mod:`pytest_qcrypto.output.layouts`) and the GitHub job summary
(``$GITHUB_STEP_SUMMARY``, :mod:`pytest_qcrypto.output.render`) are drawn from these.  Every table is
a pipe table (a header line, an alignment line: labels left, numbers right, then a line per
row).  Every string that may come from a results file (plugin, algorithm and library names,
versions, notes) goes through :func:`md`, so that nothing in a file can make markup in a job
summary: no raw HTML, link, image or code span, no bare URL made a link.
Nothing here imports pytest.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pytest_qcrypto.output import outliers
from pytest_qcrypto.output.tables import (DEFAULT_UNIT, MARKERS, Changes, GateTables, SummaryTable,
                                   Table, cell_text, header, notes, unit_of)


#: What could make markup, each escaped with a backslash (CommonMark: any ASCII punctuation
#: may be): raw HTML and entities (``< > &``), links and images (``[ ]``: an image is ``![``),
#: code spans (`` ` ``), the escape itself, table cells (``|``), strike-through (``~``).
#: Emphasis (``* _``) is left alone: it changes no more than how text looks.
_MARKUP = str.maketrans({c: "\\" + c for c in "\\`[]<>&|~"})
#: The starts of GitHub's bare links (``https://``, ``www.``), whose ``:`` or ``.`` is escaped.
_BARE_LINK = re.compile(r"(?i)\b(https?|ftp|mailto|file|javascript|data)(:)|\b(www)(\.)")


def md(text: str) -> str:
    """``text`` for a table cell, heading or list item, inert (module doc)."""
    return _BARE_LINK.sub(lambda m: f"{m.group(1) or m.group(3)}\\{m.group(2) or m.group(4)}",
                          text.translate(_MARKUP))


def md_note(note: str) -> str:
    """A note line as a list item, its marker (``-``, ``x``, an outlier's ``?``) in code so
    it is not a bullet."""
    marker, _, rest = note.strip().partition(" ")
    if marker in (*MARKERS.values(), outliers.MARK):
        return f"`{marker}` {md(rest)}"
    return md(note.strip())


def pipe_table(columns: Sequence[str], rows: Sequence[Sequence[str]],
               numeric: Sequence[int] = ()) -> list[str]:
    """A pipe table: ``| a | b |``, ``| :--- | ---: |`` (``numeric`` columns, by index, are
    right-aligned; the others left), then a line per row.  Cells are escaped (:func:`md`)."""
    align = " | ".join("---:" if i in numeric else ":---" for i in range(len(columns)))
    return ([f"| {' | '.join(md(c) for c in columns)} |", f"| {align} |"]
            + [f"| {' | '.join(md(c) for c in row)} |" for row in rows])


def markdown_lines(tables: Sequence[Table], unit: str = DEFAULT_UNIT) -> list[str]:
    """Each table as a GitHub-flavoured markdown heading, table and list of notes."""
    lines: list[str] = []
    for t in tables:
        params = [f"Parameters: {md(t.params)}", ""] if t.params else []
        lines += [f"### {md(header(t, unit).removesuffix(':'))}", "", *params,
                  "| plugin | " + " | ".join(str(s) for s in t.columns) + " |",
                  "| :--- |" + " ---: |" * len(t.columns)]
        odd = outliers.outliers(t)  # marked as in the qcrypto table, said in the notes
        for p in t.plugins:
            cells = [cell_text(t.cells.get((p, s)), unit_of(t, unit))
                     + (outliers.MARK if (p, s) in odd else "") for s in t.columns]
            lines.append(f"| {md(p)} | " + " | ".join(cells) + " |")
        extra = notes(t) + [outliers.note(p, s, why) for (p, s), why in odd.items()]
        if extra:
            lines.append("")
            lines.extend(f"- {md_note(n)}" for n in extra)
        lines.append("")
    return lines[:-1]


def markdown_legend(lines: Sequence[str]) -> list[str]:
    """Notes (a joined report's legend) as markdown: headings bold, entries a list."""
    out: list[str] = []
    for line in lines:
        if line.startswith("  "):
            out.append(f"- {md(line.strip())}")
        else:
            out += ["", f"**{md(line.rstrip(':'))}**", ""]
    return out[1:] if out and out[0] == "" else out


def markdown_changes(changes: Changes | Sequence[str] | None) -> list[str]:
    """The change grid under a table (:class:`.tables.Changes`) as markdown: its title in
    bold, a pipe table (a row per plugin, a column per size), its marks' meanings as a list.

    Nothing when no cell has a change to show; lines already drawn go in a ``text`` block.
    """
    if changes is None:
        return []
    if not isinstance(changes, Changes):
        return ["```text", *changes, "```"] if changes else []
    if all(t == "-" for t in changes.texts.values()):
        return []
    rows = [(p, *(changes.texts[(p, s)] for s in changes.sizes)) for p in changes.plugins]
    lines = [f"**{md(changes.title.removesuffix(':'))}**", "",
             *pipe_table(("plugin", *(str(s) for s in changes.sizes)), rows,
                         range(1, len(changes.sizes) + 1))]
    if changes.notes:
        lines.append("")
        lines += [f"- `{mark}` {md(rest)}" for mark, _, rest in
                  (note.partition(" ") for note in changes.notes)]
    return lines


def markdown_gate(gate: GateTables | None) -> list[str]:
    """The regression gate's outcome: a ``### Regression gate`` heading, its sentence, then
    each table (its title in bold, then a pipe table).  Nothing for None."""
    if gate is None:
        return []
    lines = ["### Regression gate", "", md(gate.heading)]
    for t in gate.tables:
        lines += ["", f"**{md(t.title)}**", "", *pipe_table(t.columns, t.rows, t.numeric)]
    return lines
