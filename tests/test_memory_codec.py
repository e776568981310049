from __future__ import annotations

from typing import Literal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from slayer_kb.core.errors import MemoryFileError
from slayer_kb.core.memory import Memory, dumps, loads, with_entities
from testing import examples

EXAMPLE = """\
title: Paid revenue by status
type: decision
learning: |
  Revenue counts paid orders only; refunds are negative rows in orders.amount.
description: Paid revenue rule
entities:
- shop.orders.amount
- shop.orders.status
query:
  source_model: orders
  measures:
  - formula: sum(amount)
  filters:
  - status = 'paid'
project: analytics
scope: project
topic_key: decision/paid-revenue
session_id: manual-save-analytics
revision_count: 1
duplicate_count: 1
created_at: '2026-11-29T20:42:40Z'
updated_at: '2026-11-29T20:42:40Z'
"""


def test_design_example_round_trips_byte_for_byte() -> None:
    memory = loads(EXAMPLE, "kb.paid-revenue")
    assert memory.entities == ["shop.orders.amount", "shop.orders.status"]
    assert memory.query == {
        "source_model": "orders",
        "measures": [{"formula": "sum(amount)"}],
        "filters": ["status = 'paid'"],
    }
    assert dumps(memory) == EXAMPLE


def test_yaml_lookalikes_are_quoted() -> None:
    memory = Memory(
        id="1",
        learning="no",
        created_at="2026-11-29T20:42:40Z",
        title="1.10",
        type="yes",
        project="2026-01-01",
    )
    text = dumps(memory)
    assert text == (
        "title: '1.10'\ntype: 'yes'\nlearning: 'no'\nproject: '2026-01-01'\ncreated_at: '2026-11-29T20:42:40Z'\n"
    )
    assert loads(text, "1") == memory


def test_trailing_spaces_keep_block_style() -> None:
    memory = Memory(id="1", learning="line one  \nline two\t\n", created_at="2026-11-29T20:42:40Z")
    text = dumps(memory)
    assert text.startswith("learning: |\n  line one  \n  line two\t\n")
    assert loads(text, "1") == memory


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("learning: [unclosed\ncreated_at: x\n", 2, "invalid YAML"),
        ("- a\n- b\n", 1, "a memory file must be a mapping"),
        (
            "id: 3\nlearning: x\ncreated_at: '2026-11-29T20:42:40Z'\n",
            1,
            "unknown key 'id' (the file name is the id; remove the id key)",
        ),
        ("learning: x\ncolour: red\ncreated_at: '2026-11-29T20:42:40Z'\n", 2, "unknown key 'colour'"),
        (
            "learning: x\nentities: shop.orders\ncreated_at: '2026-11-29T20:42:40Z'\n",
            2,
            "'entities' must be a list of entity strings",
        ),
        (
            "learning: 5\ncreated_at: '2026-11-29T20:42:40Z'\n",
            1,
            "'learning' must be a string, not a number (quote it)",
        ),
        (
            "learning: x\nlearning: y\ncreated_at: '2026-11-29T20:42:40Z'\n",
            2,
            "duplicate key 'learning' (first on line 1); keep one",
        ),
        (
            "learning: x\n'learning' : y\ncreated_at: '2026-11-29T20:42:40Z'\n",
            2,
            "duplicate key 'learning' (first on line 1); keep one",
        ),
        ("learning: x\n", 1, "missing required key 'created_at'"),
        (
            "learning: x\nscope: team\ncreated_at: '2026-11-29T20:42:40Z'\n",
            2,
            "'scope' must be one of project, personal, not 'team'",
        ),
        (
            "learning: x\nrevision_count: true\ncreated_at: '2026-11-29T20:42:40Z'\n",
            2,
            "'revision_count' must be a whole number of at least 1",
        ),
        ("learning: x\ncreated_at: yesterday\n", 2, "'created_at' must be a UTC time"),
        ("learning: !!python/object:os.system x\ncreated_at: '2026-11-29T20:42:40Z'\n", 1, "invalid YAML"),
    ],
)
def test_broken_files_name_path_line_and_problem(text: str, line: int, message: str) -> None:
    with pytest.raises(MemoryFileError) as info:
        loads(text, "7")
    assert info.value.line == line
    assert str(info.value).startswith(f"memories/7.yaml:{line}: ")
    assert message in str(info.value)


_OVER_CEILING = "x" * (2 * 1024 * 1024 + 1)
_TOO_LONG = (f"is {len(_OVER_CEILING)} bytes; a text in a memory file may hold at most 2097152 bytes (2 MiB): "
             "split it into memories of at most 2097152 bytes each")


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        (f"title: x\nlearning: {_OVER_CEILING}\ncreated_at: '2026-11-29T20:42:40Z'\n", 2, f"'learning' {_TOO_LONG}"),
        (f"title: {_OVER_CEILING}\nlearning: x\ncreated_at: '2026-11-29T20:42:40Z'\n", 1, f"'title' {_TOO_LONG}"),
        (f"learning: x\nentities:\n- {_OVER_CEILING}\ncreated_at: '2026-11-29T20:42:40Z'\n", 2,
         f"'entities' holds an entity that {_TOO_LONG}"),
        (f"learning: x\nquery:\n  source_model: {_OVER_CEILING}\ncreated_at: '2026-11-29T20:42:40Z'\n", 2,
         f"'query' holds a string that {_TOO_LONG}"),
        (f"learning: x\nquery:\n  ? {_OVER_CEILING}\n  : 1\ncreated_at: '2026-11-29T20:42:40Z'\n", 2,
         f"'query' holds a string that {_TOO_LONG}"),
    ],
    ids=["learning", "title", "entity", "query", "query-key"],
)
def test_a_text_over_the_content_ceiling_is_a_broken_file(text: str, line: int, message: str) -> None:
    # A save never writes one (SLAYER_KB_MAX_CONTENT is at most 2 MiB): a hand-made one would
    # cost every reader minutes of indexing and embedding.
    with pytest.raises(MemoryFileError) as info:
        loads(text, "7")
    assert str(info.value) == f"memories/7.yaml:{line}: {message}"


def test_a_text_at_the_content_ceiling_is_read_whole() -> None:
    learning = "\u00e9" * (1024 * 1024)  # 2 MiB in UTF-8: the ceiling counts bytes, not characters
    memory = loads(f"learning: {learning}\ncreated_at: '2026-11-29T20:42:40Z'\n", "7")
    assert memory.learning == learning


def test_alias_bomb_is_refused_quickly() -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    for level in "bcdefghij":
        prev = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [{', '.join(['*' + prev] * 10)}]\n"
    text = (
        "learning: x\ncreated_at: '2026-11-29T20:42:40Z'\nquery:\n  source_model: orders\n  "
        + bomb.replace("\n", "\n  ").rstrip()
        + "\n"
    )
    with pytest.raises(MemoryFileError, match=r"uses a YAML alias \(\*name\); write the value out instead"):
        loads(text, "1")


def test_with_entities_changes_only_the_entity_lines() -> None:
    memory = loads(EXAMPLE, "x")
    rewritten = with_entities(EXAMPLE, memory, ["shop.orders.status"])
    assert rewritten == EXAMPLE.replace("- shop.orders.amount\n", "")
    emptied = with_entities(EXAMPLE, memory, [])
    assert emptied == EXAMPLE.replace("entities:\n- shop.orders.amount\n- shop.orders.status\n", "")


TEXT = st.text(st.characters(codec="utf-8"), min_size=1).filter(lambda s: s.strip() != "")
LINES = (
    st.lists(
        st.one_of(
            st.sampled_from(
                [
                    "---",
                    "...",
                    "- item",
                    "key: value",
                    "# c",
                    "  indented",
                    "",
                    "|",
                    "'q'",
                    "no",
                    "1.10",
                    "2026-01-01",
                ]
            ),
            TEXT,
        ),
        min_size=1,
        max_size=6,
    )
    .map(lambda lines: "\n".join(lines))
    .filter(lambda s: s.strip() != "")
)


@settings(max_examples=examples(300))
@given(
    learning=st.one_of(TEXT, LINES, LINES.map(lambda s: s + "\n"), LINES.map(lambda s: s + "\n\n\n")),
    title=st.one_of(st.none(), TEXT),
    entities=st.lists(st.from_regex(r"[a-z]{1,5}(\.[a-z_]{1,6}){0,2}", fullmatch=True), max_size=4),
    query=st.one_of(
        st.none(), st.fixed_dictionaries({"source_model": TEXT, "filters": st.lists(TEXT, max_size=2)})
    ),
)
def test_round_trip_is_exact_and_stable(
    learning: str, title: str | None, entities: list[str], query: dict | None
) -> None:
    memory = Memory(
        id="1",
        learning=learning,
        created_at="2026-11-29T20:42:40Z",
        title=title,
        entities=entities,
        query=query,
    )
    text = dumps(memory)
    back = loads(text, "1")
    assert back == memory
    assert dumps(back) == text


@settings(max_examples=examples(150))
@given(
    learning=LINES,
    old=st.lists(st.from_regex(r"[a-z]{1,5}(\.[a-z_]{1,6}){0,2}", fullmatch=True), max_size=4),
    new=st.lists(st.from_regex(r"[a-z]{1,5}(\.[a-z_]{1,6}){0,2}", fullmatch=True), max_size=4),
)
def test_with_entities_always_reads_back_as_the_new_list(learning: str, old: list[str], new: list[str]) -> None:
    memory = Memory(id="1", learning=learning, created_at="2026-11-29T20:42:40Z", entities=old, title="t")
    text = dumps(memory)
    assert loads(with_entities(text, memory, new), "1") == memory.evolve(entities=new)


@pytest.mark.parametrize(
    "text",
    [
        "learning: x\nentities: [a.b, c.d]\ncreated_at: '2026-11-29T20:42:40Z'\n",
        "learning: x\nentities:\n  - a.b\n  - c.d\n# kept comment\ncreated_at: '2026-11-29T20:42:40Z'\n",
        "entities:\n- a.b\n- c.d\nlearning: |\n  entities:\n  - not a key\ncreated_at: '2026-11-29T20:42:40Z'\n",
    ],
)
def test_with_entities_on_hand_formatted_files(text: str) -> None:
    memory = loads(text, "1")
    rewritten = with_entities(text, memory, ["c.d"])
    assert loads(rewritten, "1") == memory.evolve(entities=["c.d"])
    assert "learning: x\n" in rewritten or "not a key" in rewritten


def _duplicate_by_lines(text: str) -> tuple[int, str] | None:
    """The reference: the first repeated top-level key, line by line as str.splitlines sees them."""
    import re

    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = re.match(r"([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]|$)", line)
        if match:
            if match.group(1) in seen:
                return number, match.group(1)
            seen[match.group(1)] = number
    return None


def _nested_duplicate_by_loader(text: str) -> tuple[int, str] | None | Literal[False]:
    """The reference for a text that reads: the first key any mapping holds twice, as PyYAML's
    own constructor meets the mappings (an indented ``learning:`` twice under ``learning:``, or
    ``"learning":`` beside ``learning:``); False for a text that does not read."""
    import yaml

    found: list[tuple[int, str]] = []

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # the parser files are read with
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[object, object]:
            seen: set[str] = set()
            for key, _value in node.value:
                if key.value in seen:
                    found.append((key.start_mark.line + 1, key.value))
                seen.add(key.value)
            return super().construct_mapping(node, deep)

    try:
        yaml.load(text, Loader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError:
        return False  # it does not read: the loader reports it, and the lines tell of a key twice
    return min(found) if found else None


@settings(max_examples=examples(300))
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                ["learning", "title", "a-b", "_x", "9x", " learning", "x", '"learning"', "'x'", "-x", "a:b", "a#b",
                 "!!str learning", "&a x", "a b"]
            ),
            st.sampled_from([":", ": ", " :", ":x", "", ":\t"]),
            st.sampled_from(["", "v", " |"]),
            st.sampled_from(["\n", "\r\n", "\r", "\u2028", "\x85", "\n  ", "\n- "]),
        ),
        max_size=8,
    )
)
@example([("learning", ":", "", "\n- "), ("x", ": ", " |", "\n  "), ("x", ": ", "v", "\n")])  # a key after "- x: |"
def test_duplicate_keys_are_found_as_line_by_line(parts: list[tuple[str, str, str, str]]) -> None:
    from slayer_kb.core.memory import check_duplicate_keys

    text = "".join("".join(part) for part in parts)
    # A text that reads: what the reader's own constructor finds in it; else the lines tell.
    read = _nested_duplicate_by_loader(text)
    expected = _duplicate_by_lines(text) if read is False else read
    if expected is None:
        check_duplicate_keys(text, "m.yaml")
    else:
        with pytest.raises(MemoryFileError) as info:
            check_duplicate_keys(text, "m.yaml")
        assert (info.value.line, f"duplicate key '{expected[1]}'") == (expected[0], info.value.message.split(" (")[0])


@pytest.mark.parametrize(("text", "line", "key", "first"), [
    ("learning: kept by hand\n!!str learning: b\n", 2, "learning", 1),  # fmt kept "b" alone, without a word
    ("learning: x\n&a learning: b\n", 2, "learning", 1),
    ("learning: x\n? learning\n: b\n", 2, "learning", 1),
    ("learning: v\nquery:\n  measures:\n  - formula: |\n      sum(amount)\n    name: revenue\n    name: total\n", 7, "name", 6),
    ("\ufefflearning: kept by hand\nlearning: b\n", 2, "learning", 1),  # the loader passes a byte-order mark over
    ("learning: v\nquery:\n  source_model: \"orders\n and more\"\n  source_model: b\n", 5, "source_model", 3),
])
def test_a_key_written_twice_in_a_way_the_lines_do_not_show_is_found(text: str, line: int, key: str, first: int) -> None:
    from slayer_kb.core.memory import check_duplicate_keys

    with pytest.raises(MemoryFileError) as info:
        check_duplicate_keys(text + "created_at: '2026-11-29T20:42:40Z'\n", "m.yaml")
    assert (info.value.line, info.value.message) == (line, f"duplicate key '{key}' (first on line {first}); keep one")


def test_a_quoted_value_whose_next_line_looks_like_a_key_is_no_duplicate() -> None:
    text = "learning: \"a\nlearning: b\"\ncreated_at: '2026-11-29T20:42:40Z'\n"
    assert loads(text, "m").learning == "a learning: b"


def test_a_long_line_costs_the_duplicate_key_check_one_pass() -> None:
    """A line of a million blanks with no key on it: the key pattern once split the blanks
    between two parts in every way (about 14 minutes for this line; 12 s for 120,000 blanks)."""
    from slayer_kb.core.memory import check_duplicate_keys

    for blanks in (" ", " \t"):
        check_duplicate_keys("learning: v\nentities:\n- a" + blanks * 500_000 + "b\n", "m.yaml")
        check_duplicate_keys("k" + blanks * 500_000 + ": v\nx: w\n", "m.yaml")


def test_a_date_out_of_range_is_a_file_error_on_its_line() -> None:
    with pytest.raises(MemoryFileError) as info:
        loads("learning: x\ncreated_at: 0001-01-01 00:00:00+01:00\n", "m")
    assert (info.value.path, info.value.line) == ("memories/m.yaml", 2)
    assert info.value.message.startswith("'created_at' ")
