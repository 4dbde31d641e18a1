"""Run inside the kernel VM: the afalg guest tests, then the main speed command
(digest and cipher against openssl; MACs and the 64-bit block ciphers with
``afalg`` and ``afalg:soft``), an afalg run with ``-v`` (the cost model's notes
with the interface's null request), then ``cryptotest -v -P afalg -z 4``.

Prints one JSON object: the kernel release and, per run, its command line,
exit status, stdout and stderr.  ``tests/kernel/test_vm.py`` starts it with
``vm.Machine.run`` and asserts on the result.  pytest runs with plugin
autoloading off and the qcrypto plugin named with ``-p``: under TCG that
halves its start-up.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PYTEST = [sys.executable, "-m", "pytest", "-p", "pytest_qcrypto.plugin", "-p", "no:cacheprovider"]
RUNS = {
    "guest_tests": [*PYTEST, "-q", "-rs", "tests/kernel/afalg_guest.py"],
    "speed": [*PYTEST, "--qcrypto-digest", "sha256", "--qcrypto-cipher", "aes-128-cbc",
              "--qcrypto-plugin", "afalg", "--qcrypto-plugin", "openssl",
              "--qcrypto-min-time", "0.01", "--qcrypto-rounds", "1"],
    "macs": [*PYTEST, "--qcrypto-mac", "hmac-sha256", "--qcrypto-mac", "cmac-aes-128",
             "--qcrypto-mac", "poly1305", "--qcrypto-cipher", "des-cbc", "--qcrypto-cipher",
             "bf-cbc", "--qcrypto-cipher", "cast5-cbc", "--qcrypto-plugin", "afalg",
             "--qcrypto-plugin", "afalg:soft", "--qcrypto-min-time", "0.01",
             "--qcrypto-rounds", "1"],
    # -v: the notes under the table, where the time goes, with the interface's own cost
    # (afalg's null request, ecb(cipher_null)) beside the per-call cost
    "model": [*PYTEST, "--qcrypto-cipher", "aes-128-cbc", "--qcrypto-digest", "sha256",
              "--qcrypto-plugin", "afalg", "--qcrypto-size", "16,256,4096",
              "--qcrypto-min-time", "0.01", "--qcrypto-rounds", "3", "-v"],
    # the console script's code, run as a module (the same main()); the plugin is named
    # through PYTEST_ADDOPTS since autoloading is off (see ENV)
    "cryptotest": [sys.executable, "-m", "pytest_qcrypto.commands.cryptotest", "-v", "-P", "afalg", "-z",
                   "4"],
}
#: Extra environment of a run.
ENV = {"cryptotest": {"PYTEST_ADDOPTS": "-p pytest_qcrypto.plugin"}}


def main() -> int:
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    report: dict[str, object] = {"kernel": os.uname().release}
    for name, argv in RUNS.items():
        done = subprocess.run(argv, capture_output=True, text=True,
                              env={**env, **ENV.get(name, {})}, timeout=600)
        report[name] = {"argv": argv, "returncode": done.returncode,
                        "stdout": done.stdout, "stderr": done.stderr}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
