"""Commands on one memory: ``init``, ``save``, ``get``, ``update``, ``forget``, ``restore``, and
Engram's ``suggest-topic-key``, ``timeline``, ``context`` and ``session-summary``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from ..core import engram
from ..core.errors import UsageError
from ..core.ids import check_id
from ..core.inputs import checked_learning
from ..core.locate import memory_link
from ..core.problems import command, shell_word, words
from ..core.text import one_line_shown, warning_lines
from .common import (
    ENTITY_HELP,
    ONLY_PROJECT_HELP,
    ONLY_SCOPE_HELP,
    PROJECT_HELP,
    SCOPE_CHOICE,
    SCOPE_HELP,
    Settings,
    check_entity_options,
    emit,
    force_option,
    json_option,
    kept_line,
    memory_text,
    pass_settings,
    read_query,
    read_text_arg,
    stdin_once,
)
from .plain import no_stdin_for

if TYPE_CHECKING:
    from ..core.outcomes import RestoreResult  # results built by the commands that return them only
    from ..core.results import ForgetResult, RenameResult


@click.command()
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--example", is_flag=True, help="Start from the shipped example KB (an online shop's catalog and memories).")
@json_option
@pass_settings
def init(settings: Settings, directory: str, example: bool) -> None:
    """Create a knowledge base in DIRECTORY (and a git repository when it is in none).

    DIRECTORY may not be in a repository's .git folder, nor inside another knowledge base
    (its memories/, its catalog's models/, any folder of it), nor at a path in its repository that is not
    UTF-8 (git is given the KB's paths as UTF-8). A knowledge base is a folder with a commit holding
    memories/ and .slayer-kb/ in a committed .gitignore, or a .slayer-kb/ folder a command made; a
    folder merely holding memories/ (a project's notes) is none. As with `git init`, a DIRECTORY
    that is a knowledge base already is no error: init commits what it lacks, or says there was nothing to do (--json:
    "created" is false). Init's commit holds nothing you have not committed: a .gitignore of
    yours that is not committed as it stands (untracked, staged, edited or deleted) is refused,
    with the fix; a symlinked one is never replaced.

    \b
    Examples:
      slayer-kb init ./team-kb
      slayer-kb init ./demo --example
    """
    from ..kb import KnowledgeBase  # here: the other commands' usage errors and help start without it

    kb = KnowledgeBase.init(directory, author=settings.author, example=example)
    emit(settings, {"kb": str(kb.root), "created": kb.created},
         f"Initialised knowledge base in {kb.root}" if kb.created else f"{kb.root} is already a knowledge base: nothing to do.")


@click.command()
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
    help="A stable id (omit for the next auto id). An existing id is replaced whole (with what it holds "
         "already: no commit); with --title too, a titled note, SLayer's way (no de-duplication).",
)
@click.option("--reuse-id", is_flag=True,
              help="Give --id to a new memory even though a rename moved that id to another memory.")
@click.option("--description", help="A one-line summary, at most 500 characters.")
@click.option(
    "--title",
    help="A short title: makes this an Engram-style observation (de-duplication, a default type and session); "
         "with --id or --query, the note's or example query's title.",
)
@click.option("--content", help="Same as LEARNING (Engram's name for it); give one of the two.")
@click.option(
    "--type",
    "type_",
    metavar="TYPE",
    help="Observation type: " + ", ".join(engram.RECOGNISED_TYPES) + " (default manual).",
)
@click.option("--project", help=PROJECT_HELP)
@click.option("--scope", type=SCOPE_CHOICE, help=SCOPE_HELP)
@click.option("--topic-key", help="Upsert key, e.g. architecture/auth-model (see suggest-topic-key): the live memory "
              "with this key, project and scope is revised in place, with or without --title.")
@click.option("--session", "session_id",
              help="Session id (an observation's default: manual-save-PROJECT); its session file is made with the save.")
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
    reuse_id: bool,
) -> None:
    """Save a memory: LEARNING (or - for stdin) linked to entities or a query.

    \b
    Examples:
      slayer-kb save "orders.is_returned is 0, 1 or NULL; NULL means not returned" -e orders.is_returned
      slayer-kb save "Paid revenue" --id kb.paid-revenue \\
        --query '{"source_model": "orders", "measures": ["amount:sum"]}'
      echo "JWT over sessions" | slayer-kb save - --title "Auth decision" --type decision --project api
    """
    if learning is not None and content is not None:
        raise UsageError(
            "The text was given twice, as LEARNING and with --content: give it once (they are one field)."
        )
    name, given = ("LEARNING", learning) if learning is not None else ("--content", content)
    stdin_once(name, given, query)
    no_stdin_for(title=title, description=description, topic_key=topic_key, project=project, session=session_id)
    text = read_text_arg(given)
    if text is None:
        raise UsageError(
            "Give the learning as an argument, with --content, or '-' to read it from stdin."
        )
    if reuse_id and memory_id is None:
        raise UsageError("--reuse-id gives the id of --id to a new memory: give --id too (or drop "
                         "--reuse-id for the next auto id).")
    # Checked before a `--query -` is read from stdin, which a usage error leaves unread.
    settings.opened()
    checked_learning(text, settings.max_content())  # an empty learning is told first, whatever else is missing
    check_entity_options(entities)
    parsed = read_query(query)
    kb = settings.kb()
    if title is not None and memory_id is None and parsed is None:
        # An observation, Engram's way: its id is the next auto id or its topic key's memory.
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
        if parsed is None and not entities and title is not None:
            check_id(str(memory_id))  # a bad id hears the id rules first
            raise UsageError(
                f"--id with --title saves a titled note under '{memory_id}' SLayer's way, which links entities: "
                "give -e REF (e.g. -e orders.amount) or a --query; or drop --id to save an observation, whose id "
                "is chosen for it (the next auto id, or the memory its --topic-key revises)."
            )
        if parsed is None and not entities:
            raise UsageError(
                "Nothing to link: give entity references with -e REF (e.g. -e orders.amount) or a "
                "--query, or save an observation with --title."
            )
        linked: Any = parsed if parsed is not None else list(entities)
        if parsed is not None and entities:
            raise UsageError(
                "Give either -e references or --query, not both (the query's entities are linked)."
            )
        # A note or an example query, SLayer's way (an --id replaced whole), with Engram's fields.
        extra = {
            "type": type_,
            "project": project,
            "scope": scope,
            "topic_key": topic_key,
            "session_id": session_id,
            **({"title": title} if title is not None else {}),
        }
        result = kb.save_memory(text, linked, id=memory_id, description=description, reuse_id=reuse_id, **extra)
    emit(settings, result.to_json(), lambda: save_text(result))


def save_text(result: Any) -> str:
    if result.title is not None:
        head = result.message
        if result.action == "replaced" and result.commit is None:  # a titled note saved again by --id
            head += f"\n(replaced: memory {result.memory_id}; it already held this, nothing to commit)"
        elif result.action != "created":
            head += f"\n({result.action}: memory {result.memory_id})"
        else:
            head += f"\n(memory {result.memory_id})"
    else:
        head = f"Saved memory {result.memory_id} ({result.action})"
        if result.action == "replaced" and result.commit is None:
            head += ": it already held this; nothing to commit"
        if result.resolved_entities:
            head += "\n  entities: " + ", ".join(result.resolved_entities)
    return head + warning_lines(result.warnings)


@click.command()
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
    data = settings.room_for_told(settings.kb().get(memory_id, include_deleted=deleted).to_dict())
    emit(settings, data, lambda: memory_text(data))


@click.command()
@click.argument("memory_id", metavar="ID")
@click.option("--title", help="A new title ('' clears it).")
@click.option("--learning", "--content", "learning", help="New text (or - for stdin).")
@click.option("--type", "type_", metavar="TYPE", help="A new observation type (decision, bugfix, ...; '' clears it).")
@click.option("--description", help="A new one-line summary, at most 500 characters ('' clears it).")
@click.option("--project", help="A new project (trimmed, lower-cased; '' clears it).")
@click.option("--scope", type=SCOPE_CHOICE, help=SCOPE_HELP)
@click.option("--topic-key", help="A new upsert key, e.g. architecture/auth-model ('' clears it).")
@click.option("-e", "--entity", "entities", multiple=True, help="Replace the entities with these references (not an example query's: they are its query's).")
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
    """Change some fields of a memory (at least one). Values it holds already make no commit.

    \b
    Example:
      slayer-kb update 12 --title "Refunds are negative rows" -e shop.refunds.amount
    """
    check_entity_options(entities, f"; to unlink every entity, delete them with '{command(settings.opened())} edit "
                                   f"{words(memory_id)}'")
    no_stdin_for(title=title, description=description, topic_key=topic_key, project=project)
    result = settings.kb().update(
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
    data = result.to_json()
    emit(settings, data, lambda: updated_text(memory_id, data))


def updated_text(memory_id: str, data: dict[str, Any]) -> str:
    said = (f"Memory {memory_id} already holds these values; nothing to commit." if data.get("action") == "unchanged"
            else f"Updated memory {memory_id}")
    return said + warning_lines(data.get("warnings", [])) + kept_line(data.get("kept", []))


@click.command()
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
    kb = settings.kb()
    result = kb.forget(memory_id, soft=soft, force=force)
    emit(settings, result.to_json(), lambda: forgot_text(result, command(kb.root)))


@click.command()
@click.argument("old", metavar="OLD")
@click.argument("new", metavar="NEW")
@force_option
@click.option("--reuse-id", is_flag=True, help="Give NEW even though a rename moved that id to another memory.")
@json_option
@pass_settings
def rename(settings: Settings, old: str, new: str, force: bool, reuse_id: bool) -> None:
    """Give memory OLD the id NEW and rewrite every memory:OLD link to memory:NEW (one commit).

    The file moves to memories/NEW.yaml (git sees a rename). NEW is a name, not a number (auto
    ids are allocated), and no other id may differ from it only in letter case.

    \b
    Example:
      slayer-kb rename kb.paid-revenue kb.revenue.paid
    """
    result = settings.kb().rename(old, new, force=force, reuse_id=reuse_id)
    emit(settings, result.to_json(), lambda: renamed_text(result))


def renamed_text(result: RenameResult) -> str:
    text = f"Renamed memory {result.old_id} to {result.new_id}"
    if result.rewritten:
        text += f"\n  rewrote {memory_link(result.old_id)} to {memory_link(result.new_id)} in " + ", ".join(result.rewritten)
    return text + kept_line(result.kept) + warning_lines(result.warnings)


def restored_text(result: RestoreResult, typed: str | None = None) -> str:
    """``restore --rev``'s reply; ``typed``: the revision as the user gave it, when known."""
    if result.action == "unchanged":
        at = f"{typed} ({result.rev[:12]})" if typed else result.rev[:12]
        return f"Memory {result.memory_id} is already as it was at {at}; nothing to commit." + warning_lines(result.warnings)
    return f"Restored memory {result.memory_id} as of {result.rev[:12]}" + warning_lines(result.warnings)


def forgot_text(result: ForgetResult, run: str) -> str:
    """``forget``'s reply; ``run``: ``slayer-kb`` as the user runs it (``problems.command``)."""
    text = f"Forgot memory {result.deleted_id}"
    if result.soft:
        text += f" (soft; restore with '{run} restore {shell_word(result.deleted_id)}')"
    if result.stripped_from:
        text += f"\n  stripped {memory_link(result.deleted_id)} from " + ", ".join(result.stripped_from)
    return text + kept_line(result.kept) + warning_lines(result.warnings)


@click.command()
@click.argument("memory_id", metavar="ID")
@click.option("--rev", metavar="REV", help="Bring back the version at this commit, branch or tag (also of a deleted memory).")
@json_option
@pass_settings
def restore(settings: Settings, memory_id: str, rev: str | None) -> None:
    """Bring back a soft-deleted memory, or with --rev the version at REV, as a new commit.

    For a memory forgotten for good (forget without --soft), the error names the commit that
    removed it and the --rev that brings back its last version.

    \b
    Examples:
      slayer-kb restore 12
      slayer-kb restore 12 --rev HEAD~3
    """
    if rev is not None:
        result = settings.kb().history.restore(memory_id, rev)
        emit(settings, result.to_json(), lambda: restored_text(result, rev))
        return
    restored = settings.kb().restore(memory_id)
    emit(settings, restored.to_json(), f"Restored memory {memory_id}" + warning_lines(restored.warnings))


@click.command("suggest-topic-key")
@click.option("--type", "type_", metavar="TYPE", help="The observation type; it names the key's family.")
@click.option("--title", help="The observation's title; its words make the key.")
@click.option("--content", help="The text, used when there is no title.")
@json_option
@pass_settings
def suggest_topic_key(settings: Settings, type_: str | None, title: str | None, content: str | None) -> None:
    """Suggest a stable topic key (family/segment) for topic-key upserts.

    \b
    Example:
      slayer-kb suggest-topic-key --type architecture --title "Auth model"
    """
    from ..kb import KnowledgeBase

    if title is None and content is None:
        raise UsageError("suggest-topic-key derives the key from a title or content: give --title (preferred) "
                         "or --content.")
    key = KnowledgeBase.suggest_topic_key(type_, title, content)
    emit(settings, {"topic_key": key}, key)


@click.command()
@click.argument("memory_id", metavar="[ID]", required=False)
@click.option("--before", type=click.IntRange(min=0), default=5, show_default=True,
              help="Memories saved before ID to show (not with --session).")
@click.option("--after", type=click.IntRange(min=0), default=5, show_default=True,
              help="Memories saved after ID to show (not with --session).")
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
        raise UsageError("timeline takes a memory ID or --session SESSION, one of the two.")
    if session_id is not None:
        from .sessions import session_timeline_text

        ctx = click.get_current_context()
        counts = [f"--{name}" for name in ("before", "after")
                  if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT]
        if counts:
            raise UsageError(
                f"{' and '.join(counts)} {'count' if len(counts) > 1 else 'counts'} the memories around an ID; "
                "--session shows the whole session. "
                f"Drop {' and '.join(counts)}, or give an ID instead of --session."
            )

        whole = settings.kb().session_timeline(session_id)
        emit(settings, whole, lambda: session_timeline_text(whole))
        return
    assert memory_id is not None
    data = settings.kb().timeline(memory_id, before, after)

    def human() -> str:
        rows = [*data["before"], data["focus"], *data["after"]]
        return "\n".join(
            f"{'>' if r['id'] == memory_id else ' '} {r['created_at']} [{r['id']}] "
            f"{one_line_shown(r['title'] or r['description'])}"
            for r in rows
        ) + warning_lines(data["warnings"])

    emit(settings, data, human)


@click.command()
@click.option("--project", help=ONLY_PROJECT_HELP)
@click.option("--scope", type=SCOPE_CHOICE, help=ONLY_SCOPE_HELP)
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Memories to list.")
@json_option
@pass_settings
def context(settings: Settings, project: str | None, scope: str | None, limit: int) -> None:
    """A compact markdown digest of recent sessions, prompts and memories, for an agent's first turn.

    \b
    Example:
      slayer-kb context --project analytics
    """
    kb = settings.kb()
    text = kb.context(project, scope, limit=limit)
    # A digest empty for a filter no memory matches (a misspelt project) says so, as list does.
    warnings = kb.context_unmatched(text, project, scope, "run context")
    emit(settings, settings.room_for_told({"text": text, **({"warnings": warnings} if warnings else {})}),
         text.rstrip("\n") + warning_lines(warnings))


@click.command("session-summary")
@click.argument("content")
@click.option("--project", help=PROJECT_HELP)
@click.option("--session", "session_id", help="The session it ends (default manual-save-PROJECT).")
@json_option
@pass_settings
def session_summary(settings: Settings, content: str, project: str | None, session_id: str | None) -> None:
    """Save an end-of-session summary (type session_summary). CONTENT may be - for stdin.

    \b
    Example:
      slayer-kb session-summary "Fixed the refund double count" --project analytics
    """
    no_stdin_for(project=project, session=session_id)
    result = settings.kb().session_summary(read_text_arg(content) or "", project, session_id)
    emit(settings, result.to_json(), lambda: save_text(result))
