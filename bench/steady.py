"""``python -m bench.steady``: one KB under a steady mix of agents for MINUTES, sampled every minute.

    python -m bench.steady --minutes 25              # the figures in docs/performance.md
    python -m bench.steady --size 1000 --minutes 3   # a smoke run

The cached corpus (bench/corpus.py) gets a bare remote and a warm server, then runs at once:
SAVERS relayed ``save`` loops (a second apart), one editor that updates and forgets what the
savers saved, SEARCHERS relayed ``search`` loops, and a ``sync`` to the bare remote every
SYNC_EVERY seconds. Each minute it records the server's RSS, threads and open descriptors, its
zombie children, search p50/p95 and save p50 of that minute, the index's segments and size, the
manifest's size, the repository's size and loose objects, the sentence vectors' backlog
(``server status``) and the temporary files left in the KB or in the temporary folder. Printed as
JSON: the samples, and each figure's drift (last minute's value minus the first's; growth that
does not level off is a leak). The corpus is put back afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from . import corpus as corpus_mod
from .readers import queries
from .warm import corpus_options, fresh_server, put_back

REMOTE = "steady"


def relayed(root: Path, *args: str) -> tuple[float, int, dict[str, Any]]:
    """Seconds, exit code and ``--json`` document of one relayed command."""
    env = {**os.environ, "SLAYER_KB_SERVER": "on", "SLAYER_KB_SERVER_IDLE": "600"}
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "--json", *args], env=env,
                          capture_output=True, text=True, check=False)
    took = time.perf_counter() - began
    try:
        out = json.loads(proc.stdout) if proc.stdout.strip() else {}
    except json.JSONDecodeError:
        out = {}
    return took, proc.returncode, out if isinstance(out, dict) else {}


def tree_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def zombies(parents: set[int]) -> int:
    """Processes whose parent is one of ``parents`` and that nobody has reaped."""
    found = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z" and int(fields[1]) in parents:
            found += 1
    return found


def process_figures(pid: int) -> dict[str, Any]:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {"rss_mib": round(int(status["VmRSS"].split()[0]) / 1024, 1), "threads": int(status["Threads"]),
            "fds": len(os.listdir(f"/proc/{pid}/fd"))}


def git_figures(root: Path) -> dict[str, Any]:
    lines = subprocess.run(["git", "-C", str(root), "count-objects", "-v"], capture_output=True, text=True,
                           check=True).stdout.splitlines()
    counts = dict(line.split(": ", 1) for line in lines)
    return {"loose_objects": int(counts["count"]), "packs": int(counts["packs"]),
            "git_mib": round(tree_bytes(root / ".git") / 2**20, 1)}


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000, 1)


class Mix:
    """The agents: each loop appends its (time, seconds) or failure until ``stop`` is set."""

    def __init__(self, root: Path, entity: str, asked: list[str]) -> None:
        self.root, self.entity, self.asked = root, entity, asked
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.searches: list[tuple[float, float]] = []
        self.saves: list[tuple[float, float]] = []
        self.syncs: list[tuple[float, float]] = []
        self.saved: list[str] = []
        self.edits = self.forgets = 0
        self.failures: list[str] = []
        self.started = time.monotonic()

    def record(self, into: list[tuple[float, float]], took: float, code: int, out: dict[str, Any], what: str) -> bool:
        with self.lock:
            if code == 0:
                into.append((time.monotonic(), took))
                return True
            error = out.get("error")
            self.failures.append(f"{what}: {error.get('message', '')[:200] if isinstance(error, dict) else code}")
            return False

    def search(self, worker: int, searchers: int) -> None:
        at = worker
        while not self.stop.is_set():
            took, code, out = relayed(self.root, "search", self.asked[at % len(self.asked)])
            at += searchers
            self.record(self.searches, took, code, out, "search")

    def save(self, worker: int) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            took, code, out = relayed(self.root, "save", f"steady saver {worker} note {n} about refunds", "-e", self.entity)
            if self.record(self.saves, took, code, out, "save") and isinstance(out.get("memory_id"), str):
                with self.lock:
                    self.saved.append(out["memory_id"])
            self.stop.wait(1.0)

    def edit(self) -> None:
        rng = random.Random(3)
        while not self.stop.wait(2.0):
            with self.lock:
                if len(self.saved) < 4:
                    continue
                target = self.saved.pop(rng.randrange(len(self.saved) - 2))  # never the newest
            forget = rng.random() < 0.5
            args = ("forget", target) if forget else ("update", target, "--content", f"edited {target} once")
            took, code, out = relayed(self.root, *args)
            if self.record([], took, code, out, args[0]):
                with self.lock:
                    if forget:
                        self.forgets += 1
                    else:
                        self.edits += 1

    def sync(self, every: float) -> None:
        while not self.stop.wait(every):
            took, code, out = relayed(self.root, "sync", "--remote", REMOTE)
            self.record(self.syncs, took, code, out, "sync")

    def window(self, began: float, ended: float) -> dict[str, Any]:
        with self.lock:
            searches = [t for at, t in self.searches if began <= at < ended]
            saves = [t for at, t in self.saves if began <= at < ended]
            syncs = [t for at, t in self.syncs if began <= at < ended]
        return {"searches": len(searches), "search_p50_ms": percentile(searches, 0.5),
                "search_p95_ms": percentile(searches, 0.95), "saves": len(saves),
                "save_p50_ms": round(statistics.median(saves) * 1000, 1) if saves else None,
                "syncs": len(syncs), "sync_max_s": round(max(syncs), 2) if syncs else None}


# What slayer-kb itself puts in the temporary folder (store/mergedriver.py, ops/history.py); a
# folder holding a ``kb`` is a test's template repository (testing/repos.py), someone else's.
PRODUCT_TEMP = ("slayer-kb-attributes-", "slayer-kb-catalog-")


def new_tmp_entries(before: set[str]) -> list[str]:
    """What slayer-kb left in the temporary folder since the run began (other users' files aside)."""
    folder = Path(tempfile.gettempdir())
    return sorted(name for name in set(os.listdir(folder)) - before
                  if name.startswith(PRODUCT_TEMP) and not (folder / name / "kb").exists())


def sample(root: Path, mix: Mix, began: float, ended: float, tmp_before: set[str]) -> dict[str, Any]:
    from slayer_kb.daemon import relay

    status = relay.control(root, "status") or {}
    pid = status.get("pid")
    state = root / ".slayer-kb"
    index = state / "index"
    vectors = status.get("sentence_vectors") or {}
    figures: dict[str, Any] = {
        "minute": round((ended - mix.started) / 60, 1), **mix.window(began, ended),
        "server_pid": pid, **(process_figures(pid) if isinstance(pid, int) else {}),
        "zombies": zombies({os.getpid(), pid} if isinstance(pid, int) else {os.getpid()}),
        "segments": len(list(index.glob("*.seg"))), "index_mib": round(tree_bytes(index) / 2**20, 2),
        "manifest_kib": round(sum(p.stat().st_size for p in index.glob("manifest*")) / 1024, 1),
        **git_figures(root),
        "vectors_behind": (vectors.get("memories", 0) - vectors.get("covered", 0)) if vectors else None,
        "kb_tmp_files": len(list((state / "tmp").iterdir())) if (state / "tmp").is_dir() else 0,
        "requests_left": len(list((state / "requests").iterdir())) if (state / "requests").is_dir() else 0,
        "tmp_left": new_tmp_entries(tmp_before), "load": round(os.getloadavg()[0], 2),
    }
    return figures


DRIFTING = ("rss_mib", "threads", "fds", "zombies", "segments", "index_mib", "manifest_kib", "loose_objects",
            "packs", "git_mib", "vectors_behind", "kb_tmp_files", "requests_left", "search_p50_ms", "search_p95_ms",
            "save_p50_ms")


def drift(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Each figure's first and last value, and its maximum: a figure whose maximum is its last
    value after many minutes is still growing."""
    found = {}
    for name in DRIFTING:
        values = [s[name] for s in samples if isinstance(s.get(name), (int, float))]
        if values:
            found[name] = {"first": values[0], "last": values[-1], "max": max(values)}
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.steady", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_options(parser)
    parser.add_argument("--minutes", type=float, default=25.0)
    parser.add_argument("--savers", type=int, default=2)
    parser.add_argument("--searchers", type=int, default=2)
    parser.add_argument("--sync-every", type=float, default=60.0, help="seconds between two syncs")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between two samples")
    args = parser.parse_args(argv)
    corpus = corpus_mod.cached(args.size, args.seed)
    root = corpus.root
    remote = Path(tempfile.mkdtemp(prefix="steady-remote-")) / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    subprocess.run(["git", "-C", str(root), "remote", "add", REMOTE, str(remote)], check=True)
    subprocess.run(["git", "-C", str(root), "push", "-q", REMOTE, "HEAD:main"], check=True)
    tmp_before = set(os.listdir(tempfile.gettempdir()))
    fresh_server(root)
    mix = Mix(root, corpus.hot_model, queries(root))
    threads = [threading.Thread(target=mix.search, args=(i, args.searchers)) for i in range(args.searchers)]
    threads += [threading.Thread(target=mix.save, args=(i,)) for i in range(args.savers)]
    threads += [threading.Thread(target=mix.edit), threading.Thread(target=mix.sync, args=(args.sync_every,))]
    samples = []
    mix.started = began = time.monotonic()
    try:
        for thread in threads:
            thread.start()
        while time.monotonic() - mix.started < args.minutes * 60:
            time.sleep(args.every)
            ended = time.monotonic()
            samples.append(sample(root, mix, began, ended, tmp_before))
            began = ended
            print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
    finally:
        mix.stop.set()
        for thread in threads:
            thread.join()
        settled = sample(root, mix, began, time.monotonic(), tmp_before)
        result = {"size": args.size, "minutes": args.minutes, "savers": args.savers, "searchers": args.searchers,
                  "saves": len(mix.saves), "edits": mix.edits, "forgets": mix.forgets, "syncs": len(mix.syncs),
                  "failures": len(mix.failures), "failure_examples": mix.failures[:10],
                  # More than one: the server exited mid-run (its log says why), and the
                  # figures after it are a fresh process's.
                  "server_pids": sorted({s["server_pid"] for s in samples if s.get("server_pid")}),
                  "drift": drift(samples), "after_the_mix": settled, "samples": samples}
        subprocess.run(["git", "-C", str(root), "remote", "remove", REMOTE], check=False)
        put_back(corpus)
        print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
