"""qcrypto's table and verbose block, as exact text from known measurements."""

from pytest_qcrypto.measure.harness import Measurement
from pytest_qcrypto.output.render import FAILED, SKIPPED, Cell, Table, report, table_lines, verbose_block


def m(plugin, size, count, seconds, direction="digest", alg="sha256", driver=None, hw=None):
    return Measurement(alg, plugin, size, direction, count, (seconds * 1.1, seconds, seconds * 0.9),
                       driver=driver, hardware=hw)


def sha256_table():
    cells = {
        ("openssl", 16): Cell(m("openssl", 16, 2097152, 0.64)),        # 51200.00
        ("openssl", 64): Cell(m("openssl", 64, 1048576, 0.5)),         # 131072.00
        ("openssl", 32768): Cell(m("openssl", 32768, 1024, 0.125)),    # 262144.00
        ("pycryptodome", 16): Cell(m("pycryptodome", 16, 1000, 1.0)),  # 15.63 (15.625)
        ("pycryptodome", 64): Cell(None, SKIPPED, "PyCryptodome has no sha256"),
        ("pycryptodome", 32768): Cell(None, FAILED, "wrong answer"),
    }
    return Table("sha256", "digest", "digest", ("openssl", "pycryptodome"), (16, 64, 32768), cells)


def test_table_text_is_exact():
    assert table_lines(sha256_table()) == [
        "Benchmark results for 'sha256' digest (KiB/s):",
        "plugin                16         64      32768",
        "openssl         51200.00  131072.00  262144.00",
        "pycryptodome       15.62          -          x",
        "  - pycryptodome (size 64) skipped: PyCryptodome has no sha256",
        "  x pycryptodome (size 32768) failed: wrong answer",
    ]


def test_column_widths_follow_the_qcrypto_example():
    # The example: 'plugin' + 11 spaces + '16'; 'openssl' + 4 spaces + '55381.58'.
    cells = {("openssl", 16): Cell(m("openssl", 16, 1, 16 / 1024 / 55381.58)),
             ("openssl", 64): Cell(m("openssl", 64, 1, 64 / 1024 / 154240.87)),
             ("openssl", 32768): Cell(m("openssl", 32768, 1, 32768 / 1024 / 579293.17))}
    lines = table_lines(Table("sha256", "digest", "digest", ("openssl",), (16, 64, 32768), cells))
    assert lines[1] == "plugin           16         64      32768"
    assert lines[2] == "openssl    55381.58  154240.87  579293.17"


def test_verbose_block_uses_median_round_and_count():
    lines = verbose_block(sha256_table())
    assert lines == [
        "Benchmarking 'sha256' digest on the following plugin(s): openssl, pycryptodome",
        "plugin: openssl",
        "executed 2097152 digests of size 16 bytes in 0.64 secs",
        "executed 1048576 digests of size 64 bytes in 0.50 secs",
        "executed 1024 digests of size 32768 bytes in 0.12 secs",
        "plugin: pycryptodome",
        "executed 1000 digests of size 16 bytes in 1.00 secs",
    ]


def test_cipher_headers_and_verbs():
    enc = Table("aes-128-cbc", "cipher", "encrypt", ("openssl",), (16,),
                {("openssl", 16): Cell(m("openssl", 16, 64, 1.0, "encrypt", "aes-128-cbc"))})
    dec = Table("aes-128-cbc", "cipher", "decrypt", ("openssl",), (16,),
                {("openssl", 16): Cell(m("openssl", 16, 64, 1.0, "decrypt", "aes-128-cbc"))})
    assert table_lines(enc)[0] == "Benchmark results for 'aes-128-cbc' cipher (KiB/s):"
    assert table_lines(dec)[0] == "Benchmark results for 'aes-128-cbc' cipher, decrypt (KiB/s):"
    assert verbose_block(enc)[2] == "executed 64 encryptions of size 16 bytes in 1.00 secs"
    assert verbose_block(dec)[2] == "executed 64 decryptions of size 16 bytes in 1.00 secs"


def test_driver_note_for_kernel_rows():
    t = Table("sha256", "digest", "digest", ("afalg",), (16,),
              {("afalg", 16): Cell(m("afalg", 16, 1024, 1.0, driver="sha256-avx2", hw=False))})
    assert "  afalg: driver sha256-avx2 (software)" in table_lines(t)


def test_report_joins_tables_with_a_blank_line():
    t = sha256_table()
    assert report([t, t], verbose=False).count("") == 1
    assert report([t], verbose=True)[0].startswith("Benchmarking 'sha256'")
