"""The options that end a pytest run before its tests: ``--qcrypto-bare`` (pytest's own output
moved to standard error, set up before anything prints) and ``--qcrypto-list`` (every crypto
plugin, whether it is available here and why not, on standard output).  Called from the
entry point's ``pytest_cmdline_main``; imported only when one of them is given."""

from __future__ import annotations

import sys

import pytest

from pytest_qcrypto.algorithms.settings import SettingsError
from pytest_qcrypto.measure.registry import RegistryError, list_plugins
from pytest_qcrypto.pytest_side import options, progress
from pytest_qcrypto.pytest_side.run import QcryptoRun


def cmdline_main(config: pytest.Config) -> int | None:
    """``--qcrypto-bare`` and ``--qcrypto-list``; the list checks the other options first, as
    a run would: a bad one is a usage error (exit 4, its message on standard error), not
    ignored.  Returns the exit code for the list, None to go on with the run."""
    if config.getoption("qcrypto_bare"):  # before configure: moves pytest's output to stderr
        config.pluginmanager.register(progress.StderrTerminal(), "qcrypto-stderr-terminal")
    if config.getoption("qcrypto_list"):
        run = QcryptoRun(config)
        try:
            run.check()
            lines = list_plugins(run.registry)
        except (SettingsError, RegistryError, pytest.UsageError) as exc:
            sys.stderr.write(f"ERROR: {options.for_command(config, str(exc))}\n")
            return int(pytest.ExitCode.USAGE_ERROR)
        sys.stdout.write("\n".join(lines) + "\n")
        return 0
    return None
