"""The tests' temporary folders in memory, where the machine has a tmpfs at /dev/shm.

A run makes and removes about 170,000 files (KBs copied, git repositories, indexes): on ext4
the kernel's work for that (inode allocation skipping recently deleted inodes, journal blocks)
was a third of the suite's CPU, 108 s of sys time in 317 s; in a tmpfs, 38 s (docs/testing.md).
Only the root pytest makes its numbered ``pytest-of-USER/pytest-N`` folders in moves (through
``PYTEST_DEBUG_TEMPROOT``), so the last three runs are kept and concurrent runs stay apart as
before; a root the user chose (``--basetemp``, ``TMPDIR``, ``PYTEST_DEBUG_TEMPROOT``) is kept.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHM = Path("/dev/shm")  # noqa: S108 (a folder checked, not a file made)
# Free space the tmpfs must have: a run's folders at once take tens of MB; a container's
# 64 MB /dev/shm (docker's default) is too small.
MIN_FREE = 1 << 30


def usable(root: Path = SHM) -> bool:
    """Whether ``root`` is a writable tmpfs mount with ``MIN_FREE`` bytes free."""
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
        stats = os.statvfs(root)
    except OSError:
        return False
    tmpfs = any(line.split()[1:3] == [str(root), "tmpfs"] for line in mounts if len(line.split()) > 2)
    return tmpfs and os.access(root, os.W_OK | os.X_OK) and stats.f_bavail * stats.f_frsize >= MIN_FREE


def use_for_tmp_path(config: pytest.Config) -> None:
    """Point pytest's temporary root at /dev/shm unless the user chose one (call in the controller's
    ``pytest_configure``, before any ``tmp_path`` is made)."""
    chosen = config.option.basetemp or {"TMPDIR", "PYTEST_DEBUG_TEMPROOT"} & set(os.environ)
    if not chosen and "PYTEST_XDIST_WORKER" not in os.environ and usable():
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(SHM)
