"""An interrupted run's tables keep every row and column the matrix asked for: the sizes of
a sized table, the operations of a size-less one, the PLUGIN@TARGET rows of targets."""

from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.layouts import report
from pytest_qcrypto.output.tables import Cell, assemble, with_every_cell


def _sign(plugin: str) -> Measurement:
    return Measurement("ed25519", plugin, 0, "sign", count=1000, rounds_s=(0.5, 0.5, 0.5))


def test_a_size_less_table_keeps_every_operation_and_no_size_column():
    table = assemble("ed25519", "", ["openssl"], {("openssl", "sign"): Cell(_sign("openssl"))})
    (full,) = with_every_cell([table], {"ed25519"}, ["openssl", "pycryptodome"], (16, 4096))
    assert full.operations == ("sign", "verify")
    assert full.sizes == ()
    assert full.plugins == ("openssl", "pycryptodome")
    lines = report([full], verbose=False)
    assert lines[:6] == [
        "Benchmark results for 'ed25519' signature (ops/s):",
        "plugin            sign   verify",
        "openssl        2000.00        -",
        "pycryptodome         -        -",
        "  - openssl (verify): not measured in this run",
        "  - pycryptodome (all operations): not measured in this run",
    ]


def test_target_rows_are_the_cases_plugins():
    m = Measurement("sha256", "hashlib@old", 16, "digest", count=1024, rounds_s=(0.1,) * 3)
    table = assemble("sha256", "digest", ["hashlib@old"], {("hashlib@old", 16): Cell(m)})
    (full,) = with_every_cell([table], {"sha256"}, ["hashlib@local", "hashlib@old"], (16,))
    assert full.plugins == ("hashlib@local", "hashlib@old")


def test_gate_lines_name_a_size_less_cell_by_its_operation_alone():
    from pytest_qcrypto.gate.summary import _lines_per_group

    assert _lines_per_group([("ed25519", "openssl", 0, "sign"),
                             ("sha256", "openssl", 16, "digest"),
                             ("sha256", "openssl", 64, "digest")], "not run") == [
        "  ed25519 openssl sign: not run", "  sha256 openssl digest, sizes 16, 64: not run"]


def test_a_plugin_without_the_algorithm_says_so_where_no_item_reached_it():
    # an interrupted run: openssl measured 16 B, nothing reached the rest; hashlib's row
    # says why (as a finished run's skip does), not "not measured in this run"
    from pytest_qcrypto.backends.hashlib import HashlibPlugin
    from pytest_qcrypto.backends.openssl import OpenSSLPlugin
    from pytest_qcrypto.measure.registry import Registry
    from pytest_qcrypto.pytest_side.ledger import with_unsupported

    m = Measurement("aes-128-gcm", "openssl", 16, "encrypt", count=1024, rounds_s=(0.1,) * 3)
    table = assemble("aes-128-gcm", "encrypt", ["openssl"], {("openssl", 16): Cell(m)})
    (full,) = with_every_cell([table], {"aes-128-gcm"}, ["openssl", "hashlib"], (16, 64))
    registry = Registry([OpenSSLPlugin(), HashlibPlugin()])
    (said,) = with_unsupported([full], registry)
    lines = report([said], verbose=False)
    assert lines[4:] == [
        "  - openssl (size 64): not measured in this run",
        "  - hashlib (all sizes): hashlib does not support aes-128-gcm"]
    assert with_unsupported([table], registry) == [table]  # measured rows: nothing to add
