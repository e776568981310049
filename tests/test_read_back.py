"""What agents and reviewers read back from a KB with hand-broken files and from odd values
given to a write: a skipped memory file named in the words ``get`` uses for it, counted where
the memories are counted, and a value with nothing visible in it taken as blank wherever a blank
is. Each case runs the command in this process (``invoke_cli``) and checks what it prints, its
exit code and what it committed."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from slayer_kb import KnowledgeBase
from slayer_kb.mcp import tools
from testing import CliRunner, commit_all, git, json_of

NOT_UTF8 = "memories/4.yaml: cannot be read: it is not UTF-8 text (invalid start byte at byte 0)"


def break_memory_files(root: Path) -> None:
    """Memory 4 made binary, memory 5 given a key no memory has; committed, as a bad merge would."""
    (root / "memories" / "4.yaml").write_bytes(b"\xff\xfe\x00bad")
    (root / "memories" / "5.yaml").write_text("learning: hi\nbogus_key: 1\n")
    commit_all(root, "hand-broken memory files")


SKIPPED = [f"{NOT_UTF8} (skipped)",
           "memories/5.yaml:2: unknown key 'bogus_key' (allowed keys: title, type, learning, description, "
           "entities, query, project, scope, topic_key, session_id, revision_count, duplicate_count, "
           "created_at, updated_at, deleted_at) (skipped)"]


def test_a_skipped_binary_memory_file_is_named_as_get_names_it(indexed_example_kb: KnowledgeBase,
                                                                invoke_cli: CliRunner) -> None:
    """``list``, ``search`` (and ``reindex``) named a binary file with Python's codec message
    ('utf-8' codec can't decode byte 0xff in position 0), where ``get`` and ``validate`` say it
    plainly."""
    root = indexed_example_kb.root
    break_memory_files(root)
    head = git(root, "rev-parse", "HEAD")
    got = invoke_cli("--kb", root, "get", "4")
    assert got.returncode == 1 and got.stderr.startswith(f"Error: {NOT_UTF8}. Edit ")
    assert json_of(invoke_cli("--kb", root, "--json", "list"))["warnings"] == SKIPPED
    assert json_of(invoke_cli("--kb", root, "--json", "search", "refunds"))["warnings"][:2] == SKIPPED
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""


def test_stats_names_the_memory_files_it_could_not_count(indexed_example_kb: KnowledgeBase,
                                                         invoke_cli: CliRunner) -> None:
    """``stats`` (and ``mem_stats``) counted the readable memories only, without a word of the
    files it skipped, as ``list`` and ``search`` name them."""
    root = indexed_example_kb.root
    break_memory_files(root)
    head = git(root, "rev-parse", "HEAD")
    stats = invoke_cli("--kb", root, "--json", "stats")
    assert stats.returncode == 0 and json_of(stats)["memories"] == 32
    assert json_of(stats)["warnings"] == SKIPPED
    shown = invoke_cli("--kb", root, "stats")
    assert shown.stdout.endswith("".join(f"\nwarning: {line}" for line in SKIPPED) + "\n")
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain") == ""


def test_an_update_to_a_title_of_nothing_visible_clears_it_as_a_blank_one_does(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``update --title ''`` (or blanks) clears a title, and a save refuses a title with nothing
    visible in it as blank; but an update stored a zero-width space or a control character as the
    title, which every listing then showed as an empty-looking one."""
    root = indexed_example_kb.root
    for title in ("\u200b", "\x01 \u200e"):
        updated = invoke_cli("--kb", root, "--json", "update", "25", "--title", title)
        assert updated.returncode == 0, updated.stderr
        assert (json_of(updated)["title"], json_of(updated)["action"]) == (None, "updated")
        assert "title:" not in (root / "memories" / "25.yaml").read_text()
        git(root, "reset", "-q", "--hard", "HEAD~1")
    # Unicode's default-ignorable characters (a variation selector, the grapheme joiner, Hangul
    # fillers, Khmer's inherent vowels, a tag) and the braille blank print nothing either.
    for title in ("\u200b", "\ufe0f", "\U000e0100", "\u034f", "\u3164\uffa0", "\u115f\u1160", "\u17b4", "\U000e0041",
                  "\u2800"):
        refused = invoke_cli("--kb", root, "save", "x", "--title", title)
        assert (refused.returncode, refused.stderr) == (1, "Error: title is required and must not be blank.\n"), title
        refused = invoke_cli("--kb", root, "save", title, "--title", "T")
        assert (refused.returncode, refused.stderr) == (
            1, "Error: learning is empty: write what was learned (it is required and must not be blank).\n"), title
    # A format character that prints a sign of its own (U+06DD, the end of ayah) is a title.
    updated = invoke_cli("--kb", root, "--json", "update", "25", "--title", "\u06dd")
    assert (json_of(updated)["title"], json_of(updated)["action"]) == ("\u06dd", "updated")
    saved = json_of(invoke_cli("--kb", root, "--json", "save", "x", "--title", " \u06dd "))
    assert (saved["action"], json_of(invoke_cli("--kb", root, "--json", "get", saved["memory_id"]))["title"]) == (
        "created", "\u06dd")


def test_a_long_catalog_name_or_revision_is_quoted_back_cut_to_100_characters(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """An error quotes at most 100 characters of a value it was given, with its length; but an
    unknown leaf or model of a delete, and an unknown revision (``show --rev``, ``review``,
    ``validate --against``, ...), came back whole: 5,000 characters given, 5,000 printed."""
    root = example_kb_read_only.root
    long = "x" * 300
    cut = f"{'x' * 100!r}... (300 characters)"
    for args, error in (
            (("delete-leaf", f"shop.orders.{long}"),
             f"Model 'shop.orders' has no column, measure or aggregation {cut}. Its leaves: "),
            (("delete-model", long), f"Unknown model {cut}: no datasource has a model of that name."),
            (("delete-model", f"shop.{long}"), f"Unknown model {cut} in datasource 'shop'. Its models: "),
            (("show", "12", "--rev", long), f"Unknown revision {cut}: give a commit, branch or tag"),
            # Not a name of the catalog's form at all: quoted back whole, 10 KB given, 10 KB told.
            (("delete-leaf", long), f"{cut} is not DS.MODEL.LEAF: give it as the catalog names it, e.g. "
                                    "shop.orders.amount."),
            (("delete-datasource", "x/" * 150), f"{'x/' * 50!r}... (300 characters) is a path, not a catalog name: "
                                                "give DS as the catalog names it, e.g. shop."),
    ):
        proc = invoke_cli("--kb", root, "--json", *args)
        assert proc.returncode == 1 and proc.stderr.startswith(f"Error: {error}"), (args, proc.stderr)
        assert json_of(proc)["error"]["message"].startswith(error) and len(proc.stderr) < 600


def test_a_missing_choice_under_json_is_named_in_one_line(invoke_cli: CliRunner) -> None:
    """click lists the choices of a missing argument one per line, tab-indented; under --json
    that came out as 'Choose from:\\n\\tbash,\\n\\tzsh,\\n\\tfish Try ...', where every other usage
    error is one line."""
    proc = invoke_cli("--json", "completion")
    assert proc.returncode == 2 and "Choose from:\n\tbash,\n" in proc.stderr  # click's own text, as ever
    assert json_of(proc) == {"error": {"type": "usage", "message": (
        "Missing argument '{bash|zsh|fish}'. Choose from: bash, zsh, fish. Try 'slayer-kb completion --help' "
        "for help.")}}


def test_sync_to_a_long_remote_name_it_lacks_quotes_it_cut(example_kb_read_only: KnowledgeBase,
                                                           invoke_cli: CliRunner) -> None:
    """``sync --remote`` with a name no remote has printed the name twice, whole (10,000 characters
    for a 5,000-character name); it is quoted cut, and the fix names it NAME. In a repository
    with no remote it advised passing --remote, which could name none: it says so."""
    root = example_kb_read_only.root
    proc = invoke_cli("--kb", root, "--json", "sync", "--remote", "r" * 300)
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: No git remote named {'r' * 100!r}... (300 characters), and this repository has no remote: add one "
        f"(git -C {root} remote add NAME URL), then sync.\n"))
    assert json_of(proc)["error"]["type"] == "invalid_input"
    # A shorter name is given whole, quoted so that the step works when pasted.
    proc = invoke_cli("--kb", root, "sync", "--remote", "o;rm")
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: No git remote named 'o;rm', and this repository has no remote: add one (git -C {root} remote add "
        "'o;rm' URL), then sync.\n"))


def test_timeline_of_a_broken_memory_file_says_how_to_fix_it_as_get_does(indexed_example_kb: KnowledgeBase,
                                                                         invoke_cli: CliRunner) -> None:
    """``get 5`` of a file with a key no memory has names the fix (edit it, validate); ``timeline
    5`` named the problem only."""
    root = indexed_example_kb.root
    break_memory_files(root)
    got = invoke_cli("--kb", root, "get", "5")
    assert got.returncode == 1 and f"Edit {root}/memories/5.yaml to fix it" in got.stderr
    for args in (("timeline", "5"), ("--json", "timeline", "5")):
        proc = invoke_cli("--kb", root, *args)
        assert (proc.returncode, proc.stderr) == (1, got.stderr), args


def test_import_slayer_of_a_slayer_kb_knowledge_base_says_it_is_one(example_kb_read_only: KnowledgeBase,
                                                                     invoke_cli: CliRunner, tmp_path: Path) -> None:
    """``import-slayer`` given a slayer-kb KB (memories/<id>.yaml, not SLayer's memories/<id>.md)
    said 'From kb: 0 imported.' and exited 0: the memories the user meant to bring were not read,
    unsaid. It says what the folder is and the export that makes SLayer's form of it."""
    source = example_kb_read_only.root
    target = tmp_path / "other"
    (target / "memories").mkdir(parents=True)
    proc = invoke_cli("--kb", source, "--json", "import-slayer", source)
    assert (proc.returncode, proc.stderr) == (1, (
        f"Error: {source} is a slayer-kb knowledge base (memories/<id>.yaml), not a SLayer storage folder "
        f"(memories/<id>.md): write its memories as SLayer's with 'slayer-kb --kb {source} export-slayer DIR', "
        "then import DIR.\n"))
    assert json_of(proc)["error"]["type"] == "invalid_input"
    empty = invoke_cli("--kb", source, "--json", "import-slayer", target)  # SLayer's, with no memory yet
    assert empty.returncode == 0 and json_of(empty)["imported"] == []


def test_a_summary_over_the_limit_is_told_the_commands_that_keep_it(example_kb_read_only: KnowledgeBase,
                                                                     invoke_cli: CliRunner) -> None:
    """``session-end --summary`` over the limit told the command line's user to 'save the details
    with mem_session_summary or mem_save', tools a shell has not; it names the command, with the
    session (without it the details went to the project's default session)."""
    root = example_kb_read_only.root
    proc = invoke_cli("--kb", root, "--json", "session-end", "s1", "--summary", "-", input="word " * 14000)
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: summary is 69999 bytes; the limit is 65536 bytes. Keep the session's summary short; save the "
        f"details with 'slayer-kb --kb {root} save --title TITLE --session s1', each under the limit.\n"))


def test_show_of_a_broken_memory_file_says_how_to_fix_it_as_get_does(indexed_example_kb: KnowledgeBase,
                                                                     invoke_cli: CliRunner) -> None:
    """``show 5`` (the file as it is now) named the problem of a file with a key no memory has,
    without the fix ``get 5`` gives."""
    root = indexed_example_kb.root
    break_memory_files(root)
    got = invoke_cli("--kb", root, "get", "5")
    assert got.returncode == 1 and f"Edit {root}/memories/5.yaml to fix it" in got.stderr
    shown = invoke_cli("--kb", root, "--json", "show", "5")
    assert (shown.returncode, shown.stderr) == (1, got.stderr)


ID_FORM = "An id is letters, digits, '.', '_' or '-', starting with a letter or digit: 12, kb.paid-revenue."


def test_an_id_no_memory_can_have_is_told_what_an_id_is_not_to_choose_another(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``get .`` said "Memory id '.' is not a usable file name; choose another.", a save's advice
    for a new id: the user looking for a memory has none to choose. An id given to find a memory
    that no id can be is said to be no valid id, with the fix and what an id looks like."""
    root = example_kb_read_only.root
    for given, reason in ((".", "it names a folder, not a file"), ("..", "it names a folder, not a file"),
                          ("/", "it contains '/'"), ("-x", "it starts with '-'"),
                          ("a\u202eb", "it contains whitespace or an invisible/control character, U+202E")):
        proc = invoke_cli("--kb", root, "--json", "get", "--", given)
        message = (f"Memory id '{ascii(given)[1:-1]}' is not a valid id ({reason}), so no memory has it; give the id "
                   f"of the memory to show (search and list show the ids). {ID_FORM}")
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_id", "message": message}}, f"Error: {message}\n"), given
    proc = invoke_cli("--kb", root, "forget", "x" * 300)
    assert (proc.returncode, proc.stderr) == (1, (
        "Error: The id given is not a valid id (it is 300 bytes long; an id is at most 200 bytes), so no memory has "
        f"it; give the id of the memory to forget (search and list show the ids). {ID_FORM}\n"))
    # The id sync moved, and a link's id, are ids given to find a memory too.
    for args, fix in ((("renumber", "--accept", "."), "give the id sync said it moved"),
                      (("save", "x", "-e", "memory:."), "write memory:<id> with the id of a saved memory")):
        proc = invoke_cli("--kb", root, *args)
        assert (proc.returncode, proc.stderr) == (1, (
            f"Error: Memory id '.' is not a valid id (it names a folder, not a file), so no memory has it; {fix}. "
            f"{ID_FORM}\n")), args
    # A new id keeps a new id's advice.
    proc = invoke_cli("--kb", root, "save", "x", "-e", "orders", "--id", ".")
    assert (proc.returncode, proc.stderr) == (1, "Error: Memory id '.' is not a usable file name; choose another.\n")


TITLE_BREAK = ("title is one line, and this one breaks at U+{:04X}: a title heads the memory in every listing and "
               "names it in the commit. Write it on one line; the detail goes in the content.")


def test_a_title_of_two_lines_is_refused_with_the_fix(example_kb_read_only: KnowledgeBase,
                                                       invoke_cli: CliRunner) -> None:
    """``save --title 'a\\nb'`` was saved: every listing then showed ``a\\x0ab`` and the commit's
    subject ``a b``. A title is one line; a save, an update and the MCP tools refuse one that
    breaks (after the trim: a line break at its end is none), naming the break and the fix."""
    root = example_kb_read_only.root
    for title, code in (("a\nb", 0x0A), ("a\r\nb", 0x0D), ("a\u2028b", 0x2028), ("a\x0bb", 0x0B)):
        message = TITLE_BREAK.format(code)
        for args in (("save", "x", "--title", title), ("update", "25", "--title", title)):
            proc = invoke_cli("--kb", root, "--json", *args)
            assert (proc.returncode, json_of(proc), proc.stderr) == (
                1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n"), (args, title)
        for tool, arguments in (("mem_save", {"title": title, "content": "x"}),
                                ("mem_update", {"id": "25", "title": title})):
            reply = tools.call_tool(example_kb_read_only, tool, arguments)
            assert (reply.is_error, reply.text) == (True, message), tool


def test_a_control_or_bidi_character_in_a_refused_value_is_shown_escaped_in_every_reply(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``save -e`` of a reference holding U+202E (a right-to-left override) or an escape sequence
    put the raw character in the message under --json and in MCP's reply, where a reader lays
    the line out reversed or a terminal acts on it; stderr showed it escaped. Every error message
    shows it as stderr does."""
    root = example_kb_read_only.root
    rule = "(Each part between dots is a name: a letter or '_', then letters, digits, '_' or '-'.)"
    for ref, shown, fix in (("ord\u202eers.amount", "ord\\u202eers.amount", "U+202E: remove it, 'orders.amount'."),
                            ("ord\x1b]52;c;eA==\x07ers", "ord\\x1b]52;c;eA==\\x07ers", f"U+001B: remove it. {rule}"),
                            ("ord\u2066ers.x", "ord\\u2066ers.x", "U+2066: remove it, 'orders.x'.")):
        message = (f"'{shown}' contains an invalid identifier segment. It holds whitespace or an invisible/control "
                   f"character, {fix}")
        proc = invoke_cli("--kb", root, "--json", "save", "x", "-e", ref)
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "resolution", "message": message}}, f"Error: {message}\n"), ref
        reply = tools.call_tool(example_kb_read_only, "save_memory", {"learning": "x", "linked_entities": [ref]})
        assert (reply.is_error, reply.text) == (True, message), ref


def test_an_invisible_character_in_a_reference_is_named_as_an_ids_is(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A reference pasted from chat or docs holding a zero-width space, a direction mark or a
    soft hyphen was refused as "'orders.amount' contains an invalid identifier segment", the
    character raw (the reference read as valid), and a newline split the error over two lines:
    named as ids name it, the reference escaped, with its plain spelling."""
    root = example_kb_read_only.root
    holds = "contains an invalid identifier segment. It holds whitespace or an invisible/control character"
    for ref, message in (
            ("orders.amount\u200b", f"'orders.amount\\u200b' {holds}, U+200B: remove it, 'orders.amount'."),
            ("orders\u200e.amount", f"'orders\\u200e.amount' {holds}, U+200E: remove it, 'orders.amount'."),
            ("orders.\u00adamount", f"'orders.\\xadamount' {holds}, U+00AD: remove it, 'orders.amount'."),
            ("orders\namount", f"'orders\\namount' {holds}, U+000A: separate two references with a comma, or remove it.")):
        proc = invoke_cli("--kb", root, "save", "x", "-e", ref)
        assert (proc.returncode, proc.stdout, proc.stderr) == (1, "", f"Error: {message}\n"), ref
        assert json_of(invoke_cli("--kb", root, "--json", "save", "x", "-e", ref)) == {
            "error": {"type": "resolution", "message": message}}, ref
        reply = tools.call_tool(example_kb_read_only, "save_memory", {"learning": "x", "linked_entities": [ref]})
        assert (reply.is_error, reply.text) == (True, message), ref


def test_a_link_whose_id_is_no_id_is_told_alike_on_the_command_line_and_to_a_tool(
        example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A ``memory:`` link whose id cannot be an id: MCP's reply said "so no memory has it; None."."""
    message = ("Memory id '.' is not a valid id (it names a folder, not a file), so no memory has it; write "
               "memory:<id> with the id of a saved memory. An id is letters, digits, '.', '_' or '-', starting "
               "with a letter or digit: 12, kb.paid-revenue.")
    proc = invoke_cli("--kb", example_kb_read_only.root, "save", "x", "-e", "memory:.")
    reply = tools.call_tool(example_kb_read_only, "save_memory", {"learning": "x", "linked_entities": ["memory:."]})
    assert (proc.returncode, proc.stderr, reply.is_error) == (1, f"Error: {message}\n", True)
    assert message in reply.text and "None" not in reply.text


def test_a_long_value_click_refuses_is_quoted_cut(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """click quoted a value it refused whole (a 10 KB import path: 10 KB on stderr, 10 KB under
    --json), where every message of ours quotes its first 100 characters and its length."""
    root = example_kb_read_only.root
    long = "x" * 10_000
    cut = f"{'x' * 100!r}... (10000 characters)"
    for args, name, message in (
            (("import-slayer", long), "import-slayer", f"Invalid value for 'DIRECTORY': Directory {cut} does not exist."),
            (("list", "--scope", long), "list", f"Invalid value for '--scope': {cut} is not one of 'project', 'personal'."),
            (("list", f"--scope={long}"), "list", f"Invalid value for '--scope': {cut} is not one of 'project', "
                                                  "'personal'."),
            ((long,), "", f"No such command {cut}."),
            # An unknown option before the command; a path not UTF-8 (click shows its byte as U+FFFD).
            (("--" + long, "list"), "", f"No such option {'--' + 'x' * 98!r}... (10002 characters)."),
            (("import-slayer", "a\udcff" + long), "import-slayer",
             f"Invalid value for 'DIRECTORY': Directory 'a\\udcff{'x' * 98}'... (10002 characters) does not exist.")):
        proc = invoke_cli("--kb", root, "--json", *args)
        usage = f"slayer-kb {name}".strip()
        assert (proc.returncode, json_of(proc)) == (2, {"error": {"type": "usage", "message": (
            f"{message} Try '{usage} --help' for help.")}}), args
        assert proc.stderr.endswith(f"Try '{usage} --help' for help.\n\nError: {message}\n"), args


def test_an_engram_reply_quotes_what_it_echoes_as_go_does(example_kb_read_only: KnowledgeBase) -> None:
    """Engram's replies quote a query or title with Go's %q, which escapes every character Go
    does not print; JSON's quoting, used in its place, kept a right-to-left override raw in the
    reply an agent reads, and wrote an escape as \\u001b where Go writes \\x1b."""
    reply = tools.call_tool(example_kb_read_only, "mem_search", {"query": "zzqx\x1b[2J\u202e \"q\"\t\u00a0"})
    assert (reply.is_error, reply.text) == (False, 'No memories found for: "zzqx\\x1b[2J\\u202e \\"q\\"\\t\\u00a0"')


def test_an_import_keeps_a_title_of_two_lines_on_one_and_validate_names_one(example_kb: KnowledgeBase,
                                                                            invoke_cli: CliRunner,
                                                                            tmp_path: Path) -> None:
    """A title with a line break (Engram keeps one; so does a hand edit) made ``import-engram``
    and ``import-slayer`` skip the whole memory: an export imported back lost it. An import keeps
    the memory, the title on one line (each break a space), and says so naming the memory; a
    file holding one is named by ``validate``, with the fix."""
    root = example_kb.root
    memory = root / "memories" / "25.yaml"
    memory.write_text("title: 'two\n\n  lines\u2028  here'\n" + memory.read_text().partition("\n")[2])  # as fmt writes it
    commit_all(root, "a title of three lines, by hand")
    checked = invoke_cli("--kb", root, "validate")
    assert (checked.returncode, checked.stdout) == (1, (
        f"{memory}:1: title is one line, and this one breaks at U+000A (a save refuses it; an import makes each "
        "break a space): write it on one line, e.g. 'two lines here'\n1 problem in 1 file (40 files checked)\n"))
    folder = tmp_path / "exported"
    assert invoke_cli("--kb", root, "export-slayer", folder).returncode == 0
    proc = invoke_cli("--kb", root, "--json", "import-slayer", folder)
    got = json_of(proc)
    assert (proc.returncode, got["skipped"], got["warnings"]) == (0, 0, [
        f"{folder}/memories/25.md: memory 25's title broke a line (U+000A, U+2028); it is kept on one line, "
        "each break a space."])
    assert example_kb.read("25").title == "two lines here"
    engram = tmp_path / "engram.json"
    engram.write_text(json.dumps({"observations": [{"title": title, "content": f"content {n}"}
                                                   for n, title in enumerate(("a\rb", "a\u2028b", "a\x0bb"))]}))
    proc = invoke_cli("--kb", root, "--json", "import-engram", engram)
    got = json_of(proc)
    assert (proc.returncode, got["skipped"], got["warnings"]) == (0, 0, [
        f"engram.json: observation {n + 1}: memory {memory_id}'s title broke a line ({code}); it is kept on one "
        "line, each break a space." for n, (memory_id, code) in enumerate(zip(got["imported"], (
            "U+000D", "U+2028", "U+000B"), strict=True))])
    assert [example_kb.read(memory_id).title for memory_id in got["imported"]] == ["a b"] * 3


def test_an_import_says_a_title_kept_on_one_line_only_of_a_memory_it_wrote(example_kb: KnowledgeBase,
                                                                         invoke_cli: CliRunner,
                                                                         tmp_path: Path) -> None:
    """The warning that a title was put on one line was given before the checks that may skip the
    record: a duplicate observation was warned of as "memory N", the id the next observation then
    got, and a SLayer row skipped after (no created_at, an id clashing in letter case) was warned of
    as kept."""
    root = example_kb.root
    refund = "Refunds are counted on the day the refund settles, not the day the customer asked for it."
    engram = tmp_path / "engram.json"
    engram.write_text(json.dumps({"observations": [
        {"title": "Refund day", "content": refund},
        {"title": "Refund\nday", "content": refund, "scope": "team"},  # the same once on one line
        {"title": "Sandbox\norders", "content": "Orders placed in the sandbox store never count toward revenue."},
    ]}))
    got = json_of(invoke_cli("--kb", root, "--json", "import-engram", engram))
    first, second = got["imported"]
    assert (got["skipped"], got["warnings"]) == (1, [
        f"engram.json: observation 2 is a duplicate of observation 1 (imported as memory {first}): the same "
        "content, title, type, project and scope; skipped.",
        f"engram.json: observation 3: memory {second}'s title broke a line (U+000A); it is kept on one line, each "
        "break a space."])
    assert example_kb.read(second).title == "Sandbox orders"
    folder = tmp_path / "slayer"
    folder.mkdir()
    (folder / "memories.yaml").write_text(yaml.safe_dump([
        {"id": "refund-day", "title": "Refund\nday", "learning": refund},  # no created_at
        {"id": "sandbox", "title": "Sandbox\norders", "learning": "Sandbox orders are test orders.",
         "created_at": "2026-11-29T20:42:40Z"},
        {"id": "Sandbox", "title": "Sandbox\nrule", "learning": "Sandbox orders never reach revenue.",
         "created_at": "2026-11-29T20:42:40Z"},
    ]))
    got = json_of(invoke_cli("--kb", root, "--json", "import-slayer", folder))
    listing = f"{folder}/memories.yaml"
    clash = ("clashes with {!r} (ids differing only in letter case or Unicode normalisation collide on macOS and "
             "Windows); skipped.")
    assert (got["imported"], got["skipped"], got["warnings"]) == ([], 3, [
        f"{listing}[0]:1: missing required key 'created_at' (add created_at: 'YYYY-MM-DDTHH:MM:SSZ') (skipped)",
        f"memory 'sandbox' {clash.format('Sandbox')}", f"memory 'Sandbox' {clash.format('sandbox')}"])


def test_a_save_or_update_reply_quotes_the_title_as_go_does(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``Memory saved: "..."`` and ``Memory updated: #.. "..."`` put the title between quotes
    raw, where Engram's replies quote it with Go's %q: a quote in it ended the quoting early and a
    right-to-left override reached the agent raw."""
    title, shown = 'say "hi" \u202eevil\u00a0x', '"say \\"hi\\" \\u202eevil\\u00a0x"'
    saved = tools.call_tool(example_kb, "mem_save", {"title": title, "content": "a reply quoting test"})
    assert (saved.is_error, saved.text.splitlines()[0]) == (False, f"Memory saved: {shown} (manual)")
    proc = invoke_cli("--kb", example_kb.root, "--json", "save", "another reply test", "--title", title + "2")
    assert json_of(proc)["message"].splitlines()[0] == f"Memory saved: {shown[:-1]}2\" (manual)"
    updated = tools.call_tool(example_kb, "mem_update", {"id": "25", "title": title})
    assert (updated.is_error, updated.text) == (False, f"Memory updated: #25 {shown} (learning, scope=personal)")


def test_the_library_save_takes_a_title_as_every_other_save_does(example_kb: KnowledgeBase) -> None:
    """``KnowledgeBase.save_memory(..., title=)`` checked the title as given, where every other
    save redacts its private spans and trims it first: a line break inside a private span was
    refused, and ``'x  \\n'`` was stored with its blanks."""
    for title, stored in (("x <private>a\nb</private> y", "x [REDACTED] y"), ("x  \n", "x")):
        result = example_kb.save_memory("a library save", ["orders"], title=title)
        assert example_kb.read(result.memory_id).title == stored, title
