"""A problem ``validate`` and ``fmt`` report: ``path:line: message``, the path as typed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message}


def shown(path: Path) -> str:
    """A path as a user would type it: relative to the working directory when inside it."""
    try:
        return path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        return str(path)
