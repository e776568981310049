"""What an agent reads back over MCP: the schemas tools/list publishes, the prose of each tool
held to what the tool does, and the advice in its replies, which a person reads in a transcript
wherever they are."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from slayer_kb import KnowledgeBase
from slayer_kb.core.problems import shell_word
from slayer_kb.mcp import tools as mcp_tools
from slayer_kb.mcp.tools import call_tool
from testing import CliRunner

pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402

from testing.mcp import with_server_in_process  # noqa: E402

# JSON Schema 2020-12's keywords: the validation vocabulary's (what jsonschema checks) and the
# core, meta-data, format and content vocabularies' annotations, which it does not.
KEYWORDS = set(Draft202012Validator.VALIDATORS) | {
    "$schema", "$id", "$anchor", "$dynamicAnchor", "$vocabulary", "$comment", "$defs",
    "title", "description", "default", "deprecated", "readOnly", "writeOnly", "examples",
    "contentEncoding", "contentMediaType", "contentSchema",
}
# Keywords whose value is a map of names to schemas, a schema, or a list of schemas.
SCHEMA_MAPS = {"properties", "patternProperties", "$defs", "dependentSchemas"}
SCHEMA_LISTS = {"allOf", "anyOf", "oneOf", "prefixItems"}


def stray_keys(schema: Any, where: str) -> list[str]:
    """Every key of ``schema`` and the schemas in it that is no JSON Schema keyword, or whose
    value is null (``description: The commit made, if any.`` in a YAML flow mapping reads as the
    description "The commit made" and a key "if any." with no value)."""
    if not isinstance(schema, dict):
        return [] if isinstance(schema, bool) else [f"{where} is not a schema: {schema!r}"]
    found = [f"{where}: {key!r}: {value!r}" for key, value in schema.items()
             if key not in KEYWORDS or value is None]
    for key, value in schema.items():
        if key in SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                found += stray_keys(sub, f"{where}.{key}.{name}")
        elif key in SCHEMA_LISTS and isinstance(value, list):
            for n, sub in enumerate(value):
                found += stray_keys(sub, f"{where}.{key}[{n}]")
        elif key in KEYWORDS - SCHEMA_MAPS - SCHEMA_LISTS and isinstance(value, dict) and key not in (
                "default", "const", "examples", "$vocabulary"):
            found += stray_keys(value, f"{where}.{key}")
    return found


def test_every_published_schema_is_json_schema_and_nothing_else(example_kb: KnowledgeBase) -> None:
    async def script(session: ClientSession) -> list[Any]:
        return (await session.list_tools()).tools

    listed = with_server_in_process(example_kb.root, script)
    assert listed
    stray = []
    for tool in listed:
        for kind, schema in (("inputSchema", tool.input_schema), ("outputSchema", tool.output_schema)):
            Draft202012Validator.check_schema(schema)
            stray += stray_keys(schema, f"{tool.name}.{kind}")
    assert stray == []


def test_a_key_no_schema_has_is_found() -> None:
    """The check itself: the shapes the published schemas had."""
    broken = {"type": "object", "properties": {
        "description": {"type": ["string", "null"], "description": "The one-line summary", "if any.": None},
        "items": {"type": "array", "items": {"type": "string", "desc": "x"}}}}
    assert stray_keys(broken, "t") == ["t.properties.description: 'if any.': None",
                                       "t.properties.items.items: 'desc': 'x'"]
    assert stray_keys({"type": "object", "properties": {"if any.": {"type": "string"}}}, "t") == []


# Each error case a tool's description (None) or a parameter's names, in its words, and what the
# tool answers to it: (tool, where, phrase, arguments, the reply's first line, whether an error).
SAID = [
    ("mem_search", "query", "At most 64 KB (65,536 bytes); a longer one is refused.", {"query": "x " * 32_769},
     "The question is 65538 bytes; the limit is 65536 bytes.", True),
    ("search", "question", "At most 64 KB (65,536 bytes); a longer one is refused.", {"question": "x " * 32_769},
     "The question is 65538 bytes; the limit is 65536 bytes.", True),
    ("save_memory", None, "an ambiguous bare column (such as 'id', present on several models) is rejected",
     {"learning": "x", "linked_entities": ["id"]}, "Ambiguous bare name 'id' matches columns", True),
    ("save_memory", None, "'memory:<id>' links another memory, which must exist",
     {"learning": "x", "linked_entities": ["memory:nope"]}, "No memory with id 'nope'.", True),
    ("save_memory", None, "Every reference must resolve or nothing is saved",
     {"learning": "x", "linked_entities": ["orders.amount", "nosuch.thing"]},
     "'nosuch' is neither a known datasource nor a saved model. (segment of 'nosuch.thing').", True),
    ("save_memory", None, "An unknown or misspelt key is refused, naming the key it likely meant",
     {"learning": "x", "linked_entities": {"source_model": "orders", "measure": ["sum(amount)"]}},
     "measure: Extra inputs are not permitted (did you mean 'measures'?).", True),
    ("save_memory", None, "Ids may not contain \" # * / : < > ? \\ |",
     {"learning": "x", "linked_entities": ["orders.amount"], "id": "a*b"},
     "Memory id 'a*b' contains '*'; ids may not contain \" # * / : < > ? \\ |.", True),
    ("save_memory", "id", "Not allowed: \" # * / : < > ? \\ |, whitespace",
     {"learning": "x", "linked_entities": ["orders.amount"], "id": "a b"},
     "Memory id 'a b' contains whitespace", True),
    ("save_memory", None, "may not start with '.' or '-'",
     {"learning": "x", "linked_entities": ["orders.amount"], "id": "-x"}, "Memory id '-x' starts with '-'", True),
    ("save_memory", None, "may not differ from an existing id only in letter case",
     {"learning": "x", "linked_entities": ["orders.amount"], "id": "KB.ACTIVE-CUSTOMER"},
     "Memory id 'KB.ACTIVE-CUSTOMER' conflicts with existing 'kb.active-customer'", True),
    ("save_memory", "description", "at most 500 characters",
     {"learning": "x", "linked_entities": ["orders.amount"], "description": "d" * 501},
     "description is 501 characters long; the limit is 500. Put the detail in the learning.", True),
    ("save_memory", "learning", "at most 64 KB", {"learning": "x" * 70_000, "linked_entities": ["orders.amount"]},
     "learning is 70000 bytes; the limit is 65536 bytes.", True),
    ("save_memory", "linked_entities", "an empty list is an error", {"learning": "x", "linked_entities": []},
     "linked_entities is empty", True),
    ("search", "datasource", "An unknown datasource is an error listing the known ones", {"datasource": "nosuch"},
     "Unknown datasource 'nosuch'. Known datasources: shop, wh.", True),
    ("forget_memory", None, "An unknown id is an error: No memory with id '<id>'", {"id": "nope"},
     "No memory with id 'nope'.", True),
    ("forget_memory", None, "an id a rename moved names its new id", {"id": "kb.refund-policy"},
     "Memory 'kb.refund-policy' was renamed to 'kb.refunds'", True),
    ("mem_save", "content", "Required, not blank", {"title": "t", "content": " "}, "content is empty", True),
    ("mem_save", "title", "Required.", {"title": " ", "content": "x"}, "title is required and must not be blank.", True),
    ("mem_search", "query", "Required.", {"query": " "}, "Search error: the query is empty.", True),
    ("mem_search", "scope", "another value is an error", {"query": "refunds", "scope": "bogus"},
     "scope 'bogus' is neither 'project' nor 'personal'", True),
    ("mem_update", None, "only the fields you give change (at least one)", {"id": "1"},
     "Nothing to update: give at least one of title, content, type, project, scope, topic_key.", True),
    ("mem_update", None, "a missing or soft-deleted id is an error", {"id": "nope", "title": "t"},
     "No memory with id 'nope'.", True),
    ("mem_update", None, "a missing or soft-deleted id is an error", {"id": "2", "title": "t"},
     "Memory '2' was deleted at", True),
    ("mem_update", "topic_key", "A key another live memory holds in the same project and scope is refused, naming "
     "that memory", {"id": "3", "topic_key": "held/key"}, "topic_key 'held/key' at scope 'project' is already held by memory 1", True),
    ("mem_restore", None, "A memory that is not deleted is an error", {"id": "1"},
     "Memory '1' is not deleted; nothing to restore.", True),
    ("mem_get_observation", None, "A missing or soft-deleted id is an error", {"id": "2"},
     "Memory '2' was deleted at", True),
    ("mem_suggest_topic_key", None, "Needs a title or content.", {},
     "mem_suggest_topic_key needs a title or content, and both are empty", True),
    ("mem_context", "scope", "another value is an error", {"scope": "bogus"},
     "scope 'bogus' is neither 'project' nor 'personal'", True),
    ("mem_save_prompt", "content", "Required, not blank.", {"content": " ", "session_id": "s1"},
     "content is required and must not be blank.", True),
    ("mem_capture_passive", "content", "Required.", {"content": " "},
     "content is required \u2014 include text with a '## Key Learnings:' section", True),
    ("mem_session_start", "id", "Required.", {"id": " ", "project": "p"},
     "id is required and must not be blank", True),
    ("mem_session_end", "id", "Required.", {"id": " "}, "id is required and must not be blank", True),
    ("mem_session_start", "project", "Required, not blank.", {"id": "s-new", "project": " "},
     "project is required and must not be blank: give the session's project (e.g. 'analytics').", True),
    ("mem_session_end", None, "An id that was never started is not refused", {"id": "ses-typo-xyz"},
     "Session \"ses-typo-xyz\" completed\nwarning: session 'ses-typo-xyz' was never started; it is recorded as "
     "started and ended now", False),
]


def test_each_error_a_description_names_is_the_answer(example_kb: KnowledgeBase) -> None:
    """What every tool's prose says of a case it refuses (or takes) is what it does."""
    kb = example_kb
    kb.update("1", topic_key="held/key")
    kb.forget("2", soft=True)
    kb.rename("kb.refund-policy", "kb.refunds")
    wrong = []
    for name, where, phrase, arguments, reply, is_error in SAID:
        spec = mcp_tools.tool(name)
        assert spec is not None
        prose = spec.description if where is None else spec.properties[where]["description"]
        if phrase not in " ".join(prose.split()):
            wrong.append(f"{name} ({where or 'description'}) does not say {phrase!r}")
        got = call_tool(kb, name, arguments)
        if (got.is_error, got.text[: len(reply)]) != (is_error, reply):
            wrong.append(f"{name}{arguments}: {'error' if got.is_error else 'taken'}: {got.text[:300]!r}")
    assert wrong == []


def test_a_session_summarys_message_is_its_reply(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """mem_session_summary answers in Engram's words; its structured message, and the CLI's
    session-summary, say the same (they said `Memory saved: "Session summary: analytics" ...`)."""
    async def script(session: ClientSession) -> Any:
        return await session.call_tool("mem_session_summary", {"content": "## Goal\nReporting calendar",
                                                               "project": "Analytics"})

    result = with_server_in_process(example_kb.root, script)
    reply = 'Session summary saved for project "analytics"'
    assert (result.is_error, result.content[0].text) == (False, reply)
    assert {k: result.structured_content[k] for k in ("message", "result", "action")} == {
        "message": reply, "result": reply, "action": "created"}
    by_cli = invoke_cli("--kb", example_kb.root, "session-summary", "Fixed the refund double count")
    assert (by_cli.returncode, by_cli.stdout) == (0, "Session summary saved\n(memory 28)\n")


def test_advice_names_the_kb_wherever_the_server_runs(example_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server started beside the KB gave `slayer-kb --kb kb save --reuse-id`, which a person
    reading the transcript anywhere else cannot paste: the KB is named by its absolute path."""
    example_kb.rename("kb.refund-policy", "kb.refunds")
    monkeypatch.chdir(example_kb.root.parent)

    async def script(session: ClientSession) -> Any:
        return await session.call_tool("save_memory", {"learning": "Refunds are issued within a week",
                                                       "linked_entities": ["orders.amount"], "id": "kb.refund-policy"})

    result = with_server_in_process(example_kb.root, script)
    assert result.is_error
    assert result.content[0].text.endswith(
        f"(a person can reuse 'kb.refund-policy' with 'slayer-kb --kb {shell_word(str(example_kb.root))} save "
        "--reuse-id').")
