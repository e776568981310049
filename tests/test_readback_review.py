"""What reviewers read back: ``review`` of a branch that breaks, wipes or repairs memory files, or
given its two revisions the wrong way round; ``edit`` of a broken file closed as it was, and of an
id in another letter case; ``update`` of a memory holding a time no calendar has."""

from __future__ import annotations

import pytest

from slayer_kb import KnowledgeBase
from testing import commit_all, git, json_of, unlike


def _three(kb: KnowledgeBase) -> None:
    for tag in ("amount", "status", "qty"):
        kb.save_memory(unlike(tag), ["orders.amount"])


def _label(tag: str) -> str:
    return " ".join(f"{tag}{n}word" for n in range(40))[:98].rsplit(" ", 1)[0] + " \u2026"


def test_review_lists_memory_files_a_branch_breaks(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """Two new files that do not read as memories and memory 3 overwritten with broken YAML read
    "No memory changed.", the files named only under Problems: a pull request that wipes a memory
    looked like one that changed none."""
    kb = catalog_kb
    _three(kb)
    git(kb.root, "switch", "-q", "-c", "feature")
    memories = kb.root / "memories"
    (memories / "kb.broken.yaml").write_text('learning: "unterminated\n')
    (memories / "kb.types.yaml").write_text("learning: 12\nentities: shop\n")
    (memories / "3.yaml").write_text("learning: [oops\n")
    commit_all(kb.root, "break memories by hand")
    proc = invoke_cli("--kb", kb.root, "review", "master", check=True)
    assert proc.stdout == (
        "## Knowledge base changes (master...HEAD)\n\n"
        "Memories: 2 added, 1 changed, 0 re-linked, 0 removed.\n\n"
        "### Added\n\n"
        "- **kb.broken**: does not read as a memory; see Problems\n"
        "- **kb.types**: does not read as a memory; see Problems\n\n"
        "### Changed\n\n"
        f"- **3**: {_label('qty')} (no longer reads as a memory; see Problems)\n\n"
        "### Problems\n\n"
        "- memories/3.yaml:2: invalid YAML: did not find expected ',' or '\\]'\n"
        "- memories/kb.broken.yaml:2: invalid YAML: found unexpected end of stream\n"
        "- memories/kb.types.yaml:1: missing required key 'created_at' (add created_at: 'YYYY-MM-DDTHH:MM:SSZ')\n"
        "- memories/kb.types.yaml:1: 'learning' must be a string, not a number\n"
        "- memories/kb.types.yaml:2: 'entities' must be a list, not a string\n"
    )
    data = json_of(invoke_cli("--kb", kb.root, "review", "master", "--json", check=True))
    assert data["added"] == [
        {"id": memory_id, "label": "", "entities": [], "note": "does not read as a memory; see Problems",
         "unreadable": "head"} for memory_id in ("kb.broken", "kb.types")]
    assert data["changed"] == [{"id": "3", "label": _label("qty"), "fields": [], "entities_added": [],
                                "entities_removed": [], "learning_diff": None,
                                "note": "no longer reads as a memory; see Problems", "unreadable": "head"}]
    assert data["removed"] == [] and data["relinked"] == [] and data["warnings"] == []


def test_review_lists_a_broken_memory_the_branch_repairs_or_removes(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """The reverse: memories broken where the branch left master, which the branch repairs,
    removes, or changes and leaves broken, were not listed either."""
    kb = catalog_kb
    _three(kb)
    memories = kb.root / "memories"
    good = (memories / "3.yaml").read_text()
    for memory_id in ("1", "2", "3"):
        (memories / f"{memory_id}.yaml").write_text(f"learning: [broken {memory_id}\n")
    commit_all(kb.root, "break three on master")
    git(kb.root, "switch", "-q", "-c", "feature")
    (memories / "3.yaml").write_text(good)
    (memories / "2.yaml").unlink()
    (memories / "1.yaml").write_text("learning: [still broken\n")
    commit_all(kb.root, "repair 3, remove 2, change 1")
    proc = invoke_cli("--kb", kb.root, "review", "master", check=True)
    assert proc.stdout == (
        "## Knowledge base changes (master...HEAD)\n\n"
        "Memories: 0 added, 2 changed, 0 re-linked, 1 removed.\n\n"
        "### Changed\n\n"
        "- **1**: does not read as a memory, nor did it at the merge base; see Problems\n"
        f"- **3**: {_label('qty')} (did not read as a memory at the merge base; this branch repairs it)\n\n"
        "### Removed\n\n"
        "- **2**: did not read as a memory at the merge base\n\n"
        "### Problems\n\n"
        "- memories/1.yaml:2: invalid YAML: did not find expected ',' or '\\]'\n"
    )
    data = json_of(invoke_cli("--kb", kb.root, "review", "master", "--json", check=True))
    assert [(c["id"], c["unreadable"]) for c in data["changed"]] == [("1", "both"), ("3", "base")]
    assert data["removed"] == [{"id": "2", "label": "", "entities": [],
                                "note": "did not read as a memory at the merge base", "unreadable": "base"}]


def test_review_with_head_behind_base_says_the_two_are_swapped(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """``review HEAD HEAD~3`` said "No memory changed.": HEAD~3 is an ancestor of HEAD, so it has
    nothing of its own, and the mistake went unsaid."""
    kb = catalog_kb
    _three(kb)
    said = ("'HEAD~3' is an ancestor of 'HEAD', so it has no change of its own since it left it; if you meant what "
            "'HEAD' changed since, the two are swapped (BASE first, then HEAD): run "
            f"'slayer-kb --kb {kb.root} review 'HEAD~3' HEAD'.")
    proc = invoke_cli("--kb", kb.root, "review", "HEAD", "HEAD~3", check=True)
    assert proc.stdout == (
        "## Knowledge base changes (HEAD...HEAD~3)\n\nNo memory changed.\n\n### Warnings\n\n"
        f"- {said}\n")
    data = json_of(invoke_cli("--kb", kb.root, "review", "HEAD", "HEAD~3", "--json", check=True))
    assert data["warnings"] == [said] and data["added"] == []
    # The right way round: three added, no warning; one revision with itself is no mistake either.
    data = json_of(invoke_cli("--kb", kb.root, "review", "HEAD~3", "HEAD", "--json", check=True))
    assert [c["id"] for c in data["added"]] == ["1", "2", "3"] and data["warnings"] == []
    assert json_of(invoke_cli("--kb", kb.root, "review", "HEAD", "--json", check=True))["warnings"] == []


@pytest.fixture
def closed_as_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """An editor that closes the file as it was: ``true`` ignores its argument."""
    monkeypatch.setenv("EDITOR", "true")
    monkeypatch.delenv("VISUAL", raising=False)


def test_edit_of_a_broken_file_closed_unchanged_is_checked(catalog_kb: KnowledgeBase, invoke_cli,
                                                           closed_as_is: None) -> None:
    """Every broken-file error recommends 'edit', "which checks it on close"; closed without a
    change it said "No change to memory 3; nothing committed." and exited 0."""
    kb = catalog_kb
    _three(kb)
    (kb.root / "memories" / "3.yaml").write_text("learning: [oops\n")
    commit_all(kb.root, "break 3")
    head = git(kb.root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", kb.root, "edit", "3", input="")  # no answer: not reopened
    assert proc.returncode == 1 and proc.stdout == ""
    problem = "memories/3.yaml:2: invalid YAML: did not find expected ',' or ']'"
    assert proc.stderr == (
        f"{problem}\nReopen the editor? [Y/n]: "
        f"Error: {problem}\nNothing was committed: the file is as it was, with this problem; run "
        f"'slayer-kb --kb {kb.root} edit 3' again to fix it.\n")
    # Reopened on the problem, as for a changed file, until the person declines.
    proc = invoke_cli("--kb", kb.root, "edit", "3", input="y\ny\nn\n")
    assert proc.returncode == 1 and proc.stderr.count("Reopen the editor?") == 3
    assert git(kb.root, "rev-parse", "HEAD") == head
    # A valid file closed as it was is no change, as before.
    proc = invoke_cli("--kb", kb.root, "edit", "2", check=True)
    assert proc.stdout == "No change to memory 2; nothing committed.\n"


def test_edit_of_an_impossible_time_closed_unchanged_is_checked(catalog_kb: KnowledgeBase, invoke_cli,
                                                                closed_as_is: None) -> None:
    """A time no calendar has, which validate refuses, is a problem on close too."""
    kb = catalog_kb
    _three(kb)
    path = kb.root / "memories" / "2.yaml"
    text = path.read_text()
    created = kb.get("2").created_at
    path.write_text(text.replace(created, "2026-02-30T10:00:00Z"))
    commit_all(kb.root, "an impossible time by hand")
    line = 1 + text.splitlines().index(f"created_at: '{created}'")
    proc = invoke_cli("--kb", kb.root, "edit", "2", input="")
    assert proc.returncode == 1
    assert proc.stderr.startswith(
        f"memories/2.yaml:{line}: 'created_at' '2026-02-30T10:00:00Z' is no real time (day is out of range for "
        "month); write the time it happened, quoted: '2026-11-29T20:42:40Z'\nReopen the editor?")


def test_edit_of_an_id_in_another_letter_case_names_it(catalog_kb: KnowledgeBase, invoke_cli,
                                                       closed_as_is: None) -> None:
    """``get KB.Rule`` names ``kb.rule``; ``edit KB.Rule`` offered to create it, and ``show``
    named nothing."""
    kb = catalog_kb
    kb.save_memory(unlike("rule"), ["orders.amount"], id="kb.rule")
    for command, what in (("get", ""), ("edit", ""), ("show", ", now or in the history")):
        proc = invoke_cli("--kb", kb.root, command, "KB.Rule")
        assert (proc.returncode, proc.stderr) == (1, (
            f"Error: No memory with id 'KB.Rule'{what}; did you mean 'kb.rule'? Ids are case-sensitive: type it as "
            "the memory has it.\n")), command


def test_update_refuses_to_commit_an_impossible_created_at(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """``created_at: '2026-02-30T10:00:00Z'`` committed by hand: ``update 2 --title hi`` (and
    ``forget --soft``, ``restore``) committed it again and validate still failed, where a
    session's writes refuse theirs."""
    kb = catalog_kb
    _three(kb)
    path = kb.root / "memories" / "2.yaml"
    text = path.read_text()
    created = kb.get("2").created_at
    path.write_text(text.replace(created, "2026-02-30T10:00:00Z"))
    commit_all(kb.root, "an impossible time by hand")
    head = git(kb.root, "rev-parse", "HEAD")
    line = 1 + text.splitlines().index(f"created_at: '{created}'")
    proc = invoke_cli("--kb", kb.root, "update", "2", "--title", "hi")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: memories/2.yaml:{line}: 'created_at' '2026-02-30T10:00:00Z' is no real time (day is out of range "
        "for month); write the time it happened, quoted: '2026-11-29T20:42:40Z'. Nothing was written: the write "
        f"would commit the file again with it, and validate refuses it. Edit {path} (or run 'slayer-kb --kb "
        f"{kb.root} edit 2', which checks it on close), then retry.\n")
    assert git(kb.root, "rev-parse", "HEAD") == head
    # So do the other writes that commit the memory again: a soft forget, and a restore of one.
    proc = invoke_cli("--kb", kb.root, "forget", "2", "--soft")
    assert (proc.returncode, proc.stderr.partition("(day")[0]) == (
        1, f"Error: memories/2.yaml:{line}: 'created_at' '2026-02-30T10:00:00Z' is no real time ")
    assert "Nothing was written" in proc.stderr
    invoke_cli("--kb", kb.root, "forget", "3", "--soft", check=True)
    gone = kb.root / "memories" / "3.yaml"
    gone.write_text(gone.read_text().replace(kb.get("3", include_deleted=True).created_at, "2026-13-01T00:00:00Z"))
    commit_all(kb.root, "an impossible month by hand")
    proc = invoke_cli("--kb", kb.root, "restore", "3")
    assert (proc.returncode, proc.stderr.partition("(month")[0]) == (
        1, f"Error: memories/3.yaml:{line}: 'created_at' '2026-13-01T00:00:00Z' is no real time ")
    assert git(kb.root, "log", "-1", "--format=%s") == "an impossible month by hand\n"
    # Repaired, the update goes through.
    path.write_text(text)
    commit_all(kb.root, "repaired")
    invoke_cli("--kb", kb.root, "update", "2", "--title", "hi", check=True)
    assert kb.get("2").title == "hi"


def test_review_lists_a_memory_moved_out_of_its_name_as_removed(catalog_kb: KnowledgeBase) -> None:
    """``git mv memories/2.yaml memories/2.txt`` leaves no memory 2 (no command reads a .txt), as
    does one out of a broken file: git's rename to a name no memory has was listed as nothing."""
    kb = catalog_kb
    _three(kb)
    (kb.root / "memories" / "3.yaml").write_text("learning: [broken\n")
    commit_all(kb.root, "break 3")
    base = git(kb.root, "rev-parse", "HEAD").strip()
    git(kb.root, "mv", "memories/2.yaml", "memories/2.txt")
    git(kb.root, "mv", "memories/3.yaml", "memories/3.txt")
    commit_all(kb.root, "moved out of memories' names")
    r = kb.history.review(base)
    assert [(c.id, c.label, c.unreadable) for c in r.removed] == [("2", _label("status"), None), ("3", "", "base")]
    assert r.added == [] and r.changed == [] and r.renamed == []


def test_a_memory_wiped_to_an_empty_mapping_is_changed_and_its_problems_said_once(
        catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A memory wiped to ``{}`` is changed, and each key it misses is said once: the schema gives
    an error per missing key, each of which named them all, so review and validate said each twice."""
    kb = catalog_kb
    _three(kb)
    git(kb.root, "switch", "-q", "-c", "feature")
    (kb.root / "memories" / "2.yaml").write_text("{}\n")
    (kb.root / "memories" / "3.yaml").write_text("")
    commit_all(kb.root, "wipe 2 and 3")
    missing = ["memories/2.yaml:1: missing required key 'learning'",
               "memories/2.yaml:1: missing required key 'created_at' (add created_at: 'YYYY-MM-DDTHH:MM:SSZ')"]
    r = kb.history.review("master")
    assert [(c.id, c.label, c.note) for c in r.changed] == [
        (memory_id, _label(tag), "no longer reads as a memory; see Problems") for memory_id, tag in (("2", "status"),
                                                                                                    ("3", "qty"))]
    assert r.problems == [*missing, "memories/3.yaml:1: a memory file must be a mapping of keys (learning:, "
                                    "entities:, ...)"]
    proc = invoke_cli("validate", "memories/2.yaml", cwd=kb.root)
    assert (proc.returncode, proc.stdout) == (1, "\n".join(missing) + "\n2 problems in 1 file (1 file checked)\n")
