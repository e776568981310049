"""The ``slayer-kb`` command line: argument parsing and output formatting only.

Every command calls one ``KnowledgeBase`` method. With ``--json`` stdout is one JSON document; an
error exits 1 with ``Error: ...`` on stderr (and ``{"error": {...}}`` on stdout with ``--json``);
a usage error exits 2.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, overload

import click
import yaml

from . import engram, nesting
from .errors import InvalidInputError, KBError, NotFoundError
from .ids import check_id
from .kb import DEFAULT_MAX_CONTENT, KnowledgeBase
from .locate import find_kb_root
from .text import warning_lines

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@dataclass
class Preset:
    """What the server running a relayed command (server.py) hands it: its warm KB, and the
    width of the terminal the command was typed in."""

    kb: KnowledgeBase
    width: int


class Settings:
    def __init__(self, kb: str | None, json_out: bool, author: str | None, preset: Preset | None = None) -> None:
        self.kb_path = kb
        self.json = json_out
        self.author = author
        self.preset = preset
        self._kb: KnowledgeBase | None = preset.kb if preset is not None else None

    def width(self) -> int:
        """Columns for human output: the terminal's, 60 to 120."""
        columns = self.preset.width if self.preset is not None else shutil.get_terminal_size((100, 24)).columns
        return max(60, min(columns, 120))

    def kb(self) -> KnowledgeBase:
        if self.preset is not None:
            # A server's warm KB (server.py) takes this command's author and size limit.
            max_content = os.environ.get("SLAYER_KB_MAX_CONTENT")
            self.preset.kb.author = self.author or os.environ.get("SLAYER_KB_AUTHOR") or None
            self.preset.kb.max_content = int(max_content) if max_content else DEFAULT_MAX_CONTENT
        if self._kb is None:
            path = self.kb_path or os.environ.get("SLAYER_KB")
            root = Path(path) if path else find_kb_root(Path.cwd())
            if root is None:
                raise NotFoundError(
                    "No knowledge base here: pass --kb DIR, set SLAYER_KB, or run inside a KB "
                    "(a folder with memories/). Create one with 'slayer-kb init DIR'."
                )
            max_content = os.environ.get("SLAYER_KB_MAX_CONTENT")
            kwargs: dict[str, Any] = {"author": self.author}
            if max_content:
                kwargs["max_content"] = int(max_content)
            self._kb = KnowledgeBase(root, **kwargs)
        return self._kb


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--json`` after the command as well as before it, as CLI.md writes it."""

    def callback(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        if value:
            ctx.find_object(Settings).json = True  # type: ignore[union-attr]
        return value

    return click.option(
        "--json",
        "json_flag",
        is_flag=True,
        expose_value=False,
        callback=callback,
        help="Print one JSON document on stdout.",
    )(f)


force_option = click.option(
    "--force",
    is_flag=True,
    help="Rewrite files that hold uncommitted work from HEAD, keeping your versions as <file>.orig.",
)


def kept_line(kept: list[str]) -> str:
    """The human output's line about the versions ``--force`` set aside (empty when none)."""
    return f"\nkept your uncommitted versions as: {', '.join(kept)}" if kept else ""


def fail(settings: Settings | None, error: KBError) -> NoReturn:
    message = str(error)
    click.echo(f"Error: {message}", err=True)
    if settings is not None and settings.json:
        click.echo(json.dumps({"error": {"type": error.type_name, "message": message}}))
    sys.exit(1)


class KBGroup(click.Group):
    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KBError as exc:
            fail(ctx.find_object(Settings), exc)
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            fail(ctx.find_object(Settings), KBError(f"{exc.strerror or exc}{where}."))


def emit(settings: Settings, data: Any, human: Callable[[], str] | str) -> None:
    if settings.json:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
    else:
        text = human() if callable(human) else human
        if text:
            click.echo(text)


@overload
def read_text_arg(value: str) -> str: ...
@overload
def read_text_arg(value: None) -> None: ...
def read_text_arg(value: str | None) -> str | None:
    """The text of an argument that may be ``-``: standard input."""
    if value == "-":
        return sys.stdin.read()
    return value


def read_query(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    source = value
    if value.startswith("@"):
        try:
            source = Path(value[1:]).read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInputError(f"Cannot read the query file {value[1:]}: {exc.strerror}.") from None
    elif value == "-":
        source = sys.stdin.read()
    query = nesting.loads(
        source,
        "--query",
        'pass a SlayerQuery object such as \'{"source_model": "orders", "measures": ["sum(amount)"]}\' '
        "or @FILE.",
        nesting.QUERY_FIX,
    )
    if not isinstance(query, dict):
        raise InvalidInputError("--query must be a JSON object (a SlayerQuery with source_model).")
    return query


@click.group(cls=KBGroup, context_settings=CONTEXT_SETTINGS)
@click.option(
    "--kb", "kb_path", metavar="DIR", help="The knowledge base (default: $SLAYER_KB, else the enclosing KB)."
)
@click.option("--json", "json_out", is_flag=True, help="Print one JSON document on stdout.")
@click.option(
    "--author",
    metavar="'NAME <EMAIL>'",
    help="Commit author (default: $SLAYER_KB_AUTHOR, else git's config).",
)
@click.version_option(package_name="slayer-kb")
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


pass_settings = click.make_pass_decorator(Settings)

# -- memories ------------------------------------------------------------------------------


@cli.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--example", is_flag=True, help="Start from the shipped example KB (an online shop's catalog and memories).")
@json_option
@pass_settings
def init(settings: Settings, directory: str, example: bool) -> None:
    """Create a knowledge base in DIRECTORY (and a git repository when it is in none).

    \b
    Examples:
      slayer-kb init ./team-kb
      slayer-kb init ./demo --example
    """
    kb = KnowledgeBase.init(directory, author=settings.author, example=example)
    emit(settings, {"kb": str(kb.root)}, f"Initialised knowledge base in {kb.root}")


ENTITY_HELP = (
    "An entity reference (repeatable, or comma-separated): orders.amount, shop.orders, sum(amount), memory:12."
)


@cli.command()
@click.argument("learning", required=False)
@click.option("-e", "--entity", "entities", multiple=True, help=ENTITY_HELP)
@click.option(
    "--query",
    "query",
    metavar="JSON|@FILE",
    help="A SlayerQuery whose entities are linked and which is stored with the memory.",
)
@click.option(
    "--id", "memory_id",
    help="A stable id (omit for the next auto id; not with --title). An existing id is replaced whole.",
)
@click.option("--description", help="A one-line summary, at most 500 characters.")
@click.option(
    "--title",
    help="A short title: makes this an Engram-style observation (topic-key upserts, de-duplication).",
)
@click.option("--content", help="Same as LEARNING (Engram's name for it).")
@click.option(
    "--type",
    "type_",
    metavar="TYPE",
    help="Observation type: " + ", ".join(engram.RECOGNISED_TYPES) + " (default manual).",
)
@click.option("--project", help="Project name (trimmed, lower-cased).")
@click.option("--scope", type=click.Choice(["project", "personal"]), help="project (default) or personal.")
@click.option("--topic-key", help="Upsert key, e.g. architecture/auth-model (see suggest-topic-key).")
@click.option("--session", "session_id", help="Session id (default manual-save-PROJECT).")
@json_option
@pass_settings
def save(
    settings: Settings,
    learning: str | None,
    entities: tuple[str, ...],
    query: str | None,
    memory_id: str | None,
    description: str | None,
    title: str | None,
    content: str | None,
    type_: str | None,
    project: str | None,
    scope: str | None,
    topic_key: str | None,
    session_id: str | None,
) -> None:
    """Save a memory: LEARNING (or - for stdin) linked to entities or a query.

    \b
    Examples:
      slayer-kb save "orders.is_returned is 0, 1 or NULL; NULL means not returned" -e orders.is_returned
      slayer-kb save "Paid revenue" --id kb.paid-revenue \\
        --query '{"source_model": "orders", "measures": ["amount:sum"]}'
      echo "JWT over sessions" | slayer-kb save - --title "Auth decision" --type decision --project api
    """
    text = read_text_arg(learning if learning is not None else content)
    if text is None:
        raise InvalidInputError(
            "Give the learning as an argument, with --content, or '-' to read it from stdin."
        )
    kb = settings.kb()
    parsed = read_query(query)
    if title is not None:
        if memory_id is not None:
            check_id(memory_id)  # a bad id hears the id rules first
            raise InvalidInputError(
                f"--id cannot be combined with --title: an observation's id is chosen for it (the "
                "next auto id, or the memory its --topic-key revises). Drop --id; or drop --title "
                f"and link entities with -e to save under '{memory_id}'; or change an existing "
                f"memory with 'slayer-kb update {memory_id} --title ...'."
            )
        if parsed is not None:
            raise InvalidInputError(
                "--query cannot be combined with --title; save the example query without a title."
            )
        result = kb.save_observation(
            title=title,
            content=text,
            type=type_,
            project=project,
            scope=scope,
            topic_key=topic_key,
            session_id=session_id,
            entities=list(entities) or None,
            description=description,
        )
    else:
        if parsed is None and not entities:
            raise InvalidInputError(
                "Nothing to link: give entity references with -e REF (e.g. -e orders.amount) or a "
                "--query, or save an observation with --title."
            )
        linked: Any = parsed if parsed is not None else list(entities)
        if parsed is not None and entities:
            raise InvalidInputError(
                "Give either -e references or --query, not both (the query's entities are linked)."
            )
        extra = {
            "type": type_,
            "project": project,
            "scope": scope,
            "topic_key": topic_key,
            "session_id": session_id,
        }
        result = kb.save_memory(text, linked, id=memory_id, description=description, **extra)
    emit(settings, result.to_json(), lambda: _save_text(result))


def _save_text(result: Any) -> str:
    if result.title is not None:
        head = result.message
        if result.action != "created":
            head += f"\n({result.action}: memory {result.memory_id})"
        else:
            head += f"\n(memory {result.memory_id})"
    else:
        head = f"Saved memory {result.memory_id} ({result.action})"
        if result.resolved_entities:
            head += "\n  entities: " + ", ".join(result.resolved_entities)
    return head + warning_lines(result.warnings)


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--deleted", is_flag=True, help="Show a soft-deleted memory too.")
@json_option
@pass_settings
def get(settings: Settings, memory_id: str, deleted: bool) -> None:
    """Show one memory with all its metadata.

    \b
    Example:
      slayer-kb get kb.paid-revenue
    """
    data = settings.kb().get(memory_id, include_deleted=deleted)
    emit(settings, data, lambda: _memory_text(data))


def _memory_text(data: dict[str, Any]) -> str:
    lines = [f"id: {data['id']}"]
    for key, value in data.items():
        if key in ("id", "learning", "warnings") or value in (None, []):
            continue
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines.extend(f"  - {item}" for item in value)
        elif isinstance(value, dict):
            lines.append(f"{key}:")
            lines.extend("  " + row for row in yaml.safe_dump(value, sort_keys=False, allow_unicode=True).splitlines())
        else:
            lines.append(f"{key}: {value}")
    lines.append("")
    lines.append(data["learning"].rstrip("\n"))
    return "\n".join(lines) + warning_lines(data.get("warnings", []))


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--title")
@click.option("--learning", "--content", "learning", help="New text (or - for stdin).")
@click.option("--type", "type_")
@click.option("--description")
@click.option("--project")
@click.option("--scope", type=click.Choice(["project", "personal"]))
@click.option("--topic-key")
@click.option("-e", "--entity", "entities", multiple=True, help="Replace the entities with these references.")
@force_option
@json_option
@pass_settings
def update(
    settings: Settings,
    memory_id: str,
    title: str | None,
    learning: str | None,
    type_: str | None,
    description: str | None,
    project: str | None,
    scope: str | None,
    topic_key: str | None,
    entities: tuple[str, ...],
    force: bool,
) -> None:
    """Change some fields of a memory (at least one).

    \b
    Example:
      slayer-kb update 12 --title "Refunds are negative rows" -e shop.refunds.amount
    """
    data = settings.kb().update(
        memory_id,
        title=title,
        learning=read_text_arg(learning),
        type=type_,
        description=description,
        project=project,
        scope=scope,
        topic_key=topic_key,
        entities=list(entities) or None,
        force=force,
    )
    emit(settings, data, lambda: f"Updated memory {memory_id}" + warning_lines(data.get("warnings", []))
         + kept_line(data.get("kept", [])))


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--soft", is_flag=True, help="Hide it (file kept with deleted_at; 'restore' brings it back).")
@force_option
@json_option
@pass_settings
def forget(settings: Settings, memory_id: str, soft: bool, force: bool) -> None:
    """Delete a memory and strip memory:ID from every other memory (one commit).

    \b
    Example:
      slayer-kb forget 12
    """
    result = settings.kb().forget(memory_id, soft=soft, force=force)

    def human() -> str:
        text = f"Forgot memory {memory_id}" + (" (soft; restore with 'slayer-kb restore')" if soft else "")
        if result.stripped_from:
            text += f"\n  stripped memory:{memory_id} from " + ", ".join(result.stripped_from)
        return text + kept_line(result.kept)

    emit(settings, result.to_json(), human)


@cli.command()
@click.argument("memory_id", metavar="ID")
@click.option("--rev", metavar="REV", help="Bring back the version at this commit, branch or tag (also of a deleted memory).")
@json_option
@pass_settings
def restore(settings: Settings, memory_id: str, rev: str | None) -> None:
    """Bring back a soft-deleted memory, or with --rev the version at REV, as a new commit.

    \b
    Examples:
      slayer-kb restore 12
      slayer-kb restore 12 --rev HEAD~3
    """
    if rev is not None:
        from .history import restore_revision

        result = restore_revision(settings.kb(), memory_id, rev)
        emit(
            settings,
            result.to_json(),
            lambda: f"Restored memory {memory_id} as of {result.rev[:12]}" + warning_lines(result.warnings),
        )
        return
    data = settings.kb().restore(memory_id)
    emit(settings, data, f"Restored memory {memory_id}")


def _hits_text(title: str, hits: list[dict[str, Any]], width: int) -> list[str]:
    if not hits:
        return []
    lines = [title]
    for hit in hits:
        meta = ", ".join(x for x in (hit["type"], hit["project"]) if x)
        label = hit["title"] or textwrap.shorten(hit["description"], width=width - 20, placeholder=" ...")
        lines.append(f"  [{hit['id']}] {label}{' (' + meta + ')' if meta else ''}".rstrip())
        if hit["title"]:
            lines.extend(textwrap.wrap(hit["description"], width, initial_indent="      ",
                                       subsequent_indent="      ", max_lines=3, placeholder=" ..."))
        if hit["entities"]:
            lines.extend(textwrap.wrap(", ".join(hit["entities"]), width, initial_indent="      entities: ",
                                       subsequent_indent="                ", max_lines=2, placeholder=" ..."))
        if hit.get("learning"):
            lines.extend("      | " + line for line in hit["learning"].rstrip("\n").split("\n"))
    return lines


@cli.command("search")
@click.argument("question", required=False)
@click.option(
    "-e",
    "--entity",
    "entities",
    multiple=True,
    help=ENTITY_HELP + " Unresolvable ones are dropped with a warning.",
)
@click.option("--query", "query", metavar="JSON|@FILE", help="A SlayerQuery whose entities to search for.")
@click.option("--datasource", help="Only memories with an entity in this datasource.")
@click.option("--type", "type_")
@click.option("--project")
@click.option("--scope", type=click.Choice(["project", "personal"]))
@click.option(
    "--limit", "--max-results", "limit", type=click.IntRange(min=1), default=10, show_default=True,
    help="At most this many memories, and as many example queries and catalog entities.",
)
@click.option("--all", "all_words", is_flag=True, help="Only memories holding every word of QUESTION, ranked by words alone.")
@click.option("--any", "any_word", is_flag=True, hidden=True, help="The default ranking (kept for scripts).")
@click.option("--full", is_flag=True, help="Include each memory's whole learning.")
@json_option
@pass_settings
def search_cmd(
    settings: Settings,
    question: str | None,
    entities: tuple[str, ...],
    query: str | None,
    datasource: str | None,
    type_: str | None,
    project: str | None,
    scope: str | None,
    limit: int,
    all_words: bool,
    any_word: bool,
    full: bool,
) -> None:
    """Find memories by words, meaning, entities or a query.

    The question is matched by its words (literally, no query syntax; --all keeps only memories
    holding every word) and by its meaning (local embeddings), fused with the entity ranking.
    Memories saved with a query come back under example queries, the others under memories;
    catalog entities that match come back too.

    \b
    Examples:
      slayer-kb search "how are refunds counted"
      slayer-kb search -e shop.orders.amount
      slayer-kb search decision/paid-revenue
    """
    result = settings.kb().search(
        read_text_arg(question),
        list(entities),
        read_query(query),
        datasource=datasource,
        type=type_,
        project=project,
        scope=scope,
        limit=limit,
        match="all" if all_words else "fused",
        full=full,
    )

    def human() -> str:
        lines = _hits_text("Memories:", result.memories, settings.width()) + _hits_text(
            "Example queries:", result.example_queries, settings.width()
        )
        if result.entities:
            lines.append("Catalog:")
            lines.extend(
                f"  {e['entity']} ({e['kind']}){': ' + e['description'] if e['description'] else ''}"
                for e in result.entities
            )
        if not lines:
            lines.append("No matches.")
        return "\n".join(lines) + warning_lines(result.warnings)

    emit(settings, result.to_json(), human)


@cli.command("list")
@click.option("--type", "type_")
@click.option("--project")
@click.option("--scope", type=click.Choice(["project", "personal"]))
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@json_option
@pass_settings
def list_cmd(
    settings: Settings, type_: str | None, project: str | None, scope: str | None, limit: int
) -> None:
    """List memories, newest first.

    \b
    Example:
      slayer-kb list --type decision --limit 5
    """
    hits = settings.kb().list(type=type_, project=project, scope=scope, limit=limit)
    emit(settings, {"memories": hits}, lambda: "\n".join(_hits_text("Memories:", hits, settings.width())) or "No memories.")


# -- Engram tools ----------------------------------------------------------------------------


@cli.command("suggest-topic-key")
@click.option("--type", "type_")
@click.option("--title")
@click.option("--content")
@json_option
@pass_settings
def suggest_topic_key(settings: Settings, type_: str | None, title: str | None, content: str | None) -> None:
    """Suggest a stable topic key (family/segment) for topic-key upserts.

    \b
    Example:
      slayer-kb suggest-topic-key --type architecture --title "Auth model"
    """
    key = engram.suggest_topic_key(type_, title, content)
    emit(settings, {"topic_key": key}, key)


@cli.command()
@click.argument("memory_id", metavar="[ID]", required=False)
@click.option("--before", type=click.IntRange(min=0), default=5, show_default=True)
@click.option("--after", type=click.IntRange(min=0), default=5, show_default=True)
@click.option("--session", "session_id", help="Instead of ID: the whole session, its prompts and memories.")
@json_option
@pass_settings
def timeline(settings: Settings, memory_id: str | None, before: int, after: int, session_id: str | None) -> None:
    """The memories saved just before and after ID in the same session, oldest first; with
    --session, a whole session: its start, prompts, memories and end.

    \b
    Examples:
      slayer-kb timeline 12 --before 3 --after 3
      slayer-kb timeline --session ses-2026-11-29-auth
    """
    if (memory_id is None) == (session_id is None):
        raise InvalidInputError("timeline takes a memory ID or --session SESSION, one of the two.")
    if session_id is not None:
        from .cli_sessions import session_timeline_text

        whole = settings.kb().session_timeline(session_id)
        emit(settings, whole, lambda: session_timeline_text(whole))
        return
    assert memory_id is not None
    data = settings.kb().timeline(memory_id, before, after)

    def human() -> str:
        rows = [*data["before"], data["focus"], *data["after"]]
        return "\n".join(
            f"{'>' if r['id'] == memory_id else ' '} {r['created_at']} [{r['id']}] {r['title'] or r['description']}"
            for r in rows
        )

    emit(settings, data, human)


@cli.command()
@click.option("--project")
@click.option("--scope", type=click.Choice(["project", "personal"]))
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Memories to list.")
@json_option
@pass_settings
def context(settings: Settings, project: str | None, scope: str | None, limit: int) -> None:
    """A compact markdown digest of recent sessions, prompts and memories, for an agent's first turn.

    \b
    Example:
      slayer-kb context --project analytics
    """
    text = settings.kb().context(project, scope, limit=limit)
    emit(settings, {"text": text}, text.rstrip("\n"))


@cli.command("session-summary")
@click.argument("content")
@click.option("--project")
@click.option("--session", "session_id")
@json_option
@pass_settings
def session_summary(settings: Settings, content: str, project: str | None, session_id: str | None) -> None:
    """Save an end-of-session summary (type session_summary). CONTENT may be - for stdin.

    \b
    Example:
      slayer-kb session-summary "Fixed the refund double count" --project analytics
    """
    result = settings.kb().session_summary(read_text_arg(content) or "", project, session_id)
    emit(settings, result.to_json(), lambda: _save_text(result))


@cli.command()
@json_option
@pass_settings
def stats(settings: Settings) -> None:
    """Counts of memories, sessions, projects and types, and whether search by meaning is on.

    \b
    Example:
      slayer-kb stats --json
    """
    data = settings.kb().stats()
    emit(
        settings,
        data,
        lambda: "\n".join(
            [
                f"memories: {data['memories']}",
                f"sessions: {data['sessions']}",
                f"projects: {', '.join(data['projects']) or '-'}",
                "types: " + (", ".join(f"{'(untyped)' if k == 'none' else k} {v}" for k, v in data["types"].items()) or "-"),
                f"search by meaning: {data['search_by_meaning']}",
            ]
        ),
    )


# -- upkeep ----------------------------------------------------------------------------------


@cli.command()
@json_option
@pass_settings
def maintenance(settings: Settings) -> None:
    """Compact the search index and pack the repository now.

    Saves never wait for this: each adds a small index segment, and git's loose objects are
    packed in the background every few commits. Run it to do both at once, for example before
    measuring the repository's size or after a long agent session.

    \b
    Example:
      slayer-kb maintenance
    """
    result = settings.kb().maintain()
    (seg_before, seg_after), (loose_before, loose_after) = result.segments, result.loose_objects
    (packs_before, packs_after), (bytes_before, bytes_after) = result.packs, result.pack_bytes
    emit(settings, result.to_json(), lambda: "\n".join([
        f"index segments: {seg_before} -> {seg_after}",
        f"loose objects: {loose_before} -> {loose_after}",
        f"packs: {packs_before} -> {packs_after} ({bytes_before / 1e6:.1f} MB -> {bytes_after / 1e6:.1f} MB)",
    ]))


@cli.command()
@json_option
@pass_settings
def reindex(settings: Settings) -> None:
    """Rebuild the search index from the files (with a progress bar on a terminal).

    \b
    Example:
      slayer-kb reindex
    """
    kb = settings.kb()
    show = sys.stderr.isatty() and not settings.json
    if show:
        with click.progressbar(length=max(len(kb.index.ids()), 1), label="Indexing", file=sys.stderr) as bar:
            last = [0]

            def progress(done: int, _total: int) -> None:
                bar.update(done - last[0])
                last[0] = done

            report = kb.reindex(progress)
    else:
        report = kb.reindex()
    problems = [str(p) for p in report.problems]
    data = {"indexed": report.updated, "problems": problems}
    emit(settings, data, lambda: f"Indexed {report.updated} memories" + warning_lines(problems))


def main() -> None:
    cli(prog_name="slayer-kb")


if __name__ == "__main__":
    main()


@cli.command()
@json_option
@pass_settings
def watch(settings: Settings) -> None:
    """Keep the search index current while files change (Ctrl-C stops).

    This is the KB's server (docs/server.md) in the foreground: while it runs, other
    'slayer-kb' commands are answered by it, from its warm index, with the same output.

    \b
    Example:
      slayer-kb watch
    """
    from .server import run

    root = settings.kb().root
    settings.kb().close()
    run(root, idle=None)


@cli.command()
@pass_settings
def mcp(settings: Settings) -> None:
    """Serve the memory tools over MCP on stdio (needs the 'mcp' extra).

    \b
    Example:
      slayer-kb --kb ./kb mcp
    """
    from .mcp_server import serve

    serve(settings.kb())


# Commands of the other areas register themselves on ``cli``.
from . import cli_catalog, cli_completion, cli_history, cli_server, cli_sessions  # noqa: E402,F401
