"""--qcrypto-target end to end: other interpreters reached through execnet's popen gateways.

A crypto plugin test double, ``fakehash`` (module ``qfake``, written beside the test),
runs on a fake clock that advances ``QFAKE_NS`` nanoseconds per operation (default
1000), so that figures, ratios and verdicts are exact on a loaded machine.  A target
gets it through the ``QCRYPTO_TARGET_PLUGINS`` environment variable of its gateway spec
(``//chdir=`` puts the module on its path: ``python -c`` imports from the working
directory); the local process through the conftest.  ``QFAKE_NS=2000`` on a target is
an injected slowdown (half the speed), ``QFAKE_FIRST_NS`` one of the first context
opened only; ``QFAKE_HANG=1`` makes the target stop itself
(SIGSTOP) in its first timed run: a target that stops answering; ``QFAKE_SLEEP=S``
makes it sleep S seconds there, after writing its process id to ``sleeping.pid``.

The second virtual environment (another pycryptodome, the package installed from this
checkout) is built once per session; those tests skip with the reason where pip cannot.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import built_once

CHECKOUT = Path(__file__).resolve().parent.parent
#: The pycryptodome release of the second environment (not the one of this environment).
OTHER_PYCRYPTODOME = "3.20.0"

QFAKE = '''
import hashlib, os, signal, time
from pytest_qcrypto.backends.base import Context, CryptoPlugin

CLOCK = {"ns": 0}
SAVED = {}
OPENED = [0]

def install():
    """This process's clocks become the fake one (the harness reads them)."""
    SAVED.update(wall=time.perf_counter_ns, cpu=time.process_time_ns)
    time.perf_counter_ns = lambda: CLOCK["ns"]
    time.process_time_ns = lambda: CLOCK["ns"]

def restore():
    time.perf_counter_ns, time.process_time_ns = SAVED["wall"], SAVED["cpu"]

class FakeHash(CryptoPlugin):
    name = "fakehash"
    library = "a fake clock"
    def version(self):
        return "fakehash " + os.environ.get("QFAKE_NS", "1000") + " ns"
    def supported(self):
        return frozenset({"sha256"})
    def open(self, algorithm, key, variant=None):
        time.sleep(float(os.environ.get("QFAKE_OPEN_SLEEP") or 0))
        OPENED[0] += 1
        ns = int(os.environ.get("QFAKE_NS", "1000"))
        if OPENED[0] == 1:  # the first context opened here (known answers open later ones)
            ns = int(os.environ.get("QFAKE_FIRST_NS", ns))
        class Timed(Context):
            def digest(self, data):
                return hashlib.sha256(data).digest()
            def runner(self, work):
                def run(count):
                    if os.environ.get("QFAKE_HANG"):
                        os.kill(os.getpid(), signal.SIGSTOP)
                    if os.environ.get("QFAKE_SLEEP"):
                        with open("sleeping.pid", "w") as f:
                            f.write(str(os.getpid()))
                        time.sleep(float(os.environ["QFAKE_SLEEP"]))
                    CLOCK["ns"] += count * ns
                return run
        return Timed(algorithm, key)

def plugins():
    install()
    return [FakeHash()]
'''

CONFTEST = '''
import sys
sys.path.insert(0, {where!r})
import qfake

def pytest_configure(config):
    qfake.install()

def pytest_unconfigure(config):
    qfake.restore()

def pytest_qcrypto_plugins():
    return [qfake.FakeHash()]
'''

FAKE_MATRIX = ("--qcrypto-digest", "sha256", "--qcrypto-plugin", "fakehash",
               "--qcrypto-size", "1024", "--qcrypto-min-time", "0.01")


@pytest.fixture
def fake(pytester, tmp_path_factory):
    """The directory of ``qfake``; the local process gets it through the conftest."""
    where = tmp_path_factory.mktemp("qfake")
    (where / "qfake.py").write_text(QFAKE)
    pytester.makeconftest(CONFTEST.format(where=str(where)))
    return where


def fake_target(name: str, where: Path, **env: str) -> str:
    """``--qcrypto-target NAME=popen//...`` of this interpreter with the test double."""
    extra = "".join(f"//env:{k}={v}" for k, v in env.items())
    return (f"{name}=popen//python={sys.executable}//chdir={where}"
            f"//env:QCRYPTO_TARGET_PLUGINS=qfake:plugins{extra}")


def test_interleaved_ratio_and_ab_gate_fail_on_an_injected_slowdown(pytester, fake):
    r = pytester.runpytest(
        *FAKE_MATRIX, "--qcrypto-rounds", "4", "--qcrypto-interleave",
        "--qcrypto-target", fake_target("a", fake),
        "--qcrypto-target", fake_target("b", fake, QFAKE_NS="2000"),
        "--qcrypto-compare-target", "a")
    assert r.ret == pytest.ExitCode.TESTS_FAILED, r.stdout.str()
    lines = r.outlines
    # the compare target's row first, then local, then the others as given
    rows = [line.split()[0] for line in lines if line.startswith("fakehash@")]
    assert rows[:3] == ["fakehash@a", "fakehash@local", "fakehash@b"]
    start = lines.index("interleaved: throughput over @a's, geometric mean of the paired "
                        "rounds [95% t-interval]")
    assert [line.split() for line in lines[start + 1:start + 4]] == [
        ["sha256", "1024", "bytes"],
        ["fakehash@local/a", "1.00", "[1.00,", "1.00]"],
        ["fakehash@b/a", "0.50", "[0.50,", "0.50]"]]
    assert "qcrypto: A/B against @a: FAILED: 2 cells judged, 1 regressed" in lines
    r.assert_outcomes(passed=2, failed=1)
    failed = [line for line in lines if line.startswith("FAILED ")]
    assert failed == [line for line in failed if "qcrypto::sha256[fakehash@b-1024]" in line]
    assert any(line.startswith("  regression: sha256 fakehash@b 1024 B digest: ")
               for line in lines), r.stdout.str()


def test_without_a_slowdown_the_ab_gate_passes(pytester, fake):
    r = pytester.runpytest(
        *FAKE_MATRIX, "--qcrypto-rounds", "3", "--qcrypto-interleave",
        "--qcrypto-target", fake_target("a", fake), "--qcrypto-target", fake_target("b", fake),
        "--qcrypto-compare-target", "a")
    assert r.ret == 0, r.stdout.str()
    assert "qcrypto: A/B against @a: passed: 2 cells judged, 0 regressed" in r.outlines
    assert any(line.split() == ["fakehash@b/a", "1.00", "[1.00,", "1.00]"]
               for line in r.outlines)


def test_interleaved_rounds_are_judged_by_their_pairs_without_a_retry(pytester, fake):
    # b is half as fast as a in every paired round: a regression by the paired rounds (their
    # interval is the band), decided without measuring b again alone
    r = pytester.runpytest(
        *FAKE_MATRIX, "--qcrypto-rounds", "3", "--qcrypto-interleave",
        "--qcrypto-target", fake_target("a", fake),
        "--qcrypto-target", fake_target("b", fake, QFAKE_FIRST_NS="2000"),
        "--qcrypto-compare-target", "a", "--qcrypto-save", "out.json")
    assert r.ret == 1, r.stdout.str()
    assert any(line.split() == ["fakehash@b/a", "0.50", "[0.50,", "0.50]"]
               for line in r.outlines)
    assert "qcrypto: A/B against @a: FAILED: 2 cells judged, 1 regressed" in r.outlines
    r.stdout.fnmatch_lines(["*regression: sha256 fakehash@b 1024 B digest: change -50.0% in "
                            "rounds paired with the reference target's, band +-0.0%, "
                            "threshold 10%*"])
    doc = json.loads((pytester.path / "out.json").read_text())
    b = next(x for x in doc["results"] if x["plugin"] == "fakehash@b")
    assert "tries" not in b and b["verdict"]["drift_rule"] == "paired rounds"


def test_a_retry_of_an_interleaved_cell_measures_again(pytester, fake):
    # b is slow in the interleaved round only (its first context), and one round has no
    # interval to judge pairs by: the gate's retry measures b again, alone, at full speed,
    # and the cell passes on the retry
    r = pytester.runpytest(
        *FAKE_MATRIX, "--qcrypto-rounds", "1", "--qcrypto-interleave",
        "--qcrypto-target", fake_target("a", fake),
        "--qcrypto-target", fake_target("b", fake, QFAKE_FIRST_NS="2000"),
        "--qcrypto-compare-target", "a", "--qcrypto-save", "out.json")
    assert r.ret == 0, r.stdout.str()
    assert any(line.split() == ["fakehash@b/a", "0.50", "[1", "round]"]
               for line in r.outlines)
    assert "qcrypto: A/B against @a: passed: 2 cells judged, 0 regressed" in r.outlines
    doc = json.loads((pytester.path / "out.json").read_text())
    b = next(x for x in doc["results"] if x["plugin"] == "fakehash@b")
    assert [round(t / 1024) for t in b["tries"]] == [500000, 1000000]
    assert b["verdict"]["status"] == "passed on a retry"


def test_an_interleaved_cell_whose_open_times_out_fails_only_that_target(pytester, fake,
                                                                        monkeypatch):
    # opening the local context takes 5 s, the limit is 2 s: local's cell fails with the
    # timeout, a's is measured; the cell is opened on each target once
    monkeypatch.setenv("QFAKE_OPEN_SLEEP", "5")
    r = pytester.runpytest(*FAKE_MATRIX, "--qcrypto-rounds", "2", "--qcrypto-timeout", "2",
                           "--qcrypto-interleave",
                           "--qcrypto-target", fake_target("a", fake, QFAKE_OPEN_SLEEP=""))
    assert r.ret == pytest.ExitCode.TESTS_FAILED, r.stdout.str()
    r.assert_outcomes(passed=1, failed=1)
    assert ("  x fakehash@local (all sizes) failed: timed out after 2 s in fakehash@local "
            "sha256 at 1024 bytes") in r.outlines
    assert any(line.split() == ["fakehash@a", "1000000.00"] for line in r.outlines)


def test_the_ab_gate_without_interleaving_judges_whole_measurements(pytester, fake):
    r = pytester.runpytest(
        *FAKE_MATRIX, "--qcrypto-target", fake_target("new", fake, QFAKE_NS="1500"),
        "--qcrypto-compare-target", "local", "--qcrypto-threshold", "40")
    # a third slower, 40% allowed: passes; and no ratio table without --qcrypto-interleave
    assert r.ret == 0, r.stdout.str()
    assert "qcrypto: A/B against @local: passed: 1 cell judged, 0 regressed" in r.outlines
    assert not any(line.startswith("interleaved:") for line in r.outlines)
    assert not any("had no effect" in line for line in r.outlines)  # the A/B gate used it
    r = pytester.runpytest(
        *FAKE_MATRIX, "--qcrypto-target", fake_target("new", fake, QFAKE_NS="1500"),
        "--qcrypto-compare-target", "local", "--qcrypto-threshold", "20")
    assert r.ret == pytest.ExitCode.TESTS_FAILED
    assert "qcrypto: A/B against @local: FAILED: 1 cell judged, 1 regressed" in r.outlines


def test_unusable_targets_say_why_in_one_line_and_the_run_goes_on(pytester, fake, tmp_path):
    system = shutil.which("python3", path="/usr/bin:/bin")
    if system is None or subprocess.run([system, "-c", "import pytest_qcrypto"],
                                        capture_output=True).returncode == 0:
        pytest.skip("needs a python3 in /usr/bin without pytest-qcrypto")
    if shutil.which("ssh") is None:
        pytest.skip("needs the OpenSSH client (ssh) for the unreachable target")
    other = tmp_path / "other-version" / "pytest_qcrypto"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text('__version__ = "0.0.1"\n')
    r = pytester.runpytest(
        *FAKE_MATRIX, "--qcrypto-size", "2048", "--qcrypto-rounds", "1",
        "--qcrypto-timeout", "5",  # also each gateway's opening: Python starting, probing
        "--qcrypto-target", f"bare=popen//python={system}",
        "--qcrypto-target", f"older=popen//python={system}//chdir={other.parent}",
        "--qcrypto-target", "gone=ssh=-o BatchMode=yes -o ConnectTimeout=5 -p 1 "
                            "nobody@127.0.0.1//python=python3",
        "--qcrypto-target", fake_target("hang", fake, QFAKE_HANG="1"),
        "--qcrypto-target", fake_target("fine", fake))
    text = r.stdout.str()
    assert r.ret == pytest.ExitCode.TESTS_FAILED, text
    r.assert_outcomes(passed=4, failed=1, skipped=6, errors=1)
    lines = r.outlines
    assert ("  - fakehash@bare (all sizes) skipped: target bare: pytest-qcrypto is not installed "
            "there (No module named 'pytest_qcrypto')") in lines
    assert ("  - fakehash@older (all sizes) skipped: target older: pytest-qcrypto 0.0.1 is "
            "installed there, 0.1.0 here: install 0.1.0 there") in lines
    assert ("  - fakehash@gone (all sizes) skipped: target gone: cannot open the gateway "
            "ssh=-o BatchMode=yes -o ConnectTimeout=5 -p 1 nobody@127.0.0.1//python=python3: "
            "HostNotFound: ssh could not connect to -o BatchMode=yes -o ConnectTimeout=5 -p 1 "
            "nobody@127.0.0.1 (unreachable or the login was refused; ssh's own message is on "
            "standard error)") in lines
    hung = ("target hang stopped answering: no reply within 10 s (--qcrypto-timeout 5 s + 5 s); "
            "its gateway was closed")
    assert f"  x fakehash@hang (size 1024) failed: fakehash@hang sha256 at 1024 bytes: {hung}" \
        in lines
    assert (f"  x fakehash@hang (size 2048) failed: error in setup: fakehash@hang sha256: not "
            f"measured: {hung}") in lines
    # the usable targets were measured at both sizes: local and fine
    start = lines.index("plugin                 1024        2048")
    assert [line.split() for line in lines[start + 1:start + 7]] == [
        ["fakehash@local", "1000000.00", "2000000.00"], ["fakehash@bare", "-", "-"],
        ["fakehash@older", "-", "-"], ["fakehash@gone", "-", "-"], ["fakehash@hang", "x", "x"],
        ["fakehash@fine", "1000000.00", "2000000.00"]]
    assert f"  hang: {hung}" in lines


def build_other_venv(folder):
    where = folder / "venv"
    python = where / "bin" / "python"
    steps = [[sys.executable, "-m", "venv", str(where)],
             [str(python), "-m", "pip", "install", "-q", "--no-deps", str(CHECKOUT)],
             [str(python), "-m", "pip", "install", "-q", f"pycryptodome=={OTHER_PYCRYPTODOME}"]]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            pytest.skip(f"{' '.join(step[-3:])}: did not finish within 600 s")
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or ["no message"])[-1]
            pytest.skip(f"cannot build the second environment: {' '.join(step[-3:])}: {why}")


@pytest.fixture(scope="session")
def other_venv(tmp_path_factory):
    """A virtual environment with this checkout and pycryptodome OTHER_PYCRYPTODOME (built
    once per run, shared by the pytest-xdist workers)."""
    return built_once(tmp_path_factory, "venv-other", build_other_venv) / "venv" / "bin" / "python"


def test_every_plugin_is_measured_on_every_target(pytester, other_venv):
    import Crypto

    r = pytester.runpytest(
        "--qcrypto-digest", "sha256", "--qcrypto-plugin", "pycryptodome,hashlib",
        "--qcrypto-size", "64", "--qcrypto-min-time", "0.001", "--qcrypto-rounds", "1",
        "--qcrypto-target", f"old=popen//python={other_venv}", "--qcrypto-save", "out.json")
    assert r.ret == 0, r.stdout.str()
    rows = [line.split()[0] for line in r.outlines if "@" in line.split(" ")[0]]
    assert rows == ["pycryptodome@local", "pycryptodome@old", "hashlib@local", "hashlib@old"]
    doc = json.loads((pytester.path / "out.json").read_text())
    assert {r["plugin"] for r in doc["results"]} == set(rows)
    assert doc["plugins"]["pycryptodome@old"]["version"] == f"PyCryptodome {OTHER_PYCRYPTODOME}"
    assert doc["plugins"]["pycryptodome@local"]["version"] == f"PyCryptodome {Crypto.__version__}"
    assert doc["plugins"]["pycryptodome@old"]["target"] == "old"
    assert doc["targets"]["old"]["spec"] == f"popen//python={other_venv}"
    assert doc["targets"]["old"]["version"] == "0.1.0"
    assert doc["targets"]["old"]["machine"]["python"].startswith("CPython")
    assert doc["targets"]["old"]["problem"] is None
    legend = r.outlines[r.outlines.index("targets:"):]
    assert legend[1].startswith("  local: this process: ")
    assert legend[2].startswith(f"  old: popen//python={other_venv}: ")
    assert legend[3:5] == ["differences:", f"  pycryptodome version: local=PyCryptodome "
                                           f"{Crypto.__version__}, old=PyCryptodome "
                                           f"{OTHER_PYCRYPTODOME}"]


# -- an ssh gateway against a real OpenSSH server on 127.0.0.1 ----------------------------------

SSHD_CONFIG = """\
ListenAddress 127.0.0.1
Port {port}
HostKey {dir}/host_key
AuthorizedKeysFile {dir}/authorized_keys
PidFile {dir}/sshd.pid
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
"""

SSH_CONFIG = """\
Host qcrypto-board
  HostName 127.0.0.1
  Port {port}
  User {user}
  IdentityFile {dir}/client_key
  IdentitiesOnly yes
  BatchMode yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  LogLevel ERROR
"""


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sshd(tmp_path):
    """An OpenSSH server on 127.0.0.1 with a throw-away host key and client key, for this
    user; the ssh_config file that reaches it as ``qcrypto-board``."""
    import getpass
    import os
    import socket
    import time

    sshd = shutil.which("sshd", path="/usr/sbin:/usr/bin:/sbin:/bin")
    keygen, client = shutil.which("ssh-keygen"), shutil.which("ssh")
    if sshd is None or keygen is None or client is None:
        pytest.skip("needs OpenSSH's sshd, ssh and ssh-keygen (Debian: openssh-server, which "
                    ".ci/run installs)")
    where = tmp_path / "ssh"
    where.mkdir(mode=0o700)
    for key in ("host_key", "client_key"):
        subprocess.run([keygen, "-q", "-t", "ed25519", "-N", "", "-f", str(where / key)],
                       check=True, capture_output=True)
    (where / "authorized_keys").write_text((where / "client_key.pub").read_text())
    port = _free_port()
    (where / "sshd_config").write_text(SSHD_CONFIG.format(port=port, dir=where))
    (where / "ssh_config").write_text(SSH_CONFIG.format(port=port, dir=where,
                                                        user=getpass.getuser()))
    if os.geteuid() == 0 and not os.path.isdir("/run/sshd"):
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # its privilege separation dir
    server = subprocess.Popen([sshd, "-D", "-e", "-f", str(where / "sshd_config")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            if server.poll() is not None:
                why = (server.stderr.read().strip().splitlines() or ["no message"])[-1]
                pytest.skip(f"sshd would not start: {why}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.skip("sshd did not listen within 20 s")
                time.sleep(0.2)
        yield where / "ssh_config"
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def test_a_target_over_ssh_is_measured_like_a_local_one(pytester, fake, sshd):
    spec = (f"ssh=qcrypto-board//ssh_config={sshd}//python={sys.executable}//chdir={fake}"
            "//env:QCRYPTO_TARGET_PLUGINS=qfake:plugins//env:QFAKE_NS=4000")
    r = pytester.runpytest(*FAKE_MATRIX, "--qcrypto-rounds", "2", "--qcrypto-interleave",
                           "--qcrypto-target", f"board={spec}")
    assert r.ret == 0, r.stdout.str()
    start = r.outlines.index("plugin                 1024")
    assert [line.split() for line in r.outlines[start + 1:start + 3]] == [
        ["fakehash@local", "1000000.00"], ["fakehash@board", "250000.00"]]
    assert any(line.split() == ["fakehash@board/local", "0.25", "[0.25,", "0.25]"]
               for line in r.outlines), r.stdout.str()
    assert any(line.startswith(f"  board: {spec}: ") for line in r.outlines)


def test_the_qcrypto_command_takes_target(pytester, fake):
    from pytest_qcrypto.commands import qcrypto as cli

    ns, extra = cli.build_parser().parse_known_args(
        ["speed", "-D", "sha256", "--target", "a=popen", "--target", "b=ssh=board"])
    assert cli.speed_args(ns, extra)[-2:] == ["--qcrypto-target=a=popen",
                                              "--qcrypto-target=b=ssh=board"]
    r = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "speed", "-D", "sha256",
                     "-P", "fakehash", "--qcrypto-size", "1024", "--qcrypto-min-time", "0.01",
                     "--target", fake_target("slow", fake, QFAKE_NS="4000"))
    assert r.ret == 0, r.stderr.str()
    assert [line.split() for line in r.outlines] == [
        ["Benchmark", "results", "for", "'sha256'", "digest", "(KiB/s):"],
        ["plugin", "1024"], ["fakehash@local", "1000000.00"], ["fakehash@slow", "250000.00"]]
    r = pytester.run(sys.executable, "-m", "pytest_qcrypto.commands.qcrypto", "speed", "-D", "sha256",
                     "--target", "local=popen")
    assert r.ret == 4
    assert ("--qcrypto-target: the name 'local' is this process; give the target another "
            "name") in r.stderr.str()


# -- examples/ab ---------------------------------------------------------------------------

AB = CHECKOUT / "examples" / "ab"


def _ab_args() -> list[str]:
    """The pytest options of examples/ab/ab.sh (its AB_ARGS array)."""
    import re
    import shlex

    script = (AB / "ab.sh").read_text()
    body = re.search(r"^AB_ARGS=\((.*?)\)$", script, re.S | re.M)
    assert body, "ab.sh keeps its pytest options in AB_ARGS=(...)"
    return shlex.split(body.group(1))


def test_the_examples_use_only_options_that_exist():
    import re

    from pytest_qcrypto.pytest_side import options

    flags = {o.flag for o in options.OPTIONS if o.flag}
    for name in ("ab.sh", "github-actions.yml", "README.md"):
        used = set(re.findall(r"--qcrypto-[a-z-]+", (AB / name).read_text()))
        assert used and used <= flags, (name, used - flags)
    ci = " ".join((AB / "github-actions.yml").read_text().replace("\\\n", " ").split())
    assert ("--qcrypto-target=old=popen//python=.venv-old/bin/python --qcrypto-interleave "
            "--qcrypto-compare-target=old") in ci
    assert " ".join(_ab_args()) in " ".join((AB / "README.md").read_text().replace(
        "\\\n", " ").split())


def test_the_ab_example_gives_one_table_ratios_and_a_verdict(pytester, other_venv):
    args = [a.replace(".venv-old/bin/python", str(other_venv)) for a in _ab_args()]
    r = pytester.runpytest(*args, "--qcrypto-rounds", "3", "--qcrypto-min-time", "0.002")
    text = r.stdout.str()
    verdict = next(line for line in r.outlines if line.startswith("qcrypto: A/B against @old: "))
    # the figures are this machine's: either verdict is right, as long as it matches the exit
    assert (r.ret, verdict.split(": ")[2]) in ((0, "passed"), (1, "FAILED")), text
    assert verdict.endswith(("6 cells judged, 0 regressed", "6 cells judged, 1 regressed",
                             "6 cells judged, 2 regressed", "6 cells judged, 3 regressed",
                             "6 cells judged, 4 regressed", "6 cells judged, 5 regressed",
                             "6 cells judged, 6 regressed")) or "slower within noise" in verdict
    start = r.outlines.index("interleaved: throughput over @old's, geometric mean of the "
                             "paired rounds [95% t-interval]")
    assert [line.split()[0] for line in r.outlines[start + 1:start + 5]] == [
        "sha256", "pycryptodome@local/old", "aes-128-gcm", "pycryptodome@local/old"]
    assert f"  pycryptodome version: old=PyCryptodome {OTHER_PYCRYPTODOME}, local=" \
        "PyCryptodome " in "\n".join(r.outlines)
    assert (pytester.path / "ab.json").exists()


def test_ctrl_c_stops_the_measurement_on_the_target(pytester, fake):
    import os
    import signal
    import time

    pytester.makeini("[pytest]\n")
    run = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *FAKE_MATRIX,
         "--qcrypto-timeout", "off", "--qcrypto-target",
         fake_target("sleepy", fake, QFAKE_SLEEP="600")],
        cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pid_file = fake / "sleeping.pid"
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() or not pid_file.read_text():
            assert run.poll() is None and time.monotonic() < deadline, "the target never slept"
            time.sleep(0.2)
        remote = int(pid_file.read_text())
        run.send_signal(signal.SIGINT)
        out, _ = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == pytest.ExitCode.INTERRUPTED, out
    deadline = time.monotonic() + 20
    while True:  # the gateway was terminated: the sleeping target process is gone
        try:
            os.kill(remote, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the target's process is still running"
        time.sleep(0.2)


def test_an_ab_run_that_judged_nothing_fails(pytester, fake, tmp_path):
    # the CI case: the compare target's venv lacks pytest-qcrypto, so its cells are skipped
    # and nothing is judged; that is a failed A/B gate (exit 1), not a green job
    bare = tmp_path / "venv-bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    r = pytester.runpytest(*FAKE_MATRIX, "--qcrypto-rounds", "2",
                           "--qcrypto-target", f"old=popen//python={bare / 'bin' / 'python'}",
                           "--qcrypto-compare-target", "old")
    assert any(line.startswith("qcrypto: A/B against @old: FAILED: no cell was judged")
               for line in r.outlines), r.stdout.str()
    assert r.ret == pytest.ExitCode.TESTS_FAILED, r.stdout.str()
