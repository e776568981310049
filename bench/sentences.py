"""``python -m bench.sentences [--size 10000] [--seed 7] [--questions 100]``: what the sentence
encoder costs at scale, on the synthetic corpus (bench/corpus.py), printed as JSON:

- the cold build of the sentence vectors (every memory's, as the background filler makes them),
  its rate a memory, and that rate carried to 100,000 memories (an extrapolation, said so); with
  stand-ins first (a backlog of ``--stand-in-from`` or more, search/filling.py), when meaning
  covered the KB and when every vector was final, both carried to 100,000;
- ``reindex`` with the vector cache warm (a one-shot CLI process, no server);
- a warm search (a process kept warm as the server keeps it), p50 / p95, the question's
  encoding included, for natural-language questions and for keyword queries, in wall time and
  in CPU time;
- a memory saved through the warm server and found by meaning: the time from the save's return
  until its sentence vector is made, and whether a paraphrase then finds it first;
- the warm server's peak RSS, and whether a relayed CLI search process ever loaded onnxruntime;
- a first command on a new clone of the KB (no index, no sentence vector on the machine, the
  server on): how long until words and entities answer, and how much of the KB meaning covers
  then, while the cold build goes on (the server's, or a filler's the first command started),
  and a memory saved during the build: the time from the save's reply until its sentence vector
  is made, ahead of the build's backlog (``first``);
- last, issue 29's targets beside the figures measured (``targets``), with the load average
  printed beside each step: an idle machine's figures are the ones to hold against them.

The corpus's sentence vectors go to a cache of the bench's own (``sentences`` beside the corpora,
bench/.cache/sentences unless ``--cache-dir`` says), so a second run finds them there, as a second
clone of a KB would; ``--vector-cache`` names another (an empty folder: the build is cold again).
The cold build makes two model runs at once on a machine of two cores or more, as the filler
does; ``--workers 1`` times it on one. ``--steps`` picks the steps: ``build`` (the cold build and the
reindex), ``warm`` (the warm searches, no server), ``server``, ``first`` and ``handwritten``; all
by default.

``handwritten`` times the cold build over the relevance sets' 720 hand-written memories (42-105
words each on average by set, where the synthetic corpus's run to about 130 words of made-up
terms, which the tokenizer splits into many word pieces), each set from an empty vector cache,
and carries its CPU a memory over two free cores to 100,000 memories: the build's cost for
memories as agents write them, beside the synthetic corpus's.

``--borrow-vectors 10000`` (say, with ``--size 100000``) skips the cold build and the reindex:
each memory gets a sentence vector the encoder made for the smaller corpus's memories (built
first if need be), in turn, so a warm search and the server are timed at a size whose cold build
(an hour and more of one core) the machine cannot afford. The vectors are real but not the
memories' own, so what a search finds by them means nothing; only the times and memory do. Timings on a shared machine are
inflated by its other work: the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from slayer_kb import KnowledgeBase
from slayer_kb.daemon import relay
from slayer_kb.search import encoder, vectors
from slayer_kb.store.state import STATE_DIR

from . import corpus as corpus_mod
from .measure import QUESTION_TEMPLATES, _peak_rss_mib, _percentile

SENTENCES = "sentences"  # the sentence cache's folder, beside the corpora
STEPS = ("build", "warm", "server", "first", "handwritten")
# Notes in plain English, saved through the server, and a paraphrase of each that shares no
# content word with it: found first only by meaning.
SAVED = [
    ("Robots report full battery but die early in the freezer aisle",
     "Lithium cells lose a third of their capacity below -10 C, but the battery board reports the charge measured "
     "at room temperature. Robots in the freezer zone now return to dock at 55% instead of 20%.",
     "machines in the frozen-goods section run out of juice sooner than the gauge says"),
    ("Nomad chosen over Kubernetes for the card-authorisation services",
     "Decided to schedule the card-authorisation services on HashiCorp Nomad rather than Kubernetes: four people, "
     "a dozen static binaries, and a PCI audit of a Kubernetes control plane would have taken a quarter.",
     "why don't we orchestrate our containers with k8s?"),
    ("Cardholders can dispute a payment for up to 120 days",
     "Visa and Mastercard let a cardholder raise a chargeback up to 120 days after the transaction. Keep "
     "authorisation evidence for at least 18 months.",
     "how long after buying can a shopper contest it with their bank?"),
]
WAIT_SECONDS = 120.0
# A search's note while no memory has a sentence vector yet (search/retrieval.py).
NONE_COVERED = "Sentence vectors cover 0 of"


def _stats(samples: list[float], unit: str = "ms") -> dict[str, Any]:
    """Median, p95 (nearest rank) and count, in ``unit`` (samples are seconds)."""
    scale = 1000.0 if unit == "ms" else 1.0
    ordered = sorted(samples)
    return {"p50": round(scale * ordered[len(ordered) // 2], 2), "p95": round(scale * _percentile(ordered, 95), 2),
            "max": round(scale * ordered[-1], 2), "n": len(ordered), "unit": unit}


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _env(**extra: str) -> dict[str, str]:
    # The sentence-vector cache is the one main put in this process's environment.
    env = {**os.environ, **extra}
    env.pop("SLAYER_KB_NO_ENCODER", None)
    return env


def _cli(root: Path, env: dict[str, str], *args: str) -> tuple[float, dict[str, Any]]:
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args, "--json"],
                          capture_output=True, text=True, env=env, timeout=3600)
    took = time.perf_counter() - began
    if proc.returncode != 0:
        raise RuntimeError(f"slayer-kb {' '.join(args)} failed: {proc.stderr}")
    return took, json.loads(proc.stdout)


def cold_build(kb: KnowledgeBase, workers: int, stand_in_from: int | None = None) -> dict[str, Any]:
    """Every memory's sentence vector and its units, made as the filler makes them with
    ``workers`` model runs at once (stand-ins first when the backlog is ``stand_in_from`` or
    more: search/filling.py); the rate a memory, when meaning covered the KB (its last stand-in,
    or final vector, written: the units are made with the whole texts) and when every vector
    was final, each carried to 100,000 memories."""
    if stand_in_from is not None:
        kb.index.stand_in_from = stand_in_from
    marks: list[tuple[float, int]] = []
    covered_at: list[tuple[float, float]] = []  # (wall, CPU) when meaning first covered the KB
    began = time.perf_counter()
    cpu = time.process_time()

    def progress(done: int, _total: int) -> None:
        marks.append((time.perf_counter() - began, done))
        if not covered_at:
            covered, total, _pending, _standing = kb.index.coverage()
            if covered >= total:
                covered_at.append((marks[-1][0], time.process_time() - cpu))

    made = kb.index.fill_sentences(progress, workers=workers, background=True)  # as a background filler
    wall, cpu = time.perf_counter() - began, time.process_time() - cpu
    covered, total = kb.index.sentence_coverage()
    out: dict[str, Any] = {"workers": workers, "made": made, "covered": covered, "memories": total,
                           "stand_in_from": kb.index.stand_in_from,
                           "meaning_covered_seconds": round(covered_at[0][0], 1) if covered_at else None,
                           "meaning_covered_cpu_seconds": round(covered_at[0][1], 1) if covered_at else None,
                           "whole_vectors_seconds": round(marks[-1][0], 1) if marks else None,
                           "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "load": _load()}
    if made:
        out["ms_per_memory"] = round(1000 * wall / made, 2)
        out["cpu_ms_per_memory"] = round(1000 * cpu / made, 2)
        out["extrapolated_100k_minutes"] = round(100_000 * wall / made / 60, 1)
        if covered_at:
            out["extrapolated_100k_meaning_covered_minutes"] = round(100_000 * covered_at[0][0] / made / 60, 1)
            # On two free cores: what a loaded machine leaves readable.
            out["two_free_cores_100k_meaning_covered_minutes"] = round(100_000 * covered_at[0][1] / made / 2 / 60, 1)
        out["two_free_cores_100k_minutes"] = round(100_000 * cpu / made / 2 / 60, 1)
    return out


def handwritten_build(workers: int) -> dict[str, Any]:
    """The cold build over every relevance set's memories (bench/relevance: notes as agents and
    people write them, about a third as long as the synthetic corpus's), each set a KB of its own
    with an empty vector cache: the rate a memory, carried to 100,000 memories. Its CPU over two
    cores is the figure a loaded machine leaves readable."""
    from . import relevance

    made = 0
    wall = cpu = 0.0
    words = 0
    for name, folder in relevance.SETS.items():
        with tempfile.TemporaryDirectory(prefix=f"slayer-kb-written-{name.replace(' ', '-')}-") as tmp:
            previous = os.environ.get("SLAYER_KB_CACHE")
            os.environ["SLAYER_KB_CACHE"] = str(Path(tmp) / "vectors")
            try:
                kb = relevance.build(Path(tmp) / "kb", folder, sentences=False)
                words += sum(len(str(item["learning"]).split()) + len(str(item.get("title") or "").split())
                             for item in relevance.load("memories.yaml", folder))
                run = cold_build(kb, workers)
                kb.close()
            finally:
                if previous is None:
                    os.environ.pop("SLAYER_KB_CACHE", None)
                else:
                    os.environ["SLAYER_KB_CACHE"] = previous
            made += run["made"]
            wall += run["seconds"]
            cpu += run["cpu_seconds"]
    return {"workers": workers, "sets": len(relevance.SETS), "made": made, "words_per_memory": round(words / made, 1),
            "seconds": round(wall, 1), "cpu_seconds": round(cpu, 1), "load": _load(),
            "cpu_ms_per_memory": round(1000 * cpu / made, 2),
            "extrapolated_100k_minutes": round(100_000 * wall / made / 60, 1),
            "two_free_cores_100k_minutes": round(100_000 * cpu / made / 2 / 60, 1)}


def borrow_vectors(root: Path, source: Path) -> dict[str, Any]:
    """Give each memory of ``root`` lacking a sentence vector one of ``source``'s, in turn (by
    id). Written to the index's manifest only, never to the vector cache: keyed by text, the
    cache would then hold wrong vectors for these texts."""
    with contextlib.closing(sqlite3.connect(source / ".slayer-kb" / "index" / "manifest.db")) as src:
        blobs = [blob for (blob,) in src.execute("SELECT svec FROM vectors WHERE svec IS NOT NULL ORDER BY id")]
    if not blobs:
        raise RuntimeError(f"{source} has no sentence vectors to lend")
    with contextlib.closing(sqlite3.connect(root / ".slayer-kb" / "index" / "manifest.db", isolation_level=None)) as db:
        missing = vectors.missing_sentences(db)
        written = vectors.write_sentences(
            db, [(m, digest, blobs[at % len(blobs)]) for at, (m, digest) in enumerate(missing)])
    return {"from": str(source), "distinct_vectors": len(blobs), "memories_given_one": len(written)}


def warm_searches(kb: KnowledgeBase, seed: int, count: int) -> dict[str, Any]:
    """A process kept warm as the server keeps it: each search's wall time, the question's
    sentence vector included; and that encoding alone."""
    kb.keep_warm()
    kb.warm_up()
    rng = random.Random(f"{seed}-sentences")
    domain = list(corpus_mod.DOMAIN_WORDS)
    questions = [rng.choice(QUESTION_TEMPLATES).format(a=rng.choice(domain), b=rng.choice(domain), c=rng.choice(domain))
                 for _ in range(count)]
    keywords = [" ".join(rng.sample(domain, 2)) for _ in range(count)]
    model = encoder.load()
    assert isinstance(model, encoder.Encoder), model
    for q in questions[:5]:
        kb.search(q)  # the first searches load what a warm server loads at start
    out: dict[str, Any] = {}
    for name, queries in (("question", questions), ("keywords", keywords)):
        times, cpu = [], []
        for q in queries:
            began, used = time.perf_counter(), time.process_time()
            result = kb.search(q)
            times.append(time.perf_counter() - began)
            cpu.append(time.process_time() - used)
            assert not any(n.startswith("Sentence vectors cover") for n in result.notes), result.notes
        # CPU time (this process's threads together) is less inflated by a busy machine than wall time.
        out[name], out[f"{name}_cpu"] = _stats(times), _stats(cpu)
    encoding = []
    for q in questions:
        began = time.perf_counter()
        model.encode([q])
        encoding.append(time.perf_counter() - began)
    out["question_encoding"] = _stats(encoding)
    out["load"] = _load()
    return out


def served(root: Path) -> dict[str, Any]:
    """Through a warm server: saves, the time until each saved memory has its sentence vector,
    a paraphrase's first answer, whether a relayed CLI search loaded onnxruntime, peak RSS."""
    env = _env(SLAYER_KB_SERVER="on")
    subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "server", "start"], env=env, check=True,
                   capture_output=True, timeout=600)
    try:
        status = _wait(root, lambda s: s["memories"] and s["covered"] == s["memories"] and not s["building"])
        pid = relay.control(str(root), "status")["pid"]  # type: ignore[index]
        saves, made, first = [], [], []
        for title, learning, question in SAVED:
            before = status["covered"]
            took, saved = _cli(root, env, "save", "--title", title, learning)
            returned = time.perf_counter()
            status = _wait(root, lambda s, b=before: s["covered"] > b and not s["building"])
            made.append(time.perf_counter() - returned)
            saves.append(took)
            _took, found = _cli(root, env, "search", question)
            first.append(found["memories"][0]["id"] == saved["memory_id"])
        probe = ("import runpy, sys; sys.argv = ['slayer-kb', '--kb', sys.argv[1], 'search', 'nomad kubernetes']; "
                 "import io, contextlib\nwith contextlib.redirect_stdout(io.StringIO()):\n"
                 "    try: runpy.run_module('slayer_kb', run_name='__main__')\n    except SystemExit: pass\n"
                 "print('onnxruntime' in sys.modules)")
        lean = subprocess.run([sys.executable, "-c", probe, str(root)], capture_output=True, text=True, env=env,
                              timeout=300).stdout.strip()
        return {"save_ms": _stats(saves), "vector_after_save_ms": _stats(made),
                "paraphrase_finds_the_saved_memory_first": first, "client_loaded_onnxruntime": lean,
                "server_peak_rss_mib": _peak_rss_mib(pid), "load": _load()}
    finally:
        subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), "server", "stop"], env=env,
                       capture_output=True, timeout=120)


def first_command(corpus: corpus_mod.Corpus) -> dict[str, Any]:
    """A new clone of the KB, with no index and an empty vector cache of its own, the server on
    (the machine has never seen these texts): the first command (a search by words), a search
    by entity after it, and a search by words once the cold build (the server's or a filler's)
    has made some sentence vectors, each timed from the first command's start, with its notes
    (how much of the KB meaning covered then). The first command's CPU time (its process and
    the index's workers) is given beside its wall time: on a loaded machine it says what the
    command would take with a core free."""
    words = " ".join(sorted(corpus_mod.DOMAIN_WORDS)[:2])
    with tempfile.TemporaryDirectory(prefix="slayer-kb-first-") as scratch:
        clone = Path(scratch) / "kb"
        subprocess.run(["git", "clone", "-q", str(corpus.root), str(clone)], check=True, capture_output=True, timeout=3600)
        env = _env(SLAYER_KB_SERVER="on", SLAYER_KB_CACHE=str(Path(scratch) / "vectors"))
        began = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out: dict[str, Any] = {"memories": corpus.size}

        def ask(name: str, *args: str) -> list[str]:
            _took, found = _cli(clone, env, "search", *args)
            out[name] = {"seconds_since_first_command": round(time.perf_counter() - began, 1),
                         "memories_found": len(found["memories"]), "notes": found.get("notes", [])}
            return list(out[name]["notes"])

        try:
            ask("words", words)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            out["words"]["cpu_seconds"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)
            ask("entity", "-e", corpus.hot_model)
            deadline = time.monotonic() + 3600
            # Until meaning covers some of the KB (the build under way, whoever makes it).
            while any(n.startswith(NONE_COVERED) for n in ask("words_during_the_build", words)):
                if time.monotonic() > deadline:
                    raise TimeoutError("no sentence vector was made within an hour of the first command")
                time.sleep(5)
            out["saved_during_the_build"] = _saved_during_the_build(clone, env)
            out["load"] = _load()
            return out
        finally:
            subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(clone), "server", "stop"], env=env,
                           capture_output=True, timeout=600)
            _end_fillers(clone)


def _saved_during_the_build(root: Path, env: dict[str, str]) -> dict[str, Any]:
    """A memory saved while the build has most of the KB to go: the seconds from the save's
    reply until its sentence vector is in the manifest (search/backlog.py: made ahead of the
    backlog; None when not within ``WAIT_SECONDS`` * 5), and what meaning covered at the save
    and when it was made (the batch under way and its own, not the backlog)."""
    title, learning, _question = SAVED[0]
    _took, saved = _cli(root, env, "save", "--title", title, learning)
    replied = time.perf_counter()
    query = "SELECT svec IS NOT NULL FROM vectors WHERE id = ?"
    with contextlib.closing(sqlite3.connect(root / STATE_DIR / "index" / "manifest.db")) as db:
        covered, total, _waiting, _standing = vectors.coverage(db)
        while not (db.execute(query, (saved["memory_id"],)).fetchone() or (0,))[0]:
            if time.perf_counter() - replied > WAIT_SECONDS * 5:
                return {"covered_at_save": covered, "memories": total, "vector_after_save_s": None}
            time.sleep(0.05)
        after = round(time.perf_counter() - replied, 1)
        return {"covered_at_save": covered, "memories": total, "vector_after_save_s": after,
                "covered_when_made": vectors.coverage(db)[0]}


def _end_fillers(clone: Path) -> None:
    """End the detached fillers (search/filler.py) a command started for ``clone``, by their
    ids: the scratch folder goes, and the build need not go on."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            args = (entry / "cmdline").read_bytes().split(b"\0")
            if b"slayer_kb.daemon.sentences" in args and str(clone).encode() in args:
                os.kill(int(entry.name), signal.SIGTERM)


def _wait(root: Path, done: Any) -> dict[str, Any]:
    deadline = time.monotonic() + max(WAIT_SECONDS, 3600.0)
    while time.monotonic() < deadline:
        answer = relay.control(str(root), "status")
        vectors = (answer or {}).get("sentence_vectors")
        if vectors and done(vectors):
            return vectors
        time.sleep(0.02)
    raise TimeoutError("the server's sentence vectors did not reach the expected state")


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 29's speed and memory targets beside what this run measured (those it measured);
    a figure shown for information has no target (``target`` and ``met`` None)."""
    rows: list[tuple[str, Any, float | None]] = []
    warm = results.get("warm_search", {})
    for kind, label in (("question", "questions"), ("keywords", "two keywords")):
        if kind in warm:
            rows += [(f"warm search p50, {label}, encoding included (ms)", warm[kind]["p50"], 15.0),
                     (f"warm search p95, {label}, encoding included (ms)", warm[kind]["p95"], 40.0)]
    server = results.get("server", {})
    if server:
        rows += [("relayed save p50 (ms)", server["save_ms"]["p50"], 150.0),
                 ("a saved memory's sentence vector made after the save, slowest (ms)", server["vector_after_save_ms"]["max"], 1000.0),
                 ("warm server peak RSS (MiB)", round(server["server_peak_rss_mib"], 1), 800.0)]
    first = results.get("first_command", {})
    if first:
        rows.append(("words and entities answer after the first command on a new clone, during the build (s)",
                     first["entity"]["seconds_since_first_command"], 90.0))
        during = first.get("saved_during_the_build", {}).get("vector_after_save_s")
        if during is not None:
            rows.append(("a memory saved during the build: its sentence vector made after the save (s)", during, 1.0))
    build = results.get("cold_build", {})
    if "extrapolated_100k_minutes" in build:
        rows.append(("cold build of every sentence vector, carried to 100,000 memories (min, an extrapolation)",
                     build["extrapolated_100k_minutes"], 40.0))
    if "two_free_cores_100k_minutes" in build:
        rows.append(("cold build, every sentence vector final, carried to 100,000 memories from its CPU on two "
                     "free cores (min, an extrapolation)", build["two_free_cores_100k_minutes"], 40.0))
    if "two_free_cores_100k_meaning_covered_minutes" in build and build.get("stand_in_from", 0) <= build.get("memories", 0):
        # Information, not the target: issue 29's 40 minutes are for every vector final.
        rows.append(("meaning covers every memory (stand-ins first), carried to 100,000 memories from its CPU on "
                     "two free cores (min, an extrapolation)", build["two_free_cores_100k_meaning_covered_minutes"], None))
    written = results.get("handwritten_build", {})
    if written:
        rows.append(("cold build of final vectors alone (as reindex makes them) carried to 100,000 memories as long "
                     "as the hand-written sets', from its CPU on two free cores (min, an extrapolation)",
                     written["two_free_cores_100k_minutes"], 40.0))
    if "reindex_warm_cache" in results:
        rows.append(("reindex with the vector cache warm (s)", results["reindex_warm_cache"]["seconds"], 90.0))
    return [{"figure": name, "measured": measured, "target": target, "met": None if target is None else measured <= target}
            for name, measured, target in rows]


def in_the_corpus(corpus: corpus_mod.Corpus, args: argparse.Namespace, steps: set[str], results: dict[str, Any]) -> None:
    """The steps run in the corpus itself, its index made first: the cold build and the reindex
    (or the lent vectors), the warm searches, the server."""
    kb = KnowledgeBase(corpus.root)
    kb.index.background_vectors = False  # this process makes them, and times it
    began = time.perf_counter()
    kb.ensure_fresh()
    results["index_seconds"] = round(time.perf_counter() - began, 1)
    if args.borrow_vectors:
        kb.close()
        lender = KnowledgeBase(corpus_mod.cached(args.borrow_vectors, args.seed, args.cache_dir).root)
        lender.index.background_vectors = False
        lender.ensure_fresh()
        lender.index.fill_sentences()  # from the cache after a first run
        lender.close()
        results["borrowed_vectors"] = borrow_vectors(corpus.root, lender.root)
    elif "build" in steps:
        results["cold_build"] = cold_build(kb, args.workers, args.stand_in_from)
        print(json.dumps(results), flush=True)
        kb.close()
        took, data = _cli(corpus.root, _env(SLAYER_KB_SERVER="off"), "reindex")
        results["reindex_warm_cache"] = {"seconds": round(took, 1), "indexed": data["indexed"], "load": _load()}
    else:
        kb.close()
    print(json.dumps(results), flush=True)
    if "warm" in steps:
        kb = KnowledgeBase(corpus.root)
        kb.index.background_vectors = False
        results["warm_search"] = warm_searches(kb, args.seed, args.questions)
        kb.close()
        print(json.dumps(results), flush=True)
    if "server" in steps:
        results["server"] = served(corpus.root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.sentences")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--borrow-vectors", type=int, metavar="SIZE",
                        help="no cold build or reindex: lend each memory a vector of the SIZE corpus's (see above)")
    parser.add_argument("--cache-dir", type=Path, default=corpus_mod.CACHE_DIR,
                        help="where the corpora and their sentence vectors are kept")
    parser.add_argument("--steps", default=",".join(STEPS), help=f"which of {', '.join(STEPS)} to run (comma-separated)")
    parser.add_argument("--workers", type=int, default=encoder.build_workers(),
                        help="model runs at once in the cold build (default: one a core, at most two)")
    parser.add_argument("--stand-in-from", type=int, default=None, metavar="N",
                        help="the cold build makes stand-ins first from a backlog of N (default: the filler's, 5,000)")
    parser.add_argument("--vector-cache", type=Path,
                        help="the sentence-vector cache (default: sentences/ under --cache-dir; an empty folder: a cold build)")
    args = parser.parse_args(argv)
    steps = set(args.steps.split(","))
    if not steps <= set(STEPS):
        parser.error(f"--steps takes {', '.join(STEPS)}; got {args.steps!r}")
    cache = args.vector_cache or args.cache_dir / SENTENCES
    cache.mkdir(parents=True, exist_ok=True)
    os.environ.update(_env(SLAYER_KB_SERVER="off", SLAYER_KB_CACHE=str(cache)))
    results: dict[str, Any] = {"size": args.size, "seed": args.seed, "load_at_start": _load()}
    if steps - {"handwritten"}:
        corpus = corpus_mod.cached(args.size, args.seed, args.cache_dir)
        if args.borrow_vectors or steps - {"first", "handwritten"}:  # the first command runs on a clone of its own
            in_the_corpus(corpus, args, steps, results)
        if "first" in steps:
            results["first_command"] = first_command(corpus)
    if "handwritten" in steps:
        results["handwritten_build"] = handwritten_build(args.workers)
        print(json.dumps(results), flush=True)
    results["targets"] = targets(results)
    print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
