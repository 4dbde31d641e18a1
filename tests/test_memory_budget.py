"""The memory budget of a KDF measurement (issue 24): refused before it runs, with the figure."""


import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.algorithms.kdf_names import memory_needed
from pytest_qcrypto.measure import memory

from conftest import FAST

GIB = 2**30


@pytest.fixture
def meminfo(tmp_path, monkeypatch):
    """Point the budget at a fake /proc/meminfo (and no cgroup); returns a setter in bytes."""
    path = tmp_path / "meminfo"
    monkeypatch.setattr(memory, "MEMINFO", str(path))
    monkeypatch.setattr(memory, "CGROUP_OF_SELF", str(tmp_path / "no-cgroup"))

    def set_available(n: int) -> None:
        path.write_text(f"MemTotal:       99999999 kB\nMemAvailable:   {n // 1024} kB\n")
    return set_available


def test_the_memory_a_kdf_needs():
    scrypt = catalog.lookup("scrypt-n4194304-r32-p16")
    assert memory_needed(scrypt.family, scrypt.params) == 128 * 32 * 2**22 + 128 * 32 * 16
    argon = catalog.lookup("argon2id-m65536-t3-p4")
    assert memory_needed(argon.family, argon.params) == 64 * 2**20
    pbkdf2 = catalog.lookup("pbkdf2-sha256")
    assert memory_needed(pbkdf2.family, pbkdf2.params) == 0


def test_the_problem_names_the_figures(meminfo):
    meminfo(int(21.3 * GIB))
    alg = catalog.lookup("scrypt-n4194304-r32-p16")
    assert memory.problem(alg) == ("scrypt-n4194304-r32-p16 needs 16.0 GiB; 21.3 GiB available, "
                                   "50% allowed: lower N or r")
    assert memory.problem(catalog.lookup("scrypt")) is None
    meminfo(6 * GIB)
    assert memory.problem(catalog.lookup("argon2id-m4194304-t1-p1")) == (
        "argon2id-m4194304-t1-p1 needs 4.0 GiB; 6.0 GiB available, 50% allowed: lower m")
    assert memory.problem(catalog.lookup("argon2id-m1048576-t1-p1")) is None  # 1 GiB of 3
    assert "(4 at once)" in memory.problem(catalog.lookup("argon2id-m1048576-t1-p1"), 4)


def test_a_cgroup_limit_below_memavailable_counts(tmp_path, monkeypatch, meminfo):
    meminfo(64 * GIB)
    (tmp_path / "cgroup").write_text("0::/job/one\n")
    group = tmp_path / "fs" / "job" / "one"
    group.mkdir(parents=True)
    (group / "memory.max").write_text(f"{2 * GIB}\n")
    (group / "memory.current").write_text(f"{GIB}\n")
    (tmp_path / "fs" / "job" / "memory.max").write_text("max\n")
    monkeypatch.setattr(memory, "CGROUP_OF_SELF", str(tmp_path / "cgroup"))
    monkeypatch.setattr(memory, "CGROUP_ROOT", str(tmp_path / "fs"))
    assert memory.available() == GIB
    v1 = tmp_path / "fs" / "memory" / "box"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text(f"{3 * GIB}\n")
    (v1 / "memory.usage_in_bytes").write_text(f"{GIB}\n")
    (tmp_path / "cgroup").write_text("4:memory:/box\n0::/\n")
    assert memory.available() == 2 * GIB


def test_the_speed_matrix_refuses_it_at_once(pytester, meminfo):
    meminfo(int(21.3 * GIB))
    # refused while pytest configures, before any item is collected or measured (how long
    # that takes is a benchmark's to say, not a test's on a shared machine)
    r = pytester.runpytest("--qcrypto-kdf=scrypt-n4194304-r32-p16", "--qcrypto-plugin=openssl",
                           *FAST)
    assert "collected" not in r.stdout.str() and "passed" not in r.stdout.str()
    assert r.ret == 4
    r.stderr.fnmatch_lines(["ERROR: --qcrypto-kdf: scrypt-n4194304-r32-p16 needs 16.0 GiB; "
                            "21.3 GiB available, 50% allowed: lower N or r"])


def test_a_marker_test_skips_with_the_figure(pytester, meminfo):
    meminfo(100 * 2**20)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.qcrypto("argon2id-m65536-t1-p1", plugins=["openssl"])
        def test_kdf(qcrypto_context):
            qcrypto_context.measure(operation="derive")
    """)
    r = pytester.runpytest("-rs", *FAST)
    r.assert_outcomes(skipped=1)
    r.stdout.fnmatch_lines(["*argon2id-m65536-t1-p1 needs 64.0 MiB; 100.0 MiB available, "
                            "50% allowed: lower m*"])


@pytest.mark.parametrize("name", ["argon2id-m4194304-t1000-p255", "argon2id-m4194304-t5",
                                  "argon2id-m65536-t3-p65"])
def test_argon2id_limits_a_machine_can_hold(name):
    assert catalog.kdf_problem(name)
    assert catalog.lookup(name) is None
