"""objects.py writes git objects itself: every tree it builds must be the one git would build."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import StoreError
from slayer_kb.store.repo import GitStore
from testing import examples


def git(cwd: Path, *args: str, env: dict[str, str] | None = None, data: bytes | None = None) -> str:
    full = {**os.environ, **(env or {})}
    return subprocess.run(
        ["git", *args], cwd=cwd, env=full, input=data, capture_output=True, check=True
    ).stdout.decode().strip()


def git_tree(repo: Path, files: dict[str, bytes]) -> str:
    """The tree git itself writes for ``files``, through a throwaway index: three git processes
    however many files (a process a blob made this the longest test module, at 80 examples)."""
    index = repo / ".git" / "reference-index"
    index.unlink(missing_ok=True)  # no index file: git starts from an empty one
    env = {"GIT_INDEX_FILE": str(index)}
    if files:
        staged = repo / ".git" / "reference-blobs"
        shutil.rmtree(staged, ignore_errors=True)
        staged.mkdir()
        for n, data in enumerate(files.values()):
            (staged / str(n)).write_bytes(data)
        listed = "".join(f"{staged / str(n)}\n" for n in range(len(files)))
        blobs = git(repo, "hash-object", "-w", "--no-filters", "--stdin-paths", data=listed.encode()).split()
        lines = "".join(f"100644 {blob}\t{path}\n" for blob, path in zip(blobs, files, strict=True))
        git(repo, "update-index", "--index-info", env=env, data=lines.encode())
    return git(repo, "write-tree", env=env)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("objects")
    git(path, "init", "-q")
    return path


# Names chosen so git's ordering quirks matter: a folder sorts as if its name ended in '/', so
# 'a' (folder) comes after 'a-b' and 'a.b' but before 'a0'; plus non-ASCII names.
NAMES = st.sampled_from(["a", "a-b", "a.b", "a0", "b", "é", "memories", "x.yaml", "10.yaml", "9.yaml"])
PATHS = st.lists(NAMES, min_size=1, max_size=3).map("/".join)
FILES = st.dictionaries(PATHS, st.binary(max_size=20), max_size=8)


def consistent(files: dict[str, bytes]) -> dict[str, bytes]:
    """Drop paths that would need a file and a folder of the same name at once."""
    out: dict[str, bytes] = {}
    for path in sorted(files, key=len):
        parts = path.split("/")
        prefixes = {"/".join(parts[:n]) for n in range(1, len(parts))}
        if prefixes & set(out) or any(other.startswith(path + "/") for other in out):
            continue
        out[path] = files[path]
    return out


def apply(files: dict[str, bytes], changes: dict[str, bytes | None]) -> dict[str, bytes]:
    result = dict(files)
    for path, data in changes.items():
        if data is None:
            result.pop(path, None)
            continue
        # A file replaces any folder or file standing in its way, as the store's update does.
        parts = path.split("/")
        for n in range(1, len(parts)):
            result.pop("/".join(parts[:n]), None)
        for other in [o for o in result if o.startswith(path + "/")]:
            del result[other]
        result[path] = data
    return result


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(before=FILES, changes=st.dictionaries(PATHS, st.none() | st.binary(max_size=20), max_size=5))
def test_updated_tree_is_the_tree_git_writes(repo: Path, before: dict[str, bytes], changes: dict[str, bytes | None]) -> None:
    before = consistent(before)
    changes = consistent({p: d for p, d in changes.items()})
    objects = GitStore(repo).objects
    base = git_tree(repo, before)
    blobs = {path: None if data is None else objects.write("blob", data) for path, data in changes.items()}
    after = apply(before, changes)
    assert objects.update_tree(base, blobs) == git_tree(repo, after)


def test_objects_are_valid_loose_objects_and_read_back_once_packed(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    store = GitStore(tmp_path)
    blob = store.objects.write("blob", b"learning: x\n")
    tree = store.objects.update_tree(None, {"memories/x.yaml": blob})
    commit = git(tmp_path, "commit-tree", tree, "-m", "one", env={
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x",
    })
    git(tmp_path, "update-ref", "HEAD", commit)
    assert git(tmp_path, "cat-file", "-p", f"{commit}:memories/x.yaml") == "learning: x"
    assert oct(os.stat(tmp_path / ".git/objects" / blob[:2] / blob[2:]).st_mode & 0o777) == "0o444"
    git(tmp_path, "gc", "-q", "--prune=now")
    assert not (tmp_path / ".git/objects" / blob[:2] / blob[2:]).exists()
    fresh = GitStore(tmp_path).objects  # no cached trees: everything comes from the pack
    assert fresh.tree_of(commit) == tree
    assert fresh.read("blob", blob) == b"learning: x\n"
    assert fresh.update_tree(tree, {"memories/y.yaml": blob}) == git_tree(
        tmp_path, {"memories/x.yaml": b"learning: x\n", "memories/y.yaml": b"learning: x\n"}
    )
    git(tmp_path, "fsck", "--strict")


def test_a_folder_removed_between_mkdir_and_open_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race of the stress run below, on cue: a prune-packed removes the fan-out folder just
    after our mkdir made it, so the open finds no folder; the write makes it again."""
    git(tmp_path, "init", "-q")
    objects = GitStore(tmp_path).objects
    data = b"pruned under us\n"
    oid = hashlib.sha1(b"blob %d\0%s" % (len(data), data)).hexdigest()
    real_mkdir = Path.mkdir
    pruned = []

    def mkdir(path: Path, *args: object, **kwargs: object) -> None:
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]
        if path.name == oid[:2] and not pruned:
            pruned.append(path)
            path.rmdir()

    monkeypatch.setattr(Path, "mkdir", mkdir)
    assert objects.write("blob", data) == oid
    monkeypatch.undo()
    assert pruned and git(tmp_path, "cat-file", "blob", oid) == "pruned under us"


# A stress run (-m slow): the default run lands the prune in each window on cue (the tests
# beside this one).
@pytest.mark.slow
def test_a_folder_removed_by_a_concurrent_prune_is_made_again(tmp_path: Path) -> None:
    """``git prune-packed`` removes the fan-out folders it empties, perhaps between our mkdir
    and open; here a thread does the same as fast as it can while objects are written."""
    git(tmp_path, "init", "-q")
    objects = GitStore(tmp_path).objects
    stop = threading.Event()

    def prune() -> None:
        while not stop.is_set():
            for folder in objects.dir.glob("[0-9a-f][0-9a-f]"):
                with contextlib.suppress(OSError):  # not empty, or gone already
                    folder.rmdir()

    pruner = threading.Thread(target=prune)
    pruner.start()
    try:
        blobs = {objects.write("blob", b"object %d\n" % n): n for n in range(3000)}
    finally:
        stop.set()
        pruner.join(timeout=60)
    for blob, n in list(blobs.items())[:: 100]:
        assert git(tmp_path, "cat-file", "blob", blob) == f"object {n}"
    git(tmp_path, "fsck", "--strict")


def test_a_folder_removed_inside_mkdir_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same race one step earlier: the fan-out folder exists for ``mkdir`` and is gone for
    its ``is_dir`` check, so ``mkdir(exist_ok=True)`` raises FileExistsError (seen in the
    benchmark's steady saves beside a repack). The prune is made to land in that window."""
    git(tmp_path, "init", "-q")
    objects = GitStore(tmp_path).objects
    data = b"raced\n"
    oid = hashlib.sha1(b"blob %d\0%s" % (len(data), data)).hexdigest()
    (objects.dir / oid[:2]).mkdir(exist_ok=True)
    real_is_dir = Path.is_dir
    raced = []

    def is_dir(path: Path) -> bool:
        if path.name == oid[:2] and not raced:
            raced.append(path)
            path.rmdir()  # a concurrent prune-packed, between mkdir's EEXIST and this check
        return real_is_dir(path)

    monkeypatch.setattr(Path, "is_dir", is_dir)
    assert objects.write("blob", data) == oid
    monkeypatch.undo()
    assert raced and git(tmp_path, "cat-file", "blob", oid) == "raced"


def test_removing_every_file_gives_the_empty_tree(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    objects = GitStore(tmp_path).objects
    tree = objects.update_tree(None, {"memories/a.yaml": objects.write("blob", b"a")})
    assert objects.update_tree(tree, {"memories/a.yaml": None}) == git_tree(tmp_path, {})


def test_a_sha256_repository_gets_sha256_objects(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--object-format=sha256")
    objects = GitStore(tmp_path).objects
    tree = objects.update_tree(None, {"memories/a.yaml": objects.write("blob", b"a\n")})
    assert len(tree) == 64
    assert tree == git_tree(tmp_path, {"memories/a.yaml": b"a\n"})


def test_an_object_of_the_wrong_kind_is_named(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q")
    objects = GitStore(tmp_path).objects
    blob = objects.write("blob", b"not a tree")
    with pytest.raises(StoreError, match=f"git object {blob} is not a tree; run 'git fsck'"):
        objects.update_tree(blob, {"a": None})


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_many_blobs_go_into_one_pack_git_can_read(tmp_path: Path, object_format: str) -> None:
    from slayer_kb.store.objects import PACK_BLOBS

    git(tmp_path, "init", "-q", f"--object-format={object_format}")
    objects = GitStore(tmp_path).objects
    blobs = [f"learning: blob {n}\n".encode() * (1 + n % 50) for n in range(PACK_BLOBS + 10)] + [b"", b""]
    oids = objects.write_blobs(blobs)
    packs = list((tmp_path / ".git/objects/pack").glob("*.pack"))
    assert len(packs) == 1
    assert not [p for p in (tmp_path / ".git/objects").iterdir() if len(p.name) == 2]  # nothing loose
    for oid, data in zip(oids[:: 97], blobs[:: 97], strict=True):
        assert subprocess.run(["git", "cat-file", "blob", oid], cwd=tmp_path, capture_output=True, check=True).stdout == data
    assert oids[0] == git(tmp_path, "hash-object", "--stdin", data=blobs[0])
    tree = objects.update_tree(None, {f"memories/{n}.yaml": oid for n, oid in enumerate(oids)})
    commit = git(tmp_path, "commit-tree", tree, "-m", "many", env={
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x",
    })
    git(tmp_path, "update-ref", "HEAD", commit)
    git(tmp_path, "fsck", "--strict")
    assert git(tmp_path, "show", f"HEAD:memories/{PACK_BLOBS}.yaml").startswith("learning: blob")


def test_a_zero_padded_folder_mode_is_still_a_folder(tmp_path: Path) -> None:
    """Some old tools wrote folders as 040000. git reads them as folders; so must a save, or it
    would rebuild the folder from nothing and drop every other file in it."""
    git(tmp_path, "init", "-q")
    objects = GitStore(tmp_path).objects
    first = objects.write("blob", b"learning: one\n")
    inner = objects.update_tree(None, {"1.yaml": first})
    padded = objects.write("tree", b"040000 memories\0" + bytes.fromhex(inner))
    second = objects.write("blob", b"learning: two\n")
    tree = objects.update_tree(padded, {"memories/2.yaml": second})
    listing = git(tmp_path, "ls-tree", "-r", "--name-only", tree)
    assert listing.split() == ["memories/1.yaml", "memories/2.yaml"]
    assert objects.added_files(padded, tree, "memories") == ["2.yaml"]


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.lists(st.tuples(st.integers(0, 40), st.booleans()), min_size=1, max_size=6), min_size=1, max_size=8))
def test_a_large_tree_recompressed_in_runs_is_what_git_writes(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, object_format: str,
    steps: list[list[tuple[int, bool]]],
) -> None:
    """Saves one after another in one process: each tree reuses the compressed runs of the last
    and recompresses the ones that changed. Runs of 3 entries here, so runs split and empty."""
    from slayer_kb.store import objects as objects_module

    monkeypatch.setattr(objects_module, "_RUN", 3)
    repo = tmp_path_factory.mktemp("runs")
    git(repo, "init", "-q", f"--object-format={object_format}")
    store = GitStore(repo).objects
    blob = store.write("blob", b"learning: x\n")
    names = {f"{n}.yaml" for n in range(0, 40, 3)}
    tree = store.update_tree(None, {f"memories/{name}": blob for name in names})
    for step in steps:
        changes: dict[str, str | None] = {}
        for n, add in step:
            changes[f"memories/{n}.yaml"] = blob if add else None
            (names.add if add else names.discard)(f"{n}.yaml")
        tree = store.update_tree(tree, changes)
    env = {"GIT_INDEX_FILE": str(repo / ".git" / "reference-index")}
    git(repo, "read-tree", "--empty", env=env)
    if names:
        lines = "".join(f"100644 {blob}\tmemories/{name}\n" for name in names)
        git(repo, "update-index", "--index-info", env=env, data=lines.encode())
    assert tree == git(repo, "write-tree", env=env)
    # Every tree written on the way is a valid loose object: its stream inflates to the bytes
    # its name is the hash of.
    git(repo, "fsck", "--strict", "--no-dangling")


def test_a_warmed_up_store_has_the_head_trees_compressed_for_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from slayer_kb.store import objects as objects_module

    monkeypatch.setattr(objects_module, "_RUN", 3)
    kb = KnowledgeBase.init(tmp_path / "kb")
    for n in range(10):
        kb.save_observation(title=f"Note {n}", content=f"note number {n}")
    warm = KnowledgeBase(tmp_path / "kb")
    warm.warm_up()
    store = warm.store.objects
    memories = store.tree(store.tree_of(warm.store.head() or "")).subtree(b"memories")
    assert memories is not None
    runs = store.tree(memories).runs
    assert len(runs) == 4 and all(done is not None for _count, done in runs)
    warm.save_observation(title="Eleven", content="the eleventh note")
    listed = git(tmp_path / "kb", "ls-tree", "--name-only", "HEAD:memories").split()
    assert listed == sorted([".gitkeep", *(f"{n}.yaml" for n in range(1, 12))])
    git(tmp_path / "kb", "fsck", "--strict", "--no-dangling")
