"""The tests' temporary folders in memory where there is a tmpfs (testing/ramdisk.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from testing import ROOT, ramdisk


def test_only_a_tmpfs_mount_with_room_is_used(tmp_path: Path) -> None:
    assert not ramdisk.usable(ROOT)  # a folder of a disk, no mount of its own
    assert not ramdisk.usable(tmp_path / "missing")
    mounted = {line.split()[1] for line in Path("/proc/mounts").read_text().splitlines() if line.split()[2:3] == ["tmpfs"]}
    if ramdisk.usable():
        assert str(ramdisk.SHM) in mounted


def test_tmp_path_is_made_in_the_tmpfs_when_it_was_chosen(tmp_path: Path) -> None:
    if os.environ.get("PYTEST_DEBUG_TEMPROOT") != str(ramdisk.SHM):
        pytest.skip("the user chose the temporary root, or the machine has no usable tmpfs")
    assert tmp_path.resolve().is_relative_to(ramdisk.SHM)
