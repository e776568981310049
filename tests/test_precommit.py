"""pre-commit runs slayer-kb's hooks: the project's own config on kb/, and the hooks other
knowledge-base repositories use (.pre-commit-hooks.yaml), on a real repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testing import EXAMPLE_KB, ROOT, commit_all, git

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"


def pre_commit(repo: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    # The hooks call the slayer-kb of this interpreter's environment, as a dev install would.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=240,
    )


def break_kb(kb: Path) -> None:
    (kb / "memories" / "broken.yaml").write_text("learning: [oops\n" + CREATED)
    (kb / "memories" / "dangling.yaml").write_text(
        f"learning: Gone.\nentities:\n- shop.no_such_model\n{CREATED}")
    (kb / "memories" / "messy.yaml").write_text(f"{CREATED}learning: Out of order.\n")


def expect_failure(proc: subprocess.CompletedProcess[str], prefix: str) -> None:
    assert proc.returncode == 1, proc.stdout
    out = proc.stdout
    assert f"{prefix}memories/broken.yaml:2: invalid YAML: did not find expected ',' or ']'" in out
    assert (f"{prefix}memories/dangling.yaml:3: entity 'shop.no_such_model' does not resolve: "
            "No model 'no_such_model' in datasource 'shop'.") in out
    # The fix names the KB when the hook runs outside it, as every fix does.
    command = f"slayer-kb --kb {prefix.rstrip('/')}" if prefix else "slayer-kb"
    assert f"{prefix}memories/messy.yaml:1: not in canonical form; run '{command} fmt {prefix}memories/messy.yaml'" in out
    assert f"reformatted {prefix}memories/messy.yaml" in out
    assert "files were modified by this hook" in out


@pytest.fixture
def project_copy(tmp_path: Path) -> Path:
    repo = tmp_path / "project"
    repo.mkdir()
    shutil.copytree(EXAMPLE_KB, repo / "kb", ignore=shutil.ignore_patterns(".slayer-kb"))
    shutil.copy(ROOT / ".pre-commit-config.yaml", repo)
    git(repo, "init", "-q")
    commit_all(repo)
    return repo


def test_project_hooks_pass_on_kb_and_fail_on_broken_copies(project_copy: Path, tmp_path: Path) -> None:
    proc = pre_commit(project_copy, tmp_path)
    assert proc.returncode == 0, proc.stdout
    assert "slayer-kb validate (kb/)" in proc.stdout and "Passed" in proc.stdout
    break_kb(project_copy / "kb")
    git(project_copy, "add", "-A")
    expect_failure(pre_commit(project_copy, tmp_path), "kb/")


def documented_configs() -> list[dict]:
    """The pre-commit configurations docs/review.md shows: the local form, then the remote one."""
    text = (ROOT / "docs" / "review.md").read_text()
    section = text[text.index("\n## pre-commit\n"):]
    blocks = re.findall(r"\n```yaml\n(.*?)\n```\n", section, re.S)
    return [yaml.safe_load(block) for block in blocks]


def test_the_documented_configurations_name_the_published_hooks() -> None:
    published = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert list(published) == ["slayer-kb-validate", "slayer-kb-fmt"]
    local, remote = documented_configs()
    [repo] = local["repos"]
    assert repo["repo"] == "local"
    # The local form is the published hooks (less their descriptions), run by the installed
    # slayer-kb: the same entries, file patterns and serial runs.
    assert [h["id"] for h in repo["hooks"]] == list(published)
    for hook in repo["hooks"]:
        wanted = {k: v for k, v in published[hook["id"]].items() if k != "description"}
        assert hook == {**wanted, "language": "system"}
    [repo] = remote["repos"]
    assert [h["id"] for h in repo["hooks"]] == list(published)
    assert set(repo) == {"repo", "rev", "hooks"}
    # The README points at the documentation, not at a repository or tag that does not exist.
    readme = (ROOT / "README.md").read_text()
    assert "docs/review.md" in readme and "<owner>" not in readme and "rev: v0.1.0" not in readme


def test_published_hooks_in_a_knowledge_base_repository(tmp_path: Path) -> None:
    repo = tmp_path / "team-kb"
    shutil.copytree(EXAMPLE_KB, repo, ignore=shutil.ignore_patterns(".slayer-kb"))
    # The configuration docs/review.md shows, as a consumer copies it: the published hooks, run
    # by the slayer-kb installed in this environment.
    local, _remote = documented_configs()
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump(local, sort_keys=False))
    git(repo, "init", "-q")
    commit_all(repo)
    proc = pre_commit(repo, tmp_path)
    assert proc.returncode == 0, proc.stdout
    break_kb(repo)
    git(repo, "add", "-A")
    expect_failure(pre_commit(repo, tmp_path), "")
