"""Extension points of pytest-qcrypto, added to pytest's plugin manager.

Implement these in a ``conftest.py`` or an installed pytest plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from pytest_qcrypto.backends.base import CryptoPlugin

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_qcrypto_plugins() -> list[CryptoPlugin]:
    """Return crypto plugins (backends) to add to qcrypto's registry.

    Called once per run, the first time qcrypto needs its registry (an option,
    fixture or marker asks for a measurement, or ``--qcrypto-list``); every
    implementation's list is added, built-ins first, then in pytest's hook
    order.  A name (or alias) that two plugins claim is a usage error.

    Example, in a ``conftest.py``::

        from pytest_qcrypto.backends import CryptoPlugin, Context

        class VendorPlugin(CryptoPlugin):
            name = "vendor"
            library = "libvendorcrypto via ctypes"

            def supported(self):
                return frozenset({"sha256"})

            def open(self, algorithm, key, variant=None):
                return VendorSha256Context(algorithm, key)

        def pytest_qcrypto_plugins():
            return [VendorPlugin()]

    Then ``pytest --qcrypto-digest sha256 --qcrypto-plugin vendor``.
    """
    raise NotImplementedError
