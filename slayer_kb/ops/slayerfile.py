"""SLayer's memory file (``<folder>/memories/<id>.md``: YAML front matter, then the learning) as
import-slayer reads it and export-slayer writes it (interchange.py has the layout and the
decisions), and whether the KB's memory was made from one (``made_from``). Its own module, as
validate reads a SLayer file left in ``memories/`` too (misplaced.py) and has no business with an
import."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from ..catalog.slayerquery import check_query
from ..core import engram, yamlio
from ..core.errors import InvalidIdError, InvalidInputError, KBError
from ..core.fileio import outside
from ..core.ids import check_new_id
from ..core.inputs import given_text, read_given_file
from ..core.memory import FIELD_NAMES, KEY_ORDER, MAX_FILE_BYTES, Memory, loads
from ..core.text import kind_of
from .schema_words import memory_times

FRONT = "---\n"
SLAYER_KEYS = ("id", "description", "entities", "query", "created_at")
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def parse_slayer_file(text: str, path: str) -> dict[str, Any]:
    """Front matter mapping plus ``learning`` (the body) of one ``memories/<id>.md``; a file
    written with Windows line ends is read with Unix ones, as git keeps them."""
    if text.startswith(FRONT.replace("\n", "\r\n")):
        text = text.replace("\r\n", "\n")
    if not text.startswith(FRONT):
        raise InvalidInputError(f"{path}:1: a SLayer memory file starts with '---' (YAML front matter).")
    end = text.find("\n---\n", len(FRONT) - 1)
    if end < 0:
        raise InvalidInputError(f"{path}: the front matter has no closing '---' line.")
    try:
        data = yamlio.load(text[len(FRONT):end + 1]) or {}
    except yaml.YAMLError as exc:
        raise InvalidInputError(f"{path}: invalid YAML front matter: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{path}: the front matter must be a mapping of keys.")
    body = text[end + len("\n---\n"):]
    if body.startswith("\n"):
        body = body[1:]
    if body.endswith("\n"):
        body = body[:-1]
    return {**data, "learning": body}


def format_slayer_file(memory: Memory) -> str:
    data: dict[str, Any] = {"id": memory.id}
    for key in (*SLAYER_KEYS[1:], *KEY_ORDER):
        value = getattr(memory, key)
        if key in data or key == "learning" or value is None or (key == "entities" and not value):
            continue
        data[key] = value
    front = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True,
                      default_flow_style=False, width=1_000_000_000)
    return f"{FRONT}{front}{FRONT}\n{memory.learning}\n"


class OutsideLink(InvalidInputError):
    """A file of the folder is a link out of it: the whole import is refused, not the file skipped."""


def slayer_text(folder: Path, path: Path) -> str:
    """A file of the SLayer storage ``folder``: a link is followed only inside the folder (a
    storage folder from elsewhere could link memories/1.md to ~/.ssh/id_rsa, and the import
    would commit the key)."""
    if os.path.islink(path) and (target := outside(folder, path)):
        raise OutsideLink(f"{path} is a symlink to {target}, outside {folder}: slayer-kb imports only the "
                                "folder's own files. Replace the link with a copy of the file, or remove it, then retry.")
    try:
        return given_text(read_given_file(path, "the SLayer file", MAX_FILE_BYTES))
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start}).") from None


def memory_from_row(where: str, row: dict[str, Any], notes: list[str]) -> Memory:
    """The row as a memory; what it changed of the row to take it goes in ``notes``, which the
    import says only of a memory it writes (one skipped later was not kept on any terms)."""
    row = dict(row)
    given = row.pop("id", None)
    if given is None:
        raise InvalidInputError(f"{where}: the memory has no id; give it one, quoted (id: '42'), to import it.")
    if not isinstance(given, str):
        # YAML 1.1 reads an unquoted id by its form, so str() of it is not what the file says.
        raise InvalidInputError(
            f"{where}: the id is {kind_of(given)} ({given!r}), not text: YAML reads an unquoted id by its form "
            "(010 as 8, 0x1F as 31, true as a boolean). Quote the id as the file means it (id: '010') to import it.")
    try:
        memory_id = check_new_id(given)
    except InvalidIdError as exc:
        raise InvalidIdError(f"{where}: {exc}") from None
    unknown = [k for k in row if k not in FIELD_NAMES]
    for key in unknown:
        notes.append(f"{where}: key {key!r} is not a memory field; dropped.")
        row.pop(key)
    if row.get("entities") is None:
        row.pop("entities", None)
    try:  # as a save holds them: at most engram.MAX_KEY characters, printable
        for key in ("type", "project", "topic_key"):
            if isinstance(row.get(key), str):
                engram.check_printable(row[key], key)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{where}: {exc}") from None
    if isinstance(row.get("title"), str):  # as a save takes it: private spans redacted, trimmed, checked
        try:
            row["title"] = engram.import_title(row["title"], memory_id, where, notes)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: {exc}") from None
        if row["title"] is None:
            row.pop("title")
    text = yaml.dump(row, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1_000_000_000)
    memory = loads(text, memory_id, where)
    for _line, problem in memory_times(text, memory.to_dict()):
        raise InvalidInputError(f"{where}: {problem}")  # validate's error, on the commit it would make
    if memory.query is not None:
        try:
            check_query(memory.query)  # the one rule for a stored SlayerQuery (save, validate, MCP)
        except InvalidInputError as exc:
            raise InvalidInputError(f"{where}: query: {exc}") from None
    return memory


def slayer_memory(path: Path) -> Memory | None:
    """SLayer's memory in its file ``path`` (``<folder>/memories/<id>.md``) as an import takes it,
    its links unresolved; None when an import would skip it."""
    try:
        data = parse_slayer_file(slayer_text(path.parent.parent, path), str(path))
        return memory_from_row(str(path), {"id": path.stem, **data}, [])
    except KBError:
        return None


def made_from(ours: Memory, theirs: Memory) -> bool:
    """Whether the KB's memory ``ours`` is SLayer's memory ``theirs`` (imported from it, edited in
    either since): an import keeps ``created_at``, and so do SLayer's and slayer-kb's edits. Two
    memories under one id otherwise (an agent's save in a storage folder made a KB)."""
    return ours.created_at == theirs.created_at
