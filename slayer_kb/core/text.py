"""Plain-text pieces that the CLI and the MCP server print alike."""

from __future__ import annotations

from collections.abc import Iterable


def warning_lines(warnings: Iterable[str]) -> str:
    """Each warning on a line of its own, after the text it follows."""
    return "".join(f"\nwarning: {w}" for w in warnings)
