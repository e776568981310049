"""CLI commands for editing, history, review, renumber/sync and SLayer/Engram interchange.

Argument parsing and output formatting only; the work is in ``kb.history``, ``kb.team`` and
``kb.interchange`` (api/).
"""

from __future__ import annotations

from typing import Any

import click

from ..core.errors import NotFoundError, UsageError
from ..core.locate import memory_link
from ..core.outcomes import ImportResult, MergeResult, RebaseResult, SyncResult
from ..core.problems import command, words
from ..core.results import LogEntry
from ..core.text import counted, shown_value, warning_line, warning_lines
from ..store.leaseheld import offline
from .common import Settings, emit, for_terminal, json_option, memory_text, pass_settings


def _ask_reopen(problem: str) -> bool:
    click.echo(for_terminal(problem), err=True)
    try:
        return click.confirm("Reopen the editor?", default=True, err=True)
    except click.Abort:  # no terminal and no answer on stdin: do not loop
        return False


@click.command()
@click.argument("memory_id", metavar="ID")
@json_option
@pass_settings
def edit(settings: Settings, memory_id: str) -> None:
    """Edit a memory in $VISUAL / $EDITOR; it is checked on close and committed when valid.

    On a problem (bad YAML, an unknown key, an entity that does not resolve) the problem is shown
    and the editor can be reopened; nothing is committed until the file is valid. Closing the
    editor without a change commits nothing; the file is checked all the same, so one broken by
    hand and closed as it was is still a problem. With neither variable set, vi, on a terminal
    only.

    \b
    Example:
      EDITOR=nano slayer-kb edit 12
    """
    result = settings.kb().history.edit(memory_id, _ask_reopen)

    def human() -> str:
        if not result.changed:
            return f"No change to memory {memory_id}; nothing committed."
        return f"Edited memory {memory_id} (commit {result.commit[:12] if result.commit else '-'})" + warning_lines(result.warnings)

    emit(settings, result.to_json(), human)


@click.command()
@click.argument("memory_id", metavar="ID")
@json_option
@pass_settings
def log(settings: Settings, memory_id: str) -> None:
    """Every commit that touched a memory, newest first, on every side of a merge (renames followed).

    A merge that kept one side's version of the file whole, where another side's differs (a
    conflict resolved with 'git checkout --theirs'), says which it kept and which it dropped.

    \b
    Example:
      slayer-kb log 12
    """
    kb = settings.kb()
    entries = kb.history.log(memory_id)
    notes = kb.history.moved_notes(memory_id)
    if settings.json:  # the document is the list of commits: the note goes beside it
        for line in notes:
            click.echo(for_terminal(warning_line(line)), err=True)
    run = command(kb.root)
    emit(settings, entries, lambda: "\n".join(
        f"{e['commit'][:12]} {e['date']} {e['author']}\n    {e['message'].splitlines()[0] if e['message'] else ''}"
        + _kept(e, memory_id, run) for e in entries
    ) + warning_lines(notes))


def _kept(entry: LogEntry, memory_id: str, run: str) -> str:
    """The line under a merge that kept one side's version of the memory whole."""
    if "kept" not in entry:
        return ""
    dropped = entry["dropped"]
    shows = " and ".join(f"'{run} show {words(memory_id, '--rev', sha[:12])}'" for sha in dropped)
    kept = f"deleted it, as {entry['kept'][:12]} did" if entry.get("deleted") else f"kept {entry['kept'][:12]}'s version whole"
    return f"\n    {kept}, dropping {', '.join(sha[:12] for sha in dropped)}'s (see {shows})"


@click.command()
@click.argument("memory_id", metavar="ID")
@click.option("--rev", metavar="REV", help="A commit, branch or tag (default: now, or the last version of a deleted memory).")
@json_option
@pass_settings
def show(settings: Settings, memory_id: str, rev: str | None) -> None:
    """Show a memory as it was at a revision (also a deleted one).

    A memory a merge folded into another (one topic key saved twice, or one save) is headed with
    the fold and the memory kept, which goes on, as get names them.

    \b
    Examples:
      slayer-kb show 12 --rev HEAD~3
      slayer-kb show 12 --json
    """
    shown = settings.kb().history.show(memory_id, rev)

    def human() -> str:
        head = ""
        if shown.folded:  # not "deleted": the memory goes on under the id kept, as get says
            head = f"({shown.folded[1]}; the last version)\n"
        elif shown.deleted_in:
            head = f"(deleted in {shown.deleted_in[:12]}; the last version)\n"
        elif shown.rev:
            head = f"(as of {shown.rev[:12]})\n"
        return head + memory_text({**shown.memory.to_dict(), "warnings": shown.warnings})

    emit(settings, shown.to_json(), human)


@click.command()
@click.argument("base", metavar="BASE")
@click.argument("head", metavar="[HEAD]", default="HEAD")
@json_option
@pass_settings
def review(settings: Settings, base: str, head: str) -> None:
    """Markdown summary of the memories HEAD added, changed, re-linked, renamed and removed.

    Compares HEAD with the commit where it left BASE, as 'git diff BASE...HEAD' does: what BASE
    changed since the branch split is not listed. Made to paste into a pull request (or post from
    CI): changed fields and a word diff of the text, catalog changes, and problems (files that do
    not parse, entities that do not resolve).

    \b
    Examples:
      slayer-kb review origin/main
      slayer-kb review main feature-branch --json
    """
    result = settings.kb().history.review(base, head)
    emit(settings, result.to_json(), lambda: result.markdown().rstrip("\n"))


@click.command("renumber")
@click.option("--onto", "onto", metavar="REF", help="The branch you will merge into, e.g. origin/main.")
@click.option("--rewrite", is_flag=True, help="Rewrite this branch's own commits instead of adding one (for a rebase; unpushed commits only).")
@click.option("--accept", "accept", metavar="ID", help="Let ID, which sync moved on this clone, mean the memory it names now (commands on it refuse until then).")
@json_option
@pass_settings
def renumber_cmd(settings: Settings, onto: str | None, rewrite: bool, accept: str | None) -> None:
    """Give this branch's new auto-id memories fresh ids when REF has used the same ids.

    The memory:ID references to them are rewritten too, in one commit; then 'git merge REF' keeps
    both sides' memories. With leased ids (a KB with a remote) ids never collide; this is for ids
    allocated before leases or with 'git config slayer-kb.ids sequential'.

    \b
    Examples:
      slayer-kb renumber --onto origin/main && git merge origin/main
      slayer-kb renumber --accept 27
    """
    if accept is not None:
        if onto is not None or rewrite:
            given = " and ".join(name for name, on in (("--onto", onto is not None), ("--rewrite", rewrite)) if on)
            raise UsageError(f"--accept takes no {given}: it renumbers nothing. Give --accept ID alone, or "
                             f"--onto REF{' --rewrite' if rewrite else ''} without --accept.")
        accepted = settings.kb().team.accept(accept)
        if accepted is None:
            raise NotFoundError(f"sync moved no memory with id {shown_value(accept)} on this clone; nothing to "
                                "accept. Give the id sync said it moved.")
        emit(settings, accepted.to_json(),
             lambda: f"'{accept}' now means the memory it names; the one saved here as {accept} is {accepted.moved_to}.")
        return
    if onto is None:
        raise UsageError("Give --onto REF (the branch you will merge into) or --accept ID.")
    result = settings.kb().team.renumber(onto, rewrite=rewrite)

    def human() -> str:
        if not result.mapping:
            return f"No id of this branch collides with {onto}; nothing to renumber."
        lines = [f"Renumbered {counted(len(result.mapping), 'memory', 'memories')} onto {onto}:"]
        lines += [f"  {old} -> {new}" for old, new in result.mapping.items()]
        if result.rewritten:
            lines.append("  references rewritten in: " + ", ".join(sorted(result.rewritten)))
        return "\n".join(lines)

    emit(settings, result.to_json(), human)


@click.command("sync")
@click.option("--remote", default=None,
              help="The git remote to pull from and push to (default: git config slayer-kb.remote, else the "
                   "branch's remote, else origin).")
@json_option
@pass_settings
def sync_cmd(settings: Settings, remote: str | None) -> None:
    """Pull (rebase), merge what git cannot, revalidate, reindex and push.

    Session files both sides wrote and topic-key memories both sides revised are merged; a topic
    key saved on both sides ends as one memory. Ids allocated before leases that collide are
    renumbered. A push refused because others pushed first is retried. On a conflict it cannot
    resolve (two edits of one memory), the repository is put back as it was and the error gives
    the steps to go on.

    \b
    Example:
      slayer-kb sync --remote origin
    """
    result = settings.kb().team.sync(remote)

    def human() -> str:
        text = f"Synced {result.branch} with {result.remote}: {result.action}, {result.pulled} pulled, {result.pushed} pushed"
        if result.pushed_by_merge:  # main's commits that a merge took in are pushed, but not new work
            text += f" ({result.pushed_by_merge} of them from another branch, taken in by a merge)"
        text += "."
        if result.resolved:
            text += "\n  merged both sides of: " + ", ".join(result.resolved)
        text += _followed(result.followed, f"{result.remote}/{result.branch}", command(settings.kb().root))
        text += _folded(result.merged, result.deduplicated)
        if result.unforgotten:
            text += ("\n  kept, its forget undone by a later upsert of its topic key or edit: "
                     + ", ".join(result.unforgotten))
        if result.dropped:
            text += (f"\n  forgotten on {result.remote} after this clone changed it, the change dropped "
                     "(git reflog holds it): " + ", ".join(result.dropped))
        if result.pushed_again:
            text += (f"\n  note: {result.remote}/{result.branch} was rewritten (a force push) without "
                     f"{result.pushed_again} commit(s) this clone held; they were pushed again "
                     "(to take a memory out, forget it)")
        if result.given_up:
            text += (f"\n  note: ids {', '.join(result.given_up)} are another clone's now ({result.remote} lost this "
                     "clone's lease of them, and another clone leased them); this clone draws no more ids from them")
        if result.renumbered:
            text += "\n  renumbered: " + ", ".join(f"{o} -> {n}" for o, n in result.renumbered.items())
            text += f" ({_renumbered_why(result)})"
        text += _sessions(result.session_projects, f"{result.remote}/{result.branch}")
        return (text + _stale(result.stale_queries, command(settings.kb().root)) + _unlinked(result.unlinked, result.cascaded, result.relinked, result.relinked_merged)
                + _untouched("pushed an example query the upstream already had", result.untouched_queries)
                + warning_lines(result.warnings))

    emit(settings, result.to_json(), human)


@click.command("rebase")
@click.argument("upstream", required=False, metavar="UPSTREAM")
@click.option("--continue", "action", flag_value="continue", help="Go on after resolving the conflict (git add / git rm).")
@click.option("--abort", "action", flag_value="abort", help="Stop the rebase and put the branch back as it was.")
@click.option("--rewrite-pushed", is_flag=True,
              help="Rewrite commits already pushed to the branch's remote branch (then git push --force-with-lease).")
@json_option
@pass_settings
def rebase_cmd(settings: Settings, upstream: str | None, action: str | None, rewrite_pushed: bool) -> None:
    """git rebase UPSTREAM, with the merge driver sync uses: the steps of a sync conflict.

    Session files and topic-key memories both sides wrote are merged as sync merges them (a plain
    'git rebase' would stop on them); a commit that became empty is dropped, and a topic key
    saved on both sides ends as one memory, the upstream's, as after a sync. On a true conflict
    (two edits of one memory, a forget against an edit) it stops, names the files and gives the
    next steps. Nothing is written to your git config. A branch whose commits are already on
    its remote branch is refused: 'slayer-kb merge UPSTREAM' takes UPSTREAM in and keeps them.

    \b
    Examples:
      slayer-kb rebase origin/main
      slayer-kb rebase --continue
      slayer-kb rebase --abort
    """
    if upstream is not None and action is not None:
        raise UsageError(f"Give UPSTREAM to start a rebase or --{action} for the one in progress, not both.")
    if action is not None and rewrite_pushed:
        raise UsageError(f"--rewrite-pushed is for starting a rebase (with UPSTREAM), not --{action}: drop it.")
    result = settings.kb().team.rebase(upstream, action, rewrite_pushed=rewrite_pushed)
    run = command(settings.kb().root)
    emit(settings, result.to_json(), lambda: (
        f"Rebased onto {result.onto}; run {result.push} to push." + _followed(result.followed, result.onto, run)
        + _folded(result.merged, result.deduplicated)
        + _unlinked(result.unlinked, result.cascaded, result.relinked, result.relinked_merged) + _sessions(result.session_projects, result.onto)
        + _checked(result, result.onto, run)
        if result.action == "rebased" else "Rebase aborted; the branch is back as it was."))


@click.command("merge")
@click.argument("ref", metavar="REF")
@json_option
@pass_settings
def merge_cmd(settings: Settings, ref: str) -> None:
    """git merge REF, with the merge driver sync uses: main into an agent's branch.

    Session files and topic-key memories both sides wrote are merged as sync merges them, and a
    memory both sides added alike (a pull request merged by squash or rebase, then edited) from
    that version: a plain 'git merge' stops on them. A topic key saved on both sides ends as one
    memory, REF's, as after a sync. On a true conflict (two edits of one memory,
    a forget against an edit) it stops, names the files and gives the next steps. Nothing is
    written to your git config.

    \b
    Example:
      git fetch origin && slayer-kb merge origin/main && slayer-kb sync
    """
    result = settings.kb().team.merge(ref)

    def human() -> str:
        if result.action == "up to date":
            return f"Already up to date with {ref}."
        text = f"{'Merged' if result.action == 'merged' else 'Fast-forwarded to'} {ref}; run {result.push} to push."
        return (text + _followed(result.followed, ref, command(settings.kb().root)) + _folded(result.folded, result.deduplicated) + _unlinked(result.unlinked, result.cascaded, result.relinked, result.relinked_merged)
                + _sessions(result.session_projects, ref) + _checked(result, ref, command(settings.kb().root))
                + warning_lines(result.warnings))

    emit(settings, result.to_json(), human)


def _renumbered_why(result: SyncResult) -> str:
    """Why a sync renumbered this clone's memories: the remote had used their ids for others, and,
    where the sync can tell, how both clones came to hand them out."""
    ids = list(result.renumbered)
    why = (f"{result.remote} had already used {ids[0]} for another memory" if len(ids) == 1
           else f"{result.remote} had already used these ids for other memories")
    spans = [span for span in result.given_up
             if any(int(span.split("-")[0]) <= int(i) <= int(span.split("-")[1]) for i in ids if i.isdigit())]
    if spans:
        return why + f": another clone leased ids {', '.join(spans)} too"
    if any(i.isdigit() and offline(int(i)) for i in ids):
        return why + ": another clone drew on the same offline block"
    return why


def _folded(merged: dict[str, str], deduplicated: dict[str, str]) -> str:
    """The lines saying which memories were folded into the other side's (one topic key, one save)."""
    return "".join(f"\n  merged ({why}): " + ", ".join(f"{o} into {n}" for o, n in moved.items())
                   for why, moved in (("same topic key", merged), ("same save", deduplicated)) if moved)


def _followed(followed: dict[str, dict[str, str]], ref: str, run: str) -> str:
    """The line of each memory one side had folded into another that the other side (``ref``, or
    this branch) forgot, edited or renamed since (carry.follow_folds): where its change went, and
    a forget's one command; an edit dropped (``folds.carry_dropped``) with the command showing it."""
    said = {"forgot": "forgot {old}, which {folded_on} had merged into {kept}; to forget {kept} too: {run} forget {kept}",
            "edited": "edited {old}, which {folded_on} had merged into {kept}: the edit went to {kept}",
            "renamed": "renamed {old} to {renamed}, which {folded_on} had merged into {kept}: its edits went to "
                       "{kept}, and links to {renamed} point at it",
            "dropped": "edited {old}, which {folded_on} had merged into {kept}, in a field {kept} holds another way: "
                       "the edit dropped; to see it: {edit}",
            # Folded again after it came back (folds._fold_again): no side to name, the fold is this sync's or merge's.
            "refolded": "{old}, brought back after it was merged into {kept}, merged into it again; its {fields}, which "
                        "{kept} held another way, taken over {kept}'s; to see {kept}'s: {edit}"}
    return "".join(f"\n  kept {f['kept']}: "
                   + ("" if f["change"] == "refolded" else f"{ref if f['folded_on'] == 'this branch' else 'this branch'} ")
                   + said[f["change"]].format(old=old, run=run, **f) for old, f in followed.items())


def _sessions(apart: dict[str, dict[str, str]], upstream: str) -> str:
    """The warning of each session file the two sides started for two projects (``upstream``: the
    other side's name), naming both projects, the one kept and the file."""
    text = ""
    for path, started in apart.items():
        other, where = (started["here"], "here") if started["kept"] == started["upstream"] else (
            started["upstream"], f"on {upstream}")
        text += "\n  " + warning_line(
            f"session '{started['session']}' was started for project '{started['upstream']}' on {upstream} and for "
            f"project '{started['here']}' here: it keeps '{started['kept']}' ({path}), and the prompts given {where} "
            f"say '{other}'; give a session for another project an id of its own")
    return text


def _stale(ids: list[str], run: str) -> str:
    """The note naming the memories whose example query the catalog no longer resolves."""
    return ("\n  note: stale example queries (they name what the catalog no longer has; search warns on them): "
            + ", ".join(ids) + f"; rewrite each with '{run} edit ID' or forget it") if ids else ""


def _untouched(what: str, problems: list[str]) -> str:
    """The warning of each invalid example query let through because the branch left it as the
    other side has it (revalidation.py): ``what`` is done with it, ``problems`` name each."""
    return "".join("\n  " + warning_line(f"{what}, which this branch did not change: {problem}") for problem in problems)


def _checked(result: MergeResult | RebaseResult, other: str, run: str) -> str:
    """What sync's revalidation would say of a branch merged with or rebased onto ``other``: the
    stale and untouched invalid queries it lets through, and the problems it refuses to push, to
    fix first."""
    text = _stale(result.stale_queries, run) + _untouched(
        f"sync will push an example query {other} already has", result.untouched_queries)
    if result.problems:
        text += ("\n  sync will refuse to push these until they are fixed:"
                 + "".join(f"\n    {problem}" for problem in result.problems))
    return text


def _unlinked(stripped: dict[str, list[str]], cascaded: dict[str, list[str]],
              relinked: dict[str, dict[str, str]], relinked_merged: dict[str, dict[str, str]]) -> str:
    """The lines saying which links to memories a side renamed, or folded into another, were
    rewritten, and which to memories the other side forgot, and to entities it deleted from the
    catalog, were stripped (unlinks.py)."""
    text = "".join(f"\n  rewrote links to {what} memories: " + ", ".join(
        f"{', '.join(f'{memory_link(old)} -> {memory_link(new)}' for old, new in moves.items())} in {memory_id}"
        for memory_id, moves in rewritten.items()) for what, rewritten in (("renamed", relinked), ("merged", relinked_merged))
        if rewritten)
    if stripped:
        text += "\n  stripped links to forgotten memories: " + ", ".join(
            f"{', '.join(memory_link(i) for i in ids)} from {memory_id}" for memory_id, ids in stripped.items())
    if cascaded:
        text += "\n  stripped entities deleted from the catalog: " + ", ".join(
            f"{', '.join(entities)} from {memory_id}" for memory_id, entities in cascaded.items())
    return text


def _import_text(result: ImportResult) -> str:
    return result.summary() + warning_lines(result.warnings)


@click.command("import-slayer")
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@json_option
@pass_settings
def import_slayer(settings: Settings, directory: str) -> None:
    """Import a SLayer storage folder's memories (memories/<id>.md) as one commit.

    Ids and created_at are kept, but a memory of the knowledge base's own under the id (another
    created_at: an agent's save) is never replaced: the folder's memory gets the next auto id,
    said in a warning, and its links follow. Entities that do not resolve are dropped with a warning; a title
    is taken as a save takes it (private spans redacted, trimmed), a line break in it made a space
    with a warning. A file it cannot take (not UTF-8, no front matter, an id no file may have, a
    title over 1,000 characters, a time no calendar has such as 2026-02-30) is skipped with a
    warning naming it. Files written with Windows line ends are read with Unix ones.

    Importing a folder again brings back no memory the knowledge base forgot since an earlier
    import and undoes no change made since: each is skipped with a warning naming the import's
    commit ('restore ID --rev COMMIT', then import again, takes the folder's version). A link
    (memory:ID) to a memory the import skipped is dropped with a warning.

    \b
    Example:
      slayer-kb import-slayer ~/.slayer
    """
    result = settings.kb().interchange.import_slayer(directory)
    emit(settings, result.to_json(), lambda: _import_text(result))


@click.command("export-slayer")
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite files no export wrote there (or changed since one did).")
@json_option
@pass_settings
def export_slayer(settings: Settings, directory: str, force: bool) -> None:
    """Write every live memory as DIRECTORY/memories/<id>.md (SLayer's format).

    DIRECTORY may not be the knowledge base's own folder (nor inside its memories/, sessions/,
    datasources/, models/ or .slayer-kb/), nor in a repository's .git folder, and neither may
    DIRECTORY/memories lead there through a link. Each export records
    the files it wrote (memories/.slayer-kb-export.json): the next one replaces only those, and
    removes those of memories no longer live, as written; another file of the same name (SLayer's
    own memory, an edit made there) is refused, nothing written, unless --force.

    \b
    Example:
      slayer-kb export-slayer ./slayer-storage
    """
    result = settings.kb().interchange.export_slayer(directory, force)
    data: dict[str, Any] = result.to_json()

    def text() -> str:
        removed = f"; removed {len(result.removed)} of memories no longer live" if result.removed else ""
        overwritten = f"; overwrote {counted(len(result.overwritten), 'file')} no export wrote" if result.overwritten else ""
        written = counted(len(result.written), "memory", "memories")
        return f"Wrote {written} to {directory}/memories{removed}{overwritten}" + warning_lines(result.problems)

    emit(settings, data, text)


@click.command("import-engram")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@json_option
@pass_settings
def import_engram(settings: Settings, file: str) -> None:
    """Import Engram's JSON export (observations) as one commit, skipping exact duplicates.

    An observation a save would refuse (a title over 1,000 characters, content over the size
    limit, a control character in its type, project or topic key) is skipped with a warning, as
    is a duplicate (naming the memory it repeats); a prompt over the size limit is cut, and a line
    break in a title made a space, saying so.

    An observation with a topic key revises the live memory holding the key in its project and
    scope, as mem_save does; one older than that memory is skipped. A session whose id differs
    from another's only in letter case (their files would collide on macOS and Windows) is
    skipped with its prompts, with a warning; an observation deleted in Engram since is said so.

    \b
    Example:
      engram export > engram.json && slayer-kb import-engram engram.json
    """
    result = settings.kb().interchange.import_engram(file)
    emit(settings, result.to_json(), lambda: _import_text(result))
