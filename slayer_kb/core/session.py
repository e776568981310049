"""An Engram session as a record: its id, file name and file form, ``sessions/<id>.yaml``.

One file per session, reviewed like a memory: its project, working directory, start and end
times, the summary it ended with, and the prompts the user gave in it, oldest first::

    project: analytics
    directory: /home/ana/analytics
    started_at: '2026-11-29T20:42:40Z'
    ended_at: '2026-11-29T21:10:02Z'
    summary: Found why refunds were counted twice.
    prompts:
    - created_at: '2026-11-29T20:43:00Z'
      content: Why does net revenue go negative in March?

Like a memory file, the file name is the id and the file has no id key. A character that cannot
be in a portable file name (anything but ASCII letters, digits, ``_``, ``-`` and ``.``; a leading
``.`` or ``-``; a name Windows reserves) is written ``%XX`` per UTF-8 byte, so every Engram
session id has exactly one file name: ``manual-save-my api`` is ``manual-save-my%20api.yaml``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from . import yamlio
from .errors import InvalidInputError, MemoryFileError
from .ids import WINDOWS_RESERVED, fold_id
from .inputs import check_unicode
from .memory import (
    COMPOSED_KEYS,
    TIMESTAMP,
    check_yaml_shape,
    dump_key,
    key_line,
    time_order,
    too_deep_for_parser,
)
from .text import kind_of

SESSIONS_DIR = "sessions"
SESSION_KEYS: tuple[str, ...] = ("project", "directory", "started_at", "ended_at", "summary", "prompts")
PROMPT_KEYS: tuple[str, ...] = ("created_at", "content", "project")
# The session's own times, which validate checks against the calendar (a 30th of February).
SESSION_TIMES: tuple[str, ...] = ("started_at", "ended_at")
MAX_SESSION_ID = 200  # characters
# Bytes in a file name (NAME_MAX on Linux and macOS): an id of 200 characters outside ASCII is
# written as %XX per byte, up to 12 bytes a character, and the file could not be made.
MAX_FILE_NAME = 255
MAX_SUMMARY = 64 * 1024


@dataclass
class Prompt:
    created_at: str
    content: str
    project: str | None = None  # only when it differs from the session's project

    def to_dict(self) -> dict[str, Any]:
        return {key: getattr(self, key) for key in PROMPT_KEYS if getattr(self, key) is not None}


@dataclass
class Session:
    id: str
    started_at: str
    project: str | None = None
    directory: str | None = None
    ended_at: str | None = None
    summary: str | None = None
    prompts: list[Prompt] = field(default_factory=list)

    @property
    def path(self) -> str:
        return session_path(self.id)

    @property
    def last_activity(self) -> str:
        times = [self.started_at, self.ended_at or "", *(p.created_at for p in self.prompts)]
        return max(times, key=time_order)

    def to_dict(self) -> dict[str, Any]:
        """Every field (absent ones as None) with the id first, as ``--json`` prints it."""
        data: dict[str, Any] = {"id": self.id}
        data.update({key: getattr(self, key) for key in SESSION_KEYS if key != "prompts"})
        data["prompts"] = [p.to_dict() for p in self.prompts]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Session:
        values = dict(data)
        values["prompts"] = [Prompt(**p) for p in values.get("prompts") or []]
        return cls(**values)


# -- ids and file names --------------------------------------------------------------------------


def unprintable(session_id: str) -> str | None:
    """The first control or invisible character of ``session_id``, which no session id holds."""
    return next((ch for ch in session_id if not ch.isprintable() and ch != " "), None)


def printable(session_id: str) -> str:
    """``session_id`` without its control and invisible characters: the id a fix suggests."""
    return "".join(ch for ch in session_id if ch.isprintable() or ch == " ")


def check_session_id(value: Any, name: str = "id") -> str:
    """The session id ``value`` (the parameter ``name``), trimmed; an error names the parameter."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} must be a string (the session's id), not {kind_of(value)}.")
    session_id = value.strip()
    if not session_id:
        raise InvalidInputError(
            f"{name} is required and must not be blank: give the session's id (e.g. 'ses-2026-11-29-auth')."
        )
    if len(session_id) > MAX_SESSION_ID:
        raise InvalidInputError(
            f"{name} is {len(session_id)} characters long; the limit is {MAX_SESSION_ID}. Use a shorter session id."
        )
    bad = unprintable(session_id)
    if bad is not None:
        raise InvalidInputError(
            f"{name} contains U+{ord(bad):04X}, a control or invisible character; a session id is "
            "printable text such as 'ses-2026-11-29-auth'."
        )
    check_unicode(session_id, name)
    size = len(file_name(session_id).encode("utf-8"))
    if size > MAX_FILE_NAME:
        raise InvalidInputError(
            f"{name} makes a file name of {size} bytes (each character but ASCII letters, digits, '_', "
            f"'.' and '-' is written as %XX for each of its bytes); the limit is {MAX_FILE_NAME}. "
            "Use a shorter session id, or one in ASCII letters and digits."
        )
    return session_id


def _plain(ch: str, first: bool) -> bool:
    return ch.isascii() and (ch.isalnum() or ch == "_" or (ch in ".-" and not first))


def file_name(session_id: str) -> str:
    """The session's file name: the id, with ``%XX`` for what a portable file name cannot hold."""
    out = [ch if _plain(ch, i == 0) else "".join(f"%{b:02X}" for b in ch.encode("utf-8"))
           for i, ch in enumerate(session_id)]
    stem = session_id.split(".", 1)[0]
    if stem.casefold() in WINDOWS_RESERVED:
        out[0] = f"%{ord(session_id[0]):02X}"
    return "".join(out) + ".yaml"


def session_path(session_id: str) -> str:
    return f"{SESSIONS_DIR}/{file_name(session_id)}"


def id_of_file(name: str) -> str | None:
    """The session id a file name stands for, or None when it is no session file's name (not
    ``.yaml``, a dot-file, or not the canonical spelling of any id)."""
    if not name.endswith(".yaml") or name.startswith("."):
        return None
    try:
        session_id = unquote(name[:-5], errors="strict")
    except UnicodeDecodeError:
        return None
    if not session_id or file_name(session_id) != name:
        return None
    return session_id


# -- the file format -----------------------------------------------------------------------------


def dumps(session: Session) -> str:
    """The canonical file text: keys in order, multi-line text as ``|`` blocks."""
    parts = []
    for key in SESSION_KEYS:
        value = getattr(session, key)
        if key == "prompts":
            if value:
                parts.append("prompts:\n" + "".join(_dump_prompt(p) for p in value))
        elif value is not None:
            parts.append(dump_key(key, value))
    text = "".join(parts)
    if _load(text) != _plain_dict(session):  # pragma: no cover - a guard: never write a file that reads back otherwise
        return yaml.dump(_plain_dict(session), Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper),
                         sort_keys=False, allow_unicode=True, width=1_000_000_000)
    return text


def _dump_prompt(prompt: Prompt) -> str:
    lines: list[str] = []
    for key, value in prompt.to_dict().items():
        lines.extend(("  " + line if line else "") for line in dump_key(key, value).split("\n")[:-1])
    lines[0] = "- " + lines[0][2:]
    return "\n".join(lines) + "\n"


def _plain_dict(session: Session) -> dict[str, Any]:
    data = {key: getattr(session, key) for key in SESSION_KEYS if key != "prompts" and getattr(session, key) is not None}
    if session.prompts:
        data["prompts"] = [p.to_dict() for p in session.prompts]
    return data


def _load(text: str) -> Any:
    return yamlio.load(text)


def loads(text: str, session_id: str, where: str = "") -> Session:
    """Parse a session file; :class:`MemoryFileError` names the line and the key or item."""
    where = where or session_path(session_id)
    check_yaml_shape(text, where)
    try:
        data = _load(text)
    except yaml.YAMLError as exc:
        if too_deep_for_parser(exc):
            raise MemoryFileError(where, None, "nests too deep; a session file is two levels deep") from None
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise MemoryFileError(where, mark.line + 1 if mark else None, f"invalid YAML: {problem}") from None
    except RecursionError:
        raise MemoryFileError(where, None, "nests too deep; a session file is two levels deep") from None
    if not isinstance(data, dict):
        raise MemoryFileError(where, 1, "a session file must be a mapping of keys (project:, started_at:, ...)")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if not isinstance(key, str) or key not in SESSION_KEYS:
            hint = ("the file name is the id; remove the id key" if key == "id"
                    else f"allowed keys: {', '.join(SESSION_KEYS)}")
            raise MemoryFileError(where, key_line(text, key), f"unknown key {key!r} ({hint})")
        if key == "prompts":
            values[key] = _prompts(value, text, where)
            continue
        problem = _value_problem(key, value)
        if problem:
            raise MemoryFileError(where, key_line(text, key), f"'{key}' {problem}")
        values[key] = _time(value) if key.endswith("_at") and value is not None else value
        if key in COMPOSED_KEYS and value is not None:  # NFC, as a memory's
            values[key] = unicodedata.normalize("NFC", value)
    if values.get("started_at") is None:
        raise MemoryFileError(where, 1, "missing required key 'started_at' (add started_at: 'YYYY-MM-DDTHH:MM:SSZ')")
    return Session(id=session_id, **values)


def _time(value: Any) -> str:
    import datetime as _dt

    if isinstance(value, _dt.datetime):
        value = value.astimezone(_dt.timezone.utc) if value.tzinfo else value
        return value.strftime("%Y-%m-%dT%H:%M:%SZ")
    return value  # type: ignore[no-any-return]


def _value_problem(key: str, value: Any) -> str | None:
    import datetime as _dt

    if value is None:
        return "must not be empty" if key in ("started_at", "content", "created_at") else None
    if key.endswith("_at"):
        if isinstance(value, _dt.datetime):
            return None
        if not isinstance(value, str) or not TIMESTAMP.fullmatch(value):
            return "must be a UTC time like '2026-11-29T20:42:40Z'"
        return None
    if not isinstance(value, str):
        return f"must be a string, not {kind_of(value)} (quote it)"
    if key == "content" and not value.strip():
        return "must not be blank"
    return None


def _prompts(value: Any, text: str, where: str) -> list[Prompt]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MemoryFileError(where, key_line(text, "prompts"), "'prompts' must be a list of {created_at, content}")

    def fail(index: int, message: str) -> MemoryFileError:
        return MemoryFileError(where, _item_line(text, index), f"prompts[{index}]{message}")

    out = []
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise fail(index, f" must be a mapping with created_at and content, not {kind_of(item)}")
        for key, field_value in item.items():
            if key not in PROMPT_KEYS:
                raise fail(index, f": unknown key {key!r} (allowed keys: {', '.join(PROMPT_KEYS)})")
            problem = _value_problem(key, field_value)
            if problem:
                raise fail(index, f".{key} {problem}")
        for key in ("created_at", "content"):
            if key not in item:
                raise fail(index, f" is missing its {key}")
        out.append(Prompt(_time(item["created_at"]), item["content"], item.get("project")))
    return out


def _item_line(text: str, index: int) -> int | None:
    with contextlib.suppress(yaml.YAMLError):
        node = yamlio.compose(text)
        for key, value in node.value if isinstance(node, yaml.MappingNode) else ():
            if key.value == "prompts" and isinstance(value, yaml.SequenceNode) and index < len(value.value):
                return int(value.value[index].start_mark.line) + 1
    return key_line(text, "prompts")


def case_twins(path: Path) -> list[str]:
    """The other sessions of ``path``'s folder whose file names differ from its only in letter case
    (or Unicode normalisation): files that collide on macOS and Windows checkouts. Two clones can
    each start one, and a sync merges both in."""
    try:
        twins = _folded_twins(str(path.parent), os.stat(path.parent).st_mtime_ns)
    except OSError:
        return []
    own = id_of_file(path.name)
    return [other for other in twins.get(fold_id(path.name), ()) if other != own]


@functools.lru_cache(maxsize=4)
def _folded_twins(folder: str, _changed: int) -> dict[str, tuple[str, ...]]:
    """The folder's session ids by folded file name, where more than one folds alike (listed once
    a validate run: ``_changed``, the folder's mtime, reads it again once a file comes or goes)."""
    folded: dict[str, list[str]] = {}
    for name in os.listdir(folder):
        if (session_id := id_of_file(name)) is not None:
            folded.setdefault(fold_id(name), []).append(session_id)
    return {key: tuple(sorted(ids)) for key, ids in folded.items() if len(ids) > 1}
