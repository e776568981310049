"""``validate`` and ``fmt`` of memory and session files, and their JSON Schemas. They read files
given by path, of one KB or several, so they are functions rather than ``KnowledgeBase``
methods."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.outcomes import Report

if TYPE_CHECKING:
    from ..context import Context


def validate(paths: Sequence[Path], against: str | None = None, kb: Context | None = None) -> Report:
    """Check memory and session files (a file, a folder, a KB, a catalog file standing for its
    KB's memories); with ``against``, also the auto ids this branch added that it uses
    (``kb``: a KB among them already open, whose repository is not located again)."""
    from ..ops.validate import validate as check

    return check(paths, against, kb.store if kb is not None else None)


def fmt(paths: Sequence[Path], check: bool = False, kb: Context | None = None) -> Report:
    """Rewrite the files into canonical form; with ``check``, only report those that are not
    (``kb``: a KB among them already open, whose repository is not located again)."""
    from ..ops.fmt import fmt as rewrite

    return rewrite(paths, check=check, opened=kb.store if kb is not None else None)


def schema(session: bool = False) -> str:
    """The JSON Schema of memory files (of session files with ``session``), indented."""
    from ..ops.schema_words import SCHEMA_PATH, SESSION_SCHEMA_PATH

    path = SESSION_SCHEMA_PATH if session else SCHEMA_PATH
    return json.dumps(json.loads(path.read_text(encoding="utf-8")), indent=2)
