"""One topic key saved on an agent's branch and on main, and the reviewer's merge that folds the
agent's memory into main's: the team flows of tests/test_fold_*.py and
tests/test_merge_keeps_published.py (``make_team``'s clones, typed through ``invoke_cli``)."""

from __future__ import annotations

from pathlib import Path

from .cli import CliRunner, in_process_runner, in_the_kb, json_of
from .repos import git, make_team_after, unlike

TOPIC = ("--title", "Retry budget", "--type", "decision", "--project", "api", "--topic-key", "decision/retry-budget")


def saved_id(invoke_cli: CliRunner, root: Path, *args: str) -> str:
    """The id of the memory a save made in ``root``."""
    return str(json_of(invoke_cli("--kb", root, "--json", "save", *args, check=True))["memory_id"])


def agent_saves(invoke_cli: CliRunner, agent: Path, *args: str) -> str:
    """The agent's branch agent-y, a save on it, pushed: the saved id."""
    git(agent, "switch", "-q", "-c", "agent-y")
    saved = saved_id(invoke_cli, agent, *args)
    git(agent, "push", "-q", "-u", "origin", "agent-y")
    return saved


def agent_then_main(invoke_cli: CliRunner, agent: Path, a: Path, reviewer: Path,
                    texts: tuple[str, str] = ("Retries: 5", "Retries: 3")) -> tuple[str, str]:
    """The agent saves ``TOPIC`` on agent-y (``texts[0]``) and pushes it, then ``a`` saves it on
    main (``texts[1]``) and syncs, and the reviewer's main pulls: (the agent's id, main's)."""
    folded = agent_saves(invoke_cli, agent, texts[0], *TOPIC)
    kept = saved_id(invoke_cli, a, texts[1], *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    git(reviewer, "pull", "-q")
    return folded, kept


def reviewer_folded(invoke_cli: CliRunner, agent: Path, a: Path, reviewer: Path,
                    texts: tuple[str, str] = ("Retries: 5", "Retries: 3")) -> tuple[str, str]:
    """``agent_then_main``, then the reviewer's merge of agent-y on main folds the agent's memory
    into main's, synced: (the agent's id, main's)."""
    folded, kept = agent_then_main(invoke_cli, agent, a, reviewer, texts)
    merged = invoke_cli("--kb", reviewer, "merge", "origin/agent-y", check=True)
    assert merged.stdout.endswith(f"  merged (same topic key): {folded} into {kept}\n")
    invoke_cli("--kb", reviewer, "sync", check=True)
    return folded, kept


# The ids each ``folded_team`` state's steps saved, in the team made once a process that its tests copy.
_FOLDED_IDS: dict[str, tuple[str, str]] = {}


def folded_team(tmp_path: Path, clones: int = 3, texts: tuple[str, str] = ("Retries: 5", "Retries: 3")
                ) -> tuple[list[Path], str, str]:
    """``clones`` clones (the agent's, a, and the reviewer's: a itself with two) after
    ``reviewer_folded``, each command typed in its clone's folder as ``invoke_cli`` types it in
    the fold modules: (the clones, the agent's id, main's). Made once a process for each
    ``clones`` and ``texts`` and copied (``make_team_after``): the saves, push, sync, merge and
    sync are most of a fold test's CPU."""
    name = f"reviewer-folded-{texts!r}"

    def fold(kbs: list[Path]) -> None:
        agent, a, *rest = kbs
        typed = in_the_kb(in_process_runner())
        _FOLDED_IDS[f"{clones}-{name}"] = reviewer_folded(typed, agent, a, rest[0] if rest else a, texts)

    _bare, kbs = make_team_after(tmp_path, name, fold, clones)
    return (kbs, *_FOLDED_IDS[f"{clones}-{name}"])


def main_then_agent(invoke_cli: CliRunner, a: Path, b: Path, c: Path) -> tuple[str, str]:
    """``a`` saves ``TOPIC`` on main and syncs, then ``b`` saves it on agent-y and pushes that, and
    ``c`` switches to agent-y too; nothing is folded yet: (agent-y's id, main's)."""
    kept = saved_id(invoke_cli, a, unlike("main"), *TOPIC)
    invoke_cli("--kb", a, "sync", check=True)
    folded = agent_saves(invoke_cli, b, unlike("agent"), *TOPIC)
    git(c, "fetch", "-q")
    git(c, "switch", "-q", "agent-y")
    return folded, kept


def main_then_agent_team(tmp_path: Path) -> tuple[list[Path], str, str]:
    """Three clones after ``main_then_agent`` (a on main, b and c on agent-y, nothing folded yet),
    each command typed in its clone's folder: (the clones, agent-y's id, main's). Made once a
    process and copied (``make_team_after``), as ``folded_team`` is."""

    def saved(kbs: list[Path]) -> None:
        _FOLDED_IDS["main-then-agent"] = main_then_agent(in_the_kb(in_process_runner()), *kbs)

    _bare, kbs = make_team_after(tmp_path, "main-then-agent", saved, 3)
    return (kbs, *_FOLDED_IDS["main-then-agent"])


def agent_then_main_team(tmp_path: Path, clones: int = 3, texts: tuple[str, str] = ("Retries: 5", "Retries: 3")
                         ) -> tuple[list[Path], str, str]:
    """``clones`` clones after ``agent_then_main`` (the agent's, a, and the reviewer's; any more
    untouched), each command typed in its clone's folder: (the clones, the agent's id, main's).
    Made once a process for each ``clones`` and ``texts`` and copied, as ``folded_team`` is."""
    name = f"agent-then-main-{texts!r}"

    def saved(kbs: list[Path]) -> None:
        agent, a, reviewer = kbs[:3]
        _FOLDED_IDS[f"{clones}-{name}"] = agent_then_main(in_the_kb(in_process_runner()), agent, a, reviewer, texts)

    _bare, kbs = make_team_after(tmp_path, name, saved, clones)
    return (kbs, *_FOLDED_IDS[f"{clones}-{name}"])
