"""The client's read of ``slayer-kb.server`` (store/config.py): git's own answer in every case,
and no git process when no config file git reads names the setting or includes another file.

Which git processes ran is seen through a ``git`` first on PATH that notes its arguments and runs
the real git."""

from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.daemon import relay
from slayer_kb.store.config import setting
from testing import CliRunner, git

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the files are read on Linux only")


@pytest.fixture
def noted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The file a noting ``git`` on PATH appends each run's arguments to."""
    real = shutil.which("git")
    assert real is not None
    folder = tmp_path / "bin"
    folder.mkdir()
    notes = tmp_path / "git-runs"
    wrapper = folder / "git"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{notes}"\nexec "{real}" "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("SLAYER_KB_SERVER", raising=False)
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    (tmp_path / "home").mkdir()
    return notes


def _runs(notes: Path) -> list[str]:
    return notes.read_text().splitlines() if notes.exists() else []


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    root.mkdir()
    git(root, "init", "-q")
    return root


def test_an_unset_setting_is_read_without_running_git(noted: Path, tmp_path: Path) -> None:
    root = _repo(tmp_path)
    git(root, "config", "user.name", "someone")  # other settings do not matter
    (tmp_path / "gitconfig").write_text("[core]\n\teditor = vi\n")
    before = len(_runs(noted))
    assert relay.mode(str(root)) == "on"
    assert setting(str(root), "slayer-kb.server") == ""
    assert len(_runs(noted)) == before


@pytest.mark.parametrize(
    ("where", "text", "expected"),
    [
        ("repo", "[slayer-kb]\n\tserver = off\n", "off"),
        ("repo", '[Slayer-KB]\n\tServer = "manual"\n', "manual"),
        ("repo", "[slayer-kb]\n\tserverless = off\n", "on"),  # the section named, the key not set
        ("global", "[slayer-kb]\n\tserver = off\n", "off"),  # GIT_CONFIG_GLOBAL, as the tests set it
        ("home", "[slayer-kb]\n\tserver = manual\n", "manual"),
        ("xdg", "[slayer-kb]\n\tserver = off\n", "off"),
        ("system", "[slayer-kb]\n\tserver = manual\n", "manual"),  # GIT_CONFIG_SYSTEM, NOSYSTEM unset
        ("global", "[include]\n\tpath = {included}\n", "off"),
        ("repo", '[includeIf "gitdir:{root}/"]\n\tpath = {included}\n', "off"),
    ],
)
def test_a_setting_any_config_file_may_hold_is_git_s_answer(
    noted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str, text: str, expected: str,
) -> None:
    root = _repo(tmp_path)
    included = tmp_path / "included"
    included.write_text("[slayer-kb]\n\tserver = off\n")
    home = tmp_path / "home"
    files = {"repo": root / ".git" / "config", "global": tmp_path / "gitconfig", "home": home / ".gitconfig",
             "xdg": tmp_path / "xdg" / "git" / "config", "system": tmp_path / "system"}
    if where in ("home", "xdg"):
        monkeypatch.delenv("GIT_CONFIG_GLOBAL")  # git then reads ~/.gitconfig and the XDG file
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    if where == "system":
        monkeypatch.delenv("GIT_CONFIG_NOSYSTEM")
        monkeypatch.setenv("GIT_CONFIG_SYSTEM", str(files["system"]))
    path = files[where]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as config:
        config.write(text.format(included=included, root=root))
    assert relay.mode(str(root)) == expected
    assert any(run.startswith("config --get slayer-kb.server") for run in _runs(noted))


@pytest.mark.parametrize("variable", ["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"])
def test_settings_given_to_git_by_the_environment_count(
    noted: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str,
) -> None:
    root = _repo(tmp_path)
    if variable == "GIT_CONFIG_COUNT":
        monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
        monkeypatch.setenv("GIT_CONFIG_KEY_0", "slayer-kb.server")
        monkeypatch.setenv("GIT_CONFIG_VALUE_0", "manual")
    else:
        monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'slayer-kb.server'='manual'")
    assert relay.mode(str(root)) == "manual"


def test_a_kb_inside_a_larger_repository_reads_that_repository_s_setting(noted: Path, tmp_path: Path) -> None:
    outer = _repo(tmp_path)
    git(outer, "config", "slayer-kb.server", "off")
    inner = outer / "notes"
    inner.mkdir()
    assert relay.mode(str(inner)) == "off"


def test_a_name_no_file_holds_under_a_section_every_repository_has_is_read_without_running_git(
    noted: Path, tmp_path: Path,
) -> None:
    """Every repository's config has ``[core]``; ``core.autocrlf``, which a sync, ``fmt`` and
    ``validate`` read, is rarely there: unnamed, it is read without a git process (one a sync
    before); named (git's names ignore case), git answers."""
    root = _repo(tmp_path)
    assert "[core]" in (root / ".git" / "config").read_text()
    before = len(_runs(noted))
    assert setting(str(root), "core.autocrlf") == ""
    assert len(_runs(noted)) == before
    git(root, "config", "core.autoCRLF", "input")
    assert setting(str(root), "core.autocrlf") == "input\n"
    assert _runs(noted)[-1] == "config --get core.autocrlf"
    # A subsection's header is [remote "origin"]: such a key is always asked of git.
    git(root, "remote", "add", "origin", "https://example.com/kb.git")
    assert setting(str(root), "remote.origin.url") == "https://example.com/kb.git\n"


@pytest.mark.parametrize(("line", "converts"), [("autocrlf", True), ("autocrlf =", False)])
def test_autocrlf_named_without_a_value_converts_as_git_says(tmp_path: Path, invoke_cli: CliRunner, line: str,
                                                             converts: bool) -> None:
    """A config line holding just ``autocrlf`` is true to git ("autocrlf =" false), though ``git
    config --get`` prints an empty line for both: validate took the first for no conversion, and
    called a checkout's CRLF memory not canonical."""
    root = tmp_path / "kb"
    KnowledgeBase.init(root).save_observation(title="Refunds", content="refunds are counted once")
    memory = root / "memories" / "1.yaml"
    memory.write_bytes(memory.read_bytes().replace(b"\n", b"\r\n"))
    with open(root / ".git" / "config", "a", encoding="utf-8") as config:
        config.write(f"[core]\n\t{line}\n")
    proc = invoke_cli("--kb", root, "validate", "memories/1.yaml", cwd=root)
    assert (proc.returncode, proc.stdout) == ((0, "Checked 1 file: no problems.\n") if converts else (
        1, "memories/1.yaml:1: not in canonical form; run 'slayer-kb fmt memories/1.yaml'\n"
           "1 problem in 1 file (1 file checked)\n"))
