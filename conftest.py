"""Root conftest: the test suite drives pytest-qcrypto through pytester (enabled in pyproject)."""
