"""The rule every write that names a project applies (a memory's save or update, a session's
start, a prompt, a passive capture): a new project spelt like an existing one draws a warning.
Its own module so that the session writes (sessions.py), which observations.py builds on, can
apply it too."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core import engram

if TYPE_CHECKING:
    from ..context import Context


def project_warnings(kb: Context, project: str | None) -> list[str]:
    """A warning when a new project's name is close to an existing one (a likely typo): one
    some live memory has (``Context.projects``)."""
    if not project:
        return []
    existing = kb.projects()
    if project in existing:
        return []
    close = engram.similar_projects(project, existing)
    if not close:
        return []
    return [
        f"New project '{project}' looks like existing {', '.join(repr(p) for p in close)}; "
        "if you meant one of those, use that project name instead."
    ]
