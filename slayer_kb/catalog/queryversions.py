"""A SlayerQuery's ``version``: older versions migrated to the current one as SLayer 1.4.1 does."""

from __future__ import annotations

from typing import Any

from .querychecks import FALSE, TRUE, fail

# The version SLayer 1.4.1 writes, and the one from which the legacy `strict` key is refused.
CURRENT_VERSION = 6
_STRICT_RETIRED_AT = 4


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """SLayer's ``_migrate_and_rewrite`` for a query: the retired ``strict``, then the migrations
    a query of that version goes through (v1 -> v2 renames ``fields``, v2 -> v3 drops
    ``dry_run`` and ``explain``, v3 -> v4 turns ``strict: true`` into ``to_many_handling``)."""
    if "strict" in data:
        raw = data.get("version")
        version: int | None = None
        if isinstance(raw, int) and not isinstance(raw, bool):
            version = raw
        elif isinstance(raw, str):
            try:
                version = int(raw)
            except ValueError:
                version = None
        if version is None or version >= _STRICT_RETIRED_AT:
            fail("strict", "`strict` is retired; set to_many_handling='error' instead (one of broadcast|associate|error).")
    try:
        current = int(data.get("version", 1))
    except (TypeError, ValueError) as exc:
        fail("version", f"{exc} (a SlayerQuery's version is a whole number, {CURRENT_VERSION} today)")
    if current < 2 and "fields" in data:
        if "measures" in data:
            fail("fields", "v1 SlayerQuery has both 'fields' and 'measures'; cannot migrate unambiguously. Drop one before migrating.")
        data["measures"] = data.pop("fields")
    if current < 3:
        data.pop("dry_run", None)
        data.pop("explain", None)
    if current < _STRICT_RETIRED_AT and "strict" in data:
        strict = data.pop("strict")
        if isinstance(strict, str):
            token = strict.strip().lower()
            if token not in TRUE | FALSE | {""}:
                fail("strict", f"Unrecognized legacy strict value {strict!r}; use to_many_handling instead")
            strict = token in TRUE
        if strict:
            data.setdefault("to_many_handling", "error")
    return data
