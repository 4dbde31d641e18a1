"""What the commands show as they go (issue 28): each table of ``qcrypto speed`` and each line
of ``cryptotest`` on standard output as soon as its cells are measured, outliers marked where
they are printed, and one note line per kind of noisy figure.

Every run here is timed on a fake clock (:func:`fake_clock`: 100 ns an iteration, so a round
of ``--qcrypto-count`` iterations is far under the 1 ms the clock can honestly time), and an
observer plugin snapshots standard output when each test item starts.
"""

from __future__ import annotations

import re

import pytest

from pytest_qcrypto.commands import cryptotest, qcrypto
from pytest_qcrypto.measure import harness
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.measure.noise import noise_lines
from pytest_qcrypto.output import outliers
from pytest_qcrypto.output.cryptotest_layout import cryptotest_lines
from pytest_qcrypto.output.tables import Cell, Table, table_lines
from pytest_qcrypto.pytest_side import progress


@pytest.fixture
def fake_clock(monkeypatch):
    """--qcrypto-count rounds on a fake clock: 100 ns an iteration, ``slow[i]`` times that
    for the i-th timed cell (0-based).  Returns the dict ``slow``."""
    real = harness.time_count
    slow: dict[int, int] = {}
    calls = []

    def on_the_fake(run, count, *, rounds=3, **kw):
        now = [0]
        factor = slow.get(len(calls), 1)
        calls.append(count)

        def costly(n):
            run(n)
            now[0] += 100 * n * factor

        return real(costly, count, rounds=rounds, clock=lambda: now[0],
                    cpu_clock=lambda: now[0])

    monkeypatch.setattr(harness, "time_count", on_the_fake)
    return slow


@pytest.fixture
def observed(monkeypatch, capfd, tmp_path):
    """Standard output as it was when each item started: a list of (node id, text so far);
    the commands run in an empty folder, with their own plugins and this observer."""
    monkeypatch.chdir(tmp_path)
    seen: list[tuple[str, str]] = []
    written: list[str] = []

    class Observer:
        def pytest_runtest_logstart(self, nodeid):
            out = capfd.readouterr().out
            written.append(out)
            seen.append((nodeid, "".join(written)))

    real = progress.command_plugins
    monkeypatch.setattr(progress, "command_plugins", lambda: (*real(), Observer()))

    def finish():
        written.append(capfd.readouterr().out)
        return seen, "".join(written)

    return finish


def first_of(seen, algorithm):
    """The output when the first item of ``algorithm`` started."""
    return next(text for nodeid, text in seen if f"::{algorithm}[" in nodeid)


def test_qcrypto_speed_prints_the_first_table_before_the_second_algorithm_starts(
        fake_clock, observed):
    code = qcrypto.main(["speed", "-P", "hashlib", "-D", "sha256", "-D", "md5",
                         "--qcrypto-size=16,64", "--qcrypto-count=1000", "--qcrypto-rounds=1"])
    seen, out = observed()
    assert code == 0
    # 1000 iterations of 100 ns: 16 B / 100 ns = 156250 KiB/s, 64 B: 625000 KiB/s
    sha256 = ["Benchmark results for 'sha256' digest (KiB/s):",
              "plugin           16         64",
              "hashlib   156250.00  625000.00"]
    md5 = [line.replace("sha256", "md5") for line in sha256]
    assert first_of(seen, "md5").splitlines() == sha256
    assert out.splitlines() == [*sha256, "", *md5]  # each once: the summary wrote the rest


def test_cryptotest_prints_each_line_once_its_neighbour_is_measured(fake_clock, observed):
    code = cryptotest.main(["-P", "openssl", "-z", "64"])
    seen, out = observed()
    assert code == 0
    lines = out.splitlines()
    tdes = [line for line in lines if " 3des crypts," in line]
    assert len(tdes) == 11 and len(lines) == len(set(lines))  # 8 to 8192 bytes, each once
    # every 3des line is out before blowfish's first cell starts ...
    assert first_of(seen, "bf-cbc").splitlines() == tdes
    # ... and each came once the next size was measured (its outlier mark depends on it)
    at_32 = first_of_size(seen, "des-ede3-cbc", 32).splitlines()
    assert at_32 == tdes[:1]


def first_of_size(seen, algorithm, size):
    return next(text for nodeid, text in seen
                if f"::{algorithm}[" in nodeid and re.search(rf"-{size}\b", nodeid))


def test_cryptotest_marks_an_outlier_in_its_line(fake_clock, observed):
    """One round slowed ten times (the 256-byte cell, third timed) between two normal
    ones, as a user saw ``3des 256 bytes 3436664 byte/sec`` between 19926153 and more."""
    fake_clock[2] = 10
    code = cryptotest.main(["-P", "openssl", "-a", "3des", "64", "64", "128", "256", "512"])
    _, out = observed()
    assert code == 0
    marks = [line.split("  ? ")[1] for line in out.splitlines() if "  ? " in line]
    # 256 bytes in 1 us an iteration: 256 MB/s, against 1.28 GB/s at 128 bytes and 5.12 GB/s
    # at 512 (100 ns an iteration): 8% of their mean
    assert marks == ["outlier: 8% of the mean of its neighbours at 128 and 512 bytes"]
    assert " 256 bytes," in next(line for line in out.splitlines() if "  ? " in line)


def test_short_rounds_the_user_chose_are_one_note_line_and_every_one_with_v(
        fake_clock, monkeypatch, capfd, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert cryptotest.main(["-P", "openssl", "-z", "64"]) == 0
    err = capfd.readouterr().err.splitlines()
    notes = [line for line in err if "the clock can honestly time" in line]
    assert len(notes) == 1, err
    assert re.fullmatch(r"noisy figures, short rounds: (\d+) of \1 cells, e\.g\. des-ede3-cbc "
                        r"openssl 8 bytes: a round of [\d.]+ ms is under the 1 ms the clock can "
                        r"honestly time: raise the count argument; -v lists every one",
                        notes[0]), notes[0]
    assert cryptotest.main(["-v", "-P", "openssl", "-a", "3des", "64", "8", "16"]) == 0
    err = capfd.readouterr().err.splitlines()
    start = err.index("noisy figures (median round shown; 2 of 2):")
    assert [line.split(":")[0] for line in err[start + 1:start + 3]] == [
        "  des-ede3-cbc openssl 8 bytes", "  des-ede3-cbc openssl 16 bytes"]


# -- the parts, on known figures --------------------------------------------------------------

def measured(size, seconds, plugin="p", **extra):
    return Measurement("sha256", plugin, size, "digest", 1000, (seconds,), (seconds,), **extra)


def row(*seconds, sizes=(16, 64, 256, 1024)):
    cells = {("p", s): Cell(measured(s, t)) for s, t in zip(sizes, seconds)}
    return Table("sha256", "digest", "digest", ("p",), sizes, cells)


def test_an_outlier_is_far_under_both_neighbours_and_never_at_an_end():
    # bytes/s: 16000/0.001 = 16 MB/s, 64 B: 64 MB/s, 256 B at 0.032: 8 MB/s, 1024 B: 1.024
    # GB/s; 8 MB/s is 1.5% of the mean of 64 MB/s and 1.024 GB/s
    assert outliers.outliers(row(0.001, 0.001, 0.032, 0.001)) == {
        ("p", 256): "1% of the mean of its neighbours at 64 and 1024 bytes"}
    assert outliers.outliers(row(0.001, 0.001, 0.0115, 0.001)) == {}  # 22 MB/s: over a third
    assert outliers.outliers(row(0.001, 0.001, 0.002, 0.002)) == {}  # a rise, then level
    assert outliers.outliers(row(0.1, 0.001, 0.002, 0.002)) == {}  # a slow first cell: an end
    # the user's cryptotest -z line: 3436664 byte/sec at 256 bytes, 19926153 at 128
    sizes, rates = (64, 128, 256, 512), (18_500_000, 19_926_153, 3_436_664, 21_000_000)
    user = row(*(1000 * s / r for s, r in zip(sizes, rates)), sizes=sizes)
    assert outliers.outliers(user) == {
        ("p", 256): "17% of the mean of its neighbours at 128 and 512 bytes"}


def test_the_qcrypto_table_marks_an_outlier_and_says_why_under_it():
    lines = table_lines(row(0.001, 0.001, 0.032, 0.001))
    assert lines[1:] == [
        "plugin           16          64         256        1024",
        "p          15625.00    62500.00    7812.50?  1000000.00",
        "  ? p (size 256) an outlier: 1% of the mean of its neighbours at 64 and 1024 bytes; "
        "measure it again"]


def test_a_cryptotest_line_of_an_outlier_ends_with_the_mark():
    lines = cryptotest_lines([row(0.001, 0.001, 0.032, 0.001)])
    assert [line.split("  ? ")[1] for line in lines if "  ? " in line] == [
        "outlier: 1% of the mean of its neighbours at 64 and 1024 bytes"]


SHORT = "a round of 0.1 ms is under the 1 ms the clock can honestly time: raise --qcrypto-count"


def test_noise_lines_one_per_kind_with_count_and_example():
    short = [measured(s, 0.0001, calibration_note=SHORT) for s in (16, 64, 256)]
    spread = Measurement("md5", "p", 16, "digest", 10, (0.1, 0.2, 0.1), (0.1, 0.2, 0.1))
    quiet = measured(1024, 0.1)
    assert noise_lines([*short, spread, quiet]) == [
        f"noisy figures, short rounds: 3 of 5 cells, e.g. sha256 p 16 bytes: {SHORT}; "
        "-v lists every one",
        "noisy figure, rounds spread: md5 p 16 bytes: rounds spread 100% (0.1 to 0.2 s)"]
    assert noise_lines([*short, spread, quiet], verbose=True) == [
        "noisy figures (median round shown; 4 of 5):",
        *(f"  sha256 p {s} bytes: {SHORT}" for s in (16, 64, 256)),
        "  md5 p 16 bytes: rounds spread 100% (0.1 to 0.2 s)"]
    assert noise_lines([quiet]) == []


def test_the_markdown_table_marks_an_outlier_too():
    from pytest_qcrypto.output.markdown import markdown_lines

    lines = markdown_lines([row(0.001, 0.001, 0.032, 0.001)])
    assert lines[4:] == [
        "| p | 15625.00 | 62500.00 | 7812.50? | 1000000.00 |", "",
        "- `?` p (size 256) an outlier: 1% of the mean of its neighbours at 64 and 1024 bytes; "
        "measure it again"]
