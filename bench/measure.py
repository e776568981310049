"""The measurements, each against a baseline doing the same work on the same corpus in the same run.

Every figure keeps its raw samples; the table shows medians (and p95 where the issue asks for it).
Times are in seconds internally and converted for display in ``report``.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import itertools
import os
import random
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slayer_kb import KnowledgeBase
from slayer_kb.core.memory import dumps
from slayer_kb.daemon import relay
from slayer_kb.search.index import RACY_SECONDS
from slayer_kb.search.schema import text_terms
from slayer_kb.store import upkeep

from . import corpus as corpus_mod
from . import peer
from .corpus import Corpus, git

Log = Callable[[str], None]
_WORD = re.compile(r"\w+(?:[.'-]\w+)*", re.UNICODE)
QUESTION_TEMPLATES = (
    "how do I compute {a} {b} per {c}?",
    "why is {a} different from {b} in the {c} report",
    "what is the rule for {a} and {b}",
    "which table has {a} by {b}?",
    "is {a} already net of {b}",
)


SAVE_BLOCK = 3
# First commands measured, each finding no server (it starts one, which takes seconds at 100k).
FIRST_COMMANDS = 3


@dataclass
class Plan:
    """How many samples each figure takes; the 100k size repeats the slowest steps less."""

    saves: int = 45
    steady: int = 500
    processes: int = 7
    fresh: int = 20
    changed_one: int = 5
    changed_many: int = 3
    watcher: int = 10
    reindex: int = 3
    validate: int = 3
    cascade: int = 2
    search_passes: int = 2
    # Seconds all timed passes over the 200 queries may take; a slow search is then measured on a
    # prefix of the interleaved query list (the JSON says how many) instead of stalling the run.
    search_budget: float = 15.0
    reindex_budget: float = 60.0

    @classmethod
    def for_size(cls, size: int) -> Plan:
        if size >= 50_000:
            # Three rebuilds (about three minutes): one sample moved between 47 and 60 s run to run.
            return cls(saves=12, processes=7, reindex=3, validate=1, cascade=3, changed_many=3,
                       search_budget=60.0, reindex_budget=240.0)
        if size > 2_000:
            return cls(search_budget=40.0)
        return cls()


def summary(samples: list[float], unit: str = "s", **extra: Any) -> dict[str, Any]:
    ordered = sorted(samples)
    return {
        "median": statistics.median(ordered),
        "p95": _percentile(ordered, 95),
        "min": ordered[0],
        "max": ordered[-1],
        "n": len(ordered),
        "unit": unit,
        "samples": samples,
        **extra,
    }


def _percentile(ordered: list[float], pct: float) -> float:
    """Nearest-rank percentile: an observed value, never an interpolation."""
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def skipped(note: str) -> dict[str, Any]:
    return {"median": None, "note": note}


def ratio(a: dict[str, Any], b: dict[str, Any], key: str = "median") -> dict[str, Any]:
    if a.get(key) is None or not b.get(key):
        return skipped("baseline missing")
    return {"median": a[key] / b[key], "unit": "x"}


def timed(fn: Callable[[], Any]) -> float:
    began = time.perf_counter()
    fn()
    return time.perf_counter() - began


def cli_command() -> list[str]:
    script = Path(sys.executable).with_name("slayer-kb")
    return [str(script)] if script.exists() else [sys.executable, "-m", "slayer_kb"]


def run_process(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, int, str]:
    """Wall time (s), peak RSS (KiB) of that one child, and stderr if it failed. Unless ``env``
    says otherwise the child starts no warm server (SLAYER_KB_SERVER=manual, set by ``Runner``).

    The RSS comes from GNU time where it exists: Python starts children with vfork, and a
    vforked child's peak RSS is the bench process's own until the exec (hundreds of MiB)."""
    timer = ["/usr/bin/time", "-f", "%M", "-o"] if Path("/usr/bin/time").exists() else None
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r") as rss:
        began = time.perf_counter()
        proc = subprocess.Popen([*timer, rss.name, *args] if timer else args, cwd=cwd,
                                stdout=subprocess.DEVNULL, stderr=err, env=env)
        # wait4 gives this child's own rusage, unlike RUSAGE_CHILDREN's running maximum.
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        problem = "" if proc.returncode == 0 else err.read().decode(errors="replace")[-500:]
        lines = rss.read().strip().splitlines()
    peak = int(lines[-1]) if timer and lines and lines[-1].isdigit() else usage.ru_maxrss
    return wall, peak, problem


# ---------------------------------------------------------------------------------------------


class Runner:
    """Runs every measurement on one corpus; ``results`` is what lands in the JSON."""

    def __init__(self, corpus: Corpus, plan: Plan, log: Log) -> None:
        self.corpus = corpus
        self.root = corpus.root
        self.plan = plan
        self.log = log
        self.rng = random.Random(f"{corpus.seed}-bench")
        self.results: dict[str, Any] = {}
        self.last_write = 0.0
        self.kb = KnowledgeBase(self.root)
        self.models = corpus_mod.generate_catalog(corpus.seed)
        self.vocab = corpus_mod.build_vocabulary(corpus.seed)
        self.counter = 0
        # Processes are cold unless a step says otherwise: none starts a warm server on its own
        # (they still relay to a `slayer-kb watch` a step runs). The "server" step turns it on.
        os.environ["SLAYER_KB_SERVER"] = "manual"
        # Nor a sentence-vector filler running beside the steps it would slow (bench/sentences.py
        # measures the encoder).
        os.environ["SLAYER_KB_NO_FILLER"] = "1"

    def run(self, only: set[str] | None = None) -> dict[str, Any]:
        """Every step, or those named in ``only`` (by the first word of their name)."""
        steps: list[tuple[str, Callable[[], None]]] = [
            ("reindex", self.reindex),
            ("freshness (unchanged)", self.fresh_unchanged),
            ("search", self.search),
            ("vectors", self.vectors),
            ("processes", self.processes),
            ("save vs git", self.saves),
            ("server", self.server),
            ("steady saves", self.steady),
            ("freshness (changed)", self.fresh_changed),
            ("watcher", self.watcher),
            ("validate", self.validate),
            ("cascade", self.cascade),
            ("basic-memory", self.peer),
        ]
        for name, step in steps:
            if only is not None and name.split()[0] not in only:
                continue
            self.log(f"  {self.corpus.size}: {name} ...")
            began = time.perf_counter()
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - one broken step must not hide the others
                self.results.setdefault("errors", {})[name] = f"{type(exc).__name__}: {exc}"
                self.log(f"    failed: {type(exc).__name__}: {exc}")
            self.log(f"    {time.perf_counter() - began:.1f} s")
        self.kb.close()
        return self.results

    # -- helpers ----------------------------------------------------------------------------

    def _unique(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def settle(self) -> None:
        """Wait out the index's racy-timestamp window so the next check starts from a warm index."""
        wait = self.last_write + RACY_SECONDS + 0.1 - time.time()
        if wait > 0:
            time.sleep(wait)
        self.kb.ensure_fresh()

    def entity(self) -> str:
        model = self.rng.choice(self.models)
        return f"{model.entity}.{self.rng.choice(model.leaves)}"

    def learning(self) -> str:
        return " ".join(self.vocab.sample(self.rng, 60)) + "\n"

    # -- reindex ----------------------------------------------------------------------------

    def reindex(self) -> None:
        self.kb.ensure_fresh()  # a cached corpus may trail its files by the last run's edits
        samples: list[float] = []
        while len(samples) < self.plan.reindex and (not samples or sum(samples) < self.plan.reindex_budget):
            samples.append(timed(self.kb.reindex))
        documents = self.kb.index.searcher().doc_count()
        figure = summary(samples, documents=documents)
        # Memories per second: the catalog's documents are a fixed cost beside them.
        figure["docs_per_second"] = self.corpus.size / figure["median"]
        self.results["reindex"] = figure
        self.last_write = time.time()

    # -- meaning vectors ---------------------------------------------------------------------

    def vectors(self) -> None:
        """What the meaning channel costs: its table on disk, and one memory's index update
        (words and vector) against the vector alone."""
        self.settle()
        db = sqlite3.connect(self.kb.index.dir / "manifest.db")
        try:
            try:
                size = db.execute("SELECT sum(pgsize) FROM dbstat WHERE name LIKE '%vectors%'").fetchone()[0]
            except sqlite3.Error:  # SQLite built without dbstat: the payload is close
                size = db.execute("SELECT sum(length(vec) + length(id) + 64) FROM vectors").fetchone()[0]
        finally:
            db.close()
        self.results["vectors_disk"] = {"median": (size or 0) / 2**20}
        update: list[float] = []
        vector: list[float] = []
        for _ in range(self.plan.saves):
            memory_id = str(self.rng.randint(1, self.corpus.size))
            path = self.root / "memories" / f"{memory_id}.yaml"
            memory = self.kb.read(memory_id).evolve(learning=self.learning())
            path.write_text(dumps(memory), encoding="utf-8")
            update.append(timed(lambda m=memory_id: self.kb.index.update([m])))
            vector.append(timed(lambda m=memory: self.kb.index.vector_rows([m])))
        self.results["index_update"] = summary(update)
        self.results["vector_update"] = summary(vector)
        subprocess.run(["git", "checkout", "-q", "--", "memories"], cwd=self.root, check=True)
        self.last_write = time.time()

    # -- freshness --------------------------------------------------------------------------

    def fresh_unchanged(self) -> None:
        self.settle()
        synced = 0
        samples = []
        for _ in range(self.plan.fresh):
            began = time.perf_counter()
            report = self.kb.ensure_fresh()
            samples.append(time.perf_counter() - began)
            synced += report is not None
        self.results["fresh_unchanged"] = summary(samples, note=f"{synced} checks found changes")

    def _edit_by_hand(self, count: int) -> None:
        for memory_id in self.rng.sample(range(1, self.corpus.size + 1), count):
            path = self.root / "memories" / f"{memory_id}.yaml"
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace("learning: |\n  ", "learning: |\n  edited ", 1), encoding="utf-8")
        self.last_write = time.time()

    def fresh_changed(self) -> None:
        for key, count, repeats in (("fresh_1", 1, self.plan.changed_one), ("fresh_100", 100, self.plan.changed_many)):
            samples = []
            for _ in range(repeats):
                self.settle()
                self._edit_by_hand(count)
                samples.append(timed(self.kb.ensure_fresh))
            self.results[key] = summary(samples)
        # Untimed: undo the edits, which later steps (a cascade) would rightly refuse to commit.
        git(self.root, "checkout", "-q", "--", "memories")
        self.last_write = time.time()

    # -- search -----------------------------------------------------------------------------

    def queries(self) -> list[tuple[str, str]]:
        """200 (kind, text) pairs: 60 words, 40 phrases, 50 questions, 50 entity lookups."""
        rng = random.Random(f"{self.corpus.seed}-queries")
        words = self.vocab.words
        content = [w for w in words if text_terms(w)]
        singles = [rng.choice(content[:300]) for _ in range(20)]
        singles += [rng.choice(content[300:2000]) for _ in range(20)]
        singles += [rng.choice(content[2000:]) for _ in range(20)]
        phrases = [self._phrase_from_corpus(rng) for _ in range(40)]
        domain = [w for w in corpus_mod.DOMAIN_WORDS if text_terms(w)]
        questions = [
            rng.choice(QUESTION_TEMPLATES).format(a=rng.choice(domain), b=rng.choice(domain), c=rng.choice(domain))
            for _ in range(50)
        ]
        entities = []
        for _ in range(50):
            model = rng.choice(self.models)
            entities.append(model.entity if rng.random() < 0.3 else f"{model.entity}.{rng.choice(model.leaves)}")
        groups = [
            [("word", q) for q in singles],
            [("phrase", q) for q in phrases],
            [("question", q) for q in questions],
            [("entity", q) for q in entities],
        ]
        # Interleaved, so any prefix a time budget keeps has every kind in proportion.
        mixed = [q for row in itertools.zip_longest(*groups) for q in row if q is not None]
        return mixed

    def _phrase_from_corpus(self, rng: random.Random) -> str:
        memory_id = rng.randint(1, self.corpus.size)
        text = (self.root / "memories" / f"{memory_id}.yaml").read_text(encoding="utf-8")
        learning = text.split("learning: |\n", 1)[-1]
        tokens = [w for w in _WORD.findall(learning) if "." not in w][:200]
        for _ in range(20):
            start = rng.randrange(max(1, len(tokens) - 3))
            phrase = tokens[start:start + rng.randint(2, 3)]
            if any(text_terms(w) for w in phrase):
                return " ".join(phrase).lower()
        return tokens[0].lower()

    def _kb_search(self, kind: str, text: str) -> int:
        if kind == "entity":
            result = self.kb.search(entities=[text])
        else:
            result = self.kb.search(question=text)
        return len(result.memories) + len(result.example_queries)

    def _time_queries(self, queries: list[tuple[str, str]], search: Callable[[str, str], int]) -> list[tuple[str, str, float]]:
        """(kind, text, seconds) for each timed query; the first 20 queries warm caches first."""
        for kind, text in queries[:20]:
            search(kind, text)
        out: list[tuple[str, str, float]] = []
        began = time.perf_counter()
        for _ in range(self.plan.search_passes):
            for kind, text in queries:
                if time.perf_counter() - began > self.plan.search_budget:
                    break
                out.append((kind, text, timed(lambda k=kind, t=text: search(k, t))))
        return out

    def search(self) -> None:
        self.settle()
        queries = self.queries()
        kb_times = self._time_queries(queries, self._kb_search)
        measured = min(len(queries), len(kb_times))
        complete = len(kb_times) == len(queries) * self.plan.search_passes
        note = None if complete else (
            f"time budget: {measured} of {len(queries)} queries measured")
        self.results["search"] = summary([s for _, _, s in kb_times], note=note, queries=measured)
        words = [s for k, _, s in kb_times if k != "entity"]
        self.results["search_words"] = summary(words)
        for kind in ("word", "phrase", "question", "entity"):
            ts = [s for k, _, s in kb_times if k == kind]
            if ts:
                self.results[f"search_{kind}"] = summary(ts)
        # The same searches in a warm process (as the MCP server runs): its file monitor lets a
        # search skip the per-file freshness scan while nothing changed.
        self.kb.keep_warm()
        try:
            warm_times = self._time_queries(queries, self._kb_search)
        finally:
            self.kb.close()
        self.results["search_warm"] = summary([s for _, _, s in warm_times])
        self.results["search_words_warm"] = summary([s for k, _, s in warm_times if k != "entity"])
        # FTS5 answers exactly the word queries Whoosh was timed on, as often.
        timed_words = list(dict.fromkeys((k, t) for k, t, _ in kb_times if k != "entity"))
        self._fts5(timed_words)

    def _fts5(self, queries: list[tuple[str, str]]) -> None:
        db = sqlite3.connect(":memory:")
        db.execute(
            "CREATE VIRTUAL TABLE m USING fts5(id UNINDEXED, title, learning, description, "
            "tokenize='porter unicode61')"
        )
        began = time.perf_counter()
        rows = []
        for fields in self.kb.index.searcher().all_stored_fields():
            if fields.get("kind") == "memory":
                data = fields["data"]
                rows.append((data["id"], data["title"] or "", data["learning"], data["description"] or ""))
        db.executemany("INSERT INTO m VALUES (?, ?, ?, ?)", rows)
        db.commit()
        build = time.perf_counter() - began

        def fts_search(_kind: str, text: str) -> int:
            # The words Whoosh keeps (its analyser drops stop words), all required, then any of
            # them when nothing has all: the same semantics as KnowledgeBase.search.
            words = ['"' + w.replace('"', '""') + '"' for w in _WORD.findall(text) if text_terms(w)]
            if not words:
                return 0
            sql = "SELECT id FROM m WHERE m MATCH ? ORDER BY bm25(m, 0, 3.0, 2.0, 1.0) LIMIT 10"
            found = db.execute(sql, (" ".join(words),)).fetchall()
            if not found and len(words) > 1:
                found = db.execute(sql, (" OR ".join(words),)).fetchall()
            return len(found)

        times = self._time_queries(queries, fts_search)
        self.results["fts5_words"] = summary([s for _, _, s in times], build_seconds=build)
        db.close()
        # FTS5 answers from memory and checks no files: the like-for-like Whoosh figure is the
        # warm process's (its file monitor spares the per-file freshness scan); the cold ratio,
        # which includes that scan, is kept beside it.
        self.results["search_vs_fts5_p50"] = ratio(self.results["search_words_warm"], self.results["fts5_words"])
        self.results["search_vs_fts5_p95"] = ratio(self.results["search_words_warm"], self.results["fts5_words"], "p95")
        self.results["cold_search_vs_fts5_p50"] = ratio(self.results["search_words"], self.results["fts5_words"])

    # -- saves ------------------------------------------------------------------------------

    def _save_in_process(self) -> None:
        self.kb.save_memory(self.learning(), [self.entity()])

    def _observe_in_process(self) -> None:
        """Engram's ``mem_save``: the duplicate and topic-key look-ups, then a commit."""
        self.kb.save_observation(title=self._unique("Bench observation "), content=self.learning(),
                                 type="decision", project="bench")

    def _plumbing_commit(self) -> float:
        rel = f"memories/{self._unique('bench-plumbing-')}.yaml"
        data = f"learning: |\n  {self.learning()}entities:\n- {self.entity()}\ncreated_at: '2026-01-01T00:00:00Z'\n"
        env = {"GIT_INDEX_FILE": str(self.root / ".slayer-kb" / "bench-index")}

        def commit() -> None:
            (self.root / rel).write_text(data, encoding="utf-8")
            blob = git(self.root, "hash-object", "-w", "--", rel)
            git(self.root, "read-tree", "HEAD", env=env)
            git(self.root, "update-index", "--add", "--cacheinfo", f"100644,{blob},{rel}", env=env)
            tree = git(self.root, "write-tree", env=env)
            old = git(self.root, "rev-parse", "HEAD")
            new = git(self.root, "commit-tree", tree, "-p", old, "-m", f"plumbing {rel}")
            git(self.root, "update-ref", "HEAD", new, old)

        seconds = timed(commit)
        # Untimed: keep the real index in step with HEAD, or the next 'git commit' would drop it.
        git(self.root, "update-index", "--add", "--", rel)
        return seconds

    def _add_commit(self) -> float:
        rel = f"memories/{self._unique('bench-add-')}.yaml"
        data = f"learning: |\n  {self.learning()}entities:\n- {self.entity()}\ncreated_at: '2026-01-01T00:00:00Z'\n"

        def commit() -> None:
            (self.root / rel).write_text(data, encoding="utf-8")
            git(self.root, "add", "--", rel)
            git(self.root, "commit", "-q", "--no-verify", "-m", f"add {rel}")

        return timed(commit)

    def saves(self) -> None:
        """Each way of committing runs in blocks of SAVE_BLOCK in a row, the blocks' order rotating
        round by round: a save's first commit in a block follows another tool's commits (HEAD
        moved: slayer-kb reads them to keep auto ids unique), the others follow its own, as
        when an agent saves several memories. The two are reported apart."""
        self.settle()
        after_own, after_git, plumbing, add, observe = [], [], [], [], []

        def save_block() -> None:
            for n in range(SAVE_BLOCK):
                (after_git if n == 0 else after_own).append(timed(self._save_in_process))

        def observe_block() -> None:
            # the first follows another tool's commits, as the first of save_block does: not kept
            timed(self._observe_in_process)
            observe.extend(timed(self._observe_in_process) for _ in range(SAVE_BLOCK - 1))

        blocks: list[Callable[[], None]] = [
            save_block,
            observe_block,
            lambda: plumbing.extend(self._plumbing_commit() for _ in range(SAVE_BLOCK)),
            lambda: add.extend(self._add_commit() for _ in range(SAVE_BLOCK)),
        ]
        for round_no in range(max(1, self.plan.saves // SAVE_BLOCK)):
            shift = round_no % len(blocks)
            for block in blocks[shift:] + blocks[:shift]:
                block()
        self.last_write = time.time()
        self.results["save"] = summary(after_own)
        self.results["save_after_git"] = summary(after_git)
        self.results["git_plumbing"] = summary(plumbing)
        self.results["git_add_commit"] = summary(add)
        self.results["save_vs_plumbing"] = ratio(self.results["save"], self.results["git_plumbing"])
        self.results["save_vs_add_commit"] = ratio(self.results["save"], self.results["git_add_commit"])
        self.results["save_after_git_vs_add_commit"] = ratio(self.results["save_after_git"], self.results["git_add_commit"])
        self.results["save_observation"] = summary(observe)
        self.results["save_observation_vs_save"] = ratio(self.results["save_observation"], self.results["save"])
        self._warm_saves()

    def _warm_saves(self) -> None:
        """Both kinds of save in a warm KB (``keep_warm``: the MCP server's and the warm
        server's), in alternating blocks: its file monitor spares an Engram save the freshness
        scan its look-ups otherwise need after every commit."""
        warm = KnowledgeBase(self.root)
        warm.keep_warm()
        memory, observe = [], []
        try:
            warm.save_memory(self.learning(), [self.entity()])  # untimed: opens the index
            for _ in range(max(1, self.plan.saves // SAVE_BLOCK)):
                memory.extend(timed(lambda: warm.save_memory(self.learning(), [self.entity()]))
                              for _ in range(SAVE_BLOCK))
                observe.extend(timed(lambda: warm.save_observation(
                    title=self._unique("Bench observation "), content=self.learning(), type="decision",
                    project="bench")) for _ in range(SAVE_BLOCK))
        finally:
            warm.close()
        self.last_write = time.time()
        self.results["save_warm"] = summary(memory)
        self.results["save_observation_warm"] = summary(observe)
        self.results["save_observation_warm_vs_save"] = ratio(self.results["save_observation_warm"],
                                                              self.results["save_warm"])

    def steady(self) -> None:
        """``plan.steady`` saves in a row, as an agent makes them over weeks: their p50, p95 and
        max (stalls show as max), beside as many plain ``git add`` + ``git commit`` runs; then
        ``maintenance`` (what upkeep does in the background), and the repository's growth a save
        with the most loose objects seen on the way."""
        self.settle()
        git(self.root, "gc", "-q", "--prune=now")  # untimed: start from a compact store
        start_bytes = _tree_bytes(self.root / ".git")
        samples: list[float] = []
        most_loose = 0
        for n in range(self.plan.steady):
            samples.append(timed(self._save_in_process))
            if n % 25 == 0:
                most_loose = max(most_loose, upkeep.loose_objects(self.root / ".git" / "objects"))
        git_samples = [self._add_commit() for _ in range(max(10, self.plan.steady // 5))]
        upkeep.wait(self.root / ".slayer-kb", 600)
        self.kb.maintain()
        self.last_write = time.time()
        self.results["steady_save"] = summary(samples, p95_over_p50=_p(samples, 95) / _p(samples, 50),
                                              max_over_p50=max(samples) / _p(samples, 50))
        self.results["steady_git"] = summary(git_samples)
        self.results["steady_growth"] = summary(
            [(_tree_bytes(self.root / ".git") - start_bytes) / 1024 / (self.plan.steady + len(git_samples))],
            unit="KB", most_loose=most_loose)

    # -- whole processes --------------------------------------------------------------------

    def processes(self) -> None:
        self.settle()
        base = [*cli_command(), "--kb", str(self.root)]
        queries = [q for kind, q in self.queries() if kind != "entity"]
        searches = [run_process([*base, "search", queries[i]], self.root) for i in range(self.plan.processes)]
        saves = [
            run_process([*base, "save", self.learning(), "-e", self.entity()], self.root)
            for _ in range(self.plan.processes)
        ]
        self.last_write = time.time()
        relayed = self._relayed_searches(base, queries)
        for key, runs in (("process_search", searches), ("process_save", saves), ("process_search_relayed", relayed)):
            if runs is None:
                self.results[key] = skipped("searches are relayed to a watcher on Linux only")
                continue
            failures = [p for _, _, p in runs if p]
            self.results[key] = summary([w for w, _, _ in runs], note=failures[0] if failures else None)
            self.results[key + "_rss"] = summary([float(r) / 1024 for _, r, _ in runs], unit="MiB")

    def _relayed_searches(self, base: list[str], queries: list[str]) -> list[tuple[float, int, str]] | None:
        """The same searches as processes while ``slayer-kb watch`` runs: relay.py hands them to it."""
        if not relay.SUPPORTED:
            return None
        proc = subprocess.Popen([*base, "watch"], cwd=self.root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            assert proc.stderr is not None
            first = proc.stderr.readline().decode(errors="replace")
            if not first.startswith("Watching"):
                raise RuntimeError(f"slayer-kb watch did not start: {first}")
            # The first search waits for the watcher's initial sync and opens its searcher: not counted.
            run_process([*base, "search", queries[0]], self.root)
            return [run_process([*base, "search", queries[i]], self.root) for i in range(self.plan.processes)]
        finally:
            _stop(proc)

    # -- the warm server (docs/server.md) ------------------------------------------------------

    def server(self) -> None:
        """`slayer-kb search` and `save` processes once the KB's server runs, and the first
        command, which finds none, runs in its process and starts one."""
        if not relay.SUPPORTED:
            self.results["server_search"] = skipped("no server on this system")
            return
        self.settle()
        base = [*cli_command(), "--kb", str(self.root)]
        env = {**os.environ, "SLAYER_KB_SERVER": "on", "SLAYER_KB_SERVER_IDLE": "600"}
        queries = [q for kind, q in self.queries() if kind != "entity"]
        firsts, alone = [], []
        off = {**env, "SLAYER_KB_SERVER": "off"}
        for n in range(FIRST_COMMANDS):  # each with no server: stop the one the last started
            if relay.control(self.root, "status") is not None:
                _stop_server(self.root)
            # Beside it, the same search in a process with the server off: the baseline.
            alone.append(run_process([*base, "search", queries[n % len(queries)]], self.root, off))
            firsts.append(run_process([*base, "search", queries[n % len(queries)]], self.root, env))
            deadline = time.monotonic() + 300
            while not ((status := relay.control(self.root, "status")) and status.get("ready")):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no server within 300 s; see {self.root}/.slayer-kb/server.log")
                time.sleep(0.1)
        pid = status["pid"]
        try:
            # The first relayed search waits for the server's first sync: not counted.
            run_process([*base, "search", queries[0]], self.root, env)
            searches = [run_process([*base, "search", queries[i]], self.root, env) for i in range(self.plan.processes)]
            saves = [
                run_process([*base, "save", self.learning(), "-e", self.entity()], self.root, env)
                for _ in range(self.plan.processes)
            ]
            client_rss = {
                "server_search_rss": _client_rss_mib([*base, "search", queries[1]], self.root, env),
                "server_save_rss": _client_rss_mib([*base, "save", self.learning(), "-e", self.entity()], self.root, env),
            }
            self.last_write = time.time()
            server_rss = _peak_rss_mib(pid)
        finally:
            _stop_server(self.root)
        for key, runs in (("server_first_command", firsts), ("server_first_alone", alone)):
            failed = [p for _, _, p in runs if p]
            self.results[key] = summary([w for w, _, _ in runs], note=failed[0] if failed else None)
        self.results["server_first_command_vs_alone"] = ratio(self.results["server_first_command"],
                                                              self.results["server_first_alone"])
        for key, runs in (("server_search", searches), ("server_save", saves)):
            failures = [p for _, _, p in runs if p]
            self.results[key] = summary([w for w, _, _ in runs], note=failures[0] if failures else None)
        for key, rss in client_rss.items():
            # wait4's figure for a child counts the bench process it was forked from (150 MiB)
            self.results[key] = summary([rss], unit="MiB") if rss is not None else skipped("no /usr/bin/time")
        if server_rss is not None:
            self.results["server_rss"] = summary([server_rss], unit="MiB")
        for key, base_key in (("server_save_vs_add_commit", "git_add_commit"),
                              ("server_save_vs_process", "process_save"),
                              ("server_search_vs_process", "process_search")):
            other = self.results.get(base_key)
            if other is not None:
                self.results[key] = ratio(self.results[key.split("_vs_")[0]], other)

    # -- the side-by-side with basic-memory (peer.py) -------------------------------------------

    def peer(self) -> None:
        """Processes of basic-memory's CLI searching and writing the same corpus as notes, each
        beside the same slayer-kb command with the server off, at sizes up to peer.MAX_SIZE."""
        if self.corpus.size > peer.MAX_SIZE:
            self.results["peer_search"] = skipped(f"basic-memory is measured up to {peer.MAX_SIZE:,} memories")
            return
        cache = self.root.parent
        bm = peer.install(cache)
        if isinstance(bm, str):
            self.results["peer_search"] = skipped(bm)
            return
        env = peer.prepare(bm, self.root, cache / f"basic-memory-{self.corpus.size}-s{self.corpus.seed}", self.corpus.size)
        if isinstance(env, str):
            self.results["peer_search"] = skipped(env)
            return
        self.settle()
        ours, off = [*cli_command(), "--kb", str(self.root)], {**os.environ, "SLAYER_KB_SERVER": "off"}
        queries = [q for kind, q in self.queries() if kind != "entity"]
        runs: dict[str, list[tuple[float, int, str]]] = {
            "peer_search": [], "peer_ours_search": [], "peer_write": [], "peer_ours_save": []}
        for n in range(self.plan.processes):
            question, learning = queries[n % len(queries)], self.learning()
            runs["peer_search"].append(run_process(
                [str(bm), "tool", "search-notes", question, "--project", peer.PROJECT, "--compact"], self.root, env))
            runs["peer_ours_search"].append(run_process([*ours, "search", question], self.root, off))
            # The same titles every run, replaced (a second run would otherwise fail with
            # NOTE_ALREADY_EXISTS): the cached corpus stays the same size.
            runs["peer_write"].append(run_process(
                [str(bm), "tool", "write-note", "--title", f"bench write {n}", "--folder", "bench-writes",
                 "--content", learning, "--project", peer.PROJECT, "--overwrite"], self.root, env))
            runs["peer_ours_save"].append(run_process([*ours, "save", learning, "-e", self.entity()], self.root, off))
        self.last_write = time.time()
        for key, samples in runs.items():
            failed = [p for _, _, p in samples if p]
            # A failed process's time is no figure: it is left out, and the note says why.
            good = [w for w, _, p in samples if not p]
            self.results[key] = summary(good, note=failed[0] if failed else None) if good else skipped(failed[0])
        self.results["peer_search_vs_ours"] = ratio(self.results["peer_search"], self.results["peer_ours_search"])
        self.results["peer_write_vs_ours"] = ratio(self.results["peer_write"], self.results["peer_ours_save"])

    # -- watcher ----------------------------------------------------------------------------

    def watcher(self) -> None:
        if importlib.util.find_spec("slayer_kb.daemon.watch") is None:
            self.results["watcher"] = skipped("not available: slayer_kb.daemon.watch is not importable")
            return
        self.settle()
        from whoosh import index as windex
        from whoosh import query as Q

        proc = subprocess.Popen(
            [sys.executable, "-m", "slayer_kb", "--kb", str(self.root), "watch"],
            cwd=self.root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        try:
            ix = windex.open_dir(str(self.root / ".slayer-kb" / "index"))
            # The first trial waits for the watcher to start and is not counted.
            self._watch_trial(ix, Q, timeout=60.0)
            samples = [self._watch_trial(ix, Q, timeout=10.0) for _ in range(self.plan.watcher)]
        finally:
            stderr = _stop(proc)
        found = [s for s in samples if s is not None]
        missed = len(samples) - len(found)
        note = f"{missed} of {len(samples)} writes not found within 10 s" if missed else None
        if not found:
            self.results["watcher"] = skipped(f"nothing found; watcher stderr: {stderr[-300:]}")
            return
        self.results["watcher"] = summary(found, note=note)

    def _watch_trial(self, ix: Any, Q: Any, timeout: float) -> float | None:
        word = "benchwatch" + "".join(chr(97 + int(d)) for d in str(self._unique("")))
        token = text_terms(word)[0][0]
        path = self.root / "memories" / f"{self._unique('bench-watch-')}.yaml"
        text = f"learning: |\n  {word} written by hand\nentities:\n- {self.entity()}\ncreated_at: '2026-01-01T00:00:00Z'\n"
        began = time.perf_counter()
        path.write_text(text, encoding="utf-8")
        self.last_write = time.time()
        while time.perf_counter() - began < timeout:
            # Read the index directly: KnowledgeBase.search would sync by itself and hide the
            # watcher's latency.
            with contextlib.suppress(Exception), ix.searcher() as searcher:
                if searcher.search(Q.Term("text", token), limit=1):
                    return time.perf_counter() - began
            time.sleep(0.005)
        return None

    # -- validate and cascade ---------------------------------------------------------------

    def validate(self) -> None:
        try:
            module = importlib.import_module("slayer_kb.ops.validate")
        except ImportError as exc:
            self.results["validate"] = skipped(f"not available: {exc}")
            return
        names = ("validate_kb", "validate_all", "validate_paths", "validate", "check_kb", "run")
        fn = next((getattr(module, n) for n in names if callable(getattr(module, n, None))), None)
        if fn is None:
            self.results["validate"] = skipped(f"not available: slayer_kb.ops.validate has none of {names}")
            return
        call = _first_working(fn, [([self.root],), (self.root,), (self.kb,)])
        outcome: list[Any] = []
        samples = [timed(lambda: outcome.append(call())) for _ in range(self.plan.validate)]
        problems = getattr(outcome[-1], "problems", None)
        found = f", {len(problems)} problems reported" if problems is not None else ""
        self.results["validate"] = summary(samples, note=f"slayer_kb.ops.validate.{fn.__name__}{found}",
                                           problems=[str(p) for p in (problems or [])[:5]])

    def cascade(self) -> None:
        delete_model = _delete_model(self.kb)
        if delete_model is None:
            self.results["cascade"] = skipped("not available: no KnowledgeBase.delete_model or slayer_kb.ops.cascade.delete_model")
            return
        ds, model = self.corpus.hot_model.split(".")
        samples = []
        # Every attempt starts from the index the first one found: resetting the files would
        # otherwise re-index 10,000 memories into new segments, and each later attempt would
        # measure an index the benchmark itself had grown.
        index_dir = self.root / ".slayer-kb" / "index"
        snapshot = self.root / ".slayer-kb" / "bench-index-snapshot"
        _snapshot(index_dir, snapshot)
        for attempt in range(self.plan.cascade):
            if attempt:
                self.kb.close()
                corpus_mod.reset(self.root, git(self.root, "rev-parse", "HEAD~1"))
                _snapshot(snapshot, index_dir)
                self.kb = KnowledgeBase(self.root)
                self.kb.ensure_fresh()
                delete_model = _delete_model(self.kb)
                assert delete_model is not None
            call = _first_working(delete_model, [(model,), (f"{ds}.{model}",)], kwargs={"datasource": ds})
            outcome: list[Any] = []
            samples.append(timed(lambda c=call, o=outcome: o.append(c())))
            self.last_write = time.time()
        shutil.rmtree(snapshot, ignore_errors=True)
        rewritten = _rewritten(outcome[-1])
        self.results["cascade"] = summary(
            samples, note=f"{self.corpus.hot_model}: {self.corpus.hot_count} memories refer to it; "
            f"{rewritten} rewritten")


def _p(samples: list[float], pct: float) -> float:
    return _percentile(sorted(samples), pct)


def _tree_bytes(folder: Path) -> int:
    """Bytes the files under ``folder`` take (``du``'s apparent size)."""
    return sum(entry.stat().st_size for entry in folder.rglob("*") if entry.is_file())


def _snapshot(source: Path, target: Path) -> None:
    """Copy an index folder: Whoosh never rewrites a segment or table-of-contents file, so those
    are hard links; the SQLite manifest and the state file are copied."""
    shutil.rmtree(target, ignore_errors=True)

    def link_or_copy(src: str, dst: str) -> None:
        if Path(src).name.startswith("manifest") or src.endswith("WRITELOCK"):
            shutil.copy2(src, dst)
        else:
            os.link(src, dst)

    shutil.copytree(source, target, copy_function=link_or_copy)


def _delete_model(kb: KnowledgeBase) -> Callable[..., Any] | None:
    """The cascade, as a KnowledgeBase method or as slayer_kb.ops.cascade's function of a KB."""
    method = getattr(kb, "delete_model", None)
    if callable(method):
        return method  # type: ignore[no-any-return]
    try:
        module = importlib.import_module("slayer_kb.ops.cascade")
    except Exception:  # noqa: BLE001 - a module being written may fail in any way; skip it
        return None
    fn = getattr(module, "delete_model", None)
    if not callable(fn):
        return None
    return lambda *args, **kwargs: fn(kb, *args, **kwargs)


def _rewritten(result: Any) -> str:
    for name in ("rewritten", "stripped_from", "memories", "changed"):
        value = getattr(result, name, None)
        if isinstance(value, (list, tuple, set, dict)):
            return str(len(value))
        if isinstance(value, int):
            return str(value)
    return "? (unknown result shape)"


def _first_working(fn: Callable[..., Any], argsets: list[tuple[Any, ...]], kwargs: dict[str, Any] | None = None) -> Callable[[], Any]:
    """A zero-argument call of ``fn`` with the first argument shape its signature accepts."""
    import inspect

    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return lambda: fn(*argsets[0])
    for args in argsets:
        for kw in ([kwargs] if kwargs else []) + [{}]:
            try:
                signature.bind(*args, **kw)
            except TypeError:
                continue
            return lambda a=args, k=kw: fn(*a, **k)
    return lambda: fn(*argsets[0])


def _stop_server(root: Path) -> None:
    """Stop the KB's server and wait until its process is gone: one still exiting (freeing
    hundreds of MiB) would share the CPU with the next command measured."""
    status = relay.control(root, "status") or {}
    relay.control(root, "stop")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (conn := relay.connect(root, timeout=0.5)) is not None:
        conn.close()
        time.sleep(0.05)
    pid = status.get("pid")
    while isinstance(pid, int) and time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs: a zombie (exited, not yet reaped by an init that may never reap it)
    does not."""
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    with contextlib.suppress(OSError, IndexError):
        # /proc/PID/stat: "pid (name) STATE ..."; the name may hold spaces and parentheses.
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _client_rss_mib(args: list[str], cwd: Path, env: dict[str, str]) -> float | None:
    """Peak RSS of one process, measured by GNU time (a small parent, so the figure is the
    client's own and not the bench process's it was forked from), MiB."""
    if not Path("/usr/bin/time").exists():
        return None
    with tempfile.NamedTemporaryFile("r") as out:
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name, *args], cwd=cwd, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
        text = out.read().strip().splitlines()
    return int(text[-1]) / 1024 if proc.returncode == 0 and text and text[-1].isdigit() else None


def _peak_rss_mib(pid: int) -> float | None:
    """A live process's peak resident memory (Linux's VmHWM), MiB."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _stop(proc: subprocess.Popen[bytes]) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return (err or b"").decode(errors="replace")
