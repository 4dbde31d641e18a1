"""Root conftest: the test suite drives pytest-qcrypto through pytester (enabled in pyproject)."""


def pytest_configure(config):
    config.addinivalue_line("markers", "kernel_vm: boots Debian's kernel under QEMU (tests/kernel/vm.py); skips with the reason where it cannot")
