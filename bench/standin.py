"""``python -m bench.standin [--steps cpu,relevance] [--sets first,third]``: the stand-in graph
(every product of the wheel's int8 weights in int8, ``encoder.load_stand_in``) against the shipped
one, printed as JSON lines:

- ``cpu``: the CPU a memory of the build's own call (``encode_with_units``, the build's workers)
  with each graph, alternating in one process, the order flipped each round, on the synthetic
  corpus's memories and the relevance sets' hand-written ones (a shared machine's other work
  inflates both alike: read the ratios), and the cosine of each memory's whole vector and units
  with the shipped graph's;
- ``relevance``: each relevance set scored (top-1 / top-3, fused and by meaning alone) with every
  vector from the shipped graph; with the memories' vectors (whole and units) from the stand-in
  and the questions' from the shipped graph, as a search during a first build would meet them;
  and with both from the stand-in. The static stand-in (``fused, static (blend)``, a KB before its
  sentence vectors) beside them. Each from an empty vector cache of its own, so nothing the
  stand-in makes reaches the user's cache, and the questions each variant moves, by name.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import resource
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

from slayer_kb.search import encoder, meaning, vectors

from . import corpus, relevance

STEPS = ("cpu", "relevance")
# The relevance rows: name -> (channels, fusion, sentence vectors on), as bench/relevance names them.
ROWS = {"fused": relevance.CONFIGS["fused"], "meaning": relevance.CONFIGS["meaning"],
        "static stand-in": relevance.CONFIGS["fused, static (blend)"]}


def synthetic(count: int, seed: int = 7) -> list[str]:
    """The embedding texts of the synthetic corpus's first ``count`` memories."""
    return [vectors.embedding_text(memory) for memory in corpus.memories(count, seed)]


def handwritten() -> list[str]:
    """The embedding texts of every relevance set's memories."""
    return [vectors.embedding_text(relevance.as_memory(item))
            for folder in relevance.SETS.values() for item in relevance.load("memories.yaml", folder)]


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime


def compare_cpu(name: str, texts: list[str], rounds: int, workers: int) -> dict[str, Any]:
    """The two graphs over ``texts``, alternating: CPU a memory by round, and the cosines."""
    models = {"shipped": encoder.load(), "stand-in": encoder.load_stand_in()}
    times: dict[str, list[float]] = {k: [] for k in models}
    made: dict[str, tuple[np.ndarray, list[np.ndarray]]] = {}
    for turn in range(rounds):
        for key in (list(models) if turn % 2 == 0 else list(reversed(models))):
            model = models[key]
            assert isinstance(model, encoder.Encoder), model
            began = _cpu()
            made[key] = model.encode_with_units(texts, workers)
            times[key].append(1000 * (_cpu() - began) / len(texts))
    whole = np.sum(made["shipped"][0] * made["stand-in"][0], axis=1)
    units = np.concatenate([np.sum(a * b, axis=1) for a, b in zip(made["shipped"][1], made["stand-in"][1], strict=True) if len(a)])
    return {
        "texts": name, "memories": len(texts), "rounds": rounds, "workers": workers, "load": round(os.getloadavg()[0], 1),
        "cpu_ms_shipped": round(sum(times["shipped"]) / rounds, 1), "cpu_ms_stand_in": round(sum(times["stand-in"]) / rounds, 1),
        "ratio": round(sum(times["stand-in"]) / sum(times["shipped"]), 3),
        "ratio_by_round": [round(b / a, 3) for a, b in zip(times["shipped"], times["stand-in"], strict=True)],
        "cosine_whole_mean": round(float(whole.mean()), 5), "cosine_whole_least": round(float(whole.min()), 5),
        "cosine_units_mean": round(float(units.mean()), 5), "cosine_units_least": round(float(units.min()), 5), "units": len(units),
    }


@contextlib.contextmanager
def _making_with(stand_in: bool) -> Iterator[None]:
    """While the block runs, the process's encoder is the stand-in (``stand_in``) or the shipped one.
    Made once, outside ``load``: ``load_stand_in`` calls ``load`` (a patch to it recursed), and
    ``encoder.ready`` asks ``load``'s cache whether a model is loaded."""
    if not stand_in:
        yield
        return
    made = encoder.load_stand_in()
    with mock.patch.object(encoder, "load", functools.lru_cache(maxsize=1)(lambda: made)):
        encoder.load()  # loaded, as ``ready`` looks for
        yield


def score(name: str, memories_stand_in: bool, questions_stand_in: bool) -> dict[str, tuple[float, float, list[str]]]:
    """A set scored with its memories' and its questions' vectors from the graphs named: row ->
    (top-1 %, top-3 %, the questions not answered first)."""
    folder = relevance.SETS[name]
    with tempfile.TemporaryDirectory(prefix="slayer-kb-standin-") as tmp, \
            mock.patch.dict(os.environ, {"SLAYER_KB_CACHE": str(Path(tmp) / "vectors")}):
        meaning.forget_units()
        with _making_with(memories_stand_in):
            kb = relevance.build(Path(tmp) / "kb", folder)
        try:
            with _making_with(questions_stand_in):
                found = {row: relevance.evaluate(kb, config, folder=folder) for row, config in ROWS.items()}
        finally:
            kb.close()
            meaning.forget_units()
    return {row: (round(100 * s.top1, 1), round(100 * s.top3, 1), [q for q, _top in s.misses]) for row, s in found.items()}


def compare_relevance(name: str) -> list[dict[str, Any]]:
    variants = {"shipped": (False, False), "stand-in memories": (True, False), "stand-in both": (True, True)}
    scored = {label: score(name, *which) for label, which in variants.items()}
    out: list[dict[str, Any]] = [{"set": name, **{label: {row: found[:2] for row, found in rows.items()} for label, rows in scored.items()}}]
    missed = set(scored["shipped"]["fused"][2])
    for label in ("stand-in memories", "stand-in both"):
        now = set(scored[label]["fused"][2])
        if now != missed:
            out.append({"set": name, "variant": label, "no_longer_first": sorted(now - missed), "now_first": sorted(missed - now)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.standin")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"which of {', '.join(STEPS)} to run (comma-separated)")
    parser.add_argument("--sets", default=",".join(relevance.SETS), help="the relevance sets to score (comma-separated)")
    parser.add_argument("--memories", type=int, default=160, help="synthetic memories timed (cpu)")
    parser.add_argument("--every", type=int, default=2, help="time every n-th hand-written memory (cpu)")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--workers", type=int, default=encoder.build_workers())
    args = parser.parse_args(argv)
    steps = {s.strip() for s in args.steps.split(",") if s.strip()}
    if not steps <= set(STEPS):
        parser.error(f"unknown step {', '.join(sorted(steps - set(STEPS)))}; the steps are: {', '.join(STEPS)}")
    for model in (encoder.load(), encoder.load_stand_in()):
        if not isinstance(model, encoder.Encoder):
            parser.error(str(model))
    if "cpu" in steps:
        for name, texts in (("synthetic", synthetic(args.memories)), ("handwritten", handwritten()[:: args.every])):
            print(json.dumps(compare_cpu(name, texts, args.rounds, args.workers)), flush=True)
    if "relevance" in steps:
        for name in [n.strip() for n in args.sets.split(",") if n.strip()]:
            for line in compare_relevance(name):
                print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
