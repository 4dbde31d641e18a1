"""Issue 26: ``--qcrypto-misalign=N``: every input and output buffer of the timed loop starts N
bytes past a 64-byte boundary (addresses checked with ctypes), saved and shown under the tables."""

import json

import pytest

from conftest import FAST
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.backends import Context, Unsupported
from pytest_qcrypto.backends.aligned import address, placed
from pytest_qcrypto.backends.hashlib import HashlibPlugin
from pytest_qcrypto.backends.openssl import OpenSSLPlugin
from pytest_qcrypto.backends.pycryptodome import PyCryptodomePlugin
from pytest_qcrypto.measure import bench, buffers
from pytest_qcrypto.measure.registry import Selection


@pytest.mark.parametrize("n", [1, 16, 4096])
@pytest.mark.parametrize("misalign", [0, 1, 13, 63])
def test_a_placed_buffer_starts_n_bytes_past_64(n, misalign):
    view = placed(n, misalign)
    assert len(view) == n and address(view) % 64 == misalign and bytes(view) == b"\0" * n


def outputs(run):
    """The buffers a runner closes over (its default arguments), but an AEAD's 16-byte tag
    (a slice of the placed ciphertext, wherever its end falls)."""
    return [v for v in run.__defaults__ or () if isinstance(v, memoryview) and len(v) > 16]


@pytest.mark.parametrize("plugin, name", [
    (OpenSSLPlugin, "aes-128-cbc"), (OpenSSLPlugin, "aes-128-gcm"), (OpenSSLPlugin, "sha256"),
    (OpenSSLPlugin, "hmac-sha256"), (PyCryptodomePlugin, "aes-256-ctr"),
    (PyCryptodomePlugin, "aes-128-xts"), (PyCryptodomePlugin, "chacha20-poly1305"),
    (PyCryptodomePlugin, "sha256"), (HashlibPlugin, "sha256"), (HashlibPlugin, "hmac-sha256")])
@pytest.mark.parametrize("decrypt", [False, True])
def test_every_buffer_of_the_timed_loop_is_placed(plugin, name, decrypt):
    with bench.open_context(Selection("p", plugin()), name, bench.Randomness(5)) as ctx:
        decrypt = decrypt and ctx.algorithm.can_decrypt
        work = ctx.workload(4096, decrypt=decrypt, misalign=13)
        placed_now = [work.data, *([work.ciphertext] if work.ciphertext else [])]
        run = ctx.context.runner(work)
        found = placed_now + outputs(run)
        if ctx.algorithm.can_decrypt:  # ciphers and AEADs
            assert len(outputs(run)) >= 1  # an output buffer the loop writes into
        assert all(address(b) % 64 == 13 for b in found), [address(b) % 64 for b in found]
        run(2)
        m = ctx.measure(4096, decrypt=decrypt, min_time=0.001, rounds=1, misalign=13)
        assert m.size == 4096


def test_a_context_that_does_not_place_buffers_is_skipped_with_the_reason():
    class Kernel(Context):
        pass

    with bench.open_context(Selection("openssl", OpenSSLPlugin()), "sha256") as ctx:
        real, ctx.context = ctx.context, Kernel(ctx.algorithm, b"")
        with pytest.raises(Unsupported, match="does not time buffers where qcrypto places "
                                              "them; --qcrypto-misalign=3 cannot be measured"):
            ctx.workload(64, misalign=3)
        ctx.context = real


@pytest.mark.parametrize("text", ["64", "-1", "x"])
def test_a_misalignment_outside_0_to_63_is_refused(text):
    with pytest.raises(SettingsError, match=r"\(0 to 63: bytes past a 64-byte boundary\)$"):
        buffers.parse_misalign(text)


def test_a_run_saves_and_shows_its_misalignment(pytester):
    r = pytester.runpytest_subprocess("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib",
                                      "--qcrypto-size=64", "--qcrypto-misalign=5",
                                      "--qcrypto-save=out.json", *FAST)
    assert r.ret == 0
    assert ("qcrypto: every buffer 5 bytes past a 64-byte boundary (--qcrypto-misalign=5, as "
            "openssl speed -misalign)") in r.outlines
    assert json.loads((pytester.path / "out.json").read_text())["settings"]["misalign"] == 5


def test_a_bad_misalignment_is_a_usage_error(pytester):
    r = pytester.runpytest_subprocess("--qcrypto-digest=sha256", "--qcrypto-misalign=64")
    assert r.ret == 4
    assert "--qcrypto-misalign: must be from 0 to 63, not 64 (0 to 63: bytes past a 64-byte " \
           "boundary)" in r.stderr.str()
