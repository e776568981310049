"""A deterministic synthetic knowledge base: a SLayer catalog of hundreds of models and N memory
files, committed to a git repository in one commit, as a real KB would be.

Everything derives from ``seed``: the vocabulary, the catalog and every memory. Memories are made
in fixed-size chunks, each with its own random stream, so the result does not depend on how many
worker processes wrote them.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from slayer_kb.core.memory import Memory, dumps

# Bump when the output changes, so cached corpora of the old shape are regenerated.
GENERATOR_VERSION = 1
DATASOURCES = ("shop", "wh", "crm", "ads")
# The model a cascade benchmark deletes: exactly every tenth memory refers to it.
HOT_DATASOURCE, HOT_MODEL = "shop", "orders"
HOT_EVERY = 10
CHUNK = 1000
CACHE_DIR = Path(__file__).resolve().parent / ".cache"
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "slayer-kb bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "slayer-kb bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}

FUNCTION_WORDS = (
    "the of and to in is for on that with as by it this from are be at or not when an which "
    "only all per but if so its after before than into each"
).split()
DOMAIN_WORDS = (
    "revenue order orders customer customers refund refunds payment payments invoice invoices "
    "churn retention cohort funnel conversion session sessions visit visits campaign campaigns "
    "spend budget margin cost costs price prices discount voucher shipping tax vat currency "
    "exchange rate region regions country timezone daily weekly monthly quarterly yearly fiscal "
    "calendar week month quarter year date timestamp utc local midnight cutoff late delay lag "
    "warehouse replica snapshot nightly dbt pipeline backfill duplicate duplicates dedupe null "
    "nulls missing negative positive gross net average median total sum count distinct ratio "
    "rate share growth trend forecast target quota segment segments channel channels marketplace "
    "affiliate email search social display organic paid attribution click clicks impression "
    "impressions ctr cpc cpm roas ltv cac arpu mrr arr subscription subscriptions plan plans "
    "trial upgrade downgrade cancellation renewal product products sku category inventory stock "
    "supplier shipment delivery return returns fulfilment carrier status pending cancelled "
    "refunded shipped delivered failed captured authorised chargeback fraud test internal qa "
    "account accounts lead leads opportunity pipeline stage owner team rep deal deals contract "
    "ticket tickets support satisfaction nps survey score event events pageview bounce device "
    "mobile desktop app web browser user users signup login active dormant reactivated join "
    "joins key keys column columns table tables model models measure measures dimension filter "
    "filters query queries dashboard report reports finance marketing sales ops growth analyst "
    "exclude include always never usually rows row grain granularity aggregate aggregated "
    "precomputed rollup rollups partition partitions index slow fast timeout cache stale fresh "
    "schema migration legacy deprecated renamed moved source truth definition rule rules "
    "convention gotcha caveat warning threshold outlier outliers sample window rolling "
    "cumulative running lifetime first last latest earliest previous current"
).split()
COLUMN_WORDS = (
    "amount status channel currency country region price quantity discount cost revenue score "
    "category segment source medium device plan tier stage owner rating weight sku label kind "
    "reason carrier balance fee tax margin clicks impressions spend visits duration"
).split()
TIME_COLUMNS = ("updated_at", "closed_at", "shipped_at", "paid_at", "event_date", "signup_date")
ENGRAM_TYPES = ("decision", "architecture", "bugfix", "pattern", "config", "discovery", "learning")
PROJECTS = tuple(
    "analytics finance growth marketing ops platform billing support data-eng crm ads web".split()
)
_CONSONANTS = "b c d f g h j k l m n p r s t v w z br ch cr dr fl gr kl pl pr sh st th tr".split()
_VOWELS = "a e i o u ai ea io ou".split()


# ---------------------------------------------------------------------------------------------
# Vocabulary


@dataclass
class Vocabulary:
    """Words ranked by frequency with Zipf weights, like natural text."""

    words: list[str]
    cum_weights: list[float]

    def sample(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum_weights, k=k)


@lru_cache(maxsize=4)
def build_vocabulary(seed: int, pseudo_words: int = 5000) -> Vocabulary:
    rng = random.Random(f"{seed}-vocabulary")
    made: set[str] = set(FUNCTION_WORDS) | set(DOMAIN_WORDS)
    pseudo: list[str] = []
    while len(pseudo) < pseudo_words:
        word = "".join(rng.choice(_CONSONANTS) + rng.choice(_VOWELS) for _ in range(rng.randint(2, 4)))
        if word not in made:
            made.add(word)
            pseudo.append(word)
    # Domain words lead the content words so notes read like analytics notes; pseudo words give
    # the long tail a real corpus has (names, jargon, typos).
    content = list(dict.fromkeys(DOMAIN_WORDS))
    rng.shuffle(content)
    rng.shuffle(pseudo)
    words = list(dict.fromkeys(FUNCTION_WORDS)) + content + pseudo
    total = 0.0
    cum: list[float] = []
    for rank in range(1, len(words) + 1):
        total += 1.0 / rank
        cum.append(total)
    return Vocabulary(words, cum)


# ---------------------------------------------------------------------------------------------
# Catalog


@dataclass
class ModelSpec:
    datasource: str
    name: str
    description: str
    columns: list[tuple[str, str, str]]  # (name, type, description)
    measures: list[tuple[str, str, str]]  # (name, formula, description)
    joins: list[str] = field(default_factory=list)

    @property
    def entity(self) -> str:
        return f"{self.datasource}.{self.name}"

    @property
    def leaves(self) -> list[str]:
        return [c[0] for c in self.columns] + [m[0] for m in self.measures]

    def numeric_columns(self) -> list[str]:
        return [c[0] for c in self.columns if c[1] in ("DOUBLE", "INT") and c[0] != "id"]

    def to_yaml(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sql_table": f"{self.datasource}.{self.name}",
            "data_source": self.datasource,
            "description": self.description,
            "columns": [
                {"name": n, "sql": n, "type": t, "description": d, **({"primary_key": True} if n == "id" else {})}
                for n, t, d in self.columns
            ],
            "measures": [{"name": n, "formula": f, "description": d} for n, f, d in self.measures],
            "joins": [
                {"target_model": t, "join_pairs": [[f"{t}_id", "id"]], "join_type": "left",
                 "cardinality": "many_to_one"}
                for t in self.joins
            ],
        }


def _phrase(rng: random.Random, vocab: Vocabulary, low: int, high: int) -> str:
    text = " ".join(vocab.sample(rng, rng.randint(low, high)))
    return text[:1].upper() + text[1:]


def _model_names(rng: random.Random, count: int, taken: set[str]) -> list[str]:
    # Column words stay out of model names: a column named like a model makes bare references
    # ambiguous, which is a resolution test, not a benchmark.
    nouns = [w for w in DOMAIN_WORDS if w.isalpha() and w not in COLUMN_WORDS]
    names: list[str] = []
    while len(names) < count:
        parts = rng.sample(nouns, rng.choice((1, 2, 2, 3)))
        name = "_".join(parts)
        if name not in taken:
            taken.add(name)
            names.append(name)
    return names


def _columns(rng: random.Random, vocab: Vocabulary, joins: list[str]) -> list[tuple[str, str, str]]:
    columns = [("id", "INT", "Primary key"), ("created_at", "TIMESTAMP", "Creation time in UTC")]
    columns += [(f"{t}_id", "INT", f"FK to {t}.id") for t in joins]
    wanted = rng.randint(5, 30)
    pool = COLUMN_WORDS + [f"{a}_{b}" for a, b in zip(COLUMN_WORDS, reversed(COLUMN_WORDS), strict=True)]
    for name in rng.sample(pool, min(len(pool), max(0, wanted - len(columns)))):
        kind = rng.choice(("DOUBLE", "DOUBLE", "INT", "TEXT", "TEXT", "BOOLEAN"))
        columns.append((name, kind, _phrase(rng, vocab, 4, 14)))
    if rng.random() < 0.5:
        columns.append((rng.choice(TIME_COLUMNS), "TIMESTAMP", _phrase(rng, vocab, 4, 10)))
    if not any(c[1] == "DOUBLE" for c in columns):
        columns.append(("amount", "DOUBLE", "Amount in EUR"))
    return list({c[0]: c for c in columns}.values())


def _model(rng: random.Random, vocab: Vocabulary, ds: str, name: str, peers: list[str]) -> ModelSpec:
    joins = rng.sample([p for p in peers if p != name], rng.choice((0, 1, 1, 2, 3)))
    columns = _columns(rng, vocab, joins)
    numeric = [c[0] for c in columns if c[1] == "DOUBLE"]
    measures = [("row_count", "count(*)", "Number of rows")]
    for col in rng.sample(numeric, min(len(numeric), rng.randint(0, 3))):
        measures.append((f"total_{col}", f"sum({col})", _phrase(rng, vocab, 4, 10)))
    return ModelSpec(ds, name, _phrase(rng, vocab, 8, 25) + ".", columns, measures, joins)


@lru_cache(maxsize=4)
def generate_catalog(seed: int) -> list[ModelSpec]:
    """4 datasources of 60-100 models each; model names are unique across the whole catalog so a
    bare ``source_model`` always resolves without a priority decision."""
    rng = random.Random(f"{seed}-catalog")
    vocab = build_vocabulary(seed)
    taken = set(DATASOURCES) | {HOT_MODEL}
    models: list[ModelSpec] = []
    for ds in DATASOURCES:
        names = _model_names(rng, rng.randint(60, 100), taken)
        if ds == HOT_DATASOURCE:
            names[0] = HOT_MODEL
        models.extend(_model(rng, vocab, ds, name, names) for name in names)
    return models


_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=1000, allow_unicode=True)


def write_catalog(root: Path, models: list[ModelSpec]) -> None:
    for ds in DATASOURCES:
        (root / "datasources").mkdir(parents=True, exist_ok=True)
        (root / "models" / ds).mkdir(parents=True, exist_ok=True)
        info = {"name": ds, "type": "postgres", "connection_string": f"${{{ds.upper()}_URL}}",
                "description": f"Synthetic datasource {ds} for the benchmark."}
        (root / "datasources" / f"{ds}.yaml").write_text(_yaml(info))
    for model in models:
        (root / "models" / model.datasource / f"{model.name}.yaml").write_text(_yaml(model.to_yaml()))
    (root / "priority.yaml").write_text(_yaml({"priority": list(DATASOURCES)}))


# ---------------------------------------------------------------------------------------------
# Memories


def _wrap(words: list[str], width: int = 95) -> str:
    lines: list[str] = []
    line: list[str] = []
    length = 0
    for word in words:
        if line and length + 1 + len(word) > width:
            lines.append(" ".join(line))
            line, length = [], 0
        length += len(word) + (1 if line else 0)
        line.append(word)
    if line:
        lines.append(" ".join(line))
    return "\n".join(lines)


def learning_text(rng: random.Random, vocab: Vocabulary, mentions: list[str]) -> str:
    """20-400 words (most near 100) in sentences and paragraphs, naming some of its entities."""
    count = 20 + int(380 * rng.betavariate(1.3, 3.5))
    words = vocab.sample(rng, count)
    for entity in mentions[:2]:
        words[rng.randrange(len(words))] = entity
    paragraphs: list[str] = []
    sentence_words: list[str] = []
    position = 0
    while position < len(words):
        size = rng.randint(5, 18)
        sentence = words[position:position + size]
        position += size
        if "." not in sentence[0]:  # an entity name keeps its case
            sentence[0] = sentence[0][:1].upper() + sentence[0][1:]
        sentence[-1] += "."
        sentence_words.extend(sentence)
        if rng.random() < 0.2 and position < len(words):
            paragraphs.append(_wrap(sentence_words))
            sentence_words = []
    if sentence_words:
        paragraphs.append(_wrap(sentence_words))
    return "\n\n".join(paragraphs) + "\n"


def _pick_entity(rng: random.Random, model: ModelSpec) -> str:
    if rng.random() < 0.25:
        return model.entity
    return f"{model.entity}.{rng.choice(model.leaves)}"


def _example_query(rng: random.Random, model: ModelSpec) -> tuple[dict[str, Any], list[str]]:
    """A SlayerQuery on ``model`` and the canonical entities it touches (source model first)."""
    numeric = model.numeric_columns() or ["id"]
    texts = [c[0] for c in model.columns if c[1] == "TEXT"]
    measure = rng.choice(numeric)
    query: dict[str, Any] = {"source_model": model.name, "measures": [{"formula": f"sum({measure})"}]}
    used = [measure]
    if texts:
        dim = rng.choice(texts)
        query["dimensions"] = [dim]
        used.append(dim)
        if rng.random() < 0.5:
            query["filters"] = [f"{dim} = 'paid'"]
    query["time_dimensions"] = [{"dimension": "created_at", "granularity": rng.choice(("day", "week", "month"))}]
    used.append("created_at")
    entities = [model.entity] + [f"{model.entity}.{c}" for c in dict.fromkeys(used)]
    return query, entities


def make_memory(index: int, rng: random.Random, vocab: Vocabulary, models: list[ModelSpec],
                hot: ModelSpec, start: datetime) -> Memory:
    memory_id = str(index)
    hot_memory = index % HOT_EVERY == 0
    chosen = [rng.choice(models) for _ in range(rng.choice((1, 1, 2, 2, 2, 3, 3, 4, 5, 6)))]
    if hot_memory:
        chosen[0] = hot
    query = None
    if rng.random() < 0.1:
        query, entities = _example_query(rng, chosen[0])
    else:
        entities = [_pick_entity(rng, m) for m in chosen]
    entities = list(dict.fromkeys(entities))
    if index > 1 and rng.random() < 0.08:
        entities.append(f"memory:{rng.randint(1, index - 1)}")
    created = start + timedelta(minutes=7 * index + rng.randint(0, 6))
    stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
    fields: dict[str, Any] = {}
    if rng.random() < 0.5:
        kind = rng.choice(ENGRAM_TYPES)
        project = rng.choice(PROJECTS)
        fields = {
            "title": _phrase(rng, vocab, 3, 8),
            "type": kind,
            "project": project,
            "scope": "personal" if rng.random() < 0.1 else "project",
            "topic_key": f"{kind}/topic-{index}" if rng.random() < 0.2 else None,
            "session_id": f"session-{project}-{index // 25}",
            "revision_count": rng.choice((1, 1, 1, 2, 3)),
            "duplicate_count": 1,
        }
    return Memory(
        id=memory_id,
        learning=learning_text(rng, vocab, [e for e in entities if not e.startswith("memory:")]),
        created_at=stamp,
        description=_phrase(rng, vocab, 6, 15) if rng.random() < 0.25 else None,
        entities=entities,
        query=query,
        **fields,
    )


def _chunk(seed: int, first: int, last: int) -> Iterator[Memory]:
    """Memories ``first`` to ``last``, one chunk: its own random stream, named by its first."""
    vocab = build_vocabulary(seed)
    models = generate_catalog(seed)
    hot = next(m for m in models if m.entity == f"{HOT_DATASOURCE}.{HOT_MODEL}")
    others = [m for m in models if m is not hot]
    rng = random.Random(f"{seed}-memories-{first}")
    start = datetime(2025, 1, 1, tzinfo=timezone.utc)
    for index in range(first, last + 1):
        yield make_memory(index, rng, vocab, others, hot, start)


def _chunks(size: int) -> list[tuple[int, int]]:
    return [(first, min(size, first + CHUNK - 1)) for first in range(1, size + 1, CHUNK)]


def memories(size: int, seed: int) -> Iterator[Memory]:
    """The corpus's memories 1 to ``size``, as ``write_memories`` writes them, without a KB."""
    for first, last in _chunks(size):
        yield from _chunk(seed, first, last)


def _write_chunk(args: tuple[Path, int, int, int]) -> int:
    root, seed, first, last = args
    folder = root / "memories"
    for memory in _chunk(seed, first, last):
        (folder / f"{memory.id}.yaml").write_text(dumps(memory), encoding="utf-8")
    return last - first + 1


def write_memories(root: Path, size: int, seed: int, workers: int | None = None) -> None:
    (root / "memories").mkdir(parents=True, exist_ok=True)
    chunks = [(root, seed, first, last) for first, last in _chunks(size)]
    workers = workers or (os.cpu_count() or 1)
    if workers <= 1 or len(chunks) <= 1:
        for chunk in chunks:
            _write_chunk(chunk)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        list(pool.map(_write_chunk, chunks))


# ---------------------------------------------------------------------------------------------
# Repository and cache


@dataclass
class Corpus:
    root: Path
    size: int
    seed: int
    base: str  # the commit that holds the generated corpus; runs reset to it
    hot_model: str
    hot_count: int
    generate_seconds: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"root": str(self.root), "size": self.size, "seed": self.seed, "base": self.base,
                "hot_model": self.hot_model, "hot_count": self.hot_count,
                "generate_seconds": self.generate_seconds}


def git(root: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, **GIT_IDENTITY, **(env or {})}
    proc = subprocess.run(["git", *args], cwd=root, input=input, env=full_env,
                          capture_output=True, check=True)
    return proc.stdout.decode().strip()


def generate(root: Path, size: int, seed: int, workers: int | None = None) -> Corpus:
    """Write a fresh corpus at ``root`` (replacing anything there) and commit it."""
    began = time.perf_counter()
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    git(root, "init", "-q")
    (root / ".gitignore").write_text(".slayer-kb/\n")
    write_catalog(root, generate_catalog(seed))
    write_memories(root, size, seed, workers)
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", f"bench corpus: {size} memories, seed {seed}")
    base = git(root, "rev-parse", "HEAD")
    hot_count = len(range(HOT_EVERY, size + 1, HOT_EVERY))
    return Corpus(root, size, seed, base, f"{HOT_DATASOURCE}.{HOT_MODEL}", hot_count,
                  time.perf_counter() - began)


def cached(size: int, seed: int, cache_dir: Path = CACHE_DIR) -> Corpus:
    """The corpus for (size, seed), generated once and reset to its base commit on later calls.

    The working copy (and its index in ``.slayer-kb/``) is reused in place, not copied: a copy
    would change every inode, and the index would then see 100,000 changed files.
    """
    root = cache_dir / f"kb-{size}-s{seed}"
    meta_path = cache_dir / f"kb-{size}-s{seed}.json"
    meta = _read_meta(meta_path)
    if meta is None or meta.get("version") != GENERATOR_VERSION or not (root / ".git").is_dir():
        corpus = generate(root, size, seed)
        meta_path.write_text(json.dumps({"version": GENERATOR_VERSION, **corpus.to_json()}, indent=1))
        return corpus
    reset(root, meta["base"])
    return Corpus(root, size, seed, meta["base"], meta["hot_model"], meta["hot_count"])


def reset(root: Path, base: str) -> None:
    """Undo what a previous run did (saves, hand edits, cascades); the index catches up itself."""
    git(root, "reset", "-q", "--hard", base)
    git(root, "clean", "-fdq", "--", "memories", "models", "datasources")


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
