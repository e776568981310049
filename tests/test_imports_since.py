"""Imports keep what the team did since: a session id one letter case apart skips that session,
not the import; a link to a memory the import skipped never comes to name the KB's own memory of
that id; importing an older SLayer folder again brings back nothing the KB forgot and reverts
no edit; an Engram observation deleted there since is said as such, not as a duplicate."""

from __future__ import annotations

import json
from pathlib import Path

from slayer_kb import KnowledgeBase
from testing import git, traced_git


def _export(path: Path, **parts: list[dict[str, object]]) -> Path:
    path.write_text(json.dumps(parts))
    return path


def _slayer(folder: Path, memory_id: str, body: str, entities: tuple[str, ...] = (), more: str = "") -> None:
    (folder / "memories").mkdir(parents=True, exist_ok=True)
    listed = "".join(f"\n- {entity}" for entity in entities)
    front = (f"id: '{memory_id}'\n" + (f"entities:{listed}\n" if entities else "")
             + f"created_at: '2026-01-01T00:00:00Z'\n{more}")
    (folder / "memories" / f"{memory_id}.md").write_text(f"---\n{front}---\n\n{body}\n")


def test_a_session_id_one_letter_case_apart_skips_that_session_not_the_import(empty_kb: KnowledgeBase, invoke_cli,
                                                                               tmp_path: Path) -> None:
    kb = empty_kb
    invoke_cli("--kb", kb.root, "session-start", "S1", "--project", "api", check=True)
    export = _export(
        tmp_path / "e.json",
        sessions=[{"id": "s1", "project": "api", "started_at": "2026-01-01 10:00:00"},
                  {"id": "s2", "project": "api", "started_at": "2026-01-01 10:00:00"},
                  {"id": "S2", "project": "api", "started_at": "2026-01-01 11:00:00"}],
        prompts=[{"session_id": "s1", "content": "A prompt of the lower-case session", "created_at": "2026-01-01 10:05:00"}],
        observations=[{"title": "Queue", "content": "Kafka carries the order events to the warehouse", "session_id": "s1",
                       "created_at": "2026-01-01 10:10:00"}])
    before = git(kb.root, "rev-parse", "HEAD").strip()
    proc = invoke_cli("--kb", kb.root, "import-engram", export, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reply = json.loads(proc.stdout)
    fix = ("that session and its prompts were skipped. To import them, give the session another id in the export "
           "(or '{0}' to add them to that session), in its prompts too, and import again.")
    assert reply["warnings"] == [
        "e.json: session 1: session id 's1' differs only in letter case from the session 'S1', and their files would "
        "collide on macOS and Windows checkouts; " + fix.format("S1"),
        "e.json: session 3: session id 'S2' differs only in letter case from the session 's2', and their files would "
        "collide on macOS and Windows checkouts; " + fix.format("s2")]
    assert reply["imported"] == ["1"] and reply["sessions"] == 1 and reply["prompts"] == 0
    assert sorted(p.name for p in (kb.root / "sessions").iterdir()) == ["S1.yaml", "s2.yaml"]
    assert "A prompt" not in (kb.root / "sessions" / "S1.yaml").read_text()
    assert git(kb.root, "rev-list", "--count", f"{before}..HEAD").strip() == "1"
    assert invoke_cli("--kb", kb.root, "validate").returncode == 0


def test_a_link_to_a_memory_the_import_skipped_is_dropped_saying_so(catalog_kb: KnowledgeBase, invoke_cli,
                                                                   tmp_path: Path) -> None:
    kb = catalog_kb
    kb.save_memory("The knowledge base's own memory five, about the refunds table and its fees.", ["orders.amount"],
                   id="5")
    folder = tmp_path / "s"
    (folder / "memories").mkdir(parents=True)
    (folder / "memories" / "5.md").write_text("---\nid: '5'\nbroken: [\n---\n\nThe folder's memory five.\n")
    _slayer(folder, "100", "Memory one hundred, which builds on the folder's memory five and 101.", ("memory:5", "memory:101"))
    _slayer(folder, "101", "Memory one hundred and one: revenue counts paid orders only, net of fees.")
    proc = invoke_cli("--kb", kb.root, "import-slayer", folder, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    reply = json.loads(proc.stdout)
    assert reply["imported"] == ["100", "101"] and reply["skipped"] == 1
    assert reply["warnings"][1:] == [
        "memory 100: link 'memory:5' dropped: the folder's memory 5 was skipped (its warning says why), and the link "
        "would name the knowledge base's own, unrelated memory 5. Import that memory as its warning says, then import "
        "the folder again to keep the link."]
    assert kb.get("100").entities == ["memory:101"]
    # Its file fixed, the folder imported again: the link comes back, to the folder's memory.
    (folder / "memories" / "5.md").unlink()
    _slayer(folder, "50", "The folder's memory five, now under an id of its own.")
    _slayer(folder, "100", "Memory one hundred, which builds on the folder's memory five and 101.", ("memory:50", "memory:101"))
    again = json.loads(invoke_cli("--kb", kb.root, "import-slayer", folder, "--json", check=True).stdout)
    assert again["imported"] == ["50"] and again["replaced"] == ["100"] and again["warnings"] == []
    assert kb.get("100").entities == ["memory:50", "memory:101"]


def test_importing_an_older_folder_again_undoes_no_forget_and_no_edit(catalog_kb: KnowledgeBase, invoke_cli,
                                                                     tmp_path: Path) -> None:
    kb = catalog_kb
    folder = tmp_path / "s"
    _slayer(folder, "101", "Memory one hundred and one: revenue counts paid orders only, net of fees.")
    # Dated as SLayer's files are: the KB's later edit of it is still "changed since that import".
    _slayer(folder, "102", "Memory one hundred and two: the warehouse refreshes every night at two.", ("orders.amount",),
            "updated_at: '2026-01-02T00:00:00Z'\n")
    _slayer(folder, "103", "Memory one hundred and three: a refund is booked on the day the money goes back.")
    first = json.loads(invoke_cli("--kb", kb.root, "import-slayer", folder, "--json", check=True).stdout)
    assert first["imported"] == ["101", "102", "103"]
    imported = first["commit"][:12]
    invoke_cli("--kb", kb.root, "forget", "101", check=True)
    edit = "Edited in the knowledge base: the warehouse refreshes at noon, since the move to the new cluster."
    invoke_cli("--kb", kb.root, "update", "102", "--learning", edit, check=True)
    _slayer(folder, "103", "Memory one hundred and three, revised in SLayer: a refund is booked when it is approved.")
    head = git(kb.root, "rev-parse", "HEAD").strip()
    with traced_git(tmp_path) as runs:
        proc = invoke_cli("--kb", kb.root, "import-slayer", folder, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The ids renames moved, and what the KB did since the imports: one git log each for the folder.
    assert [run.split(" ", 2)[1] for run in runs("log")] == ["'--format=%B'", "-z"]
    reply = json.loads(proc.stdout)
    said = ("{0}: memory {1} was imported from SLayer storage by commit {2} and {3} in the knowledge base since; "
            "skipped, so the import does not undo that. To take the folder's version anyway, run 'slayer-kb --kb {4} "
            "restore {1} --rev {2}' (the version that import wrote), then import again.")
    assert reply["warnings"] == [said.format(folder / "memories" / "101.md", "101", imported, "forgotten", kb.root),
                                 said.format(folder / "memories" / "102.md", "102", imported, "changed", kb.root)]
    assert reply["replaced"] == ["103"] and reply["skipped"] == 2  # what the KB left as imported takes the update
    assert not kb.memory_exists("101") and kb.get("102").learning == edit
    assert git(kb.root, "diff", "--name-only", head, "HEAD").split() == ["memories/103.yaml"]
    # The advice taken: the import's version restored, the folder's is taken again.
    invoke_cli("--kb", kb.root, "restore", "101", "--rev", imported, check=True)
    _slayer(folder, "101", "Memory one hundred and one, as SLayer has it now: revenue counts paid orders, net of fees.")
    taken = json.loads(invoke_cli("--kb", kb.root, "import-slayer", folder, "--json", check=True).stdout)
    assert taken["replaced"] == ["101"] and kb.get("101").learning.startswith("Memory one hundred and one, as SLayer")
    # SLayer given the KB's edit (its link spelt short, as SLayer takes it): the same memory, no warning.
    _slayer(folder, "102", edit, ("orders.amount",), f"updated_at: '{kb.get('102').updated_at}'\n")
    same = json.loads(invoke_cli("--kb", kb.root, "import-slayer", folder, "--json", check=True).stdout)
    assert same["unchanged"] == ["101", "102", "103"] and same["warnings"] == [] and same["commit"] is None


def test_an_observation_deleted_in_engram_since_is_no_duplicate(empty_kb: KnowledgeBase, invoke_cli,
                                                                tmp_path: Path) -> None:
    kb = empty_kb
    observation = {"title": "Close", "content": "Finance closes the books on the third working day",
                   "created_at": "2026-01-01 10:00:00"}
    invoke_cli("--kb", kb.root, "import-engram", _export(tmp_path / "e.json", observations=[observation]), check=True)
    deleted = _export(tmp_path / "e.json", observations=[{**observation, "deleted_at": "2026-01-02 09:00:00"}])
    head = git(kb.root, "rev-parse", "HEAD").strip()
    reply = json.loads(invoke_cli("--kb", kb.root, "import-engram", deleted, "--json", check=True).stdout)
    assert reply["warnings"] == [
        "e.json: observation 1 was deleted in Engram (deleted_at 2026-01-02T09:00:00Z); memory 1 holds its content, "
        "title, type, project and scope and is live here, and was left as it is; skipped. To forget it here too, run "
        f"'slayer-kb --kb {kb.root} forget 1 --soft'."]
    assert reply["skipped"] == 1 and git(kb.root, "rev-parse", "HEAD").strip() == head and not kb.get("1").is_deleted
    # Forgotten here too, as advised: the same export is then a duplicate, said as one.
    invoke_cli("--kb", kb.root, "forget", "1", "--soft", check=True)
    again = json.loads(invoke_cli("--kb", kb.root, "import-engram", deleted, "--json", check=True).stdout)
    assert again["warnings"] == ["e.json: observation 1 is a duplicate of memory 1: the same content, title, type, "
                                 "project and scope; skipped."]


def test_a_folder_s_memory_older_than_the_kb_s_update_of_its_id_is_skipped(catalog_kb: KnowledgeBase, invoke_cli,
                                                                             tmp_path: Path) -> None:
    kb = catalog_kb
    kb.save_memory("The knowledge base's memory seven: orders are counted when paid.", ["orders.amount"], id="7")
    edit = "The knowledge base's memory seven, updated here: orders are counted when shipped."
    invoke_cli("--kb", kb.root, "update", "7", "--learning", edit, check=True)
    ours = kb.get("7").updated_at
    folder = tmp_path / "s"
    _slayer(folder, "7", "The folder's memory seven, as SLayer had it before the update.",
            more="updated_at: '2026-01-02T00:00:00Z'\n")
    # The folder's link to its 7 would name the KB's own 7, which no import wrote: dropped.
    _slayer(folder, "100", "The folder's memory one hundred, about its memory seven.", ("memory:7",))
    reply = json.loads(invoke_cli("--kb", kb.root, "import-slayer", folder, "--json", check=True).stdout)
    assert reply["warnings"] == [
        f"{folder / 'memories' / '7.md'}: memory 7 was updated in the knowledge base at {ours}, after the folder's "
        f"version (2026-01-02T00:00:00Z); skipped, so the import does not undo that. To take the folder's text anyway, "
        f"put it in with 'slayer-kb --kb {kb.root} edit 7'.",
        "memory 100: link 'memory:7' dropped: the folder's memory 7 was skipped (its warning says why), and the link "
        "would name the knowledge base's own, unrelated memory 7. Import that memory as its warning says, then import "
        "the folder again to keep the link."]
    assert reply["skipped"] == 1 and kb.get("7").learning == edit
    assert reply["imported"] == ["100"] and kb.get("100").entities == []
