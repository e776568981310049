"""How deeply JSON nests: a cap on what a person or an agent may hand slayer-kb.

Python's ``json`` and every walk over a decoded value recurse once per level, so ``[[[...]]]``
a thousand deep ends in a ``RecursionError`` deep inside a command. Nothing slayer-kb takes needs
more than a few levels (a SlayerQuery has four or five), so arrays and objects nested more than
:data:`MAX_DEPTH` deep are refused up front, as a usage error: JSON text is measured before it is
parsed (:func:`text_depth`, one pass, no recursion), and a decoded value before it is walked
(:func:`value_depth`, with a stack of its own, which also stops on a value that contains itself).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .errors import InvalidInputError
from .text import clip

MAX_DEPTH = 64
"""The deepest nesting of arrays and objects (lists and mappings) accepted anywhere."""

# A string (escapes included, so a quote or bracket inside it is skipped), or a bracket.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)


def text_depth(text: str) -> int:
    """How deeply arrays and objects nest in the JSON ``text`` (0 for a scalar).

    Brackets inside strings do not count. Text that is not JSON gets a number too; the parser
    that runs next says what is wrong with it.
    """
    depth = deepest = 0
    for match in _TOKEN.finditer(text):
        piece = match.group()
        if piece in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
        elif piece in "]}":
            depth = max(0, depth - 1)
    return deepest


def cut_deep(text: str, limit: int, placeholder: str) -> str:
    """``text`` with every array or object that opens deeper than ``limit`` replaced by the JSON
    string ``placeholder``: what is left parses without recursing past ``limit`` and still
    says who sent it and where the deep part was."""
    out: list[str] = []
    depth = 0
    start = kept = -1
    for match in _TOKEN.finditer(text):
        piece = match.group()
        if piece in "[{":
            depth += 1
            if depth == limit + 1:
                start = match.start()
        elif piece in "]}" and depth > 0:
            depth -= 1
            if depth == limit and start >= 0:
                out.append(text[kept + 1 : start])
                out.append(json.dumps(placeholder))
                kept, start = match.start(), -1
    out.append(text[kept + 1 :] if start < 0 else text[kept + 1 : start])
    return "".join(out)


def value_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply lists, tuples and mappings nest in ``value`` (0 for a scalar); the count stops
    at ``limit + 1``, so a value that contains itself is simply too deep."""
    if not _is_container(value):
        return 0
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        for child in item.values() if isinstance(item, Mapping) else item:
            if _is_container(child):
                stack.append((child, depth + 1))
    return deepest


def _is_container(value: Any) -> bool:
    # dict and list first: all that decoded JSON and YAML hold, and far cheaper than the ABC test
    if isinstance(value, (dict, list, tuple)):
        return True
    return not isinstance(value, (str, int, float)) and value is not None and isinstance(value, Mapping)


QUERY_FIX = "a SlayerQuery needs only a few levels: send a flatter one"


def too_deep(what: str, fix: str = "send a flatter value") -> InvalidInputError:
    """The usage error for ``what`` ("--query", "search: 'query'") nested past the cap."""
    return InvalidInputError(
        f"{what} nests arrays and objects more than {MAX_DEPTH} levels deep, the most slayer-kb "
        f"accepts; {fix}."
    )


def check_depth(value: Any, what: str, fix: str = QUERY_FIX) -> Any:
    """``value`` itself, or :func:`too_deep` raised when it nests past :data:`MAX_DEPTH`."""
    if value_depth(value) > MAX_DEPTH:
        raise too_deep(what, fix)
    return value


def loads(text: str, what: str, hint: str, fix: str = "send a flatter value") -> Any:
    """JSON ``text`` decoded, or :class:`InvalidInputError`: nested past the cap (measured first,
    so the parser never recurses that deep; ``fix`` says what to do), or not JSON (``hint`` says
    what to give instead)."""
    if text_depth(text) > MAX_DEPTH:
        raise too_deep(what, fix)
    try:
        return json.loads(text, object_pairs_hook=_each_key_once)
    except _KeyTwice as exc:
        raise KeyTwiceError(f"{what} is not valid JSON ({exc}); {hint}") from None
    except ValueError as exc:
        raise InvalidInputError(f"{what} is not valid JSON ({exc}); {hint}") from None
    except RecursionError:  # a recursion limit set lower than the cap needs: still a usage error
        raise too_deep(what, fix) from None


class KeyTwiceError(InvalidInputError):
    """JSON text that parses but for a key given twice in one object: refused where other text
    that is not JSON may be taken as text (an MCP argument that is a list or an object)."""


class _KeyTwice(ValueError):
    pass


def _each_key_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object of JSON whose keys differ: Python's parser keeps a repeated key's last value,
    which took a query naming ``source_model`` twice as the second model without a word."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _KeyTwice(f"the key '{clip(key, 100)}' appears twice in one object")
        found[key] = value
    return found
