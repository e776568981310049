"""``python -m bench.token_match KB [--heads 60]``: the token match over 30 memories' texts at a
time, each text tokenized (as before the index kept token ids) and read from the ids the index
kept, alternating in one process on the same heads (30 memories drawn at random, a new question
each): p50 CPU of the whole process (the tokenizer's threads included) and wall, as JSON. Each
head's two answers are checked to be the same to the bit."""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

from slayer_kb import KnowledgeBase
from slayer_kb.core.memory import Memory
from slayer_kb.search import embedding, vectors

HEAD = 30
WORDS = ["refund", "revenue", "cohort", "export", "latency", "warehouse", "churn", "invoice"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.token_match")
    parser.add_argument("kb", type=Path)
    parser.add_argument("--heads", type=int, default=60)
    args = parser.parse_args(argv)
    os.environ.setdefault("SLAYER_KB_SERVER", "off")
    kb = KnowledgeBase(args.kb)
    kb.index.background_vectors = False
    kb.ensure_fresh()
    model = embedding.load()
    assert isinstance(model, embedding.Embedder), model
    ids, rng = kb.index.ids(), random.Random(7)
    times: dict[str, tuple[list[float], list[float]]] = {"tokenized": ([], []), "kept": ([], [])}
    for round_ in range(args.heads):
        head = rng.sample(ids, HEAD)
        docs = kb.index.stored(head)
        texts = {m: vectors.embedding_text(Memory(**docs[m]["data"])) for m in head}
        question = "why is the " + " ".join(rng.sample(WORDS, 3)) + " wrong"
        answers = {}
        for name in ("tokenized", "kept") if round_ % 2 else ("kept", "tokenized"):
            model._cache.clear()  # noqa: SLF001 - what a warm process remembered of texts: a new head's are new
            wall, cpu = time.perf_counter(), time.process_time()
            kept = kb.index.token_ids(texts) if name == "kept" else {}
            answers[name] = model.token_match(question, list(texts.values()), [kept.get(m) for m in head])
            times[name][0].append(time.perf_counter() - wall)
            times[name][1].append(time.process_time() - cpu)
        assert answers["kept"].tobytes() == answers["tokenized"].tobytes()
    out = {name: {"wall_p50_ms": round(1000 * statistics.median(wall), 2), "cpu_p50_ms": round(1000 * statistics.median(cpu), 2)}
           for name, (wall, cpu) in times.items()}
    print(json.dumps({**out, "heads": args.heads, "load": " ".join(f"{x:.2f}" for x in os.getloadavg())}))
    kb.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
