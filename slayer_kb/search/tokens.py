"""Each memory's distinct token ids as the static model's tokenizer made them for its vector,
kept in the index's manifest beside the vectors (a table of its own, which the scan of the
vectors never reads), with the hash of the text: a search's token match reads its head's here
instead of tokenizing their texts again (docs/search.md, "A sixth round"): 46 MB on disk at
100,000 memories."""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# id -> the hash of its text (as the vectors table's ``hash``) and that text's distinct token ids (``pack``).
SCHEMA_SQL = "CREATE TABLE IF NOT EXISTS tokens (id TEXT PRIMARY KEY, hash TEXT, ids BLOB) WITHOUT ROWID"
# Ids looked up at a time (SQLite allows 999 parameters in old builds).
_BY_ID_CHUNK = 500


def pack(ids: np.ndarray) -> bytes | None:
    """Sorted distinct token ids as two-byte integers (the static model's vocabulary has 32,000);
    None for an id past them, which a vocabulary of another model could hold."""
    import numpy as np

    return ids.astype("<u2").tobytes() if not len(ids) or ids[-1] <= np.iinfo(np.uint16).max else None


def unpack(blob: bytes) -> np.ndarray:
    """``pack``'s ids as the token match reads them (int64)."""
    import numpy as np

    return np.frombuffer(blob, dtype="<u2").astype(np.int64)


def by_id(db: sqlite3.Connection, memory_ids: list[str]) -> dict[str, tuple[str, bytes]]:
    """id -> (text hash, packed token ids) of these memories, those the table holds."""
    out: dict[str, tuple[str, bytes]] = {}
    for at in range(0, len(memory_ids), _BY_ID_CHUNK):
        chunk = memory_ids[at : at + _BY_ID_CHUNK]
        out.update((m, (digest, blob)) for m, digest, blob in db.execute(
            f"SELECT id, hash, ids FROM tokens WHERE id IN ({', '.join('?' * len(chunk))})", chunk  # noqa: S608 - placeholders only
        ))
    return out
