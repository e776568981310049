"""Text to meaning vectors, fully local: the static word embeddings that ship inside the
``wordllama`` wheel (256 dimensions, a Llama-2 tokenizer), averaged over a text's tokens.

The wheel's own loader looks for ``tokenizer/`` while the wheel holds ``tokenizers/``, and it
imports pydantic and requests; this module reads the two files directly instead: the tokenizer
with ``tokenizers``, the weight matrix by memory-mapping the safetensors file (a 16 MB float16
table of which a text touches a few rows). No network, no download: if the package or its files
are missing, ``load()`` says why and search runs on words and entities alone.
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

PACKAGE = "wordllama"
TOKENIZER_FILE = os.path.join("tokenizers", "l2_supercat_tokenizer_config.json")
WEIGHTS_FILE = os.path.join("weights", "l2_supercat_256.safetensors")
# What the stored vectors were made with: a change re-embeds every memory.
MODEL_KEY = "wordllama-l2_supercat_256-mean-v1"
DIMENSIONS = 256
# Long learnings: the first tokens carry the subject; the mean over thousands adds little.
MAX_TOKENS = 512


@dataclass(frozen=True)
class Unavailable:
    """Why the meaning channel is off, in words a user can act on."""

    reason: str

    def __str__(self) -> str:
        return (
            f"Search by meaning is off ({self.reason}); words and entities still work. "
            f"Install it with: pip install {PACKAGE}"
        )


class Embedder:
    """Mean of the token embeddings, normalised to unit length (as wordllama's ``embed``)."""

    key = MODEL_KEY

    def __init__(self, tokenizer: Any, weights: np.ndarray) -> None:
        self._tokenizer = tokenizer
        self._weights = weights

    def embed(self, texts: list[str]) -> np.ndarray:
        """One float32 unit vector per text (a zero vector for a text with no tokens)."""
        import numpy as np

        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        for row, encoding in enumerate(self._tokenizer.encode_batch(texts, add_special_tokens=False)):
            ids = encoding.ids[:MAX_TOKENS]
            if not ids:
                continue
            vector = self._weights[np.asarray(ids, dtype=np.int64)].astype(np.float32).mean(axis=0)
            norm = float(np.linalg.norm(vector))
            if norm > 0:
                out[row] = vector / norm
        return out


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


@lru_cache(maxsize=1)
def load() -> Embedder | Unavailable:
    """The embedder, loaded once per process, or why it cannot be."""
    if os.environ.get("SLAYER_KB_NO_MEANING"):
        return Unavailable("SLAYER_KB_NO_MEANING is set")
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return Unavailable(f"the {PACKAGE} package is not installed")
    base = list(spec.submodule_search_locations)[0]
    try:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(os.path.join(base, TOKENIZER_FILE))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        weights = _weights(os.path.join(base, WEIGHTS_FILE))
    except ImportError as exc:
        return Unavailable(f"cannot import {exc.name or exc}")
    except Exception as exc:  # noqa: BLE001 - a damaged or changed wheel: off, and said why
        return Unavailable(f"cannot read the model in {base}: {exc}")
    return Embedder(tokenizer, weights)
