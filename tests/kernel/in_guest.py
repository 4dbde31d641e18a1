"""Run inside the kernel VM: the afalg guest tests, then the main speed command.

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
}


def main() -> int:
    env = dict(os.environ, PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")
    report: dict[str, object] = {"kernel": os.uname().release}
    for name, argv in RUNS.items():
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
        report[name] = {"argv": argv, "returncode": done.returncode,
                        "stdout": done.stdout, "stderr": done.stderr}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
