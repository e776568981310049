"""The parsed catalog is cached in .slayer-kb/ and reloaded whenever a catalog file changes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from slayer_kb.catalog.cache import catalog_signature, load_catalog_cached
from slayer_kb.catalog.catalog import load_catalog
from testing import write_test_catalog


def test_cache_round_trips_and_follows_changes(tmp_path: Path) -> None:
    write_test_catalog(tmp_path, priority=["shop"])
    (tmp_path / "models/shop/broken.yaml").write_text("columns: [unclosed\n")
    cache = tmp_path / "catalog.json"
    fresh = load_catalog(tmp_path)
    first = load_catalog_cached(tmp_path, cache, ["sig", 1])
    assert cache.exists()
    again = load_catalog_cached(tmp_path, cache, ["sig", 1])
    for loaded in (first, again):
        assert loaded.datasources == fresh.datasources
        assert loaded.priority == fresh.priority
        assert [str(p) for p in loaded.problems] == [str(p) for p in fresh.problems]
    assert again.datasources["shop"].models["orders"].leaf_kind("aov") == "measure"
    (tmp_path / "models/shop/regions.yaml").write_text("joins: [{target_model: countries, name: home}]\n")
    named = load_catalog_cached(tmp_path, cache, ["sig", 3])
    assert load_catalog_cached(tmp_path, cache, ["sig", 3]).datasources["shop"].models["regions"].join_names == ("home",)
    assert named.datasources["shop"].models["regions"].join_names == ("home",)
    # Another signature means the files changed: the cache is not trusted.
    (tmp_path / "models/shop/refunds.yaml").unlink()
    changed = load_catalog_cached(tmp_path, cache, ["sig", 2])
    assert "refunds" not in changed.datasources["shop"].models


def test_a_damaged_cache_is_ignored(tmp_path: Path) -> None:
    write_test_catalog(tmp_path, priority=["shop"])
    cache = tmp_path / "catalog.json"
    cache.write_text('{"format": 1, "signature": ["s"], "catalog": {"datasources": 5}}')
    assert load_catalog_cached(tmp_path, cache, ["s"]).datasources == load_catalog(tmp_path).datasources


def test_a_copy_with_its_files_times_reads_the_cache_while_their_bytes_are_the_same(tmp_path: Path) -> None:
    """A KB copied with its files' times (``cp -p``: new inodes) uses the parse its cache holds,
    marked here so that its use shows, and says so for its new inodes; a copy whose file holds
    other bytes under its old time and size is parsed again."""
    original = tmp_path / "a"
    write_test_catalog(original, priority=["shop"])
    load_catalog_cached(original, original / "catalog.json", catalog_signature(original, 0))
    data = json.loads((original / "catalog.json").read_text())
    for datasource in data["catalog"]["datasources"]:
        for model in datasource["models"]:
            model["description"] = "from the cache"
    (original / "catalog.json").write_text(json.dumps(data))
    copy, edited = tmp_path / "b", tmp_path / "c"
    for folder in (copy, edited):
        shutil.copytree(original, folder)  # copy2: each file's time kept, a new inode
    got = load_catalog_cached(copy, copy / "catalog.json", catalog_signature(copy, 0))
    assert got.datasources["shop"].models["orders"].description == "from the cache"
    assert json.loads((copy / "catalog.json").read_text())["signature"] == catalog_signature(copy, 0)
    orders = edited / "models" / "shop" / "orders.yaml"
    before = orders.stat()
    orders.write_bytes(orders.read_bytes().replace(b"One row per customer order.", b"One row per shoppers order."))
    os.utime(orders, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert orders.stat().st_size == before.st_size
    got = load_catalog_cached(edited, edited / "catalog.json", catalog_signature(edited, 0))
    assert got.datasources["shop"].models["orders"].description == "One row per shoppers order."
    assert got.datasources["shop"].models["customers"].description != "from the cache"
