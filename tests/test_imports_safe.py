"""import-slayer and import-engram lose nothing: no file read from outside the folder, no work
overwritten, no memory a sync moved replaced, no bad row a traceback, no id used twice."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.context import DEFAULT_MAX_CONTENT
from slayer_kb.core.errors import ConflictError, InvalidInputError
from slayer_kb.ops.engramimport import import_engram
from slayer_kb.ops.interchange import import_slayer
from testing import counted_apart, git, make_team, traced_git


def slayer_file(memory_id: str, body: str) -> str:
    return f"---\nid: '{memory_id}'\ncreated_at: '2026-01-01T00:00:00Z'\n---\n\n{body}\n"


def test_a_memories_folder_linked_out_of_the_folder_is_refused(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    elsewhere = tmp_path / "sec"
    elsewhere.mkdir()
    (elsewhere / "1.md").write_text(slayer_file("1", "PRIVATE KEY"))
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "memories").symlink_to(elsewhere)
    before = git(catalog_kb.root, "rev-parse", "HEAD")
    with pytest.raises(InvalidInputError) as info:
        import_slayer(catalog_kb, folder)
    assert str(info.value) == (
        f"{folder / 'memories'} is a symlink to {elsewhere}, outside {folder}: slayer-kb imports only the folder's "
        "own files. Replace the link with a copy of the folder, or remove it, then retry.")
    assert git(catalog_kb.root, "rev-parse", "HEAD") == before
    assert not catalog_kb.memory_exists("1")


@pytest.mark.parametrize("staged", [False, True])
def test_an_edit_not_committed_is_never_overwritten(catalog_kb: KnowledgeBase, tmp_path: Path, staged: bool) -> None:
    kb = catalog_kb
    # Memory 1 was imported from SLayer's 1.md (its created_at), whose newer version would replace it.
    (tmp_path / "first" / "memories").mkdir(parents=True)
    (tmp_path / "first" / "memories" / "1.md").write_text(
        slayer_file("1", "The committed text of memory one, long enough to stand alone."))
    assert import_slayer(kb, tmp_path / "first").imported == ["1"]
    path = kb.root / "memories" / "1.yaml"
    edited = path.read_text().replace("The committed text", "My own edit, not committed yet,")
    path.write_text(edited)
    if staged:
        git(kb.root, "add", "memories/1.yaml")
    folder = tmp_path / "s"
    (folder / "memories").mkdir(parents=True)
    (folder / "memories" / "1.md").write_text(slayer_file("1", "The imported text"))
    (folder / "memories" / "2.md").write_text(slayer_file("2", "Another imported memory"))
    before = git(kb.root, "rev-parse", "HEAD")
    with pytest.raises(ConflictError) as info:
        import_slayer(kb, folder)
    with pytest.raises(ConflictError) as saved:
        kb.save_memory("a save to the id", ["orders.amount"], id="1")
    assert str(info.value) == str(saved.value)
    assert "memories/1.yaml has changes that are not committed" in str(info.value)
    assert path.read_text() == edited and not path.with_name("1.yaml.orig").exists()
    assert git(kb.root, "rev-parse", "HEAD") == before and not kb.memory_exists("2")


def test_an_id_a_renumber_moved_is_skipped(catalog_kb: KnowledgeBase, invoke_cli, tmp_path: Path) -> None:
    """This clone's memory 2 became 4 (renumber onto main, whose 2 is a teammate's): importing a
    memory 2 replaced the teammate's, as a save to 2 would; it is skipped, naming the fix."""
    kb = catalog_kb
    main = git(kb.root, "symbolic-ref", "--short", "HEAD").strip()
    assert kb.save_memory("Shared base note", ["orders.amount"]).memory_id == "1"
    git(kb.root, "switch", "-q", "-c", "feature")
    assert kb.save_memory("Feature: status values", ["orders.status"]).memory_id == "2"
    other = kb.root.parent / "main-worktree"
    git(kb.root, "worktree", "add", "-q", str(other), main)
    counted_apart(other)
    assert KnowledgeBase(other).save_memory("Main: refunds, a teammate's", ["orders.refunds"]).memory_id == "2"
    invoke_cli("--kb", kb.root, "renumber", "--onto", main, check=True)
    git(kb.root, "merge", "-q", "--no-edit", main)
    with pytest.raises(ConflictError) as refused:
        kb.get("2")
    folder = tmp_path / "s"
    (folder / "memories").mkdir(parents=True)
    (folder / "memories" / "2.md").write_text(slayer_file("2", "The imported text for two"))
    (folder / "memories" / "9.md").write_text(slayer_file("9", "Another imported memory").replace(
        "created_at", "entities:\n- memory:2\ncreated_at"))  # its link meant the folder's 2, not the teammate's
    result = import_slayer(kb, folder)
    assert result.imported == ["9"] and result.replaced == [] and result.skipped == 1
    assert result.warnings == [
        f"{folder / 'memories' / '2.md'}: {str(refused.value).removesuffix('.')}; skipped.",
        "memory 9: link 'memory:2' dropped: the folder's memory 2 was skipped (its warning says why), and the link "
        "would name the knowledge base's own, unrelated memory 2. Import that memory as its warning says, then import "
        "the folder again to keep the link."]
    assert kb.get("9").entities == []
    assert "renumber --accept 2' first" in result.warnings[0]
    assert "learning: 'Main: refunds, a teammate''s'" in (kb.root / "memories" / "2.yaml").read_text()


def test_a_row_without_a_text_id_is_skipped_naming_the_fix(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "old-slayer"
    (folder / "memories").mkdir(parents=True)
    (folder / "memories" / "5.md").write_text("---\nid: 0x1F\ncreated_at: '2026-01-01T00:00:00Z'\n---\n\nHex id\n")
    rows = ["", "id:\n  ", "id: true\n  ", "id: 010\n  ", "id: '010'\n  "]
    (folder / "memories.yaml").write_text("".join(
        f"- {row}learning: Row {n}\n  created_at: '2026-01-01T00:00:00Z'\n" for n, row in enumerate(rows)))
    listing = folder / "memories.yaml"
    result = import_slayer(catalog_kb, folder)
    assert result.imported == ["010"] and result.skipped == 5, result
    quote = "not text: YAML reads an unquoted id by its form (010 as 8, 0x1F as 31, true as a boolean). Quote the " \
            "id as the file means it (id: '010') to import it. (skipped)"
    assert result.warnings == [
        f"{folder / 'memories' / '5.md'}: the id is a number (31), {quote}",
        f"{listing}[0]: the memory has no id; give it one, quoted (id: '42'), to import it. (skipped)",
        f"{listing}[1]: the memory has no id; give it one, quoted (id: '42'), to import it. (skipped)",
        f"{listing}[2]: the id is a boolean (True), {quote}",
        f"{listing}[3]: the id is a number (8), {quote}",
    ]
    assert catalog_kb.get("010").to_dict()["learning"] == "Row 4"
    assert not any(catalog_kb.memory_exists(i) for i in ("31", "True", "8", "None"))


def test_a_body_over_the_size_limit_is_skipped_as_a_save_refuses_it(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    big = "x" * (DEFAULT_MAX_CONTENT + 1)
    folder = tmp_path / "s"
    (folder / "memories").mkdir(parents=True)
    (folder / "memories" / "1.md").write_text(slayer_file("1", big))
    (folder / "memories" / "2.md").write_text(slayer_file("2", "A memory of a size a save takes"))
    result = import_slayer(catalog_kb, folder)
    assert result.imported == ["2"] and result.skipped == 1
    assert result.warnings == [
        f"{folder / 'memories' / '1.md'}: the learning is {DEFAULT_MAX_CONTENT + 1} bytes; the limit is "
        f"{DEFAULT_MAX_CONTENT} bytes. Split it into several memories or raise the limit with SLAYER_KB_MAX_CONTENT "
        "(bytes). (skipped)"]
    with pytest.raises(InvalidInputError, match=f"is {DEFAULT_MAX_CONTENT + 1} bytes; the limit is"):
        catalog_kb.save_memory(big, ["orders.amount"], id="1")
    assert not catalog_kb.memory_exists("1")


def test_two_files_of_one_id_import_the_first_and_a_reimport_changes_nothing(catalog_kb: KnowledgeBase,
                                                                               tmp_path: Path) -> None:
    folder = tmp_path / "s"
    (folder / "memories").mkdir(parents=True)
    (folder / "memories" / "a.md").write_text(slayer_file("dup", "The first file's text"))
    (folder / "memories" / "b.md").write_text(slayer_file("dup", "The second file's text"))
    (folder / "memories.yaml").write_text("- id: dup\n  learning: The list's text\n  created_at: '2026-01-01T00:00:00Z'\n")
    said = [f"{where}: id 'dup' is also {folder / 'memories' / 'a.md'}'s, which is imported; skipped (give it "
            "another id to import it too)." for where in (folder / "memories" / "b.md", f"{folder / 'memories.yaml'}[0]")]
    result = import_slayer(catalog_kb, folder)
    assert result.imported == ["dup"] and result.skipped == 2 and result.warnings == said
    assert catalog_kb.get("dup").to_dict()["learning"] == "The first file's text"
    head = git(catalog_kb.root, "rev-parse", "HEAD")
    again = import_slayer(catalog_kb, folder)
    assert again.imported == again.replaced == [] and again.unchanged == ["dup"] and again.commit is None
    assert again.warnings == said and git(catalog_kb.root, "rev-parse", "HEAD") == head


def _engram_export(path: Path, *observations: dict[str, object]) -> Path:
    path.write_text(json.dumps({"observations": list(observations)}))
    return path


def test_import_engram_revises_the_memory_holding_a_topic_key(empty_kb: KnowledgeBase, invoke_cli,
                                                              tmp_path: Path) -> None:
    kb = empty_kb
    cache = {"title": "Cache", "content": "Redis for sessions, first take", "type": "architecture", "project": "api",
             "topic_key": "architecture/cache", "created_at": "2026-03-01 10:00:00"}
    assert import_engram(kb, _engram_export(tmp_path / "e.json", cache)).imported == ["1"]
    revised = {**cache, "content": "Redis for sessions and rate limits, revised", "revision_count": 2,
               "updated_at": "2026-03-02 10:00:00"}
    result = import_engram(kb, _engram_export(tmp_path / "e.json", revised))  # Engram exports the row revised
    assert result.imported == [] and result.replaced == ["1"] and result.skipped == 0, result
    memory = kb.get("1").to_dict()
    assert memory["learning"] == "Redis for sessions and rate limits, revised"
    assert memory["created_at"] == "2026-03-01T10:00:00Z" and memory["updated_at"] == "2026-03-02T10:00:00Z"
    assert memory["revision_count"] == 2 and not kb.memory_exists("2")
    # Two observations of one key in one export: the later revises the earlier.
    first = {**cache, "topic_key": "architecture/queue", "title": "Queue", "content": "SQS for the queue, at first"}
    later = {**first, "content": "Kafka for the queue, later on"}
    again = import_engram(kb, _engram_export(tmp_path / "e.json", first, later))
    [queue] = again.imported
    assert again.replaced == [] and kb.memory_ids() == ["1", queue]
    assert kb.get(queue).to_dict()["learning"] == "Kafka for the queue, later on"
    assert kb.get(queue).to_dict()["revision_count"] == 2
    proc = invoke_cli("--kb", kb.root, "validate")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # A re-import of the same export changes nothing: the earlier observation is older than the memory.
    same = import_engram(kb, tmp_path / "e.json")
    assert same.commit is None and same.skipped == 2
    assert same.warnings[0] == (
        f"e.json: observation 1 has topic key 'architecture/queue', which memory {queue} holds in a version of "
        f"{kb.get(queue).to_dict()['updated_at']}, as new as the observation's 2026-03-01T10:00:00Z or newer; skipped.")


def test_import_engram_draws_ids_only_for_what_it_imports(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    kb = empty_kb
    known = [{"title": "Auth", "content": "JWT over sessions for the public API", "type": "decision"},
             {"title": "Cache", "content": "Redis caches the catalog lookups", "type": "architecture"}]
    assert import_engram(kb, _engram_export(tmp_path / "e.json", *known)).imported == ["1", "2"]
    for n in range(3, 8):  # each drew an id for every observation, and its commit spent the unused ones
        new = {"title": f"Note {n}", "content": f"The note numbered {n}, new in this export", "type": "discovery"}
        again = import_engram(kb, _engram_export(tmp_path / "e.json", *known, new))
        assert again.imported == [str(n)] and again.skipped == 2
    assert kb.save_observation("Next", "The next memory saved after the imports").memory_id == "8"


def test_import_engram_never_revises_over_an_edit_not_committed(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    kb = empty_kb
    cache = {"title": "Cache", "content": "Redis for sessions, first take", "type": "architecture",
             "topic_key": "architecture/cache", "created_at": "2026-03-01 10:00:00"}
    assert import_engram(kb, _engram_export(tmp_path / "e.json", cache)).imported == ["1"]
    path = kb.root / "memories" / "1.yaml"
    edited = path.read_text().replace("first take", "my edit, not committed")
    path.write_text(edited)
    revised = {**cache, "content": "Redis for sessions and rate limits", "updated_at": "2026-03-02 10:00:00"}
    before = git(kb.root, "rev-parse", "HEAD")
    with pytest.raises(ConflictError, match="memories/1.yaml has changes that are not committed"):
        import_engram(kb, _engram_export(tmp_path / "e.json", revised))
    assert path.read_text() == edited and git(kb.root, "rev-parse", "HEAD") == before
    assert kb.memory_ids() == ["1"]


def test_import_engram_checks_the_memories_it_revises_at_once(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    """Each memory an export revised was checked for edits not committed with a git status of its
    own, in both passes (12 for 6 revisions): one check for the whole import, as import-slayer's."""
    kb = empty_kb
    notes = [{"title": f"Topic {n}", "content": f"The {n}th topic's first take, written apart from the others",
              "type": "architecture", "topic_key": f"architecture/topic-{n}", "created_at": "2026-03-01 10:00:00"}
             for n in range(1, 7)]
    assert import_engram(kb, _engram_export(tmp_path / "e.json", *notes)).imported == ["1", "2", "3", "4", "5", "6"]
    revised = [{**note, "content": f"{note['content']}, then revised", "updated_at": "2026-03-02 10:00:00"}
               for note in notes]
    new = {"title": "New", "content": "A new memory beside the revisions", "type": "discovery"}
    with traced_git(tmp_path) as runs:
        result = import_engram(kb, _engram_export(tmp_path / "e.json", *revised, new))
    assert (result.replaced, result.imported) == (["1", "2", "3", "4", "5", "6"], ["7"])
    assert len(runs("status")) == 1
    # A hand edit of the last one still refuses the whole import, nothing written.
    path = kb.root / "memories" / "6.yaml"
    path.write_text(path.read_text().replace("then revised", "my edit, not committed"))
    before = git(kb.root, "rev-parse", "HEAD")
    again = [{**note, "updated_at": "2026-03-03 10:00:00"} for note in revised]
    with pytest.raises(ConflictError, match="memories/6.yaml has changes that are not committed"):
        import_engram(kb, _engram_export(tmp_path / "e.json", *again))
    assert git(kb.root, "rev-parse", "HEAD") == before and kb.memory_ids() == [str(n) for n in range(1, 8)]


def _sessions_export(path: Path, summaries: bool, *observations: dict[str, object]) -> Path:
    """An export of ``observations`` and three sessions (``ses-1`` to ``ses-3``), each with a prompt
    and, with ``summaries``, a summary (a change to a session imported without one)."""
    sessions = [{"id": f"ses-{n}", "project": "api", "started_at": "2026-03-01 10:00:00",
                 **({"summary": f"Session {n}, summed up"} if summaries else {})} for n in range(1, 4)]
    prompts = [{"session_id": f"ses-{n}", "content": f"Prompt {n}", "created_at": "2026-03-01 10:01:00"}
               for n in range(1, 4)]
    path.write_text(json.dumps({"observations": list(observations), "sessions": sessions, "prompts": prompts}))
    return path


def test_import_engram_checks_the_sessions_it_changes_at_once_before_drawing_ids(tmp_path: Path) -> None:
    """Each session file an import changed was checked with a git status of its own, after the
    ids of its new memories were drawn: a session edited by hand refused the import with those ids
    spent (a clone's leased ids are never given back), and the next import skipped them. One check
    now, before any id is drawn."""
    _bare, (root,) = make_team(tmp_path, 1)
    kb = KnowledgeBase(root)
    first = {"title": "Auth", "content": "JWT over sessions for the public API", "type": "decision"}
    assert import_engram(kb, _sessions_export(tmp_path / "e.json", False, first)).imported == ["1"]
    new = [{"title": f"Note {n}", "content": f"The note numbered {n}, new in this export", "type": "discovery"}
           for n in (2, 3)]
    path = kb.root / "sessions" / "ses-2.yaml"
    path.write_text(path.read_text().replace("Prompt 2", "Prompt 2, my edit"))
    before = git(kb.root, "rev-parse", "HEAD")
    with traced_git(tmp_path) as runs, pytest.raises(ConflictError) as refused:
        import_engram(kb, _sessions_export(tmp_path / "e.json", True, first, *new))
    assert str(refused.value).startswith("sessions/ses-2.yaml has changes that are not committed")
    assert len(runs("status")) == 1
    assert git(kb.root, "rev-parse", "HEAD") == before and "my edit" in path.read_text()
    git(kb.root, "checkout", "--", "sessions/ses-2.yaml")
    with traced_git(tmp_path) as runs:
        result = import_engram(kb, _sessions_export(tmp_path / "e.json", True, first, *new))
    assert (result.imported, result.sessions, len(runs("status"))) == (["2", "3"], 0, 1)
    assert "summary: Session 3, summed up" in (kb.root / "sessions" / "ses-3.yaml").read_text()
