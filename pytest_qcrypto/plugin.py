"""The pytest11 entry point of pytest-qcrypto (``pytest -p pytest_qcrypto.plugin``).

Kept thin: pytest finds the hooks and fixtures among this module's names; they live in
:mod:`pytest_qcrypto.pytest_side.run`.
"""

from pytest_qcrypto.pytest_side.run import *  # noqa: F401,F403  the hooks and fixtures
