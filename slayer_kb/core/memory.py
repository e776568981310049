"""The Memory record and its canonical YAML file form.

One file per memory, keys in a fixed order, multi-line text as ``|`` block scalars, no ``id`` key
(the file name is the id). Dumping a loaded canonical file gives back the same bytes, so a pull
request shows only what really changed. Files are read only through PyYAML's safe loader.
"""

from __future__ import annotations

import copy
import datetime as _dt
import re
import unicodedata
from dataclasses import dataclass, field, fields, replace
from typing import Any

import yaml

from . import yamlio
from .errors import MemoryFileError
from .nesting import MAX_DEPTH, value_depth
from .text import kind_of, shown_value

_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

KEY_ORDER: tuple[str, ...] = (
    "title",
    "type",
    "learning",
    "description",
    "entities",
    "query",
    "project",
    "scope",
    "topic_key",
    "session_id",
    "revision_count",
    "duplicate_count",
    "created_at",
    "updated_at",
    "deleted_at",
)
STRING_KEYS = frozenset(
    {"title", "type", "learning", "description", "project", "scope", "topic_key", "session_id"}
)
COUNT_KEYS = frozenset({"revision_count", "duplicate_count"})
TIME_KEYS = frozenset({"created_at", "updated_at", "deleted_at"})
# Keys that memories are looked up by: read in Unicode NFC, as a save stores them, so a file a
# person wrote with decomposed accents (macOS) is the same topic and project (``fmt`` rewrites it).
COMPOSED_KEYS = frozenset({"project", "topic_key"})
# Engram's observation types, stored lower-case however they are written (engram.given_type).
RECOGNISED_TYPES: tuple[str, ...] = (
    "decision",
    "architecture",
    "bugfix",
    "pattern",
    "config",
    "discovery",
    "learning",
    "manual",
)


def canonical_type(type: str) -> str:
    """One of Engram's types in any letter case (and with blanks around it) as Engram spells it;
    any other type as given."""
    return low if (low := type.strip().lower()) in RECOGNISED_TYPES else type


SCOPES = ("project", "personal")
MAX_DESCRIPTION = 500
# A memory file larger than this is reported and skipped, never parsed or indexed (a hand-made
# 50 MB file cost a minute of every command that indexed it). A save writes far less: its
# content is capped by the KB's limit (SLAYER_KB_MAX_CONTENT), at most MAX_CONTENT_CEILING,
# and YAML's escapes at most quadruple it.
MAX_FILE_BYTES = 16 * 1024 * 1024
# Also what a file's text value (a learning, a title, an entity, a query's string) may hold: a
# longer one, made by hand, is a broken file, so no reader indexes or embeds it.
MAX_CONTENT_CEILING = 2 * 1024 * 1024
DEFAULT_MAX_CONTENT = 64 * 1024  # a text's size limit unless SLAYER_KB_MAX_CONTENT gives another
# A hand-made alias bomb expands into shared references; walking it counts each visit, so a
# budget stops it long before memory runs out.
MAX_QUERY_NODES = 10_000
# A time as the schemas write one (memory.schema.json), for ``fullmatch``: UTC, its parts grouped
# (year, month, day, hour, minute, second, then any fraction of the second with its dot).
TIMESTAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(\.\d+)?Z")


@dataclass
class Memory:
    id: str
    learning: str
    created_at: str
    title: str | None = None
    type: str | None = None
    description: str | None = None
    entities: list[str] = field(default_factory=list)
    query: dict[str, Any] | None = None
    project: str | None = None
    scope: str | None = None
    topic_key: str | None = None
    session_id: str | None = None
    revision_count: int | None = None
    duplicate_count: int | None = None
    updated_at: str | None = None
    deleted_at: str | None = None

    @property
    def is_deleted(self) -> bool:
        return self.deleted_at is not None

    @property
    def file_name(self) -> str:
        return f"{self.id}.yaml"

    def to_dict(self) -> dict[str, Any]:
        """Every field, absent values as None, in the order of CLI.md's ``get``.

        Built by hand rather than with ``dataclasses.asdict``, which deep-copies every string:
        indexing a cascade's 10,000 memories spent 1.7 s in it.
        """
        data = {key: getattr(self, key) for key in ("id", *KEY_ORDER)}
        data["entities"] = list(self.entities)
        if self.query is not None:
            data["query"] = copy.deepcopy(self.query)
        return data

    def evolve(self, **changes: Any) -> Memory:
        return replace(self, **changes)


FIELD_NAMES = frozenset(f.name for f in fields(Memory)) - {"id"}


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def utc_time(seconds: int) -> str:
    """A Unix time as a memory's time (``utc_now``'s form)."""
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(value: str) -> _dt.datetime:
    """A memory's time (``TIMESTAMP``'s form) in UTC, to the second."""
    parts = TIMESTAMP.fullmatch(value)
    if parts is None:
        raise ValueError(f"not a time: {value!r}")
    return calendar_time(*map(int, parts.groups()[:6]))


def time_order(value: str) -> tuple[str, str]:
    """A key that puts memory times (``TIMESTAMP``'s form) in time order, fractions of a second
    included: as plain text ``10:00:00.5Z`` sorts before ``10:00:00Z``. It reads no calendar, so
    a time no calendar has (a 31st of February, which the form lets through) still sorts."""
    return value[:19], value[19:].removesuffix("Z")


def calendar_time(year: int, month: int, day: int, hour: int, minute: int, second: int) -> _dt.datetime:
    """The UTC time of those parts; ValueError for one no calendar has (a 31st of February). Year
    0 is ISO 8601's and RFC 3339's (the schema's date-time, 1 BC), not Python's, whose years start
    at 1: its date is checked in 2000, which the calendar repeats every 400 years (both leap), and
    it is held as the earliest time Python has, which is all it is compared for (a window, now)."""
    if year == 0:
        _dt.datetime(2000, month, day, hour, minute, second)
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    return _dt.datetime(year, month, day, hour, minute, second, tzinfo=_dt.timezone.utc)


# ---------------------------------------------------------------------------------------------
# Dumping


def first_difference(text: str, canonical: str) -> int:
    """The first line (1-based) where ``text`` differs from its canonical form."""
    lines, wanted = text.splitlines(keepends=True), canonical.splitlines(keepends=True)
    for number, (have, want) in enumerate(zip(lines, wanted, strict=False), 1):
        if have != want:
            return number
    return min(len(lines), len(wanted)) + 1 if lines else 1


def dumps(memory: Memory) -> str:
    """The canonical file text of ``memory``."""
    parts: list[str] = []
    for key in KEY_ORDER:
        value = getattr(memory, key)
        if value is None or (key == "entities" and not value):
            continue
        parts.append(dump_key(key, value))
    return "".join(parts)


def dump_key(key: str, value: Any) -> str:
    if isinstance(value, str) and "\n" in value:
        block = _literal_block(key, value)
        if block is not None:
            return block
    return yaml.dump(
        {key: value},
        Dumper=_Dumper,
        default_flow_style=False,
        sort_keys=False,
        allow_unicode=True,
        width=1_000_000_000,
    )


# Characters a literal block cannot carry (YAML would need escapes for them).
_NOT_LITERAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufeff\u2028\u2029\ud800-\udfff\r]")


def _literal_block(key: str, text: str) -> str | None:
    """``key: |`` followed by the text, or None when a literal block cannot hold it exactly.

    PyYAML itself gives up on block style for lines with trailing spaces; YAML allows them, so the
    block is written here and checked by reading it back.
    """
    if _NOT_LITERAL.search(text):
        return None
    body = text.rstrip("\n")
    trailing = len(text) - len(body)
    chomp = "-" if trailing == 0 else ("" if trailing == 1 else "+")
    first = body.lstrip("\n")
    indent_hint = "2" if (body[:1] in (" ", "\n") or first[:1] == " ") else ""
    lines = body.split("\n") + [""] * (trailing - 1 if trailing > 1 else 0)
    out = [f"{key}: |{indent_hint}{chomp}\n"]
    out.extend(("  " + line if line else "") + "\n" for line in lines)
    rendered = "".join(out)
    try:
        if yamlio.load(rendered) != {key: text}:
            return None
    except yaml.YAMLError:
        return None
    return rendered


# ---------------------------------------------------------------------------------------------
# Loading


def alias_line(text: str) -> int | None:
    """The line of the first YAML alias (``*name``) in ``text``, if any.

    A memory file never needs aliases, and an alias bomb (aliases of aliases) expands to billions
    of values in anything that walks the loaded data, so they are refused before loading.
    """
    if "*" not in text:
        return None
    try:
        for event in yamlio.parse(text):
            if isinstance(event, yaml.AliasEvent):
                return event.start_mark.line + 1 if event.start_mark is not None else 1
    except yaml.YAMLError:
        return None  # reported by the load that follows
    return None


def too_deep_for_parser(exc: yaml.YAMLError) -> bool:
    """Whether ``exc`` is the YAML parser refusing to nest deeper: builds of libyaml since 0.2.5
    stop at a fixed depth of their own, far beyond :data:`MAX_DEPTH`, where others recurse."""
    return "nesting depth" in str(getattr(exc, "problem", None) or exc)


def _too_deep(where: str) -> MemoryFileError:
    return MemoryFileError(
        where, None, f"nests lists and mappings more than {MAX_DEPTH} levels deep below its keys; "
        "write its values flatter"
    )


def too_large(size: int) -> str:
    """What is wrong with a memory file of ``size`` bytes, over :data:`MAX_FILE_BYTES`, and the fix.
    Readers of files ask for at most that many bytes (``fileio.read_regular``'s ``limit``), so a
    larger file is refused by its size, never read whole."""
    return (f"is {size} bytes; a memory file may hold at most {MAX_FILE_BYTES} bytes (16 MiB): "
            "split it into several memories")


def text_too_large(text: str) -> str | None:
    """What is wrong with a text value over :data:`MAX_CONTENT_CEILING` bytes, and the fix; None
    when it fits. Checked as ``loads`` builds each value, so no reader measures it twice."""
    # A character is at most 4 bytes: only a long text needs encoding to be measured.
    if len(text) * 4 <= MAX_CONTENT_CEILING:
        return None
    size = len(text.encode("utf-8", "surrogatepass"))
    if size <= MAX_CONTENT_CEILING:
        return None
    return (f"is {size} bytes; a text in a memory file may hold at most {MAX_CONTENT_CEILING} bytes "
            f"(2 MiB): split it into memories of at most {MAX_CONTENT_CEILING} bytes each")


def missing_key(key: str) -> str:
    """How a reader and ``validate`` say that a memory file lacks a required key."""
    return f"missing required key {key!r}" + (" (add created_at: 'YYYY-MM-DDTHH:MM:SSZ')" if key == "created_at" else "")


def loads(text: str, memory_id: str, path: str = "") -> Memory:
    """Parse a memory file, raising :class:`MemoryFileError` with the line of the problem."""
    where = path or f"memories/{memory_id}.yaml"
    # A character is at most 4 bytes: only a long text needs encoding to be measured.
    if len(text) * 4 > MAX_FILE_BYTES and (size := len(text.encode("utf-8", "surrogatepass"))) > MAX_FILE_BYTES:
        raise MemoryFileError(where, None, too_large(size))
    check_yaml_shape(text, where)
    try:
        data = yamlio.load(text)
    except yaml.YAMLError as exc:
        if too_deep_for_parser(exc):
            raise _too_deep(where) from None
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line = mark.line + 1 if mark is not None else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MemoryFileError(where, line, f"invalid YAML: {problem}") from None
    except RecursionError:  # nested deeper than the YAML composer can recurse
        data = None
        depth = MAX_DEPTH + 2
    else:
        # The file's own mapping is one level: a stored query may nest as deep as one given.
        # Each level needs one of these characters, so most files need no walk at all.
        marks = sum(text.count(c) for c in "[{-:?")
        depth = value_depth(data, MAX_DEPTH + 1) if marks > MAX_DEPTH + 1 else marks
    if depth > MAX_DEPTH + 1:
        raise _too_deep(where)
    if not isinstance(data, dict):
        raise MemoryFileError(where, 1, "a memory file must be a mapping of keys (learning:, entities:, ...)")
    values: dict[str, Any] = {}
    for key, value in data.items():
        # The key's line only for a message: finding it costs a search of the text per key.
        if not isinstance(key, str) or key not in FIELD_NAMES:
            hint = (
                "the file name is the id; remove the id key"
                if key == "id"
                else f"allowed keys: {', '.join(KEY_ORDER)}"
            )
            raise MemoryFileError(where, key_line(text, key), f"unknown key {key!r} ({hint})")
        try:
            values[key] = _check_value(key, value)
        except (ValueError, OverflowError) as exc:  # OverflowError: a date beyond year 1..9999
            raise MemoryFileError(where, key_line(text, key), f"'{key}' {exc}") from None
    for required in ("learning", "created_at"):
        if required not in values:
            raise MemoryFileError(where, 1, missing_key(required))
    values["entities"] = values.get("entities") or []
    return Memory(id=memory_id, **values)


def key_line(text: str, key: object) -> int | None:
    """1-based line of a top-level key, for messages that point at it."""
    if not isinstance(key, str):
        return None
    match = re.search(rf"^{re.escape(key)}[ \t]*:", text, re.M)
    return text.count("\n", 0, match.start()) + 1 if match else None


# The first line of a conflict git left in a file (``<<<<<<< HEAD``); a YAML file never holds one.
_CONFLICT_START = re.compile(r"^<{7}(?: |$)", re.M)


def check_conflict_markers(text: str, where: str) -> None:
    """Refuse a file git left with the markers of an unresolved merge conflict: read as YAML, it
    is a duplicate key or a syntax error somewhere, which says nothing of what happened. Every
    reader (search, get, list, validate, fmt, sessions) says it in these words."""
    if "<<<<<<<" not in text:
        return
    match = _CONFLICT_START.search(text)
    if match is not None:
        raise MemoryFileError(where, text.count("\n", 0, match.start()) + 1,
                              f"unresolved merge conflict in {where}: resolve it, then `git add {where}`",
                              names_fix=True)


_TOP_KEY = re.compile(r"([A-Za-z_][\w-]*)[ \t]*:(?:[ \t]|$)")
# A document's end or the start of another, at the start of a line.
_DOCUMENT_MARK = re.compile(r"(?:---|\.\.\.)(?:[ \t]|$)")
_TOP_KEYS = re.compile("^" + _TOP_KEY.pattern, re.M)
# Line breaks str.splitlines knows besides \n, which a multi-line ^ does not.
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def check_yaml_shape(text: str, where: str) -> None:
    """What every file reader refuses before the YAML is loaded: a merge conflict left in the
    file, a top-level key written twice, an alias (``alias_line``)."""
    check_conflict_markers(text, where)
    check_duplicate_keys(text, where)
    line = alias_line(text)
    if line is not None:
        raise MemoryFileError(where, line, "uses a YAML alias (*name); write the value out instead")


def check_duplicate_keys(text: str, where: str) -> None:
    # PyYAML keeps the last of two equal keys silently; a hand edit that duplicates a key would
    # lose data without a word, so top-level duplicates are an error (found line by line, to
    # name the line even in a file YAML cannot read), and those the lines do not show, read from
    # the tree: a nested mapping's (``{column: a, column: b}`` in a query, or ``name:`` twice in
    # a column) and a quoted key's (``"learning":`` beside ``learning:``).
    text = text.removeprefix("\ufeff")  # the loader passes a byte-order mark over: no part of the first key
    if _OTHER_BREAKS.search(text) is None:
        keys = _TOP_KEYS.findall(text)
        if len(keys) == len(set(keys)):
            _refuse_tree_duplicates(text, where)  # the common case, in one pass; the loop below finds the lines
            return
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if seen and _DOCUMENT_MARK.match(line):
            # A second document repeating a key is no duplicate key: say what the YAML reader
            # says of any second document.
            raise MemoryFileError(where, number, "invalid YAML: but found another document")
        match = _TOP_KEY.match(line)
        if not match:
            continue
        key = match.group(1)
        if key in seen:
            if (tree := yamlio.tree_duplicates(text)) is not None:
                # It reads: the tree tells (a line of a quoted value that runs on looks like a key).
                _refuse_first(tree, where)
                return
            raise MemoryFileError(
                where, number, f"duplicate key '{key}' (first on line {seen[key]}); keep one"
            )
        seen[key] = number
    _refuse_tree_duplicates(text, where)


def _refuse_tree_duplicates(text: str, where: str) -> None:
    _refuse_first(yamlio.duplicate_keys(text), where)


def _refuse_first(found: list[tuple[int, str, int]], where: str) -> None:
    if found:
        line, key, first = found[0]
        raise MemoryFileError(where, line, f"duplicate key '{key}' (first on line {first}); keep one")


def _check_value(key: str, value: Any) -> Any:
    """The value of ``key``, checked; a ValueError says what is wrong with it."""

    if value is None:
        if key in ("learning", "created_at"):
            raise ValueError("must not be empty")
        return None
    if key in STRING_KEYS:
        if not isinstance(value, str):
            raise ValueError(f"must be a string, not {kind_of(value)} (quote it)")
        if (too_long := text_too_large(value)) is not None:
            raise ValueError(too_long)
        if key == "learning" and not value.strip():
            raise ValueError("must not be blank")
        if key == "description" and len(value) > MAX_DESCRIPTION:
            raise ValueError(f"is {len(value)} characters long; the limit is {MAX_DESCRIPTION}")
        if key == "scope" and value not in SCOPES:
            raise ValueError(f"must be one of {', '.join(SCOPES)}, not {shown_value(value)}")
        if key == "type":
            # As a save stores it (engram.given_type): a file written by older code or by hand
            # with `Bugfix` is the `bugfix` a filter, the stats and an import's duplicate look for.
            return canonical_type(value)
        return unicodedata.normalize("NFC", value) if key in COMPOSED_KEYS else value
    if key in COUNT_KEYS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError("must be a whole number of at least 1")
        return value
    if key in TIME_KEYS:
        if isinstance(value, _dt.datetime):
            value = value.astimezone(_dt.timezone.utc) if value.tzinfo else value
            return value.strftime("%Y-%m-%dT%H:%M:%SZ")
        if not isinstance(value, str) or not TIMESTAMP.fullmatch(value):
            raise ValueError("must be a UTC time like '2026-11-29T20:42:40Z'")
        return value
    if key == "entities":
        if not isinstance(value, list) or not all(isinstance(e, str) for e in value):
            raise ValueError("must be a list of entity strings (- shop.orders.amount)")
        for entity in value:
            if (too_long := text_too_large(entity)) is not None:
                raise ValueError(f"holds an entity that {too_long}")
        return value
    if key == "query":
        if not isinstance(value, dict):
            raise ValueError("must be a mapping (a SlayerQuery with source_model:)")
        _check_plain(value)
        return value
    raise ValueError("is not a known key")  # pragma: no cover - FIELD_NAMES and the branches agree


def _check_plain(value: Any) -> None:
    """Queries hold only JSON-like data; an alias bomb exhausts the node budget."""
    stack = [value]
    visited = 0
    while stack:
        item = stack.pop()
        visited += 1
        if visited > MAX_QUERY_NODES:
            raise ValueError(f"is too large (more than {MAX_QUERY_NODES} values; YAML aliases?)")
        if isinstance(item, dict):
            if not all(isinstance(k, str) for k in item):
                raise ValueError("must have string keys only")
            stack.extend(item)  # a key is a string as a value is, held to the same size
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            if (too_long := text_too_large(item)) is not None:
                raise ValueError(f"holds a string that {too_long}")
        elif item is not None and not isinstance(item, (int, float, bool)):
            raise ValueError(f"holds {kind_of(item)}; quote it to make it a string")


def with_entities(text: str, memory: Memory, entities: list[str]) -> str:
    """``text`` with only its ``entities`` block replaced, every other byte kept.

    Cascades rewrite thousands of files a person may have formatted by hand; touching nothing but
    the entity list keeps their diff to the lines that really changed.
    """
    updated = memory.evolve(entities=entities)
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if re.match(r"entities[ \t]*:", line)), None)
    if start is not None:
        end = start + 1
        while end < len(lines) and (lines[end][:1] in (" ", "-", "\t", "\n") or not lines[end].strip()):
            end += 1
        block = dump_key("entities", entities) if entities else ""
        # The block is a whole top-level key exactly when the old lines read back as the old
        # list; then swapping in a block that reads back as the new list leaves every other key
        # as it was. Two small parses instead of one of the whole file: a cascade does thousands.
        if _reads_as("".join(lines[start:end]), memory.entities) and (not entities or _reads_as(block, entities)):
            return "".join(lines[:start]) + block + "".join(lines[end:])
    return dumps(updated)


def _reads_as(block: str, entities: list[str]) -> bool:
    try:
        return yamlio.load(block) == {"entities": entities}
    except yaml.YAMLError:
        return False
