"""pytest-qcrypto: crypto speed benchmarks as a pytest plugin.

Importing this package imports no crypto library.  The plain-Python API:

* :mod:`pytest_qcrypto.algorithms.catalog`: algorithms as data;
* :mod:`pytest_qcrypto.backends`: crypto plugins (openssl, pycryptodome, hashlib, ...);
* :mod:`pytest_qcrypto.measure.bench`: open a checked context and measure it;
* :mod:`pytest_qcrypto.measure.harness`: the doubling-count timing loop and ``Measurement``;
* :mod:`pytest_qcrypto.output.render`: qcrypto's tables;
* :func:`measure_callable`: time your own code, ``fn(data)`` on ``size`` bytes per call
  (:mod:`pytest_qcrypto.measure.callables`; imported when first used).

PYTEST_DONT_REWRITE: the package has no assertions for pytest to rewrite, and
the ``qcrypto`` command imports it before pytest starts (pytest would warn
that it came too late to rewrite it).
"""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``pytest_qcrypto.measure_callable``, imported on first use (PEP 562)."""
    if name == "measure_callable":
        from pytest_qcrypto.measure.callables import measure_callable

        return measure_callable
    raise AttributeError(f"module 'pytest_qcrypto' has no attribute {name!r}")
