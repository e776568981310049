"""The KB's files as they are at a git revision, read from git objects (never the work tree):
a file, a folder's listing, the memory ids, the catalog; what a side deleted from the catalog
since the sides parted (``sync``'s cascade, ``validate --against`` and ``review``); and the
sessions two sides started for two projects (``sync``); the memory and session files a side wrote
since the sides parted (``sync``, ``validate --against``), and those a merge of two sides can hand
the KB's merge driver (``sync``, ``merge``, ``rebase``); and the memories whose files the work
tree lacks, as HEAD holds them (what the fixes after a merge or rebase strip and check)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.errors import KBError
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.session import SESSIONS_DIR, id_of_file
from ..core.session import loads as load_session
from ..store.repo import GitStore

if TYPE_CHECKING:
    from ..catalog.catalog import Catalog

CATALOG_DIRS = ("datasources", "models")
PRIORITY_FILE = "priority.yaml"


def blob_at(store: GitStore, rev: str, kb_path: str) -> bytes | None:
    """The bytes of ``kb_path`` at commit ``rev``, or None when the file is not there."""
    proc = store.git("cat-file", "blob", f"{rev}:{store.repo_path(kb_path)}", check=False)
    return proc.stdout if proc.returncode == 0 else None


def blobs_at(store: GitStore, wanted: list[tuple[str, str]]) -> list[bytes | None]:
    """``blob_at`` of each ``(rev, kb_path)``, from one ``git cat-file --batch``
    (``GitStore.cat_files``; a process per file is tens of ms on a busy machine). cat-file reads
    a ``REV:PATH`` name a line, so where a path holds a newline (a file a pull request added,
    or the KB's folder) each file is found by walking the trees by id (``_blob_ids``)."""
    if not wanted:
        return []
    paths = [store.repo_path(path) for _, path in wanted]
    if any("\n" in path for path in paths):
        names: list[str | None] = _blob_ids(store, [rev for rev, _ in wanted], paths)
    else:
        names = [f"{rev}:{path}" for (rev, _), path in zip(wanted, paths, strict=True)]
    asked = [name for name in names if name is not None]
    found = iter(store.cat_files(asked, missing_ok=True) if asked else [])
    return [None if name is None or (blob := next(found)) is None or blob[1] != "blob" else blob[2] for name in names]


def _blob_ids(store: GitStore, revs: list[str], paths: list[str]) -> list[str | None]:
    """The blob id of each repository path of ``paths`` at the rev beside it (None: not there),
    walked down to from each rev's root tree by id."""
    unique = list(dict.fromkeys(revs))
    answers = store.cat_files([f"{rev}^{{tree}}" for rev in unique], missing_ok=True)
    roots = {rev: None if answer is None else answer[0] for rev, answer in zip(unique, answers, strict=True)}
    objects = store.objects
    return [None if (root := roots[rev]) is None else objects.blobs_at(root, [path])[path]
            for rev, path in zip(revs, paths, strict=True)]


# A raw diff's blob for the side that lacks the file.
NO_BLOB = "0" * 40


def written_since(store: GitStore, base: str, rev: str) -> dict[str, tuple[str, str]]:
    """``{KB path: (blob at base, blob at rev)}`` of the files under memories/ and sessions/ that
    ``rev`` added, changed or removed since ``base`` (``NO_BLOB`` where one lacks the file), in one
    ``git diff``: of both sides', the files a merge of them may give the KB's merge driver."""
    folders = [store.repo_path(f"{folder}/") for folder in (MEMORIES_DIR, SESSIONS_DIR)]
    out = store.git("diff", "--raw", "-z", "--no-abbrev", "--no-renames", base, rev, "--", *folders).stdout
    fields = out.decode("utf-8", "surrogateescape").split("\0")
    written = {}
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):  # the output ends with a NUL
        blobs = meta.split()
        written[path[len(store.prefix):]] = (blobs[2], blobs[3])
    return written


def written_on_both(store: GitStore, parted: str, sides: tuple[str, str]) -> list[str]:
    """The KB paths of the memory and session files both ``sides`` wrote since they parted at
    ``parted`` (``written_since``): the ones both changed, whose merge the conflict's steps and
    the session warnings name."""
    if parted in sides:  # one side is where they parted (a fast-forward): it wrote nothing
        return []
    first, second = (written_since(store, parted, side) for side in sides)
    return sorted(first.keys() & second.keys())


def merge_bases(store: GitStore, sides: tuple[str, str]) -> list[str]:
    """Every best common ancestor of ``sides`` (``git merge-base --all``); the first is the one a
    plain ``git merge-base`` of ``sides`` in the same order names (with several bases of one
    date, git's order follows the arguments'), so one call serves both questions."""
    return store.git("merge-base", "--all", *sides, check=False).stdout.decode().split()


def written_on_either(store: GitStore, sides: tuple[str, str], bases: list[str]) -> list[str] | None:
    """The KB paths of the memory and session files a commit of either of ``sides`` wrote since
    they parted, a merge's to each parent included: the files a merge or rebase of them can hand
    the KB's merge driver. Not only those both wrote on the whole: a rebase replays each commit,
    so a file one side edited and then put back is merged all the same; and git merges a renamed
    file under one side's name. None (every file: no list is exact) with no merge base, or more
    than one (a criss-cross merge first merges the bases, files older than either side's commits);
    none where one side is where they parted (a fast-forward merges nothing). ``bases``: theirs,
    ``merge_bases``."""
    if len(bases) != 1:
        return None
    if bases[0] in sides:
        return []
    folders = [store.repo_path(f"{folder}/") for folder in (MEMORIES_DIR, SESSIONS_DIR)]
    # A merge's files to each parent: '--diff-merges=separate' needs git 2.31; before it, '-m' is
    # that (run_git's OUTPUT_SETTINGS keep a user's log.diffMerges from changing it).
    out = store.git("log", "--format=", "--name-only", "-z", "--no-renames", "-m",
                    *sides, "--not", bases[0], "--", *folders).stdout
    return sorted({path[len(store.prefix):] for path in out.decode("utf-8", "surrogateescape").split("\0") if path})


def session_projects(store: GitStore, sides: tuple[str, str], paths: list[str]) -> dict[str, dict[str, str]]:
    """Of ``paths`` (KB-relative: the files both sides changed, ``written_on_both``), each session
    file the upstream and this branch (``sides``, as they were before the merge) started for two
    projects: its id, both projects and the one the merged session at HEAD kept
    (``merging.merge_sessions``). ``sync``, ``merge`` and ``rebase`` warn of each."""
    sessions = [(path, session_id) for path in paths if path.startswith(f"{SESSIONS_DIR}/")
                and (session_id := id_of_file(path.removeprefix(f"{SESSIONS_DIR}/"))) is not None]
    found = iter(blobs_at(store, [(rev, path) for path, _ in sessions for rev in (*sides, "HEAD")]) if sessions else [])
    apart: dict[str, dict[str, str]] = {}
    for path, session_id in sessions:
        texts = [next(found) for _ in range(3)]
        with contextlib.suppress(KBError):  # a version that does not parse was no start
            upstream, here, kept = (load_session(text.decode("utf-8", "replace"), session_id).project
                                    if text is not None else None for text in texts)
            if upstream and here and kept and upstream != here:
                apart[path] = {"session": session_id, "upstream": upstream, "here": here, "kept": kept}
    return apart


# Tree entries that are no file, by their mode: a link's blob is the path it points to, a
# submodule's entry a commit. Readers name them and never take one for a file's text.
NOT_FILES = {"120000": "a symlink", "160000": "a submodule"}


def kind_at(store: GitStore, rev: str, kb_path: str) -> str | None:
    """What ``kb_path`` is at ``rev`` when it is no regular file (a kind of :data:`NOT_FILES`);
    None when it is a file or not there."""
    entry = store.git("ls-tree", "-z", rev, "--", store.repo_path(kb_path), check=False).stdout
    return NOT_FILES.get(entry.split(b" ", 1)[0].decode("ascii", "replace"))


def text_at(store: GitStore, rev: str, kb_path: str) -> str | None:
    data = blob_at(store, rev, kb_path)
    return None if data is None else data.decode("utf-8", "replace")


def files_at(store: GitStore, rev: str, under: str) -> list[str]:
    """KB-relative paths of the files under ``under`` at ``rev``."""
    proc = store.git("ls-tree", "-r", "-z", "--name-only", rev, "--", store.repo_path(under), check=False)
    out = []
    for raw in proc.stdout.split(b"\0"):
        name = raw.decode("utf-8", "surrogateescape")
        if name.startswith(store.prefix) and name:
            out.append(name[len(store.prefix):])
    return out


def memory_ids_at(store: GitStore, rev: str) -> set[str]:
    return {i for i in map(id_of_path, files_at(store, rev, f"{MEMORIES_DIR}/")) if i}


def absent_at_head(store: GitStore, kb_root: Path, memory_ids: list[str]) -> dict[str, bytes | None]:
    """Those of ``memory_ids`` whose file the work tree under ``kb_root`` lacks, as HEAD holds them
    (None: not there either), from one ``cat-file``. What a commit or a push holds of such a
    memory is HEAD's version, never a missing file: one a sparse checkout leaves out holds no
    edit, and a commit rewriting it leaves it out (``worktree.left_out``); a deletion git's index
    hides (assume-unchanged) is the user's uncommitted work, which a commit rewriting the file
    refuses (``worktree.uncommitted``)."""
    absent = [i for i in memory_ids if not os.path.lexists(kb_root / memory_path(i))]
    return dict(zip(absent, blobs_at(store, [("HEAD", memory_path(i)) for i in absent]), strict=True)) if absent else {}


def crafted(kb_path: str) -> bool:
    """Whether a path from a tree has an empty, '.' or '..' entry: a crafted tree's (git mktree
    takes them, a fetch does not check them), which git never checks out."""
    return bool({"", ".", ".."} & set(kb_path.split("/")))


def catalog_at(store: GitStore, rev: str, folders: tuple[str, ...] | None = None) -> Catalog:
    """The SLayer catalog as it is at ``rev``, read from git into a temporary folder; of the
    KB-relative ``folders`` (``models/shop/``) alone when given. Its problems name their files
    relative to the KB (``models/shop/orders.yaml``), as the work tree's are shown."""
    # On use: a command that reads a memory at a revision (show, log) needs no catalog.
    import tempfile

    from ..catalog.catalog import MAX_CATALOG_BYTES, OVERSIZED, CatalogProblem, load_catalog

    problems: list[CatalogProblem] = []
    paths, links = [], []
    for path, size, mode in _catalog_blobs_at(store, rev, folders):
        if crafted(path):
            # Writing models/../../x would write outside the temporary folder: a PR under review
            # could replace ~/.bashrc.
            problems.append(CatalogProblem(Path(path), None, "has a '.' or '..' entry in its path (a crafted tree): "
                                           "git never checks it out and slayer-kb never reads it; remove it"))
        elif mode == _LINK:
            links.append(path)
        elif size > MAX_CATALOG_BYTES:  # as the work tree's catalog: refused by its size, unread
            problems.append(CatalogProblem(Path(path), None, OVERSIZED.format(size=size)))
        else:
            paths.append(path)
    with tempfile.TemporaryDirectory(prefix="slayer-kb-catalog-") as tmp:
        root = Path(tmp)
        # One git process for every file: one each was 1.5 s for a catalog of 284 models.
        for path, data in zip(paths, blobs_at(store, [(rev, path) for path in paths]) if paths else [], strict=True):
            if data is None:
                continue
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        _make_links(store, rev, root, links)
        catalog = load_catalog(root)
    catalog.problems[:0] = problems
    for problem in catalog.problems:
        if problem.path.is_relative_to(root):
            problem.path = problem.path.relative_to(root)
    return catalog


_LINK = "120000"  # NOT_FILES' symlink


def _make_links(store: GitStore, rev: str, root: Path, links: list[str]) -> None:
    """The catalog's symlinks at ``rev`` made as symlinks under ``root``, after its files, so that
    the catalog is read as the work tree's is: a link is followed while it stays inside (SLayer
    follows links), one out of it is named and never read (``load_catalog``). Nothing is made
    through a link: each link's text is read by its path at ``rev``, which git looks up through
    the first entry of each name, so a crafted tree naming a folder twice, as a link and as a
    folder, yields no entry under the link."""
    for path, data in zip(links, blobs_at(store, [(rev, path) for path in links]) if links else [], strict=True):
        # A name a crafted tree also gives a file, a link's text holding a NUL: no link.
        with contextlib.suppress(OSError, ValueError):
            if data is not None:
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.fsdecode(data), root / path)


def _catalog_blobs_at(store: GitStore, rev: str, folders: tuple[str, ...] | None) -> list[tuple[str, int, str]]:
    """The KB-relative path, size and mode of each file of the catalog at ``rev`` (in ``folders``)."""
    wanted = [store.repo_path(p) for p in folders or (*(f"{d}/" for d in CATALOG_DIRS), PRIORITY_FILE)]
    proc = store.git("ls-tree", "-r", "-z", "-l", rev, "--", *wanted, check=False)
    found = []
    for row in proc.stdout.split(b"\0"):
        info, _, raw = row.partition(b"\t")
        name = raw.decode("utf-8", "surrogateescape")
        fields = info.split()
        if name.startswith(store.prefix) and len(fields) == 4 and fields[1] == b"blob":
            found.append((name[len(store.prefix):], int(fields[3]), fields[0].decode("ascii")))
    return found


def catalog_changed(store: GitStore, parted: str, rev: str) -> set[str]:
    """The KB-relative paths of the datasource and model files changed or removed between
    ``parted`` and ``rev`` (only those can delete an entity): one ``git diff``, so that parsing
    both catalogs is skipped when they did not change."""
    out = store.git("diff", "--name-only", "-z", "--no-renames", "--diff-filter=DM", parted, rev, "--",
                    *(store.repo_path(f"{d}/") for d in CATALOG_DIRS)).stdout
    return {p[len(store.prefix):] for p in out.decode("utf-8", "surrogateescape").split("\0") if p.endswith(".yaml")}


def deleted_entities(store: GitStore, parted: str, rev: str, changed: set[str]) -> set[str]:
    """The catalog's entities at ``parted`` that are gone at ``rev`` (a ``delete-model``, ...), the
    catalog files ``changed`` between the two (``catalog_changed``); none when a file is unread at
    ``rev`` (a problem that skips it) and was not at ``parted``: its entities are unreadable, not
    gone (stripping the links would lose them for good, while validate names the file). That
    file may be one the diff did not change: a model moved to a new file that does not parse."""
    if not changed:
        return set()
    folders = _model_folders(changed)
    after = catalog_at(store, rev, folders)
    before = catalog_at(store, parted, folders)
    if _unread(after) - _unread(before):
        return set()
    return entities_of(before) - entities_of(after)


def _model_folders(changed: set[str]) -> tuple[str, ...] | None:
    """The folders of the datasources whose model files are ``changed`` (``models/shop/``), when
    only model files are: no other datasource's entities can be gone, and reading theirs too cost
    two catalogs' parse (0.6 s of CPU for the bench's 284 models). None (the whole catalog) when a
    datasource file changed, which makes or ends a datasource beside its models' folder."""
    folders = set()
    for path in changed:
        parts = path.split("/")
        if len(parts) != 3 or parts[0] != "models" or crafted(path):
            return None
        folders.add(f"models/{parts[1]}/")
    return tuple(sorted(folders))


def _unread(catalog: Catalog) -> set[Path]:
    return {problem.path for problem in catalog.problems if problem.skipped}


def entities_of(catalog: Catalog) -> set[str]:
    return {entity for entity, _kind, _description in catalog.iter_entities()}


def under(entity: str, deleted: set[str]) -> bool:
    """Whether ``entity`` or one above it (``shop.orders`` above ``shop.orders.amount``) is in
    ``deleted``: a delete's cascade takes everything under a deleted entity."""
    parts = entity.split(".")
    return bool(entity) and any(".".join(parts[:n]) in deleted for n in range(1, len(parts) + 1))
