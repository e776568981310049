"""What a team's branches must agree on, checked by ``validate``: auto ids that two branches
allocated for different memories (``--against REF``), and links a branch added to memories REF
forgot or entities REF deleted from the catalog since (both ``--against REF``); a topic key held
by more than one memory is topickeys.py's, what a plain ``git merge`` of the branch stops on or
gets wrong plainmerge.py's.
With ``--against REF`` only the files the branch changed need the per-file checks
(``branch_files``), the rest having been checked where they came from.

Each check returns problems of a whole file (line 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import yaml

from ..catalog.catalog import MAX_CATALOG_BYTES, SEGMENT_RE, Catalog
from ..core import yamlio
from ..core.errors import KBError, StoreError
from ..core.fileio import NotRegularFile, TooLarge, read_regular
from ..core.ids import is_auto_id
from ..core.locate import MEMORY_LINK, id_of_path, linked_id, memory_link, memory_path
from ..core.memory import MAX_FILE_BYTES, loads
from ..core.problems import Problem, command, git_command, shell_word, shown
from ..core.session import SESSIONS_DIR
from ..store.renames import Crossing, crossings, renamed_since
from ..store.repo import GitStore, find_toplevel
from ..store.revisions import resolve_rev, same_memories, shallow_parting, taken_from
from .conflictsteps import crossed_words, merge_settles
from .snapshot import blobs_at, catalog_changed, deleted_entities, entities_of, under

MEMORIES = "memories"
# A memory's stored query, its key as any YAML writes it ('query:', '"query" :'), for git grep -E.
_QUERY_KEY = "query[\"']?[[:space:]]*:"


@dataclass(frozen=True)
class Branch:
    """HEAD of the KB at ``root`` compared with the revision ``against``: asked of git once for
    all the checks of one ``validate --against`` (a git process is tens of ms on a busy machine)."""

    root: Path
    store: GitStore
    against: str
    against_sha: str
    base: str | None  # where HEAD parted from ``against``; None: no common ancestor
    head: str | None  # HEAD's commit (None before the first), read once for all the checks
    alike: dict[str, str | None] = field(default_factory=dict, compare=False, repr=False)  # same_memories' answers

    def same_memories(self, kb_paths: list[str]) -> dict[str, str]:
        """``revisions.same_memories`` of HEAD and ``against``: each path asked of git once for
        all the checks (the id collisions and the plain-merge stops ask of the same files)."""
        if self.head is None:
            return {}
        if ask := [path for path in dict.fromkeys(kb_paths) if path not in self.alike]:
            found = same_memories(self.store, ask, self.base, self.head, self.against_sha)
            self.alike.update({path: found.get(path) for path in ask})
        return {path: blob for path in kb_paths if (blob := self.alike[path]) is not None}

    def taken_from_against(self, kb_paths: list[str]) -> set[str]:
        """Of ``kb_paths``, those this branch took in from ``against`` (``revisions.taken_from``)."""
        if self.base is None or self.head is None:
            return set()
        return taken_from(self.store, kb_paths, self.base, self.head, self.against_sha)

    @cached_property
    def remote(self) -> str | None:
        """The remote whose tracking branch ``against`` names (``_remote_of``), asked of git once."""
        return _remote_of(self.store, self.against)

    def fix(self, args: str) -> str:
        """``fix_command`` of ``args``, the remote asked of git once for all the checks."""
        return _after_fetch(self.root, args, self.remote)

    @cached_property
    def crossed(self) -> Crossed:
        """``crossed_checks`` of HEAD and ``against``, asked of git once for ``links_to_gone`` and the
        plain-merge checks; its problems name files from the working directory, as validate's do."""
        return crossed_checks(self.store, self.base or "", (self.head or "", self.against_sha), self.against,
                              lambda kb_path: shown(self.root / kb_path),
                              lambda: self.fix(f"merge {shell_word(self.against)}"))

    @cached_property
    def tracked_branch(self) -> str | None:
        """The branch a commit lands on to change ``against`` (``origin/main`` and ``main``: main),
        for a fix made there; None for a revision no branch names (a tag, a commit)."""
        full = self.store.git("rev-parse", "--symbolic-full-name", self.against, check=False).stdout.decode().strip()
        tracking = f"refs/remotes/{self.remote}/" if self.remote is not None else "refs/heads/"
        return full.removeprefix(tracking) if full.startswith(tracking) else None


def branch(root: Path, against: str, opened: GitStore | None = None) -> Branch:
    """``opened``: the repository of the KB at ``root`` where the caller has it open already (the
    command's own KB), so that git is not asked again where it is."""
    if opened is not None and opened.root == root.resolve():
        store = opened
    elif find_toplevel(root) is None:
        raise StoreError(f"--against needs a git repository; {root} is not in one.")
    else:
        store = GitStore(root)
    against_sha = resolve_rev(store, against)
    proc = store.git("merge-base", against_sha, "HEAD", check=False)
    return Branch(root, store, against, against_sha, proc.stdout.decode().strip() if proc.returncode == 0 else None,
                  store.head())


def id_collisions(compared: Branch, files: dict[Path, str]) -> list[Problem]:
    """Auto ids this branch added (among ``files``, path -> shown name) that the revision it is
    compared with used for another memory."""
    store, against, against_sha, base = compared.store, compared.against, compared.against_sha, compared.base
    memories = store.repo_path(MEMORIES + "/")
    if base is None:
        raise shallow_parting(store, against) or StoreError(f"'{against}' and HEAD have no common ancestor; "
                                                            "cannot compare ids.")
    ours = {path.stem: (path, name) for path, name in files.items() if path.suffix == ".yaml"}
    auto = [i for i in ours if is_auto_id(i)]
    if not auto:
        return []
    # A few files (a branch's changes): list just those at both revisions, not every memory.
    only = [store.repo_path(f"{MEMORIES}/{i}.yaml") for i in auto] if len(auto) <= 200 else []
    at_base = _tree_blobs(store, base, memories, only)
    # A branch REF has not moved past since it parted (REF is the merge base): the same listing.
    theirs = at_base if against_sha == base else _tree_blobs(store, against_sha, memories, only)
    candidates = [i for i in auto if i not in at_base and i in theirs]
    if not candidates:
        return []
    # Only what REF added in commits HEAD lacks is another memory: one both sides have from one
    # commit is the same memory, whatever merge base git picks after criss-cross merges.
    head = compared.head
    added = {p[len(MEMORIES) + 1:-5] for p in store.added_paths(head, against_sha, MEMORIES + "/")} if head else set()
    ids = sorted((i for i in candidates if i in added), key=lambda i: (len(i), i))
    local = store.git("hash-object", "--no-filters", "--", *(str(ours[i][0]) for i in ids)).stdout.decode().split()
    apart = [i for i, blob in zip(ids, local, strict=True) if blob != theirs[i]]
    # The same memory on both sides (merged, cherry-picked or replayed) is no clash.
    alike = compared.same_memories([f"{MEMORIES}/{i}.yaml" for i in apart])
    clashes = [(i, ours[i][1]) for i in apart if f"{MEMORIES}/{i}.yaml" not in alike]
    if not clashes:
        return []
    fix = compared.fix(f"renumber --onto {shell_word(against)}")
    return [Problem(
        name, 1,
        f"id '{memory_id}' was added on this branch, but {against} already uses it for "
        f"another memory; run '{fix}' to give this branch's memory a fresh id and "
        f"rewrite its {memory_link(memory_id)} references, in one commit",
    ) for memory_id, name in clashes]


@dataclass(frozen=True)
class BranchFiles:
    """What ``validate --against`` checks (path -> shown name): ``own``, the files the branch
    changed, and ``reached``, the other memories a changed datasource or model file can reach
    (``catalog_reach``), whose references alone can have changed; ``whole`` when every file needs
    its checks all the same (``own`` still says which are the branch's, for the checks that
    compare them with the revision)."""

    own: dict[Path, str]
    reached: dict[Path, str]
    whole: bool = False


def branch_files(compared: Branch) -> BranchFiles | None:
    """The memory and session files of the KB that differ from where HEAD parted from the
    revision it is compared with, committed or not: the only files whose own checks can have
    changed, and the memories a changed datasource or model file can reach. ``whole`` when every
    file must be checked: ``priority.yaml`` changed (any unqualified reference may resolve
    elsewhere now), a memory file was removed (others may point at it), or the grep for what a
    catalog change reaches failed. None when there is no merge base (``id_collisions`` then says
    so)."""
    root, store = compared.root, compared.store
    if compared.base is None:
        return None
    kb = store.prefix or "."
    # The merge base against the work tree: committed and uncommitted changes of tracked files.
    tracked = store.git("diff", "--name-status", "-z", "--no-renames", compared.base, "--", kb).stdout
    fields = tracked.decode("utf-8", "surrogateescape").split("\0")
    changed = [(status, path) for status, path in zip(fields[0::2], fields[1::2], strict=False) if path]
    untracked = store.git("ls-files", "-z", "--others", "--exclude-standard", "--", kb).stdout
    changed += [("A", p) for p in untracked.decode("utf-8", "surrogateescape").split("\0") if p]
    files: dict[Path, str] = {}
    catalog: list[str] = []  # the datasource and model files changed, KB-relative
    whole = False
    for status, path in changed:
        folder, _, name = path[len(store.prefix):].partition("/")
        if folder not in (MEMORIES, SESSIONS_DIR) or "/" in name:
            if path.endswith(".yaml"):
                if _catalog_names(path[len(store.prefix):]) is None:
                    whole = True  # priority.yaml (or a YAML file validate would reject anyway)
                else:
                    catalog.append(path[len(store.prefix):])
            continue
        if status == "D":
            whole = whole or folder == MEMORIES
            continue
        files[root / folder / name] = shown(root / folder / name)
    reached = catalog_reach(compared, catalog) if catalog and not whole else {}
    if reached is None:
        return BranchFiles(files, {}, whole=True)
    return BranchFiles(files, {path: name for path, name in reached.items() if path not in files}, whole)


def catalog_reach(compared: Branch, changed: list[str]) -> dict[Path, str] | None:
    """The memory files (path -> shown name) whose checks the datasource and model files
    ``changed`` (KB-relative) can have changed since the merge base: those whose text names an
    entity a file defines there or in the work tree (``ds.model``, the start of every entity
    under a model; a datasource's name), and every memory holding a stored query (its references
    may reach a model through a join or an unqualified name). Found by ``git grep``, so that a
    pull request that touches one model does not check 10,000 memories. None when the grep
    fails (every memory is checked then)."""
    store, root = compared.store, compared.root
    assert compared.base is not None
    prefixes: set[str] = set()
    before = blobs_at(store, [(compared.base, path) for path in changed])
    for path, old in zip(changed, before, strict=True):
        place = _catalog_names(path)
        assert place is not None  # branch_files passes only catalog files
        folder, stem = place
        names = {stem, _defined_name(old), _defined_name(_read_or_none(root / path))}
        # An invalid name defines nothing (the catalog names the file among its problems), and
        # a valid one holds no character special to a regular expression.
        if folder is not None and not SEGMENT_RE.fullmatch(folder):
            continue  # not a datasource's folder: the catalog reads nothing in it
        prefixes |= {name if folder is None else f"{folder}\\.{name}" for name in names if SEGMENT_RE.fullmatch(name)}
    grep = ["grep", "-l", "-z", "-i", "-E", "-e", _QUERY_KEY]
    for prefix in sorted(prefixes):
        grep += ["-e", prefix]
    proc = store.git(*grep, "--", store.repo_path(MEMORIES + "/"), check=False)
    if proc.returncode not in (0, 1):  # 1: no memory matched
        return None
    paths = (root / p[len(store.prefix):] for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p)
    return {path: shown(path) for path in paths if path.suffix == ".yaml"}


def _catalog_names(kb_path: str) -> tuple[str | None, str] | None:
    """(the datasource folder, the file's stem) of a model file ``models/<ds>/<stem>.yaml``, (None,
    stem) of a datasource file ``datasources/<stem>.yaml``; None for any other file."""
    parts = kb_path.split("/")
    if not parts[-1].endswith(".yaml"):
        return None
    stem = parts[-1][:-5]
    if len(parts) == 3 and parts[0] == "models":
        return parts[1], stem
    if len(parts) == 2 and parts[0] == "datasources":
        return None, stem
    return None


def _defined_name(data: bytes | None) -> str:
    """The ``name`` a catalog file's bytes define; '' when they define none (the stem's), and for
    a file that is absent or does not parse: it defines nothing, and its other version is read."""
    if data is None:
        return ""
    try:
        parsed = yamlio.load(data.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return ""
    name = parsed.get("name") if isinstance(parsed, dict) else None
    return name if isinstance(name, str) else ""


def _read_or_none(path: Path) -> bytes | None:
    try:
        return read_regular(path, limit=MAX_CATALOG_BYTES)
    except (OSError, NotRegularFile, TooLarge):
        return None


def links_to_gone(compared: Branch, files: dict[Path, str], catalog: Catalog) -> list[Problem]:
    """Links that this branch's memories (among ``files``) gained since it parted from the revision
    compared with, to memories that revision forgot since (``memory:<id>``) or to entities it
    deleted from the catalog since (``delete-model`` ...): each file checks on the branch (its
    ``catalog``), but a plain ``git merge`` into that revision links nothing (and fails
    ``validate``). ``slayer-kb merge REF`` strips them, as sync does (unlinks.py)."""
    if compared.base is None or not files:
        return []
    deleted = deleted_since(compared.store, compared.base, compared.against_sha, catalog)
    # Only files that can hold such a link are parsed: every memory, after a catalog change.
    marks = (MEMORY_LINK, *delete_roots(deleted))
    mine = {path.stem: (name, links) for path, name in files.items() if (links := _links_of(path, marks))}
    # An id this branch forgot and gave another memory, which that revision renamed: a link to it
    # means the other memory (``Crossing``: a plain merge moves it, which ``plainmerge`` names).
    given = compared.crossed.given(compared.head) if mine and compared.head else set()
    return gone_links(compared.store, compared.base, compared.against, compared.against_sha, mine,
                      lambda i: i not in given and (compared.root / MEMORIES / f"{i}.yaml").is_file(), deleted,
                      compared.fix)


@dataclass(frozen=True)
class Crossed:
    """The ``Crossing``s of a branch and the revision it is compared with, as ``validate --against``
    and ``review`` check them, and a problem for each (``crossed_checks``)."""

    crossings: list[Crossing]
    problems: list[Problem]

    def given(self, tip: str) -> set[str]:
        """The ids ``tip`` (either side) forgot and gave another memory: a link there to one means
        that memory, no memory the other side renamed or forgot."""
        return {c.memory_id for c in self.crossings if c.forgot == tip}


def crossed_checks(store: GitStore, base: str, tips: tuple[str, str], against: str, where: Callable[[str], str],
                   merge: Callable[[], str]) -> Crossed:
    """``Crossed`` of a branch at ``tips[0]`` and the revision ``against`` at ``tips[1]`` (none
    without a head, a common ancestor, or a commit since: no merge to cross). A problem each: a
    plain ``git merge`` puts the memory one side gave a forgotten id to under the id the other side
    renamed that id to, without a word; or merges the other side's edit of the forgotten memory
    into it, git's line merge stopping only where their lines meet. Named at the file the branch
    holds (``where`` names a KB path as the caller's problems do): its renamed one, or the id's;
    ``merge`` gives the command that merges ``against``, asked for only when one is named."""
    head, against_sha = tips
    crossed = crossings(store, base, tips) if head and base and against_sha != base else []
    fix = merge() if crossed else ""
    return Crossed(crossed, [
        Problem(where(memory_path(c.new if c.other == head and c.new else c.memory_id)), 1,
                f"{text}; a plain git merge of this branch does "
                f"{'that without a word' if c.new else 'the same, or stops on two edits of one memory where their lines meet'}"
                f". Run '{fix}': {merge_settles([c])}")
        for c, text in zip(crossed, crossed_words(crossed, {head: "this branch", against_sha: against}), strict=True)])


def deleted_since(store: GitStore, base: str, against_sha: str, catalog: Catalog) -> set[str]:
    """The entities ``against_sha`` deleted from the catalog since ``base`` that the branch's
    ``catalog`` still holds (a link to one the branch deleted too is the file's own problem);
    one ``git diff`` when no datasource or model file changed there."""
    deleted = deleted_entities(store, base, against_sha, catalog_changed(store, base, against_sha))
    return deleted & entities_of(catalog) if deleted else set()


def delete_roots(deleted: set[str]) -> list[str]:
    """The deletes' roots (``shop.orders``, not each of its columns)."""
    return sorted(e for e in deleted if not under(e.rpartition(".")[0], deleted))


def gone_links(store: GitStore, base: str, against: str, against_sha: str, mine: dict[str, tuple[str, set[str]]],
               present: Callable[[str], bool], deleted: set[str], fix: Callable[[str], str]) -> list[Problem]:
    """``links_to_gone`` of the memories ``mine`` (id -> shown name, entities it links) on a branch
    that parted from ``against`` at ``base``; ``present`` says whether the branch holds a memory
    id, ``deleted`` the entities ``against`` deleted (``deleted_since``); ``fix`` the command a
    problem gives for slayer-kb's arguments (``fix_command``, or ``Branch.fix``, which knows the
    remote already)."""
    linked = {i for _name, links in mine.values() for e in links if (i := linked_id(e)) is not None}
    paths = [store.repo_path(f"{MEMORIES}/{i}.yaml") for i in sorted(linked)]
    at_base = _tree_blobs(store, base, "", paths) if linked else {}
    at_ref = _tree_blobs(store, against_sha, "", paths) if at_base else {}
    forgotten = {i for i in at_base if i not in at_ref and present(i)}
    # An id ``against`` renamed away and gave to another memory (``--reuse-id``) holds another file
    # there: a link to it would name that memory once merged. Renames read only where one can be.
    other = [i for i in at_base if i in at_ref and at_base[i] != at_ref[i] and present(i)]
    renamed = renamed_since(store, base, against_sha, {*forgotten, *other}).live if forgotten or other else {}
    gone = {memory_link(i) for i in {*forgotten, *(i for i in other if i in renamed)}}

    def lost(entity: str) -> bool:
        return entity in gone or (linked_id(entity) is None and under(entity, deleted))

    mine = {memory_id: found for memory_id, found in mine.items() if any(map(lost, found[1]))}
    if not mine:
        return []
    # A link the file held where the branch parted is REF's to strip, which its forget or delete did.
    before = _tree_blobs(store, base, "", [store.repo_path(f"{MEMORIES}/{i}.yaml") for i in mine])
    texts = store.objects.read_many("blob", before.values())
    found = []  # (id, shown name, the links it gained to what is gone)
    for memory_id, (name, links) in sorted(mine.items()):
        old = links_in(texts[before[memory_id]].decode("utf-8", "replace"), memory_id) if memory_id in before else set()
        found.append((memory_id, name, {e for e in links - old if lost(e)}))
    if not any(new for _i, _name, new in found):
        return []
    merge = fix(f"merge {shell_word(against)}")
    problems = []
    for memory_id, name, new in found:
        for i in sorted((i for e in new if (i := linked_id(e)) is not None), key=lambda i: (len(i), i)):
            # A memory ``against`` renamed (and still has) is no forget: the merge points the link at its new id.
            what, then, does = ("forgot since this branch parted from it", "point at nothing",
                                "strips links to forgotten memories")
            if i in renamed:
                what, does = (f"renamed to '{renamed[i]}' since this branch parted from it",
                              "points links to renamed memories at their new ids")
            if i in at_ref:  # renamed, and the id given to another memory
                what, then = f"{what}, and then gave '{i}' to another memory", "name that other memory"
            problems.append(Problem(
                name, 1,
                f"memory {memory_id} links '{memory_link(i)}', which {against} {what}; merged as it is, the link "
                f"would {then}. Run '{merge}': it {does}, in one commit"))
        problems += [Problem(
            name, 1,
            f"memory {memory_id} links '{entity}', which {against} deleted from the catalog since this branch "
            f"parted from it; merged as it is, the link would point at nothing. Run '{merge}': it strips links "
            "to deleted entities, as the delete would have, in one commit",
        ) for entity in sorted(e for e in new if linked_id(e) is None)]
    return problems


def fix_command(store: GitStore, root: Path, args: str, against: str) -> str:
    """``slayer-kb [--kb KB] ARGS`` as run from where the user is (``problems.command``), the fix of
    a problem found against the revision ``against``, after ``git fetch REMOTE`` when that revision
    is a remote-tracking branch: whoever runs the fix on the branch (an agent reading CI's review)
    may hold an older copy of it, against which the fix finds nothing to do."""
    return _after_fetch(root, args, _remote_of(store, against))


def drop_fix(root: Path, path: str, new: str, against: str) -> str:
    """The commands that remove this branch's copy of the memory at ``path`` (in the KB at
    ``root``), which ``against`` took in and renamed to ``new``, in one commit: what
    ``validate --against`` and ``review`` both tell the branch to run."""
    message = _quoted(f"memory: drop {id_of_path(path)}, renamed to {new} on {against}")
    return f"{git_command(root, f'rm -q -- {shell_word(path)}')} && {git_command(root, f'commit -q -m {message}')}"


def _quoted(text: str) -> str:
    """``text`` as one shell word inside a fix the message quotes with single quotes: in double
    quotes where nothing in it is special there (no nested single quotes), else ``shell_word``'s."""
    return f'"{text}"' if text.isprintable() and not any(ch in text for ch in '$`\\"!') else shell_word(text)


def _after_fetch(root: Path, args: str, remote: str | None) -> str:
    fix = f"{command(root)} {args}"
    return fix if remote is None else f"{git_command(root, 'fetch ' + shell_word(remote))} && {fix}"


def _remote_of(store: GitStore, rev: str) -> str | None:
    """The remote whose tracking branch ``rev`` names (``origin/main``: origin), else None."""
    full = store.git("rev-parse", "--symbolic-full-name", rev, check=False).stdout.decode().strip()
    if not full.startswith("refs/remotes/"):
        return None
    remotes = store.git("remote", check=False).stdout.decode().split()
    # The longest name first: a remote may be called 'a' beside one called 'a/b'.
    return next((name for name in sorted(remotes, key=len, reverse=True)
                 if full.startswith(f"refs/remotes/{name}/")), None)


def _links_of(path: Path, marks: tuple[str, ...]) -> set[str]:
    """The entities the memory file ``path`` links, when its text holds one of ``marks``; none for
    a file that does not parse (check_file names it)."""
    if path.suffix != ".yaml" or path.parent.name != MEMORIES:
        return set()
    try:
        text = read_regular(path, limit=MAX_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    return links_in(text, path.stem) if any(mark in text for mark in marks) else set()


def links_in(text: str, memory_id: str) -> set[str]:
    """The entities (``memory:<id>`` among them) a memory's text links; none for text that does
    not parse."""
    try:
        memory = loads(text, memory_id)
    except KBError:
        return set()
    return set(memory.entities)


def _tree_blobs(store: GitStore, rev: str, folder: str, only: list[str]) -> dict[str, str]:
    """``{id: blob}`` of ``memories/*.yaml`` at ``rev`` (of just the paths ``only``, if any)."""
    proc = store.git("ls-tree", "-z", rev, "--", *(only or [folder]))
    out = {}
    for entry in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        name = path.rsplit("/", 1)[-1]
        if name.endswith(".yaml"):
            out[name[:-5]] = meta.split()[2]
    return out
