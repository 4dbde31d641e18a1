"""--qcrypto-threads with a size-less cell (a signature): the table says its figures are the
summed operations per second of N threads, and each operation gets its scaling line (found
by a fresh-user trial: neither was shown)."""

from pytest_qcrypto.measure import gil
from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.tables import Cell, assemble


def _m(direction: str, count: int, one_thread_ops: float) -> Measurement:
    return Measurement("ed25519", "openssl", 0, direction, count=count, rounds_s=(1.0,) * 3,
                       threads=2, one_thread_bps=one_thread_ops, threads_cpu_wait=0.0)


def test_a_signature_table_gets_the_threads_note_and_a_line_per_operation(monkeypatch):
    monkeypatch.setattr(gil, "usable_cpus", lambda: 2)
    cells = {("openssl", "sign"): Cell(_m("sign", 2000, 1000.0)),
             ("openssl", "verify"): Cell(_m("verify", 500, 500.0))}
    table = assemble("ed25519", "", ["openssl"], cells)
    assert gil.table_notes(table) == [
        "  openssl: the summed operations per second of 2 threads at once "
        "(--qcrypto-threads=2)",
        "  openssl sign: threads 2: 2.0x of one thread (the GIL is released)",
        "  openssl verify: threads 2: 1.0x of one thread (the GIL is held)",
    ]
