"""A memory written by hand and never committed: update, forget and rename refused and advised
--force, which set the file aside as <file>.orig and then failed ("No memory with id 'hand'"),
the memory gone from the KB. They refuse, --force too, with the fix that works (commit it
first), leaving the file and HEAD as they were; once it is committed, they go through."""

from __future__ import annotations

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, commit_all, git

HAND = "learning: written by hand\ncreated_at: '2026-10-01T09:14:22Z'\n"


@pytest.mark.parametrize(("verb", "args"), [
    ("update", ("update", "hand", "--title", "T")),
    ("forget", ("forget", "hand")),
    ("rename", ("rename", "hand", "kept")),
])
def test_a_never_committed_memory_is_refused_force_or_not(empty_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                           verb: str, args: tuple[str, ...]) -> None:
    root = empty_kb.root
    (root / "memories" / "hand.yaml").write_text(HAND)
    before = git(root, "rev-parse", "HEAD")
    for given in ((*args, "--force"), args):
        proc = invoke_cli("--kb", root, *given)
        assert (proc.returncode, proc.stdout) == (1, ""), given
        # The file left as it was, never set aside as hand.yaml.orig.
        assert sorted(p.name for p in (root / "memories").iterdir()) == [".gitkeep", "hand.yaml"], given
        assert proc.stderr == (
            f"Error: memories/hand.yaml was never committed (HEAD lacks it): {verb} commits a change to a memory "
            "HEAD has, and slayer-kb never commits work you have not committed (--force would set your file "
            f"aside), so nothing was done. Commit it first (cd {root}; git add -- memories/hand.yaml; "
            "git commit), then retry.\n"), given
        assert (root / "memories" / "hand.yaml").read_text() == HAND
        assert git(root, "rev-parse", "HEAD") == before
    commit_all(root, "by hand")
    invoke_cli("--kb", root, *args, check=True)
    assert git(root, "log", "-1", "--format=%s").startswith(f"memory: {verb} hand")
