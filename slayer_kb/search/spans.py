"""Where a text's sentences are: the ``units`` a search reads one by one, and the labels that
trace a model run's tokens to them, so that each unit's vector is pooled from the runs of the
whole text (encoder.py, ``Encoder.encode_with_units``)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from tokenizers import Encoding

# A passage's head: the text's first line, when it is a title (not a paragraph).
MAX_HEAD_CHARS = 200
# Where a memory's text is split into the sentences a search reads one by one (``units``).
_UNIT_END = re.compile(r"(?<=[.!?;])\s+|\n+")
# A run of text in a passage: (offset in the passage, offset in the text, length).
Span = tuple[int, int, int]
# A text's labels (``labels``): the number of its units, and for each character the unit it
# belongs to (HEAD: its title; OUTSIDE: neither).
Labels = tuple["np.ndarray", int]
HEAD = -1
OUTSIDE = -2
# An input's tokens as its run and their tracing read them: the word-piece ids, each token's first
# character in the input, and whether it is a special token ([CLS], [SEP]). Arrays, where the
# tokenizer's Encoding keeps each token's text, offsets and masks: a 2 MiB text's took 280 MB.
Tokens = tuple["np.ndarray", "np.ndarray", "np.ndarray"]


def labels(text: str) -> Labels:
    """The text's ``Labels``."""
    import numpy as np

    head, spans = unit_spans(text)
    out = np.full(len(text), OUTSIDE, dtype=np.int32)
    out[:head] = HEAD
    for n, (a, b) in enumerate(spans):
        out[a:b] = n
    return out, len(spans)


def compact(encoding: Encoding) -> Tokens:
    """``encoding``'s ``Tokens``."""
    import numpy as np

    offsets = encoding.offsets
    starts = np.fromiter((start for start, _end in offsets), dtype=np.int64, count=len(offsets))
    return np.asarray(encoding.ids, dtype=np.int64), starts, np.asarray(encoding.special_tokens_mask, dtype=np.int8)


def members(labels: Labels, spans: list[Span], starts: np.ndarray, special: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(unit, its token positions in this input) for each unit of the text this input (a
    passage, or the whole text; ``starts`` and ``special`` of its ``Tokens``) holds tokens of, with the title's tokens (as unit HEAD). A
    token belongs to the span its first character is in (``spans`` are in order and apart, as
    ``Encoder._layout`` makes them); one in none, or outside every unit, to none. Traced with
    arrays, not token by token: the loop over tokens and spans cost about as much CPU as the
    pooling of the same runs (docs/performance.md)."""
    import numpy as np

    chars, count = labels
    if not count or not len(starts) or not spans:
        return []
    table = np.asarray(spans, dtype=np.int64).reshape(-1, 3)
    span = np.searchsorted(table[:, 0], starts, side="right") - 1  # the last span starting at or before
    at, where, length = table[span].T
    inside = (np.asarray(special) == 0) & (span >= 0) & (starts < at + length)
    positions = np.flatnonzero(inside)
    units = chars[where[positions] + starts[positions] - at[positions]]
    kept = units != OUTSIDE
    positions, units = positions[kept], units[kept]
    if not len(units):
        return []
    order = np.argsort(units, kind="stable")  # each unit's positions stay in order
    found, first = np.unique(units[order], return_index=True)
    return [(int(unit), group) for unit, group in zip(found, np.split(positions[order], first[1:]), strict=True)]


def unit_sums(hidden: np.ndarray, members: list[tuple[int, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The units of a text this input holds, and for each the sum of its token rows in this input
    (with the title's: the unit the model would read alone is "title + sentence") and how many.
    Only those units: a row of zeros for each of the text's other units made a long text's memory
    grow with its passages times its sentences (3,376 sentences in 600 passages: 2.9 GB)."""
    import numpy as np

    head = next((positions for unit, positions in members if unit == HEAD), None)
    held = [(unit, positions) for unit, positions in members if unit != HEAD]
    units = np.fromiter((unit for unit, _positions in held), dtype=np.int64, count=len(held))
    sums = np.zeros((len(held), hidden.shape[1]), dtype=np.float64)
    sizes = np.zeros(len(held), dtype=np.int64)
    # The title's rows summed once, added to each unit's.
    head_sum = hidden[head].sum(axis=0, dtype=np.float64) if head is not None else None
    for n, (_unit, positions) in enumerate(held):
        sums[n] = hidden[positions].sum(axis=0, dtype=np.float64)
        sizes[n] = len(positions)
        if head is not None:
            sums[n] += head_sum
            sizes[n] += len(head)
    return units, sums, sizes


def units(text: str) -> list[str]:
    """The sentences of a text, each under its first line (a memory's title), embedded one by one
    so that a search can score a memory by its sentence closest to the question (retrieval.py):
    none for a text of one sentence, whose whole vector says the same."""
    head, spans = unit_spans(text)
    return [f"{text[:head]}\n{text[a:b]}" if head else text[a:b] for a, b in spans]


def unit_spans(text: str) -> tuple[int, list[tuple[int, int]]]:
    """(the length of the text's title, or 0 when its first line is not one; the (start, end)
    in the text of each of its ``units``' sentences)."""
    first, _, rest = text.partition("\n")
    titled = bool(rest) and len(first) <= MAX_HEAD_CHARS
    start = len(first) + 1 if titled else 0
    found = []
    for a, b in split(_UNIT_END, text, start, len(text)):
        piece = text[a:b]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            found.append((a + lead, a + lead + len(piece.strip())))
    if len(found) < 2:
        return 0, []
    return (len(first) if titled else 0), found


def split(pattern: re.Pattern[str], text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The (start, end) of the pieces ``pattern.split`` makes of ``text[start:end]``, in ``text``."""
    out = []
    at = start
    for separator in pattern.finditer(text[start:end]):
        out.append((at, start + separator.start()))
        at = start + separator.end()
    out.append((at, end))
    return out
