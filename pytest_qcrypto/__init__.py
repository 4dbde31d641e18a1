"""pytest-qcrypto: crypto speed benchmarks as a pytest plugin.

Importing this package imports no crypto library.  The plain-Python API:

* :mod:`pytest_qcrypto.catalog`: algorithms as data;
* :mod:`pytest_qcrypto.backends`: crypto plugins (openssl, pycryptodome, hashlib, ...);
* :mod:`pytest_qcrypto.bench`: open a checked context and measure it;
* :mod:`pytest_qcrypto.harness`: the doubling-count timing loop and ``Measurement``;
* :mod:`pytest_qcrypto.render`: qcrypto's tables.
"""

__version__ = "0.1.0"
