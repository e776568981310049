"""The KBs the tests start from (testing/repos.py): copies of repositories made once a process."""

from __future__ import annotations

from pathlib import Path

from slayer_kb import KnowledgeBase
from testing import fsck, git, make_empty_kb, make_indexed_example_kb


def test_a_copied_kb_is_a_sound_repository_of_few_files(tmp_path: Path) -> None:
    # Every file a test's KB holds is made at its setup and removed at its teardown, and a file
    # made costs the kernel 0.1-0.4 ms on the shared machine: the objects are packed, as a clone
    # has them, and the inert hook samples git init writes are left out.
    example, empty = make_indexed_example_kb(tmp_path / "example"), make_empty_kb(tmp_path / "empty")
    for root in (example, empty):
        objects = dict(line.split(": ") for line in git(root, "count-objects", "-v").splitlines())
        assert (objects["count"], objects["packs"]) == ("0", "1"), objects
        assert list((root / ".git" / "hooks").iterdir()) == []
        assert fsck(root).returncode == 0
    assert sum(1 for _ in example.rglob("*")) < 120  # 247 with the objects loose and the samples
    assert KnowledgeBase(example).get("1").to_dict()["id"] == "1"
