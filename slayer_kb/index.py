"""The Whoosh index in ``.slayer-kb/index``: derived from the files alone, kept current by
comparing a manifest of file signatures with the directory, and queried without any query parser
(words are turned into term queries directly, so no character a user types can be syntax).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from whoosh import index as windex
from whoosh import query as Q
from whoosh.analysis import StemmingAnalyzer
from whoosh.fields import ID, KEYWORD, STORED, TEXT, Schema
from whoosh.scoring import BM25F

from .catalog import Catalog
from .errors import MemoryFileError
from .memory import Memory, loads
from .repo import STATE_DIR

# Bump when the schema or what is indexed changes: an index of another format is rebuilt.
FORMAT = 2
NONE = "\u2205"  # stands for "no value" in ID fields (an empty string indexes no term)
MEMORIES_DIR = "memories"
# A file changed within this many seconds of a scan may change again within the file system's
# timestamp granularity without its signature changing; such files are re-read on the next scan.
RACY_SECONDS = 2.0
BULK_THRESHOLD = 2000

_analyzer = StemmingAnalyzer()
_WORD = re.compile(r"\w+(?:[.'-]\w+)*", re.UNICODE)

SCHEMA = Schema(
    id=ID(stored=True, unique=True),
    kind=ID(stored=True),
    title=TEXT(analyzer=_analyzer, field_boost=3.0),
    learning=TEXT(analyzer=_analyzer, field_boost=2.0),
    description=TEXT(analyzer=_analyzer, field_boost=1.0),
    entities=KEYWORD(scorable=True, lowercase=False),
    # The ancestors of each entity (shop, shop.orders for shop.orders.amount), so that asking
    # about a model also finds memories about its columns, ranked below exact matches.
    under=KEYWORD(lowercase=False),
    # The words of a named id (kb.refund-policy): people choose ids that say what a memory is.
    name=TEXT(analyzer=_analyzer, field_boost=1.5),
    datasources=KEYWORD(lowercase=False),
    type=ID,
    project=ID,
    scope=ID,
    topic_key=ID,
    session_id=ID,
    content_hash=ID,
    has_query=ID,
    deleted=ID,
    created_at=ID(sortable=True),
    data=STORED,
)
TEXT_FIELDS = ("title", "learning", "description")


@dataclass
class SyncReport:
    updated: int = 0
    removed: int = 0
    catalog_changed: bool = False
    rebuilt: bool = False
    problems: list[MemoryFileError] = field(default_factory=list)


def text_terms(text: str) -> list[list[str]]:
    """The words of ``text`` as analysed tokens; a word the analyser splits yields several."""
    out = []
    for word in _WORD.findall(text):
        tokens = [t.text for t in _analyzer(word)]
        if tokens:
            out.append(tokens)
    return out


def value_or_none(value: str | None) -> str:
    return value if value else NONE


def memory_document(memory: Memory, content_hash: str) -> dict[str, Any]:
    catalog_entities = [e for e in memory.entities if not e.startswith("memory:")]
    datasources = {e.split(".", 1)[0] for e in catalog_entities}
    ancestors = {e.rsplit(".", n)[0] for e in catalog_entities for n in range(1, e.count(".") + 1)}
    return {
        "id": memory.id,
        "kind": "memory",
        "title": memory.title or "",
        "learning": memory.learning,
        "description": memory.description or "",
        "entities": " ".join(memory.entities),
        "datasources": " ".join(sorted(datasources)),
        "under": " ".join(sorted(ancestors)),
        "name": "" if memory.id.isdigit() else memory.id.replace(".", " ").replace("-", " ").replace("_", " "),
        "type": value_or_none(memory.type),
        "project": value_or_none(memory.project),
        "scope": value_or_none(memory.scope or "project"),
        "topic_key": value_or_none(memory.topic_key),
        "session_id": value_or_none(memory.session_id),
        "content_hash": content_hash,
        "has_query": "1" if memory.query is not None else "0",
        "deleted": "1" if memory.is_deleted else "0",
        "created_at": memory.created_at,
        "data": memory.to_dict(),
    }


def catalog_documents(catalog: Catalog) -> Iterator[dict[str, Any]]:
    for entity, kind, description in catalog.iter_entities():
        words = entity.replace(".", " ").replace("_", " ")
        yield {
            "id": f"catalog:{entity}",
            "kind": "catalog",
            "title": words,
            "description": description or "",
            "entities": entity,
            "datasources": entity.split(".", 1)[0],
            "data": {"entity": entity, "kind": kind, "description": description},
        }


class Index:
    """The index of one KB. Writes happen only under the KB lock (see ``KnowledgeBase``)."""

    def __init__(
        self,
        root: Path,
        content_hash: Callable[[str], str],
        load_catalog: Callable[[], Catalog],
    ) -> None:
        self.root = root
        self.dir = root / STATE_DIR / "index"
        self.memories = root / MEMORIES_DIR
        self._content_hash = content_hash
        self._load_catalog = load_catalog
        self._ix: windex.Index | None = None
        self._searcher: Any = None

    # -- freshness --------------------------------------------------------------------------

    def scan(self) -> dict[str, list[int]]:
        """``{id: [mtime_ns, size, inode]}`` of every memory file, symlinks excluded."""
        out: dict[str, list[int]] = {}
        try:
            entries = os.scandir(self.memories)
        except FileNotFoundError:
            return out
        with entries:
            for entry in entries:
                name = entry.name
                if not name.endswith(".yaml") or name.startswith("."):
                    continue
                try:
                    if entry.is_symlink() or not entry.is_file():
                        out[name[:-5]] = [-1, -1, -1]
                        continue
                    st = entry.stat()
                except OSError:
                    continue
                out[name[:-5]] = [st.st_mtime_ns, st.st_size, st.st_ino]
        return out

    def catalog_signature(self) -> list[list[Any]]:
        sig = []
        for pattern in ("datasources/*.yaml", "models/*/*.yaml", "priority.yaml"):
            for path in sorted(self.root.glob(pattern)):
                with contextlib.suppress(OSError):
                    st = path.stat()
                    sig.append([path.relative_to(self.root).as_posix(), st.st_mtime_ns, st.st_size])
        return sig

    def _read_manifest(self) -> dict[str, Any] | None:
        try:
            manifest = json.loads((self.dir / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
            return None
        return manifest

    def is_fresh(self) -> bool:
        """Cheap check, no lock: does the index describe the files as they are now?"""
        manifest = self._read_manifest()
        try:
            if manifest is None or not windex.exists_in(str(self.dir)):
                return False
        except Exception:  # noqa: BLE001 - a damaged table of contents: not fresh, rebuild
            return False
        files = manifest["files"]
        if manifest["catalog"] != self.catalog_signature():
            return False
        scanned = self.scan()
        if len(scanned) != len(files):
            return False
        for memory_id, sig in scanned.items():
            known = files.get(memory_id)
            if known is None or known[:3] != sig or known[3]:
                return False
        return True

    def sync(self, progress: Callable[[int, int], None] | None = None, full: bool = False) -> SyncReport:
        """Bring the index up to date with the files, incrementally. Call under the KB lock."""
        report = SyncReport()
        manifest = None if full else self._read_manifest()
        ix = None if manifest is None else self._open_existing()
        if ix is None:
            ix = self._create()
            manifest = {"format": FORMAT, "files": {}, "catalog": None, "problems": {}}
            report.rebuilt = True
        assert manifest is not None
        files: dict[str, list[Any]] = manifest["files"]
        problems: dict[str, list[Any]] = manifest["problems"]
        scanned = self.scan()
        now_ns = time.time_ns()
        changed = [
            mid
            for mid, sig in scanned.items()
            if files.get(mid) is None or files[mid][:3] != sig or files[mid][3]
        ]
        removed = [mid for mid in files if mid not in scanned]
        catalog_sig = self.catalog_signature()
        catalog_changed = manifest["catalog"] != catalog_sig
        if not changed and not removed and not catalog_changed:
            report.problems = _problems_from(problems)
            return report

        bulk = len(changed) > BULK_THRESHOLD
        writer = ix.writer(procs=2, multisegment=True) if bulk and report.rebuilt else ix.writer()
        try:
            for mid in removed:
                writer.delete_by_term("id", mid)
                files.pop(mid, None)
                problems.pop(mid, None)
            total = len(changed)
            reindexed = 0
            for done, mid in enumerate(changed, 1):
                sig = scanned[mid]
                racy = (now_ns - sig[0]) < RACY_SECONDS * 1e9
                data = self._read_bytes(mid, sig)
                digest = hashlib.sha1(data).hexdigest() if data is not None else None
                known = files.get(mid)
                # A young file is re-read until it is old enough to trust its signature; when its
                # bytes did not change, only the signature is updated (no index write).
                if known is None or len(known) < 5 or known[4] != digest or digest is None:
                    problem = self._index_file(writer, mid, data, update=not report.rebuilt)
                    reindexed += 1
                    if problem is None:
                        problems.pop(mid, None)
                    else:
                        problems[mid] = [problem.path, problem.line, problem.message]
                files[mid] = [*sig, racy, digest]
                if progress is not None:
                    progress(done, total)
            if catalog_changed:
                writer.delete_by_term("kind", "catalog")
                for doc in catalog_documents(self._load_catalog()):
                    writer.add_document(**doc)
                manifest["catalog"] = catalog_sig
            writer.commit()
        except BaseException:
            with contextlib.suppress(Exception):
                writer.cancel()
            raise
        report.updated, report.removed = reindexed, len(removed)
        report.catalog_changed = catalog_changed
        report.problems = _problems_from(problems)
        self._write_manifest(manifest)
        self._close_searcher()
        return report

    def _read_bytes(self, memory_id: str, sig: list[int]) -> bytes | None:
        if sig[0] == -1:
            return None
        try:
            return (self.memories / f"{memory_id}.yaml").read_bytes()
        except OSError:
            return None

    def _index_file(self, writer: Any, memory_id: str, data: bytes | None, update: bool) -> MemoryFileError | None:
        rel = f"{MEMORIES_DIR}/{memory_id}.yaml"
        if update:
            writer.delete_by_term("id", memory_id)
        if data is None:
            return MemoryFileError(rel, None, "is a symlink, not a regular file, or unreadable; skipped")
        try:
            memory = loads(data.decode("utf-8"), memory_id, rel)
        except MemoryFileError as exc:
            return exc
        except UnicodeDecodeError as exc:
            return MemoryFileError(rel, None, f"is not UTF-8 text: {exc}")
        writer.add_document(**memory_document(memory, self._content_hash(memory.learning)))
        return None

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        tmp = self.dir / "manifest.json.tmp"
        tmp.write_text(json.dumps(manifest, separators=(",", ":")), encoding="utf-8")
        os.replace(tmp, self.dir / "manifest.json")

    def _open_existing(self) -> windex.Index | None:
        try:
            ix = windex.open_dir(str(self.dir))
            if set(ix.schema.names()) != set(SCHEMA.names()):
                return None
            with ix.searcher() as searcher:
                searcher.doc_count()
            return ix
        except Exception:  # noqa: BLE001 - any damage to derived state means "rebuild it"
            return None

    def _create(self) -> windex.Index:
        self._close_searcher()
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True, exist_ok=True)
        return windex.create_in(str(self.dir), SCHEMA)

    # -- reading ----------------------------------------------------------------------------

    def searcher(self) -> Any:
        if self._searcher is not None and not self._searcher.up_to_date():
            # Whoosh's own refresh() fails on a searcher over an empty index: reopen instead.
            self._close_searcher()
        if self._searcher is None:
            self._ix = windex.open_dir(str(self.dir))
            self._searcher = self._ix.searcher(weighting=BM25F())
        return self._searcher

    def _close_searcher(self) -> None:
        if self._searcher is not None:
            with contextlib.suppress(Exception):
                self._searcher.close()
        self._searcher = None

    def close(self) -> None:
        self._close_searcher()

    def documents(
        self, query: Q.Query, limit: int | None = None, sort_newest: bool = False
    ) -> list[dict[str, Any]]:
        searcher = self.searcher()
        if sort_newest:
            # The sort key takes the place of the score; newest-first lists carry no score.
            results = searcher.search(query, limit=limit, sortedby="created_at", reverse=True)
            return [dict(hit.fields(), score=0.0) for hit in results]
        results = searcher.search(query, limit=limit)
        return [dict(hit.fields(), score=hit.score) for hit in results]

    def memory_data(self, query: Q.Query, limit: int | None = None) -> list[dict[str, Any]]:
        return [doc["data"] for doc in self.documents(query, limit)]


def _problems_from(problems: dict[str, list[Any]]) -> list[MemoryFileError]:
    return [MemoryFileError(p, line, msg) for p, line, msg in sorted(problems.values())]


def terms(field_name: str, values: Iterable[str]) -> list[Q.Query]:
    return [Q.Term(field_name, v) for v in values]
