"""The ``slayer-kb`` command line: argument parsing and output formatting only.

Every command calls one ``KnowledgeBase`` method. With ``--json`` stdout is one JSON document; an
error exits 1 with ``Error: ...`` on stderr (and ``{"error": {...}}`` on stdout with ``--json``);
a usage error exits 2.

The root group loads a command's module only when that command runs (or ``--help`` lists them
all): ``COMMANDS`` is the one place that names them, so every command is there however the
package is entered (``slayer-kb``, ``python -m slayer_kb.cli``, the warm server).
"""

from __future__ import annotations

import importlib

import click

from ..core.errors import InvalidInputError
from .common import CONTEXT_SETTINGS, KBGroup, Preset, Settings, version_option
from .repeats import refuse_repeated

# command name -> (module of this package, function)
COMMANDS: dict[str, tuple[str, str]] = {
    "init": ("memories", "init"),
    "save": ("memories", "save"),
    "get": ("memories", "get"),
    "update": ("memories", "update"),
    "forget": ("memories", "forget"),
    "restore": ("memories", "restore"),
    "rename": ("memories", "rename"),
    "suggest-topic-key": ("memories", "suggest_topic_key"),
    "timeline": ("memories", "timeline"),
    "context": ("memories", "context"),
    "session-summary": ("memories", "session_summary"),
    "search": ("search", "search_cmd"),
    "list": ("search", "list_cmd"),
    "stats": ("search", "stats"),
    "maintenance": ("upkeep", "maintenance"),
    "reindex": ("upkeep", "reindex"),
    "server": ("server", "server"),
    "watch": ("server", "watch"),
    "mcp": ("server", "mcp"),
    "delete-model": ("catalog", "delete_model"),
    "delete-datasource": ("catalog", "delete_datasource"),
    "delete-leaf": ("catalog", "delete_leaf"),
    "prune": ("catalog", "prune"),
    "validate": ("catalog", "validate_cmd"),
    "fmt": ("catalog", "fmt_cmd"),
    "schema": ("catalog", "schema_cmd"),
    "completion": ("completion", "completion"),
    "edit": ("history", "edit"),
    "log": ("history", "log"),
    "show": ("history", "show"),
    "review": ("history", "review"),
    "renumber": ("history", "renumber_cmd"),
    "sync": ("history", "sync_cmd"),
    "rebase": ("history", "rebase_cmd"),
    "merge": ("history", "merge_cmd"),
    "import-slayer": ("history", "import_slayer"),
    "export-slayer": ("history", "export_slayer"),
    "import-engram": ("history", "import_engram"),
    "session-start": ("sessions", "session_start"),
    "session-end": ("sessions", "session_end"),
    "save-prompt": ("sessions", "save_prompt"),
    "capture-passive": ("sessions", "capture_passive"),
    "sessions": ("sessions", "sessions_cmd"),
}


class LazyGroup(KBGroup):
    """The root group: commands from ``COMMANDS``, each imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            name, command, rest = super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            # click suggests close names from the commands it holds, and this group holds none.
            raise click.exceptions.NoSuchCommand(exc.command_name, possibilities=list(COMMANDS), ctx=ctx) from None
        if command is not None:
            refuse_repeated(command, rest, ctx)
        return name, command, rest

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        found = COMMANDS.get(cmd_name)
        if found is None:
            return None
        module, attribute = found
        command = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
        assert isinstance(command, click.Command), f"{module}.{attribute} is not a command"
        return command


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--kb", "kb_path", metavar="DIR", help="The knowledge base (default: $SLAYER_KB, else the enclosing KB)."
)
@click.option("--json", "json_out", is_flag=True, help="Print one JSON document on stdout.")
@click.option(
    "--author",
    metavar="'NAME <EMAIL>'",
    help="Commit author (default: $SLAYER_KB_AUTHOR, else git's config).",
)
@version_option
@click.pass_context
def cli(ctx: click.Context, kb_path: str | None, json_out: bool, author: str | None) -> None:
    """slayer-kb: agent memories as YAML files in git, searchable, reviewable, shareable.

    \b
    Examples:
      slayer-kb --kb kb search "how are refunds counted"
      slayer-kb --kb kb search -e shop.orders.amount --json
      slayer-kb save "NULL means not returned" -e orders.is_returned
    """
    ctx.obj = Settings(kb_path, json_out, author, ctx.obj if isinstance(ctx.obj, Preset) else None)
    if author is not None and not author.strip():
        # Taken for "not given" before: the commit then named git's identity, not the one meant.
        raise InvalidInputError("--author is blank: give the commit's author as 'Name <email>' (e.g. 'Ann Lee "
                                "<ann@example.com>'), or leave it out for $SLAYER_KB_AUTHOR or git's config.")


def main() -> None:
    cli(prog_name="slayer-kb")


__all__ = ["COMMANDS", "Preset", "Settings", "cli", "main"]
