"""filestat.py (one stat per file, in C on every core or in Python) and listing.py (the cached
listing of the memories folder that the freshness check compares with)."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slayer_kb import KnowledgeBase
from slayer_kb.store import filestat
from slayer_kb.store.filestat import MISSING, NOT_REGULAR, pack_names, signatures, unpack
from slayer_kb.store.listing import SYMLINK, Listing, compare, load, patched, save, take
from testing import examples, git

KINDS = ["file", "empty", "symlink", "dangling", "folder", "fifo", "missing"]


def make(folder: Path, name: str, kind: str) -> None:
    path = folder / name
    if kind == "file":
        path.write_bytes(b"learning: x\n" * (len(name) % 7 + 1))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "symlink":
        target = folder.parent / f"{folder.name}-target"  # outside the folder: no name clashes
        target.write_bytes(b"target")
        path.symlink_to(target)
    elif kind == "dangling":
        path.symlink_to(folder.parent / f"{folder.name}-nowhere")
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)


def expected(folder: Path, name: str) -> tuple[int, int, int]:
    try:
        st = os.lstat(folder / name)
    except OSError:
        return (0, MISSING, 0)
    if not os.path.isfile(folder / name) or os.path.islink(folder / name):
        return (0, NOT_REGULAR, 0)
    return (st.st_mtime_ns, st.st_size, st.st_ino)


# Names as a file system may hold them: any text but NUL and "/", bytes that are not UTF-8
# (decoded with surrogateescape, as os.listdir gives them), "." and ".." excluded.
NAME = st.one_of(
    st.text(st.characters(blacklist_characters="\0/", blacklist_categories=("Cs",)), min_size=1, max_size=40),
    st.binary(min_size=1, max_size=20).map(lambda b: b.replace(b"\0", b"x").replace(b"/", b"x")
                                              .decode("utf-8", "surrogateescape")),
).filter(lambda n: n not in (".", "..") and len(n.encode("utf-8", "surrogateescape")) < 200)


@pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and fstatat are POSIX")
@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(NAME, st.sampled_from(KINDS), min_size=0, max_size=12))
def test_c_and_python_give_the_same_signatures(tmp_path_factory: pytest.TempPathFactory, files: dict[str, str]) -> None:
    folder = tmp_path_factory.mktemp("sigs")
    for name, kind in files.items():
        make(folder, name, kind)
    names = list(files)
    packed = pack_names(names)
    python = filestat._signatures_in_python(folder, packed)
    assert list(unpack(python)) == [expected(folder, name) for name in names]
    if filestat.NATIVE:
        assert filestat._native(os.fspath(folder), packed, 4) == python


@pytest.mark.skipif(not filestat.NATIVE, reason="the C module was not built")
def test_c_splits_a_large_folder_over_threads_in_order(tmp_path: Path) -> None:
    # Enough for three threads (the C module keeps to one below 1,024 names a thread): 16 and 64
    # fall back to one, as they did with 5,000 names; every file made costs the kernel.
    names = [f"{i}.yaml" for i in range(3 * 1024 + 100)]
    for name in names:
        (tmp_path / name).write_bytes(b"x" * (len(name)))
    packed = pack_names(names + ["gone.yaml"])
    for threads in (1, 2, 3, 16, 64):
        assert filestat._native(os.fspath(tmp_path), packed, threads) == filestat._signatures_in_python(tmp_path, packed)


@pytest.mark.skipif(os.name != "posix" or shutil.which("cc") is None, reason="needs a C compiler")
def test_the_c_module_is_built_where_a_compiler_is() -> None:
    # An install that silently fell back to Python would make every freshness check 3x slower.
    assert filestat.NATIVE, "slayer_kb.store._fstat is not built: install with pip install -e '.[dev]' first"


def test_signatures_errors_name_the_folder_and_the_format(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        signatures(tmp_path / "absent", pack_names(["1.yaml"]))
    assert str(tmp_path / "absent") in str(caught.value)
    if filestat.NATIVE:
        with pytest.raises(ValueError, match="names must each end with a NUL byte"):
            filestat._native(os.fspath(tmp_path), b"1.yaml", 1)
    assert signatures(tmp_path, b"") == b""


# -- the listing ----------------------------------------------------------------------------------


def age(folder: Path, seconds: float = 3600) -> None:
    """Make the folder's mtime old, as a folder nobody created a file in for an hour."""
    past = time.time() - seconds
    os.utime(folder, (past, past))


def test_take_lists_memory_files_only_and_marks_non_files(tmp_path: Path) -> None:
    (tmp_path / "1.yaml").write_text("learning: a\n")
    (tmp_path / "2.yaml").symlink_to(tmp_path / "1.yaml")
    (tmp_path / ".hidden.yaml").write_text("x")
    (tmp_path / "notes.txt").write_text("x")
    found = take(tmp_path).signatures()
    st = os.stat(tmp_path / "1.yaml")
    assert found == {"1": (st.st_mtime_ns, st.st_size, st.st_ino), "2": SYMLINK}
    assert take(tmp_path / "absent") == Listing(None, True, b"", b"")


def current(cached: Listing, folder: Path) -> Listing | None:
    return compare(cached, folder)[0]


def test_a_young_folder_is_listed_again_and_an_old_one_is_trusted(tmp_path: Path) -> None:
    (tmp_path / "1.yaml").write_text("learning: a\n")
    young = take(tmp_path)
    assert not young.settled
    # Unchanged, but the folder was too young to stand for its names: listed again, same files
    # (a settled listing of them if the machine was slow enough for the folder to age meanwhile).
    again, changed = compare(young, tmp_path)
    assert again is not None and (again.names, again.packed, changed) == (young.names, young.packed, [])
    # Listed again once old enough: a settled listing comes back, to be cached in its place.
    age(tmp_path)
    settled, changed = compare(young, tmp_path)
    assert settled is not None and settled.settled and settled.names == young.names and changed == []
    assert compare(settled, tmp_path) == (settled, [])


def test_files_edited_in_place_are_named_and_others_are_not(tmp_path: Path) -> None:
    for name in ("1.yaml", "2.yaml", "3.yaml"):
        (tmp_path / name).write_text("learning: a\n")
    age(tmp_path)
    cached = take(tmp_path)
    (tmp_path / "2.yaml").write_text("learning: b, longer\n")
    (tmp_path / "3.yaml").unlink()
    (tmp_path / "3.yaml").symlink_to(tmp_path / "1.yaml")  # same name, now a symlink
    # The folder's change hidden (as if its mtime had not moved): the stats alone tell.
    age(tmp_path)
    hidden = Listing(take(tmp_path).folder, True, cached.names, cached.packed)
    now, changed = compare(hidden, tmp_path)
    assert now is None and sorted(changed or []) == ["2", "3"]
    # A young folder is listed again; the same names in the same order, one file edited.
    young = take(tmp_path)
    (tmp_path / "1.yaml").write_text("learning: c, longer\n")
    assert compare(young, tmp_path) == (None, ["1"])
    (tmp_path / "4.yaml").write_text("new")
    assert compare(young, tmp_path) == (None, None)  # a new name: only a full scan can tell


def test_patched_follows_edits_additions_and_removals_in_sorted_order(tmp_path: Path) -> None:
    for name in ("1.yaml", "3.yaml", "5.yaml"):
        (tmp_path / name).write_text("learning: a\n")
    cached = take(tmp_path)
    (tmp_path / "3.yaml").write_text("learning: b, longer\n")
    (tmp_path / "2.yaml").write_text("learning: new\n")
    (tmp_path / "6.yaml").write_text("learning: new too\n")
    (tmp_path / "5.yaml").unlink()
    now = take(tmp_path).signatures()
    result = patched(cached, {mid: now[mid] for mid in ("3", "2", "6")}, gone=["5", "absent"])
    assert (result.names, result.packed) == (take(tmp_path).names, take(tmp_path).packed)
    assert patched(cached, {"1": SYMLINK}).signatures()["1"] == SYMLINK
    assert patched(cached, {}) == cached


def test_the_cache_is_bound_to_its_state_and_survives_damage(tmp_path: Path) -> None:
    folder = tmp_path / "memories"
    folder.mkdir()
    (folder / "1.yaml").write_text("learning: a\n")
    cache = tmp_path / "listing"
    snapshot = take(folder)
    save(cache, snapshot, 12345)
    assert load(cache, 12345) == snapshot
    assert load(cache, 54321) is None  # written for another index state
    data = cache.read_bytes()
    for damaged in (data[:-1], data[: len(data) // 2], b"not json\n" + data, b"", data + b"x"):
        cache.write_bytes(damaged)
        assert load(cache, 12345) is None
    assert not list(tmp_path.glob("listing.*.tmp"))


def test_a_listing_with_a_vanished_file_is_never_cached(tmp_path: Path) -> None:
    (tmp_path / "1.yaml").write_text("a")
    names = pack_names(["1.yaml", "2.yaml"])
    torn = Listing((1, 1, 1), True, names, signatures(tmp_path, names))
    assert not torn.complete and torn.signatures() == {"1": take(tmp_path).signatures()["1"]}
    save(tmp_path / "listing", torn, 1)
    assert not (tmp_path / "listing").exists()


def test_a_kb_whose_folder_is_old_sees_in_place_edits_creates_and_deletes(example_kb: KnowledgeBase) -> None:
    """The freshness check's fast path: the folder unchanged, every file stat'ed against the
    cached listing. Each change behind the tool's back is seen by the next search."""
    kb = example_kb
    memories = kb.root / "memories"
    age(memories)
    kb.ensure_fresh()
    kb.index.close()
    cached = load(kb.root / ".slayer-kb" / "index" / "listing", kb.index._read_state()["digest"])
    assert cached is not None and cached.settled and current(cached, memories) is cached
    assert kb.ensure_fresh() is None  # nothing changed: answered from the cached listing

    path = memories / "2.yaml"
    path.write_text(path.read_text().replace("Time zones:", "Time zones wombatfast:"))
    assert kb.index.stale_files() == ["2"]
    report = kb.ensure_fresh()  # re-reads that file alone, and patches the cached listing
    assert report is not None and report.updated == 1 and not report.rebuilt
    state = kb.index._read_state()
    assert load(kb.root / ".slayer-kb" / "index" / "listing", state["digest"]) is not None
    assert [h["id"] for h in kb.search("wombatfast").memories] == ["2"]
    # A save over an existing memory keeps a listing for the state it makes. (The hand edit is
    # committed first: an update refuses to rewrite uncommitted work.)
    git(kb.root, "commit", "-q", "-m", "hand edit", "--", "memories/2.yaml")
    kb.update("2", title="Time zones, wombat")
    state = kb.index._read_state()
    assert load(kb.root / ".slayer-kb" / "index" / "listing", state["digest"]) is not None
    assert kb.index.stale_files() == []

    age(memories)
    kb.ensure_fresh()
    (memories / "900.yaml").write_text("learning: |\n  a numbatfast note\ncreated_at: '2026-11-01T10:00:00Z'\n")
    assert [h["id"] for h in kb.search("numbatfast").memories] == ["900"]

    age(memories)
    kb.ensure_fresh()
    (memories / "900.yaml").unlink()
    assert kb.search("numbatfast").memories == []


def test_a_state_whose_digest_disagrees_with_its_rows_is_mended_by_one_sync(example_kb: KnowledgeBase) -> None:
    """A crash between the manifest rows' commit and the state's write leaves a digest no scan
    matches: one sync, which re-indexes nothing, mends it, and the checks after it are cheap."""
    kb = example_kb
    kb.ensure_fresh()
    state_path = kb.root / ".slayer-kb" / "index" / "manifest.json"
    state = json.loads(state_path.read_text())
    state_path.write_text(json.dumps({**state, "digest": (state["digest"] + 1) % (1 << 64)}))
    assert kb.index.stale_files() is None
    report = kb.ensure_fresh()
    assert report is not None and (report.updated, report.removed, report.rebuilt) == (0, 0, False)
    assert json.loads(state_path.read_text())["digest"] == state["digest"]
    assert kb.index.stale_files() == []
