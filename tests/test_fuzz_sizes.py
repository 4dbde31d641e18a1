"""Every (plugin, algorithm) at odd buffer sizes: outputs agree byte for byte across plugins.

Sizes 1, 15, 17, 65535 and 65537 bytes where the mode takes them; for modes
without padding (CBC, ECB, 3DES) the nearest whole blocks on either side.
Each available built-in plugin (kernel plugins too, where the machine has
them) encrypts the same data with the same key and IV, or digests or MACs it; the
outputs must be identical, each must decrypt back, and each timed loop must
run at that size.
"""

import pytest

from pytest_qcrypto.algorithms import catalog
from pytest_qcrypto.backends import builtin_plugins
from pytest_qcrypto.measure.bench import BenchContext, Randomness
from pytest_qcrypto.measure.registry import Registry, Selection

ODD_SIZES = (1, 15, 17, 65535, 65537)
REGISTRY = Registry(builtin_plugins())
AVAILABLE = [p for p in REGISTRY.plugins if REGISTRY.unavailable(p) is None]


def sizes_for(alg: catalog.Algorithm) -> list[int]:
    """The odd sizes the mode takes, else the nearest multiples of its block around them."""
    g = alg.granularity
    out = set()
    for s in ODD_SIZES:
        if alg.size_problem(s) is None:
            out.add(s)
        elif g > 1:
            out.update(n for n in (s - s % g, s + (-s) % g) if n and alg.size_problem(n) is None)
    return sorted(out)


def plugins_for(alg: catalog.Algorithm) -> list:
    """The plugins of a kind with a buffer size (the others: tests/test_pkey_checks.py)."""
    return [p for p in AVAILABLE if alg.rules.sized and alg.name in REGISTRY.supported(p)]


@pytest.mark.parametrize("alg", [a for a in catalog.ALGORITHMS if plugins_for(a)],
                         ids=lambda a: a.name)
def test_plugins_agree_at_odd_sizes(alg):
    rng = Randomness(seed=sum(map(ord, alg.name)))
    key = rng.key(alg)
    plugins = plugins_for(alg)
    contexts = {p.name: p.open(alg, key) for p in plugins}
    try:
        for size in sizes_for(alg):
            data = rng.bytes(size)
            iv = rng.bytes(alg.iv_size)
            aad = rng.bytes(13) if alg.kind == catalog.AEAD else b""
            outputs = {}
            for name, ctx in contexts.items():
                if alg.kind == catalog.DIGEST:
                    outputs[name] = ctx.digest(data)
                    assert len(outputs[name]) == alg.digest_size, (name, size)
                elif alg.is_of((catalog.MAC,)):
                    outputs[name] = ctx.mac(data)
                    assert len(outputs[name]) == alg.tag_size, (name, size)
                else:
                    sealed = ctx.encrypt(iv, data, aad)
                    assert len(sealed) == size + alg.tag_size, (name, size)
                    assert ctx.decrypt(iv, sealed, aad) == data, (name, size)
                    outputs[name] = sealed
            differ = {n: o.hex()[:32] for n, o in outputs.items() if o != outputs[plugins[0].name]}
            assert not differ, f"{alg.name} at {size} bytes: {plugins[0].name} disagrees with {differ}"
    finally:
        for ctx in contexts.values():
            ctx.close()


@pytest.mark.parametrize("alg", [a for a in catalog.ALGORITHMS if plugins_for(a)],
                         ids=lambda a: a.name)
def test_timed_loops_run_at_odd_sizes(alg):
    """The runner takes every odd size (both directions), after the round-trip check."""
    for plugin in plugins_for(alg):
        rng = Randomness(seed=1)
        with BenchContext(Selection(plugin.name, plugin), alg, plugin.open(alg, rng.key(alg)),
                          rng) as ctx:
            for size in sizes_for(alg)[:3]:
                for decrypt in ((False, True) if alg.can_decrypt else (False,)):
                    ctx.context.runner(ctx.workload(size, decrypt))(3)


def test_there_is_something_to_compare():
    """At least two plugins do most algorithms here, or the comparison above proves little."""
    assert len(AVAILABLE) >= 2
    shared = [a for a in catalog.ALGORITHMS if len(plugins_for(a)) >= 2]
    assert len(shared) >= 20, [a.name for a in shared]
