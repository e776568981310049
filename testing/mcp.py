"""Talking to the MCP server through the MCP SDK's own client: to a ``slayer-kb mcp`` process over
stdio, as an agent does, or to the same server in the test's process."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.memory import create_client_server_memory_streams

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.server import tool_server

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

    return _run(main())


def with_server_in_process(root: Path, script: Callable[[ClientSession], Awaitable[T]]) -> T:
    """``with_server`` with the server in this process, over the SDK's memory streams: the same
    tools, replies and protocol, without the process and its stdio (2 s of CPU to start), for
    tests of what the tools answer rather than of the server process."""
    kb = KnowledgeBase(root)
    server = tool_server(kb)

    async def main() -> T:
        async with create_client_server_memory_streams() as (client, served), anyio.create_task_group() as group:
            group.start_soon(server.run, *served, server.create_initialization_options())
            async with ClientSession(*client) as session:
                await session.initialize()
                result = await script(session)
            group.cancel_scope.cancel()
            return result

    try:
        return _run(main())
    finally:
        kb.close()


def _run(main: Awaitable[T]) -> T:
    try:
        return asyncio.run(asyncio.wait_for(main, timeout=60))
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
