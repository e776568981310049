"""Engram's mem_save family on the git store: upserts, de-duplication, soft delete, timeline."""

from __future__ import annotations

import json
import re
import shutil
from datetime import timedelta
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import InvalidInputError, NotFoundError
from slayer_kb.mcp.tools import call_tool
from testing import git


def save(kb: KnowledgeBase, title: str = "JWT auth middleware", content: str = "What: JWT", **kw):  # noqa: ANN201
    return kb.save_observation(title=title, content=content, **kw)


def test_new_observation_reply_and_defaults(empty_kb: KnowledgeBase) -> None:
    result = save(empty_kb, type="decision", project="  My-API ")
    assert result.action == "created"
    assert result.message == 'Memory saved: "JWT auth middleware" (decision)\nSuggested topic_key: decision/jwt-auth-middleware'
    data = empty_kb.get(result.memory_id).to_dict()
    assert {k: data[k] for k in ("type", "project", "scope", "session_id", "revision_count", "duplicate_count")} == {
        "type": "decision", "project": "my-api", "scope": "project", "session_id": "manual-save-my-api",
        "revision_count": 1, "duplicate_count": 1,
    }
    assert save(empty_kb, title="Other", content="x").message == 'Memory saved: "Other" (manual)\nSuggested topic_key: topic/other'
    assert empty_kb.get("2").to_dict()["session_id"] == "manual-save"


def test_private_text_is_redacted_before_anything_else(empty_kb: KnowledgeBase) -> None:
    result = save(empty_kb, title="Key <private>sk-123</private>", content="use <PRIVATE>\nhunter2\n</Private> here ")
    data = empty_kb.get(result.memory_id).to_dict()
    assert (data["title"], data["learning"]) == ("Key [REDACTED]", "use [REDACTED] here")
    assert "hunter2" not in git(empty_kb.root, "log", "-p")
    # The key the reply suggests, made from the redacted title, is the one mem_suggest_topic_key
    # gives for the title as written (it was topic/key-redacted against topic/key).
    assert result.message.splitlines()[1] == "Suggested topic_key: topic/key"
    assert empty_kb.suggest_topic_key(None, "Key <private>sk-123</private>", None) == "topic/key"


def test_topic_key_upsert_revises_in_place(empty_kb: KnowledgeBase) -> None:
    first = save(empty_kb, content="v1", topic_key="  Architecture/Auth  Model ", type="architecture")
    assert first.message == 'Memory saved: "JWT auth middleware" (architecture)'
    second = save(empty_kb, title="Auth model v2", content="v2", topic_key="architecture/auth model", type="decision")
    assert (second.action, second.memory_id) == ("revised", first.memory_id)
    data = empty_kb.get(first.memory_id).to_dict()
    assert (data["topic_key"], data["learning"], data["title"], data["type"], data["revision_count"]) == (
        "architecture/auth-model", "v2", "Auth model v2", "decision", 2
    )
    assert data["updated_at"] is not None
    diff = git(empty_kb.root, "show", "--format=%s", "HEAD")
    assert diff.startswith(f"memory: revise {first.memory_id} (topic architecture/auth-model)")
    assert "\n-learning: v1\n" in diff and "\n+learning: v2\n" in diff
    # A different project or scope makes a separate memory.
    assert save(empty_kb, content="v3", topic_key="architecture/auth-model", project="other").action == "created"
    assert save(empty_kb, content="v4", topic_key="architecture/auth-model", scope="personal").action == "created"
    assert len(empty_kb.memory_ids()) == 3


def test_duplicates_within_window_count_without_commits(empty_kb: KnowledgeBase) -> None:
    first = save(empty_kb, content="Same   content")
    commits_before = git(empty_kb.root, "rev-list", "--count", "HEAD")
    for _ in range(99):
        result = save(empty_kb, content="same content")
        assert (result.action, result.memory_id) == ("duplicate", first.memory_id)
    assert empty_kb.get(first.memory_id).to_dict()["duplicate_count"] == 100
    assert git(empty_kb.root, "rev-list", "--count", "HEAD") == commits_before
    assert len(empty_kb.memory_ids()) == 1
    # The count is folded into the memory's next real change.
    empty_kb.update(first.memory_id, title="Renamed")
    assert "duplicate_count: 100\n" in (empty_kb.root / f"memories/{first.memory_id}.yaml").read_text()
    assert empty_kb.get(first.memory_id).to_dict()["duplicate_count"] == 100


def test_duplicate_counts_outlive_the_derived_state(empty_kb: KnowledgeBase) -> None:
    """Pending counts lived only in .slayer-kb/duplicates.json: deleting the derived state (which
    the docs allow at any time) or setting it aside reset every count the tool had reported."""
    root = empty_kb.root
    first = save(empty_kb)
    for _ in range(2):
        assert save(empty_kb).action == "duplicate"
    assert empty_kb.get(first.memory_id).duplicate_count == 3
    shutil.rmtree(root / ".slayer-kb")
    kb = KnowledgeBase(root)
    assert kb.get(first.memory_id).duplicate_count == 3
    kb.update(first.memory_id, title="Renamed")  # folded into the next real change
    assert "duplicate_count: 3\n" in (root / f"memories/{first.memory_id}.yaml").read_text()
    assert json.loads((root / ".git" / "slayer-kb-duplicates.json").read_text())["kbs"] == {"": {}}


def test_counts_an_older_version_kept_in_the_state_folder_are_moved_once(empty_kb: KnowledgeBase) -> None:
    root = empty_kb.root
    first = save(empty_kb)
    (root / ".slayer-kb" / "duplicates.json").write_text(json.dumps({first.memory_id: 2}))
    kb = KnowledgeBase(root)
    assert kb.get(first.memory_id).duplicate_count == 3
    assert save(kb).action == "duplicate"
    assert not (root / ".slayer-kb" / "duplicates.json").exists()
    assert kb.get(first.memory_id).duplicate_count == 4
    shutil.rmtree(root / ".slayer-kb")
    assert KnowledgeBase(root).get(first.memory_id).duplicate_count == 4


def test_a_worktree_and_a_copy_of_the_clone_keep_their_own_counts(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    """Each worktree keeps its counts past its derived state, apart (a count goes with the branch
    that folds it in); a copy of the clone (cp -r) has none of the original's, which goes on
    folding them into its commits."""
    root, side_root = empty_kb.root, tmp_path / "side"
    first = save(empty_kb)
    assert save(empty_kb).action == "duplicate"
    git(root, "worktree", "add", "-q", "-b", "side", str(side_root))
    side = KnowledgeBase(side_root)
    assert side.get(first.memory_id).duplicate_count == 1
    for _ in range(2):
        assert save(side).action == "duplicate"
    shutil.rmtree(side_root / ".slayer-kb")
    shutil.rmtree(root / ".slayer-kb")
    assert [KnowledgeBase(r).get(first.memory_id).duplicate_count for r in (side_root, root)] == [3, 2]
    git(root, "worktree", "remove", "--force", str(side_root))
    shutil.copytree(root, tmp_path / "copy", symlinks=True)
    assert KnowledgeBase(tmp_path / "copy").get(first.memory_id).duplicate_count == 1
    assert KnowledgeBase(root).get(first.memory_id).duplicate_count == 2


@pytest.mark.parametrize(
    "change",
    [{"type": "bugfix"}, {"project": "elsewhere"}, {"scope": "personal"}, {"title": "Another title"}],
)
def test_duplicate_needs_same_type_project_scope_title(empty_kb: KnowledgeBase, change: dict) -> None:
    save(empty_kb)
    args = {"title": "JWT auth middleware", "content": "What: JWT", **change}
    assert empty_kb.save_observation(**args).action == "created"


def test_dedup_window_edge(empty_kb: KnowledgeBase) -> None:
    first = save(empty_kb)
    path = empty_kb.root / f"memories/{first.memory_id}.yaml"
    text = path.read_text()
    created = re.search(r"created_at: '(.*)'", text).group(1)
    from slayer_kb.core.memory import parse_time

    old = (parse_time(created) - timedelta(minutes=15, seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path.write_text(text.replace(created, old))
    assert save(empty_kb).action == "created"
    narrow = KnowledgeBase(empty_kb.root, dedup_window=timedelta(minutes=30))
    assert save(narrow).action == "duplicate"


def test_content_limit(empty_kb: KnowledgeBase) -> None:
    with pytest.raises(InvalidInputError, match=r"content is 65537 bytes; the limit is 65536 bytes"):
        save(empty_kb, content="x" * 65537)
    big = "word " * 13000
    result = save(empty_kb, content=big.strip())
    assert empty_kb.get(result.memory_id).to_dict()["learning"] == big.strip()


def test_update_partial_and_errors(empty_kb: KnowledgeBase) -> None:
    mid = save(empty_kb, project="api").memory_id
    data = empty_kb.update(mid, type="bugfix").memory
    assert (data["type"], data["title"], data["project"]) == ("bugfix", "JWT auth middleware", "api")
    with pytest.raises(InvalidInputError, match="Nothing to update: give at least one of "):
        empty_kb.update(mid)
    with pytest.raises(NotFoundError, match=r"No memory with id '99'\."):
        empty_kb.update("99", title="x")
    empty_kb.forget(mid, soft=True)
    with pytest.raises(NotFoundError, match=f"Memory '{mid}' was deleted at"):
        empty_kb.update(mid, title="x")


def test_soft_delete_hides_from_every_read_and_hard_delete_removes(empty_kb: KnowledgeBase) -> None:
    a = save(empty_kb, title="Alpha note", content="alpha").memory_id
    b = save(empty_kb, title="Beta note", content="beta").memory_id
    empty_kb.forget(a, soft=True)
    assert (empty_kb.root / f"memories/{a}.yaml").exists()
    assert "deleted_at: '" in (empty_kb.root / f"memories/{a}.yaml").read_text()
    assert empty_kb.search("alpha").memories == []
    assert [h["id"] for h in empty_kb.newest()] == [b]
    assert empty_kb.stats()["memories"] == 1
    assert "Alpha" not in empty_kb.context()
    empty_kb.forget(b)
    assert not (empty_kb.root / f"memories/{b}.yaml").exists()


def test_timeline_neighbours_in_session_oldest_first(empty_kb: KnowledgeBase) -> None:
    ids = [save(empty_kb, title=f"Step {n}", content=f"step {n}", session_id="s1").memory_id for n in range(6)]
    save(empty_kb, title="Elsewhere", content="other session", session_id="s2")
    data = empty_kb.timeline(ids[3], before=2, after=1)
    assert [h["id"] for h in data["before"]] == ids[1:3]
    assert data["focus"]["id"] == ids[3]
    assert [h["id"] for h in data["after"]] == [ids[4]]


def test_session_summary_stats_and_context(empty_kb: KnowledgeBase) -> None:
    save(empty_kb, type="decision", project="analytics")
    result = empty_kb.session_summary("Did things", project="analytics")
    assert result.message == 'Session summary saved for project "analytics"'
    stats = empty_kb.stats()
    assert stats == {
        "memories": 2, "sessions": 1, "prompts": 0, "projects": ["analytics"],
        "types": {"decision": 1, "session_summary": 1}, "untyped": 0,
        "search_by_meaning": "on (wordllama-l2_supercat_256-mean-v2)",
    }
    text = empty_kb.context(project="analytics")
    assert re.match(r"# Memory context: analytics\n\n## Recent sessions\n- manual-save-analytics \(analytics, "
                    r"\S+Z to now \(open\)\): 2 memories, 0 prompts\n", text)
    assert "Session summary: analytics (session_summary)" in text
    assert len(empty_kb.context(budget=120)) <= 130


def test_close_project_name_warns(empty_kb: KnowledgeBase) -> None:
    save(empty_kb, project="analytics")
    result = save(empty_kb, title="x", content="y", project="Analytic")
    assert result.warnings == [
        "New project 'analytic' looks like existing 'analytics'; if you meant one of those, use that project name instead."
    ]


def test_observation_may_carry_entities_and_slayer_memory_a_title(catalog_kb: KnowledgeBase) -> None:
    obs = catalog_kb.save_observation(title="Refund rows", content="negative rows", entities=["orders.amount"])
    assert catalog_kb.get(obs.memory_id).to_dict()["entities"] == ["shop.orders.amount"]
    mem = catalog_kb.save_memory("plain", ["orders"], title="Titled", type="pattern")
    hits = catalog_kb.search(entities=["orders.amount"]).memories + catalog_kb.search("Titled").memories
    assert [h["id"] for h in hits] == [obs.memory_id, mem.memory_id]
    assert hits[1]["title"] == "Titled"


def test_mem_search_semantics(empty_kb: KnowledgeBase) -> None:
    save(empty_kb, title="FTS5 sanitization", content="wrap each term in quotes", topic_key="bug/fts5")
    save(empty_kb, title="Auth", content="JWT over sessions")
    assert [h["id"] for h in empty_kb.search("quotes term").memories] == ["1"]
    assert [h["id"] for h in empty_kb.search('"quotes" AND (term* OR x:y) NOT -') .memories] == ["1"]
    assert empty_kb.search("quotes JWT").notes[-1] == (
        "No memory has all the words of the question; showing memories with some of them or close in meaning."
    )
    assert [h["id"] for h in empty_kb.search("quotes JWT").memories] in (["1", "2"], ["2", "1"])
    assert [h["id"] for h in empty_kb.search("bug/fts5").memories][0] == "1"


def test_mem_search_carries_the_notes_of_its_merged_list(catalog_kb: KnowledgeBase) -> None:
    """mem_search merges the two buckets, so its structured content says how the answer was made
    as ``search`` does: no hit holding every word, how much of the KB meaning covers."""
    save(catalog_kb, title="FTS5 sanitization", content="wrap each term in quotes")
    save(catalog_kb, title="Auth", content="JWT over sessions")
    catalog_kb.save_memory("Paid orders total JWT", {"source_model": "orders", "measures": ["sum(amount)"]})
    fell_back = call_tool(catalog_kb, "mem_search", {"query": "quotes JWT"}).data
    assert fell_back is not None and {h["id"] for h in fell_back["results"]} == {"1", "2", "3"}
    assert fell_back["notes"] == [
        "No memory has all the words of the question; showing memories with some of them or close in meaning."
    ]
    # The example query holds both words: the merged list has a hit with every word.
    both = call_tool(catalog_kb, "mem_search", {"query": "total JWT"}).data
    assert both is not None and both["results"][0]["id"] == "3" and both["notes"] == []
    assert call_tool(catalog_kb, "mem_search", {"query": "quotes term"}).data["notes"] == []  # type: ignore[index]


def test_every_tool_through_the_cli(tmp_path: Path, invoke_cli) -> None:  # noqa: ANN001
    root = tmp_path / "kb"
    assert invoke_cli("init", root).returncode == 0
    proc = invoke_cli("--kb", root, "save", "-", "--title", "Chose JWT", "--type", "decision", input="JWT over sessions")
    assert proc.stdout == 'Memory saved: "Chose JWT" (decision)\nSuggested topic_key: decision/chose-jwt\n(memory 1)\n'
    proc = invoke_cli("--kb", root, "suggest-topic-key", "--type", "architecture", "--title", "  Auth Model  ", "--json")
    assert proc.stdout.strip() == '{\n  "topic_key": "architecture/auth-model"\n}'


def test_save_memory_normalises_project_and_topic_key_in_the_core(catalog_kb: KnowledgeBase) -> None:
    """The library applies the rules itself, not only the CLI: one project, one upsert key."""
    saved = catalog_kb.save_memory("JWT over sessions", ["orders"], project="  My-API ", topic_key="Arch/Auth  Model")
    memory = catalog_kb.read(saved.memory_id)
    assert (memory.project, memory.topic_key) == ("my-api", "arch/auth-model")
    text = (catalog_kb.root / "memories" / f"{saved.memory_id}.yaml").read_text(encoding="utf-8")
    assert "project: my-api\n" in text and "topic_key: arch/auth-model\n" in text


def test_mem_context_of_a_project_no_memory_has_warns_beside_a_skipped_session_file(
        empty_kb: KnowledgeBase) -> None:
    """The empty digest followed by a skipped file's line went down the stats branch, and the
    misspelt project was not named, where the CLI's context named it."""
    save(empty_kb, project="analytics")
    (empty_kb.root / "sessions").mkdir(exist_ok=True)
    (empty_kb.root / "sessions" / "ses-broken.yaml").write_text("started_at: [\n")
    reply = call_tool(empty_kb, "mem_context", {"project": "analytcs"})
    said = "No memory has project 'analytcs'; check the name, or call mem_context without it."
    assert reply.data is not None and reply.data["warnings"] == [said]
    assert reply.text.endswith(f"\nwarning: {said}")


def test_every_text_a_save_or_update_takes_in_is_redacted(catalog_kb: KnowledgeBase, invoke_cli) -> None:  # noqa: ANN001
    """A description kept its private spans on save and update, and a save with no title (SLayer's
    kind) kept them in its learning, while update --learning redacted them: each went into git's
    history for good. Every text is redacted alike, titled or not."""
    root = catalog_kb.root
    invoke_cli("--kb", root, "save", "db notes <private>pw=hunter1</private>", "--id", "db", "-e", "shop.orders",
               "--description", "read-only role <private>pw=hunter2</private>", check=True)
    assert (root / "memories" / "db.yaml").read_text().startswith(
        "learning: db notes [REDACTED]\ndescription: read-only role [REDACTED]\nentities:\n- shop.orders\n")
    invoke_cli("--kb", root, "update", "db", "--description", "role <private>pw=hunter3</private> ro", check=True)
    assert "description: role [REDACTED] ro\n" in (root / "memories" / "db.yaml").read_text()
    titled = ("save", "x", "--title", "T", "--description", "d <private>hunter4</private>")
    invoke_cli("--kb", root, *titled, check=True)
    assert "hunter" not in git(root, "log", "-p")
