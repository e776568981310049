"""The MCP server as a client sees it, driven by the ``mcp`` SDK's own client against a committed
copy of the example KB: ``slayer-kb mcp`` started as a real subprocess over stdio where the
process is what is tested (a session's errors and writes, every line answered, a missing KB),
and the same server in this process (``with_server_in_process``) for what the tools list and
answer."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.mcp import tools as mcp_tools
from slayer_kb.mcp.schema import check_arguments
from slayer_kb.mcp.tools import call_tool

mcp = pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402

from testing.mcp import call, call_json, error, with_server, with_server_in_process  # noqa: E402

T = TypeVar("T")

SLAYER_PARAMS = {
    "save_memory": {"learning", "linked_entities", "id", "description"},
    "search": {"entities", "query", "question", "datasource", "max_results", "compact"},
    "forget_memory": {"id"},
}
ENGRAM_PARAMS = {
    "mem_save": {"title", "content", "type", "session_id", "project", "scope", "topic_key"},
    "mem_search": {"query", "type", "project", "scope", "limit", "match_mode"},
    "mem_update": {"id", "title", "content", "type", "project", "scope", "topic_key"},
    "mem_delete": {"id", "hard_delete"},
    "mem_restore": {"id"},
    "mem_get_observation": {"id"},
    "mem_suggest_topic_key": {"type", "title", "content"},
    "mem_session_summary": {"content", "project", "session_id"},
    "mem_context": {"project", "scope", "limit"},
    "mem_timeline": {"observation_id", "before", "after"},
    "mem_stats": set(),
    "mem_session_start": {"id", "project", "directory"},
    "mem_session_end": {"id", "summary"},
    "mem_save_prompt": {"content", "session_id", "project"},
    "mem_capture_passive": {"content", "session_id", "project", "source"},
}
READ_ONLY = {"search", "mem_search", "mem_get_observation", "mem_suggest_topic_key", "mem_context",
             "mem_timeline", "mem_stats"}
DESTRUCTIVE = {"save_memory", "forget_memory", "mem_save", "mem_update", "mem_delete"}

AMBIGUOUS_ID = (
    "Ambiguous bare name 'id' matches columns / measures / aggregations on ['customers', 'order_items', "
    "'orders', 'payments', 'products', 'refunds', 'regions'] in datasource 'shop'. Qualify as '<model>.id'."
)
BAD_ID = (
    "Memory id 'a/b' contains '/'; ids may not contain \" # * / : < > ? \\ |. "
    "Use letters, digits, '.', '_' or '-'."
)
# The same id given to find a memory: no memory has it, and the fix is the tools' (or the commands').
NO_ID_TO_FORGET = (
    "Memory id 'a/b' is not a valid id (it contains '/'), so no memory has it; give the id of the memory to forget "
    "({}). An id is letters, digits, '.', '_' or '-', starting with a letter or digit: 12, kb.paid-revenue."
)


def test_every_tool_and_parameter_is_documented(indexed_example_kb: KnowledgeBase) -> None:
    async def script(session: ClientSession) -> list[Any]:
        return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in with_server_in_process(indexed_example_kb.root, script)}
    expected = {**SLAYER_PARAMS, **ENGRAM_PARAMS}
    assert set(tools) == set(expected)
    for name, tool in tools.items():
        schema = tool.input_schema
        assert set(schema["properties"]) == expected[name], name
        assert len(tool.description or "") > 80, name
        for param, prop in schema["properties"].items():
            assert len(prop.get("description", "")) > 10, f"{name}.{param} has no description"
        hints = tool.annotations
        assert hints is not None, name
        assert hints.read_only_hint is (name in READ_ONLY), name
        assert hints.destructive_hint is (name in DESTRUCTIVE), name
        assert isinstance(hints.idempotent_hint, bool), name
        assert hints.open_world_hint is False, name
        # Every tool declares the structured content it returns beside its text.
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        assert tool.output_schema["required"], name
    assert tools["save_memory"].input_schema["required"] == ["learning", "linked_entities"]
    assert tools["mem_save"].input_schema["required"] == ["title", "content"]
    assert tools["search"].input_schema["properties"]["max_results"]["default"] == 10
    assert tools["search"].input_schema["properties"]["compact"]["default"] is True
    assert tools["mem_delete"].input_schema["properties"]["hard_delete"]["default"] is False
    # The seed lost marks for an undocumented description parameter: it is documented here.
    assert "description" in tools["save_memory"].description
    assert "500" in tools["save_memory"].input_schema["properties"]["description"]["description"]


def test_slayer_tools_round_trip_and_errors(indexed_example_kb: KnowledgeBase, invoke_cli: Any) -> None:
    root = indexed_example_kb.root

    async def script(session: ClientSession) -> None:
        saved = await call_json(
            session, "save_memory", learning="Customer totals: sum shop.orders.amount per customer",
            linked_entities=["orders.amount", "customers"], description="Per-customer totals",
        )
        assert saved == {"memory_id": "27", "resolved_entities": ["shop.orders.amount", "shop.customers"],
                         "warnings": [], "action": "created"}
        query = {"source_model": "orders", "measures": ["sum(amount)"], "filters": ["status = 'paid'"]}
        example = await call_json(session, "save_memory", learning="Paid order totals", linked_entities=query,
                                  id="kb.test-paid")
        assert example["memory_id"] == "kb.test-paid"
        assert example["resolved_entities"] == ["shop.orders", "shop.orders.amount", "shop.orders.status"]

        found = await call_json(session, "search", entities=["shop.orders.amount"], max_results=50)
        assert "27" in [m["id"] for m in found["memories"]]
        assert "kb.test-paid" not in [m["id"] for m in found["memories"]]
        paid = next(m for m in found["example_queries"] if m["id"] == "kb.test-paid")
        assert paid["query"] == query
        assert found["resolved_input_entities"] == ["shop.orders.amount"]
        assert {"memories", "example_queries", "entities", "warnings"} <= set(found)
        compact = next(m for m in found["memories"] if m["id"] == "27")
        assert compact["description"] == "Per-customer totals" and "learning" not in compact
        full = await call_json(session, "search", question="customer totals", compact=False)
        assert full["memories"][0]["id"] == "27"
        assert full["memories"][0]["learning"] == "Customer totals: sum shop.orders.amount per customer"

        # Lenient search: a bad reference is a warning, not an error.
        lenient = await call_json(session, "search", entities=["id", "shop.customers"])
        assert [m["id"] for m in lenient["memories"]][:1] == ["27"]
        assert any(w.startswith("entity 'id' dropped: Ambiguous bare name 'id'") for w in lenient["warnings"])

        # Upsert by id: replaced whole, still one memory.
        replaced = await call_json(session, "save_memory", learning="Paid totals, v2",
                                   linked_entities=["orders.status"], id="kb.test-paid")
        assert replaced["action"] == "replaced"

        assert await call_json(session, "forget_memory", id="27") == {"deleted_id": "27", "stripped_from": []}
        after = await call_json(session, "search", entities=["shop.orders.amount"], max_results=50)
        assert "27" not in [m["id"] for m in after["memories"]]

        # Errors are tool errors carrying the CLI's message; the session carries on after them.
        assert await error(session, "save_memory", learning="x", linked_entities=["id"]) == AMBIGUOUS_ID
        assert await error(session, "forget_memory", id="nope") == "No memory with id 'nope'."
        assert await error(session, "forget_memory", id="a/b") == NO_ID_TO_FORGET.format(
            "the search, mem_search and mem_context tools show the ids")
        # MCP has no list: an empty id is told the tools that show ids (the CLI names its commands).
        for tool, arguments, purpose in (("forget_memory", {"id": ""}, "to forget"),
                                         ("mem_timeline", {"observation_id": ""}, "whose session neighbours to show")):
            assert await error(session, tool, **arguments) == (
                f"Memory id must not be empty; give the id of the memory {purpose} (the search, mem_search and "
                "mem_context tools show the ids).")
        assert await error(session, "save_memory", learning="x", linked_entities=["orders.amount"], id="a/b") == BAD_ID
        assert await error(session, "save_memory", learning="  ", linked_entities=["orders.amount"]) == (
            "learning is empty: write what was learned (it is required and must not be blank)."
        )
        assert await error(session, "search", question="x", max_results="ten") == (
            "search: 'max_results' must be a whole number from 1 to 9007199254740991, not 'ten'."
        )
        assert await error(session, "save_memory", learning="x", linked_entities=[], colour="red") == (
            "save_memory has no parameter 'colour'; its parameters are: learning, linked_entities, id, description."
        )
        assert await error(session, "search", entities=["orders.amount"], datasource="nope") == (
            "Unknown datasource 'nope'. Known datasources: shop, wh."
        )
        assert await error(session, "save_memory", learning=["x"], linked_entities=["orders.amount"]) == (
            "save_memory: 'learning' must be a string, not a list."
        )
        assert await error(session, "save_memory", learning="x") == (
            "save_memory needs the parameter 'linked_entities'."
        )

        # A file written behind the server's back is found by the next search.
        (root / "memories" / "hand-written.yaml").write_text(
            "learning: |\n  Zebracorn promotions are booked on shop.orders.amount as negative lines.\n"
            "entities:\n- shop.orders.amount\ncreated_at: '2026-11-30T08:00:00Z'\n",
            encoding="utf-8",
        )
        edited = await call_json(session, "search", question="zebracorn")
        assert [m["id"] for m in edited["memories"]] == ["hand-written"]
        hand = root / "memories" / "hand-written.yaml"
        hand.write_text(hand.read_text(encoding="utf-8").replace("Zebracorn", "Okapifest"), encoding="utf-8")
        assert (await call_json(session, "search", question="zebracorn"))["memories"] == []
        assert [m["id"] for m in (await call_json(session, "search", question="okapifest"))["memories"]] == ["hand-written"]

    with_server(root, script)

    # The same messages as the CLI prints after "Error: ".
    for args, message in (
        (("forget", "nope"), "No memory with id 'nope'."),
        (("forget", "a/b"), NO_ID_TO_FORGET.format("search and list show the ids")),
        (("save", "x", "-e", "id"), AMBIGUOUS_ID),
    ):
        proc = invoke_cli("--kb", root, *args)
        assert (proc.returncode, proc.stderr) == (1, f"Error: {message}\n")


def test_slayer_queries_and_ids_as_slayer_takes_them(indexed_example_kb: KnowledgeBase) -> None:
    """Issue 18's cases through the SDK client: SlayerQuery as SLayer 1.4.1 defines it, joins
    walked against their direction, an integer id, an empty item, an empty Engram search."""

    async def script(session: ClientSession) -> None:
        # SLayer's own shapes: the string time dimension, an extension as the source.
        query = {"source_model": {"source_name": "orders"}, "time_dimensions": ["month(created_at)"],
                 "measures": ["sum(amount)"]}
        saved = await call_json(session, "save_memory", learning="Monthly revenue", linked_entities=query)
        assert saved["resolved_entities"] == ["shop.orders", "shop.orders.created_at", "shop.orders.amount"]
        # customers joins regions; regions has none back, and SLayer walks it all the same.
        walked = await call_json(session, "save_memory", learning="Region's customers",
                                 linked_entities=["regions.customers.segment"])
        assert walked["resolved_entities"] == ["shop.customers.segment"]
        # SLayer's forget_memory takes an integer id, meaning that id.
        assert await call_json(session, "forget_memory", id=int(walked["memory_id"])) == {
            "deleted_id": walked["memory_id"], "stripped_from": []}

        assert await error(session, "save_memory", learning="x", linked_entities={
            "source_model": "orders", "measure": ["sum(amount)"], "filter": ["status = 'paid'"]}) == (
            "measure: Extra inputs are not permitted (did you mean 'measures'?); filter: Extra inputs are "
            "not permitted (did you mean 'filters'?). A SlayerQuery's keys are: version, name, source_model, "
            "measures, dimensions, time_dimensions, main_time_dimension, filters, variables, order, limit, "
            "offset, whole_periods_only, distinct_dimension_values, to_many_handling."
        )
        assert await error(session, "save_memory", learning="x",
                           linked_entities={"source_model": "wh.orders"}) == (
            "Invalid model name 'wh.orders': must not contain '.'. Name the model alone: a query runs on "
            "the model its name resolves to (the datasource priority list decides between datasources)."
        )
        assert await error(session, "save_memory", learning="x", linked_entities={
            "source_model": "orders", "time_dimensions": [{"granularity": "month"}]}) == (
            "time_dimensions[0].dimension: Field required (a time dimension is {dimension: created_at, "
            "granularity: month}, or the string 'month(created_at)')"
        )
        assert await error(session, "save_memory", learning="x", linked_entities=["orders.amount", ""]) == (
            "linked_entities[1]: entity reference is empty. Give a reference such as 'orders.amount', or "
            "drop the item."
        )
        for blank in ("", "   "):
            assert await error(session, "mem_search", query=blank) == (
                "Search error: the query is empty. Give search words (e.g. 'auth middleware jwt'); "
                "mem_context lists the most recent memories."
            )

    with_server_in_process(indexed_example_kb.root, script)


def test_engram_tools(indexed_example_kb: KnowledgeBase) -> None:
    async def script(session: ClientSession) -> None:
        content = "**What**: weeks start on Monday (ISO 8601)\n**Why**: finance reports by ISO week"
        reply = await call(session, "mem_save", title="Chose ISO weeks for reporting", content=content,
                           type="decision", project="analytics")
        assert reply == (
            'Memory saved: "Chose ISO weeks for reporting" (decision)\n'
            "Suggested topic_key: decision/chose-iso-weeks-for-reporting"
        )
        with_key = await call(session, "mem_save", title="Auth model", content="JWT for the API",
                              type="architecture", topic_key="architecture/auth-model")
        assert with_key == 'Memory saved: "Auth model" (architecture)'

        found = await call(session, "mem_search", query="ISO weeks", project="analytics")
        assert found.startswith("Found 1 memories:\n\n[1] #")
        memory_id = re.search(r"#(\S+) \(decision\) \u2014 Chose ISO weeks for reporting", found)[1]  # type: ignore[index]
        assert "**What**: weeks start on Monday (ISO 8601) **Why**: finance reports by ISO week" in found
        assert re.search(r"\n    \d{4}-\d\d-\d\dT\S+ \| project: analytics \| scope: project$", found)

        updated = await call(session, "mem_update", id=memory_id, title="ISO weeks everywhere")
        assert updated == f'Memory updated: #{memory_id} "ISO weeks everywhere" (decision, scope=project)'
        observation = await call(session, "mem_get_observation", id=int(memory_id))
        assert observation.startswith(f"#{memory_id} [decision] ISO weeks everywhere\n{content}\n")
        assert "\nSession: manual-save-analytics\n" in observation
        assert "\nRevisions: 2\n" in observation and "\nTopic: " not in observation

        timeline = await call(session, "mem_timeline", observation_id=memory_id, before=3, after=3)
        assert f">>> #{memory_id} [decision] ISO weeks everywhere <<<" in timeline
        assert re.match(r"Session: manual-save-analytics \(analytics, started \S+Z\)\n", timeline)
        assert await call(session, "mem_suggest_topic_key", type="architecture", title="  Auth Model  ") == (
            "Suggested topic_key: architecture/auth-model"
        )
        summary = await call(session, "mem_session_summary", content="## Goal\nReporting calendar", project="Analytics")
        assert summary == 'Session summary saved for project "analytics"'
        context = await call(session, "mem_context", project="analytics")
        assert context.startswith("# Memory context: analytics\n") and "Session summary: analytics" in context
        assert re.search(r"\n---\nMemory stats: \d+ sessions, \d+ observations across projects: analytics$", context)
        assert (await call(session, "mem_stats")).startswith("Memory System Stats:\n- Sessions: ")

        assert await call(session, "mem_delete", id=memory_id) == f"Memory #{memory_id} soft-deleted"
        assert await call(session, "mem_search", query="ISO weeks", project="analytics") == (
            'No memories found for: "ISO weeks"'
        )
        gone = await error(session, "mem_get_observation", id=memory_id)
        assert gone.startswith(f"Memory '{memory_id}' was deleted at ")
        assert await call(session, "mem_delete", id="kb.refund-policy", hard_delete=True) == (
            "Memory #kb.refund-policy permanently deleted\nRemoved the link memory:kb.refund-policy from: 11"
        )
        assert await error(session, "mem_update", id="nope", title="x") == "No memory with id 'nope'."
        assert await error(session, "mem_search", query="x", match_mode="some") == (
            "mem_search: 'match_mode' must be one of 'all', 'any', 'strict', not 'some'."
        )

    with_server_in_process(indexed_example_kb.root, script)
    assert not (indexed_example_kb.root / "memories" / "kb.refund-policy.yaml").exists()
    assert "memory:kb.refund-policy" not in (indexed_example_kb.root / "memories" / "11.yaml").read_text()


def test_missing_kb_is_reported_before_serving(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "slayer_kb", "--kb", str(tmp_path / "nowhere"), "mcp"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith(f"Error: No knowledge base at {tmp_path / 'nowhere'}")


# -- what the SDK's transport dropped without an answer (issue 16, item 11) -----------------------


class RawClient:
    """``slayer-kb mcp`` driven line by line over real pipes; every read has a deadline."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "slayer_kb", "--kb", str(root), "mcp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.errors: list[bytes] = []
        threading.Thread(target=self._pump, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._pump, args=(self.proc.stderr, self.errors.append), daemon=True).start()

    @staticmethod
    def _pump(stream: Any, put: Callable[[bytes], None]) -> None:
        for line in stream:
            put(line)

    def send(self, line: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 30) -> dict[str, Any]:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no answer within {timeout} s; stderr: {b''.join(self.errors)!r}") from None
        return json.loads(line)

    def ask(self, line: bytes) -> dict[str, Any]:
        self.send(line)
        return self.receive()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=60)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(timeout=60)


def tool_call(request_id: int, name: str, arguments: bytes) -> bytes:
    return (b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}'
            % (request_id, name.encode(), arguments))


DEEP_QUERY = (
    "search: 'query' nests arrays and objects more than 64 levels deep, the most slayer-kb accepts; "
    "send a flatter value (a SlayerQuery needs a few levels, entity references one)."
)


def test_every_line_gets_an_answer_and_the_server_keeps_serving(indexed_example_kb: KnowledgeBase) -> None:
    client = RawClient(indexed_example_kb.root)
    try:
        init = client.ask(json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
        }).encode())
        assert init["id"] == 1 and "result" in init
        client.send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

        assert client.ask(b"this is not json") == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32700,
            "message": "Parse error: Invalid JSON: expected ident at line 1 column 2; send each message as "
                       "one line of JSON, its strings valid Unicode.",
        }}  # fmt: skip
        # A lone surrogate: the SDK's parser refuses it; the request it came in is answered.
        surrogate = tool_call(2, "mem_search", b'{"query": "\\udcff"}')
        column = surrogate.index(b"\\udcff") + 6  # where the escape ends, counted from 1
        assert client.ask(surrogate) == {"jsonrpc": "2.0", "id": 2, "error": {
            "code": -32700,
            "message": f"Parse error: Invalid JSON: lone leading surrogate in hex escape at line 1 column {column}; "
                       "send each message as one line of JSON, its strings valid Unicode.",
        }}  # fmt: skip
        not_utf8 = tool_call(3, "mem_search", b'{"query": "caf\xe9"}')  # Latin-1
        assert client.ask(not_utf8) == {"jsonrpc": "2.0", "id": 3, "error": {
            "code": -32700,
            "message": f"Parse error: the line is not UTF-8 (byte 0xe9 at offset {not_utf8.index(0xE9)}); send "
                       "each message as one line of UTF-8 JSON.",
        }}  # fmt: skip
        for request_id, depth in ((4, 500), (5, 100), (6, 5000)):
            deep = tool_call(request_id, "search", b"{\"query\": " + b'{"a": ' * depth + b"1" + b"}" * depth + b"}")
            assert client.ask(deep) == {"jsonrpc": "2.0", "id": request_id, "result": {
                "content": [{"type": "text", "text": DEEP_QUERY}], "isError": True,
            }}  # fmt: skip
        assert client.ask(b'{"hello": "world"}') == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600,
            "message": 'Invalid Request: the line is JSON but no JSON-RPC 2.0 message ("jsonrpc": "2.0" with a '
                       '"method", or an "id" with a "result" or an "error").',
        }}  # fmt: skip
        deep_elsewhere = b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"_meta": ' + b"[" * 100 + b"]" * 100 + b"}}"
        assert client.ask(deep_elsewhere)["error"] == {
            "code": -32600,
            "message": "Invalid Request: the message nests arrays and objects more than 67 levels deep; a tool's "
                       "arguments may nest 64.",
        }
        client.send(b"")  # a blank line is no message: nothing to answer
        stats = client.ask(tool_call(8, "mem_stats", b"{}"))
        assert stats["id"] == 8 and stats["result"]["isError"] is False
        assert stats["result"]["content"][0]["text"].startswith("Memory System Stats:\n")
        assert client.close() == 0
    finally:
        client.close()
    assert b"Traceback" not in b"".join(client.errors)


def test_too_deep_arguments_in_process_are_a_tool_error() -> None:
    deep: Any = 1
    for _ in range(65):
        deep = {"a": deep}
    reply = call_tool(None, "search", {"query": deep})  # type: ignore[arg-type]  # refused before any KB call
    assert (reply.is_error, reply.text) == (True, DEEP_QUERY)
    fine: Any = 1
    for _ in range(64):
        fine = {"a": fine}
    search = mcp_tools.tool("search")
    assert search is not None and check_arguments(search, {"query": fine})["query"] == fine


def test_an_agent_session_makes_one_commit_per_write(empty_kb: KnowledgeBase) -> None:
    """Issue 18: an agent's whole session through the SDK client, Engram's replies word for word,
    and the KB's history: one commit for each write, none for a read or a duplicate."""
    root = empty_kb.root
    learnings = ("Done.\n\n## Key Learnings:\n1. **Refunds** are negative `amount` rows in orders\n"
                 "2. tiny\n3. The warehouse is rebuilt nightly at 02:00 UTC\n")
    long_prompt = "Please compare net revenue by month for the last eight quarters across every region we sell in"

    async def script(session: ClientSession) -> dict[str, str]:
        replies = {}
        replies["start"] = await call(session, "mem_session_start", id="ses-1", project="Analytics",
                                      directory="/work/analytics")
        replies["context0"] = await call(session, "mem_context", project="analytics")
        replies["prompt1"] = await call(session, "mem_save_prompt", content="Why do refunds count twice?",
                                        session_id="ses-1", project="analytics")
        replies["save"] = await call(session, "mem_save", title="Refunds counted twice", type="bugfix",
                                     content="**What**: refunds joined twice", project="analytics", session_id="ses-1")
        replies["prompt2"] = await call(session, "mem_save_prompt", content=long_prompt, session_id="ses-1")
        replies["capture"] = await call(session, "mem_capture_passive", content=learnings, session_id="ses-1",
                                        project="analytics", source="session-end")
        replies["capture_again"] = await call(session, "mem_capture_passive", content=learnings,
                                              session_id="ses-1", project="analytics")
        replies["context"] = await call(session, "mem_context", project="analytics", limit=2)
        replies["timeline"] = await call(session, "mem_timeline", observation_id=2, before=1, after=1)
        replies["end"] = await call(session, "mem_session_end", id="ses-1", summary="Refunds were joined twice")
        replies["stats"] = await call(session, "mem_stats")
        replies["blank"] = await error(session, "mem_capture_passive", content="")
        replies["no_project"] = await error(session, "mem_session_start", id="ses-2")
        return replies

    replies = with_server(root, script)
    assert replies["start"] == 'Session "ses-1" started for project "analytics"'
    assert re.fullmatch(r"# Memory context: analytics\n\n## Recent sessions\n- ses-1 \(analytics, \S+Z to now \(open\)\): "
                        r"0 memories, 0 prompts\n\n## Recent prompts\n- \(none\)\n\n## Recent memories \(0 of 0\)\n"
                        r"- \(none\)\n---\nMemory stats: 1 sessions, 0 observations across projects: none",
                        replies["context0"])
    assert replies["prompt1"] == 'Prompt saved: "Why do refunds count twice?"'
    assert replies["save"] == 'Memory saved: "Refunds counted twice" (bugfix)\nSuggested topic_key: bug/refunds-counted-twice'
    assert replies["prompt2"] == f'Prompt saved: "{long_prompt[:80]}..."'
    assert replies["capture"] == "Passive capture complete: extracted=2 saved=2 duplicates=0"
    assert replies["capture_again"] == "Passive capture complete: extracted=2 saved=0 duplicates=2"
    context = replies["context"]
    assert re.search(r"\n- ses-1 \(analytics, \S+Z to now \(open\)\): 3 memories, 2 prompts\n", context)
    assert re.search(r"\n## Recent prompts\n- \S+Z \(ses-1\): Please compare net revenue .*\n- \S+Z \(ses-1\): "
                     r"Why do refunds count twice\?\n", context)
    assert "\n## Recent memories (2 of 3)\n- [3] The warehouse is rebuilt nightly at 02:00 UTC (passive), " in context
    assert context.endswith("\n---\nMemory stats: 1 sessions, 3 observations across projects: analytics")
    assert re.match(r"Session: ses-1 \(analytics, started \S+Z\)\nTotal observations in range: 3\n", replies["timeline"])
    assert replies["end"] == 'Session "ses-1" completed'
    assert replies["stats"] == ("Memory System Stats:\n- Sessions: 1\n- Observations: 3\n- Prompts: 2\n"
                                "- Projects: analytics\n- Types: bugfix 1, passive 2")
    assert replies["blank"] == "content is required — include text with a '## Key Learnings:' section"
    assert replies["no_project"] == "mem_session_start needs the parameter 'project'."

    log = subprocess.run(["git", "log", "--format=%s", "--name-only"], cwd=root, capture_output=True, text=True,
                         check=True, timeout=60).stdout
    assert [(c[0], sorted(c[1:])) for c in _pairs(log)] == [
        ("session: end ses-1", ["sessions/ses-1.yaml"]),
        ("memory: capture 2, 3 (passive, from session-end)", ["memories/2.yaml", "memories/3.yaml"]),
        ("session: prompt in ses-1", ["sessions/ses-1.yaml"]),
        ("memory: save 1 (bugfix: Refunds counted twice)", ["memories/1.yaml"]),
        ("session: prompt in ses-1", ["sessions/ses-1.yaml"]),
        ("session: start ses-1", ["sessions/ses-1.yaml"]),
        ("kb: initialise knowledge base", [".gitignore", "memories/.gitkeep"]),
    ]


def _pairs(log: str) -> list[list[str]]:
    """``git log --format=%s --name-only`` as [subject, file, ...] per commit."""
    out: list[list[str]] = []
    for line in log.splitlines():
        if not line:
            continue
        if line.startswith(("session: ", "memory: ", "kb: ")):
            out.append([line])
        else:
            out[-1].append(line)
    return out


@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("save_memory", {"learning": "x", "linked_entities": ["orders.amount", 5]},
     "linked_entities[1]: entity reference 5 must be a string like 'orders.amount'."),
    ("save_memory", {"learning": "x", "linked_entities": ["orders.amount", " "]},
     "linked_entities[1]: entity reference is empty. Give a reference such as 'orders.amount', or drop the item."),
    ("search", {"entities": ["orders.amount", None]},
     "entities[1]: entity reference None must be a string like 'orders.amount'."),
    ("mem_session_start", {"id": 5, "project": "p"}, "mem_session_start: 'id' must be a string, not an integer."),
    ("mem_session_start", {"id": " ", "project": "p"},
     "id is required and must not be blank: give the session's id (e.g. 'ses-2026-11-29-auth')."),
    ("mem_save_prompt", {"content": " "}, "content is required and must not be blank."),
    ("mem_save_prompt", {"content": "hi", "session_id": "x" * 201},
     "session_id is 201 characters long; the limit is 200. Use a shorter session id."),
    ("mem_capture_passive", {"content": "  "},
     "content is required — include text with a '## Key Learnings:' section"),
    ("mem_context", {"limit": 0}, "mem_context: 'limit' must be a whole number from 1 to 9007199254740991, not 0."),
    ("mem_session_end", {"id": "ses-x", "summary": 3}, "mem_session_end: 'summary' must be a string, not an integer."),
    # A scope filter Engram does not know matched project alone, unsaid.
    ("mem_search", {"query": "revenue", "scope": "team"},
     "scope 'team' is neither 'project' nor 'personal': give one of them, or omit scope for both."),
    ("mem_context", {"scope": "global"},
     "scope 'global' is neither 'project' nor 'personal': give one of them, or omit scope for both."),
    # mem_update's text is its 'content' (the field it fills is the learning, SLayer's word).
    ("mem_update", {"id": "7", "content": " "},
     "content is empty: write what was learned (it is required and must not be blank)."),
])
def test_every_error_names_its_item(indexed_example_kb: KnowledgeBase, tool: str, arguments: dict, message: str) -> None:
    reply = call_tool(indexed_example_kb, tool, arguments)
    assert (reply.is_error, reply.text) == (True, message)


def test_a_blank_title_type_or_topic_key_clears_it_as_mem_update_says(catalog_kb: KnowledgeBase) -> None:
    """Engram's mem_update stores a string it is given, an empty one too: the field is cleared.
    mem_update does so, and its parameters say so, so an agent does not clear a field unknowingly."""
    memory_id = catalog_kb.save_observation("Amounts in cents", "Amounts are stored in cents", type="decision",
                                            topic_key="money/cents").memory_id

    async def script(session: ClientSession) -> tuple[dict[str, Any], str]:
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
        reply = await call(session, "mem_update", id=memory_id, title="", type=" ", topic_key="")
        return listed["mem_update"].input_schema["properties"], reply

    described, reply = with_server_in_process(catalog_kb.root, script)
    for name, cleared in (("title", "the memory then has none"), ("type", "the memory then has none"),
                          ("project", "the memory then belongs to no project"),
                          ("topic_key", "no later save revises the memory by key")):
        assert described[name]["description"].endswith(f" An empty string clears it: {cleared}."), name
    assert reply == f'Memory updated: #{memory_id} "Amounts are stored in cents" (none, scope=project)'
    assert (catalog_kb.root / "memories" / f"{memory_id}.yaml").read_text().startswith(
        "learning: Amounts are stored in cents\nscope: project\nsession_id: manual-save\nrevision_count: 2\n")


def test_integer_ids_are_taken_wherever_engram_or_slayer_take_them(indexed_example_kb: KnowledgeBase) -> None:
    """Engram's ids are numbers, SLayer's forget_memory takes a legacy integer: 12 means "12"."""
    assert call_tool(indexed_example_kb, "mem_get_observation", {"id": 7}).text.startswith(
        "#7 [discovery] Klarna payments are captured at shipment\n")
    assert call_tool(indexed_example_kb, "mem_timeline", {"observation_id": 7, "before": 0, "after": 0}).text.startswith(
        "Session: ses-20261009-payments-recon (analytics, started 2026-10-09T15:12:04Z) \u2014 Reconciled September "
        "payments against orders: the gap is Klarna, captured at shipment, not at checko...\n")  # Engram cuts at 100
    assert call_tool(indexed_example_kb, "mem_update", {"id": 7, "type": "pattern"}).text == (
        'Memory updated: #7 "Klarna payments are captured at shipment" (pattern, scope=project)')
    assert call_tool(indexed_example_kb, "mem_delete", {"id": 7}).text == "Memory #7 soft-deleted"
    assert call_tool(indexed_example_kb, "mem_delete", {"id": 7.0, "hard_delete": True}).text == "Memory #7 permanently deleted"
    assert json.loads(call_tool(indexed_example_kb, "forget_memory", {"id": 8}).text) == {"deleted_id": "8", "stripped_from": []}


def test_the_tool_prose_is_filled_in_from_the_code() -> None:
    """tools.yaml names Engram's types and the limits by placeholder; none may reach a model."""
    text = json.dumps([[spec.description, spec.input_schema()] for spec in mcp_tools.tools()])
    assert re.findall(r"\{[A-Z_]+\}", text) == []
    mem_save = mcp_tools.tool("mem_save")
    assert mem_save is not None and "decision: " in mem_save.properties["type"]["description"]


@pytest.mark.parametrize(("arguments", "message"), [
    # unknown parameters first, then missing ones, then each parameter in the order given
    ({"learning": 5, "colour": "red"}, "save_memory has no parameter 'colour'; its parameters are: learning, linked_entities, id, description."),
    ({"learning": 5}, "save_memory needs the parameter 'linked_entities'."),
    # A null is "not given" only for a parameter the tool has: a misspelt one was taken silently.
    ({"learning": "x", "linked_entities": [], "colour": None},
     "save_memory has no parameter 'colour'; its parameters are: learning, linked_entities, id, description."),
    ({"id": 7, "learning": 5, "linked_entities": []}, "save_memory: 'id' must be a string, not an integer."),
    ({"learning": 5, "id": 7, "linked_entities": []}, "save_memory: 'learning' must be a string, not an integer."),
    ({"learning": "x", "linked_entities": True}, "save_memory: 'linked_entities' must be a list or an object or a string, not a boolean."),
])
def test_which_bad_argument_is_told_first(arguments: dict[str, Any], message: str) -> None:
    assert call_tool(None, "save_memory", arguments).text == message  # type: ignore[arg-type]  # refused before any KB call


def test_a_parameter_nested_too_deep_is_told_in_its_turn() -> None:
    deep: Any = "x"
    for _ in range(70):
        deep = [deep]
    first = call_tool(None, "save_memory", {"linked_entities": deep, "learning": 5}).text  # type: ignore[arg-type]
    assert first.startswith("save_memory: 'linked_entities' nests arrays and objects more than 64 levels deep")
    later = call_tool(None, "save_memory", {"learning": 5, "linked_entities": deep}).text  # type: ignore[arg-type]
    assert later == "save_memory: 'learning' must be a string, not an integer."


def test_an_integral_float_is_an_integer_and_a_null_is_not_given() -> None:
    spec = mcp_tools.tool("mem_search")
    assert spec is not None
    assert check_arguments(spec, {"query": "x", "limit": 3.0, "project": None}) == {
        "query": "x", "limit": 3, "match_mode": "all",
    }
    # A fraction and a number too large for any JSON reader to hold exactly are refused alike,
    # naming the range the schema declares.
    for limit in (2.5, 1e308):
        assert call_tool(None, "mem_search", {"query": "x", "limit": limit}).text == (  # type: ignore[arg-type]
            f"mem_search: 'limit' must be a whole number from 1 to 9007199254740991, not {limit}."
        )
    assert spec.input_schema()["properties"]["limit"]["maximum"] == 2**53 - 1
    for id in (7.5, 1e308):
        assert call_tool(None, "mem_delete", {"id": id}).text == (  # type: ignore[arg-type]
            f"mem_delete: 'id' must be a string or a whole number up to 9007199254740991, not {id}."
        )
