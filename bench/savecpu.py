"""``python -m bench.savecpu``: where a relayed save's CPU goes, by process and priority.

    python -m bench.savecpu                  # 60 saves in a row on the 5,000-memory corpus
    python -m bench.savecpu --saves 100 --size 1000

Starts the warm server of the cached corpus (bench/corpus.py), waits for it to warm up, makes one
save (which starts the write process, daemon/writer.py), then times N relayed saves in a row,
each text new so that its sentence vector is made. Printed as JSON, in CPU milliseconds a save
(from /proc, so Linux only): the server process at niceness 0 and its threads above it (the
sentence filler's model calls), the write process, and the clients (``wait4``); with the saves'
p50 and the load average. ``SLAYER_KB_WRITE_NICENESS=0`` runs the write process at the server's
priority; ``PYTHONPATH`` at another checkout (run from a folder holding a link to this
``bench``) measures that code, whose server may have no write process.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.savecpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_options(parser)
    parser.add_argument("--saves", type=int, default=60)
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
    print(json.dumps({
        "code": os.environ.get("PYTHONPATH") or "this checkout", "size": args.size, "saves": per,
        "write_niceness": (status.get("writer") or {}).get("niceness"),
        "server_ms": round((server_all - server_before[0] - (server_low - server_before[1])) / per, 1),
        "server_lowered_threads_ms": round((server_low - server_before[1]) / per, 1),
        "write_process_ms": round((writer_all - writer_before[0]) / per, 1),
        "clients_ms": round((clients - clients_before) / per, 1),
        "save_p50_ms": round(statistics.median(took) * 1000, 1), "load": [round(x, 2) for x in os.getloadavg()],
    }, indent=1))
    put_back(corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
