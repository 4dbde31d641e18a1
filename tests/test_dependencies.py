"""The dependency floors in pyproject.toml are the versions the minimum-versions CI job tests.

``.ci/run`` installs the package with ``.ci/minimum-versions.txt`` as pip constraints and
runs the plugin tests there; these tests keep that file and pyproject's floors equal, so
a floor cannot be lowered (or raised) without the job testing the new one.
"""

from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / ".ci" / "minimum-versions.txt"
#: The runtime dependencies whose oldest versions the job installs.
FLOORED = ("pytest", "pluggy", "cryptography", "pycryptodome", "execnet")


def pyproject_dependencies() -> dict[str, Requirement]:
    tomllib = pytest.importorskip("tomllib", reason="tomllib is in Python 3.11 and later")
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    reqs = [Requirement(text) for text in doc["project"]["dependencies"]]
    return {r.name.lower(): r for r in reqs}


def pins() -> dict[str, str]:
    """``name -> version`` of every ``name==version`` line of the constraints file."""
    out = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            specs = list(req.specifier)
            assert len(specs) == 1 and specs[0].operator == "==", \
                f"{CONSTRAINTS.name}: {line!r} must pin one version with =="
            out[req.name.lower()] = specs[0].version
    return out


def test_every_runtime_dependency_has_exactly_one_floor():
    deps = pyproject_dependencies()
    assert sorted(deps) == sorted(FLOORED)
    for name, req in deps.items():
        specs = list(req.specifier)
        assert len(specs) == 1 and specs[0].operator == ">=", \
            f"pyproject: {req} must be one floor (>=), the version the minimum job tests"


def test_floors_equal_the_minimum_versions_the_ci_job_installs():
    deps = pyproject_dependencies()
    pinned = pins()
    floors = {name: next(iter(req.specifier)).version for name, req in deps.items()}
    assert {name: pinned.get(name) for name in FLOORED} == floors


def test_ci_runs_the_plugin_tests_with_those_constraints():
    run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "-c .ci/minimum-versions.txt" in run
    assert "--ignore=tests/kernel" in run
