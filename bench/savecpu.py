"""``python -m bench.savecpu``: where a relayed save's CPU goes, by process and priority.

    python -m bench.savecpu                  # 60 saves in a row on the 5,000-memory corpus
    python -m bench.savecpu --saves 100 --size 1000
    python -m bench.savecpu --searches 30    # and the first search after a save against the next

Starts the warm server of the cached corpus (bench/corpus.py), waits for it to warm up, makes one
save (which starts the write process, daemon/writer.py), then times N relayed saves in a row,
each text new so that its sentence vector is made. Printed as JSON, in CPU milliseconds a save
(from /proc, so Linux only): the server process at niceness 0 and its threads above it (the
sentence filler's model calls), the write process, and the clients (``wait4``); with the saves'
p50 and the load average. ``SLAYER_KB_WRITE_NICENESS=0`` runs the write process at the server's
priority; ``PYTHONPATH`` at another checkout (run from a folder holding a link to this
``bench``) measures that code, whose server may have no write process.

``--searches N`` then makes N rounds of: one save, a wait for the server to settle (the
filler's vector, the watcher's re-read), a relayed search (the first after the save: it reopens
the searcher on the new segment) and another (warm). Each search's cost is the server's CPU at
niceness 0 over it, alone on the server: the mean of the first searches, of the warm ones, and
the server's CPU a save plus its first search (what a save costs the searches beside it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from . import corpus as corpus_mod
from .warm import corpus_options, fresh_server, put_back, slayer_kb

TICK_MS = 1000 / os.sysconf("SC_CLK_TCK")
# How long a save's after-work takes to end on a loaded machine: the filler's vector, the
# watcher's settling re-read of the young files.
SETTLE_SECONDS = 2.0


def _fields(stat: Path) -> list[str]:
    """A /proc stat file's fields from the state on (the name before it may hold spaces)."""
    return stat.read_text().rsplit(")", 1)[1].split()


def cpu_ms(pid: int) -> tuple[float, float]:
    """(CPU ms of the process, of its threads above niceness 0)."""
    own = _fields(Path(f"/proc/{pid}/stat"))
    lowered = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found = _fields(task / "stat")
        except OSError:
            continue  # a thread that ended meanwhile
        if int(found[16]) > 0:
            lowered += (int(found[11]) + int(found[12])) * TICK_MS
    return (int(own[11]) + int(own[12])) * TICK_MS, lowered


def children_ms() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (used.ru_utime + used.ru_stime) * 1000


def _server_ms(pid: int) -> float:
    """The server's CPU ms at niceness 0 (its lowered threads, the filler's model calls, apart)."""
    total, lowered = cpu_ms(pid)
    return total - lowered


def first_searches(corpus: corpus_mod.Corpus, server: int, run: str, rounds: int) -> dict[str, Any]:
    """Server CPU ms at niceness 0: a save to its settling, its first search, the next search."""
    from .readers import queries

    asked = queries(corpus.root, 2 * rounds)
    saves: list[float] = []
    first: list[float] = []
    warm: list[float] = []
    for n in range(rounds):
        began = _server_ms(server)
        slayer_kb(corpus.root, "save", f"search round {n} of run {run}: refunds net against order {n * 11}",
                  "-e", corpus.hot_model)
        time.sleep(SETTLE_SECONDS)
        between = _server_ms(server)
        saves.append(between - began)
        for question, into in ((asked[(2 * n) % len(asked)], first), (asked[(2 * n + 1) % len(asked)], warm)):
            before = _server_ms(server)
            slayer_kb(corpus.root, "search", question)
            into.append(_server_ms(server) - before)
    # Means, not medians: /proc counts CPU in clock ticks (10 ms), which only a mean resolves.
    return {"search_rounds": rounds, "round_save_ms": round(statistics.mean(saves), 1),
            "first_search_ms": round(statistics.mean(first), 1), "warm_search_ms": round(statistics.mean(warm), 1),
            "save_and_first_search_ms": round(statistics.mean(saves) + statistics.mean(first), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.savecpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_options(parser)
    parser.add_argument("--saves", type=int, default=60)
    parser.add_argument("--searches", type=int, default=0, help="rounds of a save, its first search and a warm one")
    args = parser.parse_args(argv)
    from slayer_kb.daemon import relay

    corpus = corpus_mod.cached(args.size, args.seed)
    root = corpus.root
    fresh_server(root)
    slayer_kb(root, "save", "the first save starts the write process", "-e", corpus.hot_model)
    time.sleep(3.0)
    status: Any = relay.control(root, "status")
    server, writer = status["pid"], (status.get("writer") or {}).get("pid")
    run = os.urandom(4).hex()  # texts never seen: their sentence vectors are made, not found cached
    server_before, writer_before, clients_before = cpu_ms(server), cpu_ms(writer) if writer else (0.0, 0.0), children_ms()
    took = []
    for n in range(args.saves):
        seconds, code = slayer_kb(root, "save", f"save {n} of run {run}: refunds net against order {n * 7}",
                                  "-e", corpus.hot_model)
        if code != 0:
            raise SystemExit(f"save {n} failed with exit code {code}")
        took.append(seconds)
    time.sleep(3.0)  # the filler's vectors and the watcher's settling re-read
    (server_all, server_low), clients = cpu_ms(server), children_ms()
    writer_all = cpu_ms(writer)[0] if writer else 0.0
    per = args.saves
    searches = first_searches(corpus, server, run, args.searches) if args.searches else {}
    print(json.dumps({
        "code": os.environ.get("PYTHONPATH") or "this checkout", "size": args.size, "saves": per,
        "write_niceness": (status.get("writer") or {}).get("niceness"),
        "server_ms": round((server_all - server_before[0] - (server_low - server_before[1])) / per, 1),
        "server_lowered_threads_ms": round((server_low - server_before[1]) / per, 1),
        "write_process_ms": round((writer_all - writer_before[0]) / per, 1),
        "clients_ms": round((clients - clients_before) / per, 1),
        "save_p50_ms": round(statistics.median(took) * 1000, 1), **searches,
        "load": [round(x, 2) for x in os.getloadavg()],
    }, indent=1))
    put_back(corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
