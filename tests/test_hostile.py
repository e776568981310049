"""Hostile input: bad ids, odd learnings, wrong-shaped references and queries, Whoosh syntax in
search words, and memory files edited by hand into something nasty. Each gets a clear error (a
``KBError`` in the API, ``Error: ...`` and exit 1 on the command line) or is skipped with a
warning; none crashes, hangs, writes outside the KB or loses another memory."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import InvalidIdError, InvalidInputError, KBError, MemoryFileError
from slayer_kb.core.ids import check_id, check_new_id
from slayer_kb.core.inputs import blank
from slayer_kb.core.nesting import cut_deep, text_depth, value_depth
from slayer_kb.ops.finding import MAX_QUESTION
from testing import CliRunner, commit_all, examples, git, json_of

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"
KEEP = "learning: An innocent bystander.\nentities:\n- shop.orders.amount\n" + CREATED
HYPO = settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# -- helpers ------------------------------------------------------------------------------------


def tree_snapshot(top: Path, skip: Path | None = None) -> dict[str, str]:
    """Every file under ``top`` (not following links) with a digest of its bytes."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        here = Path(dirpath)
        if skip is not None and (here == skip or skip in here.parents):
            dirnames[:] = []
            continue
        for name in filenames + [d for d in dirnames if (here / d).is_symlink()]:
            path = here / name
            if path.is_symlink():
                out[str(path)] = "link:" + os.readlink(path)
            else:
                out[str(path)] = hashlib.sha1(path.read_bytes()).hexdigest()
    return out


def with_bystander(kb: KnowledgeBase) -> None:
    (kb.root / "memories" / "keep.yaml").write_text(KEEP, encoding="utf-8")
    commit_all(kb.root, "bystander")


def assert_bystander_intact(kb: KnowledgeBase) -> None:
    assert (kb.root / "memories" / "keep.yaml").read_text(encoding="utf-8") == KEEP
    assert KnowledgeBase(kb.root).get("keep").to_dict()["learning"] == "An innocent bystander."


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def run_raw(root: Path, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    """The CLI with raw byte arguments (argv that is not valid UTF-8)."""
    argv = [os.fsencode(a) if isinstance(a, str) else a for a in args]
    return subprocess.run(
        [sys.executable.encode(), b"-m", b"slayer_kb", b"--kb", os.fsencode(root), *argv],
        capture_output=True,
        timeout=60,
    )


def assert_clear_cli_error(proc: subprocess.CompletedProcess[Any], start: str = "Error: ") -> None:
    err = proc.stderr if isinstance(proc.stderr, str) else proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    assert proc.returncode == 1, err
    assert err.startswith(start), err
    assert err.count("\n") == 1, err


def fresh_random() -> None:
    # Hypothesis seeds the global random module the same way for every example, and Whoosh names
    # its segments from it: two examples would write segments of the same name.
    random.seed(os.urandom(16))


# -- ids ----------------------------------------------------------------------------------------

HOSTILE_IDS = [
    "..",
    ".",
    ".git",
    ".slayer-kb",
    "-rf",
    "--help",
    "a/../b",
    "../outside",
    "..\\..\\x",
    "memories/x",
    "a\0b",
    "a\u200fb",  # right-to-left mark
    "\u202egpj.exe",  # right-to-left override
    "a\u200bb",  # zero-width space
    "a b",
    "a\nb",
    "x" * 300,
    "\u00e9" * 101,  # 202 bytes of UTF-8
    "",
    "a:b",
    "a*b",
    "\udcff",  # a lone surrogate (what invalid UTF-8 in argv becomes)
]


def test_hostile_ids_are_refused_by_the_api(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    with_bystander(catalog_kb)
    before_outside = tree_snapshot(tmp_path, skip=catalog_kb.root)
    before_memories = tree_snapshot(catalog_kb.root / "memories")
    old = head(catalog_kb.root)
    for bad in HOSTILE_IDS:
        with pytest.raises(InvalidIdError) as info:
            catalog_kb.save_memory("hostile", ["orders.amount"], id=bad)
        with pytest.raises(InvalidIdError) as again:
            check_id(bad)
        assert str(info.value) == str(again.value)
        for call in (catalog_kb.get, catalog_kb.forget, catalog_kb.restore):
            with pytest.raises(InvalidIdError):
                call(bad)
        with pytest.raises(KBError):
            catalog_kb.save_memory("hostile", [f"memory:{bad}"])
    assert tree_snapshot(tmp_path, skip=catalog_kb.root) == before_outside
    assert tree_snapshot(catalog_kb.root / "memories") == before_memories
    assert head(catalog_kb.root) == old
    assert git(catalog_kb.root, "status", "--porcelain") == ""
    assert_bystander_intact(catalog_kb)


CLI_IDS = ["..", "-rf", "a/../b", "a\u200fb", "x" * 300]


def test_hostile_ids_are_refused_by_the_cli(catalog_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path) -> None:
    with_bystander(catalog_kb)
    root = catalog_kb.root
    before_outside = tree_snapshot(tmp_path, skip=root)
    old = head(root)
    for bad in CLI_IDS:
        proc = invoke_cli("--kb", root, "save", "hostile", "-e", "orders.amount", f"--id={bad}")
        with pytest.raises(InvalidIdError) as expected:
            check_id(bad)
        assert proc.stderr == f"Error: {expected.value}\n"
        assert_clear_cli_error(proc)
    # After '--' an id that looks like an option is an argument, and still refused.
    for command in ("forget",):
        proc = invoke_cli("--kb", root, command, "--", "--help")
        assert_clear_cli_error(proc, "Error: Memory id '--help' is not a valid id (it starts with '-')")
    # Invalid UTF-8 in argv arrives as a lone surrogate: a clear error too.
    proc = run_raw(root, "save", "hostile", "-e", "orders.amount", b"--id=a\xffb")
    assert_clear_cli_error(proc, "Error: Memory id 'a\\xffb' holds the byte \\xff, which is not UTF-8")
    assert tree_snapshot(tmp_path, skip=root) == before_outside
    assert head(root) == old
    assert sorted(p.name for p in (root / "memories").iterdir()) == ["keep.yaml"]
    assert_bystander_intact(catalog_kb)


def test_ids_that_collide_on_macos_or_windows_are_refused(
    catalog_kb: KnowledgeBase, invoke_cli: CliRunner
) -> None:
    """'café' composed and decomposed are one file on macOS; CON, aux and nul.txt are no file at
    all on Windows. Before, each saved (and café twice, as two memories)."""
    root = catalog_kb.root
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    for bad in (nfd, "CON", "aux", "nul.txt"):
        with pytest.raises(InvalidIdError) as info:
            catalog_kb.save_memory("x", ["orders.amount"], id=bad)
        with pytest.raises(InvalidIdError) as expected:
            check_new_id(bad)
        assert str(info.value) == str(expected.value)
    proc = invoke_cli("--kb", root, "save", "x", "-e", "orders.amount", "--id", "nul.txt")
    assert proc.stderr == (
        "Error: Memory id 'nul.txt' begins with 'nul', a device name Windows reserves (CON, PRN, "
        "AUX, NUL, COM1-9, LPT1-9, in any letter case, also before a '.' as in nul.txt): its file "
        "cannot exist on Windows. Choose another id, e.g. 'kb.nul.txt'.\n"
    )
    assert_clear_cli_error(proc)
    assert list((root / "memories").iterdir()) == []
    # A decomposed id that came in a clone: readable, and its composed twin is refused.
    (root / "memories" / f"{nfd}.yaml").write_text(KEEP, encoding="utf-8")
    commit_all(root, "a decomposed id from a Mac")
    kb = KnowledgeBase(root)
    assert kb.get(nfd).to_dict()["learning"] == "An innocent bystander."
    with pytest.raises(InvalidIdError) as info:
        kb.save_memory("x", ["orders.amount"], id=nfc)
    assert str(info.value) == (
        "Memory id 'caf\u00e9' conflicts with existing 'cafe\\u0301': ids that differ only in Unicode "
        "normalisation (composed or decomposed accents) collide on macOS and Windows checkouts. Use "
        "the existing id or another name."
    )
    assert sorted(p.name for p in (root / "memories").iterdir()) == [f"{nfd}.yaml"]
    kb.forget(nfd)  # and it can still be forgotten
    assert kb.save_memory("x", ["orders.amount"], id=nfc).memory_id == nfc


# -- learnings ----------------------------------------------------------------------------------

ODD_LEARNINGS = [
    "NUL \0 in the middle",
    "---",
    "...",
    "---\n...\n",
    "a\n---\nb\n...\nc",
    "%YAML 1.1\n---\nlearning: fake\n",
    "!!python/object/apply:os.system ['touch MARKER']",
    "&a [*a, *a]",
    "learning: nested\ncreated_at: '1999-01-01T00:00:00Z'",
    "\ufeffbyte order mark",
    "windows\r\nline ends\r\n",
    "next line \x85 and line separator \u2028 and paragraph \u2029",
    "  leading spaces\n\n\n",
    "trailing spaces   \nand tabs\t\n",
    "\x1b[31mterminal escape\x1b[0m",
    "'quoted' \"double\" `back` |pipe >fold #hash",
    "\U0001f600 emoji and \u202e right-to-left override",
    "a" * 60_000,
]


def test_odd_learnings_round_trip_exactly(catalog_kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "MARKER"
    monkeypatch.chdir(tmp_path)
    for n, learning in enumerate(ODD_LEARNINGS):
        result = catalog_kb.save_memory(learning, ["orders.amount"], id=f"odd-{n}")
        assert catalog_kb.get(result.memory_id).to_dict()["learning"] == learning
        # A fresh process-independent read of the committed file gives the same text.
        committed = git(catalog_kb.root, "show", f"HEAD:memories/odd-{n}.yaml")
        assert committed == (catalog_kb.root / "memories" / f"odd-{n}.yaml").read_text(encoding="utf-8")
        assert KnowledgeBase(catalog_kb.root).get(f"odd-{n}").to_dict()["learning"] == learning
    assert not marker.exists()
    assert git(catalog_kb.root, "status", "--porcelain") == ""
    assert catalog_kb.ensure_fresh() is None or not catalog_kb.problems


def test_odd_learnings_through_the_cli(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = catalog_kb.root
    text = "---\n... NUL-free but YAML-ish: &a [*a]\n!!python/object/apply:os.system ['true']\n"
    saved = json_of(invoke_cli("--kb", root, "--json", "save", "-", "-e", "orders.amount", input=text, check=True))
    got = json_of(invoke_cli("--kb", root, "--json", "get", saved["memory_id"], check=True))
    assert got["learning"] == text
    big = "x" * 10_000_000
    proc = invoke_cli("--kb", root, "save", "-", "-e", "orders.amount", input=big)
    assert proc.stderr == (
        "Error: learning is 10000000 bytes; the limit is 65536 bytes. Split it into several memories "
        "or raise the limit with SLAYER_KB_MAX_CONTENT (bytes).\n"
    )
    assert_clear_cli_error(proc)
    assert sorted(p.name for p in (root / "memories").iterdir()) == [f"{saved['memory_id']}.yaml"]


def test_ten_megabyte_learning_is_refused_with_the_limit(catalog_kb: KnowledgeBase) -> None:
    with pytest.raises(KBError, match=r"^learning is 10000000 bytes; the limit is 65536 bytes\."):
        catalog_kb.save_memory("x" * 10_000_000, ["orders.amount"])
    with pytest.raises(KBError, match=r"^content is 10000000 bytes; the limit is 65536 bytes\."):
        catalog_kb.save_observation(title="big", content="x" * 10_000_000)
    assert list((catalog_kb.root / "memories").iterdir()) == []



def test_a_question_over_the_limit_is_refused_whole_and_one_under_it_answered(
        catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    saved = catalog_kb.save_memory("Refunds are booked as negative amounts", ["orders.amount"])
    # Just under the limit: answered, and a word in its middle still finds the memory.
    filler = "lorem ipsum " * 2_500
    long_question = filler + "negative" + " " + filler
    assert len(long_question.encode()) < MAX_QUESTION
    assert [h["id"] for h in catalog_kb.search(long_question).memories][:1] == [saved.memory_id]
    over = "word " * (MAX_QUESTION // 5 + 1)
    with pytest.raises(KBError, match=rf"^The question is {len(over)} bytes; the limit is {MAX_QUESTION} bytes\. "):
        catalog_kb.search(over)
    proc = invoke_cli("--kb", catalog_kb.root, "search", over)
    assert proc.stderr == (
        f"Error: The question is {len(over)} bytes; the limit is {MAX_QUESTION} bytes. Ask with the words that "
        "matter, or split it into several searches.\n"
    )
    assert_clear_cli_error(proc)


def test_lone_surrogates_are_a_clear_error_in_the_api(catalog_kb: KnowledgeBase) -> None:
    calls = [
        lambda: catalog_kb.save_memory("\ud800", ["orders.amount"]),
        lambda: catalog_kb.save_memory("ok", ["orders.amount"], description="\ud800"),
        lambda: catalog_kb.save_memory("ok", {"source_model": "orders", "measures": ["\ud800"]}),
        lambda: catalog_kb.save_observation(title="\ud800", content="ok"),
        lambda: catalog_kb.save_observation(title="ok", content="\udcff"),
    ]
    failures = []
    for call in calls:
        try:
            call()
        except KBError:
            continue
        except Exception as exc:  # noqa: BLE001 - the bug under test
            failures.append(type(exc).__name__)
    assert failures == []
    assert list((catalog_kb.root / "memories").iterdir()) == []


def test_invalid_utf8_in_argv_is_a_clear_error(catalog_kb: KnowledgeBase) -> None:
    root = catalog_kb.root
    for args in (
        ("save", b"bad \xff byte", "-e", "orders.amount"),
        ("save", "ok", "--title", b"t\xff"),
        ("save", "ok", "-e", "orders.amount", "--description", b"d\xff"),
    ):
        proc = run_raw(root, *args)
        assert_clear_cli_error(proc)
    proc = run_raw(root, "save", "ok", "--query", '{"source_model": "orders", "measures": ["\\ud800"]}')
    assert_clear_cli_error(proc)


def test_lone_surrogates_in_search_are_harmless(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    result = catalog_kb.search("\ud800 orders", entities=["\udcff"], query={"source_model": "\ud800"})
    assert result.memories == []
    assert any("dropped" in w for w in result.warnings)
    proc = run_raw(catalog_kb.root, "search", b"\xff\xfe")
    assert proc.returncode == 0, proc.stderr


@HYPO
@given(learning=st.text(min_size=1, max_size=300))
def test_any_learning_is_saved_exactly_or_refused(catalog_kb: KnowledgeBase, learning: str) -> None:
    fresh_random()
    try:
        result = catalog_kb.save_memory(learning, ["orders.amount"], id="h")
    except KBError as exc:
        assert blank(learning), exc  # only a learning with nothing visible may be refused
        return
    assert catalog_kb.get(result.memory_id).to_dict()["learning"] == learning


# -- entity references and SlayerQuery shapes ---------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
QUERY_KEYS = ["source_model", "dimensions", "time_dimensions", "measures", "filters", "order", "limit", "name"]
REF_TEXT = st.text(alphabet="orders.amount_customer()*:,sum -memory0123", max_size=30)
QUERY_VALUE = st.one_of(
    JSON,
    REF_TEXT,
    st.lists(st.one_of(REF_TEXT, JSON, st.dictionaries(st.sampled_from(["name", "formula", "column", "dimension"]),
                                                       st.one_of(REF_TEXT, JSON), max_size=2)), max_size=3),
)
QUERIES = st.dictionaries(st.sampled_from(QUERY_KEYS), QUERY_VALUE, max_size=5)


@HYPO
@given(linked=st.one_of(JSON, st.lists(st.one_of(REF_TEXT, JSON), max_size=4), QUERIES))
def test_wrong_linked_entities_give_kb_errors_only(catalog_kb: KnowledgeBase, linked: Any) -> None:
    fresh_random()
    try:
        result = catalog_kb.save_memory("shape test", linked, id="shape")
    except KBError:
        return
    assert catalog_kb.get(result.memory_id).to_dict()["entities"] == result.resolved_entities


@HYPO
@given(query=st.one_of(QUERIES, JSON), entities=st.lists(st.one_of(REF_TEXT, st.text(max_size=10)), max_size=3))
def test_wrong_queries_never_break_search(catalog_kb: KnowledgeBase, query: Any, entities: list[str]) -> None:
    try:
        result = catalog_kb.search(entities=entities, query=query)
    except KBError:
        return
    assert isinstance(result.warnings, list)


WRONG_QUERY_JSON = [
    "[]",
    '"orders"',
    "42",
    "null",
    "{",
    "{}",
    '{"source_model": null}',
    '{"source_model": ["orders"]}',
    '{"source_model": "nope"}',
    '{"source_model": "orders", "measures": {"a": 1}}',
    '{"source_model": "orders", "dimensions": [[["x"]]]}',
    '{"source_model": "orders", "filters": [{"a": 1}]}',
    '{"source_model": "orders", "order": [42]}',
    '{"source_model": "orders", "time_dimensions": "created_at"}',
]


def test_wrong_query_json_on_the_cli(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = catalog_kb.root
    script = (
        "import json, sys\n"
        "from slayer_kb.cli.common import read_query\n"
        "from slayer_kb import KnowledgeBase\n"
        "from slayer_kb.core.errors import KBError\n"
        "kb = KnowledgeBase(sys.argv[1])\n"
        "out = []\n"
        "for text in json.loads(sys.stdin.read()):\n"
        "    try:\n"
        "        kb.save_memory('q', read_query(text))\n"
        "        out.append('saved')\n"
        "    except KBError as exc:\n"
        "        out.append('Error: ' + str(exc))\n"
        "print(json.dumps(out))\n"
    )
    # One process for the whole list (the parsing is the CLI's own read_query), then two real runs.
    proc = subprocess.run(
        [sys.executable, "-c", script, str(root)],
        input=json.dumps(WRONG_QUERY_JSON),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    outcomes = json.loads(proc.stdout)
    assert all(o.startswith("Error: ") for o in outcomes), outcomes
    for text in ("[]", '{"source_model": "orders", "measures": {"a": 1}}'):
        cli = invoke_cli("--kb", root, "save", "q", "--query", text)
        assert_clear_cli_error(cli)
        search = invoke_cli("--kb", root, "--json", "search", "--query", text)
        assert "Traceback" not in search.stderr
    assert list((root / "memories").iterdir()) == []


TOO_DEEP_QUERY = (
    "--query nests arrays and objects more than 64 levels deep, the most slayer-kb accepts; a "
    "SlayerQuery needs only a few levels: send a flatter one."
)


def test_query_json_nested_a_thousand_deep_is_a_usage_error(catalog_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path) -> None:
    """It was a RecursionError traceback, and nothing on stdout under --json."""
    root = catalog_kb.root
    deep = '{"source_model": "orders", "filters": ' + "[" * 1000 + "]" * 1000 + "}"
    search = invoke_cli("--kb", root, "--json", "search", "--query", deep)
    assert (search.returncode, search.stderr) == (1, f"Error: {TOO_DEEP_QUERY}\n")
    assert json_of(search) == {"error": {"type": "invalid_input", "message": TOO_DEEP_QUERY}}
    query_file = tmp_path / "deep.json"
    query_file.write_text(deep)
    save = invoke_cli("--kb", root, "save", "q", "--query", f"@{query_file}")
    assert (save.returncode, save.stdout, save.stderr) == (1, "", f"Error: {TOO_DEEP_QUERY}\n")
    # 64 levels are still read (and then judged as a query), brackets inside strings never count.
    from slayer_kb.cli.common import read_query

    edge = read_query('{"a": ' + "[" * 63 + "]" * 63 + ', "b": "' + "[" * 100 + '"}')
    assert edge["b"] == "[" * 100
    with pytest.raises(KBError, match="more than 64 levels deep"):
        read_query('{"a": ' + "[" * 64 + "]" * 64 + "}")
    assert list((root / "memories").iterdir()) == []


def test_deep_queries_in_the_api_are_usage_errors(catalog_kb: KnowledgeBase) -> None:
    nested: Any = "amount"
    for _ in range(2000):
        nested = [nested]
    query = {"source_model": "orders", "filters": nested}
    message = (
        "The query nests arrays and objects more than 64 levels deep, the most slayer-kb accepts; "
        "a SlayerQuery needs only a few levels: send a flatter one."
    )
    with pytest.raises(InvalidInputError) as info:
        catalog_kb.save_memory("q", query)
    assert str(info.value) == message
    # search drops a query it cannot use, with a warning (its documented leniency)
    assert catalog_kb.search(query=query).warnings[0] == f"query dropped: {message}"
    assert list((catalog_kb.root / "memories").iterdir()) == []


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\,:ab \u00e9\ud800', max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='[]{}"\\a', max_size=3), inner, max_size=3),
    max_leaves=30,
)


@given(JSON_VALUES, st.booleans())
def test_json_depth_is_measured_without_parsing(value: Any, ascii_only: bool) -> None:
    """The cap's measure of JSON text agrees with the decoded value's, whatever the strings hold."""
    text = json.dumps(value, ensure_ascii=ascii_only)
    depth = value_depth(value, limit=1000)
    assert text_depth(text) == depth
    for limit in range(depth):  # what is cut off deeper than limit leaves exactly limit levels
        assert value_depth(json.loads(cut_deep(text, limit, "X")), limit=1000) == limit
    assert json.loads(cut_deep(text, depth, "X")) == value


def test_a_value_that_contains_itself_is_too_deep() -> None:
    looped: dict[str, Any] = {"source_model": "orders"}
    looped["filters"] = [looped]
    assert value_depth(looped) == 65


# -- search words -------------------------------------------------------------------------------

WHOOSH_SYNTAX = st.text(alphabet='AND OR NOT TO ANDNOT ANDMAYBE ()[]{}"\'*?~^:/\\+-!<>=.,\0amount orders', max_size=40)


@pytest.fixture
def searchable(catalog_kb: KnowledgeBase) -> KnowledgeBase:
    catalog_kb.save_memory("Refunds are counted in orders.amount", ["orders.amount"], id="refunds")
    catalog_kb.save_observation(title="Auth model", content="JWT", topic_key="architecture/auth")
    return catalog_kb


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.one_of(WHOOSH_SYNTAX, st.text(max_size=40)), match=st.sampled_from(["fused", "all-first", "all"]))
def test_search_words_full_of_whoosh_syntax_never_raise(searchable: KnowledgeBase, words: str, match: str) -> None:
    result = searchable.search(words, match=match, limit=5)
    for hit in result.memories:
        assert hit["id"] in ("refunds", "1")


def test_whoosh_syntax_is_literal_on_the_cli(searchable: KnowledgeBase, invoke_cli: CliRunner) -> None:
    proc = invoke_cli("--kb", searchable.root, "--json", "search", 'title:"Auth" OR refun* AND (NOT x) [a TO z] ~2 ^3')
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


# -- memory files edited by hand ----------------------------------------------------------------


def bomb(depth: int = 9, prefix: str = "") -> str:
    """A YAML billion-laughs: 9 levels of 9 aliases each (9**9 = 387 million leaves)."""
    lines = [f'{prefix}l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, depth):
        refs = ",".join([f"*l{n - 1}"] * 9)
        lines.append(f"{prefix}l{n}: &l{n} [{refs}]")
    return "\n".join(lines) + "\n"


HAND_EDITED = {
    "invalid-yaml": ("learning: [unclosed\n" + CREATED, "invalid YAML"),
    "tab-indent": ("learning: x\nentities:\n\t- a\n" + CREATED, "invalid YAML"),
    "duplicate-key": ("learning: first\nlearning: second\n" + CREATED, "duplicate key 'learning'"),
    "bomb-top": (bomb() + "learning: x\n" + CREATED, "uses a YAML alias"),
    "bomb-learning": ("bomb:\n" + bomb(prefix="  ") + "learning: *l8\n" + CREATED, "uses a YAML alias"),
    "bomb-query": ("learning: x\n" + CREATED + "query:\n  source_model: orders\n" + bomb(prefix="  "), "uses a YAML alias"),
    "bomb-entities": (
        "learning: x\n" + CREATED + "query:\n" + bomb(prefix="  ") + "entities: *l8\n",
        "uses a YAML alias",
    ),
    "python-apply": (
        "learning: !!python/object/apply:os.system ['touch {marker}']\n" + CREATED,
        "could not determine a constructor",
    ),
    "python-top": ("!!python/object/apply:os.system ['touch {marker}']\n", "could not determine a constructor"),
    "python-new": (
        "learning: !!python/object/new:subprocess.Popen [['touch', '{marker}']]\n" + CREATED,
        "could not determine a constructor",
    ),
    "python-name": ("learning: !!python/name:os.system\n" + CREATED, "could not determine a constructor"),
    "not-a-mapping": ("- learning: x\n", "must be a mapping"),
    "empty": ("", "must be a mapping"),
    "wrong-types": ("learning: 42\n" + CREATED, "'learning' must be a string"),
    "id-key": ("id: other\nlearning: x\n" + CREATED, "remove the id key"),
    "not-utf8": (None, "utf-8"),
    # Past the YAML composer's recursion (a RecursionError crashed search, get and validate) and
    # within it (then anything walking the value would recurse).
    "deep-flow": ("learning: x\n" + CREATED + "query: " + "[" * 3000 + "]" * 3000 + "\n", "more than 64 levels deep"),
    "deep-block": ("learning: x\n" + CREATED + "query:\n" + "".join(f"{'  ' * n}  k{n}:\n" for n in range(100))
                   + "  " * 101 + "v\n", "more than 64 levels deep"),
}


# An alias bomb expanded would take hours (and gigabytes): a generous limit, not a measurement.
@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", sorted(HAND_EDITED))
def test_hand_edited_files_are_skipped_with_a_warning(catalog_kb: KnowledgeBase, tmp_path: Path, name: str) -> None:
    with_bystander(catalog_kb)
    marker = tmp_path / "PWNED"
    text, expected = HAND_EDITED[name]
    path = catalog_kb.root / "memories" / f"{name}.yaml"
    if text is None:
        path.write_bytes(b"learning: caf\xe9\n" + CREATED.encode())
    else:
        path.write_text(text.replace("{marker}", str(marker)), encoding="utf-8")
    commit_all(catalog_kb.root, f"hand edit {name}")
    old = head(catalog_kb.root)
    kb = KnowledgeBase(catalog_kb.root)
    result = kb.search(entities=["orders.amount"])
    assert [hit["id"] for hit in result.memories] == ["keep"]
    skipped = [w for w in result.warnings if w.startswith(f"memories/{name}.yaml")]
    assert len(skipped) == 1 and skipped[0].endswith("(skipped)"), result.warnings
    assert expected.lower() in skipped[0].lower(), result.warnings
    with pytest.raises(MemoryFileError) as info:
        kb.get(name).to_dict()
    assert str(info.value).startswith(f"memories/{name}.yaml") and expected.lower() in str(info.value).lower()
    # Saving over it with a given id repairs it; other memories are untouched.
    kb.save_memory("repaired", ["orders.amount"], id=name)
    assert kb.get(name).to_dict()["learning"] == "repaired"
    assert not marker.exists()
    assert git(catalog_kb.root, "rev-list", "--count", f"{old}..HEAD").strip() == "1"
    assert git(catalog_kb.root, "status", "--porcelain") == ""
    assert_bystander_intact(catalog_kb)


# An alias bomb expanded would take hours (and gigabytes): a generous limit, not a measurement.
@pytest.mark.timeout(120)
def test_hand_edited_files_on_the_cli(catalog_kb: KnowledgeBase, invoke_cli: CliRunner, tmp_path: Path) -> None:
    with_bystander(catalog_kb)
    marker = tmp_path / "PWNED"
    memories = catalog_kb.root / "memories"
    (memories / "bomb.yaml").write_text(bomb() + "learning: x\n" + CREATED, encoding="utf-8")
    (memories / "evil.yaml").write_text(f"learning: !!python/object/apply:os.system ['touch {marker}']\n" + CREATED)
    proc = invoke_cli("--kb", catalog_kb.root, "search", "-e", "orders.amount")
    assert proc.returncode == 0, proc.stderr
    assert "keep" in proc.stdout
    assert "warning: memories/bomb.yaml:2: uses a YAML alias (*name); write the value out instead" in proc.stdout
    assert "warning: memories/evil.yaml:1: invalid YAML: could not determine a constructor" in proc.stdout
    get = invoke_cli("--kb", catalog_kb.root, "get", "evil")
    assert_clear_cli_error(get, "Error: memories/evil.yaml:1: invalid YAML: could not determine a constructor")
    assert not marker.exists()
    assert_bystander_intact(catalog_kb)


def test_validate_survives_an_alias_bomb(catalog_kb: KnowledgeBase) -> None:
    (catalog_kb.root / "memories" / "bomb.yaml").write_text(bomb() + "learning: x\n" + CREATED, encoding="utf-8")
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "slayer_kb", "--kb", str(catalog_kb.root), "validate"],
            capture_output=True,
            text=True,
            timeout=120,  # generous for a loaded machine; a bomb expanded would take hours
        )
    except subprocess.TimeoutExpired:
        pytest.fail("validate hung on a YAML alias bomb")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "memories/bomb.yaml:2: uses a YAML alias (*name); write the value out instead" in proc.stdout


def test_validate_survives_a_deeply_nested_file(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    memories = catalog_kb.root / "memories"
    for name, depth in (("deep", 3000), ("deepish", 300)):
        text = "learning: x\n" + CREATED + "query: " + "[" * depth + "]" * depth + "\n"
        (memories / f"{name}.yaml").write_text(text, encoding="utf-8")
    proc = invoke_cli("validate", cwd=catalog_kb.root)
    assert (proc.returncode, proc.stderr) == (1, "")
    message = "nests lists and mappings more than 64 levels deep below its keys; write its values flatter"
    assert proc.stdout == (
        f"memories/deep.yaml:1: {message}\nmemories/deepish.yaml:1: {message}\n2 problems in 2 files (2 files checked)\n"
    )


# -- symlinks -----------------------------------------------------------------------------------


def test_symlinked_memory_is_never_followed(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    with_bystander(catalog_kb)
    outside = tmp_path / "outside" / "secret.yaml"
    outside.parent.mkdir()
    secret = "learning: a secret outside the KB\n" + CREATED
    outside.write_text(secret)
    link = catalog_kb.root / "memories" / "link.yaml"
    link.symlink_to(outside)
    commit_all(catalog_kb.root, "a committed symlink")
    kb = KnowledgeBase(catalog_kb.root)
    result = kb.search("secret")
    assert result.memories == []
    assert "memories/link.yaml: is a symlink, which slayer-kb never follows; put the file itself in memories/ (skipped)" in result.warnings
    with pytest.raises(MemoryFileError, match="^memories/link.yaml: is a symlink; refusing to follow it; move it out of memories/ by hand, then retry$"):
        kb.get("link").to_dict()
    assert "link" not in [m["id"] for m in kb.newest(limit=None)]
    # A save to that id replaces the link itself and never writes through it.
    kb.save_memory("a regular memory now", ["orders.amount"], id="link")
    assert outside.read_text() == secret
    assert not link.is_symlink()
    assert kb.get("link").to_dict()["learning"] == "a regular memory now"
    kb.forget("link")
    assert outside.read_text() == secret
    assert git(catalog_kb.root, "status", "--porcelain") == ""
    assert_bystander_intact(catalog_kb)


def test_symlinked_memories_folder_is_never_written_through(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    memories = catalog_kb.root / "memories"
    memories.rmdir()
    memories.symlink_to(outside, target_is_directory=True)
    old = head(catalog_kb.root)
    try:
        catalog_kb.save_memory("through the link", ["orders.amount"], id="thru")
    except KBError:
        pass
    assert list(outside.iterdir()) == []
    assert head(catalog_kb.root) == old
