"""Shared fixtures: real git repositories in tmp_path, and the CLI run in process or as a process."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from slayer_kb import KnowledgeBase
from slayer_kb import kb as kb_module
from slayer_kb.core.memory import utc_time
from slayer_kb.ops import observations
from testing import (
    CliRunner,
    Watcher,
    cli_runner,
    cpu,
    examples,
    gcfreeze,
    git,
    in_process_runner,
    in_the_kb,
    isolate,
    make_catalog_kb,
    make_empty_kb,
    make_example_kb,
    make_indexed_example_kb,
    ramdisk,
    read_only,
    signals,
)
from testing.isolation import state_home

# Hypothesis's wall-clock checks (200 ms an example, slow data generation) fail on a loaded
# machine, not on a defect. A test's examples: a share of them by default, all in CI
# (testing.examples). Loaded before the test modules, so their own @settings start from it.
settings.register_profile("slayer-kb", deadline=None, suppress_health_check=[HealthCheck.too_slow],
                          max_examples=examples(settings.default.max_examples))
settings.load_profile("slayer-kb")

# The modules that hold the longest tests (2 to 12 s each on an idle machine), longest first:
# xdist hands tests out in collection order, and one of them coming last keeps a worker busy
# while the other has nothing left to do.
LONGEST_FIRST = (
    "test_server.py", "test_in_process.py", "test_search_hybrid.py", "test_upkeep.py", "test_isolation.py",
    "test_faults.py", "test_action.py", "test_mcp.py", "test_exactly_once.py", "test_relay.py",
)


def pytest_configure(config: pytest.Config) -> None:
    # Bytecode, the package's and the plugins' rewritten modules: testing/bytecode.py, loaded
    # before every other plugin. tmp_path in memory where it can be: testing/ramdisk.py.
    ramdisk.use_for_tmp_path(config)
    # The state folders' key for the whole process, module-scoped KBs built outside a test's
    # isolation included: a KB stamped under another key would be set aside when a test reads it.
    os.environ["XDG_STATE_HOME"] = str(state_home())
    shown = config.getoption("cpu_durations")
    if shown is not None:
        config.pluginmanager.register(cpu.CpuTimes(shown), "cpu-times")


def pytest_report_header() -> str | None:
    # Every process the tests start inherits it; the tests that send Ctrl-C reset it in theirs.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        return "SIGINT is ignored in this run (started in the background?): the tests' processes inherit it"
    return None


def pytest_addoption(parser: pytest.Parser) -> None:
    cpu.add_option(parser)


def pytest_collection_finish() -> None:
    # What collection imported and made lives until the process exits: out of every full
    # garbage collection from now on (testing/gcfreeze.py).
    gcfreeze.freeze_collected()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Whole modules move (a stable sort), so a module's tests stay together with its fixtures.
    rank = {name: n for n, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(LONGEST_FIRST)))


@pytest.fixture(autouse=True)
def _signals_kept() -> Iterator[None]:
    """A test that leaves this worker's signal mask or a handler changed fails, and the state
    is put back: every later test's processes would inherit it (testing/signals.py)."""
    before = signals.state()
    yield
    after = signals.state()
    if after != before:
        signals.restore(before)
        pytest.fail(f"the test changed this process's signals: {'; '.join(signals.changes(before, after))}")


@pytest.fixture(autouse=True)
def _git_identity(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate(monkeypatch, tmp_path)


@pytest.fixture
def minutes_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each save and update (in process) a minute after the last: what tells a moved memory (it
    keeps its created_at) from a new save (its own) is the time each was first saved, and memory 1
    saved in the same second as a new memory shares its created_at with it."""
    times = (utc_time(1_780_000_000 + 60 * n) for n in itertools.count())
    monkeypatch.setattr(observations, "utc_now", lambda: next(times))


@pytest.fixture
def one_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every save (in process) in one second: two clones' saves of one id share a created_at, which
    sync reads as one memory (a save's commit rewritten or cherry-picked), so git's own stop and its
    keep-both steps are what the test meets, whichever seconds its saves fall in."""
    at = utc_time(1_780_000_000)
    for module in (kb_module, observations):
        monkeypatch.setattr(module, "utc_now", lambda: at)


@pytest.fixture
def encoder_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sentence encoder back on, for the tests about it."""
    monkeypatch.delenv("SLAYER_KB_NO_ENCODER", raising=False)


@pytest.fixture
def empty_kb(tmp_path: Path) -> KnowledgeBase:
    """A new KB (``slayer-kb init``) at the root of a fresh repository (a copy of one made once
    a process; the tests of ``init`` itself call it)."""
    return KnowledgeBase(make_empty_kb(tmp_path / "kb"))


@pytest.fixture
def catalog_kb(tmp_path: Path) -> KnowledgeBase:
    return KnowledgeBase(make_catalog_kb(tmp_path / "kb"))


@pytest.fixture
def example_kb(tmp_path: Path) -> KnowledgeBase:
    """A copy of the shipped example KB in kb/, committed to a fresh repository."""
    return KnowledgeBase(make_example_kb(tmp_path / "kb"))


@pytest.fixture
def indexed_example_kb(tmp_path: Path) -> KnowledgeBase:
    """``example_kb`` as it is after its first command, its index built: for tests of what a
    command does, not of how a new KB is indexed (a tenth of a second of CPU saved each)."""
    return KnowledgeBase(make_indexed_example_kb(tmp_path / "kb"))


@pytest.fixture(scope="module")
def example_kb_read_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """One example KB for a module's tests that only read it: its index is built once, not for
    each test (a tenth of a second of CPU each). A test that writes takes ``example_kb``."""
    with read_only(tmp_path_factory.mktemp("example-read-only"),
                   lambda root: KnowledgeBase(make_indexed_example_kb(root))) as kb:
        yield kb


@pytest.fixture
def run_cli() -> CliRunner:
    """Run ``slayer-kb`` as a real subprocess: ``run_cli("--kb", dir, "get", "1", input=...)``."""
    return cli_runner()


@pytest.fixture
def invoke_cli(request: pytest.FixtureRequest) -> CliRunner:
    """Run ``slayer-kb`` in this process, as ``run_cli`` would run it as a process (same
    arguments, same result): for tests of what a command does, not of the process around it.
    In a module marked ``typed_in_the_kb`` (the team flows), each command runs from the folder
    its ``--kb`` names, as a user types it there (``testing.in_the_kb``)."""
    runner = in_process_runner()
    return in_the_kb(runner) if request.node.get_closest_marker("typed_in_the_kb") else runner


@contextlib.contextmanager
def watching(kb: KnowledgeBase) -> Iterator[Watcher]:
    # The index built first so the watcher's initial sync is incremental and quick; the server
    # makes the sentence vectors (where the encoder is on), not a filler this process starts.
    kb.index.background_vectors = False
    kb.ensure_fresh()
    kb.close()
    w = Watcher(kb.root)
    try:
        w.wait_for_line("Watching")
        yield w
    finally:
        w.stop()


@pytest.fixture
def watcher(indexed_example_kb: KnowledgeBase) -> Iterator[Watcher]:
    """``slayer-kb watch`` started on a fresh indexed example KB, stopped after the test."""
    with watching(indexed_example_kb) as w:
        yield w


@pytest.fixture(scope="module")
def watcher_read_only(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Watcher]:
    """One ``watcher`` for a module's tests that only ask it (relayed reads, refused requests):
    a warm server started and warmed is about a second of CPU. The module fails if a test
    stopped the server, committed or changed the KB's files; a test that writes, or counts what
    the server served, takes ``watcher``."""
    folder = tmp_path_factory.mktemp("watcher-read-only")
    with pytest.MonkeyPatch.context() as monkeypatch:
        isolate(monkeypatch, folder)
        kb = KnowledgeBase(make_indexed_example_kb(folder / "kb"))
        with watching(kb) as w:
            head = git(kb.root, "rev-parse", "HEAD")
            yield w
            # As promised: a test that wrote, or stopped the server, would change the next one's.
            assert w.proc.poll() is None, f"the shared watcher exited: {w.lines}"
            assert (git(kb.root, "rev-parse", "HEAD"), git(kb.root, "status", "--porcelain")) == (head, "")
