"""Issue 26: ``--qcrypto-update-size=N``: a digest or MAC buffer fed in N-byte ``update()``
calls (a fresh state each operation), the last one shorter."""

import hashlib
import json
import sys

import pytest

from conftest import FAST
from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.backends import Context, Unsupported
from pytest_qcrypto.backends.base import Workload, piecewise_runner
from pytest_qcrypto.backends.hashlib import HashlibPlugin
from pytest_qcrypto.backends.openssl import OpenSSLPlugin
from pytest_qcrypto.backends.pycryptodome import PyCryptodomePlugin
from pytest_qcrypto.measure import bench, buffers
from pytest_qcrypto.measure.registry import Selection


class Recording:
    """A hash state that records the size of every update() and the finishing call."""

    calls: list = []

    def update(self, piece):
        Recording.calls.append(len(piece))

    def digest(self):
        Recording.calls.append("digest")


def test_the_pieces_are_n_bytes_and_the_last_one_shorter():
    work = Workload(bytes(range(256)) * 16, update_size=1000)
    assert [len(p) for p in work.pieces()] == [1000, 1000, 1000, 1000, 96]
    assert b"".join(work.pieces()) == work.data
    assert [len(p) for p in Workload(b"x" * 64).pieces()] == [64]


def test_a_piecewise_round_makes_a_fresh_state_and_updates_per_piece():
    Recording.calls = []
    piecewise_runner(Recording, Workload(b"a" * 100, update_size=32))(2)
    assert Recording.calls == [32, 32, 32, 4, "digest"] * 2


def test_pieces_give_the_digest_of_the_whole_buffer():
    work = Workload(bytes(range(256)) * 4, update_size=100)
    h = hashlib.sha256()
    for piece in work.pieces():
        h.update(piece)
    assert h.hexdigest() == hashlib.sha256(work.data).hexdigest()


@pytest.mark.parametrize("plugin, name", [
    (OpenSSLPlugin, "sha256"), (OpenSSLPlugin, "hmac-sha256"), (OpenSSLPlugin, "poly1305"),
    (OpenSSLPlugin, "cmac-aes-128"), (PyCryptodomePlugin, "sha3-256"),
    (PyCryptodomePlugin, "hmac-sha256"), (HashlibPlugin, "sha256"), (HashlibPlugin, "hmac-sha1")])
def test_every_digest_and_mac_loop_feeds_pieces(plugin, name, monkeypatch):
    with bench.open_context(Selection("p", plugin()), name, bench.Randomness(2)) as ctx:
        work = ctx.workload(1000, update_size=64)
        assert work.update_size == 64
        seen = []
        real = piecewise_runner

        def spy(new, w, finish="digest"):
            seen.append((len(w.pieces()), finish))
            return real(new, w, finish)

        monkeypatch.setattr(sys.modules[type(ctx.context).__module__], "piecewise_runner", spy)
        ctx.context.runner(work)(3)
        assert seen and seen[0][0] == 16  # 15 pieces of 64 bytes and one of 40
        m = ctx.measure(1000, min_time=0.001, rounds=1, update_size=64)
        assert m.size == 1000


def test_a_context_that_feeds_at_once_is_skipped_with_the_reason():
    class AtOnce(Context):
        pass

    with bench.open_context(Selection("hashlib", HashlibPlugin()), "sha256") as ctx:
        real, ctx.context = ctx.context, AtOnce(ctx.algorithm, b"")
        with pytest.raises(Unsupported, match="feeds the buffer at once; "
                                              "--qcrypto-update-size=64 cannot be measured"):
            ctx.workload(1000, update_size=64)
        ctx.context = real


def test_ciphers_ignore_it():
    with bench.open_context(Selection("openssl", OpenSSLPlugin()), "aes-128-cbc") as ctx:
        assert ctx.workload(64, update_size=16).update_size is None


def test_a_zero_update_size_is_refused():
    with pytest.raises(SettingsError, match="--qcrypto-update-size: must be from 1 to"):
        buffers.parse_update_size("0")


def test_a_run_saves_and_shows_its_update_size(pytester):
    r = pytester.runpytest_subprocess("--qcrypto-digest=sha256", "--qcrypto-plugin=hashlib",
                                      "--qcrypto-size=4096", "--qcrypto-update-size=64",
                                      "--qcrypto-save=out.json", *FAST)
    assert r.ret == 0
    assert ("qcrypto: digests and MACs fed 64 bytes an update() (--qcrypto-update-size=64), a "
            "fresh state each operation") in r.outlines
    assert json.loads((pytester.path / "out.json").read_text())["settings"]["update_size"] == 64


def test_a_run_without_digests_or_macs_says_the_update_size_had_no_effect(pytester):
    r = pytester.runpytest_subprocess("--qcrypto-cipher=aes-128-cbc,aes-128-gcm",
                                      "--qcrypto-plugin=openssl", "--qcrypto-size=16",
                                      "--qcrypto-update-size=100", *FAST)
    assert r.ret == 0
    assert ("qcrypto: --qcrypto-update-size had no effect: it feeds digests and MACs in pieces, "
            "not ciphers and AEADs") in r.outlines
    assert not [line for line in r.outlines if "fed 100 bytes an update()" in line]
