"""Helpers the tests share (as pre-commit's ``testing/``): real repositories, real processes.

``tests/conftest.py`` turns them into fixtures; tests import them from here, never from
``conftest`` or from one another. ``testing.mcp`` needs the ``mcp`` SDK (the dev extra).
"""

from . import signals
from .catalog import write_test_catalog
from .cli import BLOCKED, CliRunner, Watcher, blocker, cli_runner, in_process_runner, in_the_kb, json_of, save_refusal
from .example import RELEVANCE
from .gittrace import GitRuns, traced_git
from .hostile import hostile_toc
from .isolation import account_home_at, isolate, read_only
from .repos import (
    EXAMPLE_KB,
    GIT_ENV,
    ROOT,
    commit_all,
    counted_apart,
    fsck,
    git,
    ids_trailer,
    lose_races,
    make_catalog_kb,
    make_empty_kb,
    make_example_kb,
    make_indexed_example_kb,
    make_kb_after,
    make_notes_kb,
    make_team,
    make_team_after,
    make_worktrees_after,
    squash_merged_branch,
    unlike,
)
from .steps import given_again, keeping, typed_steps
from .variants import default_first, examples
from .wait import WAIT_SECONDS, eventually, next_second

__all__ = [
    "BLOCKED", "EXAMPLE_KB", "account_home_at", "GIT_ENV", "RELEVANCE", "ROOT", "WAIT_SECONDS", "CliRunner", "GitRuns", "Watcher",
    "blocker", "cli_runner", "commit_all", "counted_apart", "default_first", "eventually", "examples", "fsck", "git", "given_again", "hostile_toc", "ids_trailer", "in_process_runner", "in_the_kb", "isolate", "json_of", "keeping", "lose_races", "next_second",
    "make_catalog_kb", "make_empty_kb", "make_example_kb", "make_indexed_example_kb", "make_kb_after",
    "make_notes_kb", "make_team", "make_team_after", "make_worktrees_after", "read_only", "save_refusal", "squash_merged_branch", "signals", "traced_git", "typed_steps", "unlike", "write_test_catalog",
]
