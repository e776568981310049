"""A team's commands on a large KB (``python -m bench.team_scale``, docs/teams.md): two clones of
a bare remote holding the bench corpus (bench/corpus.py, 10,000 memories by default), and the wall
time of the ``slayer-kb`` processes an agent runs there:

- ``validate --against origin/main`` of a branch with a few new memories (what CI runs on a pull
  request), in a clone whose commands cached the parsed catalog and with the catalog parsed (a
  fresh checkout), beside a plain ``validate`` of the whole KB, and of the same branch once it
  also describes a column of a model anew;
- ``sync`` with nothing to pull or push, in its own process (the server off) and relayed to the
  clone's warm server: its first write, which starts the server's write process, and the next;
- a ``sync`` that renumbers colliding ids (``slayer-kb.ids sequential``, as before leases; with
  leased ids nothing collides): both clones save the same number of memories, one syncs, then
  the other.

Each figure is the median of ``--repeat`` runs (the renumbering sync runs once per repeat, on a
fresh pair of saves). The clones and their indexes are made once per run; their setup time is
reported but is not a figure. Results go to ``bench/results/team-scale-latest.json``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from slayer_kb import KnowledgeBase

from .corpus import cached
from .team_kit import cli, cli_env, git, stop_servers, workspace

RESULTS_DIR = Path(__file__).resolve().parent / "results"
TARGETS = {"validate_against": 2.0, "sync_nothing_to_do": 0.5}


def make_clones(corpus_root: Path, work: Path) -> tuple[Path, Path]:
    """A bare remote of the corpus and two clones with their indexes built (the first command
    of a fresh clone reads every memory)."""
    bare = work / "remote.git"
    git(work, "clone", "-q", "--bare", str(corpus_root), str(bare))
    git(bare, "symbolic-ref", "HEAD", f"refs/heads/{current_branch(corpus_root)}")
    clones = []
    for name in ("x", "y"):
        git(work, "clone", "-q", str(bare), name)
        clone = work / name
        # Ids as before leases, which collide (a leased block would keep the clones apart).
        git(clone, "config", "slayer-kb.ids", "sequential")
        with KnowledgeBase(clone) as kb:
            kb.ensure_fresh()
        clones.append(clone)
    return clones[0], clones[1]


def current_branch(root: Path) -> str:
    return git(root, "symbolic-ref", "--short", "HEAD").stdout.strip()


CPU: dict[str, list[float]] = {}


def timed_cli(clone: Path, *args: str, env: dict[str, str], name: str | None = None) -> float:
    """The wall time of ``slayer-kb ARGS``; under ``name``, the CPU time it and its git processes
    used is noted too (a figure the machine's load does not inflate; a relayed command's CPU is
    the server's, not counted)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    reply = cli(clone, *args, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if reply.rc != 0:
        raise SystemExit(f"slayer-kb {' '.join(args)} failed in {clone}: {reply.out}")
    if name is not None:
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        CPU.setdefault(name, []).append(cpu)
    return reply.seconds


def wait_warm(clone: Path, env: dict[str, str], bound: float = 300.0) -> None:
    """Until the clone's server has opened the KB and warmed up (a command relayed before then
    waits for it, which is no figure of a sync)."""
    deadline = time.monotonic() + bound
    while not cli(clone, "server", "status", env=env).out.get("warm"):
        if time.monotonic() > deadline:
            raise SystemExit(f"the server of {clone} did not warm up in {bound:.0f} s")
        time.sleep(0.5)


def describe_a_column(clone: Path, round_: int) -> None:
    """Commit a new description of the first column of the first model (a branch's model edit)."""
    model = sorted((clone / "models").rglob("*.yaml"))[0]
    text = model.read_text(encoding="utf-8")
    at = text.index("  description: ", text.index("columns:")) + len("  description: ")
    model.write_text(f"{text[:at]}Described anew in round {round_}; {text[at:]}", encoding="utf-8")
    git(clone, "commit", "-q", "-am", f"model: describe {model.stem} anew")


def save_many(clone: Path, count: int, tag: str) -> None:
    with KnowledgeBase(clone) as kb:
        entity = kb.read(kb.memory_ids()[0]).entities[0]
        for n in range(count):
            kb.save_memory(f"{tag} note {n}: the weekly figure excludes test rows", [entity])


def run(size: int, seed: int, repeat: int, renumber: int, work: Path) -> dict[str, Any]:
    began = time.perf_counter()
    corpus = cached(size, seed)
    x, y = make_clones(corpus.root, work)
    setup = time.perf_counter() - began
    cold, warm = {**cli_env("x"), "SLAYER_KB_SERVER": "off"}, cli_env("x")
    branch = current_branch(x)
    upstream = f"origin/{branch}"
    figures: dict[str, list[float]] = {k: [] for k in (
        "validate_against", "validate_against_catalog_parsed", "validate_whole_kb", "validate_against_model_changed",
        "sync_nothing_to_do", "sync_nothing_to_do_relayed", "sync_nothing_to_do_relayed_again",
        f"sync_renumbering_{renumber}")}
    renumbered = []
    for round_ in range(repeat):
        git(x, "switch", "-q", "-C", f"feature-{round_}", upstream)
        save_many(x, 3, f"branch {round_}")
        # A fresh checkout (CI) parses the catalog; a clone whose commands ran reads their parse.
        (x / ".slayer-kb" / "catalog.json").unlink(missing_ok=True)
        figures["validate_against_catalog_parsed"].append(
            timed_cli(x, "validate", "--against", upstream, env=cold, name="validate_against_catalog_parsed"))
        figures["validate_against"].append(
            timed_cli(x, "validate", "--against", upstream, env=cold, name="validate_against"))
        figures["validate_whole_kb"].append(timed_cli(x, "validate", env=cold, name="validate_whole_kb"))
        # The same branch describing a column anew: a pull request that touches a model.
        describe_a_column(x, round_)
        timed_cli(x, "validate", "--against", upstream, env=cold)  # parses the changed catalog once
        figures["validate_against_model_changed"].append(
            timed_cli(x, "validate", "--against", upstream, env=cold, name="validate_against_model_changed"))
        git(x, "switch", "-q", branch)
        figures["sync_nothing_to_do"].append(timed_cli(y, "sync", env=cold, name="sync_nothing_to_do"))
        timed_cli(y, "sync", env=warm)  # runs here and starts y's server
        wait_warm(y, warm)
        figures["sync_nothing_to_do_relayed"].append(timed_cli(y, "sync", env=warm))
        # The server's write process is started by its first write: the next sync finds it there.
        figures["sync_nothing_to_do_relayed_again"].append(timed_cli(y, "sync", env=warm))
        stop_servers([y])
        save_many(x, renumber, f"x {round_}")
        save_many(y, renumber, f"y {round_}")
        timed_cli(x, "sync", env=cold)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        reply = cli(y, "sync", env=cold)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if reply.rc != 0:
            raise SystemExit(f"the renumbering sync failed: {reply.out}")
        figures[f"sync_renumbering_{renumber}"].append(reply.seconds)
        CPU.setdefault(f"sync_renumbering_{renumber}", []).append(
            (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        renumbered.append(len(reply.out.get("renumbered") or {}))
        timed_cli(x, "sync", env=cold)
    stop_servers([x, y])
    return {
        "size": size, "seed": seed, "repeat": repeat, "setup_seconds": round(setup, 1),
        "median_seconds": {k: round(statistics.median(v), 3) for k, v in figures.items()},
        "samples": {k: [round(s, 3) for s in v] for k, v in figures.items()},
        "median_cpu_seconds": {k: round(statistics.median(v), 3) for k, v in CPU.items()},
        "ids_renumbered": renumbered, "targets": TARGETS,
        "load_average": list(load_average()),
    }


def load_average() -> tuple[float, ...]:
    try:
        return tuple(float(v) for v in Path("/proc/loadavg").read_text().split()[:3])
    except (OSError, ValueError):
        return ()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.team_scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10000, help="memories in the corpus (default 10000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each figure (default 3)")
    parser.add_argument("--renumber", type=int, default=50, help="ids each clone saves before the renumbering sync")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    with workspace(args.keep, "slayer-kb-team-scale-") as work:
        result = run(args.size, args.seed, args.repeat, args.renumber, work)
    print("| figure | median wall (s) | median CPU (s) | target |\n|---|---|---|---|")
    for name, value in result["median_seconds"].items():
        target = TARGETS.get(name)
        cpu = result["median_cpu_seconds"].get(name)
        print(f"| {name} | {value:.2f} | {'-' if cpu is None else f'{cpu:.2f}'} | "
              f"{'<= ' + str(target) if target else ''} |")
    print(f"ids renumbered: {result['ids_renumbered']}; setup {result['setup_seconds']} s; "
          f"load average {result['load_average']}")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "team-scale-latest.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
