"""The documentation: the MkDocs site builds strictly, the options reference is complete,
the README stays short with its two set-up commands, and no example splits an option from
its value.

The site is ``mkdocs.yml`` + ``docs/``; its options page is generated at build time by
``docs/hooks/options_page.py`` from ``pytest_qcrypto.pytest_side.options.OPTIONS``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_qcrypto.pytest_side import options

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
HOOK = DOCS / "hooks" / "options_page.py"

#: The README's two set-up commands, word for word (they must keep working on a fresh clone:
#: ``.ci/run`` runs the second).
SETUP_COMMANDS = (
    "pip install . && pytest --qcrypto-digest sha256 --qcrypto-plugin openssl",
    "pip install -e '.[test]' && pytest",
)
#: The README's limit in lines (issue 17: "at most about 150 lines").
README_MAX_LINES = 150


def options_hook() -> ModuleType:
    """The MkDocs hook module, loaded from its file (it is not a package module)."""
    spec = importlib.util.spec_from_file_location("qcrypto_docs_options_page", HOOK)
    assert spec is not None and spec.loader is not None, f"no hook at {HOOK}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built with ``mkdocs build --strict`` (every warning an error) into a tmp dir."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # Material's end-of-life banner
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_mkdocs_build_strict_passes_and_writes_every_page(site: Path) -> None:
    pages = sorted(p.relative_to(DOCS).with_suffix("").as_posix()
                   for p in DOCS.rglob("*.md"))
    assert pages, "no pages under docs/"
    for page in pages:
        html = site / "index.html" if page == "index" else site / page / "index.html"
        assert html.is_file(), f"{page}.md was not built"
    assert (site / "reference" / "options" / "index.html").is_file()
    assert (site / "img" / "sample.png").is_file()


def help_entries(pytester: pytest.Pytester) -> tuple[set[str], set[str]]:
    """The ``--qcrypto-*`` options and ``qcrypto_*`` ini keys that ``pytest --help`` prints."""
    result = pytester.runpytest_subprocess("--help", timeout=120)
    assert result.ret == 0
    text = result.stdout.str()
    flags = set(re.findall(r"^\s+(--qcrypto-[a-z-]+)", text, re.MULTILINE))
    inis = set(re.findall(r"^\s+(qcrypto_[a-z_]+) \(", text, re.MULTILINE))
    return flags, inis


def test_every_option_of_pytest_help_is_in_the_generated_reference(
        pytester: pytest.Pytester, site: Path) -> None:
    flags, inis = help_entries(pytester)
    # the option table as pytest sees it: at least the ones this test names must be there
    assert {"--qcrypto-digest", "--qcrypto-compare", "--qcrypto-plot"} <= flags
    assert {"qcrypto_plugins", "qcrypto_floors", "qcrypto_thresholds"} <= inis
    page = options_hook().render_options_page()
    built = (site / "reference" / "options" / "index.html").read_text(encoding="utf-8")
    for flag in sorted(flags):
        anchor = flag.lstrip("-")
        assert f"{{ #{anchor} }}" in page, f"{flag} has no entry in the generated reference"
        assert f'id="{anchor}"' in built, f"{flag} has no entry in the built reference page"
    for key in sorted(inis):
        assert f"`{key}`" in page, f"ini key {key} is not in the generated reference"
        assert key in built


def test_reference_entries_come_from_the_option_table() -> None:
    page = options_hook().render_options_page()
    # the values and help texts of the table, not a copy: the default min-time, the units
    # and layouts of the registries, an ini-only key's help
    assert "### `--qcrypto-min-time=SECONDS` { #qcrypto-min-time }" in page
    assert "- default: 0.1\n" in page
    from pytest_qcrypto.output import render
    for unit in render.UNITS:
        assert f"`{unit}`" in page
    for layout in render.LAYOUTS:
        assert f"`{layout}`" in page
    floors = next(o for o in options.OPTIONS if o.ini == "qcrypto_floors")
    assert floors.help_text().replace("[", "\\[").replace("]", "\\]").replace("_", "\\_") in page
    # hidden options are not in pytest --help: listed apart, as set by the commands
    assert "## Set by the commands" in page
    assert "{ #qcrypto-command }" not in page


def test_readme_is_short_and_has_both_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= README_MAX_LINES, f"README.md has {len(lines)} lines"
    for command in SETUP_COMMANDS:
        assert command in lines, f"README.md lacks the set-up command line {command!r}"


def code_of(markdown: str) -> list[str]:
    """The code of a Markdown text: each line of a fenced block, and each inline code span."""
    code: list[str] = []
    prose: list[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif fenced:
            code.append(line)
        else:
            prose.append(line)
    code += re.findall(r"`([^`\n]+)`", "\n".join(prose))
    return code


#: The options that take a value (a metavar), longest first so that a prefix never wins.
VALUE_FLAGS = sorted((o.flag for o in options.OPTIONS if o.flag and o.metavar),
                     key=len, reverse=True)
#: ``--qcrypto-compare base.json``: a value option, blanks, then a word that is not another
#: option, a line continuation or a comment.
TWO_WORDS = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, VALUE_FLAGS)) +
                       r")(?![\w=-])[ \t]+(?![-\\#\s])(\S+)")


def two_word_spellings(markdown: str) -> list[str]:
    """Every ``--qcrypto-X VALUE`` in the code of ``markdown``, except the set-up commands
    (fixed text, see :data:`SETUP_COMMANDS`)."""
    found = []
    for code in code_of(markdown):
        if code.strip() in SETUP_COMMANDS:
            continue
        found += [f"{m.group(1)} {m.group(2)}  (in: {code.strip()})"
                  for m in TWO_WORDS.finditer(code)]
    return found


def test_the_check_finds_a_two_word_spelling() -> None:
    sample = ("Run `pytest --qcrypto-compare base.json` or\n\n```sh\n"
              "pytest --qcrypto-size 16 --qcrypto-decrypt --qcrypto-save=run.json \\\n```\n")
    assert sorted(s.split("  (")[0] for s in two_word_spellings(sample)) == [
        "--qcrypto-compare base.json", "--qcrypto-size 16"]
    assert two_word_spellings("`--qcrypto-compare=base.json`, `--qcrypto-plot` paths") == []


@pytest.mark.parametrize("path", [README, *sorted(DOCS.rglob("*.md"))],
                         ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_example_writes_an_option_value_as_a_separate_word(path: Path) -> None:
    found = two_word_spellings(path.read_text(encoding="utf-8"))
    assert not found, (f"{path.relative_to(ROOT)}: write --qcrypto-X=VALUE as one word:\n  "
                       + "\n  ".join(found))


def test_the_generated_reference_writes_values_with_equals() -> None:
    assert two_word_spellings(options_hook().render_options_page()) == []
