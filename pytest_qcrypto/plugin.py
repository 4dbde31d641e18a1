"""The pytest11 entry point of pytest-qcrypto (``pytest -p pytest_qcrypto.plugin``).

pytest finds the plugin's hooks and fixtures among this module's names.  It stays thin and
cheap, since pytest loads it in every run of an environment where the package is installed: it
imports the option table and :mod:`pytest_qcrypto.pytest_side.dormant`, and the rest of the
package only when a run asks for a benchmark (an option, an ini key, the ``qcrypto`` marker or
a fixture; see :mod:`~pytest_qcrypto.pytest_side.dormant`).  The run itself lives in
:mod:`pytest_qcrypto.pytest_side.run`; the fixtures' work in
:mod:`pytest_qcrypto.pytest_side.fixture`.

A "plugin" in pytest-qcrypto's own words is a crypto backend (``--qcrypto-plugin``); this module
is the *pytest* plugin that carries them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_qcrypto.pytest_side import dormant, options

#: The marker's line in ``pytest --markers``.
MARKER = ("qcrypto(algorithms, plugins=None, sizes=None, decrypt=False), or qcrypto(callable=fn, "
          "sizes=None, name=None): parametrize a test over algorithm x crypto plugin x buffer "
          "size (or your callable x size); it gets the qcrypto_case and qcrypto_context fixtures.")


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_qcrypto.pytest_side import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    options.add_options(parser, help_wanted=dormant.help_wanted(pluginmanager))


def pytest_qcrypto_plugins() -> list[Any]:
    """The built-in crypto plugins join the registry through the same hook as everyone's."""
    from pytest_qcrypto.backends import builtin_plugins

    return list(builtin_plugins())


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if config.getoption("qcrypto_bare") or config.getoption("qcrypto_list"):
        from pytest_qcrypto.pytest_side.cmdline import cmdline_main

        return cmdline_main(config)
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    config.pluginmanager.register(dormant.Dormant(config, _configure), dormant.DORMANT_NAME)
    if dormant.asked(config):
        dormant.awake(config)


def _configure(config: pytest.Config) -> Any:
    """Set the run up (:func:`pytest_qcrypto.pytest_side.run.configure`), imported now."""
    from pytest_qcrypto.pytest_side.run import configure

    return configure(config)


# -- the fixtures --------------------------------------------------------------------------

@pytest.fixture
def qcrypto(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Open, measure and record crypto contexts in your own tests.

    ``qcrypto.open(algorithm, plugin)`` returns a context with
    ``measure(size_bytes) -> Measurement`` (``.kib_per_s``, ``.count``,
    ``.rounds_s``); contexts close when the test ends.  Skips when the plugin is
    unavailable or lacks the algorithm.  ``qcrypto.measure_callable(fn, size=4096,
    name="encrypt_record")`` times your own code, ``fn(data)``, the same way.
    """
    dormant.awake(request.config)
    from pytest_qcrypto.pytest_side import fixture

    yield from fixture.qcrypto_fixture(request)


@pytest.fixture
def qcrypto_case(request: pytest.FixtureRequest) -> Any:
    """The (algorithm, plugin, size) of this item: set by the matrix or ``@pytest.mark.qcrypto``."""
    dormant.awake(request.config)
    from pytest_qcrypto.pytest_side import fixture

    return fixture.case_of_request(request)


@pytest.fixture
def qcrypto_context(request: pytest.FixtureRequest, qcrypto: Any, qcrypto_case: Any) -> Any:
    """The open, keyed context of this item's (algorithm, plugin); closed at teardown.

    A software context, a /dev/crypto session or an AF_ALG socket.  Its
    ``measure(size)`` checks the known-answer vectors first, then times.  Under
    ``@pytest.mark.qcrypto(callable=fn, ...)``: the callable (``QcryptoFixture.open_callable``).
    """
    from pytest_qcrypto.pytest_side import fixture

    return fixture.context_of_request(request, qcrypto, qcrypto_case)
