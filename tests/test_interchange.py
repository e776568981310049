"""import-slayer / export-slayer round trip, and import-engram."""

from __future__ import annotations

import datetime
import json
import os
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import InvalidInputError
from slayer_kb.ops.engramimport import engram_time, import_engram
from slayer_kb.ops.interchange import export_slayer, import_slayer
from testing import git, json_of

SLAYER_FILES = {
    "1": """\
---
id: '1'
description: Order totals
entities:
- shop.orders.amount
created_at: '2026-10-01T09:14:22Z'
---

shop.orders.amount is the order total in EUR.

Refunds are separate negative rows.
""",
    "kb.paid-revenue": """\
---
id: kb.paid-revenue
entities:
- shop.orders
- shop.orders.amount
- shop.orders.status
query:
  source_model: orders
  measures:
  - formula: sum(amount)
  filters:
  - status = 'paid'
created_at: '2026-10-02T10:00:00Z'
---

Paid revenue: sum of amount over paid orders.
""",
    "7": """\
---
id: '7'
entities:
- shop.orders.status
- memory:1
created_at: '2026-10-03T11:00:00Z'
---

Status is paid | refunded | pending; see memory 1.
  Indented line kept, trailing spaces too:""" + "   \n",
}


def write_slayer_folder(folder: Path, files: dict[str, str]) -> None:
    (folder / "memories").mkdir(parents=True)
    for memory_id, text in files.items():
        (folder / "memories" / f"{memory_id}.md").write_text(text)


def test_slayer_round_trip_is_byte_identical(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    kb = catalog_kb
    source, target = tmp_path / "slayer-in", tmp_path / "slayer-out"
    write_slayer_folder(source, SLAYER_FILES)
    before = int(git(kb.root, "rev-list", "--count", "HEAD"))
    result = import_slayer(kb, source)
    assert sorted(result.imported) == ["1", "7", "kb.paid-revenue"] and not result.warnings
    assert int(git(kb.root, "rev-list", "--count", "HEAD")) == before + 1
    assert kb.get("1").to_dict()["created_at"] == "2026-10-01T09:14:22Z"
    assert kb.get("1").to_dict()["learning"] == "shop.orders.amount is the order total in EUR.\n\nRefunds are separate negative rows."
    assert kb.get("kb.paid-revenue").to_dict()["query"]["source_model"] == "orders"
    exported = export_slayer(kb, target)
    assert sorted(exported.written) == ["1", "7", "kb.paid-revenue"]
    for memory_id, text in SLAYER_FILES.items():
        assert (target / "memories" / f"{memory_id}.md").read_bytes() == text.encode()
    # Importing again changes nothing and commits nothing.
    again = import_slayer(kb, target)
    assert sorted(again.unchanged) == ["1", "7", "kb.paid-revenue"] and again.commit is None


def test_import_slayer_drops_unresolvable_entities_and_replaces(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    kb = catalog_kb
    # The KB's x was imported from SLayer's x (its created_at): the folder's newer version replaces it.
    write_slayer_folder(tmp_path / "old", {"x": "---\nid: x\nentities:\n- orders.amount\ncreated_at: '2026-10-03T11:00:00Z'\n---\n\nold text\n"})
    import_slayer(kb, tmp_path / "old")
    write_slayer_folder(tmp_path / "s", {
        "x": "---\nid: x\nentities:\n- shop.orders.nope\n- orders.status\ncreated_at: '2026-10-03T11:00:00Z'\n"
             "colour: blue\n---\n\nnew text\n",
    })
    result = import_slayer(kb, tmp_path / "s")
    assert result.replaced == ["x"]
    assert kb.get("x").to_dict()["entities"] == ["shop.orders.status"]
    assert kb.get("x").to_dict()["learning"] == "new text"
    assert any("shop.orders.nope" in w for w in result.warnings)
    assert any("colour" in w for w in result.warnings)


def test_import_slayer_checks_queries_as_save_does(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    head = "---\nid: {id}\nentities:\n- shop.orders\nquery:\n{query}created_at: '2026-10-03T11:00:00Z'\n---\n\nnote\n"
    write_slayer_folder(tmp_path / "s", {
        "ok": head.format(id="ok", query="  version: 6\n  source_model: orders\n  time_dimensions:\n"
                          "  - {dimension: {name: created_at, model: null}, granularity: month, date_range: null}\n"),
        "typo": head.format(id="typo", query="  source_model: orders\n  measure: [sum(amount)]\n"),
    })
    result = import_slayer(catalog_kb, tmp_path / "s")
    assert result.imported == ["ok"] and result.skipped == 1
    assert result.warnings == [
        f"{tmp_path / 's' / 'memories' / 'typo.md'}: query: measure: Extra inputs are not permitted (did you "
        "mean 'measures'?). A SlayerQuery's keys are: version, name, source_model, measures, dimensions, "
        "time_dimensions, main_time_dimension, filters, variables, order, limit, offset, whole_periods_only, "
        "distinct_dimension_values, to_many_handling. (skipped)"
    ]


def test_import_slayer_takes_a_title_as_a_save_takes_it(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """An import stored a title as the file had it: a private span (into git), blanks around it, a
    zero-width space alone, 1,500 characters, none of which a save stores."""
    head = "---\nid: {id}\ntitle: {title}\ncreated_at: '2026-10-03T11:00:00Z'\n---\n\nnote {id}\n"
    titles = {"private": "'<private>pw123</private> Login'", "padded": "'  Padded  '", "invisible": "\"\\u200b\"",
              "visible": "\"\\u06dd\"", "long": "x" * 1500}
    write_slayer_folder(tmp_path / "s", {name: head.format(id=name, title=title) for name, title in titles.items()})
    result = import_slayer(catalog_kb, tmp_path / "s")
    assert (sorted(result.imported), result.skipped) == (["invisible", "padded", "private", "visible"], 1)
    assert result.warnings == [f"{tmp_path / 's' / 'memories' / 'long.md'}: title is 1500 characters long; the "
                               "limit is 1000. Keep the title short and put the detail in the content. (skipped)"]
    files = {name: (catalog_kb.root / "memories" / f"{name}.yaml").read_text() for name in result.imported}
    assert {name: [line for line in text.splitlines() if line.startswith("title")] for name, text in files.items()} == {
        "private": ["title: '[REDACTED] Login'"], "padded": ["title: Padded"], "invisible": [],
        "visible": ["title: \u06dd"]}


def test_import_slayer_skips_a_time_no_calendar_has(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """The import committed such a file, which validate then refused: a CI broken by the tool."""
    write_slayer_folder(tmp_path / "in", {
        "a": "---\nid: a\ncreated_at: '2026-02-30T00:00:00Z'\n---\n\nbody a\n",
        "b": "---\nid: b\ncreated_at: '2026-03-01T00:00:00Z'\n---\n\nbody b\n"})
    result = import_slayer(catalog_kb, tmp_path / "in")
    assert result.imported == ["b"] and result.skipped == 1
    assert result.warnings == [
        f"{tmp_path / 'in' / 'memories' / 'a.md'}: 'created_at' '2026-02-30T00:00:00Z' is no real time (day is out of "
        "range for month); write the time it happened, quoted: '2026-11-29T20:42:40Z' (skipped)"]
    assert not (catalog_kb.root / "memories" / "a.yaml").exists()


def test_import_slayer_reads_windows_line_ends(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """A file SLayer wrote on Windows was skipped as one that does not start with '---'."""
    write_slayer_folder(tmp_path / "in", {"1": SLAYER_FILES["1"].replace("\n", "\r\n")})
    result = import_slayer(catalog_kb, tmp_path / "in")
    assert result.imported == ["1"] and result.warnings == []
    memory = catalog_kb.get("1").to_dict()
    assert memory["learning"] == "shop.orders.amount is the order total in EUR.\n\nRefunds are separate negative rows."
    assert memory["description"] == "Order totals"


def test_import_slayer_reads_memories_yaml(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    folder = tmp_path / "old-slayer"
    folder.mkdir()
    (folder / "memories.yaml").write_text(
        "- id: '3'\n  learning: From the list\n  description: null\n  entities: [shop.orders.amount]\n"
        "  query: null\n  created_at: '2026-01-02T03:04:05Z'\n"
    )
    result = import_slayer(catalog_kb, folder)
    assert result.imported == ["3"]
    assert catalog_kb.get("3").to_dict()["learning"] == "From the list"


def test_engram_time() -> None:
    assert engram_time("2026-03-01 10:20:30") == "2026-03-01T10:20:30Z"
    assert engram_time("2026-03-01T10:20:30.123+02:00") == "2026-03-01T08:20:30Z"
    assert engram_time("yesterday") is None
    # The shape of a time, but none the calendar has: no time, where it raised from the import.
    for impossible in ("2026-02-30 10:00:00", "2026-13-01 10:00:00", "0000-01-01 10:00:00", "2026-01-01 25:00:00",
                       "2026-01-01 10:00:60", "0001-01-01 00:30:00+01:00", "9999-12-31 23:30:00-01:00"):
        assert engram_time(impossible) is None, impossible


@given(st.one_of(st.text(max_size=40), st.from_regex(r"\A\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:?\d{2})?\Z")))
def test_engram_time_is_a_time_or_none(value: str) -> None:
    """Whatever an export holds, a time the import can write or None: never an exception."""
    found = engram_time(value)
    if found is not None:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", found)
        assert datetime.datetime.strptime(found, "%Y-%m-%dT%H:%M:%SZ")


def test_cli_import_engram_takes_an_impossible_time_as_now(empty_kb: KnowledgeBase, invoke_cli, tmp_path: Path) -> None:
    """A date the calendar does not have ended the import with a traceback, nothing imported."""
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"observations": [{"title": "T", "content": "c", "created_at": "2026-02-30 10:00:00"}],
                                "sessions": [{"id": "s1", "started_at": "2026-13-01 10:00:00"}]}))
    proc = invoke_cli("--kb", empty_kb.root, "import-engram", path, "--json", check=True)
    reply = json_of(proc)
    assert reply["imported"] == ["1"] and reply["sessions"] == 1
    assert reply["warnings"] == ["e.json: observation 1: created_at '2026-02-30 10:00:00' is not a time; using now.",
                                 "e.json: session 1: started_at '2026-13-01 10:00:00' is not a time; using now."]
    saved = empty_kb.get("1").to_dict()["created_at"]
    assert abs(datetime.datetime.now(datetime.UTC) - datetime.datetime.strptime(saved, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.UTC)) < datetime.timedelta(hours=1)
    assert invoke_cli("--kb", empty_kb.root, "validate").returncode == 0


def test_import_engram_skips_duplicates(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    kb = empty_kb
    kb.save_observation("Auth model", "JWT over sessions", type="decision", project="api")
    observation = {
        "id": 10, "title": "Auth model", "content": "jwt  over sessions", "type": "decision",
        "project": "API", "scope": "project", "topic_key": None, "session_id": "s1",
        "created_at": "2026-03-01 10:20:30", "updated_at": "2026-03-02 10:20:30",
        "revision_count": 2, "duplicate_count": 1, "deleted_at": None,
    }
    new = {**observation, "id": 11, "title": "Cache", "content": "Redis for sessions", "type": "architecture",
           "topic_key": "architecture/cache"}
    gone = {**new, "id": 12, "title": "Old", "content": "Removed one", "deleted_at": "2026-03-03 00:00:00"}
    path = tmp_path / "engram.json"
    path.write_text(json.dumps({"observations": [observation, new, dict(new), gone, {"title": "empty"}],
                                "sessions": [{"id": "s1"}]}))
    before = int(git(kb.root, "rev-list", "--count", "HEAD"))
    result = import_engram(kb, path)
    assert result.imported == ["2", "3"] and result.skipped == 3 and result.sessions == 1
    assert int(git(kb.root, "rev-list", "--count", "HEAD")) == before + 1
    cache = kb.get("2").to_dict()
    assert cache["title"] == "Cache" and cache["project"] == "api" and cache["topic_key"] == "architecture/cache"
    assert cache["created_at"] == "2026-03-01T10:20:30Z" and cache["revision_count"] == 2
    assert kb.get("3", include_deleted=True).to_dict()["deleted_at"] == "2026-03-03T00:00:00Z"
    # A bare list works too; everything is a duplicate now.
    path.write_text(json.dumps([observation, new]))
    again = import_engram(kb, path)
    assert again.imported == [] and again.skipped == 2 and again.commit is None


def test_cli_interchange(catalog_kb: KnowledgeBase, invoke_cli, tmp_path: Path) -> None:
    kb = catalog_kb
    write_slayer_folder(tmp_path / "in", SLAYER_FILES)
    proc = invoke_cli("--kb", kb.root, "import-slayer", tmp_path / "in", "--json", check=True)
    assert sorted(json_of(proc)["imported"]) == ["1", "7", "kb.paid-revenue"]
    proc = invoke_cli("--kb", kb.root, "export-slayer", tmp_path / "out", check=True)
    assert "Wrote 3 memories" in proc.stdout
    assert (tmp_path / "out" / "memories" / "7.md").read_text() == SLAYER_FILES["7"]
    (tmp_path / "e.json").write_text(json.dumps([{"title": "T", "content": "C", "type": "bugfix"}]))
    proc = invoke_cli("--kb", kb.root, "import-engram", tmp_path / "e.json", check=True)
    assert "1 imported" in proc.stdout
    proc = invoke_cli("--kb", kb.root, "import-slayer", tmp_path / "e.json")
    assert proc.returncode == 2  # not a folder: a usage error


def test_import_slayer_never_reads_through_a_link_out_of_the_folder(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    secret = tmp_path / "id_rsa"
    secret.write_text("---\nid: key\nentities: []\ncreated_at: '2026-10-03T11:00:00Z'\n---\n\nPRIVATE KEY\n")
    write_slayer_folder(tmp_path / "s", {"1": "---\nid: '1'\nentities: []\ncreated_at: '2026-10-03T11:00:00Z'\n---\n\nnote\n"})
    (tmp_path / "s" / "memories" / "2.md").symlink_to(secret)
    (tmp_path / "s" / "kept").mkdir()
    (tmp_path / "s" / "kept" / "3.md").write_text("---\nid: '3'\nentities: []\ncreated_at: '2026-10-03T11:00:00Z'\n---\n\nkept\n")
    (tmp_path / "s" / "memories" / "3.md").symlink_to("../kept/3.md")  # inside the folder: followed
    before = git(catalog_kb.root, "rev-parse", "HEAD")
    # The import used to commit the key as memory 'key', for the next push to publish.
    link = tmp_path / "s" / "memories" / "2.md"
    with pytest.raises(InvalidInputError) as info:
        import_slayer(catalog_kb, tmp_path / "s")
    assert str(info.value) == (
        f"{link} is a symlink to {secret}, outside {tmp_path / 's'}: slayer-kb imports only the folder's own "
        "files. Replace the link with a copy of the file, or remove it, then retry.")
    assert git(catalog_kb.root, "rev-parse", "HEAD") == before
    link.unlink()
    result = import_slayer(catalog_kb, tmp_path / "s")
    assert result.imported == ["1", "3"], result


def test_import_engram_says_why_each_record_is_skipped_or_changed(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    """Duplicates were skipped without a word, an unknown scope became 'project' silently, a
    session row that was no object or had no id was "not NoneType", a prompt over the size limit
    was cut unsaid, and one with no time was added again by every re-import."""
    kb = empty_kb
    kb.max_content = 100
    kb.save_observation("Auth model", "JWT over sessions", type="decision", project="api")
    cache = {"title": "Cache", "content": "Redis for sessions", "type": "decision", "project": "api"}
    path = tmp_path / "engram.json"
    path.write_text(json.dumps({
        "observations": [{"title": "Auth model", "content": "jwt over  sessions", "type": "decision",
                          "project": "API"}, cache, dict(cache), {**cache, "title": "Odd", "scope": "galaxy"}],
        "sessions": ["s1", {"project": "api"}],
        "prompts": [{"session_id": "s1", "content": "x" * 150}, {"session_id": "s1", "content": "again?"}],
    }))
    result = import_engram(kb, path)
    assert (result.imported, result.skipped, result.prompts) == (["2", "3"], 2, 2)
    cut = "x" * 85
    assert result.warnings == [
        "engram.json: observation 1 is a duplicate of memory 1: the same content, title, type, project and scope; "
        "skipped.",
        "engram.json: observation 3 is a duplicate of observation 2 (imported as memory 2): the same content, title, "
        "type, project and scope; skipped.",
        "engram.json: observation 4: scope 'galaxy' is neither 'project' nor 'personal': saved as 'project'; give "
        "'personal' for knowledge that holds across projects, or 'project' (the default).",
        "engram.json: session 1 is not an object; skipped.",
        "engram.json: session 2 has no 'id'; skipped.",
        "engram.json: prompt 1: content is 150 bytes, over the limit of 100: only its first 85 bytes were kept, then "
        "'... [truncated]'. Save the rest as memories (slayer-kb save, the mem_save tool), or raise the limit with SLAYER_KB_MAX_CONTENT "
        "(bytes).",
    ]
    prompts = yaml.safe_load((kb.root / "sessions" / "s1.yaml").read_text())["prompts"]
    assert [p["content"] for p in prompts] == [cut + "... [truncated]", "again?"]
    again = import_engram(kb, path)
    assert (again.imported, again.prompts, again.commit) == ([], 0, None)


def test_import_slayer_skips_each_file_it_cannot_take_and_names_it(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """One file that was not UTF-8, had no front matter or was a FIFO refused the whole import;
    an id no file can have was told without the file."""
    folder = tmp_path / "s"
    write_slayer_folder(folder, {"1": SLAYER_FILES["1"], "nofm": "just text\n", "CON": "---\nid: CON\n---\n\nx\n"})
    memories = folder / "memories"
    (memories / "latin1.md").write_bytes(b"---\n---\n\n\xe9t\xe9\n")
    os.mkfifo(memories / "fifo.md")
    result = import_slayer(catalog_kb, folder)
    assert (result.imported, result.skipped) == (["1"], 4)
    assert result.warnings == [
        f"Cannot read the SLayer file {memories}/fifo.md: it is a FIFO, not a regular file; give a regular file. "
        "(skipped)",
        f"{memories}/latin1.md is not UTF-8 text (invalid continuation byte at byte 9). (skipped)",
        f"{memories}/nofm.md:1: a SLayer memory file starts with '---' (YAML front matter). (skipped)",
        f"{memories}/CON.md: Memory id 'CON' is a device name Windows reserves (CON, PRN, AUX, NUL, COM1-9, LPT1-9, "
        "in any letter case, also before a '.' as in nul.txt): its file cannot exist on Windows. Choose another id, "
        "e.g. 'kb.CON'. (skipped)",
    ]
    assert git(catalog_kb.root, "log", "-1", "--format=%s") == "memory: import 1 memories from SLayer storage s\n"


def test_exports_saved_by_windows_tools_are_read(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """A byte-order mark (Notepad, PowerShell 7's utf8BOM) or UTF-16 (Windows PowerShell's
    ``engram export > engram.json``) made the export "not valid JSON" and the SLayer file one
    with no front matter."""
    observations = [{"title": "Marked", "content": "written with a byte-order mark"}]
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(observations).encode())
    (tmp_path / "utf16.json").write_bytes(json.dumps([{"title": "Wide", "content": "written as UTF-16"}]).encode("utf-16"))
    assert [import_engram(catalog_kb, tmp_path / name).imported for name in ("bom.json", "utf16.json")] == [["1"], ["2"]]
    write_slayer_folder(tmp_path / "s", {})
    (tmp_path / "s" / "memories" / "kb.bom.md").write_bytes(b"\xef\xbb\xbf" + SLAYER_FILES["1"].replace("id: '1'", "id: kb.bom").encode())
    result = import_slayer(catalog_kb, tmp_path / "s")
    assert (result.imported, result.warnings) == (["kb.bom"], [])
    assert catalog_kb.get("kb.bom").learning == "shop.orders.amount is the order total in EUR.\n\nRefunds are separate negative rows."


def test_import_slayer_skips_an_id_a_rename_moved(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """An export made before ``rename x kb.x`` holds x: imported, it would give x, whose links and
    agents mean kb.x, to another memory. Skipped with a warning naming where x went."""
    kb = catalog_kb
    kb.save_memory("old text", ["orders.amount"], id="x")
    export_slayer(kb, tmp_path / "out")
    kb.rename("x", "kb.x")
    head = git(kb.root, "rev-parse", "HEAD").strip()
    result = import_slayer(kb, tmp_path / "out")
    assert (result.imported, result.skipped, result.warnings, result.commit) == ([], 1, [
        f"memory 'x' was renamed to 'kb.x' (commit {head[:12]}), which links to it and agents told it mean; "
        "skipped (give it another id in its file to import it)."], None)
    assert not (kb.memories_dir / "x.yaml").exists() and git(kb.root, "rev-parse", "HEAD").strip() == head


def test_export_slayer_overwrites_only_its_own_files(catalog_kb: KnowledgeBase, invoke_cli, tmp_path: Path) -> None:
    """The folder is outside git: SLayer's own memory 1.md there was overwritten unsaid, and a
    memory forgotten since the last export stayed for SLayer to serve."""
    kb = catalog_kb
    write_slayer_folder(tmp_path / "in", SLAYER_FILES)
    import_slayer(kb, tmp_path / "in")
    out = tmp_path / "out" / "memories"
    out.mkdir(parents=True)
    (out / "1.md").write_text("SLayer's own memory 1\n")
    (out / "99.md").write_text("SLayer's own memory 99\n")
    proc = invoke_cli("--kb", kb.root, "export-slayer", tmp_path / "out")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == (
        f"Error: {out} holds 1 file(s) the export would overwrite that no export of slayer-kb wrote there, or that "
        f"changed since one did: 1.md. Nothing was written. Move them away or export to another folder, or run "
        f"'slayer-kb --kb {kb.root} export-slayer {tmp_path / 'out'} --force' to overwrite them.\n")
    assert sorted(os.listdir(out)) == ["1.md", "99.md"] and (out / "1.md").read_text() == "SLayer's own memory 1\n"
    (out / "1.md").unlink()
    reply = json_of(invoke_cli("--kb", kb.root, "--json", "export-slayer", tmp_path / "out", check=True))
    assert (sorted(reply["written"]), reply["removed"], reply["overwritten"]) == (["1", "7", "kb.paid-revenue"], [], [])
    # Again, after a forget and an edit made in the folder: its own files replaced, the forgotten
    # memory's removed, an edited one left and said; SLayer's own 99.md untouched throughout.
    kb.forget("7")
    (out / "kb.paid-revenue.md").write_text("edited by hand\n")
    proc = invoke_cli("--kb", kb.root, "export-slayer", tmp_path / "out")
    assert proc.returncode == 1 and "changed since one did: kb.paid-revenue.md." in proc.stderr
    proc = invoke_cli("--kb", kb.root, "export-slayer", tmp_path / "out", "--force", check=True)
    assert proc.stdout == (f"Wrote 2 memories to {tmp_path / 'out'}/memories; removed 1 of memories no longer live; "
                           "overwrote 1 file no export wrote\n")
    assert sorted(os.listdir(out)) == [".slayer-kb-export.json", "1.md", "99.md", "kb.paid-revenue.md"]
    assert (out / "1.md").read_text() == SLAYER_FILES["1"] and (out / "99.md").read_text() == "SLayer's own memory 99\n"
    # A file of a memory no longer live, changed since its export, is left and said.
    (out / "1.md").write_text("SLayer's edit\n")
    kb.forget("1")
    reply = json_of(invoke_cli("--kb", kb.root, "--json", "export-slayer", tmp_path / "out", check=True))
    assert (reply["written"], reply["removed"]) == (["kb.paid-revenue"], [])
    assert reply["problems"] == [f"{out / '1.md'} was written by an earlier export and changed since; its memory is no "
                                 "longer live, and the file was left: delete it if SLayer should not serve it."]
    assert (out / "1.md").read_text() == "SLayer's edit\n"


def test_export_slayer_keeps_the_file_of_a_live_memory_it_cannot_read(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """A memory whose file broke since the last export was taken for one no longer live: its
    exported file was removed, and SLayer stopped serving it."""
    kb = catalog_kb
    write_slayer_folder(tmp_path / "in", SLAYER_FILES)
    import_slayer(kb, tmp_path / "in")
    export_slayer(kb, tmp_path / "out")
    path = kb.root / "memories" / "7.yaml"
    path.write_text(path.read_text() + "learning: twice\n")
    result = export_slayer(kb, tmp_path / "out")
    assert (sorted(result.written), result.removed) == (["1", "kb.paid-revenue"], [])
    assert (tmp_path / "out" / "memories" / "7.md").read_text() == SLAYER_FILES["7"]
    path.write_text(path.read_text().removesuffix("learning: twice\n"))
    assert sorted(export_slayer(kb, tmp_path / "out").written) == ["1", "7", "kb.paid-revenue"]  # its own file still


def test_import_slayer_holds_type_project_and_topic_key_to_a_saves_limits(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    """Such a memory was imported, and validate then refused the commit the import made."""
    write_slayer_folder(tmp_path / "in", {
        "a": f"---\nid: a\ntype: {'t' * 201}\ncreated_at: '2026-03-01T00:00:00Z'\n---\n\nbody a\n",
        "b": "---\nid: b\ncreated_at: '2026-03-01T00:00:00Z'\n---\n\nbody b\n"})
    result = import_slayer(catalog_kb, tmp_path / "in")
    assert result.imported == ["b"] and result.warnings == [
        f"{tmp_path / 'in' / 'memories' / 'a.md'}: type is 201 characters long; the limit is 200. Use a short name; put "
        "the detail in the content. (skipped)"]


def test_an_export_of_one_memory_says_it_in_the_singular(catalog_kb: KnowledgeBase, invoke_cli, tmp_path: Path) -> None:
    """"Wrote 1 memories": a count of one is said as one."""
    catalog_kb.save_memory("Amount is in EUR.", ["orders.amount"])
    proc = invoke_cli("--kb", catalog_kb.root, "export-slayer", tmp_path / "out", check=True)
    assert proc.stdout == f"Wrote 1 memory to {tmp_path / 'out'}/memories\n"
