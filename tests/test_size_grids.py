"""Issue 26: named size grids (``--qcrypto-size=openssl``, ``tls``, ``supercop``, ``qnx``), and
the tls grid's 13-byte AAD that every AEAD's timed loop authenticates."""

import pytest

from conftest import FAST
from pytest_qcrypto.algorithms import settings, size_grids
from pytest_qcrypto.backends import Context, Unsupported
from pytest_qcrypto.backends.openssl import OpenSSLPlugin
from pytest_qcrypto.backends.pycryptodome import PyCryptodomePlugin
from pytest_qcrypto.measure import bench
from pytest_qcrypto.measure.registry import Selection


def test_the_grids_hold_the_sizes_of_their_sources():
    assert size_grids.GRIDS["openssl"].sizes == (16, 64, 256, 1024, 8192, 16384)
    assert size_grids.GRIDS["tls"].sizes == (2, 31, 136, 1024, 8192, 16384)
    assert size_grids.GRIDS["tls"].aad == 13
    assert size_grids.GRIDS["qnx"].sizes == settings.DEFAULT_SIZES
    supercop = size_grids.GRIDS["supercop"].sizes
    # mlen += 1 + mlen / 8 from 0 to 4096, 0 left out
    assert supercop[:12] == (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16)
    assert supercop[-3:] == (3000, 3376, 3799) and len(supercop) == 56


def test_a_grid_name_reads_as_its_sizes_also_among_sizes():
    assert settings.parse_sizes(["openssl"]) == (16, 64, 256, 1024, 8192, 16384)
    assert settings.parse_sizes(["TLS, 4096"]) == (2, 31, 136, 1024, 4096, 8192, 16384)
    assert settings.parse_sizes(["16", "qnx"]) == settings.DEFAULT_SIZES
    assert size_grids.aad_of(["openssl"]) == 0 and size_grids.aad_of(["16,tls"]) == 13


def test_an_unknown_word_names_the_grids():
    with pytest.raises(settings.SettingsError) as info:
        settings.parse_sizes(["opensll"])
    assert str(info.value) == ("--qcrypto-size: 'opensll' is not a whole number of bytes (only "
                               "the ASCII digits 0-9) nor a named grid: qnx, openssl, tls or "
                               "supercop")


@pytest.mark.parametrize("plugin", [OpenSSLPlugin, PyCryptodomePlugin])
@pytest.mark.parametrize("name", ["aes-128-gcm", "chacha20-poly1305"])
def test_the_aead_loops_authenticate_the_aad(plugin, name):
    """The ciphertext is sealed with the 13-byte AAD; a decrypting loop that left it out would
    fail its tag (InvalidTag / ValueError) instead of running."""
    with bench.open_context(Selection("p", plugin()), name, bench.Randomness(3)) as ctx:
        work = ctx.workload(31, decrypt=True, aad=13)
        assert len(work.aad) == 13
        assert ctx.context.decrypt(work.nonces[0], work.ciphertext, work.aad) == work.data
        ctx.context.runner(work)(3)  # verifies the tag three times
        ctx.context.runner(ctx.workload(31, aad=13))(3)
        m = ctx.measure(31, decrypt=True, min_time=0.001, rounds=1, aad=13)
        assert (m.size, m.direction) == (31, "decrypt")


def test_a_context_without_aad_support_is_skipped_with_the_reason():
    class NoAad(Context):
        pass

    sel = Selection("openssl", OpenSSLPlugin())
    with bench.open_context(sel, "aes-128-gcm") as ctx:
        ctx.context = NoAad(ctx.algorithm, b"k" * 16)
        with pytest.raises(Unsupported, match="takes no AAD; the 13-byte AAD of the tls grid"):
            ctx.workload(31, aad=13)
        ctx.context = None  # (nothing to close)
        ctx.closed = True


def test_the_tls_grid_in_a_run_skips_what_cbc_cannot_take(pytester):
    r = pytester.runpytest("--qcrypto-cipher", "aes-128-gcm,aes-128-cbc", "--qcrypto-size",
                           "tls", "--qcrypto-plugin", "openssl", "-rs", *FAST)
    assert r.ret == 0, r.outlines
    header = next(i for i, line in enumerate(r.outlines)
                  if line == "Benchmark results for 'aes-128-gcm' AEAD (KiB/s):")
    assert r.outlines[header + 1].split() == ["plugin", "2", "31", "136", "1024", "8192",
                                              "16384"]
    cbc = r.outlines[r.outlines.index("Benchmark results for 'aes-128-cbc' cipher (KiB/s):") + 2]
    assert cbc.split()[1:4] == ["-", "-", "-"]
    r.assert_outcomes(passed=9, skipped=3)


def test_the_tls_grid_is_not_counted(pytester):
    r = pytester.runpytest_subprocess("--qcrypto-cipher", "aes-128-gcm", "--qcrypto-size=tls",
                                      "--qcrypto-measure=instructions")
    assert r.ret == 4
    assert ("ERROR: --qcrypto-size=tls and counting instructions (--qcrypto-measure): choose "
            "one; the counting child lays out its own buffers") in r.stderr.str()
