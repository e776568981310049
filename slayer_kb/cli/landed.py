"""What a command prints when its commit landed but the server that ran it died before it
answered (daemon/settle.py): the same output, from the result ``ops.landed`` reads back from
the commit, so the command is never run a second time."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

import click

from ..ops.landed import result_of
from . import cli
from .catalog import deleted_text, pruned_text
from .common import Settings, emit
from .memories import forgot_text, save_text, updated_text
from .sessions import ended_text, started_text

if TYPE_CHECKING:
    from ..kb import KnowledgeBase
    from ..store.requests import Landing


def print_landed(kb: KnowledgeBase, argv: list[str], command: str, rest: list[str], landing: Landing) -> bool:
    """Print what ``slayer-kb ARGV`` (``command`` with its arguments ``rest``) prints for its
    commit ``landing``; False, having printed nothing, for a commit it cannot read back."""
    landed = result_of(kb, landing)
    if landed is None:
        return False
    settings = Settings(None, "--json" in argv[: len(argv) - len(rest) - 1], None)
    ctx = click.Context(cli, obj=settings, info_name="slayer-kb")
    found = cli.get_command(ctx, command)
    if found is not None:  # its own --json (the option's callback sets settings.json)
        with contextlib.suppress(click.ClickException):
            found.make_context(command, list(rest), parent=ctx)
    result = landed.result
    if landed.kind == "save":
        emit(settings, result.to_json(), lambda: save_text(result))
    elif landed.kind == "update":
        emit(settings, result, lambda: updated_text(landed.subject, result))
    elif landed.kind == "restore":
        emit(settings, result, f"Restored memory {landed.subject}")
    elif landed.kind == "forget":
        emit(settings, result.to_json(), lambda: forgot_text(result))
    elif landed.kind == "delete":
        emit(settings, result.to_json(), lambda: deleted_text(result, command.removeprefix("delete-")))
    elif landed.kind == "prune":
        emit(settings, result.to_json(), lambda: pruned_text(result))
    elif landed.kind == "session-start":
        emit(settings, result, lambda: started_text(result))
    elif landed.kind == "session-end":
        emit(settings, result, lambda: ended_text(result))
    else:  # save-prompt
        emit(settings, result, result["message"])
    return True
