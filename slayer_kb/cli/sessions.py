"""CLI commands for Engram's sessions and prompts: ``session-start``, ``session-end``,
``save-prompt``, ``capture-passive`` and ``sessions``; ``timeline --session`` prints with
:func:`session_timeline_text`.

Argument parsing and output formatting only; the work is in ``KnowledgeBase``'s Engram
methods (api/engram.py).
"""

from __future__ import annotations

import click

from ..core.results import SessionResult, SessionTimeline
from ..core.text import one_line_shown, quoted, warning_line, warning_lines
from .common import PROJECT_HELP, Settings, emit, for_terminal, json_option, pass_settings, read_text_arg
from .plain import no_stdin_for


def started_text(result: SessionResult) -> str:
    session = result.session
    return (f"Session {quoted(session['id'])} started for project {quoted(session['project'] or '')}"
            + warning_lines(result.warnings or []))


@click.command("session-start")
@click.argument("session_id", metavar="ID")
@click.option("--project", required=True, help="The session's project (trimmed, lower-cased).")
@click.option("--directory", help="The session's working directory.")
@json_option
@pass_settings
def session_start(settings: Settings, session_id: str, project: str, directory: str | None) -> None:
    """Register a session: sessions/ID.yaml, one commit (an existing one is kept, only an empty
    project or directory filled in).

    \b
    Example:
      slayer-kb session-start ses-2026-11-29-auth --project analytics --directory "$PWD"
    """
    no_stdin_for(project=project)
    result = settings.kb().session_start(session_id, project, directory)
    emit(settings, result.to_json(), lambda: started_text(result))


@click.command("session-end")
@click.argument("session_id", metavar="ID")
@click.option("--summary", help="What was accomplished; - reads it from stdin.")
@json_option
@pass_settings
def session_end(settings: Settings, session_id: str, summary: str | None) -> None:
    """Mark session ID completed: its end time and optional summary, one commit.

    \b
    Example:
      slayer-kb session-end ses-2026-11-29-auth --summary "Found why refunds were counted twice"
    """
    result = settings.kb().session_end(session_id, read_text_arg(summary))
    emit(settings, result.to_json(), lambda: ended_text(result))


def ended_text(result: SessionResult) -> str:
    return f"Session {quoted(result.session['id'])} completed" + warning_lines(result.warnings or [])


@click.command("save-prompt")
@click.argument("content")
@click.option("--session", "session_id", help="The session (default manual-save-PROJECT).")
@click.option("--project", help=PROJECT_HELP)
@json_option
@pass_settings
def save_prompt(settings: Settings, content: str, session_id: str | None, project: str | None) -> None:
    """Record what the user asked in its session's file, one commit. CONTENT may be - for stdin.

    \b
    Example:
      slayer-kb save-prompt "Why does net revenue go negative in March?" --session ses-1
    """
    result = settings.kb().save_prompt(read_text_arg(content), session_id, project)
    emit(settings, result.to_json(), result.message or "")


@click.command("capture-passive")
@click.argument("content")
@click.option("--session", "session_id", help="The session (default manual-save-PROJECT).")
@click.option("--project", help=PROJECT_HELP)
@click.option("--source", help="Where the text came from (default mcp-passive); in the commit message.")
@json_option
@pass_settings
def capture_passive(settings: Settings, content: str, session_id: str | None, project: str | None,
                    source: str | None) -> None:
    """Save each item of the text's '## Key Learnings:' section as a passive memory, one commit.
    CONTENT may be - for stdin.

    \b
    Example:
      agent-output | slayer-kb capture-passive - --project analytics --source session-end
    """
    result = settings.kb().capture_passive(read_text_arg(content), session_id, project, source)

    def human() -> str:
        ids = f" (memor{'y' if len(result.memory_ids) == 1 else 'ies'} {', '.join(result.memory_ids)})"
        return result.message + (ids if result.memory_ids else "") + warning_lines(result.warnings)

    emit(settings, result.to_json(), human)


@click.command("sessions")
@click.option("--project", help="Only this project's sessions.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Sessions to list.")
@json_option
@pass_settings
def sessions_cmd(settings: Settings, project: str | None, limit: int) -> None:
    """The sessions active last, newest first, with their prompt counts.

    \b
    Example:
      slayer-kb sessions --project analytics
    """
    found = settings.kb().recent_sessions(project, limit)
    data = [s.to_dict() for s in found.sessions]
    if settings.json:  # the document is the list of sessions: the warnings go beside it
        for line in found.warnings:
            click.echo(for_terminal(warning_line(line)), err=True)

    def human() -> str:
        listed = "\n".join(
            f"{one_line_shown(s['id'])}  {one_line_shown(s['project'] or '-')}  {s['started_at']} to "
            f"{s['ended_at'] or 'open'}  {len(s['prompts'])} prompt{'' if len(s['prompts']) == 1 else 's'}"
            + (f"\n    {' '.join(s['summary'].split())}" if s["summary"] else "")
            for s in data
        )
        return (listed or "No sessions.") + warning_lines(found.warnings)

    emit(settings, data, human)


def session_timeline_text(data: SessionTimeline) -> str:
    """``timeline --session``'s human output: the session's line, then its entries oldest first."""
    session = data["session"]
    head = one_line_shown(session["id"])
    if "started_at" in session:
        head += f" ({one_line_shown(session['project'] or 'no project')}, {session['started_at']} to {session['ended_at'] or 'open'})"
    lines = [head]
    for entry in data["entries"]:
        text = " ".join(entry["text"].split())
        if entry["kind"] == "memory":
            kind = f" ({entry['type']})" if entry["type"] else ""
            lines.append(f"  {entry['at']} memory [{entry['id']}] {text}{kind}")
        else:
            lines.append(f"  {entry['at']} {entry['kind']}" + (f": {text}" if text else ""))
    return "\n".join(lines)
