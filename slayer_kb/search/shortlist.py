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

import threading
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from . import runtime
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
    onnxruntime = runtime.onnxruntime()
    options = onnxruntime.SessionOptions()
    # One thread: the scan is bound by memory, and the machine has other work.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(model_bytes(dimensions), options, providers=["CPUExecutionProvider"])


class Blocks:
    """A matrix's int8 rows in blocks of ``BLOCK_ROWS``, each laid out as columns (transposed,
    contiguous) with ``SHIFT`` times each row's sum and its rows' inverse norms in float64: what
    ``Scan`` multiplies and scales by (made per block, not again per question). A block is made
    when a scan first needs it and again after a row in it changed (``forget``), so a table
    holds them beside its rows (39 MB more at 100,000 memories) and a save remakes one block."""

    def __init__(self) -> None:
        # block number -> (rows the block held when made, its columns, SHIFT times its rows'
        # sums, their inverse norms)
        self._made: dict[int, tuple[int, np.ndarray, np.ndarray, np.ndarray]] = {}

    def forget(self, row: int) -> None:
        """Row ``row`` changed: its block is made again when next scanned."""
        self._made.pop(row // BLOCK_ROWS, None)

    def fill(self, matrix: np.ndarray, inverse: np.ndarray) -> None:
        """Make every block of ``matrix`` (with its rows' ``inverse`` norms) now (a warm process,
        as it loads its table), so that its first scan does not (about 65 ms of CPU at 100,000
        memories)."""
        for number in range(-(-len(matrix) // BLOCK_ROWS)):
            self.block(matrix, inverse, number)

    def block(self, matrix: np.ndarray, inverse: np.ndarray, number: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Block ``number`` of ``matrix`` (the rows in use, ``inverse`` their inverse norms):
        its columns, SHIFT times its rows' sums, and their inverse norms in float64."""
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
            made = self._made[number] = (len(rows), columns, SHIFT * rows.sum(axis=1, dtype=np.int32),
                                         inverse[start : start + len(rows)].astype(np.float64))
        return made[1], made[2], made[3]


class Products:
    """A question's vector rounded to signed bytes: a ``Scan`` with it approximates each row's
    cosine within ``slack``."""

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


class Scan:
    """One question's approximate cosines with every row (its int8 product with the rounded
    question, times the two scales), made a block at a time by whichever thread asks
    (``work``): a search begins it in the helper thread as soon as the question is encoded,
    while its own thread still scores the words, and joins in when it needs the result
    (``finish``). Each block's products are exact integers and each row's float operations its
    own, so the result does not depend on which thread made which block. Rows not ``allowed``
    approximate to -inf; each block keeps its best ``depth`` approximations, so the depth-th
    best of all is found among a few dozen values (a partition of every row took 1-2 ms)."""

    def __init__(self, matrix: np.ndarray, inverse: np.ndarray, allowed: np.ndarray, depth: int, blocks: Blocks | None = None) -> None:
        import numpy as np

        self.matrix, self.inverse, self.depth = matrix, inverse, depth
        self._barred = ~allowed  # the rows not allowed: once a scan, not once a block
        self.blocks = blocks if blocks is not None else Blocks()
        self.count = -(-len(matrix) // BLOCK_ROWS)
        self.approximate = np.empty(len(matrix), dtype=np.float64)
        self.products: Products | None = None
        self._bests: list[np.ndarray] = [np.zeros(0)] * self.count
        self._next = 0
        self._busy = 0  # blocks being made
        self._failed: BaseException | None = None
        self._lock = threading.Condition()

    def start(self, products: Products) -> None:
        """The question's rounding, made by whichever thread has the question's vector first."""
        with self._lock:
            if self.products is None:
                self.products = products

    def begin(self, vector: np.ndarray) -> None:
        """Start the scan with the question's vector and make blocks (the helper thread, as
        soon as the question is encoded)."""
        self.start(Products(vector))
        self.work()

    def split(self) -> None:
        """A large matrix in two threads, the helper taking blocks too: half the wall time on
        two cores (onnxruntime releases the GIL)."""
        if len(self.matrix) >= SPLIT_ROWS:
            helper().submit(self.work)

    def work(self) -> None:
        """Make the blocks no thread has taken yet, until none are left (or one failed)."""
        while True:
            with self._lock:
                if self._next >= self.count or self._failed is not None:
                    return
                number = self._next
                self._next += 1
                self._busy += 1
            try:
                self._make(number)
            except BaseException as exc:
                with self._lock:
                    self._failed = self._failed or exc
                raise
            finally:
                with self._lock:
                    self._busy -= 1
                    self._lock.notify_all()

    def finish(self) -> tuple[np.ndarray, float]:
        """Every row's approximation, once every block is made (this thread makes those left,
        then waits for those other threads are making), and the depth-th best of them (-inf
        when fewer rows are allowed). A block that failed in any thread raises here."""
        import numpy as np

        self.work()
        with self._lock:
            self._lock.wait_for(lambda: self._busy == 0)
            if self._failed is not None:
                raise self._failed
        bests = np.concatenate(self._bests) if self.count else np.zeros(0)
        depth = min(self.depth, len(bests))
        return self.approximate, float(-np.partition(-bests, depth - 1)[depth - 1]) if depth else -np.inf

    def _make(self, number: int) -> None:
        import numpy as np

        products = self.products
        assert products is not None, "a scan works once started"
        columns, shifted, inverse = self.blocks.block(self.matrix, self.inverse, number)
        (found,) = _session(self.matrix.shape[1]).run(None, {"A": products.shifted, "B": columns})
        start = number * BLOCK_ROWS
        end = start + len(shifted)
        # Row by row the same operations as over the whole matrix at once: the same floats.
        block = (found[0] - shifted).astype(np.float64) * (products.scale * inverse)
        block[self._barred[start:end]] = -np.inf
        self.approximate[start:end] = block
        keep = min(self.depth, len(block))
        # The best ``keep`` (in no order): what the depth-th best of all is found among.
        self._bests[number] = np.partition(block, len(block) - keep)[len(block) - keep :]
