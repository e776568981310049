"""A fresh clone's first auto-id save on a long history (``python -m bench.long_history``,
docs/performance.md "A fresh clone's first save"): a KB of ``--commits`` commits, each a save of
one memory, its highest five ids forgotten (so they live in history alone), made with git's
fast-import. Two bare remotes of it: as an older version left it (no commit carries the
``Highest-auto-id`` trailer, store/idfloor.py: the baseline, every commit's files compared with its
parent's as before the trailer) and with one save made on top by this version (its tip carries one).
For each, fresh clones (the server off, the index built by a first search, not timed) time their
first two saves: CPU and wall of each ``slayer-kb save`` process, its git children included. The
target is the first save's CPU with the trailer over the baseline's; the second save's CPU is
beside it, what any later save costs there. Correctness
in the same run: every save must get an id above the forgotten ones, and no remote an id twice.
Results go to ``bench/results/long-history-latest.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .corpus import GIT_IDENTITY
from .team_kit import workspace

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# The first save's CPU with the trailer against the baseline's, at the default 10,000 commits (the
# baseline's grows with commits times files; both also pay a lease and the index's first catch-up).
TARGET_RATIO = 0.5


def _history(where: Path, commits: int) -> None:
    """A repository of ``commits`` saves (memories/1.yaml, 2.yaml, ...), then one commit that
    forgets the highest five."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(where)], check=True)
    feed = subprocess.Popen(["git", "-C", str(where), "fast-import", "--quiet"], stdin=subprocess.PIPE)
    assert feed.stdin is not None

    def data(text: str) -> bytes:
        raw = text.encode()
        return b"data %d\n%s\n" % (len(raw), raw)

    def commit(n: int, message: str) -> bytes:
        return b"commit refs/heads/main\ncommitter t <t@e> %d +0000\n" % (1_700_000_000 + n) + data(message)

    feed.stdin.write(commit(0, "kb: initialise knowledge base") + b"M 100644 inline .gitignore\n" + data(".slayer-kb/\n")
                     + b"M 100644 inline memories/.gitkeep\n" + data(""))
    for n in range(1, commits + 1):
        note = f"learning: note {n} on widget {n % 97}\ncreated_at: '2026-10-01T09:14:22Z'\n"
        feed.stdin.write(commit(n, f"memory: save {n}") + b"M 100644 inline memories/%d.yaml\n" % n + data(note))
    feed.stdin.write(commit(commits + 1, "memory: forget the highest five")
                     + b"".join(b"D memories/%d.yaml\n" % n for n in range(commits - 4, commits + 1)))
    feed.stdin.close()
    if feed.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "-C", str(where), "checkout", "-q", "main"], check=True)


def _run(args: list[str], cwd: Path, env: dict[str, str]) -> tuple[dict[str, Any], float, float]:
    """One ``slayer-kb`` process: its JSON reply, wall seconds and CPU seconds (children included)."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--json", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=3600)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"slayer-kb {' '.join(args)} failed: {proc.stderr}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return json.loads(proc.stdout), wall, cpu


def _first_saves(remote: Path, work: Path, tag: str) -> list[tuple[str, float, float]]:
    """A fresh clone's first two saves: each one's id, wall and CPU seconds. The second is what any
    later save costs there: the first's excess over it is the history's reading."""
    clone = Path(tempfile.mkdtemp(prefix=f"clone-{tag}-", dir=work))
    env = {**os.environ, **GIT_IDENTITY, "SLAYER_KB_SERVER": "off", "SLAYER_KB_SENTENCES": "off",
           "SLAYER_KB_CACHE": str(clone / "cache"), "XDG_STATE_HOME": str(clone / "state")}
    subprocess.run(["git", "clone", "-q", str(remote), str(clone / "kb")], check=True, env=env)
    _run(["search", "widget"], clone / "kb", env)  # the index, built by the first command: not timed
    saves = []
    for n in (1, 2):
        reply, wall, cpu = _run(["save", "--title", f"note {tag} {n}", f"note {n} saved in {clone.name}"], clone / "kb", env)
        if reply.get("action") != "created":
            raise SystemExit(f"a save in {clone} did not create a memory: {reply}")
        saves.append((str(reply["memory_id"]), wall, cpu))
    return saves


def run(commits: int, repeat: int, work: Path) -> dict[str, Any]:
    started = time.perf_counter()
    _history(work / "made", commits)
    remotes = {name: work / f"{name}.git" for name in ("baseline", "trailer")}
    for remote in remotes.values():
        subprocess.run(["git", "clone", "-q", "--bare", str(work / "made"), str(remote)], check=True)
    # One save of this version on top of the second remote (it reads the whole history once).
    ids: dict[str, list[str]] = {"baseline": [], "trailer": [_first_saves(remotes["trailer"], work, "tip")[0][0]]}
    tip = next(work.glob("clone-tip-*")) / "kb"
    subprocess.run(["git", "-C", str(tip), "push", "-q", "origin", "HEAD:main"], check=True,
                   env={**os.environ, **GIT_IDENTITY})
    setup = time.perf_counter() - started
    figures: dict[str, dict[str, list[float]]] = {
        name: {kind: [] for kind in ("first_wall", "first_cpu", "second_cpu")} for name in remotes}
    for round_ in range(repeat):  # alternating, so a change in the machine's load falls on both
        for name, remote in remotes.items():
            (first_id, wall, cpu), (second_id, _wall, second_cpu) = _first_saves(remote, work, f"{name}{round_}")
            figures[name]["first_wall"].append(wall)
            figures[name]["first_cpu"].append(cpu)
            figures[name]["second_cpu"].append(second_cpu)
            ids[name] += [first_id, second_id]
    given = [i for each in ids.values() for i in each]
    medians = {name: {kind: round(statistics.median(values), 3) for kind, values in f.items()} for name, f in figures.items()}
    return {
        "commits": commits, "repeat": repeat, "setup_seconds": round(setup, 1), "median": medians,
        "first_over_second_cpu": {name: round(m["first_cpu"] / m["second_cpu"], 2) for name, m in medians.items()},
        "ratio_first_cpu": round(medians["trailer"]["first_cpu"] / medians["baseline"]["first_cpu"], 3),
        "target_ratio_first_cpu": TARGET_RATIO,
        "ids": ids, "ids_at_or_below_the_forgotten": [i for i in given if not (i.isdigit() and int(i) > commits)],
        "ids_given_twice": sorted({i for each in ids.values() for i in each if each.count(i) > 1}),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=10000, help="commits in the history (default 10000)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh clones of each remote (default 3)")
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    with workspace(args.keep, "slayer-kb-long-history-") as work:
        result = run(args.commits, args.repeat, work)
    print("| remote | first save, median wall (s) | its CPU (s) | the second save's CPU (s) | first / second |\n"
          "|---|---|---|---|---|")
    for name, median in result["median"].items():
        print(f"| {name} | {median['first_wall']:.2f} | {median['first_cpu']:.2f} | {median['second_cpu']:.2f} | "
              f"{result['first_over_second_cpu'][name]} |")
    ratio = result["ratio_first_cpu"]
    ok = ratio <= TARGET_RATIO and not result["ids_at_or_below_the_forgotten"] and not result["ids_given_twice"]
    print(f"first save's CPU, trailer / baseline {ratio} (target <= {TARGET_RATIO}); ids {result['ids']}; "
          f"{'every id above the forgotten and given once' if ok else 'FAILED'}; load average {result['load_average']}")
    args.results_dir.mkdir(parents=True, exist_ok=True)
    (args.results_dir / "long-history-latest.json").write_text(json.dumps(result, indent=1) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
