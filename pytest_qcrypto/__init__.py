"""pytest-qcrypto: crypto speed benchmarks as a pytest plugin.

Importing this package imports no crypto library.  The plain-Python API:

* :mod:`pytest_qcrypto.catalog`: algorithms as data;
* :mod:`pytest_qcrypto.backends`: crypto plugins (openssl, pycryptodome, hashlib, ...);
* :mod:`pytest_qcrypto.bench`: open a checked context and measure it;
* :mod:`pytest_qcrypto.harness`: the doubling-count timing loop and ``Measurement``;
* :mod:`pytest_qcrypto.render`: qcrypto's tables.

PYTEST_DONT_REWRITE: the package has no assertions for pytest to rewrite, and
the ``qcrypto`` command imports it before pytest starts (pytest would warn
that it came too late to rewrite it).
"""

__version__ = "0.1.0"
