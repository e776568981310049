"""``search``, ``list`` and ``stats``: reading the knowledge base."""

from __future__ import annotations

import textwrap

import click

from ..core.errors import UsageError
from ..core.results import Hit
from ..core.text import one_line_shown, warning_lines
from .common import (
    ENTITY_HELP,
    ONLY_PROJECT_HELP,
    ONLY_SCOPE_HELP,
    ONLY_TYPE_HELP,
    SCOPE_CHOICE,
    Settings,
    emit,
    json_option,
    pass_settings,
    read_query,
    read_text_arg,
    stdin_once,
)


def _hits_text(title: str, hits: list[Hit], width: int) -> list[str]:
    if not hits:
        return []
    lines = [title]
    for hit in hits:
        # One line each, whatever a hand-edited file's title or project holds (one_line_shown).
        meta = one_line_shown(", ".join(x for x in (hit["type"], hit["project"]) if x))
        label = one_line_shown(hit["title"]) if hit["title"] else textwrap.shorten(
            hit["description"], width=width - 20, placeholder=" ...")
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


@click.command("search")
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
@click.option("--type", "type_", metavar="TYPE", help=ONLY_TYPE_HELP)
@click.option("--project", help=ONLY_PROJECT_HELP)
@click.option("--scope", type=SCOPE_CHOICE, help=ONLY_SCOPE_HELP)
@click.option(
    "--limit", "--max-results", "limit", type=click.IntRange(min=1), default=10, show_default=True,
    help="At most this many memories, and as many example queries and catalog entities.",
)
@click.option("--all", "all_words", is_flag=True, help="Only memories holding every word of QUESTION, ranked by their words and entity tags.")
@click.option("--any", "any_word", is_flag=True,
              help="Memories holding any word of QUESTION, fused with meaning and entities (the default).")
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
    catalog entities that match come back too. With no question, entity or query (filters
    aside) it lists the newest memories, unranked (score 0), with a warning saying so, as
    SLayer's search does; 'slayer-kb list' lists without the warning. A question is at most
    64 KB (65,536 bytes; a longer one is refused, never cut: ask with the words that matter);
    one over about 4 KB (1,024 word pieces) is matched by meaning through the static vectors,
    every word of it, not the sentence model, and a note in --json says so.

    \b
    Examples:
      slayer-kb search "how are refunds counted"
      slayer-kb search -e shop.orders.amount
      slayer-kb search decision/paid-revenue
    """
    if all_words and any_word:
        raise UsageError("--all and --any cannot be used together; give one (--any is the default).")
    stdin_once("QUESTION", question, query)
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


@click.command("list")
@click.option("--type", "type_", metavar="TYPE", help=ONLY_TYPE_HELP)
@click.option("--project", help=ONLY_PROJECT_HELP)
@click.option("--scope", type=SCOPE_CHOICE, help=ONLY_SCOPE_HELP)
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Memories to list.")
@json_option
@pass_settings
def list_cmd(
    settings: Settings, type_: str | None, project: str | None, scope: str | None, limit: int
) -> None:
    """List memories, newest first.

    Memories created at the same time (a save's times are whole seconds) come by id, as context
    and timeline order them: a named id, then the higher auto id first.

    \b
    Example:
      slayer-kb list --type decision --limit 5
    """
    kb = settings.kb()
    hits = kb.newest(type=type_, project=project, scope=scope, limit=limit)
    warnings = kb.skipped() + ([] if hits else kb.unmatched(type=type_, project=project, scope=scope))
    emit(
        settings,
        settings.room_for_told({"memories": hits, **({"warnings": warnings} if warnings else {})}),
        lambda: ("\n".join(_hits_text("Memories:", hits, settings.width())) or "No memories.") + warning_lines(warnings),
    )


@click.command()
@json_option
@pass_settings
def stats(settings: Settings) -> None:
    """Counts of memories, sessions, projects, types and untyped memories, and whether search by meaning is on.

    \b
    Example:
      slayer-kb stats --json
    """
    data = settings.kb().stats()
    emit(
        settings,
        settings.room_for_told({**data}),
        lambda: "\n".join(
            [
                f"memories: {data['memories']}",
                f"sessions: {data['sessions']}",
                f"projects: {', '.join(map(one_line_shown, data['projects'])) or '-'}",
                "types: " + (", ".join(f"{one_line_shown(k)} {v}" for k, v in data["types"].items()) or "-"),
                f"untyped: {data['untyped']}",
                f"search by meaning: {data['search_by_meaning']}",
            ]
        ) + warning_lines(data.get("warnings", [])),
    )
