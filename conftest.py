"""Root conftest: the test suite drives pytest-qcrypto through pytester (enabled in pyproject).

The tiers: a plain ``pytest`` here (the README's test command, its paths from ``testpaths``)
runs the main tier on 2 pytest-xdist workers and leaves out two tiers: the kernel VM tier
(marker ``kernel_vm``: Debian's kernel booted under QEMU; ``pytest -m kernel_vm``) and the smoke
runs of the scripts under ``benchmarks/`` (marker ``benchmark_script``; ``pytest -m
benchmark_script``).  ``.ci/run`` runs all three.  Given paths, ``-n``, ``-m`` or any
``--qcrypto-*`` option (the main job), pytest runs as asked.
"""

import pytest

#: Workers of the main tier (the project's machine has 2 CPUs).
WORKERS = 2
#: The main tier: every test but the kernel VM's and the benchmark scripts' smoke runs.
MAIN_TIER = "not kernel_vm and not benchmark_script"


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's own (it turns -n into workers)
def pytest_cmdline_main(config):
    worker = getattr(config, "workerinput", None)
    if worker is not None:  # a pytest-xdist worker: the controller's tier (pytest_configure_node)
        if worker.get("qcrypto_markexpr") and not config.option.markexpr:
            config.option.markexpr = worker["qcrypto_markexpr"]
        return
    if (config.args_source != pytest.Config.ArgsSource.TESTPATHS
            or any(a.startswith("--qcrypto") for a in config.invocation_params.args)):
        return
    if not config.option.markexpr:
        config.option.markexpr = MAIN_TIER
    if (config.pluginmanager.hasplugin("xdist") and config.option.numprocesses is None
            and not config.getoption("usepdb", False) and not config.option.collectonly):
        config.option.numprocesses = WORKERS


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """pytest-xdist, on the controller: a worker parses the command line anew, so it is told
    the tier's marker expression."""
    node.workerinput["qcrypto_markexpr"] = node.config.option.markexpr


def pytest_configure(config):
    config.addinivalue_line("markers", "kernel_vm: boots Debian's kernel under QEMU (tests/kernel/vm.py); skips with the reason where it cannot")
    config.addinivalue_line("markers", "benchmark_script: a smoke run of a script under benchmarks/ (its --tiny mode)")
