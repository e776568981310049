"""The parsed catalog is cached in .slayer-kb/ and reloaded whenever a catalog file changes."""

from __future__ import annotations

from pathlib import Path

from slayer_kb.catalog.cache import load_catalog_cached
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
