"""The git commit and dirty state of the tree a run measured, in saved results
(pytest_qcrypto.results.source_tree)."""

import json
import shutil
import subprocess

import pytest

from pytest_qcrypto.results import store as results, source_tree
from test_callables import FAST, PROJECT


@pytest.fixture
def project(pytester):
    pytester.makepyfile(test_own=PROJECT)
    return pytester


def git(path, *args):
    return subprocess.run(["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], capture_output=True, text=True, check=True,
                          timeout=60).stdout.strip()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_results_carry_the_commit_and_dirty_state(project):
    git(project.path, "init", "-q")
    git(project.path, "add", "-A")
    git(project.path, "commit", "-q", "-m", "the service")
    head = git(project.path, "rev-parse", "HEAD")
    assert project.runpytest(*FAST, "-k", "by_hand", "--qcrypto-save", "a.json").ret == 0
    doc = json.loads((project.path / "a.json").read_text())
    assert doc["source"] == {"git_commit": head, "git_dirty": False}  # a.json is untracked
    assert results.load(project.path / "a.json").source == doc["source"]
    with open(project.path / "test_own.py", "a") as f:
        f.write("# an edit\n")
    assert project.runpytest(*FAST, "-k", "by_hand", "--qcrypto-save", "b.json").ret == 0
    doc = json.loads((project.path / "b.json").read_text())
    assert doc["source"] == {"git_commit": head, "git_dirty": True}


def test_no_source_outside_a_git_checkout(project):
    assert source_tree.git_source(project.path) is None  # pytester's directory is no checkout
    assert project.runpytest(*FAST, "-k", "by_hand", "--qcrypto-save", "a.json").ret == 0
    doc = json.loads((project.path / "a.json").read_text())
    assert "source" not in doc
    assert results.load(project.path / "a.json").source is None


def test_no_source_without_git(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no git to be found
    assert source_tree.git_source(".") is None


@pytest.mark.parametrize("source, ok", [
    (None, True), ({}, True), ({"git_commit": "a" * 40, "git_dirty": True}, True),
    ({"git_commit": "a" * 64, "git_dirty": None}, True),
    ({"git_commit": "4affb20", "git_dirty": False}, False),
    ({"git_commit": "a" * 40, "git_dirty": "yes"}, False), ("4affb20", False)])
def test_the_loader_checks_the_source(tmp_path, source, ok):
    doc = {"schema_version": 2, "complete": True, "machine": {}, "plugins": {},
           "results": [], "source": source}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(doc))
    if ok:
        assert results.load(path).source == source
    else:
        with pytest.raises(results.ResultsError, match="source must be null or an object whose "
                                                       "git_commit is null or 40 or 64 hex"):
            results.load(path)
