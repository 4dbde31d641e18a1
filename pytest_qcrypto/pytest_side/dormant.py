"""How the plugin costs nothing in a pytest run that never asks for a benchmark.

pytest-qcrypto registers itself in every pytest run of an environment where it is installed.
A run that gives a ``--qcrypto-*`` option or sets a ``qcrypto_*`` ini key (:func:`asked`) is set
up at once (:func:`awake`: the run's settings checked, the matrix, the guard and the gate
registered, see :mod:`pytest_qcrypto.pytest_side.run`).  Any other run registers only
:class:`Dormant`, which watches collection and wakes the plugin the first time a test uses the
``qcrypto`` marker or fixtures, or (under pytest-xdist, on the controller) a worker reports a
benchmark item it skipped; until then nothing but the option table, the hook specification and
this module is imported: no crypto library, no measuring code.

Imports only the option table (and pytest); the set-up it wakes is handed to it by the entry
point (:mod:`pytest_qcrypto.plugin`), so that nothing here imports the run.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from typing import Any

import pytest

from pytest_qcrypto.pytest_side import options

#: The names the run's parts are registered under on pytest's plugin manager.
RUN_NAME = "qcrypto-run"
GUARD_NAME = "qcrypto-guard"
DORMANT_NAME = "qcrypto-dormant"
#: The fixtures of the plugin; a test that uses one wakes it.
FIXTURES = frozenset({"qcrypto", "qcrypto_case", "qcrypto_context"})
#: The skip reason of benchmark items on pytest-xdist workers.
XDIST_SKIP = ("not measured under pytest-xdist: a measurement must not share the machine "
              "with other tests; run benchmarks with -n 0")
#: A command-line word that may ask pytest for its help: ``-h``, ``--help``, or a cluster of
#: short flags with an ``h`` (``-vh``); a false alarm only costs building the help texts.
_HELP_WORD = re.compile(r"^(--help|-[A-Za-z]*h[A-Za-z]*)$")


def help_wanted(pluginmanager: pytest.PytestPluginManager) -> bool:
    """Whether this pytest run may show its help (``-h`` among its arguments or in
    ``PYTEST_ADDOPTS``), read from the invocation before the options are parsed."""
    config = pluginmanager.get_plugin("pytestconfig")
    args = list(getattr(getattr(config, "invocation_params", None), "args", None) or ())
    try:
        args += shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        return True
    return config is None or any(_HELP_WORD.match(str(a)) for a in args)


def asked(config: pytest.Config) -> bool:
    """Whether the run gives any ``--qcrypto-*`` option or ``qcrypto_*`` ini key: then the
    plugin sets itself up at once and checks every value before any test runs."""
    for o in options.OPTIONS:
        if o.flag is not None and config.getoption(o.dest, o.default) not in (o.default, None):
            return True
        if o.ini is not None:
            try:
                if config.getini(o.ini) not in (o.ini_default, None, ""):
                    return True
            except (ValueError, TypeError, pytest.UsageError):
                return True  # a bad value: checked, and said, by the full set-up
    return False


def awake(config: pytest.Config) -> Any:
    """The run (:class:`pytest_qcrypto.pytest_side.run.QcryptoRun`), set up now by the
    ``configure`` that :class:`Dormant` was given if it was not (the entry point gives
    :func:`pytest_qcrypto.pytest_side.run.configure`).  Raises ``pytest.UsageError`` for a bad
    option or ini value."""
    run = config.pluginmanager.get_plugin(RUN_NAME)
    if run is None:
        dormant = config.pluginmanager.get_plugin(DORMANT_NAME)
        run = dormant.configure(config)
    return run


def wants_qcrypto(node: Any) -> bool:
    """A test (item or function definition) that uses the ``qcrypto`` marker or a fixture."""
    return (node.get_closest_marker("qcrypto") is not None
            or bool(FIXTURES & set(getattr(node, "fixturenames", ()))))


class Dormant:
    """Registered instead of the run when nothing asked for it (:func:`asked`); wakes it.

    Each hook does nothing once the run is awake: the run's own parts then take the hooks.
    The hook during which it wakes is forwarded to them by hand (pytest chose the plugins of
    that call before they were registered)."""

    def __init__(self, config: pytest.Config, configure: Callable[[pytest.Config], Any]) -> None:
        self.config = config
        #: sets the run up (``pytest_qcrypto.pytest_side.run.configure``), imported when asked
        self.configure = configure

    def _awake(self) -> bool:
        return self.config.pluginmanager.get_plugin(RUN_NAME) is not None

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        if not self._awake() and (wants_qcrypto(metafunc.definition)
                                  or FIXTURES & set(metafunc.fixturenames)):
            awake(self.config).matrix.pytest_generate_tests(metafunc)

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        if not self._awake() and any(wants_qcrypto(item) for item in items):
            run = awake(self.config)
            self.config.pluginmanager.get_plugin(GUARD_NAME).pytest_collection_modifyitems(items)
            run.pytest_collection_modifyitems(items)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if (not self._awake() and report.when == "setup" and report.skipped
                and XDIST_SKIP in str(report.longrepr)):  # on the pytest-xdist controller
            awake(self.config)
            self.config.pluginmanager.get_plugin(GUARD_NAME).pytest_runtest_logreport(report)
