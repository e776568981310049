"""``slayer-kb mcp``: the memory tools over the Model Context Protocol, on stdio.

SLayer's ``save_memory`` / ``search`` / ``forget_memory`` answer with the seed's JSON shapes;
Engram's ``mem_*`` tools answer with Engram's reply texts. Every tool is one ``KnowledgeBase``
call (tools.py); this module is the protocol: the stdio transport, which screens every line, and
the SDK's server.

The ``mcp`` SDK is an optional extra, so it is imported only when the server starts; the tool
table and the formatting below work without it (and are what the tests exercise through a real
subprocess).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any, BinaryIO

from .. import __version__
from ..core.errors import KBError
from ..core.nesting import MAX_DEPTH, KeyTwiceError, cut_deep, loads, text_depth, too_deep
from ..kb import KnowledgeBase
from . import tools
from .schema import DEEP_ARGUMENT_FIX

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

logger = logging.getLogger(__name__)

INSTALL_HINT = "The MCP server needs the 'mcp' package: pip install 'slayer-kb[mcp]'."
INSTRUCTIONS = """\
slayer-kb is a shared, git-backed memory of what agents learned about the data (SLayer entities) \
and about the work (Engram observations). One store serves both tool families: ids from one work \
in the other.

SEARCH before you answer a question about the data, write a query, or start a task:
  search(entities=[...], question="...") for data knowledge (example_queries are worked queries);
  mem_search(query="...") for past decisions, bug fixes and conventions; mem_context at session start.

SESSIONS (optional): mem_session_start(id, project) first, mem_save_prompt for each user request, \
the same session_id on every save, mem_capture_passive on a '## Key Learnings:' list, and \
mem_session_end(id, summary) last.

SAVE proactively, once a task is done, after each of these:
  - a fact about the data that cost you effort: what a column's values mean, a filter a metric
    needs, a join gotcha -> save_memory(learning, linked_entities) (or with a SlayerQuery to keep
    a worked example);
  - an architectural decision or trade-off, a bug fix (what, why, how), a new pattern or
    convention, a configuration change, a discovery or gotcha -> mem_save(title, content, type);
  - at the end of a session -> mem_session_summary.
Do not save raw tool calls, trivial changes, work in progress, or what is already saved: search
first and update it (same id for save_memory, topic_key or mem_update for observations).
Every save is a git commit that humans review.
"""


# -- the stdio transport -------------------------------------------------------------------------
#
# The SDK's stdio transport drops without a word a line it cannot parse (a lone surrogate escape,
# JSON nested deeper than its parser allows, a line that is not JSON), and a client waits forever
# for the answer. This one screens each line first and answers whatever it cannot hand on: -32700
# for a line that is not UTF-8 JSON, -32600 for JSON that is no JSON-RPC message, a tool error for
# a tool call whose arguments nest too deep. Then it reads the next line.

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
ENVELOPE_DEPTH = 3
"""A tool argument's value sits inside the message, its params and its arguments."""
_CUT = "\0slayer-kb: nested too deep"


def screen_line(line: bytes) -> tuple[Any, dict[str, Any] | None]:
    """What to do with one line from the client: ``(message, None)`` hands a JSON-RPC message to
    the server, ``(None, reply)`` answers the client at once, ``(None, None)`` skips a blank line."""
    import mcp.types as types
    from pydantic import ValidationError

    raw = line.strip()
    if not raw:
        return None, None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, error_reply(
            _request_id(raw.decode("utf-8", "replace")), PARSE_ERROR,
            f"Parse error: the line is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}); "
            "send each message as one line of UTF-8 JSON.",
        )
    if text_depth(text) > MAX_DEPTH + ENVELOPE_DEPTH:
        return None, _too_deep_reply(text)
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first["type"] == "json_invalid":
            return None, error_reply(
                _request_id(text), PARSE_ERROR,
                f"Parse error: {first['msg']}; send each message as one line of JSON, its strings "
                "valid Unicode.",
            )
        return None, error_reply(
            _request_id(text), INVALID_REQUEST,
            'Invalid Request: the line is JSON but no JSON-RPC 2.0 message ("jsonrpc": "2.0" with '
            'a "method", or an "id" with a "result" or an "error").',
        )
    if isinstance(message, types.JSONRPCNotification) and "id" in (data := json.loads(text)):
        # The SDK takes it for a notification, which has no answer: the client would wait for ever.
        return None, error_reply(None, INVALID_REQUEST, f"Invalid Request: 'id' must be a string or an integer, "
                                                        f"not {_shown(data['id'])}; a notification has no 'id'.")
    if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call":
        problem = _tool_call_problem(message.params)
        if problem is not None:  # the SDK said only "Invalid request parameters"
            return None, error_reply(message.id, INVALID_PARAMS, f"Invalid params: {problem}; send "
                                     '{"name": "<tool>", "arguments": {...}} (tools/list names the tools).')
        try:  # the SDK keeps a repeated key's last value: an argument object naming a key twice, refused as its text is
            loads(text, "the tools/call", "give each key once")
        except KeyTwiceError as exc:
            return None, error_reply(message.id, INVALID_PARAMS, f"Invalid params: {exc}")
    return message, None


def _shown(value: Any) -> str:
    """A JSON value a message quotes, cut short."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:59] + "\u2026"


def _tool_call_problem(params: dict[str, Any] | None) -> str | None:
    """What is wrong with a tools/call's params (the SDK has checked they are an object, or
    none) before any tool reads them, if anything."""
    if params is None:
        return "tools/call has no 'params'"
    if not isinstance(params.get("name"), str):
        if "name" not in params:
            return "tools/call's params have no 'name'"
        return f"tools/call's 'name' must be a tool's name, not {_shown(params['name'])}"
    if params.get("arguments") is not None and not isinstance(params["arguments"], dict):
        return f"{_shown(params['name'])}'s 'arguments' must be an object of its parameters, not {_shown(params['arguments'])}"
    return None


def error_reply(request_id: int | str | None, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _cut_message(text: str) -> Any:
    """The message with what nests too deep cut out (so decoding it never recurses far), or None
    if it is not JSON."""
    try:
        return json.loads(cut_deep(text, MAX_DEPTH + ENVELOPE_DEPTH, _CUT))
    except (ValueError, RecursionError):
        return None


def _request_id(text: str, message: Any = _CUT) -> int | str | None:
    """The id of a request that cannot be served, when it can be read: the client's call then
    ends with the error instead of waiting. None (JSON-RPC's null) for anything else."""
    data = _cut_message(text) if message is _CUT else message
    if not isinstance(data, dict) or "method" not in data:
        return None
    found = data.get("id")
    if isinstance(found, int) and not isinstance(found, bool):
        return found
    if isinstance(found, str) and "\ufffd" not in found:
        return found
    return None


def _too_deep_reply(text: str) -> dict[str, Any]:
    data = _cut_message(text)
    if data is None:
        return error_reply(None, PARSE_ERROR, "Parse error: the line is not valid JSON; send each "
                                              "message as one line of JSON.")
    request_id = _request_id(text, data)
    params = data.get("params") if isinstance(data, dict) else None
    if request_id is not None and data.get("method") == "tools/call" and isinstance(params, dict):
        spec = tools.tool(params.get("name"))  # type: ignore[arg-type]
        arguments = params.get("arguments")
        if spec is not None and isinstance(arguments, dict):
            for name, value in arguments.items():
                if _holds_cut(value):
                    message = str(too_deep(f"{spec.name}: '{name}'", DEEP_ARGUMENT_FIX))
                    content = [{"type": "text", "text": message}]
                    return {"jsonrpc": "2.0", "id": request_id, "result": {"content": content, "isError": True}}
    return error_reply(
        request_id, INVALID_REQUEST,
        f"Invalid Request: the message nests arrays and objects more than "
        f"{MAX_DEPTH + ENVELOPE_DEPTH} levels deep; a tool's arguments may nest {MAX_DEPTH}.",
    )


def _holds_cut(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if item == _CUT:
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def encode_message(item: Any) -> bytes:
    """One line for the client: a reply of :func:`screen_line`, or a message of the server.
    A lone surrogate echoed back from a request (in an id, a tool name) is written as the JSON
    escape it came as, where the SDK's encoder would raise and stop the server."""
    if isinstance(item, dict):
        data = item
    else:
        try:
            return (item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")
        except ValueError:
            data = item.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n"
    return text.encode("utf-8", "backslashreplace")


def _claim_stdio() -> tuple[BinaryIO, BinaryIO, Callable[[], None]]:
    """The protocol's stdin and stdout on descriptors of their own, while fd 0 reads the null
    device and fd 1 writes to stderr: a stray print or a child process (git) can then neither eat
    the client's messages nor break the server's, as with the SDK's own transport."""
    sys.stdout.flush()
    try:
        wire_in, wire_out = os.dup(0), os.dup(1)
    except OSError:
        return sys.stdin.buffer, sys.stdout.buffer, lambda: None
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    with contextlib.suppress(OSError):
        os.dup2(2, 1)

    def restore() -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        with contextlib.suppress(OSError):
            os.dup2(wire_in, 0)
            os.dup2(wire_out, 1)

    # closefd=False: a reading thread may still block on the descriptor after the server is done.
    return os.fdopen(wire_in, "rb", closefd=False), os.fdopen(wire_out, "wb", closefd=False), restore


@contextlib.asynccontextmanager
async def stdio_transport() -> AsyncIterator[tuple[Any, Any]]:
    """``(read_stream, write_stream)`` for ``Server.run``, over stdin and stdout (see above)."""
    import anyio
    from mcp.shared.message import SessionMessage

    wire_in, wire_out, restore = _claim_stdio()
    to_server, from_client = anyio.create_memory_object_stream[Any](0)
    to_client, from_server = anyio.create_memory_object_stream[Any](0)
    replies = to_client.clone()  # one writer for both: lines never interleave
    lines = anyio.wrap_file(wire_in)
    out = anyio.wrap_file(wire_out)

    async def read() -> None:
        async with to_server, replies:
            async for line in lines:
                message, reply = screen_line(line)
                if message is not None:
                    await to_server.send(SessionMessage(message))
                elif reply is not None:
                    await replies.send(reply)

    async def write() -> None:
        async with from_server:
            async for item in from_server:
                await out.write(encode_message(item))
                await out.flush()

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read)
            tasks.start_soon(write)
            yield from_client, to_client
            await to_client.aclose()
    finally:
        restore()


# -- the server ----------------------------------------------------------------------------------


def serve(kb: KnowledgeBase) -> None:
    """Serve the tools on stdin/stdout until the client closes the connection."""
    server = tool_server(kb)
    import anyio

    async def main() -> None:
        async with stdio_transport() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        kb.close()


def tool_server(kb: KnowledgeBase) -> Server[Any]:
    """The MCP SDK's server of the tools on ``kb``, to run on any transport (``serve``: stdio).
    The caller closes ``kb`` once done."""
    try:
        import mcp.types as types
        from mcp.server.lowlevel import Server
    except ImportError:
        raise KBError(INSTALL_HINT) from None

    # One KnowledgeBase for the whole session keeps the Whoosh searcher and the catalog warm; a
    # file monitor tells its reads when edits made behind the server's back need a rescan.
    kb.keep_warm()

    listed = [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema(),
            output_schema=spec.output_schema,
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=False,
            ),
        )
        for spec in tools.tools()
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def run_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # Run inline rather than in a worker thread: calls are then strictly one at a time, and
        # the Whoosh searcher is never touched from two threads.
        reply = tools.call_tool(kb, params.name, params.arguments)
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=reply.text)]
        if reply.data is None:
            return types.CallToolResult(content=content, is_error=reply.is_error)
        return types.CallToolResult(content=content, structured_content=reply.structured(), is_error=reply.is_error)

    server: Server[Any] = Server(
        "slayer-kb", version=__version__, instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=run_tool,
    )
    return server
