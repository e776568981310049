"""``sync``'s rebase in this process: this branch's commits replayed onto the upstream with git's
plumbing and the KB's merge driver called as a function.

``git rebase`` with the KB's merge driver (``mergedriver.py``) starts a Python process for every
file both sides changed (hundreds of ms each on a busy machine), checks the upstream out and
replays each commit in the work tree. Here each commit's changes (one ``git diff-tree --stdin``
for them all) are applied to the upstream's tree in git's object database (``objects.py``):

- a file the upstream left as the commit found it takes the commit's version;
- a file the upstream already changed the same way stays;
- a file the commit adds that the upstream added too, that very version, under a commit of its
  own, stays: merged again, a topic key's later revisions would count the add twice;
- a memory the commit adds that the upstream holds as one memory with it, the version the
  upstream held when this clone last fetched it (``revisions.rewritten_alike``: a pushed save
  amended, or a force push that replaced it), is an edit of that version: the side that changed
  it holds, two changes merge as the driver merges them (``mergedriver.merged_blob``: a topic
  key, else field by field) or go to ``git rebase``, which stops on them;
- a file both changed is merged by ``mergedriver.merged`` (the records it merges: session files
  and topic-key memories), exactly as git would have asked the driver to;
- a memory one side deleted (``forget``) and the other only soft-forgot goes: both forgot it;
  a topic-key memory one side deleted and the other changed (an upsert, an edit by hand): the
  later of the two holds, the forget and an edit by hand dated by their commits, only when
  the dates decide (``mergedriver.forget_holds``, one read of the two versions).

A commit that changes nothing any more is dropped, as ``git rebase`` drops it; one that changed
nothing to begin with (an empty commit made by hand) is kept, as ``git rebase`` keeps it. The new
commits keep their author, date and message; the committer is whoever runs the sync, now, as
with ``git rebase``. Anything else - a line merge, another file one side deleted and the other changed, a
merge commit, a mode other than a plain file - answers None, and ``git rebase`` does the whole
replay as before (its conflicts and messages unchanged). Where the repository signs its commits
(``commit.gpgSign``), each is made by ``git commit-tree``, which signs it (a commit it could not
make as it was, in another encoding, goes to ``git rebase``). Nothing here touches a ref, the index
or the work tree: the caller moves the branch to the tip it gets.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from ..core.locate import MEMORIES_DIR, id_of_path
from ..core.session import SESSIONS_DIR
from . import mergedriver
from .gitenv import LITERAL_PATHS
from .repo import GitStore
from .revisions import added_alike, forgot_at, rewritten_alike

_FILE = "100644"
_ABSENT = "000000"


@dataclass(frozen=True)
class _Change:
    path: str  # repository-relative
    old: str | None  # blob id in the commit's parent, None: no file
    new: str | None  # blob id in the commit, None: deleted


@dataclass(frozen=True)
class Replay:
    """What ``replay`` made: the tip (None: only ``git rebase`` can do it), and whether a commit of
    the branch deleted a memory file (None: not read, a merge commit or a root among them), for
    sync's look for a memory forgotten and brought back, which then needs no ``git log``."""

    tip: str | None
    deleted_memory: bool | None


def replay(store: GitStore, upstream: str, head: str, seen: str = "") -> Replay:
    """The tip of ``upstream..head`` replayed onto ``upstream`` (``upstream`` itself when every
    commit became empty), or a tip of None when only ``git rebase`` can do it (see the module
    doc); ``seen``: the upstream as this clone last fetched it."""
    rows = store.git("rev-list", "--reverse", "--parents", head, f"^{upstream}").stdout.decode().split("\n")
    commits = [row.split() for row in rows if row]
    if any(len(parents) != 1 for _commit, *parents in commits):
        return Replay(None, None)  # a merge commit (rebase flattens it) or a root: git's business
    if not commits:
        return Replay(upstream, False)
    changes = _changes(store, [commit for commit, *_ in commits])
    folder = store.repo_path(f"{MEMORIES_DIR}/")
    deleted = any(change.new is None and change.path.startswith(folder) for made in changes.values() for change in made)
    objects = store.objects
    raw = objects.read_many("commit", [commit for commit, *_ in commits])
    env, sign = store.identity.committing()
    if sign and not all(map(_signable, raw.values())):
        return Replay(None, deleted)
    committer = b"" if sign else store.git("var", "GIT_COMMITTER_IDENT", env=env).stdout.strip()
    tip, tree = upstream, objects.tree_of(upstream)
    for commit, _parent in commits:
        made = changes.get(commit, [])
        updates = _applied(store, tree, made, (head, upstream, seen), commit)
        if updates is None:
            return Replay(None, deleted)
        new_tree = objects.update_tree(tree, updates) if updates else tree
        if new_tree == tree and made:
            continue  # the upstream has this commit's change already: dropped, as git rebase does
        tip, tree = (_signed(store, raw[commit], new_tree, tip) if sign else
                     objects.write("commit", _recommitted(raw[commit], new_tree, tip, committer))), new_tree
    return Replay(tip, deleted)


@dataclass(frozen=True)
class Forgets:
    """How the forgets ``replay`` weighed against a change ended, by memory id."""

    unforgotten: list[str]  # one side forgot it, the tip holds it: a later change held (``_forget_holds``)
    dropped: list[str]  # this branch changed it, the upstream forgot it later: the change is in no commit now


def forgets(store: GitStore, paths: list[str], revs: tuple[str, str, str, str]) -> Forgets:
    """Of ``paths`` (repository-relative: the files both sides changed), the memories a forget
    against a change left kept or gone in the replay; ``revs``: where the sides parted, the
    upstream, this branch, and its replay onto the upstream. Sync names both: a dropped change
    left the branch with the commit that made it (which git's reflog still holds)."""
    objects = store.objects
    parted, upstream, ours, tip = (objects.blobs_at(objects.tree_of(rev), paths) for rev in revs)
    memories = [path for path in paths if path[len(store.prefix):].startswith(f"{MEMORIES_DIR}/")]
    gone = [p for p in memories if tip[p] is None and upstream[p] is None and parted[p] and ours[p]]
    texts = objects.read_many("blob", {oid for p in gone for oid in (parted[p], ours[p]) if oid})

    def revised(path: str) -> bool:  # not a soft forget or a strip of links, which the forget takes along
        return mergedriver.revised(path, *(texts[oid].decode("utf-8", "replace")
                                           for oid in (parted[path], ours[path]) if oid))

    def ids(paths: list[str]) -> list[str]:
        return [id_of_path(path[len(store.prefix):]) or path for path in paths]

    return Forgets(
        unforgotten=ids([p for p in memories if tip[p] is not None and None in (upstream[p], ours[p])]),
        dropped=ids([p for p in gone if revised(p)]))


def _changes(store: GitStore, commits: list[str]) -> dict[str, list[_Change]]:
    """Each commit's changes against its parent, from one ``git diff-tree --stdin``; a change of
    anything but a plain file is recorded with both ids None (``_applied`` gives up on it)."""
    out = store.git("diff-tree", "--stdin", "-r", "-z", "--no-renames",
                    input="".join(c + "\n" for c in commits).encode()).stdout
    tokens = out.decode("utf-8", "surrogateescape").split("\0")
    found: dict[str, list[_Change]] = {}
    current: list[_Change] = []
    at = 0
    while at < len(tokens):
        token = tokens[at]
        if token.startswith(":"):
            old_mode, new_mode, old, new, _status = token[1:].split(" ")
            plain = {old_mode, new_mode} <= {_FILE, _ABSENT}
            current.append(_Change(tokens[at + 1], _blob(old, old_mode) if plain else "?",
                                   _blob(new, new_mode) if plain else "?"))
            at += 2
            continue
        if token:
            current = found.setdefault(token, [])
        at += 1
    return found


def _blob(oid: str, mode: str) -> str | None:
    return None if mode == _ABSENT else oid


def _applied(store: GitStore, tree: str, changes: list[_Change], sides: tuple[str, str, str],
             commit: str) -> dict[str, str | None] | None:
    """The blob each changed path takes in ``tree`` once ``commit``'s changes are applied; None
    when a path needs more than the KB's merge driver. ``sides``: (this branch's tip, the upstream,
    the upstream as this clone last fetched it)."""
    objects = store.objects
    now = objects.blobs_at(tree, [c.path for c in changes])
    updates: dict[str, str | None] = {}
    for change in changes:
        current = now[change.path]
        if "?" in (change.old, change.new):
            return None
        if current == change.old:
            updates[change.path] = change.new
        elif current == change.new:
            continue
        elif change.old is None and current is not None and added_alike(store, change.path, *sides[:2]) == change.new:
            # The upstream added this very file too, under a commit of its own (a copied clone's
            # save pushed by the original, a squash merge), and changed it since: that change
            # already counts the add, which merged again would count twice (a topic key's
            # revisions).
            continue
        elif change.old is None and current is not None and change.new is not None and (
                was := rewritten_alike(store, [change.path], sides[2], *sides[:2]).get(change.path)):
            # A save whose commit a side rewrote (amended, force-pushed): an edit of the version
            # this clone last fetched, not a second memory at its id.
            edited = mergedriver.merged_blob(store, change.path, (was, current, change.new))
            if edited is None:
                return None
            updates[change.path] = edited
        elif (current is None or change.new is None) and (
                holds := _forget_holds(store, change, current, (sides[1], commit))) is not None:
            # One side forgot it, the other only soft-forgot it (it goes), or upserted its topic
            # key: the later of the two holds.
            if holds and current is not None:
                updates[change.path] = None
            elif not holds and current is None:
                updates[change.path] = change.new
        elif current is None or change.new is None or not _driven(store, change.path):
            return None  # deleted on one side and changed on the other, or git's line merge
        else:
            merged = _merged(store, change, current, (sides[1], commit))
            if merged is None:
                return None
            updates[change.path] = objects.write("blob", merged.encode("utf-8"))
    return updates


def _forget_holds(store: GitStore, change: _Change, current: str | None, commits: tuple[str, str]) -> bool | None:
    """For a memory one side deleted (``forget``) and the other changed: whether the forget holds
    (``mergedriver.forget_holds``: the other side only soft-forgot it, or a topic key's later
    action), None for a person to decide. ``commits``: (the upstream, the commit replayed), one
    of which made the forget."""
    kept = current if change.new is None else change.new
    if change.old is None or kept is None or not _driven(store, change.path):
        return None
    texts = store.objects.read_many("blob", {change.old, kept})
    forgot_in, kept_in = (commits[1], commits[0]) if change.new is None else commits
    return mergedriver.forget_holds(change.path, texts[change.old].decode("utf-8", "replace"),
                                    texts[kept].decode("utf-8", "replace"),
                                    (lambda: mergedriver.changed_at(_git(store), forgot_in, change.path),
                                     lambda: mergedriver.changed_at(_git(store), kept_in, change.path)),
                                    forgot_at(store, kept_in))


def _git(store: GitStore) -> Callable[[list[str]], bytes]:
    """``store``'s git as ``mergedriver.changed_at`` runs it: a command's output, paths literal."""

    def git(args: list[str]) -> bytes:
        return store.git(*args, check=False, env=LITERAL_PATHS).stdout

    return git


def _driven(store: GitStore, path: str) -> bool:
    """Whether git would hand ``path`` to the KB's merge driver (its attributes: a ``.yaml``
    directly in the KB's memories/ or sessions/ folder)."""
    if not path.startswith(store.prefix):
        return False
    folder, slash, name = path[len(store.prefix):].partition("/")
    return folder in (MEMORIES_DIR, SESSIONS_DIR) and "/" not in name and name.endswith(".yaml")


def _merged(store: GitStore, change: _Change, current: str, commits: tuple[str, str]) -> str | None:
    """The driver's merge of (the commit's parent, the upstream's, the commit's) versions;
    ``commits``: (the upstream, the commit), which date a version edited by hand."""
    assert change.new is not None
    wanted = [oid for oid in (change.old, current, change.new) if oid is not None]
    blobs = store.objects.read_many("blob", wanted)
    # As git hands them to the driver: an empty base when both sides added the file.
    base, ours, theirs = ("" if oid is None else blobs[oid].decode("utf-8", "replace")
                          for oid in (change.old, current, change.new))
    upstream, commit = commits
    return mergedriver.merged(change.path, base, ours, theirs, (
        lambda: mergedriver.changed_at(_git(store), upstream, change.path),
        lambda: mergedriver.changed_at(_git(store), commit, change.path)))


def _recommitted(raw: bytes, tree: str, parent: str, committer: bytes) -> bytes:
    """Commit object ``raw`` on ``tree`` and ``parent``, committed by ``committer`` (git's ident
    line); other headers but the encoding (a signature of the old commit) are dropped."""
    header, _, message = raw.partition(b"\n\n")
    kept = [line for line in header.split(b"\n") if line.startswith((b"author ", b"encoding "))]
    lines = [b"tree " + tree.encode(), b"parent " + parent.encode(), *kept[:1], b"committer " + committer,
             *kept[1:]]
    return b"\n".join(lines) + b"\n\n" + message


_AUTHOR = re.compile(rb"author (?P<name>[^<>\n]+) <(?P<email>[^<>\n]*)> (?P<date>\d+ [+-]\d{4})\Z")
# What git strips from both ends of a name or an email it is given (ident.c's "crud", "." as git
# 2.39 has it): one too many only sends a commit to git rebase, which keeps its author as it is.
_CRUD = re.compile(rb"\A[\x00-\x20.,:;<>\"'\\]|[\x00-\x20.,:;<>\"'\\]\Z")


def _signable(raw: bytes) -> bool:
    """Whether commit object ``raw`` can be made again by ``git commit-tree`` as it is: its message
    UTF-8 (no other ``encoding``), its author line as git writes one from the name, email and date
    it is given (none of them crud at an end, and not the zone -0000, which git writes +0000)."""
    header, _, message = raw.partition(b"\n\n")
    lines = header.split(b"\n")
    try:
        message.decode()
    except UnicodeDecodeError:
        return False
    author = next((found for line in lines if (found := _AUTHOR.match(line))), None)
    return not any(line.startswith(b"encoding ") and line[9:].lower() not in (b"utf-8", b"utf8") for line in lines) and (
        author is not None and not author.group("date").endswith(b" -0000")
        and not any(_CRUD.search(author.group(part)) for part in ("name", "email")))


def _signed(store: GitStore, raw: bytes, tree: str, parent: str) -> str:
    """Commit object ``raw`` made again on ``tree`` and ``parent`` by ``git commit-tree``, which
    signs it (``commit.gpgSign``: ``GitStore.commit_tree``), its author, date and message kept."""
    header, _, message = raw.partition(b"\n\n")
    author = next(found for line in header.split(b"\n") if (found := _AUTHOR.match(line)))
    name, email, date = (author.group(part).decode("utf-8", "surrogateescape") for part in ("name", "email", "date"))
    # "@": git reads "<seconds> <zone>" as a commit's header has it only so.
    return store.commit_tree(tree, parent, message.decode(),
                             {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": f"@{date}"})
