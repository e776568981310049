"""The parsed catalog kept between commands (``load_catalog_cached``): parsing hundreds of model
files costs a short command most of its run time, so the parse is saved in the KB's state folder
with the signature of the files it read, and used again while the files keep that signature."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from ..core.fileio import TooLarge, read_regular, write_whole
from .catalog import MAX_CATALOG_BYTES, Catalog, CatalogProblem, Datasource, Model, catalog_files, load_catalog

# 2: paths relative to the KB, so a cache moved with its KB (mv) never names the old place.
# 3: join names. 4: problems for a folder or FIFO named *.yaml, a priority.yaml without its key.
# 5: a priority.yaml with another key beside it, named; whether a problem skips its file.
# 6: that key named as written (a null or number key), at its line. 7: values their tags do not fit.
# 8: a name in the priority list that is no datasource. 9: a measure or join naming no leaf; duplicate keys.
CACHE_FORMAT = 9


def same_signature(a: Any, b: Any) -> bool:
    """Two catalog signatures (lists of [path, mtime, size, inode, content hash if young]) that
    describe the same files: a hash counts only when both sides have one, so a file that merely
    grew old is not a change."""
    if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x[:4] != y[:4] or (len(x) > 4 and len(y) > 4 and x[4] != y[4]):
            return False
    return True


def catalog_signature(root: Path, racy_seconds: float) -> list[list[Any]]:
    """What the catalog's files look like now. A file changed within the timestamp granularity
    (``racy_seconds``) could change again without its stat changing, so its bytes count too."""
    sig = []
    young_after = time.time_ns() - racy_seconds * 1e9
    for rel, leads_out in catalog_files(root):
        path = os.path.join(root, rel)
        with contextlib.suppress(OSError):
            # A link out of the KB counts as the link itself: its target is never read.
            st = os.lstat(path) if leads_out else os.stat(path)
            entry = [rel, st.st_mtime_ns, st.st_size, st.st_ino]
            if st.st_mtime_ns > young_after and not leads_out:
                with contextlib.suppress(TooLarge):  # never read: its size is its signature
                    data = read_regular(path, follow_symlinks=True, limit=MAX_CATALOG_BYTES)
                    entry.append(hashlib.sha1(data, usedforsecurity=False).hexdigest())
            sig.append(entry)
    return sig


def load_catalog_cached(root: Path, cache: Path, signature: Any) -> Catalog:
    """``load_catalog``, reusing the parsed catalog saved in ``cache`` while the files' signature
    is unchanged: parsing hundreds of model files costs a short command most of its run time."""
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        if data.get("format") == CACHE_FORMAT and same_signature(data.get("signature"), signature):
            return _from_json(data["catalog"], root)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    catalog = load_catalog(root)
    with contextlib.suppress(OSError):
        write_whole(cache, json.dumps({"format": CACHE_FORMAT, "signature": signature,
                                       "catalog": _to_json(catalog, root)}))
    return catalog


def _to_json(catalog: Catalog, root: Path) -> dict[str, Any]:
    def rel(path: Path) -> str:
        return os.path.relpath(path, root)

    return {
        "priority": catalog.priority,
        "problems": [[rel(p.path), p.line, p.message, p.skipped] for p in catalog.problems],
        "datasources": [
            {
                "name": ds.name,
                "description": ds.description,
                "path": None if ds.path is None else rel(ds.path),
                "models": [
                    {
                        "name": m.name,
                        "description": m.description,
                        "columns": list(m.columns.items()),
                        "measures": list(m.measures.items()),
                        "aggregations": list(m.aggregations.items()),
                        "joins": list(m.joins),
                        "join_names": list(m.join_names),
                        "path": rel(m.path),
                    }
                    for m in ds.models.values()
                ],
            }
            for ds in catalog.datasources.values()
        ],
    }


def _from_json(data: dict[str, Any], root: Path) -> Catalog:
    datasources = {}
    for ds in data["datasources"]:
        models = {
            m["name"]: Model(
                ds["name"],
                m["name"],
                m["description"],
                dict(m["columns"]),
                dict(m["measures"]),
                dict(m["aggregations"]),
                tuple(m["joins"]),
                root / m["path"],
                tuple(m["join_names"]),
            )
            for m in ds["models"]
        }
        path = None if ds["path"] is None else root / ds["path"]
        datasources[ds["name"]] = Datasource(ds["name"], ds["description"], path, models)
    problems = [CatalogProblem(root / p, line, message, *rest) for p, line, message, *rest in data["problems"]]
    return Catalog(datasources, list(data["priority"]), problems)
