"""The small checks a SlayerQuery's parts go through (texts, integers, lists, required and unknown
keys, formulas that must parse), with the messages SLayer's pydantic models give them."""

from __future__ import annotations

import ast
import difflib
import re
import threading
import warnings
from collections.abc import Mapping
from typing import Any, NoReturn

from ..core.errors import InvalidInputError
from ..core.text import kind_of, shown_value
from . import lexer
from .lexer import MalformedCase, lower_cases
from .modeb import AGGREGATED, COUNTED, MalformedExtract, aggregation_problem, extract_as_date_part, node_problem

# The alias map of likely slips whose nearest spelling is not the intended key.
_MEANT = {
    "fields": "measures", "metrics": "measures", "model": "source_model", "source": "source_model",
    "from": "source_model", "where": "filters", "group_by": "dimensions", "groupby": "dimensions",
    "sort": "order", "order_by": "order", "orderby": "order", "time_dimension": "time_dimensions",
}
# A {variable} placeholder, filled in when the query runs.
VARIABLE = re.compile(r"\{([a-zA-Z_]\w*)\}", re.ASCII)
# What SLayer (pydantic) reads as a boolean in text.
TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


def string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        fail(where, "Input should be a valid string")
    return value


def int_field(data: Mapping[str, Any], key: str) -> None:
    value = data.get(key)
    if value is None or isinstance(value, int):  # bool included: pydantic's lax mode takes it
        return
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            _not_whole(key, "Input should be a finite number")
        if not value.is_integer():
            _not_whole(key, "Input should be a valid integer, got a number with a fractional part")
        return
    if isinstance(value, str):
        try:
            int(value.strip())
        except ValueError:
            _not_whole(key, "Input should be a valid integer, unable to parse string as an integer")
        return
    _not_whole(key, "Input should be a valid integer")


# An example of a whole-number key, for the fix its refusal gives.
_WHOLE_EXAMPLES = {"limit": "100", "offset": "20"}


def _not_whole(key: str, said: str) -> NoReturn:
    """SLayer's words (pydantic's), then the fix: they alone named neither the kind of value
    wanted nor an example (``limit: 1e400`` was "Input should be a finite number")."""
    example = _WHOLE_EXAMPLES.get(key)
    fail(key, f"{said}; give a whole number" + (f", such as {key}: {example}." if example else "."))


def python_list(data: Mapping[str, Any], key: str, hint: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        fail("", f"'{key}' must be a list, got {slayer_type(value)} ({hint})")
    return list(value)


def list_of(data: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        fail(where, "Input should be a valid list")
    return list(value)


def required(value: Mapping[str, Any], key: str, where: str, keys: tuple[str, ...], note: str = "") -> None:
    """pydantic's "Field required" for a missing ``key``, naming a given key that misspells it."""
    if key in value:
        return
    slips = [str(k) for k in value if k not in keys and suggest(str(k), keys) == key]
    notes = [f"'{slips[0]}' is not a key: did you mean '{key}'?"] if slips else []
    if note:
        notes.append(note)
    fail(f"{where}.{key}", "Field required" + (f" ({'; '.join(notes)})" if notes else ""))


def ignored_keys(value: Mapping[str, Any], where: str, keys: tuple[str, ...], what: str) -> None:
    """Keys SLayer ignores in these mappings; refused here, so that a misspelt key is not lost."""
    for key in value:
        if key not in keys:
            lead = f"not a key of {what}, which SLayer would drop unread"
            fail(f"{where}.{key}", extra_message(str(key), keys, what, lead))


def extra_message(key: str, keys: tuple[str, ...], what: str | None, lead: str = "Extra inputs are not permitted") -> str:
    meant = suggest(key, keys)
    if meant is not None:
        return f"{lead} (did you mean '{meant}'?)"
    if what is not None:
        return f"{lead} (the keys of {what} are: {', '.join(keys)})"
    return lead


def suggest(key: str, keys: tuple[str, ...]) -> str | None:
    """The valid key a misspelt ``key`` most likely meant, if any."""
    meant = _MEANT.get(key.lower())
    if meant in keys:
        return meant
    close = difflib.get_close_matches(key.lower(), keys, n=1, cutoff=0.6)
    return close[0] if close else None


def dotted(text: str) -> str:
    return ".".join(part.strip() for part in text.split("."))


def parses(text: str) -> bool:
    return syntax_problem(text) is None


def syntax_problem(text: str) -> str | None:
    """Python's own complaint about ``text`` as an expression (SLayer's Mode-B parser reads
    Python syntax), with ``{var}`` placeholders taken as values; None when it parses."""
    parsed = _parsed(text)
    return parsed if isinstance(parsed, str) else None


_QUIET = threading.Lock()


def _parsed(text: str) -> ast.Expression | str:
    """``text`` parsed as ``syntax_problem`` reads it, or Python's complaint."""
    try:
        # Python warns of some text it still reads ('1if x': "invalid decimal literal"); printed,
        # the warning would come before the error this names, in Python's words, not ours. The
        # lock: catch_warnings swaps the process's filters, which a server's threads share.
        with _QUIET, warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.parse(VARIABLE.sub("0", text).strip(), mode="eval")
    except SyntaxError as exc:
        found = f"{exc.msg} (<unknown>, line {exc.lineno})"
        return f"{found}{_TOO_DEEP}" if exc.msg == "too many nested parentheses" else found
    except (RecursionError, MemoryError) as exc:
        return f"{exc}{_TOO_DEEP}"
    except ValueError as exc:
        return str(exc)


# Python's parser, which SLayer's reads formulas with, stops at about 200 parentheses deep or a
# chain of about 1,000 operators: its own words name no fix.
_TOO_DEEP = ("; the expression nests deeper than SLayer's parser (Python's) reads: write it with fewer "
             "terms or parentheses, or split it into several measures")


# The spellings SLayer's Mode-B parser rewrites before Python reads a formula: a colon aggregation
# (amount:sum, orders.*:count), a counted star (count(*), count(orders.*)) and count(distinct x);
# extract(year from x), which it reads as date_part('year', x); and CASE ... END, which the check
# reads as iif calls (``lexer.lower_cases``).
_COLON_AGGREGATION = re.compile(r"(?:\*|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\.\*)?):[A-Za-z_]\w*")
_COUNTED_STAR = re.compile(r"(\(\s*|\.)\*(?=\s*[),])")
_COUNT_DISTINCT = re.compile(r"\bcount\s*\(\s*distinct\s+", re.I)
_SPACED_COLON = re.compile(r"(?<=[\w*])\s*:\s*(?=[A-Za-z_])")


def formula_problem(text: str, runs: bool = True) -> str | None:
    """Why SLayer's Mode-B parser refuses the measure formula ``text``, in its words
    (``Invalid Mode-B expression 'sum(amount': '(' was never closed (<unknown>, line 1)``);
    None when it parses. ``runs``: a query's formula, which SLayer's engine must also run (an
    entity reference is only resolved)."""
    if _distinct_misused(text):
        return (
            f"Invalid Mode-B expression {shown_value(text)}: DISTINCT is supported only as count(distinct x), "
            "i.e. count_distinct(x)."
        )
    try:  # in SLayer's order: extract, then CASE
        probe = lower_cases(extract_as_date_part(text))
    except MalformedExtract as exc:
        return f"Invalid Mode-B expression {shown_value(text)}: {exc}"
    except MalformedCase as exc:
        return f"Malformed CASE expression in {shown_value(text)}: {exc}"
    probe, colons = _colon_aggregations(probe)
    probe = _COUNTED_STAR.sub(lambda m: m.group(1) + COUNTED, probe)
    probe = _COUNT_DISTINCT.sub(lambda m: m.group().split("(")[0] + "(", probe)
    parsed = _parsed(probe)
    problem = parsed if isinstance(parsed, str) else node_problem(parsed) or (aggregation_problem(parsed, colons) if runs else None)
    if problem is None:
        return None
    unspaced = _SPACED_COLON.sub(":", text)
    if unspaced != text and formula_problem(unspaced, runs) is None:  # what older slayer-kb releases took
        problem += f"; {unspaced_colon(unspaced)}"
    return f"Invalid Mode-B expression {shown_value(text)}: {problem}"


def _colon_aggregations(text: str) -> tuple[str, list[str]]:
    """``text`` with each colon aggregation (``amount:max``) outside strings and comments written
    :data:`AGGREGATED`, and them in order, as Python then reads them (their arguments are their
    parameters: ``aggregation_problem``); a string's or a comment's text is left as written."""
    quiet: list[tuple[int, int]] = []
    for token in lexer.tokens(text):
        if quiet and token.start < quiet[-1][1]:
            continue
        if token.kind == "lit":
            quiet.append((token.start, token.end))
        elif token.text == "#":
            line_end = text.find("\n", token.start)
            quiet.append((token.start, len(text) if line_end < 0 else line_end))
    colons: list[str] = []

    def written(match: re.Match[str]) -> str:
        if any(start <= match.start() < end for start, end in quiet):
            return match.group()
        colons.append(match.group())
        return AGGREGATED

    return _COLON_AGGREGATION.sub(written, text), colons


def unspaced_colon(unspaced: str) -> str:
    """The fix of a formula with spaces around an aggregation's colon (``amount : sum``,
    ``amount: sum``), or of an entity reference with one before it (``amount :sum``; SLayer takes
    ``amount: sum`` as a reference): ``unspaced``, the text without them."""
    return f"write {unspaced!r}, with no spaces around an aggregation's colon"


def _distinct_misused(text: str) -> bool:
    """``distinct`` as a keyword anywhere but ``count(distinct x)``: ``sum(distinct x)``,
    ``count(distinct)``, ``count(distinct *)``, ``customers.count(distinct x)`` (SLayer takes no
    method call's), ``f(x, distinct y)``; read from the tokens, so that a string's text is none,
    but a ``#`` comment's are read: SLayer's check reads them too (and then Python skips them)."""
    found = lexer.tokens(text)
    edge = lexer.Token("", "", -1, -1)
    for at, token in enumerate(found):
        if token.kind != "name" or token.text.lower() != "distinct":
            continue
        called, opened = found[at - 2] if at > 1 else edge, found[at - 1] if at else edge
        after = found[at + 1] if at + 1 < len(found) else edge
        if opened.text == "(" and called.kind == "name":  # opening a call's first argument
            if called.text.lower() != "count" or after.text in ("", ")", "*", ",") or _more_operands(found, at):
                return True
        elif opened.text in (",", "=") and after.start > token.end and (
                after.kind in ("name", "num") or after.text[:1] in ("'", "(", "*")) and _in_call(found, at):
            return True  # opening a later argument, before what could be its operand
    return False


def _more_operands(found: list[lexer.Token], at: int) -> bool:
    """Whether ``count(distinct x, ...)``, its ``distinct`` at ``found[at]``, has a later argument
    but a keyword's (``count(distinct status, amount)``), as SLayer's ``_single_distinct_operand``."""
    depth = 0
    for index in range(at + 1, len(found)):
        text = found[index].text
        if text == "(":
            depth += 1
        elif text == ")":
            if depth == 0:
                return False
            depth -= 1
        elif text == "," and depth == 0:
            follows = found[index + 1 : index + 3]
            if not (len(follows) == 2 and follows[0].kind == "name" and follows[1].text == "="):
                return True
    return False


def _in_call(found: list[lexer.Token], at: int) -> bool:
    """Whether ``found[at]`` sits directly inside a call's parentheses (not a tuple's: a comment's
    ``a, distinct b`` SLayer takes)."""
    depth = 0
    for index in range(at - 1, -1, -1):
        if found[index].text == ")":
            depth += 1
        elif found[index].text == "(":
            if depth == 0:
                return index > 0 and found[index - 1].kind == "name"
            depth -= 1
    return False


def slayer_type(value: Any) -> str:
    """The type SLayer names in its message ("got str": its words, which a user of both finds
    again), then what the value is in the user's words ("got str, a string")."""
    return f"{type(value).__name__}, {kind_of(value)}"


def fail(where: str, message: str) -> NoReturn:
    raise InvalidInputError(f"{where}: {message}" if where else message)
