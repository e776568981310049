"""Engram's sessions and prompts as files in the KB (sessions.py): the layout, each write one
commit, passive capture, context and stats, validate / fmt / review, and the CLI commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.core import session as session_file
from slayer_kb.core.errors import ConflictError, InvalidInputError, MemoryFileError, NotFoundError
from slayer_kb.mcp.tools import call_tool
from slayer_kb.ops import capture, sessions
from slayer_kb.ops.fmt import fmt
from slayer_kb.ops.validate import validate
from testing import CliRunner, commit_all, git, json_of

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
LEARNINGS = """\
Fixed the refund report.

## Key Learnings:
1. **Refunds** are stored as negative `amount` rows in orders
2) too short to keep
3. The warehouse is rebuilt nightly at 02:00 UTC, so today is missing from wh

## Next steps
1. This numbered item is under another heading and is not read
"""


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def files_of(root: Path, rev: str = "HEAD") -> list[str]:
    return git(root, "show", "--name-only", "--format=", rev).split()


# -- the layout ----------------------------------------------------------------------------------


def test_start_writes_one_file_in_one_commit(empty_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    result = empty_kb.session_start("ses-1", "  Analytics ", "/work/analytics").to_json()
    started = result["session"]["started_at"]
    assert re.fullmatch(TIME, started)
    assert result == {"session": {"id": "ses-1", "project": "analytics", "directory": "/work/analytics",
                                  "started_at": started, "ended_at": None, "summary": None, "prompts": []},
                      "action": "started", "commit": git(empty_kb.root, "rev-parse", "HEAD").strip(), "warnings": []}
    assert (empty_kb.root / "sessions/ses-1.yaml").read_text() == (
        f"project: analytics\ndirectory: /work/analytics\nstarted_at: '{started}'\n"
    )
    assert subjects(empty_kb.root)[0] == "session: start ses-1"
    assert files_of(empty_kb.root) == ["sessions/ses-1.yaml"]
    # Starting it again keeps it, filling only what was empty; nothing to change is no commit.
    again = empty_kb.session_start("ses-1", "other", "/elsewhere").to_json()
    assert (again["action"], again["commit"], again["session"]["project"]) == ("unchanged", None, "analytics")
    # What was given and not used is said, not dropped unsaid.
    assert again["warnings"] == [
        "session 'ses-1' exists with project 'analytics', which it keeps: the project given ('other') is not "
        "used; give another session id for a session of its own",
        "session 'ses-1' exists with directory '/work/analytics', which it keeps: the directory given "
        "('/elsewhere') is not used; give another session id for a session of its own"]
    assert empty_kb.session_start("ses-1", "Analytics", "/work/analytics").warnings == []  # the same, said again
    for same in ("/work/analytics/", "/work/./analytics", "/work/api/../analytics"):  # the same folder, spelt otherwise
        kept = empty_kb.session_start("ses-1", None, same).to_json()
        assert (kept["warnings"], kept["session"]["directory"]) == ([], "/work/analytics"), same
    assert invoke_cli("--kb", empty_kb.root, "session-start", "ses-1", "--project", "other", check=True).stdout == (
        "Session \"ses-1\" started for project \"analytics\"\nwarning: session 'ses-1' exists with project 'analytics', "
        "which it keeps: the project given ('other') is not used; give another session id for a session of its own\n")
    bare = empty_kb.session_start("ses-2", None).to_json()
    filled = empty_kb.session_start("ses-2", "api", "/work/api").to_json()
    assert (filled["action"], filled["session"]["project"], filled["session"]["directory"]) == ("started", "api", "/work/api")
    assert filled["session"]["started_at"] == bare["session"]["started_at"]
    assert len(subjects(empty_kb.root)) == 4  # init, start ses-1, start ses-2, fill ses-2


def test_file_names_spell_every_id_portably(empty_kb: KnowledgeBase) -> None:
    for session_id, name in (("manual-save-my api", "manual-save-my%20api.yaml"), (".hidden", "%2Ehidden.yaml"),
                             ("-x", "%2Dx.yaml"), ("a/b:c", "a%2Fb%3Ac.yaml"), ("con", "%63on.yaml"),
                             ("ses\u00e9", "ses%C3%A9.yaml"), ("50%", "50%25.yaml"), ("v1.2", "v1.2.yaml")):
        assert session_file.file_name(session_id) == name
        assert session_file.id_of_file(name) == session_id
    assert session_file.id_of_file("has space.yaml") is None
    assert session_file.id_of_file("a%2fb.yaml") is None  # the canonical spelling is %2F
    empty_kb.save_prompt("Hello there", project="My API")
    assert (empty_kb.root / "sessions/manual-save-my%20api.yaml").is_file()
    empty_kb.session_start("ses-1", "p")
    with pytest.raises(ConflictError, match=r"^session id 'SES-1' differs only in letter case from the existing "
                                            r"session 'ses-1': their files collide on macOS and Windows checkouts\. "
                                            r"Use 'ses-1'\.$"):
        empty_kb.session_start("SES-1", "p")


@pytest.mark.parametrize(("call", "message"), [
    (lambda kb: kb.session_start("  ", "p"),
     "id is required and must not be blank: give the session's id (e.g. 'ses-2026-11-29-auth')."),
    (lambda kb: kb.session_start("x" * 201, "p"),
     "id is 201 characters long; the limit is 200. Use a shorter session id."),
    (lambda kb: kb.session_start("a\tb", "p"),
     "id contains U+0009, a control or invisible character; a session id is printable text such as "
     "'ses-2026-11-29-auth'."),
    (lambda kb: kb.session_start("ses", 12),
     "project must be a string, not a number."),
    (lambda kb: kb.save_prompt("hi", session_id="a\nb"),
     "session_id contains U+000A, a control or invisible character; a session id is printable text such as "
     "'ses-2026-11-29-auth'."),
    (lambda kb: kb.save_prompt("   "), "content is required and must not be blank."),
    (lambda kb: kb.capture_passive(""), "content is required — include text with a '## Key Learnings:' section."),
    (lambda kb: kb.save_observation(title="t", content="c", session_id="x" * 201),
     "session_id is 201 characters long; the limit is 200. Use a shorter session id."),
    # 200 characters, but 1,205 bytes as a file name: it said "sessions/%C3%A9...yaml: cannot be
    # read: [Errno 36] File name too long", which names neither the id nor the fix.
    (lambda kb: kb.session_start("é" * 200, "p"),
     "id makes a file name of 1205 bytes (each character but ASCII letters, digits, '_', '.' and '-' is "
     "written as %XX for each of its bytes); the limit is 255. Use a shorter session id, or one in ASCII "
     "letters and digits."),
])
def test_every_error_names_the_parameter(empty_kb: KnowledgeBase, call, message: str) -> None:  # noqa: ANN001
    with pytest.raises((InvalidInputError, NotFoundError)) as caught:
        call(empty_kb)
    assert str(caught.value) == message
    assert len(subjects(empty_kb.root)) == 1  # nothing committed


def test_prompts_go_into_their_session_file(empty_kb: KnowledgeBase) -> None:
    empty_kb.session_start("ses-1", "analytics")
    first = empty_kb.save_prompt("Why does net revenue\ngo negative in <private>ACME</private> March?", "ses-1").to_json()
    assert first["message"] == 'Prompt saved: "Why does net revenue\\ngo negative in [REDACTED] March?"'
    long = "Show revenue by month " + "and by region " * 10
    second = empty_kb.save_prompt(long, "ses-1", project="finance").to_json()
    assert second["message"] == f'Prompt saved: "{long[:80]}..."'
    text = (empty_kb.root / "sessions/ses-1.yaml").read_text()
    times = re.findall(rf"created_at: '({TIME})'", text)
    started = first["session"]["started_at"]
    assert text == (
        f"project: analytics\nstarted_at: '{started}'\nprompts:\n"
        f"- created_at: '{times[0]}'\n  content: |-\n    Why does net revenue\n    go negative in [REDACTED] March?\n"
        f"- created_at: '{times[1]}'\n  content: {long.strip()}\n  project: finance\n"
    )
    assert "ACME" not in git(empty_kb.root, "log", "-p")
    assert subjects(empty_kb.root)[:2] == ["session: prompt in ses-1"] * 2
    assert files_of(empty_kb.root) == ["sessions/ses-1.yaml"]
    # Without a session: Engram's default, made in the prompt's commit.
    empty_kb.save_prompt("Where is the refunds table?", project="Analytics")
    assert files_of(empty_kb.root) == ["sessions/manual-save-analytics.yaml"]
    assert sessions.read(empty_kb, "manual-save-analytics").project == "analytics"


def test_a_long_prompt_is_cut_at_the_content_limit(empty_kb: KnowledgeBase) -> None:
    small = KnowledgeBase(empty_kb.root, max_content=100)
    small.save_prompt("\u00e9" * 80)  # 160 bytes
    content = sessions.read(small, "manual-save").prompts[0].content
    assert content == "\u00e9" * 42 + "... [truncated]"
    assert len(content.encode()) <= 100


def test_a_cut_prompt_says_so(empty_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """A 5 MB prompt was cut to the limit with nothing said but the marker in the file."""
    warning = ("content is 200000 bytes, over the limit of 65536: only its first 65521 bytes were kept, then "
               "'... [truncated]'. Save the rest as memories (slayer-kb save, the mem_save tool), or raise the limit with "
               "SLAYER_KB_MAX_CONTENT (bytes).")
    proc = invoke_cli("--kb", empty_kb.root, "--json", "save-prompt", "-", input="p" * 200_000)
    assert (proc.returncode, json_of(proc)["warnings"], proc.stderr) == (0, [warning], "")
    assert json_of(proc)["message"] == f'Prompt saved: "{"p" * 80}..."\nwarning: {warning}'
    short = invoke_cli("--kb", empty_kb.root, "--json", "save-prompt", "a short one", check=True)
    assert "warnings" not in json_of(short)


def test_end_stamps_time_and_summary(empty_kb: KnowledgeBase) -> None:
    empty_kb.session_start("ses-1", "analytics")
    ended = empty_kb.session_end("ses-1", "Found the <private>x</private> double count").to_json()
    assert re.fullmatch(TIME, ended["session"]["ended_at"])
    assert ended["session"]["summary"] == "Found the [REDACTED] double count"
    assert subjects(empty_kb.root)[0] == "session: end ses-1"
    again = empty_kb.session_end("ses-1").to_json()
    assert again["session"]["summary"] == "Found the [REDACTED] double count"  # kept
    assert again["warnings"] == []
    # Another summary replaces the first, and says so: the first is left in git's history only.
    other = empty_kb.session_end("ses-1", "Fixed it").to_json()
    assert (other["session"]["summary"], other["warnings"]) == ("Fixed it", [
        f"session 'ses-1' already had a summary (ended at {again['session']['ended_at']}), which this one "
        f"replaces (git -C {empty_kb.root} log -p sessions/ses-1.yaml shows the former)"])
    # A session never started is made and ended, as Engram's mem_save_prompt makes it and its
    # mem_session_end accepts it: the summary is kept, with a warning.
    unknown = empty_kb.session_end("ses-2", "Wrapped up").to_json()
    assert unknown["warnings"] == ["session 'ses-2' was never started; it is recorded as started and ended now"]
    assert unknown["session"]["started_at"] == unknown["session"]["ended_at"]
    assert unknown["session"]["summary"] == "Wrapped up"
    assert subjects(empty_kb.root)[0] == "session: end ses-2"


def test_mem_save_makes_its_session_in_the_same_commit(empty_kb: KnowledgeBase) -> None:
    empty_kb.save_observation(title="JWT", content="JWT over sessions", project="api", session_id="ses-9")
    assert sorted(files_of(empty_kb.root)) == ["memories/1.yaml", "sessions/ses-9.yaml"]
    empty_kb.save_observation(title="Other", content="More", project="api", session_id="ses-9")
    assert files_of(empty_kb.root) == ["memories/2.yaml"]  # the session exists: only the memory
    assert empty_kb.stats()["sessions"] == 1


def test_a_save_into_a_letter_case_twin_of_a_session_is_refused_as_session_start_is(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """With session 's1' recorded, ``save --session S1`` (``mem_save`` session_id 'S1') saved the
    memory into a session no file records (its file would collide with s1's on macOS), silently,
    where session-start and save-prompt refuse the id."""
    root = catalog_kb.root
    invoke_cli("--kb", root, "session-start", "s1", "--project", "app", check=True)
    head = git(root, "rev-parse", "HEAD")
    refusal = ("session id 'S1' differs only in letter case from the existing session 's1': their files collide "
               "on macOS and Windows checkouts. Use 's1'.")
    started = invoke_cli("--kb", root, "session-start", "S1", "--project", "app")
    assert (started.returncode, started.stderr) == (1, f"Error: {refusal}\n")
    for extra in ([], ["--id", "kb.warmup", "-e", "orders.amount"]):  # an observation, a note saved SLayer's way
        saved = invoke_cli("--kb", root, "save", "Warm the cache after deploy", "--title", "Cache warmup",
                           "--project", "app", "--session", "S1", *extra)
        assert (saved.returncode, saved.stdout, saved.stderr) == (1, "", f"Error: {refusal}\n")
    reply = call_tool(catalog_kb, "mem_save", {"title": "Cache warmup", "content": "Warm the cache after deploy",
                                             "project": "app", "session_id": "S1"})
    assert (reply.is_error, reply.text) == (True, refusal)
    assert git(root, "rev-parse", "HEAD") == head  # nothing committed
    assert sorted(p.name for p in (root / "sessions").iterdir()) == ["s1.yaml"]


def test_uncommitted_or_broken_session_files_are_not_overwritten(empty_kb: KnowledgeBase) -> None:
    empty_kb.session_start("ses-1", "analytics")
    path = empty_kb.root / "sessions/ses-1.yaml"
    path.write_text(path.read_text() + "summary: my own words\n")
    with pytest.raises(ConflictError, match=r"^sessions/ses-1\.yaml has changes that are not committed"):
        empty_kb.save_prompt("hello", "ses-1")
    assert path.read_text().endswith("summary: my own words\n")
    path.write_text("started_at: [\n")
    git(empty_kb.root, "commit", "-qam", "broken by hand")
    with pytest.raises(MemoryFileError, match=r"^sessions/ses-1\.yaml:2: invalid YAML: "):
        empty_kb.save_prompt("hello", "ses-1")
    assert empty_kb.stats()["sessions"] == 0  # a broken file is no session; validate reports it
    # A memory saved into that session is saved all the same; the broken file is left alone.
    saved = empty_kb.save_observation(title="Still saved", content="x", session_id="ses-1")
    assert files_of(empty_kb.root) == [f"memories/{saved.memory_id}.yaml"]
    assert path.read_text() == "started_at: [\n"


def test_hand_edits_are_seen_by_the_next_read(empty_kb: KnowledgeBase) -> None:
    empty_kb.session_start("ses-1", "analytics")
    assert empty_kb.stats()["prompts"] == 0
    path = empty_kb.root / "sessions/ses-1.yaml"
    path.write_text(path.read_text() + "prompts:\n- created_at: '2026-01-01T00:00:00Z'\n  content: typed by hand\n")
    assert empty_kb.stats()["prompts"] == 1
    assert "typed by hand" in empty_kb.context()


# -- passive capture -----------------------------------------------------------------------------


def test_extract_learnings_as_engram_does() -> None:
    assert capture.extract_learnings(LEARNINGS) == [
        "Refunds are stored as negative amount rows in orders",
        "The warehouse is rebuilt nightly at 02:00 UTC, so today is missing from wh",
    ]
    bullets = "### Learnings\n- *Bullets* count when no item is numbered\n* second bullet, long enough too\n- short\n"
    assert capture.extract_learnings(bullets) == [
        "Bullets count when no item is numbered", "second bullet, long enough too"]
    spanish = "## Aprendizajes Clave:\n1. Los reembolsos son filas negativas en orders\n"
    assert capture.extract_learnings(spanish) == ["Los reembolsos son filas negativas en orders"]
    # The last section that has items wins; an empty last one falls back to the one before.
    two = "## Key Learnings\n1. the first section's only learning\n\n## Learning:\n1. the second section's learning\n"
    assert capture.extract_learnings(two) == ["the second section's learning"]
    assert capture.extract_learnings(two + "## Key Learnings:\n1. tiny\n") == ["the second section's learning"]
    assert capture.extract_learnings("# Key Learnings\n1. a level-one heading is not read\n") == []
    assert capture.extract_learnings("no heading at all") == []


def test_capture_saves_new_learnings_in_one_commit(empty_kb: KnowledgeBase) -> None:
    result = empty_kb.capture_passive(LEARNINGS, "ses-7", "Analytics", "session-end").to_json()
    assert result["message"] == "Passive capture complete: extracted=2 saved=2 duplicates=0"
    assert result["memory_ids"] == ["1", "2"]
    assert subjects(empty_kb.root)[0] == "memory: capture 1, 2 (passive, from session-end)"
    assert sorted(files_of(empty_kb.root)) == ["memories/1.yaml", "memories/2.yaml", "sessions/ses-7.yaml"]
    second = empty_kb.get("2").to_dict()
    assert (second["title"], second["type"], second["project"], second["scope"], second["session_id"]) == (
        "The warehouse is rebuilt nightly at 02:00 UTC, so today is m...", "passive", "analytics", "project", "ses-7")
    assert second["learning"] == "The warehouse is rebuilt nightly at 02:00 UTC, so today is missing from wh"
    # Safe to repeat: every item is a duplicate, and nothing is committed.
    head = git(empty_kb.root, "rev-parse", "HEAD")
    again = empty_kb.capture_passive(LEARNINGS, "ses-7", "analytics").to_json()
    assert again["message"] == "Passive capture complete: extracted=2 saved=0 duplicates=2"
    assert git(empty_kb.root, "rev-parse", "HEAD") == head
    # Another project has its own memories; an item twice in one text is saved once.
    twice = "## Key Learnings:\n- the same learning, written twice\n- the same learning,  written twice\n"
    other = empty_kb.capture_passive(twice, project="billing").to_json()
    assert other["message"] == "Passive capture complete: extracted=2 saved=1 duplicates=1"
    nothing = empty_kb.capture_passive("just prose, no learnings section").to_json()
    assert nothing["message"] == "Passive capture complete: extracted=0 saved=0 duplicates=0"


def test_capture_passive_at_the_command_line_names_the_memories_it_saved(empty_kb: KnowledgeBase,
                                                                          invoke_cli: CliRunner) -> None:
    one = "## Key Learnings:\n1. The warehouse is rebuilt nightly at 02:00 UTC\n"
    assert invoke_cli("--kb", empty_kb.root, "capture-passive", one, check=True).stdout == (
        "Passive capture complete: extracted=1 saved=1 duplicates=0 (memory 1)\n")
    assert invoke_cli("--kb", empty_kb.root, "capture-passive", LEARNINGS, check=True).stdout == (
        "Passive capture complete: extracted=2 saved=2 duplicates=0 (memories 2, 3)\n")
    assert invoke_cli("--kb", empty_kb.root, "capture-passive", one, check=True).stdout == (
        "Passive capture complete: extracted=1 saved=0 duplicates=1\n")



def test_a_capture_whose_learnings_are_all_too_short_says_why(empty_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """Engram's reply (extracted=0) alone left the agent to guess why nothing was saved when it
    wrote learnings too short to keep. An output with no learnings (no section, or "None this
    time." under the heading) is the ordinary case, every output piped in: no warning."""
    for ordinary in ("Fixed the refund report.", "## Key Learnings:\nNone this time.\n"):
        none = invoke_cli("--kb", empty_kb.root, "capture-passive", ordinary, check=True)
        assert (none.stdout, none.stderr) == ("Passive capture complete: extracted=0 saved=0 duplicates=0\n", ""), ordinary
    short = invoke_cli("--kb", empty_kb.root, "--json", "capture-passive", "## Key Learnings:\n1. too short\nprose\n")
    assert json_of(short)["warnings"] == [
        "the '## Key Learnings:' section holds no item ('1. ...' or '- ...') of 20 characters or more, so nothing "
        "was saved; write each learning as such an item."]
    assert subjects(empty_kb.root) == ["kb: initialise knowledge base"]


def test_a_learnings_line_that_is_no_heading_is_said_so(empty_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``**Key Learnings:**`` (bold, as models often write it), a plain ``Key Learnings:`` or a
    level-1 heading is no section Engram reads: extracted=0, the reply of an output with nothing
    learned, left the agent unaware that its learnings were dropped."""
    item = "- The refunds table is net of fees, always.\n"
    for line in ("**Key Learnings:**", "Key Learnings:", "# Key Learnings", "__Learnings__"):
        proc = invoke_cli("--kb", empty_kb.root, "--json", "capture-passive", f"Fixed it.\n\n{line}\n{item}")
        assert json_of(proc)["warnings"] == [
            f"{line!r} is no learnings heading, so nothing was captured: head the section '## Key Learnings:' (a "
            "level-2 or level-3 heading), its items '1. ...' or '- ...'."], line
    assert subjects(empty_kb.root) == ["kb: initialise knowledge base"]


def test_a_capture_whose_learnings_section_lists_none_says_there_were_none(empty_kb: KnowledgeBase,
                                                                          invoke_cli: CliRunner) -> None:
    """'- None' (or '- N/A') as the only item under the heading is an agent saying it learned
    nothing this time: it was warned of as a learning too short to keep. No warning, nothing
    saved, and the reply says the section listed none."""
    for listed in ("- None", "- none", "- N/A", "- n/a", "1. **None.**"):
        proc = invoke_cli("--kb", empty_kb.root, "capture-passive", f"Fixed the report.\n\n## Key Learnings:\n{listed}\n",
                          check=True)
        assert (proc.stdout, proc.stderr) == (
            "Passive capture complete: extracted=0 saved=0 duplicates=0 (the '## Key Learnings:' section lists "
            "none)\n", ""), listed
    data = json_of(invoke_cli("--kb", empty_kb.root, "--json", "capture-passive", "## Key Learnings:\n- None\n"))
    assert (data["warnings"], data["memory_ids"]) == ([], [])
    assert data["message"].endswith("(the '## Key Learnings:' section lists none)")
    reply = call_tool(empty_kb, "mem_capture_passive", {"content": "### Learnings\n* N/A\n"})
    assert (reply.is_error, reply.text) == (False, "Passive capture complete: extracted=0 saved=0 duplicates=0 (the "
                                                   "'### Learnings' section lists none)")
    assert json_of(invoke_cli("--kb", empty_kb.root, "--json", "capture-passive",
                              "## Key Learnings:\n- None\n- tiny\n"))["warnings"] == [
        "the '## Key Learnings:' section holds no item ('1. ...' or '- ...') of 20 characters or more, so nothing "
        "was saved; write each learning as such an item."]
    assert subjects(empty_kb.root) == ["kb: initialise knowledge base"]


# -- context, stats and timeline -----------------------------------------------------------------


def test_context_shows_sessions_prompts_and_limit(empty_kb: KnowledgeBase) -> None:
    assert empty_kb.context() == "No previous session memories found.\n"
    empty_kb.session_start("ses-1", "analytics", "/w")
    empty_kb.save_prompt("How are refunds counted?", "ses-1")
    for n in range(3):
        empty_kb.save_observation(title=f"Note {n}", content=f"note {n}", project="analytics", session_id="ses-1")
    empty_kb.session_end("ses-1", "Refunds are negative rows")
    empty_kb.session_start("ses-2", "billing")
    text = empty_kb.context("analytics", limit=2)
    s = sessions.read(empty_kb, "ses-1")
    assert s is not None
    day = s.started_at[:10]
    assert text == (
        "# Memory context: analytics\n\n## Recent sessions\n"
        f"- ses-1 (analytics, {s.started_at} to {s.ended_at}): 3 memories, 1 prompt; summary: Refunds are negative rows\n\n"
        f"## Recent prompts\n- {s.prompts[0].created_at} (ses-1): How are refunds counted?\n\n"
        f"## Recent memories (2 of 3)\n- [3] Note 2 (manual), {day}\n- [2] Note 1 (manual), {day}\n"
    )
    assert "ses-2 (billing" in empty_kb.context()
    assert empty_kb.stats() | {"search_by_meaning": None} == {
        "memories": 3, "sessions": 2, "prompts": 1, "projects": ["analytics"], "types": {"manual": 3}, "untyped": 0,
        "search_by_meaning": None,
    }


def test_timeline_of_a_session(empty_kb: KnowledgeBase) -> None:
    empty_kb.session_start("ses-1", "analytics", "/w")
    empty_kb.save_prompt("How are refunds counted?", "ses-1")
    empty_kb.save_observation(title="Refunds", content="negative rows", session_id="ses-1")
    empty_kb.session_end("ses-1", "done")
    data = empty_kb.session_timeline("ses-1")
    assert [(e["kind"], e["text"]) for e in data["entries"]] == [
        ("start", "/w"), ("prompt", "How are refunds counted?"), ("memory", "Refunds"), ("end", "done")]
    assert empty_kb.timeline("1")["session"]["summary"] == "done"
    with pytest.raises(NotFoundError, match="^No session with id 'nope': no session file and no memory saved in it.$"):
        empty_kb.session_timeline("nope")


# -- validate, fmt, review -----------------------------------------------------------------------


def test_validate_and_fmt_session_files(empty_kb: KnowledgeBase) -> None:
    folder = empty_kb.root / "sessions"
    folder.mkdir()
    (folder / "bad.yaml").write_text(
        "project: 1\nstarted_at: 2026-01-01\nprompts:\n- content: ''\n  created_at: x\n  colour: red\n- hello\nid: x\n")
    (folder / "has space.yaml").write_text("started_at: '2026-11-29T20:42:40Z'\n")
    (folder / "flow.yaml").write_text(
        "started_at: '2026-11-29T20:42:40Z'\nprompts: [{created_at: '2026-11-29T20:42:41Z', content: hi}]\n")
    report = validate([empty_kb.root])
    assert [str(p).replace(str(empty_kb.root) + "/", "") for p in report.problems] == [
        "sessions/bad.yaml:1: 'project' must be a string, not a number",
        "sessions/bad.yaml:2: 'started_at' must be a UTC time, quoted: '2026-11-29T20:42:40Z'",
        "sessions/bad.yaml:4: prompts[0]: unknown key 'colour' (allowed keys: created_at, content, project)",
        "sessions/bad.yaml:4: 'prompts[0].content' must not be blank",
        "sessions/bad.yaml:4: 'prompts[0].created_at' must be a UTC time, quoted: '2026-11-29T20:42:40Z'",
        "sessions/bad.yaml:7: 'prompts[1]' must be a mapping with created_at and content",
        "sessions/bad.yaml:8: unknown key 'id' (the file name is the id; remove the id key)",
        f"sessions/flow.yaml:2: not in canonical form; run 'slayer-kb --kb {empty_kb.root} fmt sessions/flow.yaml'",
        "sessions/has space.yaml:1: the file name is the session's id, with %XX for each byte of a character a "
        "portable file name cannot hold; for the id 'has space' rename it to has%20space.yaml",
    ]
    result = fmt([folder / "flow.yaml"])
    assert len(result.reformatted) == 1
    assert (folder / "flow.yaml").read_text() == (
        "started_at: '2026-11-29T20:42:40Z'\nprompts:\n- created_at: '2026-11-29T20:42:41Z'\n  content: hi\n")
    assert validate([folder / "flow.yaml"]).problems == []


def test_validate_names_a_control_character_in_a_session_id_and_the_fix(empty_kb: KnowledgeBase,
                                                                       invoke_cli: CliRunner) -> None:
    """What ``session-start`` refuses, written by hand: a session file whose name spells an id with a
    control character (an escape would act on the terminal of each ``sessions`` listing), and a
    memory's ``session_id`` with one."""
    folder = empty_kb.root / "sessions"
    folder.mkdir()
    (folder / "ses%1B%5B31mred.yaml").write_text("started_at: '2026-11-29T20:42:40Z'\n")
    (empty_kb.root / "memories" / "m.yaml").write_text(
        "learning: Fine.\nsession_id: \"ses\\tx\"\ncreated_at: '2026-01-01T00:00:00Z'\n")
    proc = invoke_cli("--kb", empty_kb.root, "validate", cwd=empty_kb.root)
    assert (proc.returncode, proc.stdout) == (1, (
        "memories/m.yaml:2: session_id 'ses\\tx' contains U+0009, a control or invisible character, which "
        "save and session-start refuse; write the id without it, e.g. 'sesx'\n"
        "sessions/ses%1B%5B31mred.yaml:1: the file name spells the session id 'ses\\x1b[31mred' with U+001B, a "
        "control or invisible character, which session-start refuses; rename the file to a printable id, "
        "e.g. ses%5B31mred.yaml (and change the session_id of the memories that name it)\n"
        "2 problems in 2 files (2 files checked)\n"))


def test_validate_names_two_sessions_whose_ids_differ_only_in_letter_case(empty_kb: KnowledgeBase,
                                                                        invoke_cli: CliRunner) -> None:
    """Two clones can each start one ('Deploy-1' offline in one, 'deploy-1' in the other) and a sync
    merges both in: on macOS and Windows checkouts one file would stand for both."""
    folder = empty_kb.root / "sessions"
    folder.mkdir()
    for name in ("Deploy-1", "deploy-1", "deploy-2"):
        (folder / f"{name}.yaml").write_text("started_at: '2026-11-29T20:42:40Z'\n")
    proc = invoke_cli("--kb", empty_kb.root, "validate", cwd=empty_kb.root)
    fix = ("their files collide on macOS and Windows checkouts; keep one: move this file's prompts into {0}.yaml, "
           "delete this file, and give the memories whose session_id is '{1}' the session_id '{0}'")
    assert (proc.returncode, proc.stdout) == (1, (
        "sessions/Deploy-1.yaml:1: session id 'Deploy-1' differs only in letter case from 'deploy-1': "
        + fix.format("deploy-1", "Deploy-1") + "\n"
        "sessions/deploy-1.yaml:1: session id 'deploy-1' differs only in letter case from 'Deploy-1': "
        + fix.format("Deploy-1", "deploy-1") + "\n"
        "2 problems in 2 files (3 files checked)\n"))


def test_review_lists_session_changes(example_kb: KnowledgeBase) -> None:
    git(example_kb.root, "branch", "base")
    example_kb.session_start("ses-new", "analytics", "/x")
    example_kb.save_prompt("Why are refunds double counted?", "ses-new")
    example_kb.save_prompt("And in March?", "ses-20261120-quarterly-deck")
    example_kb.session_end("ses-20261120-quarterly-deck", "Used the warehouse")
    r = example_kb.history.review("base")
    assert [(e["id"], e["status"], e["prompts_added"], e["fields"]) for e in r.sessions] == [
        ("ses-20261120-quarterly-deck", "changed", ["And in March?"], ["ended_at", "summary"]),
        ("ses-new", "added", ["Why are refunds double counted?"], []),
    ]
    assert r.markdown().split("\n", 2)[2] == (
        "No memory changed.\nSessions: 1 added, 1 changed; 2 prompts added.\n\n### Sessions\n\n"
        "- **ses-20261120-quarterly-deck**: 1 prompt added; ended; changed: summary\n"
        "  - prompt: And in March?\n  - summary: Used the warehouse\n"
        "- **ses-new**: started in analytics; 1 prompt added\n  - prompt: Why are refunds double counted?\n"
    )


# -- the CLI -------------------------------------------------------------------------------------


def test_cli_session_commands(tmp_path: Path, invoke_cli: CliRunner) -> None:
    root = tmp_path / "kb"
    assert invoke_cli("init", root).returncode == 0
    proc = invoke_cli("--kb", root, "session-start", "ses-1", "--project", "Analytics", "--directory", "/w")
    assert (proc.returncode, proc.stdout) == (0, 'Session "ses-1" started for project "analytics"\n')
    proc = invoke_cli("--kb", root, "save-prompt", "-", "--session", "ses-1", input="How are refunds counted?")
    assert proc.stdout == 'Prompt saved: "How are refunds counted?"\n'
    proc = invoke_cli("--kb", root, "capture-passive", "-", "--session", "ses-1", "--project", "analytics",
                   "--json", input=LEARNINGS)
    data = json_of(proc)
    assert {k: data[k] for k in ("extracted", "saved", "duplicates", "memory_ids", "session_id", "source")} == {
        "extracted": 2, "saved": 2, "duplicates": 0, "memory_ids": ["1", "2"], "session_id": "ses-1",
        "source": "mcp-passive"}
    proc = invoke_cli("--kb", root, "session-end", "ses-1", "--summary", "Refunds explained")
    assert proc.stdout == 'Session "ses-1" completed\n'
    listed = json_of(invoke_cli("--kb", root, "sessions", "--json"))
    assert [(s["id"], s["project"], s["summary"], len(s["prompts"])) for s in listed] == [
        ("ses-1", "analytics", "Refunds explained", 1)]
    timeline = invoke_cli("--kb", root, "timeline", "--session", "ses-1")
    lines = timeline.stdout.splitlines()
    assert re.fullmatch(rf"ses-1 \(analytics, {TIME} to {TIME}\)", lines[0])
    assert [re.sub(TIME, "T", line) for line in lines[1:]] == [
        "  T start: /w", "  T prompt: How are refunds counted?",
        "  T memory [1] Refunds are stored as negative amount rows in orders (passive)",
        "  T memory [2] The warehouse is rebuilt nightly at 02:00 UTC, so today is m... (passive)",
        "  T end: Refunds explained"]
    context = json_of(invoke_cli("--kb", root, "context", "--limit", "1", "--json"))["text"]
    assert "## Recent memories (1 of 2)\n- [2] " in context and "(ses-1): How are refunds counted?" in context
    stats = json_of(invoke_cli("--kb", root, "stats", "--json"))
    assert (stats["sessions"], stats["prompts"], stats["memories"]) == (1, 1, 2)
    proc = invoke_cli("--kb", root, "timeline")
    assert (proc.returncode, proc.stderr.split("\n\n")[-1]) == (
        2, "Error: timeline takes a memory ID or --session SESSION, one of the two.\n")
    proc = invoke_cli("--kb", root, "session-end", "nope")
    assert (proc.returncode, proc.stdout) == (0, 'Session "nope" completed\nwarning: session \'nope\' was never '
                                                 "started; it is recorded as started and ended now\n")
    assert subjects(root) == [
        "session: end nope", "session: end ses-1", "memory: capture 1, 2 (passive, from mcp-passive)", "session: prompt in ses-1",
        "session: start ses-1", "kb: initialise knowledge base"]
    schema = json.loads(invoke_cli("schema", "--session", check=True).stdout)
    assert (schema["$id"], schema["required"]) == ("urn:slayer-kb:session-file", ["started_at"])
    (root / "sessions" / "ses-1.yaml").write_text("started_at: '2026-11-29T20:42:40Z'\nsumary: typo\n")
    proc = invoke_cli("validate", "sessions", cwd=root)
    assert (proc.returncode, proc.stdout) == (1, (
        "sessions/ses-1.yaml:2: unknown key 'sumary' (allowed keys: project, directory, started_at, ended_at, "
        "summary, prompts)\n1 problem in 1 file (2 files checked)\n"))


def test_import_engram_brings_sessions_and_prompts(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    from slayer_kb.ops.engramimport import import_engram

    empty_kb.session_start("s1", None)
    export = {
        "observations": [{"title": "Auth", "content": "JWT", "session_id": "s1", "project": "api"}],
        "sessions": [{"id": "s1", "project": "API", "directory": "/w", "started_at": "2026-03-01 10:00:00",
                      "ended_at": "2026-03-01 11:00:00", "summary": "Chose JWT <private>k</private>"},
                     {"id": "s 2", "project": "api", "directory": "", "started_at": "2026-03-02 09:00:00"},
                     {"id": ""}],
        "prompts": [{"id": 1, "session_id": "s1", "content": "Which auth?", "created_at": "2026-03-01 10:01:00"},
                    {"id": 2, "session_id": "s3", "content": "Cache?", "project": "api",
                     "created_at": "2026-03-03 08:00:00"},
                    {"id": 3, "session_id": "s1", "content": "  "}],
    }
    path = tmp_path / "engram.json"
    path.write_text(json.dumps(export))
    result = import_engram(empty_kb, path)
    assert (result.imported, result.sessions, result.prompts) == (["1"], 2, 2)
    assert result.warnings == [
        "engram.json: session 3: id is required and must not be blank: give the session's id (e.g. "
        "'ses-2026-11-29-auth'). Skipped.",
        "engram.json: prompt 3 has no content; skipped."]
    assert subjects(empty_kb.root)[0] == "memory: import 1 observations, 2 new sessions, 2 prompts from Engram (engram.json)"
    assert sorted(files_of(empty_kb.root)) == ["memories/1.yaml", "sessions/s%202.yaml", "sessions/s1.yaml",
                                               "sessions/s3.yaml"]
    s1 = sessions.read(empty_kb, "s1")
    assert s1 is not None
    assert (s1.project, s1.directory, s1.ended_at, s1.summary) == ("api", "/w", "2026-03-01T11:00:00Z", "Chose JWT [REDACTED]")
    assert [(p.created_at, p.content) for p in s1.prompts] == [("2026-03-01T10:01:00Z", "Which auth?")]
    s3 = sessions.read(empty_kb, "s3")
    assert s3 is not None and (s3.started_at, s3.project, s3.prompts[0].project) == ("2026-03-03T08:00:00Z", None, "api")
    assert validate([empty_kb.root]).problems == []
    # Importing again changes nothing.
    again = import_engram(empty_kb, path)
    assert (again.imported, again.sessions, again.prompts, again.commit) == ([], 0, 0, None)


@pytest.mark.slow  # contention (slow suite, .ci/run); a save waiting on the KB lock: test_priority.py
def test_concurrent_prompts_each_make_one_commit(empty_kb: KnowledgeBase) -> None:
    """Writers in separate processes append to one session file under the KB lock: no prompt is
    lost, and each is its own commit."""
    import subprocess
    import sys

    empty_kb.session_start("ses-1", "analytics")
    script = ("import sys\nfrom slayer_kb import KnowledgeBase\nkb = KnowledgeBase(sys.argv[1])\n"
              "for n in range(3):\n    kb.save_prompt(f'prompt {sys.argv[2]}.{n} from a busy agent', 'ses-1')\n")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(empty_kb.root), str(w)]) for w in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    session = sessions.read(empty_kb, "ses-1")
    assert session is not None
    assert sorted(p.content for p in session.prompts) == sorted(
        f"prompt {w}.{n} from a busy agent" for w in range(3) for n in range(3))
    assert subjects(empty_kb.root)[:9] == ["session: prompt in ses-1"] * 9
    assert len(subjects(empty_kb.root)) == 11  # init, start, 9 prompts
    assert validate([empty_kb.root]).problems == []


SLOWED_WRITES = """
import sys, time
from slayer_kb.store import worktree
from slayer_kb.cli import main
real = worktree.put_file
def slowed(*args, **kwargs):
    time.sleep(120)  # a window the test kills it in, however loaded the machine
    return real(*args, **kwargs)
worktree.put_file = slowed
main()
"""


def test_a_prompt_killed_after_its_commit_is_finished_by_the_next_read(empty_kb: KnowledgeBase) -> None:
    """The crash-safe commit path memories use: killed once HEAD moved but before the session
    file was written, the prompt is committed, and the next read finishes writing it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    root = empty_kb.root
    empty_kb.session_start("ses-1", "analytics")
    old = git(root, "rev-parse", "HEAD").strip()
    journal = root / ".slayer-kb" / "journal.json"
    proc = subprocess.Popen([sys.executable, "-c", SLOWED_WRITES, "--kb", str(root), "save-prompt",
                             "Killed mid-write", "--session", "ses-1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (journal.exists() and git(root, "rev-parse", "HEAD").strip() != old):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the commit never moved HEAD"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
    assert "Killed mid-write" not in (root / "sessions/ses-1.yaml").read_text()  # not yet written
    fresh = KnowledgeBase(root)
    assert fresh.stats()["prompts"] == 1
    assert [p.content for p in sessions.read(fresh, "ses-1").prompts] == ["Killed mid-write"]  # type: ignore[union-attr]
    assert not journal.exists()
    assert git(root, "status", "--porcelain") == ""
    assert subjects(root)[0] == "session: prompt in ses-1"


def test_times_with_fractions_and_offsets_are_shown_in_time_order(empty_kb: KnowledgeBase,
                                                                   invoke_cli: CliRunner) -> None:
    """As text ``10:00:00.5Z`` sorts before ``10:00:00Z``: the timelines, the context and the
    sessions put a memory, prompt or session half a second later before the earlier one. A time
    written with an offset (unquoted YAML, ``+02:00``) is read in UTC and takes its place among them."""
    root = empty_kb.root
    (root / "sessions").mkdir()
    for memory_id, at in (("1", "'2026-01-01T10:00:00.5Z'"), ("2", "'2026-01-01T10:00:00Z'"),
                          ("3", "2026-01-01T11:59:59+02:00")):
        (root / "memories" / f"{memory_id}.yaml").write_text(
            f"learning: Memory {memory_id}.\nproject: p\nsession_id: ses-1\ncreated_at: {at}\n")
    (root / "sessions" / "ses-1.yaml").write_text(
        "project: p\nstarted_at: '2026-01-01T09:00:00Z'\nended_at: '2026-01-01T10:00:01.2Z'\nprompts:\n"
        "- {created_at: '2026-01-01T10:00:00.5Z', content: Second prompt}\n"
        "- {created_at: '2026-01-01T10:00:00Z', content: First prompt}\n")
    # Active last, though its start sorts after its prompt as text; then ses-1; then ses-3.
    (root / "sessions" / "ses-2.yaml").write_text(
        "project: p\nstarted_at: '2026-01-01T10:00:01Z'\nprompts:\n"
        "- {created_at: '2026-01-01T10:00:01.5Z', content: Third prompt}\n")
    (root / "sessions" / "ses-3.yaml").write_text("project: p\nstarted_at: '2026-01-01T10:00:01Z'\n")
    commit_all(root)
    proc = invoke_cli("--kb", root, "timeline", "2")
    assert [line.split("] ")[0] for line in proc.stdout.splitlines()] == [
        "  2026-01-01T09:59:59Z [3", "> 2026-01-01T10:00:00Z [2", "  2026-01-01T10:00:00.5Z [1"], proc.stdout
    proc = invoke_cli("--kb", root, "timeline", "--session", "ses-1")
    assert proc.stdout.splitlines()[1:] == [
        "  2026-01-01T09:00:00Z start", "  2026-01-01T09:59:59Z memory [3] Memory 3.",
        "  2026-01-01T10:00:00Z prompt: First prompt", "  2026-01-01T10:00:00Z memory [2] Memory 2.",
        "  2026-01-01T10:00:00.5Z prompt: Second prompt", "  2026-01-01T10:00:00.5Z memory [1] Memory 1.",
        "  2026-01-01T10:00:01.2Z end"], proc.stdout
    context = invoke_cli("--kb", root, "context", "--project", "p").stdout
    assert context.split("## Recent sessions\n")[1].split("## Recent memories")[0] == (
        "- ses-2 (p, 2026-01-01T10:00:01Z to now (open)): 0 memories, 1 prompt\n"
        "- ses-1 (p, 2026-01-01T09:00:00Z to 2026-01-01T10:00:01.2Z): 3 memories, 2 prompts\n"
        "- ses-3 (p, 2026-01-01T10:00:01Z to now (open)): 0 memories, 0 prompts\n\n## Recent prompts\n"
        "- 2026-01-01T10:00:01.5Z (ses-2): Third prompt\n- 2026-01-01T10:00:00.5Z (ses-1): Second prompt\n"
        "- 2026-01-01T10:00:00Z (ses-1): First prompt\n\n"), context
    assert re.findall(r"- \[(\d)\]", context) == ["1", "2", "3"], context
    listed = json_of(invoke_cli("--kb", root, "sessions", "--json"))
    assert [s["id"] for s in listed] == ["ses-2", "ses-1", "ses-3"]
    # The index's newest-first lists: whole, and cut within a second.
    for limit, ids in (("1", ["1"]), ("20", ["1", "2", "3"])):
        newest = json_of(invoke_cli("--kb", root, "list", "--limit", limit, "--json"))
        assert [hit["id"] for hit in newest["memories"]] == ids, (limit, newest)


def test_an_imported_prompt_goes_before_a_later_one_of_the_same_second(empty_kb: KnowledgeBase, tmp_path: Path,
                                                                       invoke_cli: CliRunner) -> None:
    """Engram's prompts are merged into the session file in time order: as text the one typed at
    10:01:00.5 went before Engram's of 10:01:00."""
    (empty_kb.root / "sessions").mkdir()
    (empty_kb.root / "sessions" / "s1.yaml").write_text(
        "started_at: '2026-03-01T10:00:00Z'\nprompts:\n- {created_at: '2026-03-01T10:01:00.5Z', content: Typed}\n")
    commit_all(empty_kb.root)
    export = {"prompts": [{"id": 1, "session_id": "s1", "content": "Imported", "created_at": "2026-03-01 10:01:00"}]}
    (tmp_path / "engram.json").write_text(json.dumps(export))
    assert invoke_cli("--kb", empty_kb.root, "import-engram", tmp_path / "engram.json").returncode == 0
    listed = json_of(invoke_cli("--kb", empty_kb.root, "sessions", "--json"))
    assert [(p["created_at"], p["content"]) for p in listed[0]["prompts"]] == [
        ("2026-03-01T10:01:00Z", "Imported"), ("2026-03-01T10:01:00.5Z", "Typed")]


def test_an_imported_session_that_ends_before_it_starts_is_imported_without_its_end(empty_kb: KnowledgeBase,
                                                                                      tmp_path: Path) -> None:
    from slayer_kb.ops.engramimport import import_engram

    export = {"observations": [{"title": "Auth", "content": "JWT", "session_id": "s1", "project": "api"}],
              "sessions": [{"id": "s1", "project": "api", "started_at": "2026-03-02 10:00:00",
                            "ended_at": "2026-03-01 11:00:00"}]}
    path = tmp_path / "engram.json"
    path.write_text(json.dumps(export))
    result = import_engram(empty_kb, path)
    assert result.warnings == ["engram.json: session 1: ended_at '2026-03-01T11:00:00Z' is before started_at "
                               "'2026-03-02T10:00:00Z'; the end was left out."]
    s1 = sessions.read(empty_kb, "s1")
    assert s1 is not None and (s1.started_at, s1.ended_at) == ("2026-03-02T10:00:00Z", None)
    assert validate([empty_kb.root]).problems == []
