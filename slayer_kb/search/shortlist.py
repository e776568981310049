"""The scan of every sentence vector, in whole numbers first (``Table.sentence_top``).

Reading 100,000 float32 vectors (154 MB) was a third of a question's time at 100,000 memories,
bound by memory. The vectors are stored as signed bytes with a scale (sentences.pack), so a scan
multiplies those bytes with the question's vector rounded to whole numbers too, in exact int32
arithmetic (onnxruntime's MatMulInteger: 38 MB read, in int8 SIMD). That product is not the
cosine, but it is within a bound of it that is known before the scan (``Products.slack``):
every memory whose cosine could reach the best ``depth`` is within twice that bound of the
depth-th best approximation, and only those (a few dozen) are scored as before, in float32.

The product is taken as one row (the question, unsigned bytes) times blocks of the rows laid
out as columns (``Blocks``): onnxruntime's kernel for that shape ran 3-4 times faster than one
for the rows times a column of signed bytes (docs/search.md). Its x86 kernel without VNNI sums
pairs of byte products in 16 bits, saturating, so the question is rounded to -63..63 and
shifted by 64 (0..127: a pair's sum stays within 16 bits), and 64 times each row's sum is taken
off again: the exact products.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .helper import helper

if TYPE_CHECKING:
    import numpy as np

# What float32 arithmetic can add to a cosine of unit vectors of 384 dimensions, whatever the
# order of its sums (n * 2**-24 = 2.3e-5), with room to spare.
ROUNDING = 1e-4
# From this many rows a scan runs in two halves, one in the helper thread.
SPLIT_ROWS = 32_768
# Rows a block of ``Blocks`` holds: a row's change makes its block again (3 MB, about 5 ms).
# Smaller blocks cost a scan more runs (2,048 rows: 6.4 ms for 100,000 rows, against 3.5).
BLOCK_ROWS = 8192
_TILE_ROWS = 256
# The question's whole numbers are -LEVELS..LEVELS, shifted by SHIFT to 0..2 * LEVELS: a byte
# product of at most 127 * 127, two of them summed, stays within a signed 16-bit sum.
LEVELS = 63
SHIFT = 64
# A product over 384 dimensions: the largest is 384 * 127 * 127, within int32.
_UINT8, _INT8, _INT32 = 2, 3, 6  # onnx.TensorProto's data types


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes | int) -> bytes:
    """A protobuf field: a varint (int) or a length-delimited one (bytes)."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _tensor(name: str, elem_type: int, dims: tuple[int | str, ...]) -> bytes:
    """An ONNX ValueInfoProto: a tensor's name, type and shape (a str dimension is symbolic)."""
    shape = b"".join(_field(1, _field(2, d.encode()) if isinstance(d, str) else _field(1, d)) for d in dims)
    return _field(1, name.encode()) + _field(2, _field(1, _field(1, elem_type) + _field(2, shape)))


def model_bytes(dimensions: int) -> bytes:
    """An ONNX model of one node, Y = MatMulInteger(A, B): A uint8 [1, dimensions], B int8
    [dimensions, rows], Y int32 [1, rows]. Written by hand, so the ``onnx`` package is not needed."""
    node = _field(1, b"A") + _field(1, b"B") + _field(2, b"Y") + _field(4, b"MatMulInteger")
    graph = (_field(1, node) + _field(2, b"int8-scan") + _field(11, _tensor("A", _UINT8, (1, dimensions)))
             + _field(11, _tensor("B", _INT8, (dimensions, "rows"))) + _field(12, _tensor("Y", _INT32, (1, "rows"))))
    return _field(1, 7) + _field(8, _field(1, b"") + _field(2, 13)) + _field(7, graph)


@lru_cache(maxsize=4)
def _session(dimensions: int) -> Any:
    import onnxruntime

    options = onnxruntime.SessionOptions()
    # One thread: the scan is bound by memory, and the machine has other work.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model_bytes(dimensions), options, providers=["CPUExecutionProvider"])


class Blocks:
    """A matrix's int8 rows in blocks of ``BLOCK_ROWS``, each laid out as columns (transposed,
    contiguous) with each row's sum: what ``Products.scores`` multiplies. A block is made when a
    scan first needs it and again after a row in it changed (``forget``), so a table holds them
    beside its rows (38 MB more at 100,000 memories) and a save remakes one block."""

    def __init__(self) -> None:
        # block number -> (rows the block held when made, its columns, its rows' sums)
        self._made: dict[int, tuple[int, np.ndarray, np.ndarray]] = {}

    def forget(self, row: int) -> None:
        """Row ``row`` changed: its block is made again when next scanned."""
        self._made.pop(row // BLOCK_ROWS, None)

    def fill(self, matrix: np.ndarray) -> None:
        """Make every block of ``matrix`` now (a warm process, as it loads its table), so that
        its first scan does not (about 65 ms of CPU at 100,000 memories)."""
        for number in range(-(-len(matrix) // BLOCK_ROWS)):
            self.block(matrix, number)

    def block(self, matrix: np.ndarray, number: int) -> tuple[np.ndarray, np.ndarray]:
        """Block ``number`` of ``matrix`` (the rows in use): its columns and its rows' sums."""
        import numpy as np

        start = number * BLOCK_ROWS
        rows = matrix[start : start + BLOCK_ROWS]
        made = self._made.get(number)
        if made is None or made[0] != len(rows):
            columns = np.empty((rows.shape[1], len(rows)), dtype=rows.dtype)
            # A tile of rows at a time: transposing the whole block at once strides through
            # memory (8,192 rows: 4.7 ms, against 1.2 by tiles of 256).
            for at in range(0, len(rows), _TILE_ROWS):
                columns[:, at : at + _TILE_ROWS] = rows[at : at + _TILE_ROWS].T
            made = self._made[number] = (len(rows), columns, rows.sum(axis=1, dtype=np.int32))
        return made[1], made[2]


class Products:
    """A question's vector rounded to signed bytes: ``scores`` approximates each row's cosine
    within ``slack``."""

    def __init__(self, vector: np.ndarray) -> None:
        import numpy as np

        exact = vector.astype(np.float64)
        peak = float(np.abs(exact).max()) if len(exact) else 0.0
        self.scale = peak / LEVELS if peak > 0 else 1.0
        self.rounded = np.rint(exact / self.scale).astype(np.int8)
        self.shifted = (self.rounded.astype(np.int16) + SHIFT).astype(np.uint8)[None, :]
        # |cos - approximation| <= |row| * |vector - its rounding| (Cauchy-Schwarz; a stored row,
        # scaled by its inverse norm, has length 1 to float precision) plus float rounding.
        self.slack = float(np.linalg.norm(exact - self.scale * self.rounded)) * (1 + 1e-6) + ROUNDING

    def scores(self, matrix: np.ndarray, inverse: np.ndarray, blocks: Blocks | None = None) -> np.ndarray:
        """Each row's approximate cosine (float64): its int8 product with the rounded vector,
        times the two scales. ``matrix``: int8 rows, ``inverse``: 1 / their length, ``blocks``:
        the matrix's ``Blocks`` as kept so far (None: made for this scan alone)."""
        import numpy as np

        if not len(matrix):
            return np.zeros(0, dtype=np.float64)
        blocks = blocks if blocks is not None else Blocks()
        products = np.empty(len(matrix), dtype=np.int32)
        count = -(-len(matrix) // BLOCK_ROWS)  # blocks

        def run(first: int, end: int) -> None:
            session = _session(matrix.shape[1])
            for number in range(first, end):
                columns, sums = blocks.block(matrix, number)
                (found,) = session.run(None, {"A": self.shifted, "B": columns})
                start = number * BLOCK_ROWS
                products[start : start + len(sums)] = found[0] - SHIFT * sums

        # A large table in two halves, one in the helper thread (onnxruntime releases the GIL):
        # half the wall time on two cores. Exact integers: the same products either way.
        half = count // 2 if len(matrix) >= SPLIT_ROWS else 0
        first = helper().submit(run, 0, half) if half else None
        run(half, count)
        if first is not None:
            first.result()
        return products.astype(np.float64) * (self.scale * inverse.astype(np.float64))
