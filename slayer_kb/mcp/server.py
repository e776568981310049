"""``slayer-kb mcp``: the memory tools over the Model Context Protocol, on stdio.

SLayer's ``save_memory`` / ``search`` / ``forget_memory`` answer with the seed's JSON shapes;
Engram's ``mem_*`` tools answer with Engram's reply texts. Every tool is one ``KnowledgeBase``
call: this module only checks argument types, maps names and formats replies.

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
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from .. import __version__
from ..core import engram
from ..core.errors import InvalidInputError, KBError
from ..core.nesting import MAX_DEPTH, cut_deep, text_depth, too_deep, value_depth
from ..core.text import warning_lines
from ..kb import DEFAULT_LIMIT, MAX_ENGRAM_LIMIT, KnowledgeBase
from ..ops import sessions

logger = logging.getLogger(__name__)

PREVIEW_CHARS = 300  # Engram's mem_search preview length
# mem_search's match_mode -> KnowledgeBase.search's match.
MATCH_MODES = {"all": "all-first", "any": "fused", "strict": "all"}
TIMELINE_NEIGHBOUR_CHARS = 150
TIMELINE_FOCUS_CHARS = 500
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

# -- the tool table ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """A tool's answer: text for the model, and for the JSON tools the same data structured."""

    text: str
    data: dict[str, Any] | None = None
    is_error: bool = False


Handler = Callable[[KnowledgeBase, dict[str, Any]], Reply]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    properties: dict[str, dict[str, Any]]
    handler: Handler
    required: tuple[str, ...] = ()
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    defaults: dict[str, Any] = field(default_factory=dict)

    def input_schema(self) -> dict[str, Any]:
        properties = {}
        for name, schema in self.properties.items():
            prop = dict(schema)
            if name in self.defaults:
                prop["default"] = self.defaults[name]
            properties[name] = prop
        return {
            "type": "object",
            "properties": properties,
            "required": list(self.required),
            "additionalProperties": False,
        }


# JSON Schema type names -> the Python types a decoded JSON value has.
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}
_ARTICLE = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
            "array": "a list", "object": "an object"}


def _json_type_name(value: Any) -> str:
    # bool before int: in Python True is an int, in JSON it is not a number.
    for python_type, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
                              (list, "a list"), (dict, "an object")):
        if isinstance(value, python_type):
            return name
    return type(value).__name__


def check_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments checked against the tool's own schema, with defaults filled in.

    The SDK's low-level server does not validate, and a client may send anything; a bad type must
    come back as a tool error naming the parameter, not as a crash inside the knowledge base.
    A null counts as "not given", since some clients send every optional parameter as null.
    """
    given = {k: v for k, v in arguments.items() if v is not None}
    unknown = sorted(set(given) - set(spec.properties))
    if unknown:
        raise InvalidInputError(
            f"{spec.name} has no parameter {', '.join(repr(u) for u in unknown)}; "
            f"its parameters are: {', '.join(spec.properties) or 'none'}."
        )
    for name in spec.required:
        if name not in given:
            raise InvalidInputError(f"{spec.name} needs the parameter '{name}'.")
    out = dict(spec.defaults)
    for name, value in given.items():
        schema = spec.properties[name]
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        # JSON has one number type; a client that sends 10.0 for an integer means 10.
        if "integer" in types and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not any(_is_type(value, t) for t in types):
            wanted = " or ".join(_ARTICLE[t] for t in types)
            raise InvalidInputError(f"{spec.name}: '{name}' must be {wanted}, not {_json_type_name(value)}.")
        if "enum" in schema and value not in schema["enum"]:
            raise InvalidInputError(
                f"{spec.name}: '{name}' must be one of {', '.join(repr(e) for e in schema['enum'])}, not {value!r}."
            )
        if "minimum" in schema and isinstance(value, int) and value < schema["minimum"]:
            raise InvalidInputError(f"{spec.name}: '{name}' must be at least {schema['minimum']}, not {value}.")
        if isinstance(value, (list, dict)) and value_depth(value) > MAX_DEPTH:
            raise too_deep(f"{spec.name}: '{name}'", DEEP_ARGUMENT_FIX)
        out[name] = value
    return out


DEEP_ARGUMENT_FIX = "send a flatter value (a SlayerQuery needs a few levels, entity references one)"


def _is_type(value: Any, json_type: str) -> bool:
    if isinstance(value, bool) and json_type != "boolean":
        return False
    return isinstance(value, _JSON_TYPES[json_type])


def call_tool(kb: KnowledgeBase, name: str, arguments: dict[str, Any] | None) -> Reply:
    """Run one tool. Never raises: every failure becomes an error reply the model can read."""
    spec = TOOLS_BY_NAME.get(name)
    if spec is None:
        return Reply(f"Unknown tool '{name}'. Tools: {', '.join(TOOLS_BY_NAME)}.", is_error=True)
    try:
        return spec.handler(kb, check_arguments(spec, arguments or {}))
    except KBError as exc:
        # The very message the CLI prints after "Error: ".
        return Reply(str(exc), is_error=True)
    except Exception as exc:  # noqa: BLE001 - a bug must not take the whole session down
        logger.exception("Tool %s failed", name)
        return Reply(f"Internal error in {name}: {type(exc).__name__}: {exc}", is_error=True)


# -- formatting helpers --------------------------------------------------------------------------


def _json_reply(data: dict[str, Any]) -> Reply:
    return Reply(json.dumps(data, ensure_ascii=False, indent=2), data)


def _with_warnings(text: str, warnings: Iterable[str]) -> str:
    return text + warning_lines(warnings)


def _clip(text: str | None, limit: int) -> str:
    """One line of at most ``limit`` characters, for previews."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "\u2026"


def _label(data: dict[str, Any]) -> str:
    """A memory's title; SLayer memories have none, so their summary stands in."""
    return data.get("title") or _clip(data.get("description") or data.get("learning"), 80)


def _type(data: dict[str, Any]) -> str:
    return data.get("type") or "none"


def _id_arg(value: str | int) -> str:
    # Engram's ids are numbers and its clients send them as such; ours are strings ("12").
    return str(value)


# -- SLayer's tools ------------------------------------------------------------------------------


def _save_memory(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.save_memory(a["learning"], a["linked_entities"], id=a.get("id"), description=a.get("description"))
    return _json_reply({
        "memory_id": result.memory_id,
        "resolved_entities": result.resolved_entities,
        "warnings": result.warnings,
        "action": result.action,
    })


def _search(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.search(
        a.get("question"), a.get("entities"), a.get("query"), datasource=a.get("datasource"),
        limit=a["max_results"], full=not a["compact"],
    )
    return _json_reply(result.to_json())


def _forget_memory(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    # SLayer's forget_memory takes a legacy int id too (12 means "12").
    result = kb.forget(_id_arg(a["id"]))
    return _json_reply({"deleted_id": result.deleted_id, "stripped_from": result.stripped_from})


# -- Engram's tools ------------------------------------------------------------------------------


def _mem_save(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.save_observation(
        title=a["title"], content=a["content"], type=a.get("type"), project=a.get("project"),
        scope=a.get("scope"), topic_key=a.get("topic_key"), session_id=a.get("session_id"),
    )
    return Reply(_with_warnings(result.message, result.warnings))


def _mem_search(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    if not a["query"].strip():
        # Engram's full-text search errors on an empty query (FTS5: syntax error near "").
        raise InvalidInputError(
            "Search error: the query is empty. Give search words (e.g. 'auth middleware jwt'); "
            "mem_context lists the most recent memories."
        )
    limit = min(a["limit"], MAX_ENGRAM_LIMIT)
    result = kb.search(
        a["query"], type=a.get("type"), project=a.get("project"), scope=a.get("scope"),
        limit=limit, match=MATCH_MODES[a["match_mode"]], full=True,
    )
    # Engram has no example queries: they are memories like any other, ranked together.
    hits = sorted(result.memories + result.example_queries, key=lambda h: -h["score"])[:limit]
    if not hits:
        return Reply(_with_warnings(f"No memories found for: {json.dumps(a['query'], ensure_ascii=False)}", result.warnings))
    lines = [f"Found {len(hits)} memories:", ""]
    truncated = False
    for n, hit in enumerate(hits, start=1):
        content = " ".join(hit["learning"].split())
        preview = content[:PREVIEW_CHARS]
        if len(content) > PREVIEW_CHARS:
            truncated = True
            preview += " [preview]"
        project = f" | project: {hit['project']}" if hit["project"] else ""
        lines.append(f"[{n}] #{hit['id']} ({_type(hit)}) \u2014 {_label(hit)}")
        lines.append(f"    {preview}")
        if hit["entities"]:
            lines.append(f"    entities: {', '.join(hit['entities'])}")
        lines.append(f"    {hit['created_at']}{project} | scope: {hit['scope'] or 'project'}")
        lines.append("")
    if truncated:
        lines.append("---")
        lines.append(
            f"Results above are previews ({PREVIEW_CHARS} chars). To read the full content of a "
            "specific memory, call mem_get_observation(id: <ID>)."
        )
    return Reply(_with_warnings("\n".join(lines).rstrip("\n"), result.warnings))


def _mem_update(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    data = kb.update(
        _id_arg(a["id"]), title=a.get("title"), learning=a.get("content"), type=a.get("type"),
        project=a.get("project"), scope=a.get("scope"), topic_key=a.get("topic_key"),
    )
    text = f'Memory updated: #{data["id"]} "{_label(data)}" ({_type(data)}, scope={data["scope"] or "project"})'
    return Reply(_with_warnings(text, data.get("warnings", [])))


def _mem_delete(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    memory_id = _id_arg(a["id"])
    result = kb.forget(memory_id, soft=not a["hard_delete"])
    text = f"Memory #{memory_id} {'soft-deleted' if result.soft else 'permanently deleted'}"
    if result.stripped_from:
        text += f"\nRemoved the link memory:{memory_id} from: {', '.join(result.stripped_from)}"
    return Reply(text)


def _mem_get_observation(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    data = kb.get(_id_arg(a["id"]))
    lines = [f"#{data['id']} [{_type(data)}] {_label(data)}", data["learning"].rstrip("\n")]
    # Engram's metadata lines, then what only slayer-kb memories carry.
    fields = [
        ("Session", data["session_id"]), ("Project", data["project"]), ("Scope", data["scope"] or "project"),
        ("Topic", data["topic_key"]), ("Description", data["description"]),
        ("Entities", ", ".join(data["entities"])),
        ("Query", json.dumps(data["query"], ensure_ascii=False) if data["query"] else None),
        ("Duplicates", data["duplicate_count"]), ("Revisions", data["revision_count"]),
        ("Created", data["created_at"]), ("Updated", data["updated_at"]),
    ]
    lines.extend(f"{label}: {value}" for label, value in fields if value not in (None, ""))
    return Reply("\n".join(lines))


def _mem_suggest_topic_key(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    key = kb.suggest_topic_key(a.get("type"), a.get("title"), a.get("content"))
    return Reply(f"Suggested topic_key: {key}")


def _mem_session_summary(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.session_summary(a["content"], project=a.get("project"), session_id=a.get("session_id"))
    project = engram.normalize_project(a.get("project"))
    text = f'Session summary saved for project "{project}"' if project else "Session summary saved"
    return Reply(_with_warnings(text, result.warnings))


def _stats_line(stats: dict[str, Any]) -> str:
    return ", ".join(stats["projects"]) or "none"


def _mem_context(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    text = kb.context(a.get("project"), a.get("scope"), limit=a["limit"])
    if text == sessions.EMPTY_CONTEXT:
        return Reply(text.rstrip("\n"))  # Engram's reply, without stats, when there is nothing
    stats = kb.stats()
    return Reply(
        f"{text.rstrip()}\n---\nMemory stats: {stats['sessions']} sessions, {stats['memories']} "
        f"observations across projects: {_stats_line(stats)}"
    )


def _mem_timeline(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    data = kb.timeline(_id_arg(a["observation_id"]), before=a["before"], after=a["after"])
    total = len(data["before"]) + 1 + len(data["after"])
    lines = [f"Session: {_session_line(data)}", f"Total observations in range: {total}", ""]

    def neighbour(hit: dict[str, Any]) -> str:
        return f"  #{hit['id']} [{_type(hit)}] {_label(hit)} \u2014 {_clip(hit['description'], TIMELINE_NEIGHBOUR_CHARS)}"

    if data["before"]:
        lines.append("\u2500\u2500\u2500 Before \u2500\u2500\u2500")
        lines.extend(neighbour(h) for h in data["before"])
        lines.append("")
    focus = data["focus"]
    lines.append(f">>> #{focus['id']} [{_type(focus)}] {_label(focus)} <<<")
    lines.append(f"    {_clip(focus['description'], TIMELINE_FOCUS_CHARS)}")
    lines.append(f"    {focus['created_at']}")
    if data["after"]:
        lines.append("")
        lines.append("\u2500\u2500\u2500 After \u2500\u2500\u2500")
        lines.extend(neighbour(h) for h in data["after"])
    return Reply("\n".join(lines))


def _mem_stats(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    stats = kb.stats()
    types = ", ".join(f"{t} {n}" for t, n in stats["types"].items()) or "none yet"
    return Reply(
        "Memory System Stats:\n"
        f"- Sessions: {stats['sessions']}\n"
        f"- Observations: {stats['memories']}\n"
        f"- Prompts: {stats['prompts']}\n"
        f"- Projects: {', '.join(stats['projects']) or 'none yet'}\n"
        f"- Types: {types}"
    )


def _session_line(data: dict[str, Any]) -> str:
    """The timeline's session: its id, and from its file (Engram's header) project, start, summary."""
    session = data.get("session")
    if not session:
        return data["session_id"] or "(none)"
    line = f"{session['id']} ({session['project'] or 'no project'}, started {session['started_at']})"
    if session["summary"]:
        line += f" \u2014 {sessions.clip(' '.join(session['summary'].split()), 100)}"
    return line


# -- Engram's session tools ----------------------------------------------------------------------


def _mem_session_start(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.session_start(a["id"], a["project"], a.get("directory"))
    session = result["session"]
    return Reply(f"Session {sessions.quoted(session['id'])} started for project {sessions.quoted(session['project'] or '')}")


def _mem_session_end(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.session_end(a["id"], a.get("summary"))
    return Reply(f"Session {sessions.quoted(result['session']['id'])} completed")


def _mem_save_prompt(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    return Reply(kb.save_prompt(a["content"], a.get("session_id"), a.get("project"))["message"])


def _mem_capture_passive(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    return Reply(kb.capture_passive(a["content"], a.get("session_id"), a.get("project"), a.get("source"))["message"])


# -- parameter and tool descriptions -------------------------------------------------------------

_ENGRAM_ID = {
    "type": ["string", "integer"],
    "description": (
        "The memory's id as mem_search shows it after '#' (e.g. 12 or \"kb.paid-revenue\"); "
        "numbers are accepted for Engram compatibility and mean the id \"12\"."
    ),
}
_TYPE_LIST = "; ".join(f"{t}: {h}" for t, h in engram.TYPE_HELP.items())
_PROJECT = (
    "Project name; trimmed and lower-cased, so 'My-API' and 'my-api' are one project. A new name "
    "close to an existing one (e.g. 'analytic' vs 'analytics') is saved but draws a warning."
)
_SCOPE = "'project' (the default: knowledge about this project) or 'personal' (cross-project knowledge such as tool tips); any other value means 'project'."

TOOLS: list[ToolSpec] = [
    ToolSpec(
        name="save_memory",
        title="Save memory (SLayer)",
        description="""\
Save an agent memory: a free-form note (learning) plus the SLayer entities it concerns. It is \
written as a YAML file and committed to the knowledge base's git repository (one commit), so \
humans can review it, and every later search by those entities or words finds it.

When: after you learned something about the data that the next agent should not rediscover \
(what a column's values mean, which filters a metric needs, a join gotcha, an agreed definition). \
Search first and re-save an existing id rather than adding a near-duplicate.

linked_entities is either
- a list of entity references, each resolved to the canonical <datasource>.<model>[.<leaf>] form \
(leaf = column, named measure or custom aggregation). Bare names use the datasource priority list; \
an ambiguous bare column (such as 'id', present on several models) is rejected: qualify it \
('orders.id'). Aggregations name their column ('sum(amount)', 'amount:sum'). 'memory:<id>' links \
another memory, which must exist. Every reference must resolve or nothing is saved; or
- a SlayerQuery object, exactly as SLayer 1.4.1 takes it: keys source_model (a model's bare name, \
or {source_name, columns, measures, joins} to extend one), measures, dimensions, time_dimensions \
({dimension, granularity} or "month(created_at)"), filters, order ([{column, direction}]), \
main_time_dimension, variables, limit, offset, name, whole_periods_only, distinct_dimension_values, \
to_many_handling, version. An unknown or misspelt key is refused, naming the key it likely meant. \
Entities are extracted from source_model, dimensions, time_dimensions, measures, filters and order. \
The query is stored with the memory, which then comes back in search's example_queries list \
instead of its memories list.

id: omit it to get the next integer-shaped id ("1", "2", ...; never reused after a delete), or give \
a stable string id such as "kb.paid-revenue". Ids may not contain : / ? # \\ , whitespace or \
control characters, may not start with '.' or '-', and may not differ from an existing id only \
in letter case. Saving an existing id replaces that memory whole (learning, description, \
entities, query); only created_at is kept (an unconditional upsert).

Returns {memory_id, resolved_entities (the canonical entities stored), warnings (non-fatal \
resolution notes), action ('created' or 'replaced')}.

Cascades: forget_memory strips memory:<id> from every other memory; deleting a model, datasource \
or column from the catalog (slayer-kb delete-model / delete-datasource / delete-leaf) strips it \
and everything under it from every memory, and a memory left without entities is kept. Search is \
lenient: stale tags are ignored at retrieval, never an error.

Examples:
  save_memory(learning="orders.is_returned is 0, 1 or NULL; treat NULL as not returned", \
linked_entities=["orders.is_returned"])
  save_memory(learning="Paid revenue: sum(amount) over paid orders", linked_entities=\
{"source_model": "orders", "measures": [{"formula": "sum(amount)"}], "filters": ["status = 'paid'"]}, \
id="kb.paid-revenue")""",
        properties={
            "learning": {
                "type": "string",
                "description": (
                    "The note itself: what the next agent should know, in plain prose. Required, "
                    "not blank, at most 64 KB. Its first paragraph is the summary compact search "
                    "results show when no description is given."
                ),
            },
            "linked_entities": {
                "type": ["array", "object", "string"],
                "items": {"type": "string"},
                "description": (
                    "What the memory is about: a list of entity references (e.g. "
                    "[\"orders.amount\", \"shop.customers\", \"memory:12\"]; a comma-separated "
                    "string is accepted too), or a SlayerQuery object (e.g. {\"source_model\": "
                    "\"orders\", \"measures\": [\"sum(amount)\"], \"filters\": [\"status = 'paid'\"]}) "
                    "whose entities are linked and which is stored as an example query. Required; "
                    "an empty list is an error."
                ),
            },
            "id": {
                "type": "string",
                "description": (
                    "Optional stable id such as \"kb.paid-revenue\". Omit for the next auto id. An "
                    "existing id is replaced whole (created_at kept). Not allowed: : / ? # \\, "
                    "whitespace, control characters, a leading '.' or '-'."
                ),
            },
            "description": {
                "type": "string",
                "description": (
                    "Optional one-line summary (at most 500 characters; blank means none) that "
                    "compact search results show instead of the learning's first paragraph. Like "
                    "every field, it is replaced when the same id is saved again."
                ),
            },
        },
        required=("learning", "linked_entities"),
        handler=_save_memory,
        destructive=True,  # an existing id is overwritten whole
    ),
    ToolSpec(
        name="search",
        title="Search memories (SLayer)",
        description="""\
Find memories by entities, a SlayerQuery and/or a free-text question (combine them freely). \
Read-only.

When: before answering a question about the data or writing a query (someone may already have \
learned the gotcha), and before save_memory (to update an existing memory rather than duplicate it).

Returns {memories, example_queries, entities, resolved_input_entities, warnings}:
- memories: notes linked to entities; example_queries: memories saved with a SlayerQuery, each with \
its stored query, a worked example to adapt. Both are ranked best first and cut at max_results. \
Each hit has id, score, title, type, description, entities, matched_entities, project, scope, \
created_at (and learning when compact is false);
- entities: catalog entities (models, columns, measures) whose names or descriptions match;
- resolved_input_entities: how your references resolved; warnings: everything non-fatal.

Lenient: an input reference that does not resolve (unknown, or an ambiguous bare name) is dropped \
with a warning and the search goes on; stored tags that no longer resolve are ignored; an example \
query whose references went stale carries a warning. A memory must share at least one entity with \
the input entities; precisely tagged memories rank above broadly tagged ones. The question's words \
are matched literally (no query syntax) and by meaning (local embeddings); memories holding every \
word rank high, and when none has them all, a warning names the bucket. The rankings of words, \
meaning and entities are fused by reciprocal rank; a memory named as memory:<id> and an exact topic \
key come first. With no input at all the newest memories come back, with a warning; when every \
input was dropped, nothing comes back, with the warnings that say why.""",
        properties={
            "entities": {
                "type": ["array", "string"],
                "items": {"type": "string"},
                "description": (
                    "Entity references to look for, resolved like save_memory's (e.g. "
                    "[\"orders.amount\"], [\"shop.orders\"], [\"memory:12\"]); a comma-separated "
                    "string is accepted too. Unresolvable ones are dropped with a warning."
                ),
            },
            "query": {
                "type": "object",
                "description": (
                    "A SlayerQuery (source_model, dimensions, measures, filters, ...) whose entities "
                    "to look for, e.g. to find example queries similar to one you are writing."
                ),
            },
            "question": {
                "type": "string",
                "description": (
                    "Free text, e.g. \"how are refunds counted\", matched by its words (literally, in "
                    "the title, learning or description) and by its meaning."
                ),
            },
            "datasource": {
                "type": "string",
                "description": (
                    "Only memories with at least one entity in this datasource (e.g. \"shop\"). An "
                    "unknown datasource is an error listing the known ones."
                ),
            },
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "description": "At most this many memories, and as many example queries and catalog entities: the cap applies to each bucket (default 10).",
            },
            "compact": {
                "type": "boolean",
                "description": (
                    "true (default): each hit shows its description, or the learning's first "
                    "paragraph. false: each hit also carries the whole learning."
                ),
            },
        },
        defaults={"max_results": DEFAULT_LIMIT, "compact": True},
        handler=_search,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="forget_memory",
        title="Forget memory (SLayer)",
        description="""\
Delete a memory for good: its file is removed and memory:<id> is stripped from every other \
memory that linked to it, all in one git commit (git history keeps it; 'git revert' brings it \
back). Use it for a memory that is wrong or obsolete; to correct one, save_memory again with the \
same id instead. Returns {deleted_id, stripped_from (ids of the memories that lost the link)}. \
An unknown id is an error: No memory with id '<id>'.""",
        properties={
            "id": {
                "type": ["string", "integer"],
                "description": (
                    "The id of the memory to delete, as save_memory or search returned it (e.g. \"12\", "
                    "\"kb.paid-revenue\"); an integer is accepted, as SLayer does, and means that id (12 is \"12\")."
                ),
            },
        },
        required=("id",),
        handler=_forget_memory,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_save",
        title="Save observation (Engram)",
        description="""\
Save an important observation to persistent memory (a YAML file committed to git). Call this \
PROACTIVELY after completing significant work; don't wait to be asked.

When to save (after each of these): architectural decisions or trade-offs; bug fixes (what was \
wrong, why, how you fixed it); new patterns or conventions; configuration changes or environment \
setup; important discoveries or gotchas; file structure changes. Not for raw tool calls, trivial \
changes, work in progress or anything already saved.

Content format:
  **What**: [concise description of what was done]
  **Why**: [the reasoning, user request, or problem that drove it]
  **Where**: [files/paths affected, relative to the project root]
  **Learned**: [gotchas, edge cases, decisions; omit if none]

What happens, in order: <private>...</private> in title and content becomes [REDACTED]; with a \
topic_key, a live memory with the same topic_key, project and scope is updated in place (its \
revision count goes up) instead of adding one; otherwise an identical save (same content, \
project, scope, type and title) within 15 minutes only bumps the duplicate count of the first; \
otherwise a new memory gets the next id.

Reply: Memory saved: "TITLE" (TYPE), plus a 'Suggested topic_key: KEY' line when you gave no \
topic_key (pass it next time to make the topic evolve in one memory), plus 'warning:' lines \
(e.g. a project name close to an existing one).""",
        properties={
            "title": {
                "type": "string",
                "description": "Short, searchable title, under 80 characters, about the what (e.g. 'JWT auth middleware', 'Fixed N+1 query in user list'). Required.",
            },
            "content": {
                "type": "string",
                "description": "The observation, in the **What** / **Why** / **Where** / **Learned** format. Required, not blank, at most 64 KB.",
            },
            "type": {
                "type": "string",
                "description": f"Category (default manual); other values are kept as given. {_TYPE_LIST}.",
            },
            "session_id": {
                "type": "string",
                "description": "Session to file it under, for mem_timeline and mem_context (default manual-save-PROJECT, or manual-save without a project).",
            },
            "project": {"type": "string", "description": _PROJECT},
            "scope": {"type": "string", "description": _SCOPE},
            "topic_key": {
                "type": "string",
                "description": (
                    "Optional upsert key 'family/segment' (e.g. architecture/auth-model; see "
                    "mem_suggest_topic_key) for evolving knowledge: a live memory with the same key, "
                    "project and scope is revised in place. Trimmed, lower-cased, spaces become '-'."
                ),
            },
        },
        required=("title", "content"),
        handler=_mem_save,
        destructive=True,  # a topic_key upsert replaces the earlier content
    ),
    ToolSpec(
        name="mem_search",
        title="Search observations (Engram)",
        description="""\
Search persistent memory across all sessions: past decisions, bugs fixed, patterns, files changed, \
any context from earlier work. Read-only. Covers every memory, SLayer ones included. Words are \
matched literally (operator characters cannot break it) in titles, contents and descriptions, \
and by meaning, so a question in other words still finds the memory. match_mode 'all' \
(default): memories holding every word first, then the closest others; 'any': words and \
meaning ranked together; 'strict': only memories holding every word. A query containing '/' \
also matches topic keys exactly, ranked first. Soft-deleted memories never appear.

Reply: 'Found N memories:' then per hit '[n] #ID (TYPE) \u2014 TITLE', a 300-character preview of the \
content, its entities if any, and 'CREATED | project: P | scope: S'. Use mem_get_observation(id) \
for the full content, mem_timeline(observation_id) for what happened around it.""",
        properties={
            "query": {"type": "string", "description": "Search words, natural language or keywords (e.g. 'auth middleware jwt'). Required."},
            "type": {"type": "string", "description": f"Only memories of this type. {_TYPE_LIST}."},
            "project": {"type": "string", "description": "Only memories of this project (normalised like mem_save's)."},
            "scope": {"type": "string", "description": "Only memories of this scope: project or personal."},
            "limit": {"type": "integer", "minimum": 1, "description": f"Max results (default {DEFAULT_LIMIT}, at most {MAX_ENGRAM_LIMIT}; larger values are capped)."},
            "match_mode": {
                "type": "string",
                "enum": ["all", "any", "strict"],
                "description": "'all' (default): memories holding every word first, then the closest others. 'any': words and meaning ranked together. 'strict': only memories holding every word.",
            },
        },
        required=("query",),
        defaults={"limit": DEFAULT_LIMIT, "match_mode": "all"},
        handler=_mem_search,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_update",
        title="Update observation (Engram)",
        description="""\
Update an existing memory by id: only the fields you give change (at least one), in one git \
commit; changing title or content bumps its revision count. Use it when you have the exact id of \
a memory to correct (from mem_search); a missing or soft-deleted id is an error. Reply: \
Memory updated: #ID "TITLE" (TYPE, scope=SCOPE).""",
        properties={
            "id": _ENGRAM_ID,
            "title": {"type": "string", "description": "New title (short and searchable, under 80 characters)."},
            "content": {"type": "string", "description": "New content (replaces the whole text; <private> spans are redacted)."},
            "type": {"type": "string", "description": f"New type. {_TYPE_LIST}."},
            "project": {"type": "string", "description": "New project (normalised like mem_save's)."},
            "scope": {"type": "string", "description": "New scope: project or personal."},
            "topic_key": {"type": "string", "description": "New topic key (normalised like mem_save's)."},
        },
        required=("id",),
        handler=_mem_update,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_delete",
        title="Delete observation (Engram)",
        description="""\
Delete a memory by id. Soft delete (default): the file stays, marked deleted, hidden from every \
read and search ('slayer-kb restore ID' brings it back). hard_delete=true: the file is removed \
and memory:ID is stripped from every memory linking to it. Either way one git commit. Reply: \
Memory #ID soft-deleted / Memory #ID permanently deleted.""",
        properties={
            "id": _ENGRAM_ID,
            "hard_delete": {"type": "boolean", "description": "true: delete the file for good (and strip links to it). false (default): soft delete."},
        },
        required=("id",),
        defaults={"hard_delete": False},
        handler=_mem_delete,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_get_observation",
        title="Get observation (Engram)",
        description="""\
Get the full, untruncated content of one memory and its metadata (session, project, scope, topic \
key, description, entities, stored query, duplicate and revision counts, created and updated \
times). Read-only. Use it after mem_search or mem_timeline showed a preview. A missing or \
soft-deleted id is an error.""",
        properties={"id": _ENGRAM_ID},
        required=("id",),
        handler=_mem_get_observation,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_suggest_topic_key",
        title="Suggest topic key (Engram)",
        description="""\
Suggest a stable topic_key ('family/segment', e.g. architecture/auth-model) for mem_save upserts, \
computed as Engram does: the family from the type (or keywords in title and content), the segment \
from the title (or the content's first words). Read-only; changes nothing. Use it before mem_save \
when a topic (an architecture decision, an ongoing investigation) should evolve in one memory. \
Needs a title or content. Reply: Suggested topic_key: KEY.""",
        properties={
            "type": {"type": "string", "description": f"The observation's type, which picks the family. {_TYPE_LIST}."},
            "title": {"type": "string", "description": "The observation's title (the preferred input for a stable key)."},
            "content": {"type": "string", "description": "The observation's content, used when the title is empty."},
        },
        handler=_mem_suggest_topic_key,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_session_summary",
        title="Save session summary (Engram)",
        description="""\
Save an end-of-session summary as a memory of type session_summary titled 'Session summary: \
PROJECT' (one git commit). Call it when a session ends or significant work is complete, so the \
next session's mem_context shows what happened. Content format:
## Goal
[one sentence]
## Instructions
[user preferences or constraints discovered; skip if none]
## Discoveries
- [gotchas, non-obvious findings: the most valuable part]
## Accomplished
- [done, with key details] / [identified, not yet done]
## Relevant Files
- path/to/file: [what changed]
Reply: Session summary saved for project "PROJECT".""",
        properties={
            "content": {"type": "string", "description": "The summary in the Goal / Instructions / Discoveries / Accomplished / Relevant Files format. Required."},
            "project": {"type": "string", "description": _PROJECT},
            "session_id": {"type": "string", "description": "Session to file it under (default manual-save-PROJECT)."},
        },
        required=("content",),
        handler=_mem_session_summary,
    ),
    ToolSpec(
        name="mem_context",
        title="Memory context (Engram)",
        description="""\
Get a compact markdown digest from previous sessions: the 5 sessions active last (project, start \
and end, summary, memories and prompts saved in them), the 10 newest user prompts and the newest \
memories (limit, default 20), plus totals; at most about 6,000 characters. Read-only. Call it at \
the start of a session (or after a context compaction) to see what was done before, then \
mem_search / mem_get_observation for details. With nothing saved yet: No previous session \
memories found.""",
        properties={
            "project": {"type": "string", "description": "Only this project (omit for all projects)."},
            "scope": {"type": "string", "description": "Only memories of this scope: project or personal (omit for both)."},
            "limit": {"type": "integer", "minimum": 1, "description": "How many of the newest memories to list (default 20)."},
        },
        defaults={"limit": 20},
        handler=_mem_context,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_timeline",
        title="Memory timeline (Engram)",
        description="""\
Show the memories saved just before and after one in the same session, oldest first, with the \
focus memory highlighted. Read-only. Use it after mem_search to see the context of a result \
(progressive disclosure: search, then timeline, then mem_get_observation).""",
        properties={
            "observation_id": {**_ENGRAM_ID, "description": "The memory to centre the timeline on (an id from mem_search, e.g. 12)."},
            "before": {"type": "integer", "minimum": 0, "description": "How many earlier memories of the session to show (default 5)."},
            "after": {"type": "integer", "minimum": 0, "description": "How many later memories of the session to show (default 5)."},
        },
        required=("observation_id",),
        defaults={"before": 5, "after": 5},
        handler=_mem_timeline,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_stats",
        title="Memory stats (Engram)",
        description="Show memory statistics: sessions, live memories, projects, and memories per type. Read-only; takes no parameters.",
        properties={},
        handler=_mem_stats,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_session_start",
        title="Start session (Engram)",
        description="""\
Register the start of a coding session: a file sessions/<id>.yaml committed to git (one commit) \
holding its project, working directory and start time. Call it at the beginning of a session, \
then pass the same id as session_id to mem_save, mem_save_prompt and mem_capture_passive, and end \
it with mem_session_end. Starting an id that exists keeps that session, only filling in an empty \
project or directory. Reply: Session "ID" started for project "PROJECT".""",
        properties={
            "id": {"type": "string", "description": "Unique session identifier, e.g. 'ses-2026-11-29-auth' or your client's session id. Required."},
            "project": {"type": "string", "description": _PROJECT + " Required."},
            "directory": {"type": "string", "description": "The session's working directory, e.g. /home/ana/analytics."},
        },
        required=("id", "project"),
        handler=_mem_session_start,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_session_end",
        title="End session (Engram)",
        description="""\
Mark a session as completed: its end time and an optional summary of what was accomplished are \
written to its file (one commit); mem_context shows both. Without a summary an earlier one is \
kept. For a structured end-of-session summary that search finds, also call mem_session_summary. \
An id that was never started is an error naming the recent sessions. Reply: Session "ID" completed.""",
        properties={
            "id": {"type": "string", "description": "The session to close, as given to mem_session_start. Required."},
            "summary": {"type": "string", "description": "What was accomplished, in a few sentences (<private> spans are redacted)."},
        },
        required=("id",),
        handler=_mem_session_end,
        idempotent=True,
    ),
    ToolSpec(
        name="mem_save_prompt",
        title="Save user prompt (Engram)",
        description="""\
Save a user prompt: what the user asked (intent, questions, requests), so future sessions know the \
user's goals. It is appended to its session's file (made when missing), one commit; \
<private>...</private> becomes [REDACTED], and text beyond the content limit (64 KB) is cut with \
'... [truncated]'. mem_context lists the newest prompts. Reply: Prompt saved: "<first 80 characters>".""",
        properties={
            "content": {"type": "string", "description": "The user's prompt text. Required, not blank."},
            "session_id": {"type": "string", "description": "Session to record it in (default manual-save-PROJECT, or manual-save without a project)."},
            "project": {"type": "string", "description": _PROJECT},
        },
        required=("content",),
        handler=_mem_save_prompt,
    ),
    ToolSpec(
        name="mem_capture_passive",
        title="Capture learnings (Engram)",
        description="""\
Extract and save structured learnings from text output; use it at the end of a task to capture \
knowledge automatically. The last section headed '## Key Learnings:' (also '### Learnings', \
'## Learning', '## Aprendizajes Clave:') is read up to the next heading; its numbered items \
('1. x'), or else its bullets ('- x'), become one memory each, of type passive (markdown marks \
stripped; items under 20 characters skipped). An item whose text a live memory of the project \
already has is counted as a duplicate and not saved, so it is safe to call twice with the same \
text. All new memories in one commit. Reply: Passive capture complete: extracted=N saved=N \
duplicates=N.""",
        properties={
            "content": {"type": "string", "description": "The text output containing a '## Key Learnings:' section with numbered or bulleted items. Required."},
            "session_id": {"type": "string", "description": "Session to file the memories under (default manual-save-PROJECT)."},
            "project": {"type": "string", "description": _PROJECT},
            "source": {"type": "string", "description": "Where the text came from, e.g. 'subagent-stop' or 'session-end' (default mcp-passive); recorded in the commit message."},
        },
        required=("content",),
        handler=_mem_capture_passive,
        idempotent=True,
    ),
]

TOOLS_BY_NAME: dict[str, ToolSpec] = {spec.name: spec for spec in TOOLS}


# -- the stdio transport -------------------------------------------------------------------------
#
# The SDK's stdio transport drops without a word a line it cannot parse (a lone surrogate escape,
# JSON nested deeper than its parser allows, a line that is not JSON), and a client waits forever
# for the answer. This one screens each line first and answers whatever it cannot hand on: -32700
# for a line that is not UTF-8 JSON, -32600 for JSON that is no JSON-RPC message, a tool error for
# a tool call whose arguments nest too deep. Then it reads the next line.

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
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
        return types.jsonrpc_message_adapter.validate_json(text, by_name=False), None
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
        spec = TOOLS_BY_NAME.get(params.get("name"))  # type: ignore[arg-type]
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


def serve(knowledge_base: KnowledgeBase) -> None:
    """Serve the tools on stdin/stdout until the client closes the connection."""
    try:
        import anyio
        import mcp.types as types
        from mcp.server.lowlevel import Server
    except ImportError:
        raise KBError(INSTALL_HINT) from None

    # One KnowledgeBase for the whole session keeps the Whoosh searcher and the catalog warm; a
    # file monitor tells its reads when edits made behind the server's back need a rescan.
    knowledge_base.keep_warm()

    tools = [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema(),
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.read_only,
                destructive_hint=spec.destructive,
                idempotent_hint=spec.idempotent,
                open_world_hint=False,
            ),
        )
        for spec in TOOLS
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def run_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        # Run inline rather than in a worker thread: calls are then strictly one at a time, and
        # GitPython and the Whoosh searcher are never touched from two threads.
        reply = call_tool(knowledge_base, params.name, params.arguments)
        content: list[types.ContentBlock] = [types.TextContent(type="text", text=reply.text)]
        if reply.data is None:
            return types.CallToolResult(content=content, is_error=reply.is_error)
        return types.CallToolResult(content=content, structured_content=reply.data, is_error=reply.is_error)

    server: Server[Any] = Server(
        "slayer-kb", version=__version__, instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=run_tool,
    )

    async def main() -> None:
        async with stdio_transport() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        knowledge_base.close()
