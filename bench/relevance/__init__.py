"""The relevance sets: hand-written memories and questions (memories.yaml, questions.yaml), a
KB built from them, and top-1 / top-3 / MRR for each search channel alone and fused.

Three sets: the first (this folder: 326 memories, 196 questions of six kinds) is the one the
search was first tuned on; the second (second/: 120 memories, 60 paraphrases) was written apart
from it, without running a search on it, as an untuned check of how the tuning carries over; the
third (third/: 84 memories, 89 questions) was written for the sentence encoder, before a search
ran on it: paraphrases sharing no content word with their answer, and clusters of near-duplicate
notes that differ in a version, a year or a number; its last 12 notes and 11 questions, added
later, are topics noted three times over the years, asking for the newest note or an older one. The held-out sets are never tuned on: each
was written before the round that added it changed any code, and is reported last, before and
after every change. The first (heldout/: 37 memories, 69 questions) has six long notes past the
encoder's 256 word pieces; the second (heldout2/: 54 memories in 4 projects, 70 questions) puts
its paraphrases into crowded neighbourhoods of notes on neighbouring topics; the third
(heldout3/: 51 memories in 4 projects, 74 questions) aims them into near-duplicate clusters too,
without naming the detail that tells the notes apart; the fourth (heldout4/: 60 memories in 4
projects, 86 questions) is mostly long notes as agents write them, and asks about one fact
inside them; the fifth (heldout5/: 60 terse memories in 4 projects, 80 questions) asks as agents
ask of a semantic layer: bare column and table names (`is_returned`, `refunds`), dotted names,
and English questions whose ordinary words name a table ("why are orders late"); the sixth
(heldout6/: 64 memories in 4 projects, 73 questions) weighs paraphrases sharing no content word
with their answer, aimed into crowded neighbourhoods, beside "why" and "what do we use" questions;
the seventh (heldout7/: 60 memories in 4 projects, 74 questions) does the same in other domains,
with long notes over several sub-topics, typos and code identifiers, and three questions whose
answer is an example query (a memory with a ``query``, ranked with the memories); the eighth
(heldout8/: 59 memories in 4 projects, 74 questions) does the same in other domains again, and
adds questions asked in another role's words (an owner or a manager asking about a team's note);
the ninth (heldout9/: 63 memories in 4 projects, 73 questions) adds misspelt questions, acronyms
spelled out on one side only, long agent queries, questions that negate, and questions whose
answer is the newest of three notes on a topic (a memory's ``created_at`` says when it was written);
the tenth (heldout10/: 59 memories in 4 projects, 76 questions) weighs error messages and log
lines pasted as the question, semantic-layer entities named as SLayer users name them, another
role's words and "what did we decide about X and why".

    python -m bench.relevance          # prints the tables: by set and channel, then by kind
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from slayer_kb import KnowledgeBase
from slayer_kb.core.memory import Memory, dumps
from slayer_kb.ops.finding import question_names
from slayer_kb.search import Request, run

HERE = Path(__file__).resolve().parent
# The held-out sets come last and are never tuned on (their questions.yaml say how they were written).
HELD_OUT = ("held-out", "held-out 2", "held-out 3", "held-out 4", "held-out 5", "held-out 6", "held-out 7", "held-out 8",
            "held-out 9", "held-out 10")
SETS = {
    "first": HERE, "second": HERE / "second", "third": HERE / "third",
    HELD_OUT[0]: HERE / "heldout", HELD_OUT[1]: HERE / "heldout2", HELD_OUT[2]: HERE / "heldout3",
    HELD_OUT[3]: HERE / "heldout4", HELD_OUT[4]: HERE / "heldout5", HELD_OUT[5]: HERE / "heldout6",
    HELD_OUT[6]: HERE / "heldout7", HELD_OUT[7]: HERE / "heldout8", HELD_OUT[8]: HERE / "heldout9",
    HELD_OUT[9]: HERE / "heldout10",
}
EXAMPLE = HERE.parent.parent / "kb"
CREATED = "2026-11-01T09:00:00Z"
ALL_CHANNELS = frozenset({"words", "meaning", "entities"})
# name -> (channels, fusion, sentence vectors on). "static": wordllama's vectors alone, as a KB
# whose sentence vectors are not made yet (or a machine without the encoder) searches.
CONFIGS: dict[str, tuple[frozenset[str], str, bool]] = {
    "words": (frozenset({"words", "entities"}), "blend", True),
    "meaning (static)": (frozenset({"meaning", "entities"}), "blend", False),
    "meaning": (frozenset({"meaning", "entities"}), "blend", True),
    "fused, static (blend)": (ALL_CHANNELS, "blend", False),
    "fused (rrf)": (ALL_CHANNELS, "rrf", True),
    "fused": (ALL_CHANNELS, "blend", True),
}


# libyaml's safe loader where PyYAML has it: the same data, about a tenth of the pure-Python
# parse's CPU (the sets' 776 KB, 0.74 s against 0.08 s), which the tests of each set pay.
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(name: str, folder: Path = HERE) -> list[dict[str, Any]]:
    """A set's ``memories.yaml`` or ``questions.yaml``, as ``yaml.safe_load`` reads it."""
    return yaml.load((folder / name).read_text(encoding="utf-8"), Loader=FAST_LOADER)  # noqa: S506 - a safe loader


def as_memory(item: dict[str, Any]) -> Memory:
    """A set's memory (an item of its ``memories.yaml``) as ``build`` writes it."""
    return Memory(
        id=item["id"], learning=item["learning"], created_at=item.get("created_at", CREATED), title=item.get("title"),
        type=item.get("type"), entities=list(item.get("entities") or []), project=item.get("project"),
        query=item.get("query"),
    )


def build(root: Path, folder: Path = HERE, sentences: bool = True) -> KnowledgeBase:
    """A git-backed KB at ``root``: the example catalog and a set's memories, one commit; with
    ``sentences``, the sentence vectors made (or taken from the cache)."""
    KnowledgeBase.init(root)
    for part in ("datasources", "models"):
        shutil.copytree(EXAMPLE / part, root / part)
    shutil.copy(EXAMPLE / "priority.yaml", root / "priority.yaml")
    for item in load("memories.yaml", folder):
        memory = as_memory(item)
        (root / "memories" / f"{memory.id}.yaml").write_text(dumps(memory), encoding="utf-8")
    subprocess.run(["git", "add", "-A", "."], cwd=root, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-q", "-m", "relevance set"], cwd=root, check=True, capture_output=True)
    kb = KnowledgeBase(root)
    kb.index.background_vectors = False  # made here, or left missing on purpose
    kb.ensure_fresh()
    if sentences:
        kb.index.fill_sentences()  # what the warm server does after the first sync
    return kb


@dataclass
class Scores:
    questions: int
    top1: float
    top3: float
    mrr: float
    ms_p50: float
    misses: list[tuple[str, list[str]]]
    # kind -> (questions, top-1, top-3)
    by_kind: dict[str, tuple[int, float, float]]


def request_for(kb: KnowledgeBase, q: dict[str, Any], limit: int, config: tuple[frozenset[str], str, bool]) -> Request:
    """One question of a set as ``KnowledgeBase.search`` asks it (its entities resolved, the
    question's dotted names read by the catalog), under one configuration."""
    entities, _warnings = kb.resolve_entities(q["entities"]) if q.get("entities") else ([], [])
    names = question_names(kb, q.get("q", ""))
    return Request(
        question=q.get("q", ""), entities=entities, inputs_given=bool(entities), type=q.get("type"),
        project=q.get("project"), limit=limit, channels=config[0], fusion=config[1],
        full_names=names.full_names, named=names.entities, unknown_names=names.unknown,
    )


def evaluate(
    kb: KnowledgeBase, config: tuple[frozenset[str], str, bool], kinds: set[str] | None = None, folder: Path = HERE
) -> Scores:
    before = os.environ.get("SLAYER_KB_NO_ENCODER")
    if not config[2]:
        os.environ["SLAYER_KB_NO_ENCODER"] = "1"
    try:
        return _evaluate(kb, config, kinds, folder)
    finally:
        if before is None:
            os.environ.pop("SLAYER_KB_NO_ENCODER", None)
        else:
            os.environ["SLAYER_KB_NO_ENCODER"] = before


def _evaluate(kb: KnowledgeBase, config: tuple[frozenset[str], str, bool], kinds: set[str] | None, folder: Path) -> Scores:
    kb.ensure_fresh()
    hits1 = hits3 = 0
    reciprocal = 0.0
    times: list[float] = []
    misses = []
    kind_hits: dict[str, list[int]] = {}
    questions = [q for q in load("questions.yaml", folder) if kinds is None or q["kind"] in kinds]
    for q in questions:
        request = request_for(kb, q, 10, config)
        start = time.perf_counter()
        found = run(kb.index, request)
        times.append(time.perf_counter() - start)
        ranked = [d["id"] for d in sorted(found.memories + found.example_queries, key=lambda d: -d["score"])]
        expected = set(q["expect"])
        rank = next((n for n, m in enumerate(ranked, 1) if m in expected), None)
        hits1 += rank == 1
        hits3 += rank is not None and rank <= 3
        tally = kind_hits.setdefault(q["kind"], [0, 0, 0])
        tally[0] += 1
        tally[1] += rank == 1
        tally[2] += rank is not None and rank <= 3
        reciprocal += 1 / rank if rank else 0.0
        if rank != 1:
            misses.append((q.get("q", ""), ranked[:3]))
    times.sort()
    n = len(questions)
    by_kind = {kind: (t[0], t[1] / t[0], t[2] / t[0]) for kind, t in sorted(kind_hits.items())}
    return Scores(n, hits1 / n, hits3 / n, reciprocal / n, 1000 * times[n // 2], misses, by_kind)


def table(scores: dict[str, dict[str, Scores]]) -> str:
    """set -> channel -> scores, as one markdown table."""
    lines = ["| set | channel | questions | top-1 | top-3 | MRR | p50 ms |", "|---|---|---|---|---|---|---|"]
    for set_name, by_channel in scores.items():
        for name, s in by_channel.items():
            lines.append(
                f"| {set_name} | {name} | {s.questions} | {s.top1:.1%} | {s.top3:.1%} | {s.mrr:.3f} | {s.ms_p50:.1f} |"
            )
    return "\n".join(lines)


def kinds_table(scores: dict[str, dict[str, Scores]], channel: str = "fused") -> str:
    """set -> kind of question -> top-1 and top-3 of one channel, as a markdown table."""
    lines = [f"| set | kind ({channel}) | questions | top-1 | top-3 |", "|---|---|---|---|---|"]
    for set_name, by_channel in scores.items():
        for kind, (n, top1, top3) in by_channel[channel].by_kind.items():
            lines.append(f"| {set_name} | {kind} | {n} | {top1:.1%} | {top3:.1%} |")
    return "\n".join(lines)


def summary(scores: dict[str, dict[str, Scores]], channel: str = "fused") -> str:
    """One line for the tuned sets together and one for each held-out set: top-1 and top-3."""
    lines = []
    groups = [("tuned sets", [n for n in scores if n not in HELD_OUT])] + [("held-out set", [n]) for n in HELD_OUT if n in scores]
    for label, names in groups:
        picked = [scores[n][channel] for n in names]
        n = sum(s.questions for s in picked)
        if n:
            top1 = sum(s.top1 * s.questions for s in picked) / n
            top3 = sum(s.top3 * s.questions for s in picked) / n
            lines.append(f"{label} ({', '.join(names)}), {channel}: {top1:.1%} top-1, {top3:.1%} top-3 over {n} questions")
    return "\n".join(lines)


def score_set(folder: Path) -> dict[str, Scores]:
    """Build a set's KB in a temporary folder and score every configuration on it."""
    with tempfile.TemporaryDirectory() as tmp:
        kb = build(Path(tmp) / "kb", folder)
        try:
            return {name: evaluate(kb, config, folder=folder) for name, config in CONFIGS.items()}
        finally:
            kb.close()


def measure() -> tuple[str, dict[str, Any]]:
    """Score every configuration on every set: (table, JSON)."""
    scores = {name: score_set(folder) for name, folder in SETS.items()}
    data = {
        set_name: {name: {k: v for k, v in vars(s).items() if k != "misses"} for name, s in by_channel.items()}
        for set_name, by_channel in scores.items()
    }
    return table(scores) + "\n\n" + kinds_table(scores) + "\n\n" + summary(scores), data
