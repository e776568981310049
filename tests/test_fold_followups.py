"""What comes after a fold (folds.py) on a team: a forget, an edit or a rename of the folded
memory on the other side, a plain ``git merge``, and what ``get`` and sync say of it. Each test is
one team of real clones (``make_team``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from testing import CliRunner, git, in_process_runner, in_the_kb, json_of, make_team, unlike

TOPIC = ("--title", "Retry budget", "--type", "decision", "--project", "api", "--topic-key", "decision/retry-budget")


@pytest.fixture
def invoke_cli() -> CliRunner:
    """Every command typed in the clone's folder, as a user would."""
    return in_the_kb(in_process_runner())


def _saved(invoke_cli: CliRunner, root: Path, *args: str) -> str:
    return str(json_of(invoke_cli("--kb", root, "--json", "save", *args, check=True))["memory_id"])


def _reviewer_folded(invoke_cli: CliRunner, agent: Path, a: Path, reviewer: Path,
                     texts: tuple[str, str] = ("Retries: 5", "Retries: 3")) -> tuple[str, str]:
    """agent-y's save of the key pushed, main's saved and synced, then the reviewer's merge of
    agent-y on main folds the agent's into main's, synced: (the agent's id, main's)."""
    git(agent, "switch", "-q", "-c", "agent-y")
    folded = _saved(invoke_cli, agent, texts[0], *TOPIC)
    git(agent, "push", "-q", "-u", "origin", "agent-y")
    kept = _saved(invoke_cli, a, texts[1], *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(reviewer, "pull", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")
    invoke_cli("--kb", reviewer, "sync", check=True)
    return folded, kept


# Short alike texts, which git pairs as a rename of the folded file to the kept one, and texts
# it pairs with nothing (a forget here of the folded file).
ALIKE, APART = ("Retries: 5", "Retries: 3"), (unlike("agent"), unlike("main"))


@pytest.mark.parametrize("texts", [ALIKE, APART], ids=["paired", "apart"])
def test_a_folded_memory_the_agent_forgot_later_leaves_mains_memory_and_says_so(
        tmp_path: Path, invoke_cli: CliRunner, texts: tuple[str, str]) -> None:
    # The reviewer's merge folded agent-y's 1 into main's 101; agent-y then forgot its 1. The next
    # merge stopped on a forget of 101 'which this branch edited', whose 'git rm' dropped main's memory.
    _bare, (agent, a, reviewer) = make_team(tmp_path, clones=3)
    folded, kept = _reviewer_folded(invoke_cli, agent, a, reviewer, texts)
    on_main = (reviewer / "memories" / f"{kept}.yaml").read_text()
    invoke_cli("--kb", agent, "forget", folded, check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout == (
        "Merged origin/agent-y; run slayer-kb sync to push.\n"
        f"  kept {kept}: origin/agent-y forgot {folded}, which this branch had merged into {kept}; to forget {kept} "
        f"too: slayer-kb forget {kept}\n")
    assert (reviewer / "memories" / f"{kept}.yaml").read_text() == on_main
    assert not (reviewer / "memories" / f"{folded}.yaml").exists()
    assert git(reviewer, "status", "--short") == ""
    assert json_of(invoke_cli("--kb", reviewer, "--json", "merge", "origin/agent-y", check=True))["action"] == "up to date"


def test_an_edit_of_a_folded_memory_on_the_agents_branch_lands_on_mains_memory(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # Texts git pairs with nothing: the merge stopped on agent-y's edit of 1 against this
    # branch's forget, and keeping both held the key twice.
    _bare, (agent, a, reviewer) = make_team(tmp_path, clones=3)
    folded, kept = _reviewer_folded(invoke_cli, agent, a, reviewer, APART)
    revisions = json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))["revision_count"]
    invoke_cli("--kb", agent, "update", folded, "--learning", unlike("outage"), check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout == ("Merged origin/agent-y; run slayer-kb sync to push.\n"
                             f"  kept {kept}: origin/agent-y edited {folded}, which this branch had merged into {kept}: "
                             f"the edit went to {kept}\n")
    shown = json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))
    assert (shown["learning"], shown["revision_count"]) == (unlike("outage"), revisions + 1)
    assert not (reviewer / "memories" / f"{folded}.yaml").exists()
    invoke_cli("--kb", reviewer, "sync", check=True)


def test_a_folded_memory_the_agent_renamed_later_is_folded_under_its_new_id_too(
        tmp_path: Path, invoke_cli: CliRunner) -> None:
    # The merge stopped on three conflicts whose steps kept the key twice or stripped the links.
    _bare, (agent, a, reviewer) = make_team(tmp_path, clones=3)
    folded, kept = _reviewer_folded(invoke_cli, agent, a, reviewer, APART)
    revisions = json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))["revision_count"]
    linking = _saved(invoke_cli, agent, unlike("linking"), "-e", f"memory:{folded}", "-e", "shop.orders.amount")
    invoke_cli("--kb", agent, "rename", folded, "kb.retry", check=True)
    invoke_cli("--kb", agent, "update", "kb.retry", "--learning", unlike("outage"), check=True)
    invoke_cli("--kb", agent, "sync", check=True)
    git(reviewer, "fetch", "-q")
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout == (
        "Merged origin/agent-y; run slayer-kb sync to push.\n"
        f"  kept {kept}: origin/agent-y renamed {folded} to kb.retry, which this branch had merged into {kept}: its "
        f"edits went to {kept}, and links to kb.retry point at it\n")
    assert git(reviewer, "log", "-1", "--format=%s") == (
        f"memory: merge kb.retry into {kept} (topic decision/retry-budget)\n")
    shown = json_of(invoke_cli("--kb", reviewer, "--json", "get", kept, check=True))
    # The agent's save counted once (the fold made it one of 101's), its update once.
    assert (shown["learning"], shown["revision_count"]) == (unlike("outage"), revisions + 1)
    assert json_of(invoke_cli("--kb", reviewer, "--json", "get", linking, check=True))["entities"] == [
        f"memory:{kept}", "shop.orders.amount"]
    assert invoke_cli("--kb", reviewer, "get", "kb.retry").stderr.startswith(
        f"Error: No memory with id 'kb.retry'. It was merged into '{kept}' in commit ")
    assert invoke_cli("--kb", reviewer, "validate").returncode == 0
    invoke_cli("--kb", reviewer, "sync", check=True)


@pytest.mark.parametrize("how", ["sync", "rebase"])
def test_a_sync_keeping_mains_memory_records_no_move_of_the_upstreams_id(
        tmp_path: Path, invoke_cli: CliRunner, how: str) -> None:
    # b took main's memory into agent-y, c saved the key there and synced: b's sync (or rebase)
    # folds c's id into main's, a move b never made, once recorded as b's ('sync merged this
    # clone's memory 1').
    _bare, (a, b, c) = make_team(tmp_path, clones=3)
    kept = _saved(invoke_cli, a, "Retries: 3", *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(b, "switch", "-q", "-c", "agent-y")
    _saved(invoke_cli, b, unlike("agent"), "-e", "shop.orders.amount")
    git(b, "push", "-q", "-u", "origin", "agent-y")
    git(c, "fetch", "-q")
    git(c, "switch", "-q", "agent-y")
    git(b, "fetch", "-q")
    invoke_cli("--kb", b, "merge", "origin/main", check=True)
    folded = _saved(invoke_cli, c, "Retries: 5", *TOPIC)
    invoke_cli("--kb", c, "sync", check=True)
    if how == "rebase":
        git(b, "fetch", "-q")
        said = invoke_cli("--kb", b, "rebase", "origin/agent-y", check=True).stdout
    else:
        said = invoke_cli("--kb", b, "sync", check=True).stdout
    assert f"  merged (same topic key): {folded} into {kept}\n" in said
    gone = invoke_cli("--kb", b, "get", folded)
    assert gone.stderr.startswith(f"Error: No memory with id '{folded}'. It was merged into '{kept}' in commit "), gone.stderr
