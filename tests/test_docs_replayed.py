"""The console sessions the README and docs/teams.md show, replayed as a new user types them
(testing/console.py): every output a page shows is what the commands print."""

from __future__ import annotations

from pathlib import Path

from testing import ROOT, CliRunner
from testing.console import replay


def test_the_readme_tour_prints_what_the_readme_shows(tmp_path: Path, invoke_cli: CliRunner) -> None:
    page = (ROOT / "README.md").read_text(encoding="utf-8")
    differ = replay(page, tmp_path, invoke_cli, {"/tmp/": f"{tmp_path}/"})
    assert not differ, "\n\n".join(map(str, differ))


def test_the_team_sessions_print_what_teams_md_shows(tmp_path: Path, invoke_cli: CliRunner) -> None:
    # A bare remote, two agents' clones and a reviewer's: shared main, then a branch per agent,
    # a review blocked and its fix followed as written.
    page = (ROOT / "docs" / "teams.md").read_text(encoding="utf-8")
    differ = replay(page, tmp_path, invoke_cli, {"/tmp/": f"{tmp_path}/"})
    assert not differ, "\n\n".join(map(str, differ))
