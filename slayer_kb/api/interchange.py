"""``kb.interchange``: SLayer's storage folder and Engram's JSON export, in and out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..core.outcomes import ExportResult, ImportResult

if TYPE_CHECKING:
    from ..context import Context


class Interchange:
    """Imports and exports of one KB (the ops module is imported on use)."""

    def __init__(self, kb: Context) -> None:
        self._kb = kb

    def import_slayer(self, folder: str | Path) -> ImportResult:
        """A SLayer storage folder's memories (``memories/<id>.md``), as one commit."""
        from ..ops import interchange

        return interchange.import_slayer(self._kb, folder)

    def export_slayer(self, folder: str | Path, force: bool = False) -> ExportResult:
        """Every live memory as ``FOLDER/memories/<id>.md`` (SLayer's format); ``force``: over
        files there no export of this kind wrote (ops/exportrecord.py)."""
        from ..ops import interchange

        return interchange.export_slayer(self._kb, folder, force)

    def import_engram(self, file: str | Path) -> ImportResult:
        """Engram's JSON export (observations, sessions, prompts), as one commit."""
        from ..ops import engramimport

        return engramimport.import_engram(self._kb, file)
