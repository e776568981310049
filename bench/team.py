"""``python -m bench.team``: many agents, one remote (issue 28), with slayer-kb as a black box.

    python -m bench.team --quick                 # 4 agents x 30 s; 6 agent branches, 2 rounds
    python -m bench.team                         # 8 agents x 240 s; 6 agent branches, 4 rounds
    python -m bench.team --scenario shared --agents 4 --ops 20

Shared main: N clones of one bare remote, each driven by its own scripted agent process through
the ``slayer-kb`` CLI with the clone's warm server on. An agent saves (remembering the id of the
reply and a unique marker in the text), updates and forgets its own memories, upserts a few
topic keys every agent shares, makes the first save into a new project, and syncs every few
operations; a conflict sync cannot resolve is resolved the way a person would, following the
steps of sync's message (``team_kit.resolve_by_hand``), and counted. At the end every clone
syncs until all converge, and the remote's ``main`` is checked marker by marker. Branch per agent: bench/team_branches.py.
docs/teams.md says what each figure means. Prints a table; writes bench/results/team-*.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from slayer_kb.ops.sync import PUSH_ATTEMPTS

from . import team_branches
from .team_kit import (
    ENTITIES,
    MARKER,
    ByHand,
    cli,
    cli_env,
    conflict_files,
    git,
    make_remote,
    marker,
    memories_at,
    percentile,
    resolve_by_hand,
    stop_servers,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = Path(__file__).resolve().parent / "results"
TEAM_PROJECT = "team"
SHARED_KEYS = ["team/refund-policy", "team/revenue-definition", "team/timezone"]
# Weights of an agent's operations between syncs (its opening is fixed, see Agent.opening).
OPERATIONS = ("save", "update", "forget", "upsert", "new_project")
WEIGHTS = (40, 15, 10, 20, 5)
# No wait of the bench is unbounded: an agent waits this long at most for the others.
RENDEZVOUS_WAIT = 180.0

Emit = Callable[[dict[str, Any]], None]
Log = Callable[[str], None]


@dataclass
class AgentPlan:
    """One agent's script: who it is, where, for how long (seconds or a number of operations)."""

    index: int
    agents: int
    clone: str
    seed: int
    keys: list[str]
    rendezvous: str
    log: str
    seconds: float | None = None
    ops: int | None = None
    # Sync only when this many seconds passed since the last sync (an agent that syncs every few
    # minutes among others that sync every few operations), instead of every 3-5 operations.
    sync_every: float | None = None


class Agent:
    """A scripted agent: the operations of its plan through the CLI, every reply logged as one
    JSON line (so a crash still leaves what happened)."""

    def __init__(self, plan: AgentPlan) -> None:
        self.plan = plan
        self.clone = Path(plan.clone)
        self.rng = random.Random(plan.seed * 1000 + plan.index)
        self.env = cli_env(f"agent-{plan.index:02d}")
        self.held: dict[str, str] = {}  # marker -> the id this agent believes holds it
        self.saved = self.upserts = self.projects = self.done = 0
        self._log = Path(plan.log).open("a", encoding="utf-8")

    def emit(self, event: dict[str, Any]) -> None:
        self._log.write(json.dumps({"agent": self.plan.index, **event}) + "\n")
        self._log.flush()

    def run(self) -> None:
        began = time.monotonic()
        self.opening()
        until_sync, synced = self.rng.randint(3, 5), time.monotonic()
        while not self.finished(began):
            getattr(self, self.rng.choices(OPERATIONS, WEIGHTS)[0])()
            until_sync -= 1
            every = self.plan.sync_every
            if until_sync == 0 if every is None else time.monotonic() - synced >= every:
                team_sync(self.clone, self.env, self.emit)
                until_sync, synced = self.rng.randint(3, 5), time.monotonic()
        self.emit({"op": "end", "seconds": time.monotonic() - began, "operations": self.done})
        self._log.close()

    def finished(self, began: float) -> bool:
        if self.plan.ops is not None and self.done >= self.plan.ops:
            return True
        return self.plan.seconds is not None and time.monotonic() - began >= self.plan.seconds

    def opening(self) -> None:
        """Every agent does the same four things before anyone syncs, so the collisions today's
        code meets are certain: a save with an auto id, the first save into one new project (in
        turn, a clock second apart, so the session files differ), an upsert of the first shared
        key, one more save."""
        self.save()
        rendezvous, me = Path(self.plan.rendezvous), self.plan.index
        wait_for(lambda: me == 0 or (rendezvous / f"project-{me - 1}").exists())
        time.sleep(1.05 - time.time() % 1)  # the next second: the session file's started_at
        self.new_project()
        (rendezvous / f"project-{me}").touch()
        self.upsert()
        self.save()
        wait_for(lambda: all((rendezvous / f"project-{i}").exists() for i in range(self.plan.agents)))
        team_sync(self.clone, self.env, self.emit)

    def save(self, project: str | None = None) -> None:
        self.saved += 1
        self.done += 1
        mark = marker(self.plan.index, self.saved)
        text = f"Agent {self.plan.index} note {self.saved} ({mark}): {self.rng.choice(FACTS)}"
        if project is None:
            reply = cli(self.clone, "save", text, "-e", self.rng.choice(ENTITIES), env=self.env)
        else:
            reply = cli(self.clone, "save", "--title", f"First note of {project}", "--content", text,
                        "--project", project, env=self.env)
        if reply.rc == 0:
            self.held[mark] = str(reply.out["memory_id"])
        self.emit({"op": "save", "marker": mark, "project": project, "rc": reply.rc,
                   "id": reply.out.get("memory_id"), "seconds": reply.seconds, "message": reply.message})

    def new_project(self) -> None:
        self.projects += 1
        self.save(project=f"newproj-{self.projects}")

    def upsert(self) -> None:
        self.upserts += 1
        self.done += 1
        key = self.plan.keys[0] if self.upserts == 1 else self.rng.choice(self.plan.keys)
        token = f"topic-a{self.plan.index:02d}-{self.upserts:04d}"
        reply = cli(self.clone, "save", "--title", f"Team decision {key}", "--content",
                    f"{key} as agent {self.plan.index} sees it ({token})", "--topic-key", key,
                    "--project", TEAM_PROJECT, env=self.env)
        self.emit({"op": "upsert", "key": key, "rc": reply.rc, "id": reply.out.get("memory_id"),
                   "action": reply.out.get("action"), "seconds": reply.seconds, "message": reply.message})

    def update(self) -> None:
        self.on_own("update", lambda mark: (
            "--learning", f"Agent {self.plan.index} revised ({mark}): {self.rng.choice(FACTS)}"))

    def forget(self) -> None:
        self.on_own("forget", lambda _mark: ())

    def on_own(self, command: str, options: Callable[[str], tuple[str, ...]]) -> None:
        """``update`` or ``forget`` one of this agent's memories (a save when it has none)."""
        if not self.held:
            self.save()
            return
        self.done += 1
        mark = self.rng.choice(sorted(self.held))
        memory_id = self.locate(mark)
        if memory_id is None:
            return
        reply = cli(self.clone, command, memory_id, *options(mark), env=self.env)
        if reply.rc == 0 and command == "forget":
            del self.held[mark]
        self.emit({"op": command, "marker": mark, "id": memory_id, "rc": reply.rc, "seconds": reply.seconds,
                   "message": reply.message})

    def locate(self, mark: str) -> str | None:
        """The id holding this agent's memory now. A careful agent checks before it updates or
        forgets: the id of the save's reply may name another memory since a sync (logged)."""
        held = self.held[mark]
        path = self.clone / "memories" / f"{held}.yaml"
        if path.exists() and mark in path.read_text(encoding="utf-8"):
            return held
        found = sorted(p.stem for p in (self.clone / "memories").glob("*.yaml")
                       if mark in p.read_text(encoding="utf-8"))
        now = found[0] if found else None
        self.emit({"op": "id_changed", "marker": mark, "held": held, "now": now})
        if now is None:
            del self.held[mark]
        else:
            self.held[mark] = now
        return now


FACTS = (
    "amounts are in EUR with VAT", "status pending is not revenue", "qty counts items, not lines",
    "refunds are negative rows", "city is the billing city", "channel codes changed in March",
    "the warehouse reloads at 03:00 UTC", "test orders have customer id 0",
)


def wait_for(condition: Callable[[], bool], bound: float = RENDEZVOUS_WAIT) -> bool:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def team_sync(clone: Path, env: dict[str, str], emit: Emit, attempts: int = 2) -> bool:
    """``slayer-kb sync``; a conflict it cannot resolve is resolved by hand and synced again.
    Every run and every hand resolution is logged; True when the last sync succeeded."""
    for _attempt in range(attempts):
        reply = cli(clone, "sync", env=env)
        message = reply.message
        if reply.rc == 0:
            kind = "ok"
        elif "refused" in message:
            kind = "refused"  # contention: the next sync tries again, no person needed
        elif reply.error_type == "conflict":
            kind = "conflict"
        else:
            kind = "error"
        emit({"op": "sync", "kind": kind, "seconds": reply.seconds, "action": reply.out.get("action"),
              "attempts": reply.out.get("attempts") or 0,
              "renumbered": reply.out.get("renumbered") or {}, "timings": reply.out.get("timings") or [],
              "files": conflict_files(message),
              "message": message[:400]})
        if kind != "conflict":
            return kind == "ok"
        done: ByHand = resolve_by_hand(clone, env, message)
        emit({"op": "by_hand", **asdict(done)})
    return False


# -- the orchestrator ------------------------------------------------------------------------


@dataclass
class SharedResult:
    """The figures of the shared-main scenario (docs/teams.md says what each one means)."""

    agents: int
    seconds: float | None
    ops: int | None
    saves: int = 0
    save_failures: int = 0
    updates: int = 0
    forgets: int = 0
    upserts: int = 0
    syncs: int = 0
    sync_failures: int = 0
    syncs_refused: int = 0
    conflicts_needing_a_person: int = 0
    session_file_conflicts: int = 0
    memory_conflicts: int = 0
    other_conflicts: int = 0
    rebase_stops: int = 0
    hand_resolutions_given_up: int = 0
    files_taken_from_main: int = 0
    renumbered_ids: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    forgotten_but_back: list[str] = field(default_factory=list)
    ids_changed: list[str] = field(default_factory=list)
    topic_keys_held_twice: list[str] = field(default_factory=list)
    topic_key_memories: int = 0
    topic_revisions_missing: int = 0
    sync_p50: float | None = None
    sync_p95: float | None = None
    sync_max: float | None = None
    push_attempts_max: int = 0
    # The slowest 5% of syncs: how many, their push attempts (median, max) and where their time
    # went, in seconds per sync (``outside``: the client's start, the relay, the server's turn).
    slowest: dict[str, float] = field(default_factory=dict)
    converged: bool = False
    convergence_rounds: int = 0
    validate_clean: bool = False
    agents_killed: int = 0
    memories_on_main: int = 0

    def rows(self) -> list[tuple[str, Any, str]]:
        return [
            ("agents x seconds (or operations)", f"{self.agents} x {self.seconds or self.ops}", ""),
            ("saves (auto id) / failed", f"{self.saves} / {self.save_failures}", ""),
            ("updates / forgets / topic-key upserts", f"{self.updates} / {self.forgets} / {self.upserts}", ""),
            ("syncs / failed", f"{self.syncs} / {self.sync_failures}", "0 failed"),
            ("syncs that gave up after refused pushes", self.syncs_refused, "0"),
            ("conflicts that needed a person", self.conflicts_needing_a_person, "0 (but two edits of one memory)"),
            ("  of which on a session file", self.session_file_conflicts, "0"),
            ("  of which on a memory file", self.memory_conflicts, ""),
            ("  of which naming no file", self.other_conflicts, ""),
            ("slayer-kb rebase stops a person resolved", self.rebase_stops, ""),
            ("hand resolutions given up (rebase aborted)", self.hand_resolutions_given_up, "0"),
            ("files a person took from main", self.files_taken_from_main, ""),
            ("ids renumbered by sync or renumber", self.renumbered_ids, ""),
            ("lost memories", len(self.lost), "0"),
            ("duplicated memories", len(self.duplicated), "0"),
            ("forgotten memories back on main", len(self.forgotten_but_back), "0"),
            ("ids changed after a save returned", len(self.ids_changed), "0"),
            ("topic keys held by more than one memory", len(self.topic_keys_held_twice), "0"),
            ("memories holding a shared topic key", self.topic_key_memories, f"<= {len(SHARED_KEYS)}"),
            ("topic-key upserts missing from main's revision counts", self.topic_revisions_missing, "0"),
            ("sync p50 / p95 / max (s)", f"{fmt(self.sync_p50)} / {fmt(self.sync_p95)} / {fmt(self.sync_max)}",
             "p95 <= 5 s"),
            ("most push attempts in one sync", self.push_attempts_max, f"< {PUSH_ATTEMPTS}"),
            ("slowest 5% of syncs: where the time goes (s per sync)", slowest_text(self.slowest), ""),
            ("clones converged (final sync rounds)", f"{self.converged} ({self.convergence_rounds})", "True"),
            ("validate clean on the converged main", self.validate_clean, "True"),
            ("memories on main", self.memories_on_main, ""),
        ]


def fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def run_shared(work: Path, agents: int = 8, seconds: float | None = 240.0, ops: int | None = None,
               seed: int = 1, log: Log = print, laggard: float | None = None) -> SharedResult:
    """Run the shared-main scenario in ``work`` (which must not exist yet) and measure it; with
    ``laggard``, the last agent syncs only every ``laggard`` seconds."""
    bare, clones = make_remote(work, [f"agent-{i:02d}" for i in range(agents)])
    rendezvous = work / "rendezvous"
    rendezvous.mkdir()
    result = SharedResult(agents, seconds, ops)
    procs = []
    for i, clone in enumerate(clones):
        plan = AgentPlan(i, agents, str(clone), seed, SHARED_KEYS, str(rendezvous), str(work / f"agent-{i:02d}.jsonl"),
                         seconds, ops, laggard if i == agents - 1 else None)
        plan_file = work / f"agent-{i:02d}.plan.json"
        plan_file.write_text(json.dumps(asdict(plan)))
        with (work / f"agent-{i:02d}.out").open("w") as out:
            procs.append(subprocess.Popen([sys.executable, "-m", "bench.team", "agent", str(plan_file)], cwd=ROOT,
                                          stdout=out, stderr=subprocess.STDOUT))
    log(f"shared main: {agents} agents running ...")
    deadline = time.monotonic() + (seconds or 0) + (ops or 0) * 60 + RENDEZVOUS_WAIT + 600
    for proc in procs:
        try:
            proc.wait(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            result.agents_killed += 1
    final: list[dict[str, Any]] = []
    log("shared main: every clone syncs until they converge ...")
    try:
        converge(bare, clones, final.append, result)
        result.validate_clean = cli(clones[0], "validate", env=cli_env("bench")).rc == 0
    finally:
        stop_servers(clones)
    events = [json.loads(line) for i in range(agents)
              for line in (work / f"agent-{i:02d}.jsonl").read_text().splitlines() if line.strip()]
    analyse(result, events + final, memories_at(bare))
    return result


def converge(bare: Path, clones: list[Path], emit: Emit, result: SharedResult) -> None:
    """Sync every clone in turn until a round ends with every sync done and every clone at main."""
    env = cli_env("bench")
    for rounds in range(1, len(clones) + 4):
        synced = [team_sync(clone, env, emit) for clone in clones]
        result.convergence_rounds = rounds
        main = git(bare, "rev-parse", "main").stdout.strip()
        if all(synced) and all(git(clone, "rev-parse", "HEAD").stdout.strip() == main
                               and git(clone, "status", "--porcelain").stdout.strip() == ""
                               for clone in clones):
            result.converged = True
            return


def analyse(result: SharedResult, events: list[dict[str, Any]], remote: dict[str, str]) -> None:
    """Fill ``result`` from the agents' logs and the memories on the remote's main."""
    saved: dict[str, str] = {}
    forgotten: set[str] = set()
    changed: set[str] = set()
    sync_seconds = []
    syncs: list[dict[str, Any]] = []
    upserts = 0
    for event in events:
        op, ok = event.get("op"), event.get("rc") == 0
        if op == "save":
            result.saves += 1
            if ok:
                saved[event["marker"]] = str(event["id"])
            else:
                result.save_failures += 1
        elif op == "update" and ok:
            result.updates += 1
        elif op == "forget" and ok:
            result.forgets += 1
            forgotten.add(event["marker"])
        elif op == "upsert" and ok:
            upserts += 1
        elif op == "id_changed":
            changed.add(event["marker"])
        elif op == "by_hand":
            result.rebase_stops += event["stops"]
            result.hand_resolutions_given_up += not event["ok"]
            result.files_taken_from_main += len(event["taken_from_main"])
            result.renumbered_ids += len(event["renumbered"])
        elif op == "sync":
            result.syncs += 1
            sync_seconds.append(event["seconds"])
            syncs.append(event)
            result.push_attempts_max = max(result.push_attempts_max, int(event.get("attempts") or 0))
            result.renumbered_ids += len(event["renumbered"])
            if event["kind"] != "ok":
                result.sync_failures += 1
            result.syncs_refused += event["kind"] == "refused"
            if event["kind"] == "conflict":
                result.conflicts_needing_a_person += 1
                folders = {f.split("/")[-2] for f in event["files"]}
                result.session_file_conflicts += "sessions" in folders
                result.memory_conflicts += "memories" in folders
                result.other_conflicts += not folders
    result.upserts = upserts
    where: dict[str, list[str]] = {}
    keys: dict[str, list[str]] = {}
    revisions = 0
    for memory_id, text in remote.items():
        for mark in MARKER.findall(text):
            where.setdefault(mark, []).append(memory_id)
        data = yaml.safe_load(text) or {}
        if data.get("topic_key") in SHARED_KEYS:
            keys.setdefault(data["topic_key"], []).append(memory_id)
            revisions += int(data.get("revision_count") or 1)
    counts = Counter({mark: len(ids) for mark, ids in where.items()})
    live = {mark: memory_id for mark, memory_id in saved.items() if mark not in forgotten}
    result.lost = sorted(mark for mark in live if counts[mark] == 0)
    result.duplicated = sorted(mark for mark, count in counts.items() if count > 1)
    result.forgotten_but_back = sorted(mark for mark in forgotten if counts[mark] > 0)
    result.ids_changed = sorted(changed | {mark for mark, memory_id in live.items()
                                           if counts[mark] and memory_id not in where[mark]})
    result.topic_keys_held_twice = sorted(key for key, ids in keys.items() if len(ids) > 1)
    result.topic_key_memories = sum(len(ids) for ids in keys.values())
    result.topic_revisions_missing = upserts - revisions
    result.sync_p50, result.sync_p95 = percentile(sync_seconds, 50), percentile(sync_seconds, 95)
    result.sync_max = max(sync_seconds, default=None)
    result.slowest = slowest(syncs, result.sync_p95)
    result.memories_on_main = len(remote)


PHASES = ("outside", "lock", "queue", "fetch", "pull", "push", "turn", "wait", "finish")


def slowest(syncs: list[dict[str, Any]], p95: float | None) -> dict[str, float]:
    """Where the syncs at or above ``p95`` spent their time: the seconds of each phase the syncs
    reported (sync's ``timings``), per sync, and ``outside`` them (the CLI's own wall time)."""
    tail = [event for event in syncs if p95 is not None and event["seconds"] >= p95]
    if not tail:
        return {}
    totals = dict.fromkeys(PHASES, 0.0)
    for event in tail:
        inside = 0.0
        for attempt in event.get("timings") or []:
            for phase, seconds in attempt.items():
                totals[phase] = totals.get(phase, 0.0) + seconds
                inside += seconds
        totals["outside"] += event["seconds"] - inside
    attempts = sorted(int(event.get("attempts") or 0) for event in tail)
    return {"syncs": len(tail), "attempts_median": attempts[len(attempts) // 2], "attempts_max": attempts[-1],
            "seconds": sum(event["seconds"] for event in tail) / len(tail),
            **{phase: seconds / len(tail) for phase, seconds in totals.items()}}


def slowest_text(figures: dict[str, float]) -> str:
    if not figures:
        return "-"
    phases = ", ".join(f"{phase} {figures[phase]:.2f}" for phase in PHASES if phase in figures)
    return (f"{int(figures['syncs'])} syncs of {figures['seconds']:.2f} s, attempts {int(figures['attempts_median'])} "
            f"(max {int(figures['attempts_max'])}): {phases}")


def table(rows: list[tuple[str, Any, str]]) -> str:
    lines = ["| figure | value | target |", "|---|---|---|"]
    lines += [f"| {label} | {value} | {target} |" for label, value, target in rows]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.team", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4 agents x 30 s; 6 agent branches x 2 rounds")
    parser.add_argument("--scenario", choices=("shared", "branches", "both"), default="both")
    parser.add_argument("--agents", type=int, help="clones sharing main (default 8, --quick 4)")
    parser.add_argument("--seconds", type=float, help="how long each agent works (default 240, --quick 30)")
    parser.add_argument("--ops", type=int, help="a number of operations per agent instead of --seconds")
    parser.add_argument("--branches", type=int, default=6, help="agents on their own branches (default 6)")
    parser.add_argument("--rounds", type=int, help="rounds of the branch scenario (default 4, --quick 2)")
    parser.add_argument("--laggard", type=float, metavar="SECONDS",
                        help="the last agent of shared main syncs only every SECONDS (the others every 3-5 operations)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    args.agents = args.agents or (4 if args.quick else 8)
    if args.ops is None:
        args.seconds = args.seconds or (30.0 if args.quick else 240.0)
    args.rounds = args.rounds or (2 if args.quick else 4)
    return args


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["agent"]:
        Agent(AgentPlan(**json.loads(Path(argv[1]).read_text()))).run()
        return 0
    args = parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    document: dict[str, Any] = {"started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                "command": "python -m bench.team " + " ".join(argv), "seed": args.seed}
    with tempfile.TemporaryDirectory(prefix="slayer-kb-team-") as temporary:
        work = args.keep or Path(temporary)
        if args.scenario in ("shared", "both"):
            shared = run_shared(work / "shared", args.agents, None if args.ops else args.seconds, args.ops,
                                args.seed, log, args.laggard)
            document["shared"] = asdict(shared)
            print(f"## Shared main: {args.agents} agents\n\n{table(shared.rows())}\n")
        if args.scenario in ("branches", "both"):
            branches = team_branches.run_branches(work / "branches", args.branches, args.rounds, args.seed, log)
            document["branches"] = asdict(branches)
            print(f"## Branch per agent: {args.branches} agents, a reviewer\n\n{table(branches.rows())}\n")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=1)
    (args.results_dir / f"team-{started.strftime('%Y%m%dT%H%M%SZ')}.json").write_text(text)
    (args.results_dir / "team-latest.json").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
