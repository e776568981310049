"""The sentence-vector cache kept within ``SLAYER_KB_CACHE_MAX_MB`` (search/eviction.py): rows
under keys no longer read go first, then the texts used least recently, each text's vectors
together; a look-up marks a text used at most once a day; a cache of the version before is
migrated in place, by two processes at once; ``maintenance`` says what it freed; a filler
evicts after it wrote; vectors a KB's memories use are made again after eviction. Real SQLite
files, real KBs and processes."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import encoder, eviction, filler, sentences
from slayer_kb.search.background import SentenceFiller
from slayer_kb.search.cachedir import folder
from testing import Watcher, eventually

UNIT_BYTES = 8 * encoder.DIMENSIONS  # a text of eight sentences' units
OLD_SCHEMA = "CREATE TABLE sentences (model TEXT, hash TEXT, vec BLOB, PRIMARY KEY (model, hash)) WITHOUT ROWID"


def _digest(n: int) -> str:
    return f"{n:064x}"


def _store_texts(numbers: range, model: str = encoder.MODEL_KEY) -> None:
    """Texts as the filler keeps them: a whole vector under ``model`` and, under MODEL_KEY, the units too."""
    sentences.store(model, {_digest(n): bytes([n % 100]) * encoder.DIMENSIONS for n in numbers})
    if model == encoder.MODEL_KEY:
        sentences.store(encoder.UNITS_KEY, {_digest(n): bytes([n % 100]) * UNIT_BYTES for n in numbers})


@contextlib.contextmanager
def _db() -> Iterator[sqlite3.Connection]:
    with contextlib.closing(sqlite3.connect(folder() / sentences.FILE, isolation_level=None)) as db:
        yield db


def _used_days_ago(days: dict[int, int]) -> None:
    """Text n last used ``days[n]`` days ago."""
    with _db() as db:
        db.executemany("UPDATE used SET day = ? WHERE hash = ?", [(sentences.today() - ago, _digest(n)) for n, ago in days.items()])


def _kept(model: str) -> set[int]:
    with _db() as db:
        return {int(h, 16) for (h,) in db.execute("SELECT hash FROM sentences WHERE model = ?", (model,))}


def _made(kb: KnowledgeBase) -> list[str]:
    """NOTES saved into ``kb`` and their vectors made in this process (no filler of the KB's own
    started); their texts' digests, in NOTES' order."""
    kb.index.background_vectors = False
    for title, learning in NOTES:
        kb.save_observation(title=title, content=learning, project="ops")
    assert kb.index.fill_sentences() == 2
    return [sentences.text_hash(f"{title}\n{learning}") for title, learning in NOTES]


def _in_use() -> int:
    with _db() as db:
        pages, free, size = (db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "freelist_count", "page_size"))
    return int((pages - free) * size)


def test_the_cache_is_kept_within_its_bound_least_recently_used_first() -> None:
    _store_texts(range(100))
    _used_days_ago({n: 100 - n for n in range(100)})  # text 0 used longest ago, text 99 yesterday
    limit = _in_use() // 2
    trimmed = eviction.trim(limit)
    kept = _kept(encoder.MODEL_KEY)
    assert trimmed.texts == 100 - len(kept) and 40 <= trimmed.texts <= 70 and trimmed.unread_rows == 0
    assert kept == set(range(trimmed.texts, 100))  # the newest, and each text's vectors together
    assert _kept(encoder.UNITS_KEY) == kept
    assert _in_use() <= limit * eviction.LOW_WATER
    assert eviction.trim(limit).texts == 0  # within the bound: nothing more


def test_rows_under_keys_no_longer_read_go_first_even_used_today() -> None:
    retired = "all-MiniLM-L6-v2-int8-mean-v0"
    assert retired not in eviction.READ_KEYS
    sentences.store(retired, {_digest(n): bytes(UNIT_BYTES * 2) for n in range(1000, 1100)})
    _store_texts(range(50))
    _used_days_ago({n: 300 for n in range(50)})
    limit = _in_use() // 2
    trimmed = eviction.trim(limit)
    assert trimmed.texts == 0 and 0 < trimmed.unread_rows == 100 - len(_kept(retired))
    assert _kept(encoder.MODEL_KEY) == _kept(encoder.UNITS_KEY) == set(range(50))
    again = eviction.trim(_in_use() // 4)  # the rest of the old key's rows, then the oldest texts
    assert _kept(retired) == set() and again.texts > 0


def test_keys_another_installed_version_reads_are_evicted_by_last_use_not_first(tmp_path: Path) -> None:
    """Two versions sharing the cache, each reading keys of its own: each evicted the other's
    vectors first, as keys it never reads. Keys another version read lately go by their texts'
    last use, with this version's; one not read for ``KEY_KEPT_DAYS`` goes first."""
    other = ("all-MiniLM-L6-v2-int8-mean-passages128-late-units-v5", "all-MiniLM-L6-v2-int8-late-units-v5")
    _store_texts(range(100))
    for key in other:
        sentences.store(key, {_digest(n): bytes(UNIT_BYTES) for n in range(100)})
    sentences.mark_daily(tmp_path / "marked-day", list, other)  # the other version's filler, today
    _used_days_ago({n: 100 - n for n in range(100)})
    trimmed = eviction.trim(_in_use() // 2)
    kept = _kept(encoder.MODEL_KEY)
    assert trimmed.unread_rows == 0 and 0 < trimmed.texts == 100 - len(kept)
    assert _kept(other[0]) == _kept(other[1]) == _kept(encoder.UNITS_KEY) == kept == set(range(trimmed.texts, 100))
    with _db() as db:
        db.execute("UPDATE read_keys SET day = day - ? WHERE model = ?", (eviction.KEY_KEPT_DAYS + 1, other[0]))
    again = eviction.trim(_in_use() * 3 // 4)  # every row of the key not read lately first, then the oldest texts
    assert (again.unread_rows, _kept(other[0])) == (len(kept), set())
    assert _kept(other[1]) == _kept(encoder.MODEL_KEY) == set(range(trimmed.texts + again.texts, 100))


def test_every_key_this_version_reads_is_kept_before_the_others() -> None:
    """A key added to encoder.py and left out of READ_KEYS would be evicted first."""
    keys = {value for name, value in vars(encoder).items() if name.endswith("_KEY") and isinstance(value, str)}
    assert keys - set(eviction.READ_KEYS) == {encoder.RETIRED_KEY}


def test_a_look_up_marks_a_text_used_once_a_day() -> None:
    _store_texts(range(3))
    _used_days_ago({0: 5, 1: 5, 2: 5})
    with _db() as other:
        version = other.execute("PRAGMA data_version").fetchone()[0]
        assert set(sentences.lookup(encoder.UNITS_KEY, [_digest(0)])) == {_digest(0)}
        assert sentences.held(encoder.MODEL_KEY, [_digest(1)]) == {_digest(1)}
        assert set(sentences.lookup(encoder.UNITS_KEY, [_digest(2)], mark=False)) == {_digest(2)}  # a search's
        marked = other.execute("PRAGMA data_version").fetchone()[0]
        days = dict(other.execute("SELECT hash, day FROM used").fetchall())
        assert days == {_digest(0): sentences.today(), _digest(1): sentences.today(), _digest(2): sentences.today() - 5}
        assert marked != version
        sentences.lookup(encoder.UNITS_KEY, [_digest(0)])
        sentences.held(encoder.MODEL_KEY, [_digest(1)])
        assert other.execute("PRAGMA data_version").fetchone()[0] == marked  # used today already: no write


OPEN_AT_ONCE = """
import os, sys, time
from pathlib import Path
from slayer_kb.search import encoder, sentences
here = Path(sys.argv[1])
(here / f"ready-{sys.argv[2]}").touch()
while not (here / "go").exists():
    time.sleep(0.005)
found = sentences.lookup(encoder.MODEL_KEY, [f"{n:064x}" for n in range(3)])
sentences.store(encoder.MODEL_KEY, {f"{100 + int(sys.argv[2]):064x}": bytes(384)})
print(len(found))
"""


def test_a_cache_of_the_version_before_is_migrated_in_place_by_two_processes_at_once(tmp_path: Path) -> None:
    folder().mkdir(parents=True)
    with _db() as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(OLD_SCHEMA)
        db.executemany("INSERT INTO sentences VALUES (?, ?, ?)", [(encoder.MODEL_KEY, _digest(n), bytes([n]) * 384) for n in range(4)])
    procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT_ONCE, str(tmp_path), str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for n in range(2)]
    eventually(lambda: all((tmp_path / f"ready-{n}").exists() for n in range(2)), "both processes to be ready")
    (tmp_path / "go").touch()
    outcomes = [proc.communicate(timeout=120) for proc in procs]
    assert [(proc.returncode, out, err) for proc, (out, err) in zip(procs, outcomes, strict=True)] == [(0, "3\n", "")] * 2
    assert sentences.lookup(encoder.MODEL_KEY, [_digest(n) for n in range(4)]) == {_digest(n): bytes([n]) * 384 for n in range(4)}
    assert _kept(encoder.MODEL_KEY) == {0, 1, 2, 3, 100, 101}
    with _db() as db:
        db.execute("INSERT OR REPLACE INTO sentences VALUES (?, ?, ?)", (encoder.MODEL_KEY, _digest(7), bytes(384)))  # as the version before writes
        days = dict(db.execute("SELECT hash, day FROM used").fetchall())
    assert set(days) == {_digest(n) for n in (0, 1, 2, 3, 100, 101)} and set(days.values()) == {sentences.today()}
    with _db() as db:
        db.execute("DELETE FROM used WHERE hash = ?", (_digest(3),))  # never looked up since the migration
    eviction.trim(1)
    assert _kept(encoder.MODEL_KEY) == set()  # every text went, the unmarked ones (7, 3) too


def test_texts_never_used_since_the_migration_go_before_those_used(tmp_path: Path) -> None:
    folder().mkdir(parents=True)
    with _db() as db:
        db.execute(OLD_SCHEMA)
        db.executemany("INSERT INTO sentences VALUES (?, ?, ?)", [(encoder.UNITS_KEY, _digest(n), bytes(UNIT_BYTES)) for n in range(60)])
    assert len(sentences.lookup(encoder.UNITS_KEY, [_digest(n) for n in range(30, 60)])) == 30
    trimmed = eviction.trim(_in_use() * 4 // 5)
    assert 0 < trimmed.texts < 30 and _kept(encoder.UNITS_KEY) >= set(range(30, 60))


def test_maintenance_keeps_the_cache_within_its_bound_and_says_what_it_freed(empty_kb: KnowledgeBase, invoke_cli) -> None:  # noqa: ANN001
    _store_texts(range(300))
    _used_days_ago({n: 300 - n for n in range(300)})
    before = eviction.on_disk()
    assert before > 1_200_000
    proc = invoke_cli("--kb", empty_kb.root, "maintenance", env={"SLAYER_KB_CACHE_MAX_MB": "1"}, check=True)
    removed = 300 - len(_kept(encoder.MODEL_KEY))
    after = eviction.on_disk()
    assert proc.stdout.splitlines()[3] == (f"vector cache: {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB (at most 1 MB; "
                                           f"removed the vectors of {removed} texts used least recently)")
    assert _kept(encoder.MODEL_KEY) == set(range(removed, 300)) and after <= 1_000_000  # its free pages given back
    again = json.loads(invoke_cli("--kb", empty_kb.root, "maintenance", "--json", env={"SLAYER_KB_CACHE_MAX_MB": "1"},
                                  check=True).stdout)
    assert again["vector_cache"] == {"before": after, "after": after, "limit": 1_000_000, "unread_rows": 0, "texts": 0,
                                     "problem": None}


def _auto_vacuum() -> int:
    with _db() as db:
        return int(db.execute("PRAGMA auto_vacuum").fetchone()[0])


def test_maintenance_gives_the_free_pages_back_a_step_at_a_time_while_stores_land(
        empty_kb: KnowledgeBase, invoke_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """A VACUUM held the cache's write lock while it rewrote the whole file (tens of seconds at
    2 GB): a warm server's store that waited past its 30 s was skipped. A cache gives its free
    pages back a few pages a transaction, and a store that does not wait lands between two."""
    _store_texts(range(300))
    assert _auto_vacuum() == 2  # INCREMENTAL: made so
    _used_days_ago({n: 300 - n for n in range(300)})
    monkeypatch.setattr(eviction, "_STEP_BYTES", 32 * 4096)
    real, landed = eviction._vacuum_step, []

    def step_then_store(db: sqlite3.Connection, pages: int) -> None:
        real(db, pages)
        with monkeypatch.context() as waits:
            waits.setattr(sentences, "_TIMEOUT", 0)  # as a store behind a long write would give up
            landed.append(sentences.store(encoder.MODEL_KEY, {_digest(1000 + len(landed)): bytes(encoder.DIMENSIONS)}))

    monkeypatch.setattr(eviction, "_vacuum_step", step_then_store)
    proc = invoke_cli("--kb", empty_kb.root, "maintenance", env={"SLAYER_KB_CACHE_MAX_MB": "1"}, check=True)
    assert "removed the vectors of" in proc.stdout and len(landed) >= 3 and all(landed)
    assert _kept(encoder.MODEL_KEY) >= set(range(1000, 1000 + len(landed)))
    assert eviction.on_disk() == _in_use() <= 1_000_000  # every free page given back


def test_a_cache_made_without_auto_vacuum_gets_it_at_a_vacuum_only_if_small(
        empty_kb: KnowledgeBase, invoke_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    folder().mkdir(parents=True)
    with _db() as db:  # as a version before made it
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(OLD_SCHEMA)
    _store_texts(range(300))
    assert _auto_vacuum() == 0
    with monkeypatch.context() as small:
        small.setattr(eviction, "_CONVERT_MAX", 100_000)  # its pages in use after eviction are more
        kept = invoke_cli("--kb", empty_kb.root, "maintenance", env={"SLAYER_KB_CACHE_MAX_MB": "1"}, check=True)
    assert (_auto_vacuum(), eviction.on_disk() > 1_000_000 >= _in_use()) == (0, True)  # no VACUUM: its free pages kept
    with _db() as db:
        free = db.execute("PRAGMA freelist_count").fetchone()[0] * db.execute("PRAGMA page_size").fetchone()[0]
    assert kept.stdout.splitlines()[-1] == (
        f"warning: the vector cache {folder() / sentences.FILE} was made by an earlier version and holds "
        f"{_in_use() / 1e6:.1f} MB, more than maintenance rewrites at once (0.1 MB) while stores wait, so its "
        f"{free / 1e6:.1f} MB of free pages stay in the file. To shrink it, delete it while no slayer-kb process "
        "runs: the vectors KBs need are made again, in the background.")
    invoke_cli("--kb", empty_kb.root, "maintenance", env={"SLAYER_KB_CACHE_MAX_MB": "1"}, check=True)
    assert (_auto_vacuum(), eviction.on_disk() == _in_use() <= 1_000_000) == (2, True)


def test_maintenance_says_why_it_could_not_trim_the_cache(empty_kb: KnowledgeBase, invoke_cli) -> None:  # noqa: ANN001
    _store_texts(range(300))
    path, size = folder() / sentences.FILE, f"{eviction.on_disk() / 1e6:.1f}"
    with _unwritable(path):
        proc = invoke_cli("--kb", empty_kb.root, "maintenance", env={"SLAYER_KB_CACHE_MAX_MB": "1"}, check=True)
    assert proc.stdout.splitlines()[3:] == [
        f"vector cache: {size} MB -> {size} MB (at most 1 MB)",
        f"warning: the vector cache {path} could not be trimmed: attempt to write a readonly database. Free space on "
        "its disk or let this user write it, then run slayer-kb maintenance again."]
    assert len(_kept(encoder.MODEL_KEY)) == 300


def test_a_bad_bound_is_refused_naming_the_fix(example_kb_read_only: KnowledgeBase, invoke_cli) -> None:  # noqa: ANN001
    proc = invoke_cli("--kb", example_kb_read_only.root, "stats", env={"SLAYER_KB_CACHE_MAX_MB": "2GB"})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == ("Error: SLAYER_KB_CACHE_MAX_MB is '2GB', not a number of megabytes; set it to a whole "
                           "number above 0 (the default is 2048) or unset it.\n")
    huge = "1" + "0" * 305  # past floats' range: was a traceback of maintenance
    proc = invoke_cli("--kb", example_kb_read_only.root, "maintenance", env={"SLAYER_KB_CACHE_MAX_MB": huge})
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr == (f"Error: SLAYER_KB_CACHE_MAX_MB is {huge!r}; the most it may be is 1000000000 megabytes. "
                           "Set it to at most 1000000000 (the default is 2048) or unset it.\n")


def test_a_filler_evicts_only_over_the_bound_and_never_beside_another_eviction(monkeypatch: pytest.MonkeyPatch) -> None:
    _store_texts(range(300))
    monkeypatch.setenv("SLAYER_KB_CACHE_MAX_MB", "10")
    assert eviction.after_fill() is None  # a file within the bound: nothing opened
    monkeypatch.setenv("SLAYER_KB_CACHE_MAX_MB", "1")
    fd = os.open(folder() / eviction.LOCK, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as another process evicting
        assert eviction.after_fill() is None and len(_kept(encoder.MODEL_KEY)) == 300
    finally:
        os.close(fd)
    with _unwritable(folder() / eviction.LOCK):  # a lock this user cannot open: none taken
        assert eviction.after_fill() is None and len(_kept(encoder.MODEL_KEY)) == 300
    trimmed = eviction.after_fill()
    assert trimmed is not None and trimmed.texts == 300 - len(_kept(encoder.MODEL_KEY)) > 0
    assert _in_use() <= 900_000 and trimmed.after == trimmed.before  # no VACUUM but at maintenance


NOTES = [
    ("Image sizes in the newsletter", "Images are resized to 600 pixels wide. Animated GIFs are replaced by their first frame."),
    ("Reminder texts before appointments", "One text the day before. A second one an hour before."),
]
COVERAGE_NOTE = ("Sentence vectors cover 0 of 2 memories; the others are ranked by their static vectors until "
                 "theirs are made, in the background.")


@pytest.mark.usefixtures("encoder_on")
def test_vectors_a_kb_uses_are_made_again_after_eviction(empty_kb: KnowledgeBase) -> None:
    digests = _made(empty_kb)
    made = {key: sentences.lookup(key, digests) for key in (encoder.MODEL_KEY, encoder.UNITS_KEY)}
    assert all(len(found) == 2 for found in made.values())
    assert eviction.trim(1).texts == 2 and _kept(encoder.MODEL_KEY) == _kept(encoder.UNITS_KEY) == set()
    # The KB's index still holds its vectors; its next process makes the units again, once.
    again = KnowledgeBase(empty_kb.root)
    again.index.background_vectors = False
    assert again.index.fill_sentences() == 0 and again.sentence_coverage() == (2, 2)
    assert {key: sentences.lookup(key, digests) for key in made} == made
    # Rebuilt, the index finds none in the cache: a search says what is missing until the filler made them.
    eviction.trim(1)
    again.reindex()
    assert again.sentence_coverage() == (0, 2)
    assert COVERAGE_NOTE in again.search("newsletter images").notes
    assert again.index.fill_sentences() == 2 and again.sentence_coverage() == (2, 2)
    assert {key: sentences.lookup(key, digests) for key in made} == made
    again.close()


def _fillers(root: Path) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError):
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"slayer_kb.daemon.sentences" in argv and str(root).encode() in argv:
                found.append(int(proc.name))
    return found


@pytest.mark.slow  # covered by a default test (docs/testing.md, "What is in -m slow")
@pytest.mark.usefixtures("encoder_on")
@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="finds the filler in /proc")
def test_the_detached_filler_keeps_the_cache_within_its_bound(empty_kb: KnowledgeBase) -> None:
    """A save with no server: the filler it starts makes the vector, then evicts the texts used
    least recently, never the one it made."""
    root = empty_kb.root
    empty_kb.close()
    _store_texts(range(300))
    _used_days_ago({n: 30 for n in range(300)})
    env = {**os.environ, "SLAYER_KB_SERVER": "off", "SLAYER_KB_CACHE_MAX_MB": "1"}
    saved = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "save", "--title", NOTES[0][0],
                            NOTES[0][1], "--json"], capture_output=True, text=True, env=env, timeout=120, check=True)
    assert json.loads(saved.stdout)["memory_id"]
    digest = sentences.text_hash(f"{NOTES[0][0]}\n{NOTES[0][1]}")
    try:
        eventually(lambda: _in_use() <= 900_000 and sentences.held(encoder.UNITS_KEY, [digest]), "the filler to evict", 120)
    finally:
        for pid in _fillers(root):  # it would linger for the next saves; the test is over
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    assert sentences.held(encoder.MODEL_KEY, [digest]) == {digest}
    assert 0 < len(_kept(encoder.MODEL_KEY) - {int(digest, 16)}) < 300


@pytest.mark.usefixtures("encoder_on")
def test_the_warm_servers_filler_keeps_the_cache_within_its_bound(empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's thread makes the KB's vectors, then evicts the texts used least recently."""
    empty_kb.index.background_vectors = False  # the server makes them, not a filler this process starts
    for title, learning in NOTES:
        empty_kb.save_observation(title=title, content=learning, project="ops")
    empty_kb.close()
    _store_texts(range(300))
    _used_days_ago({n: 30 for n in range(300)})
    monkeypatch.setenv("SLAYER_KB_CACHE_MAX_MB", "1")
    digests = {sentences.text_hash(f"{title}\n{learning}") for title, learning in NOTES}
    watcher = Watcher(empty_kb.root)
    try:
        watcher.wait_for_line("Watching")
        eventually(lambda: _in_use() <= 900_000 and sentences.held(encoder.UNITS_KEY, digests) == digests,
                   "the server's filler to make the vectors and evict", 120)
    finally:
        watcher.stop()
    assert sentences.held(encoder.MODEL_KEY, digests) == digests
    assert 0 < len(_kept(encoder.MODEL_KEY) - {int(d, 16) for d in digests}) < 300


@contextlib.contextmanager
def _unwritable(path: Path) -> Iterator[None]:
    """``path`` a file this process cannot write (root writes past a file's mode: immutable then)."""
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield
        path.chmod(0o644)
        return
    if subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
        pytest.skip("root here cannot make a file immutable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_a_cache_of_the_version_before_this_user_cannot_write_is_read() -> None:
    folder().mkdir(parents=True)
    with _db() as db:
        db.execute(OLD_SCHEMA)
        db.executemany("INSERT INTO sentences VALUES (?, ?, ?)", [(encoder.MODEL_KEY, _digest(n), bytes([n]) * 384) for n in range(3)])
    before = (folder() / sentences.FILE).read_bytes()
    with _unwritable(folder() / sentences.FILE):
        assert sentences.lookup(encoder.MODEL_KEY, [_digest(n) for n in range(4)]) == {_digest(n): bytes([n]) * 384 for n in range(3)}
        assert sentences.held(encoder.MODEL_KEY, [_digest(n) for n in range(4)]) == {_digest(n) for n in range(3)}
        assert not sentences.store(encoder.MODEL_KEY, {_digest(9): bytes(384)})
    assert (folder() / sentences.FILE).read_bytes() == before


@pytest.mark.usefixtures("encoder_on")
def test_an_eviction_between_a_fillers_stores_never_leaves_a_whole_vector_without_its_units(
        empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another process evicting everything each time the filler opens the cache to store."""
    empty_kb.index.background_vectors = False
    for title, learning in NOTES:
        empty_kb.save_observation(title=title, content=learning, project="ops")
    digests = [sentences.text_hash(f"{title}\n{learning}") for title, learning in NOTES]
    real, evicting = sentences.connect, []

    def evicted_first() -> sqlite3.Connection | None:
        """An eviction of everything whenever the cache holds a text's units without its whole vector."""
        if not evicting and (folder() / sentences.FILE).exists():
            with _db() as db:
                units, whole = ({h for (h,) in db.execute("SELECT hash FROM sentences WHERE model = ?", (key,))}
                                for key in (encoder.UNITS_KEY, encoder.MODEL_KEY))
            if (units - whole) & set(digests):
                evicting.append(True)
                eviction.trim(1)
                evicting.clear()
        return real()

    monkeypatch.setattr(sentences, "connect", evicted_first)
    assert empty_kb.index.fill_sentences() == 2
    monkeypatch.setattr(sentences, "connect", real)
    assert sentences.held(encoder.MODEL_KEY, digests) == sentences.held(encoder.UNITS_KEY, digests) == set(digests)


def _encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many texts each run of the model in this process is given, from now on."""
    runs: list[int] = []
    real = encoder.Encoder.encode_with_units

    def counted(self: encoder.Encoder, texts: list[str], *args: object, **kwargs: object) -> object:
        runs.append(len(texts))
        return real(self, texts, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(encoder.Encoder, "encode_with_units", counted)
    return runs


def _filled(root: Path) -> int:
    """A new process's fill of the KB's sentence vectors (a KnowledgeBase checks every text's units once)."""
    kb = KnowledgeBase(root)
    kb.index.background_vectors = False
    try:
        return kb.index.fill_sentences()
    finally:
        kb.close()


@pytest.mark.usefixtures("encoder_on")
def test_units_the_cache_cannot_keep_are_made_once_and_never_again(empty_kb: KnowledgeBase, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "a-file" / "cache"))  # a folder that cannot be made
    empty_kb.index.background_vectors = False
    for title, learning in NOTES:
        empty_kb.save_observation(title=title, content=learning, project="ops")
    empty_kb.close()
    runs = _encoded(monkeypatch)
    assert (_filled(empty_kb.root), sum(runs)) == (2, 2)  # each text once, though its units were not kept
    assert (_filled(empty_kb.root), sum(runs)) == (0, 2)
    # A cache without the texts (evicted, say) that cannot be written: their units are not made.
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "cache"))
    folder().mkdir()
    with _db() as db:
        db.execute(OLD_SCHEMA)
    with _unwritable(folder() / sentences.FILE):
        assert (_filled(empty_kb.root), sum(runs)) == (0, 2)


def test_a_store_that_found_the_cache_busy_leaves_it_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that waited past the timeout behind another process's write (a VACUUM of
    ``maintenance``) counted the cache as one this process cannot write to, for good: a warm
    server then stopped marking its KB's texts used and making lost units. It is tried again."""
    _store_texts(range(1))
    monkeypatch.setattr(sentences, "_TIMEOUT", 0.1)
    with _db() as other:
        other.execute("BEGIN IMMEDIATE")
        assert sentences.store(encoder.MODEL_KEY, {_digest(1): b"\x01" * 384}) is False
        assert sentences.keeps() is False
        other.execute("ROLLBACK")
    assert sentences.keeps() is True
    assert sentences.store(encoder.MODEL_KEY, {_digest(1): b"\x01" * 384}) is True


@pytest.mark.usefixtures("encoder_on")
def test_a_units_store_that_found_the_cache_busy_is_tried_again_at_the_next_pass(
        empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A process's check of every memory's units ended for good at a store that found the
    cache busy (another process's long write): its units were never made in that process."""
    digests = _made(empty_kb)
    empty_kb.close()
    with _db() as db:  # their units lost (evicted): only the whole vectors are left
        db.executemany("DELETE FROM sentences WHERE model = ?", [(encoder.MODEL_KEY,), (encoder.UNITS_KEY,)])
    server = KnowledgeBase(empty_kb.root)
    server.index.background_vectors = False
    real, kept = sentences.store_together, []

    def busy_first(found, replaces=None):  # noqa: ANN001, ANN202
        if kept:
            kept.append(real(found, replaces))
            return kept[-1]
        with monkeypatch.context() as waits, _db() as other:
            waits.setattr(sentences, "_TIMEOUT", 0)  # as a store behind a long write gives up
            other.execute("BEGIN IMMEDIATE")
            kept.append(real(found, replaces))
            other.execute("ROLLBACK")
        return kept[-1]

    monkeypatch.setattr(sentences, "store_together", busy_first)
    try:
        server.index.fill_sentences(batch=1, workers=1)
        assert kept[0] is False and sentences.keeps()
        server.index.fill_sentences(batch=1, workers=1)  # the server's next pass
    finally:
        server.close()
    assert sorted(sentences.held(encoder.UNITS_KEY, digests)) == sorted(digests)


@pytest.mark.usefixtures("encoder_on")
def test_a_kb_only_searched_keeps_its_texts_over_ones_used_since(empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A warm server's process: its first pass made the KB's vectors; days later it has only
    searched the KB, and its filler's pass (every 30 seconds) marks the KB's texts used."""
    digests = set(_made(empty_kb))
    _store_texts(range(300))  # other KBs' texts
    later = sentences.today() + 10
    monkeypatch.setattr(sentences, "today", lambda: later)
    _used_days_ago({n: 1 for n in range(300)})
    assert empty_kb.search("newsletter images").memories[0]["title"] == NOTES[0][0]
    assert empty_kb.index.fill_sentences() == 0
    assert eviction.trim(_in_use() * 2 // 3).texts > 0
    assert sentences.held(encoder.MODEL_KEY, digests) == sentences.held(encoder.UNITS_KEY, digests) == digests


@pytest.mark.usefixtures("encoder_on")
def test_a_pass_that_made_only_units_keeps_the_cache_within_its_bound(empty_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's thread finds every final vector made and the KB's units evicted: its pass
    makes only units, then evicts the texts used least recently."""
    digests = set(_made(empty_kb))
    empty_kb.close()
    with _db() as db:
        db.executemany("DELETE FROM sentences WHERE model = ?", [(encoder.MODEL_KEY,), (encoder.UNITS_KEY,)])
    _store_texts(range(300))
    _used_days_ago({n: 30 for n in range(300)})
    monkeypatch.setenv("SLAYER_KB_CACHE_MAX_MB", "1")
    kb = KnowledgeBase(empty_kb.root)  # a new process checks every text's units
    thread = SentenceFiller(kb.index, contextlib.nullcontext)
    thread.start()
    try:
        eventually(lambda: sentences.held(encoder.UNITS_KEY, digests) == digests and _in_use() <= 900_000,
                   "the thread to make the units and evict", 60)
        assert kb.sentence_coverage() == (2, 2)
    finally:
        thread.stop()
        kb.close()
    assert 0 < len(_kept(encoder.MODEL_KEY) - {int(d, 16) for d in digests}) < 300


@pytest.mark.usefixtures("encoder_on")
def test_a_kb_searched_with_no_server_marks_its_texts_used_once_a_day(empty_kb: KnowledgeBase, invoke_cli,  # noqa: ANN001
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """One-shot searches looked the KB's sentences up without marking them (a write a search),
    and with every vector made no filler ran to mark them: the KB's texts looked least recently
    used. The first search of a day has a detached filler mark them; the others start none.
    Under the tests' isolation (``SLAYER_KB_NO_MARKS``) a search starts none at all."""
    digests = set(_made(empty_kb))
    empty_kb.close()
    marked = empty_kb.index.dir / "cache-marked-day"
    marked.write_text(f"{sentences.today() - 3}\n")  # days later
    with _db() as db:
        db.execute("UPDATE used SET day = day - 3")
    started: list[bool] = []
    real = filler.start
    monkeypatch.setattr(filler, "start", lambda root: started.append(real(root)) or started[-1])

    def days() -> set[int]:
        with _db() as db:
            return {day for (day,) in db.execute(f"SELECT day FROM used WHERE hash IN ({', '.join('?' * len(digests))})", list(digests))}

    invoke_cli("--kb", empty_kb.root, "search", "newsletter images", "--json", check=True)
    assert started == []  # the isolation's SLAYER_KB_NO_MARKS
    monkeypatch.delenv("SLAYER_KB_NO_MARKS")
    searched = invoke_cli("--kb", empty_kb.root, "search", "newsletter images", "--json", check=True)
    assert (json.loads(searched.stdout)["memories"][0]["title"], started) == (NOTES[0][0], [True])
    eventually(lambda: days() == {sentences.today()} and marked.read_text() == f"{sentences.today()}\n", "the filler to mark them", 60)
    eventually(lambda: not filler.filling(empty_kb.root), "the filler to exit")
    invoke_cli("--kb", empty_kb.root, "search", "newsletter images", "--json", check=True)
    assert started == [True]  # marked today: no filler started



@pytest.mark.usefixtures("encoder_on")
def test_a_cache_that_cannot_be_written_starts_one_marking_filler_a_day(
        empty_kb: KnowledgeBase, invoke_cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # noqa: ANN001
    """The day file was written only when the marks were: with a cache folder that cannot be
    made (a read-only or full home acts alike), every one-shot search started a filler."""
    _made(empty_kb)
    empty_kb.close()
    marked = empty_kb.index.dir / "cache-marked-day"
    marked.unlink(missing_ok=True)
    (tmp_path / "blocker").write_text("x")
    monkeypatch.setenv("SLAYER_KB_CACHE", str(tmp_path / "blocker" / "cache"))
    monkeypatch.delenv("SLAYER_KB_NO_MARKS")  # the isolation's
    started: list[bool] = []
    real = filler.start
    monkeypatch.setattr(filler, "start", lambda root: started.append(real(root)) or started[-1])
    for _ in range(4):
        searched = invoke_cli("--kb", empty_kb.root, "search", "newsletter images", "--json", check=True)
        assert json.loads(searched.stdout)["memories"][0]["title"] == NOTES[0][0]
        eventually(lambda: not filler.filling(empty_kb.root), "the filler to exit", 60)
    assert (started, marked.exists() and marked.read_text()) == ([True], f"{sentences.today()}\n")


@pytest.mark.usefixtures("encoder_on")
def test_a_kb_held_warm_with_no_filler_of_its_own_marks_its_texts_used(empty_kb: KnowledgeBase,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP server holds its KB warm and runs no filler thread: its searches, warm, never had
    the KB's texts marked used, so an MCP session's KB looked least used. Its first search of a
    day starts the marking filler, as a one-shot search does; once the day is marked, none."""
    _made(empty_kb)
    marked = empty_kb.index.dir / "cache-marked-day"
    marked.write_text(f"{sentences.today() - 3}\n")
    monkeypatch.delenv("SLAYER_KB_NO_MARKS")  # the isolation's
    started: list[Path] = []
    monkeypatch.setattr(filler, "start", started.append)
    empty_kb.sentences_in_background = True  # as the MCP server's KB: _made had made them here
    empty_kb.keep_warm()
    assert empty_kb.search("newsletter images").memories[0]["title"] == NOTES[0][0]
    assert started == [empty_kb.root]
    marked.write_text(f"{sentences.today()}\n")  # the filler marked them
    empty_kb.search("newsletter images")
    empty_kb.search("images")
    assert started == [empty_kb.root]
