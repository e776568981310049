"""A hostile Whoosh table of contents: a valid one, whose list of segments unpickles to code.

Whoosh reads an index's ``_MAIN_<generation>.toc`` (the newest generation) and unpickles its
schema and its segments; a file that is not a table of contents is refused before any pickle
is read, so a bare pickle proves nothing about the trust check."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

# Whoosh as the product starts it (without urllib.request and the cached_property package), so
# that in-process tests run the Whoosh the product runs.
from slayer_kb.search import whoosh_start  # noqa: F401

# isort: split
from whoosh.fields import ID, Schema
from whoosh.filedb.filestore import FileStorage
from whoosh.index import TOC

# Above any generation a test's index reaches: Whoosh opens this one.
GENERATION = 9


class Payload:
    """Unpickling this makes the folder ``proof``: proof that the pickle was opened."""

    def __init__(self, proof: Path) -> None:
        self.proof = proof

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (str(self.proof),))


def hostile_toc(index: Path, proof: Path) -> Path:
    """Write into the index folder ``index`` a table of contents of generation ``GENERATION``
    whose segments make ``proof`` when Whoosh opens the index; return the file."""
    index.mkdir(parents=True, exist_ok=True)
    target = index / f"_MAIN_{GENERATION}.toc"
    with tempfile.TemporaryDirectory() as scratch:  # Whoosh writes it under a name of its own
        TOC(Schema(id=ID(stored=True)), [Payload(proof)], GENERATION).write(FileStorage(scratch), "MAIN")
        shutil.move(str(Path(scratch) / target.name), target)
    return target
