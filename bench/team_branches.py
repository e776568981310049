"""Branch per agent (issue 28): K agents, each on its own branch in its own clone of one bare
remote, and a reviewer clone that takes each branch as a pull request.

Each round every agent saves a few memories (auto ids) and revises one of its own, then pushes
its branch (``slayer-kb sync``); half-way every agent merges main into its branch with
``slayer-kb merge`` (criss-cross merges: the reviewer has merged agent branches into main
meanwhile). An agent whose last review was blocked runs
``slayer-kb renumber --onto origin/main`` first, as it is told to. The reviewer, for every branch
with work main lacks, runs ``slayer-kb validate --against main`` and ``slayer-kb review main``,
compares review's lists with ``git diff --name-status -M main...BRANCH``, and merges (git merge,
push) when validate passes. A closing round without new work gives every blocked branch its
last chance. All through the CLI with each clone's server on; seeded, sequential, bounded.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .team_kit import ENTITIES, MARKER, cli, cli_env, git, make_remote, marker, memories_at, stop_servers

SAVES_PER_ROUND = 3


@dataclass
class BranchResult:
    """The figures of the branch-per-agent scenario (docs/teams.md says what each one means)."""

    agents: int
    rounds: int
    saves: int = 0
    updates: int = 0
    reviews: int = 0
    reviews_valid: int = 0
    ids_flagged: int = 0
    renumber_runs: int = 0
    criss_cross_merges: int = 0
    agent_merge_conflicts: int = 0
    merges: int = 0
    merge_conflicts: int = 0
    review_matches_git: int = 0
    review_mismatches: list[dict[str, Any]] = field(default_factory=list)
    branches_never_merged: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    ids_changed: list[str] = field(default_factory=list)

    def rows(self) -> list[tuple[str, Any, str]]:
        passing = f"{100 * self.reviews_valid / self.reviews:.0f}%" if self.reviews else "-"
        return [
            ("agents x rounds (+ a closing round)", f"{self.agents} x {self.rounds}", ""),
            ("saves / revisions on the branches", f"{self.saves} / {self.updates}", ""),
            ("reviews", self.reviews, ""),
            ("reviews passing validate --against main, no renumbering", f"{self.reviews_valid} ({passing})",
             ">= 95%"),
            ("ids validate flagged as collisions", self.ids_flagged, "0"),
            ("renumber --onto runs agents needed", self.renumber_runs, "0"),
            ("merges of main into agent branches (criss-cross)", self.criss_cross_merges, ""),
            ("  of which conflicted", self.agent_merge_conflicts, "0"),
            ("branches merged into main / merges that conflicted", f"{self.merges} / {self.merge_conflicts}",
             "- / 0"),
            ("reviews whose lists match git's diff",
             f"{self.review_matches_git} of {self.review_matches_git + len(self.review_mismatches)}", "all"),
            ("agent branches with work never merged", self.branches_never_merged, "0"),
            ("lost memories (merged work not on main)", len(self.lost), "0"),
            ("duplicated memories", len(self.duplicated), "0"),
            ("ids changed after a save returned", len(self.ids_changed), "0"),
        ]


@dataclass
class BranchAgent:
    index: int
    clone: Path
    branch: str
    env: dict[str, str]
    saved: dict[str, str] = field(default_factory=dict)  # marker -> the id of the save's reply
    blocked: bool = False


def run_branches(work: Path, agents: int = 6, rounds: int = 4, seed: int = 1,
                 log: Callable[[str], None] = print) -> BranchResult:
    """Run the branch-per-agent scenario in ``work`` (which must not exist yet) and measure it."""
    bare, clones = make_remote(work, ["reviewer"] + [f"agent-{k:02d}" for k in range(agents)])
    reviewer, result, rng = clones[0], BranchResult(agents, rounds), random.Random(seed)
    team = [BranchAgent(k, clone, f"agent-{k:02d}", cli_env(f"agent-{k:02d}")) for k, clone in enumerate(clones[1:])]
    for agent in team:
        git(agent.clone, "switch", "-q", "-c", agent.branch)
    try:
        for round_ in range(rounds + 1):
            log(f"branch per agent: round {round_ + 1} of {rounds} + 1 closing ...")
            for agent in team:
                work_on(agent, round_, rounds, rng, result)
            review_all(reviewer, team, result)
    finally:
        stop_servers(clones)
    main = memories_at(bare)
    on_main: dict[str, list[str]] = {}
    for memory_id, text in main.items():
        for mark in MARKER.findall(text):
            on_main.setdefault(mark, []).append(memory_id)
    for agent in team:
        merged = git(bare, "merge-base", "--is-ancestor", agent.branch, "main", check=False).returncode == 0
        result.branches_never_merged += not merged
        if merged:
            result.lost += [mark for mark in agent.saved if mark not in on_main]
        result.ids_changed += [mark for mark, memory_id in agent.saved.items()
                               if mark in on_main and memory_id not in on_main[mark]]
    result.duplicated = sorted(mark for mark, ids in on_main.items() if len(ids) > 1)
    return result


def work_on(agent: BranchAgent, round_: int, rounds: int, rng: random.Random, result: BranchResult) -> None:
    """One round of one agent: renumber when told, merge main half-way, save, revise, push."""
    if agent.blocked or round_ == rounds // 2:
        git(agent.clone, "fetch", "-q", "origin", "main")
        if agent.blocked:
            cli(agent.clone, "renumber", "--onto", "origin/main", env=agent.env)
            result.renumber_runs += 1
            agent.blocked = False
        if round_ == rounds // 2:
            merge_main(agent, result)
    if round_ < rounds:  # the closing round brings no new work
        for _ in range(SAVES_PER_ROUND):
            mark = marker(agent.index, len(agent.saved) + 1)
            reply = cli(agent.clone, "save", f"Agent {agent.index} on its branch ({mark})", "-e",
                        rng.choice(ENTITIES), env=agent.env)
            if reply.rc == 0:
                agent.saved[mark] = str(reply.out["memory_id"])
                result.saves += 1
        mark = rng.choice(sorted(agent.saved)) if agent.saved else ""
        held = [p.stem for p in (agent.clone / "memories").glob("*.yaml") if mark and mark in p.read_text(encoding="utf-8")]
        if held and cli(agent.clone, "update", held[0], "--learning",
                        f"Agent {agent.index} revised in round {round_} ({mark})", env=agent.env).rc == 0:
            result.updates += 1
    pushed = cli(agent.clone, "sync", env=agent.env)  # to the remote's branch of the same name
    if pushed.rc != 0:  # as a failed git push would: the scenario cannot go on without it
        raise RuntimeError(f"slayer-kb sync of {agent.branch} failed: {pushed.message}")


def merge_main(agent: BranchAgent, result: BranchResult) -> None:
    """Merge main into the agent's branch with ``slayer-kb merge`` (the documented way: git's merge
    with the KB's merge driver, a memory main squash-merged taken as one), giving colliding ids
    fresh ones first (else the merge refuses, naming that step)."""
    if cli(agent.clone, "validate", "--against", "origin/main", env=agent.env).rc != 0:
        cli(agent.clone, "renumber", "--onto", "origin/main", env=agent.env)
        result.renumber_runs += 1
    result.criss_cross_merges += 1
    if cli(agent.clone, "merge", "origin/main", env=agent.env).rc != 0:
        result.agent_merge_conflicts += 1
        git(agent.clone, "merge", "--abort", check=False)


def review_all(reviewer: Path, team: list[BranchAgent], result: BranchResult) -> None:
    """Review every branch with work main lacks; merge and push the ones that validate."""
    env = cli_env("reviewer")
    git(reviewer, "fetch", "-q", "origin")
    git(reviewer, "switch", "-q", "main")
    git(reviewer, "reset", "-q", "--hard", "origin/main")
    for agent in team:
        tip = f"origin/{agent.branch}"
        if git(reviewer, "rev-list", "--count", f"main..{tip}").stdout.strip() == "0":
            continue
        git(reviewer, "switch", "-q", "-C", "review", tip)
        result.reviews += 1
        checked = cli(reviewer, "validate", "--against", "main", env=env)
        flagged = [p for p in checked.out.get("problems") or [] if "already uses it" in str(p)]
        result.ids_flagged += len(flagged)
        compare_with_git(reviewer, agent.branch, result)
        git(reviewer, "switch", "-q", "main")
        if checked.rc != 0:
            agent.blocked = True
            continue
        result.reviews_valid += 1
        if git(reviewer, "merge", "-q", "--no-ff", "--no-edit", tip, check=False).returncode != 0:
            result.merge_conflicts += 1
            git(reviewer, "merge", "--abort", check=False)
            continue
        git(reviewer, "push", "-q", "origin", "main")
        result.merges += 1


def compare_with_git(reviewer: Path, branch: str, result: BranchResult) -> None:
    """``review main``'s lists against ``git diff --name-status -M main...HEAD`` on memories/."""
    reply = cli(reviewer, "review", "main", env=cli_env("reviewer"))
    seen: set[tuple[str, ...]] = {("A", e["id"]) for e in reply.out.get("added", [])}
    seen |= {("D", e["id"]) for e in reply.out.get("removed", [])}
    seen |= {("M", e["id"]) for e in reply.out.get("changed", []) + reply.out.get("relinked", [])}
    seen |= {("R", e["old_id"], e["id"]) for e in reply.out.get("renamed", [])}
    diff = git(reviewer, "diff", "--name-status", "-M", "main...HEAD", "--", "memories/").stdout
    expected: set[tuple[str, ...]] = set()
    for line in diff.splitlines():
        status, *paths = line.split("\t")
        ids = tuple(Path(p).stem for p in paths)
        expected.add((status[0], *ids))
    if reply.rc == 0 and seen == expected:
        result.review_matches_git += 1
    else:
        result.review_mismatches.append({"branch": branch, "review": sorted(seen), "git": sorted(expected),
                                         "error": reply.message})
