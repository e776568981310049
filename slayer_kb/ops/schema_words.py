"""The JSON Schemas of memory and session files, and their errors said in a file's words, as
the readers say them ("'entities' must be a list, not a string"), each at its line."""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from ..core import yamlio
from ..core.memory import KEY_ORDER, TIME_KEYS, TIMESTAMP, calendar_time, key_line, missing_key
from ..core.session import SESSION_TIMES
from ..core.text import kind_of

if TYPE_CHECKING:
    # Imported where a file is checked against a schema (``validate``, a sync's revalidation):
    # 0.1 s of CPU a process that every other command's (a get, a save, a search) would pay.
    import jsonschema

# The record schemas live with the records (core/).
SCHEMA_PATH = Path(__file__).parent.parent / "core" / "memory.schema.json"
SESSION_SCHEMA_PATH = SCHEMA_PATH.with_name("session.schema.json")

@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema

    cls = jsonschema.validators.validator_for(schema())
    cls.check_schema(schema())
    return cls(schema())


@lru_cache(maxsize=1)
def _session_validator() -> jsonschema.protocols.Validator:
    import jsonschema

    session_schema = json.loads(SESSION_SCHEMA_PATH.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(session_schema)
    cls.check_schema(session_schema)
    return cls(session_schema)


def _with_tags(text: str, problems: Iterator[tuple[int | None, str]]) -> Iterator[tuple[int | None, str]]:
    """Each value whose explicit tag it does not fit (``!!int x``, which the readers keep as
    text), then ``problems``, but for those of such a value: the tag is what is wrong with it.
    Each once: the schema's ``required`` gives an error per missing key, each naming them all."""
    tagged = yamlio.mistagged(text)
    yield from ((found.line, f"'{found.path}' {found.message}") for found in tagged)
    told = tuple(f"'{found.path}' " for found in tagged)
    yield from dict.fromkeys(problem for problem in problems if not (told and problem[1].startswith(told)))


def memory_problems(text: str, data: Any, times: list[TimeField]) -> Iterator[tuple[int | None, str]]:
    """``times``: ``read_times`` of the file's ``TIME_KEYS``, which validate's warnings read too."""
    return _with_tags(text, _memory_problems(text, data, times))


def _memory_problems(text: str, data: Any, times: list[TimeField]) -> Iterator[tuple[int | None, str]]:
    for error in sorted(_validator().iter_errors(_json_like(data)), key=lambda e: list(e.path)):
        where = list(error.absolute_path)
        key = where[0] if where else None
        if error.validator == "additionalProperties":
            for extra in sorted(set(data) - set(schema()["properties"]), key=str):
                hint = ("the file name is the id; remove the id key" if extra == "id"
                        else f"allowed keys: {', '.join(KEY_ORDER)}")
                yield key_line(text, extra), f"unknown key {extra!r} ({hint})"
            continue
        if error.validator == "required":
            for missing in _missing(error):
                yield 1, missing_key(missing)
            continue
        if key == "entities" and len(where) == 2:
            yield (item_line(text, "entities", where[1]),
                   f"entities[{where[1]}]: {error.instance!r} is not an entity reference "
                   "(<ds>, <ds>.<model>, <ds>.<model>.<leaf> or memory:<id>)")
            continue
        label = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p)
                        for i, p in enumerate(where)) or "file"
        if key in TIME_KEYS and error.validator in ("pattern", "type"):
            message = "must be a UTC time, quoted: '2026-11-29T20:42:40Z'"
        elif key == "learning" and error.validator == "pattern":
            message = "must not be blank"
        elif error.validator == "type":
            message = _type_message(error)
        elif error.validator == "enum":
            allowed = [v for v in error.validator_value if v is not None]
            message = f"must be {' or '.join(map(str, allowed))}, not {error.instance!r}"
        elif error.validator == "minimum":
            message = f"must be at least {error.validator_value}, not {error.instance!r}"
        elif error.validator == "maxLength":  # as a save words it, and without the value, which may be long
            message = (f"is {len(error.instance)} characters long; the limit is {error.validator_value}: "
                       "shorten it (put the detail in the learning)")
        else:
            message = error.message
        yield key_line(text, key), f"'{label}' {message}" if label != "file" else message
    yield from impossible_times(times)


@dataclass(frozen=True)
class TimeField:
    """A top-level field holding a time in the schema's form, as read once for every check of it
    (``impossible_times`` here, validate's warning of a time ahead, timechecks.py). Where it is
    and how it is written are looked up only for a time that is told: most never are."""

    key: str
    value: str  # as a canonical file writes it (a YAML timestamp in UTC)
    when: _dt.datetime | None  # in UTC, to the microsecond; None where no calendar has it (``why`` says why)
    why: str = ""
    text: str = field(default="", repr=False, compare=False)  # the file's

    @cached_property
    def _place(self) -> tuple[int | None, str]:
        """The line of the value YAML keeps (a key given twice keeps the last; a key may be quoted,
        or inside a merge, ``<<: {created_at: ...}``) and the value as the file writes it
        (``+02:00``, nine digits of a second)."""
        with contextlib.suppress(yaml.YAMLError):
            kept = _kept_value(yamlio.compose(self.text), self.key)
            if kept is not None:
                return kept.start_mark.line + 1, kept.value
        return key_line(self.text, self.key), self.value

    @property
    def line(self) -> int | None:
        return self._place[0]

    @property
    def written(self) -> str:
        return self._place[1]


_MERGE = "tag:yaml.org,2002:merge"


def _kept_value(node: yaml.Node | None, key: str) -> yaml.ScalarNode | None:
    """The scalar a mapping node gives ``key``, as YAML's merge rules keep it: the mapping's own
    last one, else the first merged mapping's that has it (``<<: {...}`` or ``<<: [*a, *b]``)."""
    if not isinstance(node, yaml.MappingNode):
        return None
    own = [v for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.tag != _MERGE and k.value == key]
    if own:
        return own[-1] if isinstance(own[-1], yaml.ScalarNode) else None
    for k, merged in node.value:
        if isinstance(k, yaml.ScalarNode) and k.tag == _MERGE:
            for source in merged.value if isinstance(merged, yaml.SequenceNode) else [merged]:
                if (found := _kept_value(source, key)) is not None:
                    return found
    return None


def read_times(text: str, data: dict[str, Any], keys: Iterable[str]) -> list[TimeField]:
    """Each of ``keys`` that holds a time of the schema's form (quoted, or a YAML timestamp)."""
    found = []
    for key in keys:
        value = _json_like(data.get(key))
        if isinstance(value, str) and (parts := TIMESTAMP.fullmatch(value)) is not None:
            *whole, fraction = parts.groups()
            # The microseconds it names, cut rather than rounded: .9999999 of 9999-12-31T23:59:59
            # rounded up would be a time past the calendar's last.
            micro = int(fraction[1:7].ljust(6, "0")) if fraction else 0
            try:
                when = calendar_time(*map(int, whole)).replace(microsecond=micro)
            except ValueError as exc:
                found.append(TimeField(key, value, None, str(exc), text))
            else:
                found.append(TimeField(key, value, when, text=text))
    return found


def memory_times(text: str, data: dict[str, Any]) -> Iterator[tuple[int | None, str]]:
    """A memory's times validate refuses (``impossible_times``), at their lines in ``text``, as
    ``session_times`` a session's: what a write of ``data`` (``Memory.to_dict``) refuses to commit."""
    return impossible_times(read_times(text, data, TIME_KEYS))


def impossible_times(times: Iterable[TimeField]) -> Iterator[tuple[int | None, str]]:
    """Each time of the schema's form that no calendar has (a 31st of February, hour 24), which
    the schema's pattern lets through and which sorts wrongly."""
    for time in sorted((time for time in times if time.when is None), key=lambda time: time.line or 0):
        yield time.line, (f"'{time.key}' {time.written!r} is no real time ({time.why}); write the time it "
                          "happened, quoted: '2026-11-29T20:42:40Z'")


def _json_like(data: Any) -> Any:
    """YAML timestamps as the strings a canonical file holds; the canonical-form check reports
    the missing quotes separately, with the fix."""
    if isinstance(data, dict):
        return {k: _json_like(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_json_like(v) for v in data]
    if isinstance(data, _dt.datetime):
        if data.tzinfo is not None:
            try:
                data = data.astimezone(_dt.timezone.utc)
            except OverflowError:  # past year 9999 (or before 1) in UTC: no time the schema takes
                return data.isoformat()
        # Its fraction of a second as written (``.5``), which the quoted form keeps too.
        fraction = f".{data.microsecond:06d}".rstrip("0") if data.microsecond else ""
        return data.strftime("%Y-%m-%dT%H:%M:%S") + fraction + "Z"
    if isinstance(data, _dt.date):
        return data.isoformat()
    return data


def session_problems(text: str, data: dict[str, Any]) -> Iterator[tuple[int | None, str]]:
    return _with_tags(text, _session_problems(text, data))


def _session_problems(text: str, data: dict[str, Any]) -> Iterator[tuple[int | None, str]]:
    for error in sorted(_session_validator().iter_errors(_json_like(data)), key=lambda e: [str(p) for p in e.path]):
        where = list(error.absolute_path)
        key = where[0] if where else None
        line = item_line(text, "prompts", where[1]) if key == "prompts" and len(where) > 1 else key_line(text, key)
        label = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(where))
        if error.validator == "additionalProperties":
            extra = sorted(set(error.instance) - set(error.schema.get("properties", {})), key=str)
            allowed = ", ".join(error.schema.get("properties", {}))
            hint = "the file name is the id; remove the id key" if extra == ["id"] and not where else f"allowed keys: {allowed}"
            for key_name in extra:
                at = key_line(text, key_name) if not where else line
                yield at, f"{label + ': ' if label else ''}unknown key {key_name!r} ({hint})"
            continue
        if error.validator == "required":
            for missing in _missing(error):
                yield line if where else 1, f"{label + ': ' if label else ''}missing required key {missing!r}"
            continue
        if error.validator in ("pattern", "anyOf", "$ref") and str(where[-1] if where else "").endswith("_at"):
            message = "must be a UTC time, quoted: '2026-11-29T20:42:40Z'"
        elif error.validator == "pattern":
            message = "must not be blank"
        elif error.validator == "type" and "object" in error.validator_value:
            message = "must be a mapping with created_at and content"
        elif error.validator == "type":
            message = _type_message(error)
        else:
            message = error.message
        yield line, f"'{label}' {message}" if label else message
    yield from session_times(text, data)


def session_times(text: str, data: dict[str, Any]) -> Iterator[tuple[int | None, str]]:
    """A session's times validate refuses: one no calendar has (``impossible_times``), and a
    start after its end (a local time written as UTC, or a clock ahead)."""
    times = read_times(text, data, SESSION_TIMES)
    yield from impossible_times(times)
    by_key = {time.key: time for time in times}
    start, end = by_key.get("started_at"), by_key.get("ended_at")
    if start and end and start.when and end.when and end.when < start.when:
        yield start.line, (f"'started_at' {start.written!r} is after 'ended_at' {end.written!r}: write the times the "
                           "session started and ended, in UTC, quoted: '2026-11-29T20:42:40Z'")


_ARTICLES = {"string": "a string", "array": "a list", "object": "a mapping", "integer": "a whole number",
             "boolean": "true or false", "number": "a number"}


def _missing(error: jsonschema.ValidationError) -> list[str]:
    """The keys a ``required`` error found missing, in the schema's order."""
    present = error.instance if isinstance(error.instance, dict) else {}
    return [key for key in error.validator_value if key not in present]


def _type_message(error: jsonschema.ValidationError) -> str:
    """A schema's type error in the file's words: "must be a list, not a string"."""
    wanted = [t for t in error.validator_value if t != "null"] if isinstance(error.validator_value, list) else [error.validator_value]
    return f"must be {' or '.join(_ARTICLES.get(t, t) for t in wanted)}, not {_article(error.instance)}"


def _article(value: Any) -> str:
    if isinstance(value, float):  # "a whole number, not a number" said nothing: show it, as YAML spells it
        return str(value) if math.isfinite(value) else {"inf": ".inf", "-inf": "-.inf"}.get(str(value), ".nan")
    return kind_of(value)


def item_line(text: str, key: str, index: int) -> int | None:
    """Line of item ``index`` of the top-level list ``key``; composing runs only for problems."""
    with contextlib.suppress(yaml.YAMLError):
        node = yamlio.compose(text)
        if isinstance(node, yaml.MappingNode):
            for key_node, value in node.value:
                if key_node.value == key and isinstance(value, yaml.SequenceNode):
                    if index < len(value.value):
                        return value.value[index].start_mark.line + 1
    return key_line(text, key)
