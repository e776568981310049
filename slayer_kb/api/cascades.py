"""The catalog cascades as ``KnowledgeBase`` methods (a mixin): each deletes a catalog entity
and strips it from every memory, or prunes dangling references, in one commit (ops/cascade.py,
imported on use)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Part

if TYPE_CHECKING:  # built by ops/cascade.py, imported on use
    from ..core.results import CascadeResult


class Cascades(Part):
    """``delete_model``, ``delete_datasource``, ``delete_leaf`` and ``prune``."""

    def delete_model(
        self, model: str, datasource: str | None = None, *, force: bool = False
    ) -> CascadeResult:
        from ..ops import cascade

        return cascade.delete_model(self.as_context, model, datasource, force=force)

    def delete_datasource(self, datasource: str, *, force: bool = False) -> CascadeResult:
        from ..ops import cascade

        return cascade.delete_datasource(self.as_context, datasource, force=force)

    def delete_leaf(self, leaf: str, *, force: bool = False) -> CascadeResult:
        from ..ops import cascade

        return cascade.delete_leaf(self.as_context, leaf, force=force)

    def prune(self, dry_run: bool = False, *, force: bool = False) -> CascadeResult:
        from ..ops import cascade

        return cascade.prune(self.as_context, dry_run=dry_run, force=force)
