"""Talking to ``slayer-kb mcp`` through the MCP SDK's own stdio client, as an agent does."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from mcp import ClientSession, StdioServerParameters, stdio_client

T = TypeVar("T")


def with_server(root: Path, script: Callable[[ClientSession], Awaitable[T]]) -> T:
    """Run ``script`` against one ``slayer-kb --kb ROOT mcp`` process and stop it afterwards."""

    async def main() -> T:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "slayer_kb", "--kb", str(root), "mcp"],
            env=dict(os.environ),  # conftest's git identity and isolated git config
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await script(session)

    try:
        return asyncio.run(asyncio.wait_for(main(), timeout=60))
    except Exception as exc:
        # The SDK's task groups wrap a failed assertion several levels deep; show it plainly.
        inner: BaseException = exc
        while len(getattr(inner, "exceptions", ())) == 1:
            inner = inner.exceptions[0]  # type: ignore[attr-defined]
        raise inner from None


async def call(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A successful call's text; a tool error fails the test with the server's message."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}{arguments} failed: {result.content[0].text}"
    return result.content[0].text


async def call_json(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    return json.loads(await call(session, tool, **arguments))


async def error(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool}{arguments} should have failed: {result.content[0].text}"
    return result.content[0].text
