"""``qcrypto history --html``: the page, loaded in a real headless Chromium (tests/browser.py).

It must load from disk with no console error (its Content-Security-Policy refuses any script:
an injected one would be a logged refusal), show one chart per cell, and show the strings of a
hostile results file (a plugin named ``<script>...``, a version with ``" onload="...``, a CPU
model with an ``<img onerror>``) as text, running nothing.  The screenshot is kept in the
test's folder for a person to look at (docs/img/history.png is one).
"""

from __future__ import annotations


import pytest

import browser
from history_files import CELLS, MACHINE, write_history
from pytest_qcrypto.commands import qcrypto

pytestmark = pytest.mark.skipif(browser.browser() is None, reason=(
    "no Chromium to load the page in: apt-get install chromium (.ci/run installs it)"))

PLUGIN = "<script>window.pwned=1</script>"
VERSION = '" onload="window.pwned=2'
CPU = '<img src=x onerror="window.pwned=3">'
EXPRESSIONS = {
    "charts": "document.querySelectorAll('svg.chart').length",
    "rows": "document.querySelectorAll('tbody tr').length",
    "scripts": "document.querySelectorAll('script').length",
    "handlers": "document.querySelectorAll('[onload],[onerror],img,iframe').length",
    "pwned": "typeof window.pwned",
    "text": "document.body.innerText",
    "steps": "document.querySelectorAll('.steps li').length",
}


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_page_loads_with_no_error_and_a_chart_per_cell(here, capsys):
    write_history(here / "hist")
    assert qcrypto.main(["history", "hist", "--html=page.html"]) == 1
    assert "qcrypto history: page written to page.html" in capsys.readouterr().err
    text = (here / "page.html").read_text()
    assert "<script" not in text and "http://" not in text and "https://" not in text
    loaded = browser.open_page(here / "page.html", EXPRESSIONS)
    assert loaded.errors == []
    assert loaded.values["charts"] == loaded.values["rows"] == len(CELLS)
    assert loaded.values["steps"] == 1
    assert "regression" in loaded.values["text"]
    assert loaded.screenshot.startswith(b"\x89PNG\r\n\x1a\n")
    (here / "history.png").write_bytes(loaded.screenshot)  # for a person to look at


def test_hostile_strings_of_a_file_are_text_and_run_nothing(here, capsys):
    cells = tuple((a, PLUGIN, s, d) for a, _, s, d in CELLS[:3])
    write_history(here / "hist", cells=cells, step_cell=cells[0], plugin=PLUGIN,
                  machine={**MACHINE, "cpu_model": CPU}, version_at=(18, VERSION))
    assert qcrypto.main(["history", "hist", "--html=page.html"]) == 1
    out = capsys.readouterr().out
    assert PLUGIN in out and VERSION in out  # the text list shows them as they are
    loaded = browser.open_page(here / "page.html", EXPRESSIONS)
    assert loaded.errors == []
    assert loaded.values["pwned"] == "undefined"
    assert loaded.values["scripts"] == 0 and loaded.values["handlers"] == 0
    assert loaded.values["charts"] == 3
    shown = loaded.values["text"]
    assert PLUGIN in shown and CPU in shown and VERSION in shown
    (here / "hostile.png").write_bytes(loaded.screenshot)
