"""``python -m bench.clientcpu``: the CPU of a relayed client, at the caller's priority and in all.

    python -m bench.clientcpu                    # 30 saves, then 30 searches, 5,000 memories
    python -m bench.clientcpu --commands 50 --size 1000

Starts the warm server of the cached corpus (bench/corpus.py) and waits for it, then runs N
relayed ``slayer-kb save`` one after another, then N relayed ``slayer-kb search``. Each client
runs ``slayer_kb.entry.main`` as the program does, through a few lines that, once it returns,
note the CPU of its main thread (``RUSAGE_THREAD``: Python's start included) and of the whole
process (``RUSAGE_SELF``, threads that ended included). The client of a write relays from a
thread of lower priority (core/priority.py, entry.py), so its main thread's CPU is what it spends
at the searches' priority; a read's client has one thread. Printed as JSON: the medians of each
kind, in ms, and the load average. ``PYTHONPATH`` at another checkout (run from a folder holding a
link to this ``bench``) measures that code; there a write's client lowers itself only once the
server has begun its command, so its main thread's CPU includes a millisecond or so spent lower.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import corpus as corpus_mod
from .readers import queries
from .warm import corpus_options, fresh_server, put_back

# The client, as ``slayer-kb`` runs it, noting its CPU when it ends (normally or by sys.exit).
CLIENT = """
import os, resource, sys
sys.argv[0] = "slayer-kb"
from slayer_kb.entry import main
try:
    main()
finally:
    own, whole = resource.getrusage(resource.RUSAGE_THREAD), resource.getrusage(resource.RUSAGE_SELF)
    with open(os.environ["BENCH_CLIENT_CPU"], "a", encoding="ascii") as out:
        out.write(f"{(own.ru_utime + own.ru_stime) * 1000:.3f} {(whole.ru_utime + whole.ru_stime) * 1000:.3f}\\n")
"""


def run(root: Path, notes: Path, args: list[str]) -> None:
    env = {**os.environ, "SLAYER_KB_SERVER": "on", "SLAYER_KB_SERVER_IDLE": "600", "BENCH_CLIENT_CPU": str(notes)}
    done = subprocess.run([sys.executable, "-c", CLIENT, "--kb", str(root), *args], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    if done.returncode != 0:
        raise SystemExit(f"slayer-kb {' '.join(args)} failed with exit code {done.returncode}")


def medians(notes: Path) -> dict[str, float]:
    rows = [[float(x) for x in line.split()] for line in notes.read_text().splitlines()]
    return {"main_thread_ms": round(statistics.median(r[0] for r in rows), 1),
            "whole_process_ms": round(statistics.median(r[1] for r in rows), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.clientcpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_options(parser)
    parser.add_argument("--commands", type=int, default=30, help="saves, then as many searches")
    args = parser.parse_args(argv)
    corpus = corpus_mod.cached(args.size, args.seed)
    fresh_server(corpus.root)
    load_before = round(os.getloadavg()[0], 2)
    result: dict[str, object] = {"code": os.environ.get("PYTHONPATH") or "this checkout", "size": args.size,
                                 "commands": args.commands}
    stamp = os.urandom(4).hex()  # texts never seen before
    asked = queries(corpus.root, args.commands)
    with tempfile.TemporaryDirectory() as folder:
        saves, searches = Path(folder) / "saves", Path(folder) / "searches"
        for n in range(args.commands):
            run(corpus.root, saves, ["save", f"client {n} of run {stamp}: refunds net against order {n}",
                                     "-e", corpus.hot_model])
        time.sleep(2.0)  # the save's after-work, before the searches
        for n in range(args.commands):
            run(corpus.root, searches, ["search", asked[n % len(asked)]])
        result["save"], result["search"] = medians(saves), medians(searches)
    result["load"] = [load_before, round(os.getloadavg()[0], 2)]
    put_back(corpus)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
