"""What a careless or hostile user does that the other suites did not: a setting in the
environment that is no number, a knowledge base on a read-only file system. Each gets one
``Error: ...`` line that names the problem and the fix, exit 1, no traceback, and nothing
written."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from mcp import ClientSession

from slayer_kb import KnowledgeBase
from slayer_kb.daemon import relay
from testing import CliRunner, Watcher, git, json_of
from testing.mcp import call, call_json, with_server_in_process

LIMIT_ERROR = ("Error: SLAYER_KB_MAX_CONTENT is {value!r}, not a number of bytes; set it to a whole number "
               "above 0 (the default is 65536) or unset it.\n")


@pytest.mark.parametrize("value", ["abc", "0", "-5", "1e6", "６５５３６"])
def test_a_size_limit_that_is_no_number_is_an_error(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                     value: str) -> None:
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    env = {"SLAYER_KB_MAX_CONTENT": value}
    saved = invoke_cli("--kb", root, "save", "Refunds are netted", "-e", "shop.orders.amount", env=env)
    assert (saved.returncode, saved.stdout, saved.stderr) == (1, "", LIMIT_ERROR.format(value=value))
    found = invoke_cli("--kb", root, "--json", "search", "refunds", env=env)
    assert (found.returncode, json_of(found)) == (1, {"error": {
        "type": "invalid_input", "message": LIMIT_ERROR.format(value=value).removeprefix("Error: ").strip()}})
    assert git(root, "rev-parse", "HEAD") == head


def test_a_size_limit_in_bytes_is_taken(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    proc = invoke_cli("--kb", root, "save", "twelve bytes", "-e", "shop.orders.amount",
                      env={"SLAYER_KB_MAX_CONTENT": " 11 "})
    assert (proc.returncode, proc.stderr) == (1, "Error: learning is 12 bytes; the limit is 11 bytes. Split it into "
                                                 "several memories or raise the limit with SLAYER_KB_MAX_CONTENT (bytes).\n")


def served(watcher: Watcher) -> int:
    """How many commands the server answered (its status, as ``server status`` asks for it)."""
    status = relay.control(watcher.root, "status")
    assert status is not None, watcher.lines
    return int(status["served"])


# The two tests below write nothing (the module's watcher_read_only fails the module if one
# did) and count the commands the server answered from before theirs.


def test_a_relayed_write_with_a_bad_size_limit_is_an_error(watcher_read_only: Watcher, run_cli: CliRunner) -> None:
    # A write runs in its turn, in its client's environment. (A read the server runs beside a
    # write uses no limit and reads none of its client's environment.)
    watcher = watcher_read_only
    before = served(watcher)
    head = git(watcher.root, "rev-parse", "HEAD")
    proc = run_cli("--kb", watcher.root, "save", "Refunds are netted", "-e", "shop.orders.amount",
                   env={"SLAYER_KB_MAX_CONTENT": "abc"})
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", LIMIT_ERROR.format(value="abc"))
    assert git(watcher.root, "rev-parse", "HEAD") == head
    assert served(watcher) == before + 1  # relayed


@pytest.mark.parametrize("remote", ["--upload-pack=touch pwned", "", "two words", "origin:main"])
def test_sync_refuses_what_is_no_remote_name(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path,
                                             remote: str) -> None:
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", root, "sync", "--remote", remote, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        f"Error: {remote!r} is not a git remote's name (empty, starting with '-', or holding a space or one "
        "of ~^:?*[\\); pass --remote with one that 'git remote -v' lists.\n"))
    assert not (tmp_path / "pwned").exists() and not (root / "pwned").exists()
    assert git(root, "rev-parse", "HEAD") == head


# A memory an agent wrote, read by a person at a terminal: an OSC sequence that retitles the
# window (OSC 52 would write the clipboard), a CSI that clears the screen, a bell, a backspace
# and a lone carriage return that would overwrite what the line showed; a bidi override that
# would show the rest of the line reversed.
HOSTILE_TEXT = "Refunds \x1b]0;pwned\x07are \x1b[2Jnetted\x08 \rfake\x7f\x9b\r\n2nd \u202eline\tok"
SHOWN_TEXT = "Refunds \\x1b]0;pwned\\x07are \\x1b[2Jnetted\\x08 \\x0dfake\\x7f\\x9b\n2nd \\u202eline\tok"


def test_control_characters_in_a_memory_never_reach_the_terminal(indexed_example_kb: KnowledgeBase,
                                                                  invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "save", HOSTILE_TEXT, "-e", "shop.orders.amount", "--id", "kb.hostile", check=True)
    got = invoke_cli("--kb", root, "get", "kb.hostile", check=True)
    assert got.stdout.endswith(f"\n\n{SHOWN_TEXT}\n"), got.stdout
    found = invoke_cli("--kb", root, "search", "netted", "-e", "shop.orders.amount", check=True)
    # a hit's summary is one line: the whitespace (tab, newlines, the carriage return) made single spaces
    assert "[kb.hostile] Refunds \\x1b]0;pwned\\x07are \\x1b[2Jnetted\\x08 fake\\x7f\\x9b 2nd \\u202eline ok\n" in (
        found.stdout)
    for proc in (got, found):
        assert not any(ord(ch) < 0x20 and ch not in "\n\t" or 0x7f <= ord(ch) < 0xa0 or ch == "\u202e"
                       for ch in proc.stdout)
    # --json keeps the text exactly (JSON escapes the controls itself).
    assert json_of(invoke_cli("--kb", root, "--json", "get", "kb.hostile", check=True))["learning"] == HOSTILE_TEXT


def test_control_characters_in_an_error_never_reach_the_terminal(indexed_example_kb: KnowledgeBase,
                                                                 invoke_cli: CliRunner) -> None:
    proc = invoke_cli("--kb", indexed_example_kb.root, "show", "kb.x", "--rev", "HEAD\x1b]0;pwned\x07")
    assert (proc.returncode, proc.stderr) == (1, "Error: Unknown revision 'HEAD\\x1b]0;pwned\\x07': give a commit, "
                                                 f"branch or tag (see 'git -C {indexed_example_kb.root} log').\n")


def test_edit_with_no_editor_set_and_no_terminal_says_what_to_do(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    root = indexed_example_kb.root
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", root, "edit", "5")
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: No editor to run: $VISUAL and $EDITOR are unset, and vi needs a terminal, which this is not. "
        "Set EDITOR to a command that edits the file it is given, or change the memory with "
        f"'slayer-kb --kb {root} update 5 --content -' (the new text on stdin; MCP: mem_update).\n"))
    assert git(root, "rev-parse", "HEAD") == head
    # Pasted as printed ('--content ...' committed the text "..." over memory 5), it changes nothing.
    advised = proc.stderr.split("change the memory with '", 1)[1].split("'", 1)[0]
    pasted = invoke_cli(*shlex.split(advised)[1:], input="")
    assert (pasted.returncode, pasted.stderr) == (
        1, "Error: learning is empty: write what was learned (it is required and must not be blank).\n")
    assert git(root, "rev-parse", "HEAD") == head
    assert list((root / ".slayer-kb" / "tmp").iterdir()) == []  # no draft left behind


@pytest.mark.parametrize("inside", [".", "memories", "sessions/deeper", ".slayer-kb"])
def test_an_export_into_the_kb_itself_is_refused(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                 inside: str) -> None:
    root = indexed_example_kb.root
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".git" not in p.parts)
    proc = invoke_cli("--kb", root, "export-slayer", root / inside)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        f"Error: {root / inside} is the knowledge base's own folder (or inside its memories, sessions, datasources, "
        "models, .slayer-kb): the export would write its memories/<id>.md files among the KB's. Export to another "
        "folder, e.g. ./slayer-storage.\n"))
    after = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if ".git" not in p.parts)
    assert after == before
    # beside the KB's folders, in a folder of its own, it writes
    written = invoke_cli("--kb", root, "export-slayer", root / "slayer-storage", check=True)
    assert written.stdout.startswith(f"Wrote {len(list((root / 'memories').glob('*.yaml')))} memories to ")


def test_an_export_whose_memories_folder_links_into_the_kb_is_refused(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path) -> None:
    """A storage folder whose memories/ is a link to the KB's own (set up to share them): the
    export wrote its .md files and its record among the KB's memory files, and validate failed."""
    root = indexed_example_kb.root
    (tmp_path / "storage").mkdir()
    (tmp_path / "storage" / "memories").symlink_to(root / "memories")
    before = sorted(p.name for p in (root / "memories").iterdir())
    proc = invoke_cli("--kb", root, "export-slayer", tmp_path / "storage")
    link = tmp_path / "storage" / "memories"
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        f"Error: {link} leads to {root / 'memories'}, inside the knowledge base: the export would write its <id>.md "
        f"files among the KB's own files. Remove the link {link} (the export makes the folder), or export to another "
        "folder, e.g. ./slayer-storage.\n"))
    assert sorted(p.name for p in (root / "memories").iterdir()) == before


@pytest.mark.parametrize("inside", [".git", ".git/exports"])
def test_an_export_into_gits_own_folder_is_refused(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                   inside: str) -> None:
    """`export-slayer .git` wrote .git/memories/<id>.md, among git's data, where no git command shows it."""
    root = indexed_example_kb.root.resolve()
    before = sorted(p.name for p in (root / ".git").iterdir())
    proc = invoke_cli("--kb", root, "export-slayer", root / inside)
    where = "git's own folder" if inside == ".git" else f"inside git's own folder ({root / '.git'})"
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        f"Error: {root / inside} is {where} of the repository at {root}, not a place for files: the export's files "
        "there would be mixed into git's data, where no git command shows them. Give a folder in the working tree, "
        f"e.g. {root}/slayer-storage.\n"))
    assert sorted(p.name for p in (root / ".git").iterdir()) == before


LIMIT_USAGE = ("Invalid value for '--limit' / '--max-results': 'abc' is not a valid integer range. "
               "Try 'slayer-kb search --help' for help.")


@pytest.mark.parametrize("args, message", [
    (("search", "--limit", "abc", "--json"), LIMIT_USAGE),
    (("--json", "search", "--limit", "abc"), LIMIT_USAGE),
    (("search", "--bogus", "--json"), "No such option '--bogus'. Try 'slayer-kb search --help' for help."),
    (("--json", "--bogus", "search"), "No such option '--bogus'. Try 'slayer-kb --help' for help."),
    (("--json", "nosuch"), "No such command 'nosuch'. Try 'slayer-kb --help' for help."),
    (("get", "--json"), "Missing argument 'ID'. Try 'slayer-kb get --help' for help."),
])  # fmt: skip
def test_a_usage_error_with_json_prints_the_error_document(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                                           args: tuple[str, ...], message: str) -> None:
    proc = invoke_cli("--kb", indexed_example_kb.root, *args)
    assert (proc.returncode, json_of(proc)) == (2, {"error": {"type": "usage", "message": message}})
    # stderr as without --json: click's usage text, its hint and the error
    plain = invoke_cli("--kb", indexed_example_kb.root, *(arg for arg in args if arg != "--json"))
    assert (plain.returncode, plain.stdout) == (2, "")
    assert proc.stderr == plain.stderr
    assert proc.stderr.startswith("Usage: slayer-kb") and f"\nError: {message.split(' Try ')[0]}\n" in proc.stderr


def test_json_after_a_double_dash_is_no_json_option(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    proc = invoke_cli("--kb", indexed_example_kb.root, "search", "--limit", "abc", "--", "--json")
    assert (proc.returncode, proc.stdout) == (2, "")


def test_a_relayed_usage_error_with_json_prints_the_error_document(watcher_read_only: Watcher,
                                                                    run_cli: CliRunner) -> None:
    root = watcher_read_only.root
    before = served(watcher_read_only)
    proc = run_cli("--kb", root, "search", "--limit", "abc", "--json")
    assert (proc.returncode, json_of(proc)) == (2, {"error": {"type": "usage", "message": LIMIT_USAGE}})
    assert proc.stderr.endswith("\nError: Invalid value for '--limit' / '--max-results': 'abc' is not a valid "
                                "integer range.\n")
    assert served(watcher_read_only) == before + 1  # relayed


def test_a_forgotten_broken_file_is_no_longer_warned_of_by_the_server(watcher: Watcher, run_cli: CliRunner) -> None:
    # The server's file monitor sees nothing of its own commit: what it warns of after one comes
    # from the index's report of that commit's files.
    root = watcher.root
    for name in ("901", "902"):
        (root / "memories" / f"{name}.yaml").write_text("learning: [unclosed\n")
    git(root, "add", "memories")
    git(root, "commit", "-q", "-m", "two broken files")
    before = json_of(run_cli("--kb", root, "--json", "list"))["warnings"]
    assert [w.split(":")[0] for w in before] == ["memories/901.yaml", "memories/902.yaml"]
    forgot = run_cli("--kb", root, "--json", "forget", "901")
    assert (forgot.returncode, json_of(forgot)["deleted_id"]) == (0, "901"), forgot.stderr
    assert json_of(run_cli("--kb", root, "--json", "list"))["warnings"] == before[1:]
    assert run_cli("--kb", root, "list").stdout.endswith(f"\nwarning: {before[1]}\n")
    assert '"served": 4' in run_cli("--kb", root, "--json", "server", "status").stdout  # all relayed


def test_a_forgotten_broken_file_is_no_longer_warned_of_by_the_mcp_server(indexed_example_kb: KnowledgeBase) -> None:
    root = indexed_example_kb.root
    for name in ("901", "902"):
        (root / "memories" / f"{name}.yaml").write_text("learning: [unclosed\n")
    git(root, "add", "memories")
    git(root, "commit", "-q", "-m", "two broken files")

    async def script(session: ClientSession) -> None:
        before = (await call_json(session, "search", question="refunds"))["warnings"]
        skipped = [w for w in before if w.endswith("(skipped)")]
        assert [w.split(":")[0] for w in skipped] == ["memories/901.yaml", "memories/902.yaml"]
        await call(session, "forget_memory", id="901")
        after = (await call_json(session, "search", question="refunds"))["warnings"]
        assert [w for w in after if w.endswith("(skipped)")] == skipped[1:]

    with_server_in_process(root, script)


@pytest.mark.parametrize("variable, default, unit", [
    ("SLAYER_KB_BUILD_WORKERS", 2, "model runs"), ("SLAYER_KB_ENCODER_THREADS", 1, "threads")])
def test_an_encoder_setting_that_is_no_number_is_an_error(indexed_example_kb: KnowledgeBase, run_cli: CliRunner,
                                                          variable: str, default: int, unit: str) -> None:
    # Refused by every command that opens the KB, not only where the sentence model is run or
    # loaded: in the server, a build pass failed, said only in its log. In processes of their
    # own: this one may hold an encoder an earlier test loaded.
    root = indexed_example_kb.root
    message = (f"{variable} is 'abc', not a number of {unit}; set it to a whole number above 0 "
               f"(the default is {default}) or unset it.")
    env = {variable: "abc", "SLAYER_KB_NO_ENCODER": "", "SLAYER_KB_NO_FILLER": "1"}
    for command in ("get", "reindex"):
        proc = run_cli("--kb", root, command, *(["1"] if command == "get" else []), env=env)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n")
    proc = run_cli("--kb", root, "--json", "reindex", env=env)
    assert (proc.returncode, json_of(proc)) == (1, {"error": {"type": "invalid_input", "message": message}})


CACHE_ERROR = ("SLAYER_KB_CACHE is 'abc', a relative path: set it to an absolute path (such as {home}/.cache/"
               "slayer-kb) or unset it (the default is $XDG_CACHE_HOME/slayer-kb, else ~/.cache/slayer-kb).")


def test_a_relative_vector_cache_is_refused(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    # It made abc/ in the folder the command ran in: here, the KB's work tree.
    root = indexed_example_kb.root
    message = CACHE_ERROR.format(home=Path("~").expanduser())
    head = git(root, "rev-parse", "HEAD")
    for args in (("search", "refunds"), ("save", "Refunds are netted", "-e", "shop.orders.amount")):
        proc = invoke_cli("--kb", root, *args, cwd=root, env={"SLAYER_KB_CACHE": "abc"})
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n")
    proc = invoke_cli("--kb", root, "--json", "get", "1", cwd=root, env={"SLAYER_KB_CACHE": "abc"})
    assert (proc.returncode, json_of(proc)) == (1, {"error": {"type": "invalid_input", "message": message}})
    assert not (root / "abc").exists() and git(root, "status", "--porcelain") == ""
    assert git(root, "rev-parse", "HEAD") == head


def test_a_vector_cache_under_home_is_taken(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner,
                                            tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {"HOME": str(home), "SLAYER_KB_CACHE": "~/vectors", "SLAYER_KB_NO_ENCODER": "", "SLAYER_KB_NO_FILLER": "1"}
    proc = invoke_cli("--kb", indexed_example_kb.root, "--json", "reindex", env=env)
    assert (proc.returncode, json_of(proc)["indexed"]) == (0, 34), proc.stderr
    assert (home / "vectors" / "sentence-vectors.db").is_file()


def test_list_with_a_filter_no_memory_matches_says_so(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    proc = invoke_cli("--kb", root, "list", "--type", "bogus")
    assert (proc.returncode, proc.stdout) == (
        0, "No memories.\nwarning: No memory has type 'bogus'; check the name, or list without it.\n")
    proc = invoke_cli("--kb", root, "--json", "list", "--type", "bogus", "--project", "Nope ")
    assert (proc.returncode, json_of(proc)) == (0, {"memories": [], "warnings": [
        "No memory has type 'bogus' or project 'nope'; check the name, or list without it."]})
    # A filter some memories match, with none left after the others, is an answer, not a mistake.
    proc = invoke_cli("--kb", root, "--json", "list", "--type", "decision", "--scope", "personal")
    assert (proc.returncode, json_of(proc)) == (0, {"memories": []})


def test_get_of_a_broken_file_names_the_fix(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    (root / "memories" / "901.yaml").write_text("learning: [unclosed\n")
    (root / "memories" / "902.yaml").write_text("title: no learning\n")
    proc = invoke_cli("--kb", root, "get", "901", cwd=root)  # where the fix it names runs as printed
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", (
        "Error: memories/901.yaml:2: invalid YAML: did not find expected ',' or ']'. Edit memories/901.yaml to fix "
        "it, then check it with 'slayer-kb validate' (or run 'slayer-kb edit 901', which checks it on close).\n"))
    proc = invoke_cli("--kb", root, "--json", "get", "902", cwd=root)
    assert (proc.returncode, json_of(proc)) == (1, {"error": {"type": "invalid_file", "message": (
        "memories/902.yaml:1: missing required key 'learning'. Edit memories/902.yaml to fix it, then check it "
        "with 'slayer-kb validate' (or run 'slayer-kb edit 902', which checks it on close).")}})
    # The check it names finds the problem.
    checked = invoke_cli("--kb", root, "validate")
    assert checked.returncode == 1 and "memories/901.yaml:2: invalid YAML" in checked.stdout + checked.stderr


def test_a_session_file_edited_into_a_list_names_the_fix(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A command that needs a hand-broken session file says how to fix it, as ``get`` does of a
    memory; it used to name the problem alone. Nothing is written."""
    root = indexed_example_kb.root
    path = "sessions/ses-20261009-payments-recon.yaml"
    (root / path).write_text("- a list\n")
    head = git(root, "rev-parse", "HEAD")
    proc = invoke_cli("--kb", root, "--json", "save-prompt", "a prompt", "--session", "ses-20261009-payments-recon")
    assert (proc.returncode, json_of(proc)) == (1, {"error": {"type": "invalid_file", "message": (
        f"{path}:1: a session file must be a mapping of keys (project:, started_at:, ...). Edit {root}/{path} to fix "
        f"it, then check it with 'slayer-kb --kb {root} validate' (or put back its committed version: git -C {root} "
        f"checkout -- {path}).")}})
    assert (git(root, "rev-parse", "HEAD"), (root / path).read_text()) == (head, "- a list\n")


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from slayer_kb.search import sentences

    monkeypatch.delenv("SLAYER_KB_CACHE")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert sentences.folder() == tmp_path / ".cache" / "slayer-kb"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert sentences.folder() == tmp_path / "xdg" / "slayer-kb"


def test_settings_given_without_home_take_the_accounts_home_not_the_processs(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A server started without HOME, its filler beside a command in its turn: the cache is
    under the account's home, not under the home of the client whose environment the command
    swapped in."""
    import os
    import pwd

    from slayer_kb.search import cachedir, switches

    monkeypatch.setenv("HOME", str(tmp_path / "clients-home"))
    with switches.given({}):
        assert cachedir.folder() == Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "slayer-kb"
    with switches.given({"HOME": str(tmp_path / "servers-home")}):
        assert cachedir.folder() == tmp_path / "servers-home" / ".cache" / "slayer-kb"
