"""MkDocs hook: the options reference page, generated from ``pytest_qcrypto.pytest_side.options.OPTIONS``.

``mkdocs.yml`` names this file under ``hooks:``.  :func:`on_files` adds the
page ``reference/options.md`` to the site at build time, rendered by
:func:`render_options_page` from the one table of options the pytest plugin
declares its options from (``options.OPTIONS``), so the reference cannot drift
from ``pytest --help``: every flag, ini key, value name (metavar), choice list
and help text on the page comes from that table or from the registries its help
texts are built from (``render.UNITS``, ``render.LAYOUTS``,
``render.PLOT_SUFFIXES``).  ``tests/test_docs.py`` renders the page through
this module and checks that every option ``pytest --help`` prints is on it.
"""

from __future__ import annotations

import re
from typing import Any

#: Where the generated page appears in the site (``nav`` in mkdocs.yml names it).
PAGE = "reference/options.md"

#: ``--qcrypto-min-time`` -> the registry its value is one of (shown as "choices").
_CHOICES = {
    "--qcrypto-unit": lambda render: list(render.UNITS),
    "--qcrypto-format": lambda render: list(render.LAYOUTS),
    "--qcrypto-plot": lambda render: [f"PATH ending {s}" for s in render.PLOT_SUFFIXES],
}

#: The default as the help text states it: "(default 0.1)", "Default: KiB/s.",
#: "(default 10%; ini ...": up to ")", ";" or a sentence's full stop.
_DEFAULT = re.compile(r"\b[Dd]efault:?\s+(.+?)(?:\)|;|\.(?:\s|$))")
#: A choice marked in a list of choices: "qcrypto (default) ...".
_MARKED = re.compile(r"(\S+) \(default\)")

_INTRO = """\
# Options reference

Every `--qcrypto-*` option and `qcrypto_*` ini key, generated when the site is built from
the option table the plugin declares them from (`pytest_qcrypto/pytest_side/options.py`, `OPTIONS`),
so this page and `pytest --help` (group "crypto speed benchmarks") always agree.

- Write a value joined with `=`: `--qcrypto-compare=base.json`, not two words. pytest picks
  its rootdir and ini file before it knows plugin options, so a value that is the path of an
  existing file, given as a separate word, can make it pick them from that path. The
  `qcrypto` and `cryptotest` commands join values this way for you.
- An ini key (in `pytest.ini`, `tox.ini`, `setup.cfg` or `[tool.pytest.ini_options]` of
  `pyproject.toml`, or `-o KEY=VALUE`) fills in the default of its option; it never starts
  the speed matrix by itself. A bad value from an ini file names the key and the file
  (`qcrypto_min_time in pytest.ini: 'abc' is not a number of seconds`).
- Bad input is a usage error (exit code 4) that names the valid choices.
- Every option passes through the [`qcrypto` command](../faces/qcrypto.md) under the same
  spelling; [`cryptotest`](../faces/cryptotest.md) passes `--qcrypto-NAME=VALUE` through,
  except the ones it sets itself.
"""


def _escape(text: str) -> str:
    """``text`` as literal Markdown: no emphasis, links, HTML or table breaks."""
    text = text.replace("\\", "\\\\")
    for ch in "*_[]`|":
        text = text.replace(ch, "\\" + ch)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _help(option: Any) -> str:
    """The help text as ``pytest --help`` prints it (argparse turns ``%%`` into ``%``)."""
    return " ".join(option.help_text().replace("%%", "%").split())


def _default(option: Any) -> str:
    if option.action == "store_true":
        return "off"
    match = _MARKED.search(_help(option)) or _DEFAULT.search(_help(option))
    if match:
        return match.group(1).strip()
    if option.default not in (None, [], ()):
        return str(option.default)
    return "none"


def _anchor(option: Any) -> str:
    """``qcrypto-min-time`` for ``--qcrypto-min-time``, the ini key for an ini-only entry."""
    return (option.flag or option.ini).lstrip("-").replace("_", "-")


def _spelling(option: Any) -> str:
    """``--qcrypto-min-time=SECONDS`` (the recommended one-word spelling), or the bare flag."""
    if option.flag is None:
        return option.ini
    return f"{option.flag}={option.metavar}" if option.metavar else option.flag


def public_options() -> list[Any]:
    """The entries of ``OPTIONS`` that ``pytest --help`` shows (hidden flags left out)."""
    from pytest_qcrypto.pytest_side import options

    return [o for o in options.OPTIONS if not o.hidden]


def hidden_options() -> list[Any]:
    from pytest_qcrypto.pytest_side import options

    return [o for o in options.OPTIONS if o.hidden]


def render_options_page() -> str:
    """The Markdown of the options reference page."""
    from pytest_qcrypto.pytest_side import options
    from pytest_qcrypto.output import render

    lines = [_INTRO, "## Summary", "",
             "| option | ini key | default | value |", "|---|---|---|---|"]
    shown = public_options()
    for o in shown:
        choices = _CHOICES.get(o.flag or "")
        value = (", ".join(f"`{c}`" for c in choices(render)) if choices
                 else f"`{o.metavar}`" if o.metavar else "none (a switch)"
                 if o.action == "store_true" else "lines (ini list)")
        flag = f"[`{o.flag}`](#{_anchor(o)})" if o.flag else f"[(ini only)](#{_anchor(o)})"
        ini = f"`{o.ini}`" if o.ini else ""
        lines.append(f"| {flag} | {ini} | {_escape(_default(o))} | {value} |")
    lines += ["", "## Options", ""]
    for o in shown:
        lines.append(f"### `{_spelling(o)}` {{ #{_anchor(o)} }}")
        lines.append("")
        facts = []
        if o.ini:
            ini_type = f" ({o.ini_type})" if o.ini_type else ""
            ini_help = f": {_escape(o.ini_help)}" if o.ini_help and o.flag else ""
            facts.append(f"- ini key: `{o.ini}`{ini_type}{ini_help}")
        facts.append(f"- default: {_escape(_default(o))}")
        choices = _CHOICES.get(o.flag or "")
        if choices:
            facts.append("- choices: " + ", ".join(f"`{c}`" for c in choices(render)))
        if o.action == "append":
            facts.append("- repeatable")
        lines += facts + ["", _escape(_help(o)), ""]
    hidden = hidden_options()
    if hidden:
        lines += ["## Set by the commands", "",
                  "Not shown by `pytest --help`: the `qcrypto` and `cryptotest` commands set "
                  "these themselves.", ""]
        lines += [f"- `{_spelling(o)}`: {_escape(_help(o))}" for o in hidden]
        lines.append("")
    lines += [f"*The option group is `{options.GROUP[1]}` in `pytest --help`.*", ""]
    return "\n".join(lines)


def on_files(files: Any, config: Any) -> Any:
    """Add the generated :data:`PAGE` to the site's files (MkDocs 1.6 event)."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, PAGE, content=render_options_page()))
    return files
