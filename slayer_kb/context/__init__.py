"""A knowledge base's ``Context``: its parts (parts.py) and what every operation shares
(context.py)."""

from .context import Context, deleted_error
from .parts import DEFAULT_DEDUP_WINDOW, DEFAULT_MAX_CONTENT

__all__ = ["DEFAULT_DEDUP_WINDOW", "DEFAULT_MAX_CONTENT", "Context", "deleted_error"]
