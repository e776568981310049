"""A stranger's pass over the command line with hostile arguments: ``--json`` as an option's
value, look-alike ids, invisible characters in keys, oversized hand-made files. Each case runs the
command in this process (``invoke_cli``: the exit code and both streams a process gives, which
test_in_process.py checks) and checks them and what was committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core import priority
from slayer_kb.daemon.relay import idle_seconds
from testing import WAIT_SECONDS, CliRunner, commit_all, git, ids_trailer, json_of


def test_json_after_a_double_dash_is_no_json_flag(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    proc = invoke_cli("--kb", indexed_example_kb.root, "search", "--bogus", "--", "--json")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("Usage: slayer-kb search [OPTIONS]")
    assert proc.stderr.endswith("\nError: No such option '--bogus'.\n")


def _left_without(option: str, taken: str, give: str, what: str, joined: str) -> str:
    return (f"Option '{option}' was given no value: the next argument, '{taken}', is an option itself. Give {give}; "
            f"for {what} that really is '{taken}', join them: {joined}.")


MISSING_VALUES = [
    # (arguments after --kb ROOT, where the usage is, the message), --json among them or not
    (("update", "2", "--title", "--json"), "update",
     _left_without("--title", "--json", 'the title after it (--title "Auth decision")', "a title", "--title=--json")),
    (("save", "a note", "--title", "--type"), "save",
     _left_without("--title", "--type", 'the title after it (--title "Auth decision")', "a title", "--title=--type")),
    (("save", "a note", "--description", "--json", "-e", "orders"), "save",
     _left_without("--description", "--json", 'the description after it (--description "JWT over sessions")',
                   "a description", "--description=--json")),
    (("save", "a note", "-e", "--json"), "save",
     _left_without("-e", "--json", "its value after it (--entity ENTITY)", "a value", "--entity=--json")),
    (("search", "--project", "--json"), "search",
     _left_without("--project", "--json", "the project after it (--project api)", "a project", "--project=--json")),
    (("update", "2", "--title", "--help"), "update",
     _left_without("--title", "--help", 'the title after it (--title "Auth decision")', "a title", "--title=--help")),
    (("save", "--title", "--", "a note"), "save",  # save --title "$T" -- "$L" with T empty took the title "--"
     _left_without("--title", "--", 'the title after it (--title "Auth decision")', "a title", "--title=--").replace(
         "'--', is an option itself", "'--', ends the options")),
    (("--author", "--json", "list"), "",
     _left_without("--author", "--json", "its value after it (--author 'NAME <EMAIL>')", "a value",
                   "--author=--json")),
]  # fmt: skip


@pytest.mark.parametrize("args, command, message", MISSING_VALUES)
def test_an_option_left_without_its_value_takes_no_option_for_it(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, args: tuple[str, ...], command: str,
        message: str) -> None:
    """``update 2 --title --json`` (a ``$TITLE`` left empty) committed the title "--json" and
    printed no JSON; ``save -e --json`` failed without it. A usage error, in JSON where ``--json``
    is typed anywhere, and nothing committed."""
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", root, *args)
    usage = f"slayer-kb {command} --help" if command else "slayer-kb --help"
    json_typed = "--json" in args
    assert (proc.returncode, json_of(proc) if json_typed else proc.stdout) == (2, {"error": {
        "type": "usage", "message": f"{message} Try '{usage}' for help."}} if json_typed else "")
    assert proc.stderr.startswith(f"Usage: slayer-kb {command}{' ' if command else ''}[OPTIONS]")
    assert proc.stderr.endswith(f"\nError: {message}\n")
    assert git(root, "rev-parse", "HEAD") == head


def test_an_options_value_joined_to_it_may_be_an_options_name(indexed_example_kb: KnowledgeBase,
                                                               invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    proc = invoke_cli("--kb", root, "save", "a note", "--title=--json", check=True)
    assert proc.stdout.startswith('Memory saved: "--json" (manual)\n'), proc.stdout
    memory_id = proc.stdout.rsplit("(memory ", 1)[1].removesuffix(")\n")
    assert json_of(invoke_cli("--kb", root, "--json", "get", memory_id, check=True))["title"] == "--json"


LOOK_ALIKES = [
    ("１２", "Memory id '１２' is made of non-ASCII digits that read as the id '12' (auto ids are ASCII digits): "
             "use '12', or omit the id to get an auto id."),
    ("٣٥", "Memory id '٣٥' is made of non-ASCII digits that read as the id '35' (auto ids are ASCII digits): "
           "use '35', or omit the id to get an auto id."),
    ("ｋｂ.x", "Memory id 'ｋｂ.x' contains U+FF4B FULLWIDTH LATIN SMALL LETTER K, a compatibility form (fullwidth, "
              "ligature, superscript...) that reads as 'kb.x'; use the plain spelling 'kb.x'."),
    ("x／y", "Memory id 'x／y' contains U+FF0F FULLWIDTH SOLIDUS, a compatibility form (fullwidth, ligature, "
            "superscript...) that reads as 'x/y'; use plain letters and digits."),
    ("kb.оrders", "Memory id 'kb.оrders' mixes the letters of Cyrillic (U+043E CYRILLIC SMALL LETTER O) and Latin "
                  "(U+0072 LATIN SMALL LETTER R) in the word 'оrders': it looks like a word of one script but "
                  "names another file. Spell each word in one script."),
]


@pytest.mark.parametrize("memory_id, message", LOOK_ALIKES)
def test_look_alike_ids_are_refused_with_the_plain_form(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                         memory_id: str, message: str) -> None:
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", root, "--json", "save", "a note", "-e", "shop.orders.amount", "--id", memory_id)
    assert (proc.returncode, json_of(proc), proc.stderr) == (
        1, {"error": {"type": "invalid_id", "message": message}}, f"Error: {message}\n")
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.parametrize("memory_id", ["007", "0", "kb.заметка", "заметка", "café", "kb.αβ", "kb.12"])
def test_ids_of_one_script_and_leading_zeros_are_taken(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                        memory_id: str) -> None:
    saved = invoke_cli("--kb", indexed_example_kb.root, "--json", "save", "a note", "-e", "shop.orders.amount",
                    "--id", memory_id, check=True)
    assert json_of(saved)["memory_id"] == memory_id
    # an explicit id that is not int-shaped leaves the auto ids alone
    auto = invoke_cli("--kb", indexed_example_kb.root, "--json", "save", "another", "-e", "shop.orders.amount", check=True)
    assert json_of(auto)["memory_id"] == "27"


def test_a_hand_made_look_alike_file_is_reported_by_validate(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    (root / "memories" / "１２.yaml").write_text("learning: a note\ncreated_at: '2026-01-01T00:00:00Z'\n",
                                                encoding="utf-8")
    proc = invoke_cli("--kb", root, "validate", "memories/１２.yaml", cwd=root)
    assert (proc.returncode, proc.stdout) == (1, f"memories/１２.yaml:1: the file name is the id: {LOOK_ALIKES[0][1]}\n"
                                                 "1 problem in 1 file (1 file checked)\n")
    # still readable, so that it can be fixed or forgotten
    assert json_of(invoke_cli("--kb", root, "--json", "get", "１２", check=True))["learning"] == "a note"


def _printable_error(name: str, code: int) -> str:
    return (f"{name} contains U+{code:04X}, a control or invisible character; write it as printable text "
            "(e.g. 'my-api'), without the character.")


@pytest.mark.parametrize("args, message", [
    (("save", "a note", "--title", "T", "--project", "\u202eevil"), _printable_error("project", 0x202E)),
    (("save", "a note", "-e", "shop.orders.amount", "--project", "x\u200b"), _printable_error("project", 0x200B)),
    (("save", "a note", "--title", "T", "--topic-key", "a\u200bb"), _printable_error("topic_key", 0x200B)),
    (("save", "a note", "-e", "shop.orders.amount", "--topic-key", "a\u2066b"), _printable_error("topic_key", 0x2066)),
    (("save", "a note", "--title", "T", "--type", "bug\u200e"), _printable_error("type", 0x200E)),
    (("update", "1", "--project", "x\x1b[31m"), _printable_error("project", 0x1B)),
    (("update", "1", "--topic-key", "a\u202eb"), _printable_error("topic_key", 0x202E)),
    (("save-prompt", "a prompt", "--project", "x\u200e"), _printable_error("project", 0x200E)),
    (("session-start", "s-1", "--project", "x\u200e"), _printable_error("project", 0x200E)),
    (("save", "a note", "--title", "t" * 1001),
     "title is 1001 characters long; the limit is 1000. Keep the title short and put the detail in the content."),
    (("update", "1", "--title", "t" * 1001),
     "title is 1001 characters long; the limit is 1000. Keep the title short and put the detail in the content."),
    (("save", "a note", "--title", "T", "--project", "p" * 201),
     "project is 201 characters long; the limit is 200. Use a short name; put the detail in the content."),
    (("save", "a note", "-e", "shop.orders.amount", "--type", "t" * 201),
     "type is 201 characters long; the limit is 200. Use a short name; put the detail in the content."),
])  # fmt: skip
def test_invisible_characters_and_huge_keys_are_refused_by_name(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                          args: tuple[str, ...], message: str) -> None:
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", root, *args)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n")
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""


def test_a_hand_made_file_over_16_mib_is_skipped_and_named(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    size = 17 * 1024 * 1024
    body = "learning: " + "a" * (size - 45) + "\ncreated_at: '2026-01-01T00:00:00Z'\n"
    (root / "memories" / "90.yaml").write_text(body, encoding="utf-8")
    problem = (f"memories/90.yaml: is {len(body)} bytes; a memory file may hold at most 16777216 bytes (16 MiB): "
               "split it into several memories")
    listed = invoke_cli("--kb", root, "--json", "list", "--limit", "100", check=True)
    assert json_of(listed)["warnings"] == [f"{problem} (skipped)"]
    assert "90" not in [hit["id"] for hit in json_of(listed)["memories"]]
    assert len(json_of(listed)["memories"]) == 34  # every other memory still answers
    got = invoke_cli("--kb", root, "get", "90", cwd=root)  # where the fix it names runs as printed
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr.startswith(f"Error: {problem}. Edit memories/90.yaml to fix it")
    checked = invoke_cli("--kb", root, "validate", "memories/90.yaml", cwd=root)
    assert (checked.returncode, checked.stdout.splitlines()[0]) == (1, problem.replace(".yaml:", ".yaml:1:", 1))


def test_a_hand_made_learning_over_2_mib_is_skipped_and_named(indexed_example_kb: KnowledgeBase,
                                                               invoke_cli: CliRunner) -> None:
    # Under the 16 MiB file cap, but more than any save writes: indexing and embedding it would
    # cost every reader minutes and gigabytes.
    root = indexed_example_kb.root
    learning = "refunds " * (300 * 1024)
    (root / "memories" / "90.yaml").write_text(f"learning: {learning}\ncreated_at: '2026-01-01T00:00:00Z'\n",
                                               encoding="utf-8")
    problem = (f"memories/90.yaml:1: 'learning' is {len(learning) - 1} bytes; a text in a memory file may hold "
               "at most 2097152 bytes (2 MiB): split it into memories of at most 2097152 bytes each")
    found = invoke_cli("--kb", root, "--json", "search", "refunds", "--limit", "100", check=True)
    assert json_of(found)["warnings"] == [f"{problem} (skipped)"]
    assert "90" not in [hit["id"] for hit in json_of(found)["memories"]]
    got = invoke_cli("--kb", root, "get", "90", cwd=root)
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr.startswith(f"Error: {problem}. Edit memories/90.yaml to fix it")
    checked = invoke_cli("--kb", root, "validate", "memories/90.yaml", cwd=root)
    assert (checked.returncode, checked.stdout.splitlines()) == (1, [problem, "1 problem in 1 file (1 file checked)"])


def _bytes_read() -> int:
    """What this process has read so far, in bytes (Linux's count of every read call)."""
    counts = dict(line.split(": ") for line in Path("/proc/self/io").read_text().splitlines())
    return int(counts["rchar"])


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts the bytes this process read in /proc")
def test_a_50_mib_file_is_refused_by_its_size_unread(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    size = 50 * 1024 * 1024
    with open(root / "memories" / "90.yaml", "w", encoding="utf-8") as handle:
        handle.write("learning: a note\n")
        handle.truncate(size)  # sparse: 50 MiB that take no disk
    problem = (f"memories/90.yaml: is {size} bytes; a memory file may hold at most 16777216 bytes (16 MiB): "
               "split it into several memories")
    before = _bytes_read()
    listed = invoke_cli("--kb", root, "--json", "list", "--limit", "1", check=True)
    got = invoke_cli("--kb", root, "get", "90", cwd=root)  # where the fix it names runs as printed
    checked = invoke_cli("--kb", root, "validate", "memories/90.yaml", cwd=root)
    # Every reader (the index, get, validate) refused it by its size: not one read it whole.
    assert _bytes_read() - before < size // 2
    assert json_of(listed)["warnings"] == [f"{problem} (skipped)"]
    assert (got.returncode, got.stdout) == (1, "")
    assert got.stderr.startswith(f"Error: {problem}. Edit memories/90.yaml to fix it")
    assert (checked.returncode, checked.stdout.splitlines()[0]) == (1, problem.replace(".yaml:", ".yaml:1:", 1))


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts the bytes this process read in /proc")
def test_a_catalog_file_over_16_mib_is_skipped_unread(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    size = 50 * 1024 * 1024
    with open(root / "models" / "wh" / "huge.yaml", "w", encoding="utf-8") as handle:
        handle.write("name: huge\ncolumns:\n- {name: a}\n")
        handle.truncate(size)  # sparse; a clone's real one made every command take minutes
    problem = (f"models/wh/huge.yaml: is {size} bytes; a catalog file may hold at most 16777216 bytes (16 MiB), "
               "so it is not read: keep one model per file, with shorter descriptions")
    before = _bytes_read()
    listed = invoke_cli("--kb", root, "--json", "list", "--limit", "1", check=True)
    checked = invoke_cli("--kb", root, "validate", cwd=root)
    assert _bytes_read() - before < size // 2
    assert json_of(listed)["warnings"] == [f"{problem} (skipped)"]
    assert (checked.returncode, checked.stdout.splitlines()[0]) == (1, problem.replace(".yaml:", ".yaml:1: catalog:", 1))


@pytest.mark.parametrize("args, what, fix", [
    (("save", "a note", "-e", "shop.orders.amount", "--query", "@{}"), "the query file",
     "give a regular file, or --query - to read the query from standard input"),
    (("search", "--query", "@{}"), "the query file",
     "give a regular file, or --query - to read the query from standard input"),
    (("import-engram", "{}"), "the export", "give a regular file"),
])  # fmt: skip
def test_a_fifo_or_a_device_named_as_a_file_to_read_is_refused_unopened(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path, args: tuple[str, ...], what: str,
        fix: str) -> None:
    root = indexed_example_kb.root
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    # A writer that opens and closes at once: the old reader waited on the FIFO until then, read
    # nothing and said "not valid JSON" (with none, it waited for ever; @/dev/zero took 10 GB).
    writer = threading.Thread(target=lambda: open(fifo, "w").close(), daemon=True)  # noqa: SIM115
    writer.start()
    for path, kind in ((fifo, "a FIFO"), ("/dev/null", "a device")):
        proc = invoke_cli("--kb", root, "--json", *(arg.format(path) for arg in args))
        message = f"Cannot read {what} {path}: it is {kind}, not a regular file; {fix}."
        assert (proc.returncode, json_of(proc)) == (1, {"error": {"type": "invalid_input", "message": message}})
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets the writer's open return
    writer.join(WAIT_SECONDS)
    assert git(root, "status", "--porcelain") == ""


def test_a_query_file_that_is_not_utf8_says_so(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                               tmp_path: Path) -> None:
    (tmp_path / "q.json").write_bytes(b'{"source_model": "orders\xff"}')
    proc = invoke_cli("--kb", indexed_example_kb.root, "search", "--query", f"@{tmp_path / 'q.json'}")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        f"Error: The query file {tmp_path / 'q.json'} is not UTF-8 text (invalid start byte at byte 24); "
        "save it as UTF-8.\n"))


def test_a_crafted_tree_never_writes_outside_the_temporary_catalog(indexed_example_kb: KnowledgeBase,
                                                                   invoke_cli: CliRunner, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    root = indexed_example_kb.root
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where catalog_at unpacks a revision

    def mktree(entry: str) -> str:
        return subprocess.run(["git", "mktree"], cwd=root, input=entry, capture_output=True, text=True,
                              check=True).stdout.strip()

    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=root, input="name: x\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    # models/../../PWNED.yaml: git mktree takes '..' entries, and a fetch does not check them.
    tree = mktree(f"100644 blob {blob}\tPWNED.yaml")
    for _ in range(2):
        tree = mktree(f"040000 tree {tree}\t..")
    top = git(root, "ls-tree", "HEAD").replace("\tmodels\n", "\tmodels-old\n") + f"040000 tree {tree}\tmodels\n"
    evil = git(root, "commit-tree", mktree(top), "-p", "HEAD", "-m", "a pull request").strip()
    assert "models/../../PWNED.yaml" in git(root, "ls-tree", "-r", "--name-only", evil)
    reviewed = invoke_cli("--kb", root, "--json", "review", "HEAD", evil)
    checked = invoke_cli("--kb", root, "validate", "--against", evil)
    # Reviewing it used to write temp/PWNED.yaml: with more '..', ~/.bashrc.
    assert sorted(p.name for p in temp.rglob("*")) == []
    assert (reviewed.returncode, checked.returncode) == (0, 0)
    # It is no catalog file (it used to be listed as one, added): the review names it as a problem.
    assert "models/../../PWNED.yaml" not in {f["path"] for f in json_of(reviewed)["catalog_files"]}
    assert json_of(reviewed)["problems"] == [
        "models/../../PWNED.yaml: has a '.' or '..' entry in its path (a crafted tree): git never checks it out "
        "and slayer-kb never reads it; remove it"]


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts the bytes this process read in /proc")
def test_review_names_catalog_problems_by_path_and_skips_a_huge_file_unread(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    base = git(root, "rev-parse", "HEAD").strip()
    size = 17 * 1024 * 1024
    with open(root / "models" / "wh" / "huge.yaml", "w", encoding="utf-8") as handle:
        handle.write("name: huge\ncolumns:\n- {name: a}\n")
        handle.truncate(size)
    (root / "models" / "shop" / "deep.yaml").write_text("name: deep\ncolumns: [\n", encoding="utf-8")
    commit_all(root, "a pull request")
    before = _bytes_read()
    proc = invoke_cli("--kb", root, "--json", "review", base, check=True)
    assert _bytes_read() - before < size // 2
    problems = json_of(proc)["problems"]
    assert problems[0] == (f"models/wh/huge.yaml: is {size} bytes; a catalog file may hold at most 16777216 bytes "
                           "(16 MiB), so it is not read: keep one model per file, with shorter descriptions")
    assert [p.split(": ", 1)[0] for p in problems[1:]] == ["models/shop/deep.yaml:3"]


def test_a_size_limit_above_what_a_file_may_hold_is_refused(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    proc = invoke_cli("--kb", root, "save", "a note", "-e", "shop.orders.amount",
                   env={"SLAYER_KB_MAX_CONTENT": "2097153"})
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: SLAYER_KB_MAX_CONTENT is '2097153'; the most it may be is 2097152 bytes. Set it to at most "
        "2097152 (the default is 65536) or unset it.\n"))
    taken = invoke_cli("--kb", root, "--json", "save", "a" * 70_000, "-e", "shop.orders.amount",
                    env={"SLAYER_KB_MAX_CONTENT": "2097152"}, check=True)
    assert json_of(taken)["action"] == "created"


_SERVER_VALUES = ("not a server setting; set it to on, manual or off (also 1, yes, true, auto, 0, no, false, "
                  "never) or unset it.")


def test_a_bad_kb_server_setting_is_refused_with_no_server_started(catalog_kb: KnowledgeBase, run_cli: CliRunner) -> None:
    """``git config slayer-kb.server`` misspelt was taken as unset: the server on. The client
    runs the command here, which refuses it; a command that never opens the KB (``server
    status``) takes it as off."""
    root = catalog_kb.root
    git(root, "config", "slayer-kb.server", "disabled")
    proc = run_cli("--kb", root, "list", env={"SLAYER_KB_SERVER": ""})
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", f"Error: git config slayer-kb.server is 'disabled', {_SERVER_VALUES}\n")
    status = json_of(run_cli("--kb", root, "--json", "server", "status", env={"SLAYER_KB_SERVER": ""}, check=True))
    assert (status["mode"], status["running"]) == ("off", False)


def test_a_bad_server_setting_is_refused_naming_it(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """SLAYER_KB_WRITE_NICENESS, SLAYER_KB_SERVER_IDLE and SLAYER_KB_BUILD_WORKERS are read where
    nothing could say so (the relaying client, the server): a bad one was the default, silently.
    The check is the readers' own parse: an idle time of 1.5 s, which the server takes, was refused
    as no whole number; a niceness above 19 is 19, as nice(1) takes it."""
    root = example_kb_read_only.root
    idle = "not a number of seconds; set it to a number above 0 (the default is 300) or unset it."
    refused = {
        ("SLAYER_KB_WRITE_NICENESS", "lowest"): "SLAYER_KB_WRITE_NICENESS is 'lowest', not a number of steps; set it "
        "to a whole number from 0 to 19 (the default is 10) or unset it.",
        ("SLAYER_KB_SERVER_IDLE", "30s"): f"SLAYER_KB_SERVER_IDLE is '30s', {idle}",
        ("SLAYER_KB_SERVER_IDLE", "0"): f"SLAYER_KB_SERVER_IDLE is '0', {idle}",
        ("SLAYER_KB_SERVER_IDLE", "inf"): f"SLAYER_KB_SERVER_IDLE is 'inf', {idle}",
        ("SLAYER_KB_BUILD_WORKERS", "0"): "SLAYER_KB_BUILD_WORKERS is '0', not a number of model runs; set it to a "
        "whole number above 0 (the default is 2) or unset it.",
        # Was taken as unset: the server on, for a user who tried to turn it off.
        ("SLAYER_KB_SERVER", "disabled"): f"SLAYER_KB_SERVER is 'disabled', {_SERVER_VALUES}",
        # Read only where git runs, a sync's fetch and push: a read took it, a sync refused it half-way.
        ("SLAYER_KB_SYNC_TIMEOUT", "5m"): "SLAYER_KB_SYNC_TIMEOUT is '5m', not a number of seconds; set it to a "
        "whole number above 0 (the default is 300) or unset it.",
    }
    for (variable, value), message in refused.items():
        proc = invoke_cli("--kb", root, "list", "--limit", "1", env={variable: value})
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n")
    taken = {("SLAYER_KB_WRITE_NICENESS", "0"): 0, ("SLAYER_KB_WRITE_NICENESS", "25"): 19,
             ("SLAYER_KB_SERVER_IDLE", "1.5"): 1.5}
    for (variable, value), read in taken.items():
        assert invoke_cli("--kb", root, "list", "--limit", "1", env={variable: value}).returncode == 0, value
        monkeypatch.setenv(variable, value)
        assert (priority.niceness() if variable == priority.VARIABLE else idle_seconds()) == read


@pytest.mark.parametrize("args, name, option", [
    (("save", "-1 is the sentinel", "-e", "shop.orders.amount"), "LEARNING", "-1"),
    (("get", "-1"), "ID", "-1"),
    (("search", "-x"), "QUESTION", "-x"),
    (("timeline", "-1"), "ID", "-1"),  # an optional argument: its metavar is "[ID]"
])  # fmt: skip
def test_an_argument_starting_with_a_dash_hears_about_double_dash(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                                   args: tuple[str, ...], name: str,
                                                                   option: str) -> None:
    root = indexed_example_kb.root
    proc = invoke_cli("--kb", root, *args)
    hint = (f"No such option '{option}'. If '{option}' begins the {name} rather than naming an option, put the "
            f"{name} after '--': slayer-kb {args[0]} [OPTIONS] -- {name}.")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.endswith(f"\nError: {hint}\n")
    asked = invoke_cli("--kb", root, "--json", *args)
    assert (asked.returncode, json_of(asked)) == (2, {"error": {"type": "usage", "message": (
        f"{hint} Try 'slayer-kb {args[0]} --help' for help.")}})
    # the advice works
    if args[0] == "save":
        saved = invoke_cli("--kb", root, "--json", "save", "-e", "shop.orders.amount", "--", args[1], check=True)
        got = invoke_cli("--kb", root, "--json", "get", json_of(saved)["memory_id"], check=True)
        assert json_of(got)["learning"] == "-1 is the sentinel"


def test_a_group_with_no_command_under_json_says_so_in_one_line(invoke_cli: CliRunner) -> None:
    """`--json server` put the whole help text (900 characters) in the error's message."""
    for args, path in ((("--json",), "slayer-kb"), (("--json", "server"), "slayer-kb server")):
        proc = invoke_cli(*args)
        assert (proc.returncode, json_of(proc)) == (2, {"error": {"type": "usage", "message": (
            f"Missing command. Try '{path} --help' for help.")}}), args


def test_a_misspelt_long_option_gets_no_double_dash_advice(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    proc = invoke_cli("--kb", indexed_example_kb.root, "search", "refunds", "--limt", "3")
    assert (proc.returncode, proc.stderr.splitlines()[-1]) == (
        2, "Error: No such option '--limt'. Did you mean '--limit'?")


def test_words_past_the_last_argument_are_clipped_and_a_text_told_to_be_quoted(invoke_cli: CliRunner,
                                                                              tmp_path: Path) -> None:
    """click quoted every extra argument: 20,000 words typed unquoted made a 100 KB error, and
    `search how are refunds counted` did not say that the question is one quoted argument."""
    told = {
        ("search", "how", "are", "refunds", "counted"):
            "Got unexpected extra arguments (are refunds counted). The QUESTION is one argument: quote it (slayer-kb "
            'search "how are refunds counted").',
        ("save", "orders", "amount", "is", "gross", "-e", "shop.orders"):
            'Got unexpected extra arguments (amount is gross). The LEARNING is one argument: quote it (slayer-kb save '
            '"orders amount is gross").',
        ("get", "1", "2"): "Got unexpected extra argument (2).",
        ("search", *["word"] * 20_000):
            f"Got unexpected extra arguments ({'word ' * 20}... (99994 characters)). The QUESTION is one argument: quote it.",
    }
    for args, message in told.items():
        proc = invoke_cli("--kb", tmp_path, *args)
        assert (proc.returncode, proc.stdout, proc.stderr.splitlines()[-1]) == (2, "", f"Error: {message}"), args[:5]
        asked = invoke_cli("--kb", tmp_path, "--json", *args)
        assert json_of(asked)["error"]["message"] == f"{message} Try 'slayer-kb {args[0]} --help' for help."


def test_validate_of_a_missing_memory_file_says_no_such_file(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    (root / "memories" / "91.yaml").symlink_to(root / "memories" / "1.yaml")
    proc = invoke_cli("--kb", root, "validate", "memories/nothere.yaml", "memories/91.yaml", cwd=root)
    assert (proc.returncode, proc.stdout) == (1, (
        "memories/91.yaml:1: is a symlink, which slayer-kb never follows; put the file itself in memories/; slayer-kb skips it\n"
        "memories/nothere.yaml:1: no such file\n"
        "2 problems in 2 files (2 files checked)\n"))


def test_a_long_number_as_id_is_refused_before_it_moves_the_auto_ids(indexed_example_kb: KnowledgeBase,
                                                                      invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    refused = invoke_cli("--kb", root, "save", "a note", "-e", "shop.orders.amount", "--id", "1234567890123456")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: Memory id '1234567890123456' is a number of 16 digits: every later auto id would count on from "
        "it. Use a number of at most 15 digits, a name such as 'kb.orders-total', or omit the id to get an auto "
        "id.\n"))
    assert git(root, "rev-parse", "HEAD") == head
    invoke_cli("--kb", root, "save", "a note", "-e", "shop.orders.amount", "--id", "999999999999999", check=True)
    after = invoke_cli("--kb", root, "--json", "save", "next", "-e", "shop.orders.amount", check=True)
    assert json_of(after)["memory_id"] == "1000000000000000"


def test_an_auto_id_too_long_to_be_an_id_is_never_handed_out(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    huge = "9" * 200  # made by hand (or before the digit limit): the next number has 201 digits
    (root / "memories" / f"{huge}.yaml").write_text("learning: a note\ncreated_at: '2026-01-01T00:00:00Z'\n",
                                                     encoding="utf-8")
    git(root, "add", "memories")
    git(root, "commit", "-qm", "a long number")
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", root, "save", "a note", "-e", "shop.orders.amount")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: The next auto id would be 201 digits long, over the 200-byte limit of an id: this branch holds an "
        "id that is a number of 200 digits, and auto ids count on from it. Rename that memory to a name if it is "
        "still there, or give this memory an id (--id NAME).\n"))
    assert (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain")) == (head, "")
    named = invoke_cli("--kb", root, "--json", "save", "a note", "-e", "shop.orders.amount", "--id", "kb.named", check=True)
    assert json_of(named)["memory_id"] == "kb.named"


def test_a_broken_catalog_file_is_named_where_its_names_are_missed(indexed_example_kb: KnowledgeBase,
                                                                   invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    (root / "models" / "shop" / "evil.yaml").write_text(
        "name: evil\ncolumns: !!python/object/apply:os.system ['touch pwned']\n", encoding="utf-8")
    problem = ("models/shop/evil.yaml:2: invalid YAML: could not determine a constructor for the tag "
               "'tag:yaml.org,2002:python/object/apply:os.system'")
    head = git(root, "rev-parse", "HEAD")
    saved = invoke_cli("--kb", root, "save", "a note", "-e", "shop.evil.amount")
    assert (saved.returncode, saved.stdout, saved.stderr) == (1, "", (
        "Error: No model 'evil' in datasource 'shop'. Its models: ['customers', 'order_items', 'orders', 'payments', "
        f"'products', 'refunds', 'regions']. The catalog skipped 1 file(s) it could not use, such as {problem}; fix it "
        f"('slayer-kb --kb {root} validate' lists every problem).\n"))
    assert git(root, "rev-parse", "HEAD") == head
    assert not (root / "pwned").exists()
    found = invoke_cli("--kb", root, "--json", "search", "-e", "shop.orders.amount", check=True)
    assert json_of(found)["warnings"] == [f"{problem} (skipped)"]
    listed = invoke_cli("--kb", root, "--json", "list", check=True)
    assert json_of(listed)["warnings"] == [f"{problem} (skipped)"]


def test_review_shows_its_head_as_optional(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    proc = invoke_cli("--kb", indexed_example_kb.root, "review")
    assert (proc.returncode, proc.stderr.splitlines()[0], proc.stderr.splitlines()[-1]) == (
        2, "Usage: slayer-kb review [OPTIONS] BASE [HEAD]", "Error: Missing argument 'BASE'.")


def test_a_git_hook_that_hangs_is_stopped_and_named(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    hook = root / ".git" / "hooks" / "reference-transaction"
    # git runs it inside the save's update-ref, holding HEAD's lock; it never returns.
    hook.write_text('#!/bin/sh\n[ "$1" = prepared ] || exit 0\nexec sleep 600 >/dev/null 2>&1\n')
    hook.chmod(0o755)
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", root, "--json", "save", "a note", "-e", "shop.orders.amount",
                   env={"SLAYER_KB_GIT_TIMEOUT": "2"})
    message = ("git update-ref did not finish within 2 s and was stopped: it runs this repository's "
               f"reference-transaction hook ({hook}), which must be waiting for something. Nothing was saved. Make "
               "the hook finish (or remove it), then retry; SLAYER_KB_GIT_TIMEOUT sets how many seconds git may take.")
    assert (proc.returncode, json_of(proc), proc.stderr) == (
        1, {"error": {"type": "store", "message": message}}, f"Error: {message}\n")
    assert (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain")) == (head, "")
    # git was stopped, and its lock went with it: the next save is taken.
    hook.unlink()
    saved = invoke_cli("--kb", root, "save", "a note", "-e", "shop.orders.amount", check=True)
    assert saved.stdout == "Saved memory 27 (created)\n  entities: shop.orders.amount\n"


@pytest.mark.parametrize("args", [("--json", "--version"), ("--version", "--json"), ("--version", "list", "--json")])
def test_version_under_json_is_a_json_document(invoke_cli: CliRunner, args: tuple[str, ...]) -> None:
    from importlib.metadata import version

    proc = invoke_cli(*args)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f'{{\n  "version": "{version("slayer-kb")}"\n}}\n', "")
    assert invoke_cli("--version").stdout == f"slayer-kb, version {version('slayer-kb')}\n"


def test_a_folder_that_cannot_be_made_is_named_with_its_cause_and_fix(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("in the way")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    in_the_way = ("is a file, not a folder; move that file aside or give another path.")
    cases = [
        (("init", "/proc/x"), "Cannot create the knowledge base's folder /proc/x: /proc refuses new folders (No such "
                               "file or directory); give a path in a folder you can write to."),
        # There, but taking nothing: git init used to fail saying only "/proc/.git: No such file or directory".
        (("init", "/proc"), "Cannot use the knowledge base's folder /proc: it takes no new folder (No such file or "
                             "directory); give a path in a folder you can write to."),
        (("init", tmp_path / "loop"), f"Cannot create the knowledge base's folder {tmp_path}/loop: {tmp_path}/loop "
                                      "is a symlink to nothing that exists, or a loop; give another path."),
        (("init", tmp_path / "afile" / "kb"), f"Cannot create the knowledge base's folder {tmp_path}/afile/kb: "
                                               f"{tmp_path}/afile {in_the_way}"),
        (("--kb", indexed_example_kb.root, "export-slayer", tmp_path / "afile" / "out"),
         f"Cannot create the export's folder {tmp_path}/afile/out/memories: {tmp_path}/afile {in_the_way}"),
    ]
    for args, message in cases:
        proc = invoke_cli("--json", *args)
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n")


def test_a_project_too_long_for_its_default_session_is_named_not_the_session(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    project = "p" * 195
    message = ("project is too long to name its default session 'manual-save-PROJECT' (195 characters): a project may "
               "have at most 188 characters for it (fewer when they are not ASCII letters and digits, as the session's "
               "file name holds at most 255 bytes). Use a shorter project (--project), or name the session "
               "(--session; session_id over MCP).")
    for args in (("save", "a note", "--title", "t", "--project", project), ("save-prompt", "hi", "--project", project)):
        proc = invoke_cli("--kb", root, "--json", *args)
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n")
    assert git(root, "rev-parse", "HEAD") == head
    invoke_cli("--kb", root, "save", "a note", "--title", "t", "--project", project, "--session", "s1", check=True)


def test_update_and_restore_of_a_hand_broken_file_say_how_to_fix_it(indexed_example_kb: KnowledgeBase,
                                                                     invoke_cli: CliRunner) -> None:
    """As get does: the problem, then the edit that fixes it; the file stays as it was."""
    root = indexed_example_kb.root
    broken = "learning: 42\nentities: [shop.orders]\ncreated_at: '2026-01-01T00:00:00Z'\n"
    (root / "memories" / "1.yaml").write_text(broken)
    commit_all(root, "a hand edit")
    expected = ("Error: memories/1.yaml:1: 'learning' must be a string, not a number (quote it). Edit memories/1.yaml "
                "to fix it, then check it with 'slayer-kb validate' (or run 'slayer-kb edit 1', which checks it on "
                "close).\n")
    for args in (("update", "1", "--title", "x"), ("restore", "1"), ("get", "1")):
        proc = invoke_cli("--kb", root, *args, cwd=root)  # where the fix it names runs as printed
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", expected), args
    assert (root / "memories" / "1.yaml").read_text() == broken


def test_a_kb_path_that_is_no_kb_gets_only_advice_that_can_work(invoke_cli: CliRunner, tmp_path: Path) -> None:
    """--kb a file, a symlink loop (a traceback before), a folder that cannot hold a KB (which was
    told to run init there), a missing folder (init it, named) and one under a folder taking none."""
    (tmp_path / "afile").write_text("not a kb")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    cases = [
        (tmp_path / "afile", "not_found", f"No knowledge base at {tmp_path}/afile: it is a file, not a folder; "
                                           "give the folder of a knowledge base (it holds memories/)."),
        (tmp_path / "loop", "not_found", f"No knowledge base at {tmp_path}/loop: Too many levels of symbolic links; "
                                          "give the folder of a knowledge base (it holds memories/)."),
        (tmp_path / "new", "not_found", f"No knowledge base at {tmp_path}/new: no such folder; create one with "
                                         f"'slayer-kb init {tmp_path}/new'."),
        ("/proc/kb", "not_found", "No knowledge base at /proc/kb: no such folder, and /proc takes none; give the "
                                  "folder of a knowledge base."),
        ("/proc", "store", "/proc is not inside a git repository, and cannot hold a knowledge base: it takes no new "
                           "folder (No such file or directory). Give the folder of a knowledge base, or create one in "
                           "a folder you can write to ('slayer-kb init DIR')."),
    ]
    for kb, kind, message in cases:
        proc = invoke_cli("--json", "--kb", kb, "list")
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": kind, "message": message}}, f"Error: {message}\n"), kb
        assert invoke_cli("--kb", kb, "list").stderr == f"Error: {message}\n"
    assert not (tmp_path / "new").exists()


def test_control_characters_of_a_title_reach_no_commit_message(indexed_example_kb: KnowledgeBase,
                                                               invoke_cli: CliRunner) -> None:
    """A title is kept exactly, but the commit message names it on one line of printable text:
    a NUL made git refuse the commit ("git commit-tree failed"), an escape sequence went into
    every `git log` of the KB, and a blank line started a body of forged trailers (a title is
    one line now: refused; a capture's source still may break lines)."""
    root = indexed_example_kb.root
    forged = invoke_cli("--kb", root, "save", "the learning", "--title", "a\n\nSigned-off-by: someone else")
    assert forged.returncode == 1 and forged.stderr.startswith("Error: title is one line, and this one breaks at U+000A")
    title = "a\x00b \x1b]0;pwned\x07 \u202eevil\tSigned-off-by: someone else"
    saved = invoke_cli("--kb", root, "--json", "save", "the learning", "--title", title)
    assert (saved.returncode, json_of(saved)["memory_id"], saved.stderr) == (0, "27", "")
    assert json_of(invoke_cli("--kb", root, "--json", "get", "27", check=True))["title"] == title
    assert git(root, "log", "-1", "--format=%B") == (
        "memory: save 27 (manual: a\\x00b \\x1b]0;pwned\\x07 \\u202eevil Signed-off-by: someone else)\n\n"
        f"{ids_trailer(root, 27)}\n")
    text = "## Key Learnings:\n1. The warehouse is rebuilt nightly at 02:00 UTC\n"
    captured = invoke_cli("--kb", root, "capture-passive", text, "--source", "hook\n\nSigned-off-by: x\x1b[2J")
    assert captured.returncode == 0, captured.stderr
    assert git(root, "log", "-1", "--format=%B") == (
        f"memory: capture 28 (passive, from hook Signed-off-by: x\\x1b[2J)\n\n{ids_trailer(root, 28)}\n")
    assert git(root, "status", "--porcelain") == ""


def test_an_engram_export_without_observations_or_of_the_wrong_shape(indexed_example_kb: KnowledgeBase,
                                                                     invoke_cli: CliRunner, tmp_path: Path) -> None:
    """An export with no observations (an empty list, only sessions) raised IndexError; a key of
    the wrong type was read character by character or dropped without a word."""
    root = indexed_example_kb.root
    export = tmp_path / "engram.json"
    head = git(root, "rev-parse", "HEAD")
    for text in ("[]", '{"observations": null}', "{}"):
        export.write_text(text)
        proc = invoke_cli("--kb", root, "--json", "import-engram", export)
        assert (proc.returncode, json_of(proc)["imported"], json_of(proc)["commit"], proc.stderr) == (0, [], None, "")
    assert git(root, "rev-parse", "HEAD") == head
    export.write_text('{"sessions": [{"id": "ses-only", "project": "p"}]}')
    proc = invoke_cli("--kb", root, "--json", "import-engram", export)
    assert (proc.returncode, json_of(proc)["sessions"], proc.stderr) == (0, 1, "")
    assert git(root, "log", "-1", "--format=%s") == "memory: import 0 observations, 1 new sessions, 0 prompts from Engram (engram.json)\n"
    head = git(root, "rev-parse", "HEAD")
    for key, value, kind in (("observations", '"abc"', "a string"), ("sessions", "{}", "a mapping"),
                             ("prompts", "5", "a number")):
        export.write_text(f'{{"{key}": {value}}}')
        proc = invoke_cli("--kb", root, "--json", "import-engram", export)
        message = f"{export}: '{key}' must be a list, as in Engram's export, not {kind}."
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n")
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.parametrize("command", ["save", "update"])
@pytest.mark.parametrize("refs", [("",), ("shop.orders.amount", "  "), (" , ",)])
def test_an_empty_entity_option_is_refused_by_its_name(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                       command: str, refs: tuple[str, ...]) -> None:
    """`update 1 -e "$EMPTY"` silently stripped every entity from memory 1, where save refuses it;
    each named it by its API field (linked_entities[0], entities[0]), not the -e typed."""
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    before = (root / "memories" / "1.yaml").read_bytes()
    number = 1 + refs.index(next(ref for ref in refs if not ref.replace(",", "").strip()))
    message = f"-e/--entity #{number} is empty: give a reference such as -e orders.amount, or drop it"
    message += f"; to unlink every entity, delete them with 'slayer-kb --kb {root} edit 1'." if command == "update" else "."
    args = ["update", "1"] if command == "update" else ["save", "a note"]
    proc = invoke_cli("--kb", root, "--json", *args, *(arg for ref in refs for arg in ("-e", ref)))
    assert (proc.returncode, json_of(proc), proc.stderr) == (
        1, {"error": {"type": "resolution", "message": message}}, f"Error: {message}\n")
    assert (root / "memories" / "1.yaml").read_bytes() == before
    assert git(root, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("args", [["update", "1", "-e", ""], ["save", "a note", "-e", ""]])
def test_an_empty_entity_option_on_a_folder_that_is_no_kb_hears_of_the_folder(
        tmp_path: Path, invoke_cli: CliRunner, args: list[str]) -> None:
    """update's empty -e check came before it opened its KB, advising 'slayer-kb --kb DIR edit 1'
    for a DIR that holds no KB."""
    proc = invoke_cli("--kb", tmp_path, *args)
    message = f"{tmp_path} is not inside a git repository; run 'slayer-kb init {tmp_path}'."
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n")


@pytest.mark.parametrize("author", ["Evil\x1b[2J <e@example.com>", "Evil\u202e <e@example.com>", "A\tB <e@example.com>",
                                    "bob"])
def test_an_author_with_control_characters_is_refused(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                      author: str) -> None:
    """Each went into the commit's author line as it was, for every `git log` to print raw. The
    refusal is of a value given (it was "type": "store", as if git had refused), with the fix."""
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    message = (f"Author {author!r} is not of the form 'Name <email>' in printable text (no control or invisible "
               "characters): give one such as 'Ann Lee <ann@example.com>' (--author, or SLAYER_KB_AUTHOR).")
    for args, env in (((["--author", author]), None), ([], {"SLAYER_KB_AUTHOR": author})):
        proc = invoke_cli("--kb", root, *args, "--json", "save", "a note", "-e", "shop.orders.amount", env=env)
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n")
    assert git(root, "rev-parse", "HEAD") == head
    assert git(root, "status", "--porcelain") == ""


@pytest.mark.parametrize("folder", ["", " ", "\t\n"])
def test_a_blank_folder_is_refused_not_taken_for_the_current_one(indexed_example_kb: KnowledgeBase,
                                                                 invoke_cli: CliRunner, tmp_path: Path,
                                                                 folder: str) -> None:
    """`init "$DIR"` with DIR unset made a git repository and a KB of the current folder (a
    blank one, a folder named ' '); `export-slayer ""` wrote its memories/ there."""
    work = tmp_path / "work"
    work.mkdir()
    for args, what, example in ((("init",), "the knowledge base's folder", "slayer-kb init kb"),
                                (("--kb", indexed_example_kb.root, "export-slayer"), "the export's folder",
                                 f"slayer-kb --kb {indexed_example_kb.root} export-slayer ./slayer-storage")):
        proc = invoke_cli(*args, "--json", folder, cwd=work)
        message = (f"{what} is blank ({folder!r}): give a folder, e.g. '{example}' ('.' for the current one).")
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n")
    assert list(work.iterdir()) == []


def test_a_type_filter_is_trimmed_and_a_blank_one_ignored_as_a_project(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = example_kb_read_only.root

    def ids(*args: str) -> tuple[list[str], str]:
        proc = invoke_cli("--kb", root, "--json", *args, check=True)
        return [hit["id"] for hit in json_of(proc)["memories"]], proc.stderr

    every, learning = ids("list"), ids("list", "--type", "learning")
    assert len(learning[0]) == 1
    assert ids("list", "--type", " learning ") == learning
    assert ids("list", "--type", "   ") == ids("list", "--project", "   ") == every
    searched = ids("search", "refunds")
    assert ids("search", "refunds", "--type", " \t") == ids("search", "refunds", "--project", " ") == searched


def test_catalog_entries_it_cannot_use_are_named_by_validate(indexed_example_kb: KnowledgeBase,
                                                             invoke_cli: CliRunner) -> None:
    """Each was skipped or used in silence: a folder or FIFO named *.yaml was never listed, an
    empty model file a model of nothing (valid, but named), and a misspelt key in priority.yaml no priority."""
    root = indexed_example_kb.root
    (root / "models" / "shop" / "folder.yaml").mkdir()
    (root / "datasources" / "folder.yaml").mkdir()
    os.mkfifo(root / "models" / "shop" / "fifo.yaml")
    (root / "models" / "shop" / "empty.yaml").write_bytes(b"")
    (root / "priority.yaml").write_text("priorty: [shop, wh]\n")
    proc = invoke_cli("--kb", root, "validate", "memories/1.yaml", cwd=root)
    not_a_file = "not a regular file: the catalog is read from files. Remove it, or rename it without .yaml"
    assert (proc.returncode, proc.stdout) == (1, (
        f"datasources/folder.yaml:1: catalog: is a folder, {not_a_file}\n"
        "models/shop/empty.yaml:1: catalog: the model file is empty (0 bytes), a model with no columns or "
        "measures; write its definition (docs/format.md), or remove the file\n"
        f"models/shop/fifo.yaml:1: catalog: is a FIFO, {not_a_file}\n"
        f"models/shop/folder.yaml:1: catalog: is a folder, {not_a_file}\n"
        "priority.yaml:1: catalog: no 'priority' key (found 'priorty'): write priority: [datasource, ...]\n"
        "5 problems in 5 files (1 file checked)\n"))


def test_a_blank_kb_a_byte_order_mark_and_soft_forget_advice(empty_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                             tmp_path: Path) -> None:
    """A blank --kb fell back to the KB the command ran in (`--kb "$KB"` with KB unset) and a
    blank $SLAYER_KB was taken as a folder ('init /path/ '); a BOM a Windows pipe puts before
    the text stayed in the memory; `forget --soft` said to restore without saying which."""
    root = empty_kb.root
    kb_fix = ("give the folder of a knowledge base, e.g. '--kb ./kb', or drop --kb to use $SLAYER_KB or the KB "
              "enclosing the current folder.")
    env_fix = ("set it to the folder of a knowledge base, or unset it ('unset SLAYER_KB') to use the KB enclosing "
               "the current folder.")
    for args, env, message in ((("--kb", ""), {}, f"--kb is blank (''): {kb_fix}"),
                               (("--kb", " "), {}, f"--kb is blank (' '): {kb_fix}"),
                               ((), {"SLAYER_KB": " "}, f"SLAYER_KB is blank (' '): {env_fix}"),
                               ((), {"SLAYER_KB": "\t"}, f"SLAYER_KB is blank ('\\t'): {env_fix}")):
        proc = invoke_cli(*args, "--json", "list", cwd=root, env=env)
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n"), args
    # An empty $SLAYER_KB is unset (`SLAYER_KB= slayer-kb ...`): the KB the command runs in.
    assert json_of(invoke_cli("--json", "list", cwd=root, env={"SLAYER_KB": ""}, check=True)) == {"memories": []}
    query = tmp_path / "query.json"
    query.write_bytes(b'\xef\xbb\xbf{"source_model": "nowhere"}')
    proc = invoke_cli("--kb", root, "save", "q", "--query", f"@{query}")
    assert proc.stderr == "Error: Source model not found: 'nowhere'.\n"  # read as JSON, BOM and all
    invoke_cli("--kb", root, "save", "-", "--title", "Piped", input="\ufeffpiped from PowerShell\n", check=True)
    assert json_of(invoke_cli("--kb", root, "--json", "get", "1", check=True))["learning"] == "piped from PowerShell"
    proc = invoke_cli("--kb", root, "forget", "1", "--soft", check=True)
    assert proc.stdout == f"Forgot memory 1 (soft; restore with 'slayer-kb --kb {root} restore 1')\n"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_save_whose_output_cannot_be_written_says_it_is_saved(indexed_example_kb: KnowledgeBase) -> None:
    """Standard output on a full disk (here /dev/full) made a save that had committed say
    "Cannot use: No space left on device; the disk is full: free some space, then retry": a
    retry saved the memory twice (and through the warm server it was a traceback)."""
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD").strip()
    told = ("Error: Cannot write the output to standard output: No space left on device. The command itself finished "
            "(any change it made is committed; git log -1 shows it): do not run a write again for its output.\n")
    for args in (("save", "saved though its output is lost", "-e", "shop.orders"), ("--json", "get", "1")):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args], stdout=full,
                                  stderr=subprocess.PIPE, text=True, env={**os.environ, "SLAYER_KB_SERVER": "off"},
                                  timeout=120)
        assert (proc.returncode, proc.stderr) == (1, told), args
    assert git(root, "log", "--format=%s", f"{head}..HEAD") == "memory: save 27\n"


def test_a_closed_standard_stream_keeps_warnings_out_of_the_json(indexed_example_kb: KnowledgeBase) -> None:
    """Started with stderr closed (2>&-), Python has no sys.stderr, and a warning printed to it
    went to stdout: --json's one document began with "warning: HEAD is detached ..."."""
    root = indexed_example_kb.root
    git(root, "checkout", "-q", "--detach")
    proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "--json", "save", "saved with 2>&-",
                           "-e", "shop.orders"], stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2),
                          text=True, env={**os.environ, "SLAYER_KB_SERVER": "off"}, timeout=120)
    assert (proc.returncode, json.loads(proc.stdout)["memory_id"]) == (0, "27")


def test_a_formula_python_warns_of_prints_only_its_error(example_kb_read_only: KnowledgeBase,
                                                         invoke_cli: CliRunner) -> None:
    """Python warns of '1if' as it parses ('invalid decimal literal'), and the warning went to
    stderr before the error: "<unknown>:1: SyntaxWarning: invalid decimal literal". Warnings are
    printed here as a process prints them, to the command's stderr (pytest would keep them)."""
    def shown(message: Warning | str, category: type[Warning], filename: str, lineno: int,
              file: object = None, line: str | None = None) -> None:
        sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

    query = json.dumps({"source_model": "orders", "measures": [{"formula": "1if amount:sum"}]})
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = shown
        proc = invoke_cli("--kb", example_kb_read_only.root, "save", "x", "--query", query)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: measures[0].formula: Invalid Mode-B expression '1if amount:sum': expected 'else' after 'if' "
        "expression (<unknown>, line 1)\n"))


@pytest.mark.parametrize("formula", ["coalesce(amount, distinct (amount))", "sum(amount) / f(x=distinct (amount))"])
def test_distinct_opening_a_later_argument_is_refused_as_slayer_refuses_it(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner, formula: str) -> None:
    # Python reads 'distinct (amount)' as a call, so the formula parses: only querychecks'
    # _DISTINCT_LATER tells it from count(distinct x), the one place SLayer takes DISTINCT.
    query = json.dumps({"source_model": "orders", "measures": [{"formula": formula, "name": "m"}]})
    proc = invoke_cli("--kb", example_kb_read_only.root, "save", "Distinct", "--query", query)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        f"Error: measures[0].formula: Invalid Mode-B expression {formula!r}: DISTINCT is supported only as "
        "count(distinct x), i.e. count_distinct(x).\n"))


def test_a_link_a_file_name_or_a_padded_id_given_as_an_id_names_the_id(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    # An agent copies the link from a memory's entities, or a person the file name from a pull
    # request: the errors said only which characters ids may not hold.
    root = example_kb_read_only.root
    for given, what in (("memory:7", "a link to a memory"), ("memories/7.yaml", "a memory's file"),
                        (" 7\n", "an id with blanks around it")):
        for command in (("get",), ("forget",), ("update", "--title", "T"), ("timeline",)):
            proc = invoke_cli("--kb", root, "--json", *command[:1], given, *command[1:])
            message = f"'{ascii(given)[1:-1]}' is {what}, not a memory id: give the id alone, '7'."
            assert (proc.returncode, json_of(proc), proc.stderr) == (
                1, {"error": {"type": "invalid_id", "message": message}}, f"Error: {message}\n")
    # A memory's file in any folder, as copied from a pull request of a KB in a sub-folder.
    message = "'kb/memories/7.yaml' is a memory's file, not a memory id: give the id alone, '7'."
    assert invoke_cli("--kb", root, "get", "kb/memories/7.yaml").stderr == f"Error: {message}\n"
    # The id shown as it is typed, as the value given is: an escaped 'caf\xe9' is no id to give.
    message = "'memory:café' is a link to a memory, not a memory id: give the id alone, 'café'."
    assert invoke_cli("--kb", root, "get", "memory:café").stderr == f"Error: {message}\n"
    # A file that is not a memory's (the '.orig' a `--force` leaves, a note, a folder's name) is
    # no id given as its file: the plain refusal, naming no id.
    for given in ("memories/7.yaml.orig", "memories/notes.txt", "memories/7"):
        proc = invoke_cli("--kb", root, "get", given)
        assert (proc.returncode, proc.stderr) == (1, (
            f"Error: Memory id '{given}' is not a valid id (it contains '/'), so no memory has it; give the id of the "
            "memory to show (search and list show the ids). An id is letters, digits, '.', '_' or '-', starting with "
            "a letter or digit: 12, kb.paid-revenue.\n"))


@pytest.mark.parametrize(("argv", "name"), [(["save", "-", "--query", "-"], "LEARNING"),
                                            (["save", "--content", "-", "--query", "-"], "--content"),
                                            (["search", "-", "--query", "-"], "QUESTION")])
def test_standard_input_feeds_one_argument(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner,
                                           argv: list[str], name: str) -> None:
    """The text read all of standard input, and the query was then told it was not JSON."""
    proc = invoke_cli("--kb", example_kb_read_only.root, *argv, input='{"source_model": "orders"}')
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.endswith(f"Error: {name} and --query are both '-', and standard input can feed only one of them: "
                                "give the query inline or as @FILE.\n")
