"""Without --qcrypto-plugin, a run of only public-key algorithms and KDFs measures every
available plugin that has one of them (issue 15: "measures them in every plugin that has
them"); a run with any sized algorithm keeps the one default plugin."""

import re

FAST = ["--qcrypto-min-time=0.01", "--qcrypto-rounds=1", "-p", "no:cacheprovider"]


def _rows(stdout: str, header: str) -> list[str]:
    lines = stdout.splitlines()
    at = lines.index(header)
    start = next(i for i in range(at, len(lines)) if lines[i].startswith("plugin ")) + 1
    rows = []
    for line in lines[start:]:
        if not line.strip() or line.startswith((" ", "Benchmark", "=")):
            break
        rows.append(line.split()[0])
    return rows


def test_a_kdf_only_run_measures_every_plugin_that_has_it(pytester):
    r = pytester.runpytest("--qcrypto-kdf=pbkdf2-sha256-i1000", *FAST)
    assert r.ret == 0, r.stdout.str()
    header = "Benchmark results for 'pbkdf2-sha256-i1000' KDF (ops/s):"
    assert _rows(r.stdout.str(), header) == ["openssl", "hashlib", "pycryptodome"]
    assert "afalg" not in r.stdout.str()  # the kernel plugins have no KDF


def test_a_run_with_a_digest_keeps_the_one_default_plugin(pytester):
    r = pytester.runpytest("--qcrypto-kdf=pbkdf2-sha256-i1000", "--qcrypto-digest=sha256",
                           "--qcrypto-size=16", *FAST)
    assert r.ret == 0, r.stdout.str()
    assert re.search(r"^openssl +[0-9.]+$", r.stdout.str(), re.M)
    assert "hashlib" not in r.stdout.str()


def test_qcrypto_speed_follows_the_same_rule_and_its_help_says_it(pytester, capsys):
    """Issue 28: qcrypto speed's -P help said "the first available plugin" while the run
    of only -K (or -S) algorithms measures every plugin that has one, as pytest does."""
    from pytest_qcrypto.commands import qcrypto

    assert qcrypto.main(["speed", "-h"]) == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert ("Default: the first available plugin; when only signatures, KEMs and KDFs (-S, -K) "
            "are asked for, every available plugin that has one of them (as pytest).") in help_text
    pytester.chdir()
    assert qcrypto.main(["speed", "-K", "pbkdf2-sha256-i1000", *FAST[:2]]) == 0
    out = capsys.readouterr().out
    header = "Benchmark results for 'pbkdf2-sha256-i1000' KDF (ops/s):"
    assert _rows(out, header) == ["openssl", "hashlib", "pycryptodome"]
