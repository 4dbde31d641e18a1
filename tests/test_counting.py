"""--qcrypto-measure=instructions: the arithmetic of two counts, the saved form, the 1% gate,
the refusals, the option reference, and (with valgrind) real counts that repeat."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_qcrypto.gate import counted as counted_gate, verdicts as gate
from pytest_qcrypto.measure import counting
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.pytest_side import options
from pytest_qcrypto.results import store
from pytest_qcrypto.results.model import Result

CG_OUT = "desc: I1 cache\ncmd: python x\nevents: Ir\nfl=x.c\n1 5\nsummary: {}\n"


def counted(per_op: float, n: int = 1000, start: int = 700_000_000) -> counting.Counted:
    return counting.Counted(per_op, counting.VALGRIND, (n, 2 * n),
                            (start, start + round(per_op * n)), 1, ("aes",), ("aes", "sha_ni"),
                            "valgrind-3.19.0")


def measurement(per_op: float, size: int = 256) -> Measurement:
    c = counted(per_op)
    return Measurement("sha256", "hashlib", size, "digest", 1000,
                       counting.nominal_rounds(c, 1000), canonical_plugin="hashlib",
                       operation="digest", counted=c)


def test_two_counts_cancel_the_start_up() -> None:
    # fake cachegrind outputs: 700 M of start-up, then 13,990 instructions an operation
    totals = tuple(counting.cachegrind_total(CG_OUT.format(700_000_000 + 13_990 * n))
                   for n in (1000, 2000))
    assert counting.per_operation((1000, 2000), totals) == 13_990
    assert counting.per_operation((1000, 2000), totals, per_iteration=2) == 6_995
    with pytest.raises(counting.CountingError, match="were not counted"):
        counting.per_operation((1000, 2000), (5, 5))
    with pytest.raises(counting.CountingError, match="no summary"):
        counting.cachegrind_total("events: Ir\n")


def test_counts_are_chosen_to_cover_the_target() -> None:
    n = counting.choose_count(13_000)
    assert n * 13_000 >= counting.TARGET_INSTRUCTIONS > n * 13_000 / 2
    assert counting.choose_count(10**9) == 1


def test_saved_and_loaded_strictly(tmp_path: Path) -> None:
    m = measurement(12_862.98)
    doc = store.ResultsFile([Result.from_measurement(m)])
    path = store.save(tmp_path / "c.json", doc)
    back = store.load(path).results[0]
    assert back.instructions["per_operation"] == pytest.approx(m.counted.per_operation)
    assert back.instructions["unit"] == "instructions/byte"
    assert back.instructions["hidden_cpu_features"] == ["sha_ni"]
    raw = json.loads(path.read_text())
    raw["results"][0]["instructions"]["per_operation"] *= 1.5  # edited: not its counts
    path.write_text(json.dumps(raw))
    with pytest.raises(store.ResultsError, match="per_operation is .* its counts and totals"):
        store.load(path)
    raw["results"][0]["instructions"] = {"per_operation": "many"}
    path.write_text(json.dumps(raw))
    with pytest.raises(store.ResultsError, match="instructions.per_operation must be"):
        store.load(path)


@pytest.mark.parametrize(("now", "fails"), [(10_000, False), (10_099, False), (10_101, True),
                                            (10_200, True), (9_000, False)])
def test_the_instruction_gate_fails_more_than_one_percent(now: int, fails: bool) -> None:
    base = Result.from_measurement(measurement(10_000))
    c = gate.Criteria(2, base, gate.Rule(None, None, None, 10.0, "default"))
    v = counted_gate.judge(measurement(now), counted_gate.criteria(
        c, counted_gate.threshold_rule()))
    assert v.failed is fails
    if fails:
        assert "threshold 1% (default)" in v.message and "instructions" in v.message


def test_a_timed_baseline_is_never_compared_with_a_count() -> None:
    assert "cannot compare instruction counts with times" in counted_gate.mismatch(
        "time", "instructions")
    assert counted_gate.mismatch("instructions", "instructions") == ""


def test_refusals_say_why() -> None:
    assert "kernel" in counting.refusal("the kernel does the work")
    assert "--qcrypto-jobs" in counting.refusal("", jobs=2)
    from pytest_qcrypto.backends.afalg import AfalgPlugin
    from pytest_qcrypto.backends.devcrypto import DevcryptoPlugin
    assert AfalgPlugin.outside_process and DevcryptoPlugin.outside_process


@pytest.mark.parametrize("extra", [["--qcrypto-jobs=2"], ["--qcrypto-threads=2"],
                                   ["--qcrypto-measure=cycles"]])
def test_usage_errors_exit_4(tmp_path: Path, extra: list[str]) -> None:
    measure = [] if extra[0].startswith("--qcrypto-measure") else \
        ["--qcrypto-measure=instructions"]
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib", *measure,
                           *extra], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "ERROR" in proc.stderr


def test_the_options_are_in_the_reference() -> None:
    flags = {o.flag for o in options.OPTIONS}
    assert {"--qcrypto-measure", "--qcrypto-instructions-threshold"} <= flags
    page = Path(__file__).resolve().parent.parent / "docs" / "hooks" / "options_page.py"
    assert "OPTIONS" in page.read_text()


needs_valgrind = pytest.mark.skipif(shutil.which("valgrind") is None,
                                    reason="valgrind is not installed (apt-get install valgrind)")


@needs_valgrind
def test_two_runs_of_one_cell_agree_within_half_a_percent() -> None:
    from pytest_qcrypto.backends.hashlib import HashlibPlugin
    from pytest_qcrypto.measure.registry import Selection

    spec = counting.Spec(Selection("hashlib", HashlibPlugin()), "sha256", 23, 256,
                         sys_path=tuple(sys.path))
    a, b = (counting.count(spec, prefer=counting.VALGRIND) for _ in range(2))
    assert abs(a.per_operation - b.per_operation) / a.per_operation < 0.005
    # hashlib's sha256 of 256 bytes: 4 compression blocks and the Python call around them
    assert 5_000 < a.per_operation < 40_000
    assert a.method == counting.VALGRIND and a.features is not None


LOOP_CONFTEST = '''
from pytest_qcrypto.backends.hashlib import HashlibPlugin


class Looped(HashlibPlugin):
    """hashlib's sha256, then a pure-Python loop of LOOP iterations an operation."""
    aliases = ()
    default_rank = 990
    library = "hashlib and a loop"
    LOOP = 0

    def open(self, algorithm, key, variant=None):
        ctx = super().open(algorithm, key, variant)
        real, loop = ctx.runner, self.LOOP

        def runner(work):
            run = real(work)

            def looped(count):
                run(count)
                for _ in range(count * loop):
                    pass
            return looped
        ctx.runner = runner
        return ctx


class Loop1000(Looped):
    name, LOOP = "loop1000", 1000


class Loop2000(Looped):
    name, LOOP = "loop2000", 2000


class Loop3000(Looped):
    name, LOOP = "loop3000", 3000


def pytest_qcrypto_plugins():
    return [Loop1000(), Loop2000(), Loop3000()]
'''


@needs_valgrind
def test_a_loop_of_known_length_counts_a_fixed_amount_an_iteration(
        pytester: pytest.Pytester) -> None:
    # end to end through pytest: three plugins whose operation is sha256 of 16 bytes and then
    # 1000, 2000 or 3000 iterations of an empty Python loop; each 1000 more iterations add the
    # same number of instructions an operation
    pytester.makeconftest(LOOP_CONFTEST)
    r = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--qcrypto-measure=instructions", "--qcrypto-digest=sha256",
        "--qcrypto-size=16", "--qcrypto-plugin=loop1000,loop2000,loop3000",
        "--qcrypto-save=counted.json", timeout=900)
    assert r.ret == 0, r.stdout.str() + r.stderr.str()
    saved = json.loads((pytester.path / "counted.json").read_text())
    per_op = {x["plugin"]: x["instructions"]["per_operation"] for x in saved["results"]}
    assert all(x["instructions"]["method"] == counting.VALGRIND for x in saved["results"])
    first = per_op["loop2000"] - per_op["loop1000"]
    second = per_op["loop3000"] - per_op["loop2000"]
    assert abs(second - first) / first < 0.005, per_op
    # an iteration of `for _ in range(n): pass` is some tens of instructions in CPython 3.11
    assert 5 < first / 1000 < 400, per_op


def test_a_counted_compare_says_what_it_judges_by() -> None:
    # the gate's heading names the instruction threshold and no tries; the change grid shows
    # percent more instructions from the counts; no load-average warning under a count
    from pytest_qcrypto.gate.summary import change_grid, gate_heading
    from pytest_qcrypto.measure import machine

    base = Result.from_measurement(measurement(10_000))
    doc = store.ResultsFile([base], created="2026-12-03T00:00:00Z")
    rules = gate.GateRules()
    rules.instructions = counted_gate.threshold_rule(1.5, "--qcrypto-instructions-threshold")
    heading = gate_heading(rules, gate.BaselineIndex(doc))
    assert heading.endswith("instruction threshold 1.5% more instructions an operation "
                            "(--qcrypto-instructions-threshold); counted, so no confirmation "
                            "tries"), heading
    m = measurement(10_150)
    v = counted_gate.judge(m, counted_gate.criteria(
        gate.Criteria(2, base, gate.Rule(None, None, None, 10.0, "default")),
        rules.instructions))
    grid = change_grid("base.json", "sha256", "digest", ["hashlib"], [256],
                       {("sha256", "hashlib", 256, "digest"): v}, {})
    assert grid is not None and grid.texts[("hashlib", 256)] == "+1.50%"
    assert "(% more instructions an operation; positive = more work)" in grid.title
    from pytest_qcrypto.gate.summary import summary_lines
    lines = summary_lines(rules, gate.BaselineIndex(doc), {("sha256", "hashlib", 256,
                                                            "digest"): v}, {}, "")
    assert not any("judged by the clock alone" in line for line in lines), lines
    busy = machine.MachineState((9.0, 9.0, 9.0), 2, None, None, None)
    assert machine.summary_lines(busy, [m]) == []
    timed = Measurement("sha256", "hashlib", 256, "digest", 1000, (0.01, 0.01, 0.01))
    assert "load average 9.00" in " ".join(machine.summary_lines(busy, [timed]))


def test_counted_settings_and_time_limit() -> None:
    from pytest_qcrypto.pytest_side.counting import Counting

    counted_run = Counting("instructions", counted_gate.threshold_rule(), counting.VALGRIND)
    assert counted_run.settings() == {"measure": "instructions",
                                      "counted_by": "valgrind-cachegrind",
                                      "instructions_threshold_pct": 1.0}
    assert Counting().settings() == {}
    # the timed default (60 s) does not cut a count; an explicit --qcrypto-timeout does
    assert counted_run.limit(60.0) is None and Counting().limit(60.0) == 60.0
    assert Counting("instructions", timeout_given=True).limit(60.0) == 60.0


def test_unit_help_lists_only_accepted_units() -> None:
    help_text = next(o for o in options.OPTIONS if o.flag == "--qcrypto-unit").help
    text = help_text() if callable(help_text) else help_text
    assert "ns/op" in text and "instructions/byte" not in text and "instructions/op" not in text


def test_a_timed_baseline_with_instructions_is_a_usage_error(tmp_path: Path) -> None:
    m = Measurement("sha256", "hashlib", 256, "digest", 1000, (0.01, 0.01, 0.01),
                    canonical_plugin="hashlib", operation="digest")
    store.save(tmp_path / "timed.json", store.ResultsFile([Result.from_measurement(m)]))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                           "--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib",
                           "--qcrypto-size=256", "--qcrypto-measure=instructions",
                           "--qcrypto-compare=timed.json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert errors == ["ERROR: --qcrypto-compare: cannot compare instruction counts with times: "
                      "timed.json was timed (--qcrypto-measure=time), this run is counted in "
                      "instructions (--qcrypto-measure=instructions); measure both the same way"]
