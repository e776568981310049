"""The relevance sets: hand-written memories and questions (memories.yaml, questions.yaml), a
KB built from them, and top-1 / top-3 / MRR for each search channel alone and fused.

Two sets: the first (this folder: 326 memories, 184 questions of five kinds) is the one the
search was tuned on; the second (second/: 120 memories, 60 paraphrases) was written apart from it,
without running a search on it, as an untuned check of how the tuning carries over.

    python -m bench.relevance          # prints the table
"""

from __future__ import annotations

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
from slayer_kb.search import Request, run

HERE = Path(__file__).resolve().parent
SETS = {"first": HERE, "second": HERE / "second"}
EXAMPLE = HERE.parent.parent / "kb"
CREATED = "2026-11-01T09:00:00Z"
ALL_CHANNELS = frozenset({"words", "meaning", "entities"})
# name -> (channels, fusion)
CONFIGS = {
    "words": (frozenset({"words", "entities"}), "blend"),
    "meaning": (frozenset({"meaning", "entities"}), "blend"),
    "fused (rrf)": (ALL_CHANNELS, "rrf"),
    "fused": (ALL_CHANNELS, "blend"),
}


def load(name: str, folder: Path = HERE) -> list[dict[str, Any]]:
    return yaml.safe_load((folder / name).read_text(encoding="utf-8"))


def build(root: Path, folder: Path = HERE) -> KnowledgeBase:
    """A git-backed KB at ``root``: the example catalog and a set's memories, one commit."""
    KnowledgeBase.init(root)
    for part in ("datasources", "models"):
        shutil.copytree(EXAMPLE / part, root / part)
    shutil.copy(EXAMPLE / "priority.yaml", root / "priority.yaml")
    for item in load("memories.yaml", folder):
        memory = Memory(
            id=item["id"], learning=item["learning"], created_at=CREATED, title=item.get("title"),
            type=item.get("type"), entities=list(item.get("entities") or []), project=item.get("project"),
        )
        (root / "memories" / f"{memory.id}.yaml").write_text(dumps(memory), encoding="utf-8")
    subprocess.run(["git", "add", "-A", "."], cwd=root, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-q", "-m", "relevance set"], cwd=root, check=True, capture_output=True)
    return KnowledgeBase(root)


@dataclass
class Scores:
    questions: int
    top1: float
    top3: float
    mrr: float
    ms_p50: float
    misses: list[tuple[str, list[str]]]


def evaluate(
    kb: KnowledgeBase, config: tuple[frozenset[str], str], kinds: set[str] | None = None, folder: Path = HERE
) -> Scores:
    kb.ensure_fresh()
    hits1 = hits3 = 0
    reciprocal = 0.0
    times: list[float] = []
    misses = []
    questions = [q for q in load("questions.yaml", folder) if kinds is None or q["kind"] in kinds]
    for q in questions:
        entities, _warnings = kb.resolve_entities(q["entities"]) if q.get("entities") else ([], [])
        request = Request(
            question=q.get("q", ""), entities=entities, inputs_given=bool(entities), type=q.get("type"),
            project=q.get("project"), limit=10, channels=config[0], fusion=config[1],
        )
        start = time.perf_counter()
        found = run(kb.index, request)
        times.append(time.perf_counter() - start)
        ranked = [d["id"] for d in sorted(found.memories + found.example_queries, key=lambda d: -d["score"])]
        expected = set(q["expect"])
        rank = next((n for n, m in enumerate(ranked, 1) if m in expected), None)
        hits1 += rank == 1
        hits3 += rank is not None and rank <= 3
        reciprocal += 1 / rank if rank else 0.0
        if rank != 1:
            misses.append((q.get("q", ""), ranked[:3]))
    times.sort()
    n = len(questions)
    return Scores(n, hits1 / n, hits3 / n, reciprocal / n, 1000 * times[n // 2], misses)


def table(scores: dict[str, dict[str, Scores]]) -> str:
    """set -> channel -> scores, as one markdown table."""
    lines = ["| set | channel | questions | top-1 | top-3 | MRR | p50 ms |", "|---|---|---|---|---|---|---|"]
    for set_name, by_channel in scores.items():
        for name, s in by_channel.items():
            lines.append(
                f"| {set_name} | {name} | {s.questions} | {s.top1:.1%} | {s.top3:.1%} | {s.mrr:.3f} | {s.ms_p50:.1f} |"
            )
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
    """Score every configuration on both sets: (table, JSON)."""
    scores = {name: score_set(folder) for name, folder in SETS.items()}
    data = {
        set_name: {name: {k: v for k, v in vars(s).items() if k != "misses"} for name, s in by_channel.items()}
        for set_name, by_channel in scores.items()
    }
    return table(scores), data
