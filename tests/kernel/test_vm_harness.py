"""The kernel VM harness itself (``tests/kernel/vm.py``), without booting anything."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import vm


def test_missing_tool_is_a_one_line_reason(monkeypatch):
    monkeypatch.setattr(vm.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(vm, "_which", lambda name: None)
    with pytest.raises(vm.VMUnavailable) as info:
        vm.find_tools()
    assert str(info.value) == ("qemu-system-x86_64 not found (Debian package qemu-system-x86; "
                               ".ci/run installs it when run as root)")


def test_dynamic_busybox_is_refused(monkeypatch):
    found = {"busybox": os.path.realpath(sys.executable)}  # a dynamically linked ELF
    monkeypatch.setattr(vm, "_which", lambda name: found.get(name, f"/usr/bin/{name}"))
    monkeypatch.setattr(vm.platform, "machine", lambda: "x86_64")
    with pytest.raises(vm.VMUnavailable, match="is not statically linked .install busybox-static"):
        vm.find_tools()


def test_other_architectures_are_a_reason(monkeypatch):
    monkeypatch.setattr(vm.platform, "machine", lambda: "aarch64")
    with pytest.raises(vm.VMUnavailable, match="needs an x86_64 host, not aarch64"):
        vm.find_tools()


def test_static_elf_check():
    assert vm._is_static_elf(os.path.realpath(sys.executable)) is False
    if Path("/bin/busybox").exists():
        assert vm._is_static_elf("/bin/busybox") is True


def test_only_the_kernel_and_crypto_virtio_9p_modules_are_unpacked():
    assert vm._wanted("./boot/vmlinuz-6.1.0-57-amd64") == "boot/vmlinuz-6.1.0-57-amd64"
    assert vm._wanted("./lib/modules/6.1.0-57-amd64/kernel/crypto/af_alg.ko") is not None
    assert vm._wanted("./usr/lib/modules/6.1/kernel/fs/9p/9p.ko") == \
        "lib/modules/6.1/kernel/fs/9p/9p.ko"
    assert vm._wanted("./lib/modules/6.1/modules.order") == "lib/modules/6.1/modules.order"
    assert vm._wanted("./lib/modules/6.1/kernel/drivers/gpu/drm/i915.ko") is None
    assert vm._wanted("./usr/share/doc/linux-image/changelog.gz") is None


def test_cpio_is_newc_with_a_trailer():
    data = vm._cpio([("bin", 0o040755, b""), ("init", 0o100755, b"#!/bin/sh\n")])
    assert data.startswith(b"070701") and len(data) % 4 == 0
    entries, offset = [], 0
    while True:
        fields = [int(data[offset + 6 + 8 * i: offset + 14 + 8 * i], 16) for i in range(13)]
        size, namesize = fields[6], fields[11]
        name_at = offset + 110
        name = data[name_at: name_at + namesize - 1].decode()
        body_at = name_at + namesize + (-(110 + namesize) % 4)
        entries.append((name, fields[1], data[body_at: body_at + size]))
        offset = body_at + size + (-size % 4)
        if name == "TRAILER!!!":
            break
    assert entries == [("bin", 0o040755, b""), ("init", 0o100755, b"#!/bin/sh\n"),
                       ("TRAILER!!!", 0, b"")]


def test_kernel_package_can_be_named(monkeypatch):
    monkeypatch.setenv("QCRYPTO_KERNEL_PACKAGE", "linux-image-6.1.0-99-amd64-unsigned")
    assert vm.kernel_package({}) == "linux-image-6.1.0-99-amd64-unsigned"


def test_host_root_is_shared_read_only(tmp_path):
    machine = vm.Machine(tmp_path / "vmlinux", tmp_path / "initrd", tmp_path / "modules",
                         "qemu-system-x86_64")
    line = machine.command_line(tmp_path)
    assert "local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap" in line
    assert f"local,id=qrun,path={tmp_path},security_model=none" in line
    assert "-no-reboot" in line and "panic=-1" in " ".join(line)


def test_cache_directory_is_the_suites_own(monkeypatch, tmp_path):
    monkeypatch.delenv("QCRYPTO_KERNEL_CACHE", raising=False)
    assert vm.cache_dir() == Path.home() / ".cache" / "pytest-qcrypto-kernel"
    monkeypatch.setenv("QCRYPTO_KERNEL_CACHE", str(tmp_path))
    assert vm.cache_dir() == tmp_path
