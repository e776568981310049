"""What an agent reads back over MCP: the schemas tools/list publishes, the prose of each tool
held to what the tool does, and the advice in its replies, which a person reads in a transcript
wherever they are."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator

from slayer_kb import KnowledgeBase

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
