"""``python -m bench.readers``: relayed searches alone, then with agents saving beside them.

    python -m bench.readers                          # 5,000 memories, 4 searchers, 2 savers
    python -m bench.readers --size 1000 --seconds 10 --pauses 0
    python -m bench.readers --rounds 3 --seconds 20    # the figures in docs/performance.md

A warm server is started for the corpus (bench/corpus.py) and waited for. Then SEARCHERS
processes at a time run relayed ``slayer-kb search`` for SECONDS: first alone, then while SAVERS
more run relayed ``slayer-kb save``, once for each of PAUSES (seconds each saver waits between
two saves: 0 saves one after another, 1 is an agent's pace); ROUNDS times, then alone again (how
much the machine's load moved), and last one saver alone (a relayed save's own time). Each save is
a note of the relevance set (40-100 words) made new by a nonce, so the server makes its sentence
vector during the run, as for a real save (``--repeat-texts``: the short texts of the bench
before, the same every run, whose vectors come from the cache after a machine's first run).
Printed as JSON: searches per second and the p50 / p99 latency of each phase, the saves made,
what the server did (bench/vectorwatch.py: the vectors it made, how long after a save's reply
its vector was searchable, its CPU by thread niceness), the load average around it, each saving phase's ratios to the alone
phase of its round, and their medians over the rounds (the target: p50 at most 1.3x, p99 at most
2x; docs/server.md, "Reads beside writes"). ``SLAYER_KB_WRITE_NICENESS=0`` measures the
writes' spare work at the searches' priority (core/priority.py; the server restarts per run). With ``PYTHONPATH`` set to another checkout (run
from a folder holding links to its ``slayer_kb`` and to this ``bench``) it measures that code.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import corpus as corpus_mod
from .vectorwatch import VectorWatch
from .warm import corpus_options, fresh_server, put_back, slayer_kb


def queries(root: Path, count: int = 50, seed: int = 7) -> list[str]:
    """Two words of the learning of ``count`` memories."""
    rng = random.Random(seed)
    files = sorted((root / "memories").glob("*.yaml"))
    found = []
    for path in rng.sample(files, min(count, len(files))):
        words = [w for w in path.read_text().split() if w.isalpha() and len(w) > 4]
        if len(words) >= 2:
            found.append(" ".join(rng.sample(words, 2)))
    return found


def notes(low: int = 40, high: int = 100) -> list[str]:
    """The relevance set's notes of ``low``-``high`` words: what a saver saves, each made new."""
    import yaml

    found = yaml.safe_load((Path(__file__).parent / "relevance" / "memories.yaml").read_text())
    return [" ".join(note["learning"].split()) for note in found if low <= len(note["learning"].split()) <= high]


def saved_text(texts: list[str] | None, run: str, worker: int, n: int) -> str:
    """A saver's ``n``-th text: a note with the phase's nonce ``run``, whose sentence vector no cache holds,
    so the server makes it during the run; with no ``texts``, the same text every run (the bench
    before: after a machine's first run every vector came from the cache)."""
    if texts is None:
        return f"bench saver {worker} note {n}"
    return f"{texts[(worker * 7919 + n) % len(texts)]} (Run {run}, saver {worker}, note {n}.)"


def phase(root: Path, asked: list[str], searchers: int, savers: int, entity: str, seconds: float,
          pause: float = 0.0, texts: list[str] | None = None) -> dict[str, Any]:
    run = os.urandom(4).hex()
    stop = threading.Event()
    latencies: list[float] = []
    saves: list[float] = []
    failed = [0]

    def search(worker: int) -> None:
        at = worker
        while not stop.is_set():
            took, code = slayer_kb(root, "search", asked[at % len(asked)])
            at += searchers
            if stop.is_set():
                return
            if code == 0:
                latencies.append(took)
            else:
                failed[0] += 1

    def save(worker: int) -> None:
        n = 0
        while not stop.is_set():
            n += 1
            took, code = slayer_kb(root, "save", saved_text(texts, run, worker, n), "-e", entity)
            if code == 0:
                watch.saved()
                saves.append(took)
            else:
                failed[0] += 1
            stop.wait(pause)

    threads = [threading.Thread(target=search, args=(i,)) for i in range(searchers)]
    threads += [threading.Thread(target=save, args=(i,)) for i in range(savers)]
    watch = VectorWatch(root)
    load_before = os.getloadavg()[0]
    watch.start()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    load_after = os.getloadavg()[0]
    ordered = sorted(latencies)
    server = watch.finish()
    return {
        "searches": len(ordered), "per_second": round(len(ordered) / seconds, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 1) if ordered else None,
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 1) if ordered else None,
        "saves": len(saves), "save_p50_ms": round(statistics.median(saves) * 1000, 1) if saves else None,
        "failed": failed[0], "load": [round(load_before, 2), round(load_after, 2)],
        "server": server,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.readers", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    corpus_options(parser)
    parser.add_argument("--searchers", type=int, default=4)
    parser.add_argument("--savers", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rounds", type=int, default=1, help="rounds of (alone, each pause), ratios within a round")
    parser.add_argument("--pauses", default="0,1",
                        help="comma-separated seconds each saver waits between saves, a phase each (0: one after another)")
    parser.add_argument("--repeat-texts", action="store_true",
                        help="save the same short texts every run (the bench before: their vectors cached after a first run)")
    args = parser.parse_args(argv)
    texts = None if args.repeat_texts else notes()
    pauses = [float(p) for p in args.pauses.split(",") if p.strip()]
    corpus = corpus_mod.cached(args.size, args.seed)
    root = corpus.root
    from slayer_kb.core import priority

    fresh_server(root)
    asked = queries(root)
    slayer_kb(root, "search", asked[0])
    result: dict[str, Any] = {
        "code": os.environ.get("PYTHONPATH") or "this checkout", "size": args.size, "searchers": args.searchers,
        "savers": args.savers, "seconds": args.seconds, "rounds": [],
        "write_niceness": priority.niceness(), "new_texts": texts is not None,
    }
    ratios: dict[str, list[tuple[float, float]]] = {f"pause_{pause:g}": [] for pause in pauses}
    for _ in range(args.rounds):
        # Each round measures the searches alone right before the saving phases it is compared
        # with: on a shared machine the load moves more between rounds than within one.
        alone = phase(root, asked, args.searchers, 0, corpus.hot_model, args.seconds)
        one: dict[str, Any] = {"alone": alone}
        for pause in pauses:
            name = f"pause_{pause:g}"
            found = one[f"with_savers_{name}"] = phase(root, asked, args.searchers, args.savers, corpus.hot_model,
                                                        args.seconds, pause, texts)
            ratios[name].append((found["p50_ms"] / alone["p50_ms"], found["p99_ms"] / alone["p99_ms"]))
            one[f"ratios_{name}"] = {"p50": round(ratios[name][-1][0], 2), "p99": round(ratios[name][-1][1], 2)}
        result["rounds"].append(one)
    result["alone_after"] = phase(root, asked, args.searchers, 0, corpus.hot_model, args.seconds)
    # One agent saving with no searches beside it: a relayed save's own time (issue 29: p50 at
    # most 150 ms on a quiet machine), which the lower priority of its spare work must not cost.
    result["saves_alone"] = phase(root, asked, 0, 1, corpus.hot_model, args.seconds, texts=texts)
    result["median_ratios"] = {name: {"p50": round(statistics.median(r[0] for r in found), 2),
                                      "p99": round(statistics.median(r[1] for r in found), 2)}
                               for name, found in ratios.items()}
    # What the searches' gain costs the writes: the savers' rate beside the searches, and a
    # relayed save's own time (issue 29: p50 at most 150 ms on a quiet machine).
    result["saves_a_round"] = {name: [one[f"with_savers_{name}"]["saves"] for one in result["rounds"]]
                               for name in ratios}
    result["save_alone_p50_ms"] = result["saves_alone"]["save_p50_ms"]
    put_back(corpus)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
