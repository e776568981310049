"""What a command prints when its commit landed but the server that ran it died before it
answered (daemon/settle.py): the same output, from the result ``kb.history.landed`` reads back from
the commit, so the command is never run a second time."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import click

from ..core import problems
from ..core.outcomes import RestoreResult
from ..core.results import CascadeResult, ChangeResult, ForgetResult, RenameResult, SaveResult
from . import cli
from .catalog import deleted_text, pruned_text
from .common import Settings, emit
from .memories import forgot_text, renamed_text, restored_text, save_text, updated_text
from .sessions import ended_text, started_text

if TYPE_CHECKING:
    from ..kb import KnowledgeBase
    from ..store.requests import Landing


def print_landed(kb: KnowledgeBase, argv: list[str], command: str, rest: list[str], landing: Landing) -> bool:
    """Print what ``slayer-kb ARGV`` (``command`` with its arguments ``rest``) prints for its
    commit ``landing``; False, having printed nothing, for a commit it cannot read back."""
    landed = kb.history.landed(landing)
    if landed is None:
        return False
    settings = Settings(None, "--json" in argv[: len(argv) - len(rest) - 1], None)
    ctx = click.Context(cli, obj=settings, info_name="slayer-kb")
    found = cli.get_command(ctx, command)
    if found is not None:  # its own --json (the option's callback sets settings.json)
        with contextlib.suppress(click.ClickException):
            found.make_context(command, list(rest), parent=ctx)
    result = landed.result
    data = result.to_json()
    if isinstance(result, SaveResult):
        emit(settings, data, lambda: save_text(result))
    elif isinstance(result, ChangeResult):
        emit(settings, data, lambda: updated_text(landed.subject, data) if landed.kind == "update"
             else f"Restored memory {landed.subject}")
    elif isinstance(result, RestoreResult):
        emit(settings, data, lambda: restored_text(result))
    elif isinstance(result, ForgetResult):
        emit(settings, data, lambda: forgot_text(result, problems.command(kb.root)))
    elif isinstance(result, RenameResult):
        emit(settings, data, lambda: renamed_text(result))
    elif isinstance(result, CascadeResult):
        run = problems.command(kb.root)
        emit(settings, data, lambda: deleted_text(result, command.removeprefix("delete-"), run) if landed.kind == "delete"
             else pruned_text(result))
    elif landed.kind == "session-start":
        emit(settings, data, lambda: started_text(result))
    elif landed.kind == "session-end":
        emit(settings, data, lambda: ended_text(result))
    else:  # save-prompt
        emit(settings, data, result.message or "")
    return True
