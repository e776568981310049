"""CLI commands for catalog cascades, ``prune``, and the checks ``validate`` and ``fmt``."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..api import checks
from ..core.errors import InvalidInputError
from ..core.outcomes import Report
from ..core.problems import command
from ..core.results import CascadeResult
from ..core.text import counted, one_line_shown, warning_lines
from .common import Settings, emit, force_option, json_option, kept_line, pass_settings


def _emit_cascade(settings: Settings, result: CascadeResult, what: str) -> None:
    emit(settings, result.to_json(), lambda: deleted_text(result, what, command(settings.kb().root)))


def deleted_text(result: CascadeResult, what: str, run: str) -> str:
    """A delete's reply; ``run``: ``slayer-kb`` as the user runs it (``problems.command``)."""
    head = f"Deleted {what} {result.deleted}"
    if result.commit:
        head += f" (commit {result.commit[:12]})"
    if not result.rewritten:
        return head + "; no memory referred to it." + broken_line(result.broken) + kept_line(result.kept)
    return (head + f"; stripped it from {counted(len(result.rewritten), 'memory', 'memories')}: " + ", ".join(result.rewritten)
            + stale_line(result.stale_queries, run) + broken_line(result.broken) + kept_line(result.kept))


def broken_line(places: list[str]) -> str:
    """The human output's lines naming the catalog definitions a delete left broken (empty when none)."""
    if not places:
        return ""
    return ("\nbroken catalog definitions (they still read what was deleted, so SLayer cannot run them, and "
            "validate reports them): " + "; ".join(places) + "; fix each, or add the column back")


def stale_line(ids: list[str], run: str) -> str:
    """The human output's line naming the example queries a delete left stale (empty when none)."""
    if not ids:
        return ""
    return (f"\nstale example queries (they still name what was deleted; search warns on them): "
            f"{', '.join(ids)}; rewrite each query with '{run} edit ID', or drop the memory "
            f"with '{run} forget ID'")


@click.command("delete-model")
@click.argument("model")
@click.option("--datasource", metavar="DS", help="The model's datasource (needed when several have it).")
@force_option
@json_option
@pass_settings
def delete_model(settings: Settings, model: str, datasource: str | None, force: bool) -> None:
    """Delete MODEL's file and strip it and its leaves from every memory (one commit).

    \b
    Examples:
      slayer-kb delete-model orders --datasource wh
      slayer-kb delete-model shop.refunds --json
    """
    _emit_cascade(settings, settings.kb().delete_model(model, datasource, force=force), "model")


@click.command("delete-datasource")
@click.argument("datasource", metavar="DS")
@force_option
@json_option
@pass_settings
def delete_datasource(settings: Settings, datasource: str, force: bool) -> None:
    """Delete datasource DS, its models and its priority entry; strip it from memories (one commit).

    \b
    Example:
      slayer-kb delete-datasource wh
    """
    _emit_cascade(settings, settings.kb().delete_datasource(datasource, force=force), "datasource")


@click.command("delete-leaf")
@click.argument("leaf", metavar="DS.MODEL.LEAF")
@force_option
@json_option
@pass_settings
def delete_leaf(settings: Settings, leaf: str, force: bool) -> None:
    """Delete a column, named measure or custom aggregation from its model file and strip it
    from every memory (one commit).

    \b
    Example:
      slayer-kb delete-leaf shop.orders.shipping_fee
    """
    _emit_cascade(settings, settings.kb().delete_leaf(leaf, force=force), "leaf")


@click.command()
@click.option("--dry-run", is_flag=True, help="Show what would be stripped, or the refusal the run would meet; change nothing.")
@force_option
@json_option
@pass_settings
def prune(settings: Settings, dry_run: bool, force: bool) -> None:
    """Strip references to entities and memories that no longer exist (one commit).

    Use it after the catalog changed outside slayer-kb: a model file deleted by hand, SLayer
    rewriting its models, a merge. Until then search simply ignores the dangling references.
    A link to a memory a commit renamed, or a fold merged into another ('memory: merge 201 into
    27'), still there under its new id, is pointed at that id, not stripped. While a catalog file does not parse, prune refuses: what it defines would
    look gone. So it does while a file HEAD holds is missing from the work tree, or a catalog
    edit is not committed; --dry-run then lists what it reads and warns that the list is
    unreliable, with the fix.

    \b
    Examples:
      slayer-kb prune --dry-run
      slayer-kb prune --json
    """
    result = settings.kb().prune(dry_run=dry_run, force=force)
    emit(settings, result.to_json(), lambda: pruned_text(result))


def pruned_text(result: CascadeResult) -> str:
    verb = "Would strip" if result.dry_run else "Stripped"
    lines = [f"{verb} from memory {mid}: {', '.join(gone)}" for mid, gone in result.stripped.items()]
    point = "Would point" if result.dry_run else "Pointed"
    lines += [f"{point} in memory {mid}: {', '.join(f'{old} at {new} (renamed)' for old, new in links.items())}"
              for mid, links in result.relinked.items()]
    if not result.stripped and not result.relinked:
        lines.append("Nothing to prune: every reference resolves.")
    if result.commit:
        lines.append(f"(commit {result.commit[:12]})")
    return "\n".join(lines) + kept_line(result.kept, result.dry_run) + warning_lines(result.warnings)


def _paths(settings: Settings, paths: tuple[str, ...]) -> list[Path]:
    for number, path in enumerate(paths, 1):
        if not path:  # Path('') is the working folder: the whole KB, unasked
            raise InvalidInputError(
                f"PATH #{number} is empty (an unset shell variable?): give a memory or session file or a knowledge "
                "base's folder, or no PATH for the whole knowledge base.")
    if paths:
        return [Path(p) for p in paths]
    kb = settings.kb()
    # git drops a folder once its last file goes (the last memory forgotten, a clone of a KB
    # that has none yet): the KB is then checked whole, not reported missing.
    return [kb.memories_dir if kb.memories_dir.is_dir() else kb.root]


def _finish(settings: Settings, report: Report, failed: bool, summary: str) -> None:
    warnings = [one_line_shown(f"{w.path}:{w.line}: warning: {w.message}") for w in report.warnings]
    emit(settings, report.to_json(failed), lambda: "\n".join([*map(str, report.problems), *warnings, summary]))
    if failed:
        sys.exit(1)


@click.command("validate")
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option("--against", metavar="REF",
              help="Check what this branch changed since REF (and the memories a changed model can reach) and "
                   "report auto ids it added that REF uses for another memory.")
@json_option
@pass_settings
def validate_cmd(settings: Settings, paths: tuple[str, ...], against: str | None) -> None:
    """Check memory and session files: schema, id and file name, case collisions, references,
    canonical form.

    PATH is a memory or session file, a memories/ or sessions/ folder or a KB (default: the
    whole KB). A catalog file
    stands for every memory of its KB. Prints 'path:line: message' lines; exits 1 on any problem.
    A warning (a memory's time more than a day in the future; with --against or a catalog file
    named, a query problem the same query has where the branch started) is printed as
    'path:line: warning: message' and fails nothing.

    \b
    Examples:
      slayer-kb --kb kb validate
      slayer-kb validate kb/memories/12.yaml
      slayer-kb --kb kb validate --against origin/main
    """
    # The KB the command opened for its default path (settings.kb() opens it once).
    report = checks.validate(_paths(settings, paths), against, None if paths else settings.kb())
    count = len(report.problems)
    checked = counted(report.checked, "file")
    warned = f", {counted(len(report.warnings), 'warning')}" if report.warnings else ""
    summary = (f"{counted(count, 'problem')} in {counted(len({p.path for p in report.problems}), 'file')} "
               f"({checked} checked){warned}" if count else f"Checked {checked}: no problems{warned}.")
    _finish(settings, report, bool(count), summary)


@click.command("fmt")
@click.argument("paths", nargs=-1, type=click.Path(), metavar="[PATH]...")
@click.option("--check", is_flag=True, help="Only report files that are not in canonical form (exit 1).")
@json_option
@pass_settings
def fmt_cmd(settings: Settings, paths: tuple[str, ...], check: bool) -> None:
    """Rewrite memory and session files into canonical form (key order, quoting, | blocks).

    Files are not committed: review the diff and commit it, as with any formatter.

    \b
    Examples:
      slayer-kb --kb kb fmt
      slayer-kb fmt --check kb/memories/*.yaml
    """
    # The KB the command opened for its default path (settings.kb() opens it once).
    report = checks.fmt(_paths(settings, paths), check, None if paths else settings.kb())
    lines = [f"{'would reformat' if check else 'reformatted'} {name}" for name in report.reformatted]
    summary = "\n".join([*lines, f"{len(report.reformatted)} of {report.checked} files "
                         f"{'need' if check else 'needed'} formatting"])
    _finish(settings, report, bool(report.problems) or (check and bool(report.reformatted)), summary)


@click.command("schema")
@click.option("--session", is_flag=True, help="The schema of session files (sessions/<id>.yaml) instead.")
@json_option  # accepted as by every command: the schema is one JSON document either way
@pass_settings
def schema_cmd(settings: Settings, session: bool) -> None:
    """Print the JSON Schema of memory files (for editors: yaml-language-server, VS Code).

    \b
    Examples:
      slayer-kb schema > .vscode/slayer-kb-memory.schema.json
      slayer-kb schema --session > .vscode/slayer-kb-session.schema.json
    """
    click.echo(checks.schema(session))
