"""The base of the mixins that make up ``KnowledgeBase`` (api/engram.py, api/cascades.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from ..context import Context


class Part:
    """A part of ``KnowledgeBase``, which is its only subclass."""

    @property
    def as_context(self) -> Context:
        """This object as the Context the operations take (a mixin cannot name its subclass
        as its own type)."""
        return cast("Context", self)
