"""``python -m bench.rankings --save FILE`` / ``--compare FILE``: every question of the three
relevance sets (bench/relevance/), under every configuration the relevance bench scores, in a
fresh process and in a warm one (``keep_warm``, as the server searches): the top-10 ids with
their scores. ``--compare`` exits 1 and prints each question whose list differs from the saved
one, so a change made for speed is shown to change no answer (docs/search.md).

The sentence vectors come from the cache (``$SLAYER_KB_CACHE``), so a second run costs no model
run but the questions'.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from slayer_kb.search import run

from .relevance import CONFIGS, SETS, build, load, request_for

TOP = 10


def _lists(kb: Any, folder: Path, config: tuple[frozenset[str], str, bool]) -> list[list[tuple[str, float]]]:
    """The top-10 (id, score) of each question, asked as ``relevance.evaluate`` asks it."""
    before = os.environ.get("SLAYER_KB_NO_ENCODER")
    if not config[2]:
        os.environ["SLAYER_KB_NO_ENCODER"] = "1"
    out: list[list[tuple[str, float]]] = []
    try:
        for question in load("questions.yaml", folder):
            found = run(kb.index, request_for(kb, question, TOP, config))
            hits = sorted(found.memories + found.example_queries, key=lambda d: (-d["score"], d["id"]))
            out.append([(d["id"], d["score"]) for d in hits[:TOP]])
    finally:
        if before is None:
            os.environ.pop("SLAYER_KB_NO_ENCODER", None)
        else:
            os.environ["SLAYER_KB_NO_ENCODER"] = before
    return out


def rankings() -> dict[str, Any]:
    """set -> mode (cold, warm) -> configuration -> one top-10 list per question."""
    out: dict[str, Any] = {}
    for set_name, folder in SETS.items():
        with tempfile.TemporaryDirectory() as tmp:
            kb = build(Path(tmp) / "kb", folder)
            try:
                cold = {name: _lists(kb, folder, config) for name, config in CONFIGS.items()}
                kb.keep_warm()
                kb.warm_up()
                warm = {name: _lists(kb, folder, config) for name, config in CONFIGS.items()}
            finally:
                kb.close()
        out[set_name] = {"cold": cold, "warm": warm}
    return out


def differences(saved: dict[str, Any], now: dict[str, Any]) -> list[str]:
    out = []
    for set_name, modes in saved.items():
        questions = load("questions.yaml", SETS[set_name])
        for mode, configs in modes.items():
            for config, lists in configs.items():
                current = now.get(set_name, {}).get(mode, {}).get(config)
                if current is None:
                    out.append(f"{set_name} {mode} {config}: not measured")
                    continue
                for question, before, after in zip(questions, lists, current, strict=True):
                    if [list(hit) for hit in before] != [list(hit) for hit in after]:
                        out.append(f"{set_name} {mode} {config} {question.get('q', '')!r}: {before} -> {after}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.rankings", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--save", type=Path, help="write the lists to this JSON file")
    what.add_argument("--compare", type=Path, help="compare the lists with those saved in this JSON file")
    args = parser.parse_args(argv)
    now = json.loads(json.dumps(rankings()))  # tuples as lists, as saved
    if args.save:
        args.save.write_text(json.dumps(now))
        total = sum(len(lists) for modes in now.values() for configs in modes.values() for lists in configs.values())
        print(f"saved {total} top-{TOP} lists to {args.save}")
        return 0
    changed = differences(json.loads(args.compare.read_text()), now)
    for line in changed:
        print(line)
    print(f"{len(changed)} lists differ" if changed else "every top-10 list is the same, with the same scores")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
