"""The merge driver ``sync`` gives git for the KB's files: counters and sessions merged as what
they are, not as lines of text.

git merges a file both sides changed line by line, and takes a line both sides changed alike
without a conflict. For a topic-key memory that loses revisions: two clones each revise it from
``revision_count: 5`` to ``6``, and the merge says 6 where 7 saves were made (a rebase replaying
several revisions meets this on every one after the first). So during ``sync``'s rebase git calls
this module for every memory and session file both sides changed (``python -I -m
slayer_kb.store.mergedriver BASE CURRENT OTHER PATH [CURRENT_LABEL OTHER_LABEL]``, git's
``%O %A %B %P`` and the names of the two sides, which a conflict's markers show):

- a session file: both versions merged (``core/merging.merge_sessions``);
- a memory both sides hold under one topic key: the newer content, both sides' revisions and
  duplicates counted (``core/merging.merge_topic_revisions``);
- a memory one side soft-forgot (``forget --soft``) while the other edited it: a conflict, each
  side's version between git's markers, even where git's line merge would take both (an edit
  that left ``updated_at`` as it was lies lines apart from ``deleted_at``): a person weighs a
  forget against an edit, whichever lines the two changed;
- anything else: ``git merge-file``, git's own line merge; a memory whose lines conflict though
  no field was changed two ways (two forgets each stripping its link from one memory) is then
  merged field by field (``core/merging.merge_edits``), and what still conflicts is left as git
  leaves it.

The result is written over CURRENT; the exit status is git's: 0 merged, else conflicts remain.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..core import merging
from ..core.children import python_child
from ..core.errors import ConflictError, KBError
from ..core.locate import MEMORIES_DIR, id_of_memory_file
from ..core.memory import Memory, dumps, loads, utc_time
from ..core.merging import Dated, merge_edits, merge_sessions, merge_topic_revisions
from ..core.session import SESSIONS_DIR, id_of_file
from ..core.session import dumps as dump_session
from ..core.session import loads as load_session
from .gitenv import LITERAL_PATHS

if TYPE_CHECKING:
    from .repo import GitStore

NAME = "slayer-kb"
# How a gitattributes line spells each value ``git check-attr`` reports for ``merge``.
# check-attr gives the value, not the line: an unset merge may come from '-merge' or a macro.
_SPELLED = {"set": "'merge'", "unset": "merge unset (by a line such as '-merge' or 'binary')",
            "unspecified": "'!merge'"}


def git_config(prefix: str, labels: tuple[str, str]) -> tuple[list[str], dict[str, str] | None, Path]:
    """The ``-c`` options that make git merge the KB's files (under ``prefix``, the KB's folder
    in the repository) with this driver, the environment to run git with, and the attributes file
    those options name (the caller removes it). ``labels`` name git's current and other side for
    the conflict markers, as the conflict's steps name them: a driver is given the files, not
    which side each is, and in a rebase the current one is the upstream, not your commit."""
    argv, env = python_child(__name__)
    # '%' would start one of git's placeholders in the driver's command line.
    names = " ".join(shlex.quote(label.replace("%", "")) for label in labels)
    command = " ".join(shlex.quote(part) for part in argv) + f" %O %A %B %P {names}"
    handle, name = tempfile.mkstemp(prefix="slayer-kb-attributes-")
    with open(handle, "w", encoding="utf-8") as attributes:
        for folder in (MEMORIES_DIR, SESSIONS_DIR):
            attributes.write(f"{_pattern(prefix + folder)} merge={NAME}\n")
    options = ["-c", f"core.attributesFile={name}", "-c", f"merge.{NAME}.name=slayer-kb's counters and sessions",
               "-c", f"merge.{NAME}.driver={command}"]
    return options, env, Path(name)


def require_driver(store: GitStore, options: list[str], written: Sequence[str] | None, tree: str | None = None) -> None:
    """Refuse, before git merges anything, when gitattributes of the repository's own (a tracked
    ``.gitattributes``, or ``.git/info/attributes``) give the KB's files a merge attribute: git
    ranks those above ``core.attributesFile``, so git would merge memories and sessions with that
    instead (``union`` writes a memory's keys twice). Ours never overrides the tree's: a cloned KB
    names no code this runs. ``tree``: the commit whose ``.gitattributes`` git will read (a
    rebase's upstream, which it checks out), read through an index of its own; else the work tree's.

    Asked of the files git can hand a merge driver, ``written``: the KB's files a commit of either
    side wrote since they parted (``snapshot.written_on_either``; None, where no such list is
    exact: every memory and session file of that index), after a made-up name in each folder,
    which a line for the whole folder matches: a line for some files only (``memories/1.yaml``)
    names no made-up one. One ``check-attr`` for them all."""
    folders = [f"{store.prefix}{folder}/" for folder in (MEMORIES_DIR, SESSIONS_DIR)]
    samples = [f"{folder}x.yaml" for folder in folders]
    roots = {folder.encode() for folder in folders}
    with tempfile.TemporaryDirectory(prefix="slayer-kb-attributes-") as scratch:
        env = {**LITERAL_PATHS, **({"GIT_INDEX_FILE": str(Path(scratch) / "index")} if tree is not None else {})}
        if tree is not None:
            store.git("read-tree", tree, env=env)
        files = (store.git("ls-files", "-z", "--", *folders, env=env).stdout if written is None
                 else b"\0".join(store.repo_path(path).encode("utf-8", "surrogateescape") for path in written))
        read = ["--cached"] if tree is not None else []
        # The files git_config's lines give the driver: <folder>/*.yaml, not a .gitkeep or below.
        paths = b"".join(path + b"\0" for path in [*map(str.encode, samples), *files.split(b"\0")]
                         if path.endswith(b".yaml") and path.rpartition(b"/")[0] + b"/" in roots)
        out = store.git(*options, "check-attr", "--stdin", "-z", *read, "merge", input=paths, env=env).stdout.split(b"\0")
    for at in range(0, len(out) - 2, 3):
        value = out[at + 2].decode("utf-8", "replace")
        if value != NAME:
            spelled = _SPELLED.get(value, f"'merge={value}'")
            path = out[at].decode("utf-8", "replace")
            named = f"{Path(path).parent.as_posix()}/*.yaml" if path in samples else path
            raise ConflictError(
                f"The repository's gitattributes give {named} {spelled}, which git ranks above slayer-kb's "
                f"merge driver, so git would not merge memories and sessions as records (union writes a memory's "
                f"keys twice); nothing was merged. Remove that line from .gitattributes and commit the change (or "
                f"from .git/info/attributes), then run the command again.")


def _pattern(folder: str) -> str:
    """The gitattributes pattern of the ``.yaml`` files right in ``folder`` (from the repository's
    top), and no others: the folder's wildcards escaped, the whole in git's C-style quotes.
    Unquoted, a space or tab in a folder's name ends the pattern (git has no escape for them there)
    and a newline its line; quoted, each byte outside printable ASCII is spelled in octal, so any
    name (not UTF-8 even) is one line."""
    glob = "/" + "".join("\\" + ch if ch in "*?[\\" else ch for ch in folder) + "/*.yaml"
    return '"' + "".join("\\" + chr(byte) if byte in b'"\\' else chr(byte) if 0x20 <= byte < 0x7F else f"\\{byte:03o}"
                         for byte in os.fsencode(glob)) + '"'


def merged(path: str, base: str, current: str, other: str, committed: tuple[Dated, Dated] | None = None) -> str | None:
    """The merge of a KB file's three versions, when this driver knows how (see the module doc);
    None for git's line merge. ``path`` ends with the KB-relative ``memories/ID.yaml`` or
    ``sessions/ID.yaml``; ``committed`` dates the current and the other side's commits of it (a
    topic-key memory edited by hand: ``merge_topic_revisions``)."""
    folder, name = Path(path).parent.name, Path(path).name
    try:
        if folder == SESSIONS_DIR and (session_id := id_of_file(name)) is not None:
            was = load_session(base, session_id) if base.strip() else None
            return dump_session(merge_sessions(was, load_session(current, session_id), load_session(other, session_id)))
        if (memory_id := id_of_memory_file(path)) is not None:
            mine, theirs = loads(current, memory_id), loads(other, memory_id)
            if mine.topic_key and mine.topic_key == theirs.topic_key:
                old = loads(base, memory_id) if base.strip() else None
                return dumps(merge_topic_revisions(old, mine, theirs, committed))
    except KBError:
        return None  # a version that does not parse: git's line merge shows the conflict
    return None


def merged_blob(store: GitStore, path: str, blobs: tuple[str, str, str]) -> str | None:
    """The merge of ``path``'s (base, ours, theirs) ``blobs``, written to git's objects: one side's
    when the other left the base as it was, else this driver's (a topic key; else field by field,
    as ``main`` falls back to when git's line merge stops); None where two edits meet."""
    base, ours, theirs = blobs
    if ours == base or theirs == base:
        return ours if theirs == base else theirs
    got = store.objects.read_many("blob", {base, ours, theirs})
    was, mine, other = (got[oid].decode("utf-8", "replace") for oid in (base, ours, theirs))
    result = merged(path, was, mine, other) or edits_merged(path, was, mine, other)
    return None if result is None else store.objects.write("blob", result.encode("utf-8"))


class Carried(NamedTuple):
    """What the other side's change of a folded memory makes of the memory kept (``carried``): its
    blob with the fields only that change made, and with every field it made (``kept`` and
    ``edited`` differ where both sides hold one field two ways); ``forgot`` where it soft-forgot
    the folded memory (the memory kept stays as it is, as after a forget of the file)."""
    kept: str
    edited: str
    forgot: bool


def carried(store: GitStore, path: str, blobs: tuple[str, str, str], upserts: bool = False) -> Carried | None:
    """``merging.carry_through_fold`` of the (base, kept, edit) ``blobs``: the folded memory's
    where the sides parted, the memory kept at ``path`` now, the folded memory on the other side
    now; ``upserts``: both last revised by a save under their topic key, so a field held two ways
    is the newer save's (``merging.carry_upsert_through_fold``). None where a version does not
    parse (git's stages, for a person)."""
    got = store.objects.read_many("blob", set(blobs))
    versions = _memories(path, *(got[oid].decode("utf-8", "replace") for oid in blobs))
    if versions is None:
        return None
    was, now, then = versions
    if was.deleted_at is None and then.deleted_at is not None:  # ``forget --soft``, MCP's ``mem_delete``
        return Carried(blobs[1], blobs[1], True)
    upsert = merging.carry_upsert_through_fold(was, now, then) if upserts else None
    kept, edited = (blobs[1] if memory == now else store.objects.write("blob", dumps(memory).encode("utf-8"))
                    for memory in ((upsert, upsert) if upsert is not None else merging.carry_through_fold(was, now, then)))
    return Carried(kept, edited, False)


def both_sides(store: GitStore, blobs: tuple[str, str], labels: tuple[str, str]) -> bytes:
    """Two blobs of one file as a conflict in git's markers, ``labels`` naming the sides."""
    got = store.objects.read_many("blob", set(blobs))
    ours, theirs = (got[oid].decode("utf-8", "replace") for oid in blobs)
    return _both_sides(ours, theirs, labels).encode("utf-8")


def changed_at(git: Callable[[list[str]], bytes], rev: str, path: str) -> str | None:
    """When the last commit of ``rev`` that changed ``path`` (repository-relative) was authored,
    as a memory's time; None when git cannot tell. ``git`` runs git with those arguments."""
    out = git(["log", "-1", "--format=%at", "--end-of-options", rev, "--", path]).strip()
    return utc_time(int(out)) if out.isdigit() else None


def _committed(path: str, labels: tuple[str, str]) -> tuple[Dated, Dated]:
    """The dates of the current and the other side's commits of ``path`` (``changed_at``), for
    git's run of this driver: the current side is HEAD; the other, in a rebase, the commit being
    picked (the last line of git's ``done`` list), in a merge the branch merged (its label)."""

    def git(args: list[str]) -> bytes:
        return subprocess.run(["git", "--literal-pathspecs", *args], capture_output=True, check=False).stdout

    def picked() -> str:
        top = git(["rev-parse", "--git-path", "rebase-merge/done"]).decode().strip()
        with contextlib.suppress(OSError, IndexError):
            return Path(top).read_text(encoding="utf-8").splitlines()[-1].split()[1]
        return labels[1]

    return (lambda: changed_at(git, "HEAD", path)), (lambda: changed_at(git, picked(), path))


def edits_merged(path: str, base: str, current: str, other: str) -> str | None:
    """The field-by-field merge of an ordinary memory's three versions whose lines conflict
    (``merge_edits``); None when two edits of it conflict, or a version does not parse."""
    versions = _memories(path, base, current, other) if base.strip() else None
    memory = merge_edits(*versions) if versions is not None else None
    return None if memory is None else dumps(memory)


def forgot_against_edit(path: str, base: str, current: str, other: str) -> bool:
    """Whether one side of a memory's three versions soft-forgot it while the other edited it
    (``merging.forgot_against_edit``); False for a version that does not parse."""
    versions = _memories(path, base, current, other) if base.strip() else None
    return versions is not None and merging.forgot_against_edit(*versions)


def _both_sides(current: str, other: str, labels: tuple[str, str]) -> str:
    """``current`` and ``other`` as a conflict: the lines they share around git's markers, which
    hold each side's lines between (``labels`` name the sides)."""
    # Every line ends with one: a last line without would run into the marker after it.
    mine, theirs = ([line + "\n" for line in text.removesuffix("\n").split("\n")] for text in (current, other))
    head = len(os.path.commonprefix([mine, theirs]))
    tail = len(os.path.commonprefix([mine[head:][::-1], theirs[head:][::-1]]))
    middle = [f"<<<<<<< {labels[0]}\n", *mine[head:len(mine) - tail], "=======\n", *theirs[head:len(theirs) - tail],
              f">>>>>>> {labels[1]}\n"]
    return "".join([*mine[:head], *middle, *mine[len(mine) - tail:]])


def forget_holds(path: str, base: str, kept: str, dated: tuple[Dated, Dated],
                 cascade: Callable[[frozenset[str]], bool]) -> bool | None:
    """Whether one side's forget (its file deleted) of the memory ``base`` holds against the other
    side's version ``kept``: it does when ``kept`` only soft-forgot it (both forgot it), else as
    ``merging.forget_holds`` weighs a cascade's strip (``cascade``) and a topic key's two actions;
    ``dated``: when the forget and ``kept`` were committed, asked only where the times decide.
    None when a person decides (another change without a topic key, a version that does not
    parse, a forget or an edit by hand git cannot date)."""
    versions = _memories(path, base, kept)
    if versions is None:
        return None
    was, now = versions
    return True if merging.soft_forgot(was, now) else merging.forget_holds(was, now, *dated, cascade)


def cascade_stripped(path: str, base: str, kept: str, cascade: Callable[[frozenset[str]], bool]) -> bool:
    """Whether ``kept`` is the memory ``base`` with no change but its side's forget cascade: only
    ``memory:`` links removed, to memories ``cascade`` says that side forgot (``merging.stripped``)."""
    versions = _memories(path, base, kept)
    return versions is not None and (removed := merging.stripped(*versions)) is not None and cascade(removed)


def soft_forgotten(path: str, base: str, text: str) -> bool:
    """Whether ``text`` is the memory ``base`` with only ``deleted_at`` set (``forget --soft``)."""
    versions = _memories(path, base, text)
    return versions is not None and merging.soft_forgot(*versions)


def revised(path: str, base: str, text: str) -> bool:
    """Whether ``text`` changes more of the memory ``base`` than its links and its forget
    (``merging.revised``); False for a version that does not parse."""
    versions = _memories(path, base, text)
    return versions is not None and merging.revised(*versions)


def _memories(path: str, *texts: str) -> list[Memory] | None:
    """``texts`` read as versions of the memory file ``path``; None when it is no memory's file or
    a version does not parse."""
    memory_id = id_of_memory_file(path)
    if memory_id is None:
        return None
    try:
        return [loads(text, memory_id) for text in texts]
    except KBError:
        return None


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    base_file, current_file, other_file, path = args[:4]
    current_label, other_label = args[4:6] if len(args) >= 6 else ("current", "other")
    base, current, other = (Path(f).read_text(encoding="utf-8", errors="replace")
                            for f in (base_file, current_file, other_file))
    texts = (base, current, other)
    result = merged(path, base, current, other, _committed(path, (current_label, other_label)))
    if result is None and forgot_against_edit(path, *texts):
        Path(current_file).write_text(_both_sides(current, other, (current_label, other_label)), encoding="utf-8")
        return 1
    if result is None:
        # git's line merge first: a clean one keeps the file as written (its layout, comments).
        code = subprocess.run(["git", "merge-file", "-L", current_label, "-L", "base", "-L", other_label,
                               current_file, base_file, other_file], check=False).returncode
        if code == 0 or (result := edits_merged(path, *texts)) is None:
            return code
    Path(current_file).write_text(result, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
