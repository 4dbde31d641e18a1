"""Issue 26: ``--qcrypto-clock=cpu`` (figures by CPU time, as openssl speed without -elapsed)
and, whatever the clock, a note for cells whose CPU and wall time differ by more than 10%."""

import pytest

from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.measure import clocks, harness
from pytest_qcrypto.measure.harness import Measurement


class TwoClocks:
    """Wall time advances 1000 ns an operation; the process's CPU time ``cpu_per_op`` ns."""

    def __init__(self, cpu_per_op):
        self.wall_ns = self.cpu_ns = 0
        self.cpu_per_op = cpu_per_op

    def run(self, count):
        self.wall_ns += 1000 * count
        self.cpu_ns += self.cpu_per_op * count


def measured(cpu_per_op, **kwargs):
    fake = TwoClocks(cpu_per_op)
    t = harness.time_runner(fake.run, min_time=0.001, rounds=3, clock=lambda: fake.wall_ns,
                            cpu_clock=lambda: fake.cpu_ns, guard=lambda: 0.0)
    return Measurement("sha256", "afalg", 16, "digest", t.count, t.rounds_s, t.cpu_s, **kwargs)


def test_the_cpu_clock_takes_the_cpu_seconds_of_each_round():
    m = measured(cpu_per_op=500)  # half the wall time on the CPU: twice as fast by CPU time
    # 1150 operations: the count 64 (64 us, over 1/16 of 1 ms) predicts for 1 ms x 1.15
    assert m.rounds_s == (0.00115,) * 3 and m.cpu_s == (0.000575,) * 3
    by_cpu = clocks.on_clock(m, "cpu")
    assert by_cpu.rounds_s == m.cpu_s
    assert by_cpu.kib_per_s == pytest.approx(2 * m.kib_per_s)
    assert by_cpu.kib_per_s == pytest.approx(1150 * 16 / 0.000575 / 1024)
    assert clocks.on_clock(m, "wall") is m


def test_cells_of_several_jobs_stay_by_wall_time():
    m = measured(cpu_per_op=500, jobs=2)
    assert clocks.on_clock(m, "cpu") is m and clocks.cpu_share(m) is None


@pytest.mark.parametrize("cpu_per_op, lines", [
    (1000, []), (920, []), (1080, []),
    (600, ["qcrypto: CPU time and wall time differ by more than 10% in 1 cell:",
           "  sha256 afalg 16 bytes: CPU time 40% under wall time (work off this CPU, as a "
           "kernel thread or an accelerator, or waiting for a CPU)"]),
    (1250, ["qcrypto: CPU time and wall time differ by more than 10% in 1 cell:",
            "  sha256 afalg 16 bytes: CPU time 25% over wall time (other threads of the "
            "process worked at the same time)"]),
])
def test_a_difference_over_10_percent_is_noted_with_its_direction(cpu_per_op, lines):
    assert clocks.difference_lines([measured(cpu_per_op)]) == lines


def test_a_size_less_cell_is_named_by_its_operation():
    m = Measurement("ed25519", "openssl", 0, "sign", 10, (1.0,), (0.5,))
    assert clocks.difference_lines([m])[1].startswith("  ed25519 openssl sign: CPU time 50% under")


def test_rounds_under_a_millisecond_get_no_difference_note_but_a_short_rounds_one():
    # 5 us rounds: the two clocks' own reads weigh, so their difference says nothing about
    # other threads; the rounds are too short to trust, and the note says how to lengthen them
    fake = TwoClocks(cpu_per_op=1500)
    t = harness.time_runner(fake.run, min_time=0.000004, rounds=3, clock=lambda: fake.wall_ns,
                            cpu_clock=lambda: fake.cpu_ns, guard=lambda: 0.0)
    m = Measurement("sha256", "hashlib", 64, "digest", t.count, t.rounds_s, t.cpu_s)
    assert m.rounds_s == (5e-06,) * 3 and clocks.difference_lines([m]) == []  # 5: 4 x 1.15
    assert t.note == ("rounds of 0.005 ms are under the 1 ms the clock can honestly time: "
                      "raise --qcrypto-min-time")


def test_a_bad_clock_names_the_choices():
    with pytest.raises(SettingsError, match=r"^--qcrypto-clock: 'sun' is not a clock; choose "
                                            r"wall \(elapsed time, the default\) or cpu"):
        clocks.parse_clock("sun")
    assert clocks.parse_clock(" CPU ") == "cpu"


def test_a_run_by_cpu_time_says_so_under_its_tables(pytester):
    r = pytester.runpytest_subprocess("--qcrypto-digest", "sha256", "--qcrypto-plugin", "hashlib",
                                      "--qcrypto-size", "4096", "--qcrypto-clock=cpu",
                                      "--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1")
    assert r.ret == 0
    assert "qcrypto: figures by CPU time (--qcrypto-clock=cpu: user+system CPU seconds of the " \
           "measuring process, as openssl speed without -elapsed); saved files keep both " \
           "clocks and the gate judges wall time" in r.outlines


def test_a_bad_clock_is_a_usage_error(pytester):
    r = pytester.runpytest_subprocess("--qcrypto-digest", "sha256", "--qcrypto-clock=sun")
    assert r.ret == 4
    assert "--qcrypto-clock: 'sun' is not a clock; choose wall" in r.stderr.str()


def test_a_cell_the_noisy_figures_note_already_names_gets_no_second_note():
    # CPU time half the wall time: "noisy figure, CPU time under wall time" says it (with its
    # reason); the clock note is left for what that note does not cover (CPU over wall time)
    from pytest_qcrypto.algorithms.settings import Settings
    from pytest_qcrypto.measure import noise
    from pytest_qcrypto.pytest_side import quoting

    under = Measurement("ed25519", "openssl", 0, "sign", 10, (1.0,), (0.5,))
    over = Measurement("ed25519", "openssl", 0, "verify", 10, (1.0,), (1.5,))
    assert noise.noise_lines([under]) == [
        "noisy figure, CPU time under wall time: ed25519 openssl sign: CPU time 50% of wall "
        "time: the machine was busy, or the work ran off the CPU"]
    assert quoting.notes(Settings(), [under, over]) == [
        "qcrypto: CPU time and wall time differ by more than 10% in 1 cell:",
        "  ed25519 openssl verify: CPU time 50% over wall time (other threads of the process "
        "worked at the same time)"]
