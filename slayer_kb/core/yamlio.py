"""YAML read safely: libyaml's C safe loader where PyYAML was built with it (several times faster
on a catalog or thousands of memory files), else PyYAML's own safe loader. Every YAML slayer-kb
reads goes through ``load``, so no file a clone brings in can build a Python object (ruff's S506
checks that nothing else loads YAML)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as SafeLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader  # type: ignore[assignment]


class _Loader(SafeLoader):  # type: ignore[valid-type,misc]
    """The safe loader, but a value its tag does not fit is kept as its text: a timestamp no
    calendar has (``2026-02-31T00:00:00Z``, unquoted), or an explicit tag on a value of another
    kind (``!!int x``, ``!!bool maybe``, ``!!timestamp nope``). PyYAML raised ValueError, KeyError
    or AttributeError there, a traceback from every command reading the file; as text, reads go
    on, and validate names the value at its line (``mistagged``)."""


# The scalar kinds whose constructors fail on a value they do not fit: tag -> what the value must be.
_KINDS = {"int": "a whole number", "float": "a number", "bool": "true or false", "timestamp": "a time"}
_STRICT = {f"tag:yaml.org,2002:{kind}": yaml.constructor.SafeConstructor.yaml_constructors[f"tag:yaml.org,2002:{kind}"]
           for kind in _KINDS}


def _lenient(strict: Callable[[Any, yaml.ScalarNode], Any]) -> Callable[[Any, yaml.ScalarNode], Any]:
    def construct(loader: Any, node: yaml.ScalarNode) -> Any:
        try:
            return strict(loader, node)
        except (ValueError, KeyError, AttributeError):  # a value the tag does not fit
            return node.value

    return construct


for _tag, _strict in _STRICT.items():
    _Loader.add_constructor(_tag, _lenient(_strict))


@dataclass(frozen=True)
class Mistagged:
    """A value its explicit tag does not fit (``load`` keeps it as text): where it is, and why."""

    line: int
    path: str  # as a message names it: ``created_at``, ``query.filters[0]``
    message: str


def mistagged(text: str) -> list[Mistagged]:
    """Each value in ``text`` with an explicit tag (``!!int``, ``!!float``, ``!!bool``,
    ``!!timestamp``) that its value does not fit. A value resolved to its kind without a tag (an
    impossible time, unquoted) is not one: the time checks name it."""
    # Only the standard tags are checked: '!!int', or spelt out ('!<tag:yaml.org,2002:int>', a
    # %TAG handle). A learning's exclamation mark costs no second parse.
    if "!!" not in text and "tag:yaml.org" not in text:
        return []
    try:
        root = compose(text)
    except yaml.YAMLError:
        return []  # the load says what is wrong
    found: list[Mistagged] = []
    constructor = yaml.constructor.SafeConstructor()
    resolver = yaml.resolver.Resolver()
    stack: list[tuple[yaml.Node | None, str]] = [(root, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, yaml.MappingNode):
            stack.extend((value, f"{path}.{key.value}" if path else str(key.value)) for key, value in reversed(node.value))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, f"{path}[{index}]") for index, item in reversed(list(enumerate(node.value))))
        elif (isinstance(node, yaml.ScalarNode) and (strict := _STRICT.get(node.tag)) is not None
              and resolver.resolve(yaml.ScalarNode, node.value, (True, False)) != node.tag):
            try:
                strict(constructor, node)
            except (ValueError, KeyError, AttributeError):
                kind = node.tag.rpartition(":")[2]
                found.append(Mistagged(node.start_mark.line + 1, path or "file", (
                    f"{node.value!r} is not {_KINDS[kind]}, as its tag !!{kind} says: remove the tag to keep it as "
                    f"text, or write {_KINDS[kind]}")))
    return found


def load(text: str) -> Any:
    """The data of one YAML document (plain dicts, lists, strings, numbers, booleans, None)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - the safe loader, values their tags do not fit kept as text


def compose(text: str) -> yaml.Node | None:
    """The document's node tree, with line numbers (for messages that point at a line)."""
    return yaml.compose(text, Loader=SafeLoader)


def parse(text: str) -> Iterator[yaml.Event]:
    """The document's parser events (for checks that need the text's own structure)."""
    return yaml.parse(text, Loader=SafeLoader)


# A line holding a key (after any indent and "- " of list items): where its mapping is, then the
# key double-quoted, single-quoted or plain (a plain key may start with "-", "?" or ":" followed
# by no space, and hold a ":" followed by none, or a "#" after no space, as "a:b#c"). A plain
# key is words with one run of blanks between two: the blanks before the ":" can go to one part
# only, and a line of 100,000 spaces costs a pass, not a pass for each space.
_REST = r"""[^\s:#]*(?:(?::(?=\S)|(?<=\S)#)[^\s:#]*)*"""  # unrolled: each character has one part to go to
_WORD = rf"""(?:[^\s:#]|:(?=\S)){_REST}"""
_KEY_LINE = re.compile(
    r"""( *(?:- +)*)(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|((?:[^\s#:'"{}\[\],&*!|>%@`?-]|[-?:](?=\S))"""
    rf"""{_REST}(?:[ \t]+{_WORD})*))[ \t]*:(?:[ \t]|$)"""
)
# A key the guess cannot read (a tag, an anchor, an alias or "? " before it): the tree decides.
_ODD_STARTS = ("!", "&", "*", "?")
# A quoted value closed on its line: one that is not goes on over lines any column may start,
# which would read as keys or as the mapping's end (the tree decides).
_CLOSED = re.compile(r"""(?:"(?:[^"\\]|\\.)*"|'(?:[^']|'')*')""")


def _key_of(match: re.Match[str]) -> str | None:
    """The key a ``_KEY_LINE`` match names, as the loader reads it; None for a double-quoted key
    with an escape, which only the loader reads right."""
    double, single, plain = match.group(2, 3, 4)
    if double is not None:
        return None if "\\" in double else double
    if single is not None:
        return single.replace("''", "'")
    return plain.rstrip(" \t")  # "name :" is the key "name"


def _may_repeat_a_key(text: str) -> bool:
    """Whether a key is written twice at one indent with no line between that ends its mapping
    (a shallower line, or a "- " starting another item there): a line-by-line guess, true for
    every real repeat in a block mapping, and for a few texts without one, which the tree then
    clears. A block scalar's lines (a learning's, mostly) are passed over unread."""
    open_keys: dict[int, set[str]] = {}
    scalar_above: int | None = None  # the column of the key whose block scalar these lines are
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        indent = len(line) - len(stripped)
        if not stripped or (scalar_above is not None and indent > scalar_above):
            continue
        scalar_above = None
        if stripped.startswith("#"):
            continue
        if stripped.lstrip("- ")[:1] in _ODD_STARTS:
            return True
        match = _KEY_LINE.match(line) if ":" in stripped else None
        value = line[match.end():].lstrip(" \t") if match else stripped.lstrip("- ")
        if value[:1] in ('"', "'") and not _CLOSED.match(value):
            return True
        column = len(match.group(1)) if match else indent
        if open_keys and (deeper := [c for c in open_keys if c > column or (c == column and "-" in line[:column])]):
            for c in deeper:
                del open_keys[c]
        if match:
            key = _key_of(match)
            keys = open_keys.setdefault(column, set())
            if key is None or key in keys:
                return True
            keys.add(key)
            if stripped.rstrip().endswith(("|", ">", "|-", ">-", "|+", ">+")):
                scalar_above = column  # deeper than the key's mapping: "- sql: |" holds column 2's lines, not 0's
    return False


def duplicate_keys(text: str) -> list[tuple[int, str, int]]:
    """Each key a mapping holds twice (``{a: 1, a: 2}``, a block mapping's ``name:`` written twice
    under one ``-``, or ``"learning":`` beside ``learning:``): its line, the key and the line of
    its first. The loader keeps the last of the two without a word (a column
    ``{name: amount, name: total}`` read as ``total``). Composed only when the text has a ``{``
    or may repeat a key in a block mapping (``_may_repeat_a_key``, which also hands the tree a
    key it cannot read: tagged, anchored, an alias, or "? "); a document that does not compose is
    the loader's to report. Keys equal only once resolved (``1`` and ``0x1``) are not compared."""
    if "{" not in text and not _may_repeat_a_key(text):
        return []
    return tree_duplicates(text) or []


def tree_duplicates(text: str) -> list[tuple[int, str, int]] | None:
    """``duplicate_keys`` read from the composed tree, whatever the lines look like; None for a
    document that does not compose."""
    try:
        root = compose(text)
    except (yaml.YAMLError, RecursionError):  # the loader says what is wrong (too deep: nesting.py)
        return None
    found: list[tuple[int, str, int]] = []
    stack = [root] if root is not None else []
    walked: set[int] = set()  # an alias is the node it names: a bomb's 9**8 paths are 9 nodes a level
    while stack:
        node = stack.pop()
        if id(node) in walked:
            continue
        walked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key, _value in node.value:
                if isinstance(key, yaml.ScalarNode):
                    line = key.start_mark.line + 1
                    if key.value in seen:
                        found.append((line, key.value, seen[key.value]))
                    seen.setdefault(key.value, line)
            stack.extend(value for pair in node.value for value in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return sorted(found)
