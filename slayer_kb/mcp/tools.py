"""The MCP tools: each a ``KnowledgeBase`` call and the formatting of its reply.

SLayer's ``save_memory`` / ``search`` / ``forget_memory`` answer with the seed's JSON shapes;
Engram's ``mem_*`` tools answer with Engram's reply texts. Beside the text every tool returns
structured content, the ``to_json`` of its result (what the CLI's ``--json`` prints), as its output
schema declares. What a model reads about each tool (its description, parameter and output
schemas) is data, in ``tools.yaml`` and ``outputs.yaml``; this module binds each name there to its
handler.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from ..core import engram
from ..core.errors import InvalidInputError, KBError, StoreError
from ..core.locate import memory_link
from ..core.problems import paths_absolute
from ..core.results import ChangeResult, Hit, Stats, Timeline
from ..core.text import MAX_SHOWN, clip, one_line_shown, quoted, warning_lines
from ..kb import DEFAULT_LIMIT, EMPTY_CONTEXT, MAX_ENGRAM_LIMIT, KnowledgeBase
from .schema import Handler, Reply, ToolSpec, check_arguments, with_result

logger = logging.getLogger(__name__)

PREVIEW_CHARS = 300  # Engram's mem_search preview length
# mem_search's match_mode -> KnowledgeBase.search's match.
MATCH_MODES = {"all": "all-first", "any": "fused", "strict": "all"}
TIMELINE_NEIGHBOUR_CHARS = 150
TIMELINE_FOCUS_CHARS = 500
DESCRIPTIONS = Path(__file__).with_name("tools.yaml")
OUTPUTS = Path(__file__).with_name("outputs.yaml")


def call_tool(kb: KnowledgeBase, name: str, arguments: dict[str, Any] | None) -> Reply:
    """Run one tool. Never raises: every failure becomes an error reply the model can read.
    The paths and commands its advice names are absolute: the server's working folder is no
    folder of the person who reads the transcript."""
    with paths_absolute():
        return _call_tool(kb, name, arguments)


def _call_tool(kb: KnowledgeBase, name: str, arguments: dict[str, Any] | None) -> Reply:
    spec = tool(name)
    if spec is None:
        return Reply(f"Unknown tool '{name}'. Tools: {', '.join(HANDLERS)}.", is_error=True)
    try:
        checked = check_arguments(spec, arguments or {})  # before any call of the KB
    except Exception as exc:  # noqa: BLE001 - see _error_reply
        return _error_reply(name, exc)
    if (gone := kb.replaced()) is not None:  # its index and caches are of the KB it opened
        return Reply(gone, is_error=True)
    with kb.collecting_warnings() as told:  # what the CLI prints on stderr, where no agent looks
        try:
            reply = spec.handler(kb, checked)
        except Exception as exc:  # noqa: BLE001 - see _error_reply
            reply = _error_reply(name, exc)
    return reply.warned(told)


def _error_reply(name: str, exc: Exception) -> Reply:
    if isinstance(exc, KBError):
        # The message the CLI prints after "Error: ", its advice naming tools instead of commands.
        return Reply(exc.for_tools(), is_error=True)
    if isinstance(exc, OSError):  # a refusal no message foresaw: the path, the cause and the fix
        return Reply(str(StoreError.from_os(exc)), is_error=True)
    # A bug must not take the whole session down.
    logger.error("Tool %s failed", name, exc_info=exc)
    return Reply(f"Internal error in {name}: {type(exc).__name__}: {exc}", is_error=True)


# -- formatting helpers --------------------------------------------------------------------------


def _json_reply(data: dict[str, Any], structured: dict[str, Any] | None = None) -> Reply:
    """SLayer's JSON text; the structured content is the same data, or (``structured``) the
    result's whole ``to_json``, of which the text shows the seed's fields."""
    return Reply(json.dumps(data, ensure_ascii=False, indent=2), structured or data, shown=data)


def _with_warnings(text: str, warnings: Iterable[str]) -> str:
    return text + warning_lines(warnings)


def _clip(text: str | None, limit: int) -> str:
    """One line of at most ``limit`` characters, for previews."""
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "\u2026"


def _label(data: Mapping[str, Any]) -> str:
    """A memory's title on one line (a hand-written one may hold line breaks, which would make
    lines of their own in the text an agent reads); SLayer memories have none, so their summary
    stands in."""
    title = data.get("title")
    return one_line_shown(title) if title else _summary(data)


def _summary(data: Mapping[str, Any]) -> str:
    """What stands in for a memory's title where it has none."""
    return _clip(data.get("description") or data.get("learning"), 80)


def _type(data: Mapping[str, Any]) -> str:
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
    }, result.to_json())


def _search(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.search(
        a.get("question"), a.get("entities"), a.get("query"), datasource=a.get("datasource"),
        limit=a["max_results"], full=not a["compact"],
    )
    return _json_reply(result.to_json())


def _forget_memory(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    # SLayer's forget_memory takes a legacy int id too (12 means "12").
    result = kb.forget(_id_arg(a["id"]))
    return _json_reply({"deleted_id": result.deleted_id, "stripped_from": result.stripped_from}, result.to_json())


# -- Engram's tools ------------------------------------------------------------------------------


def _mem_save(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.save_observation(
        title=a["title"], content=a["content"], type=a.get("type"), project=a.get("project"),
        scope=a.get("scope"), topic_key=a.get("topic_key"), session_id=a.get("session_id"),
    )
    return Reply(_with_warnings(result.message, result.warnings), result.to_json())


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
    hits, notes = result.merged(limit)
    data = {"results": hits, "warnings": result.warnings, "notes": notes}
    if not hits:
        query = a["query"]
        # Quoted as Engram does, cut as every message quotes a value (a 64 KB question came back whole).
        cut = f"... ({len(query)} characters)" if len(query) > MAX_SHOWN else ""
        text = f"No memories found for: {quoted(query[:MAX_SHOWN])}{cut}"
        return Reply(_with_warnings(text, result.warnings), data)
    lines = [f"Found {len(hits)} memories:", ""]
    truncated = False
    for n, hit in enumerate(hits, start=1):
        content = " ".join(hit["learning"].split())
        preview = content[:PREVIEW_CHARS]
        if len(content) > PREVIEW_CHARS:
            truncated = True
            preview += " [preview]"
        project = f" | project: {one_line_shown(hit['project'])}" if hit["project"] else ""
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
    return Reply(_with_warnings("\n".join(lines).rstrip("\n"), result.warnings), data)


def _mem_update(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.update(
        _id_arg(a["id"]), title=a.get("title"), learning=a.get("content"), type=a.get("type"),
        project=a.get("project"), scope=a.get("scope"), topic_key=a.get("topic_key"),
    )
    return _change_reply(result)


def _mem_restore(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    return _change_reply(kb.restore(_id_arg(a["id"])))


def _change_reply(result: ChangeResult) -> Reply:
    """Engram's ``Memory updated: ...`` line, for an update or a restore. An update that changed
    nothing (no commit) keeps Engram's prefix, which clients match, and says so after it."""
    data = result.memory
    verb = "restored" if result.action == "restored" else "updated"
    # Go's %q, as Engram's reply quotes the title (it escapes a line break _label shows as \x0a).
    label = quoted(data.get("title") or _summary(data))
    text = f'Memory {verb}: #{data["id"]} {label} ({_type(data)}, scope={data["scope"] or "project"})'
    if result.action == "unchanged":
        text += ": unchanged, it already holds these values; nothing to commit."
    return Reply(_with_warnings(text, result.warnings), result.to_json())


def _mem_delete(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    memory_id = _id_arg(a["id"])
    result = kb.forget(memory_id, soft=not a["hard_delete"])
    text = f"Memory #{memory_id} {'soft-deleted' if result.soft else 'permanently deleted'}"
    if result.stripped_from:
        text += f"\nRemoved the link {memory_link(memory_id)} from: {', '.join(result.stripped_from)}"
    return Reply(_with_warnings(text, result.warnings), result.to_json())


def _mem_get_observation(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    data = kb.get(_id_arg(a["id"])).to_dict()
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
    lines.extend(f"{label}: {one_line_shown(str(value))}" for label, value in fields if value not in (None, ""))
    return Reply("\n".join(lines), data)


def _mem_suggest_topic_key(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    key = kb.suggest_topic_key(a.get("type"), a.get("title"), a.get("content"))
    return Reply(f"Suggested topic_key: {key}", {"topic_key": key})


def _mem_session_summary(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.session_summary(a["content"], project=a.get("project"), session_id=a.get("session_id"))
    return Reply(_with_warnings(result.message, result.warnings), result.to_json())


def _stats_line(stats: Stats) -> str:
    return ", ".join(map(one_line_shown, stats["projects"])) or "none"


def _mem_context(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    text = kb.context(a.get("project"), a.get("scope"), limit=a["limit"])
    # A filter no memory matches says so (with skipped files' lines after the digest too).
    warnings = kb.context_unmatched(text, a.get("project"), a.get("scope"), "call mem_context")
    said = {"warnings": warnings} if warnings else {}
    if text == EMPTY_CONTEXT:  # Engram's reply, without stats, when there is nothing
        return Reply(_with_warnings(text.rstrip("\n"), warnings), {"text": text, "stats": None, **said})
    stats = kb.stats()
    return Reply(
        _with_warnings(f"{text.rstrip()}\n---\nMemory stats: {stats['sessions']} sessions, {stats['memories']} "
                       f"observations across projects: {_stats_line(stats)}", warnings),
        {"text": text, "stats": dict(stats), **said},
    )


def _mem_timeline(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    data = kb.timeline(_id_arg(a["observation_id"]), before=a["before"], after=a["after"])
    total = len(data["before"]) + 1 + len(data["after"])
    lines = [f"Session: {_session_line(data)}", f"Total observations in range: {total}", ""]

    def neighbour(hit: Hit) -> str:
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
    return Reply("\n".join(lines) + warning_lines(data["warnings"]), dict(data))


def _mem_stats(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    stats = kb.stats()
    types = ", ".join(f"{one_line_shown(t)} {n}" for t, n in stats["types"].items()) or "none yet"
    return Reply(
        "Memory System Stats:\n"
        f"- Sessions: {stats['sessions']}\n"
        f"- Observations: {stats['memories']}\n"
        f"- Prompts: {stats['prompts']}\n"
        f"- Projects: {', '.join(map(one_line_shown, stats['projects'])) or 'none yet'}\n"
        f"- Types: {types}"
        # Apart from the types (one may be named 'none'); Engram's memories always have one.
        + (f"\n- Untyped: {stats['untyped']}" if stats["untyped"] else "")
        + warning_lines(stats.get("warnings", [])),
        dict(stats),
    )


def _session_line(data: Timeline) -> str:
    """The timeline's session: its id, and from its file (Engram's header) project, start, summary."""
    session = data.get("session")
    if not session:
        return one_line_shown(data["session_id"]) if data["session_id"] else "(none)"
    line = f"{one_line_shown(session['id'])} ({one_line_shown(session['project'] or 'no project')}, started {session['started_at']})"
    if session["summary"]:
        line += f" \u2014 {clip(' '.join(session['summary'].split()), 100)}"
    return line


# -- Engram's session tools ----------------------------------------------------------------------


def _mem_session_start(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.session_start(a["id"], a["project"], a.get("directory"))
    session = result.session
    text = f"Session {quoted(session['id'])} started for project {quoted(session['project'] or '')}"
    return Reply(_with_warnings(text, result.warnings or []), result.to_json())


def _mem_session_end(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.session_end(a["id"], a.get("summary"))
    text = f"Session {quoted(result.session['id'])} completed"
    return Reply(_with_warnings(text, result.warnings or []), result.to_json())


def _mem_save_prompt(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.save_prompt(a["content"], a.get("session_id"), a.get("project"))
    return Reply(result.message or "", result.to_json())


def _mem_capture_passive(kb: KnowledgeBase, a: dict[str, Any]) -> Reply:
    result = kb.capture_passive(a["content"], a.get("session_id"), a.get("project"), a.get("source"))
    return Reply(_with_warnings(result.message, result.warnings), result.to_json())


# -- the table -------------------------------------------------------------------------------------

HANDLERS: dict[str, Handler] = {
    "save_memory": _save_memory,
    "search": _search,
    "forget_memory": _forget_memory,
    "mem_save": _mem_save,
    "mem_search": _mem_search,
    "mem_update": _mem_update,
    "mem_delete": _mem_delete,
    "mem_restore": _mem_restore,
    "mem_get_observation": _mem_get_observation,
    "mem_suggest_topic_key": _mem_suggest_topic_key,
    "mem_session_summary": _mem_session_summary,
    "mem_context": _mem_context,
    "mem_timeline": _mem_timeline,
    "mem_stats": _mem_stats,
    "mem_session_start": _mem_session_start,
    "mem_session_end": _mem_session_end,
    "mem_save_prompt": _mem_save_prompt,
    "mem_capture_passive": _mem_capture_passive,
}
# What tools.yaml's prose says by name, filled in from the code.
FILLED = {
    "{TYPE_LIST}": "; ".join(f"{t}: {h}" for t, h in engram.TYPE_HELP.items()),
    "{DEFAULT_LIMIT}": str(DEFAULT_LIMIT),
    "{MAX_ENGRAM_LIMIT}": str(MAX_ENGRAM_LIMIT),
}


def _filled(value: Any) -> Any:
    if isinstance(value, str):
        for name, text in FILLED.items():
            value = value.replace(name, text)
        return value
    if isinstance(value, dict):
        return {k: _filled(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v) for v in value]
    return value


@lru_cache(maxsize=1)
def _table() -> dict[str, ToolSpec]:
    described = _filled(yaml.safe_load(DESCRIPTIONS.read_text(encoding="utf-8")))
    outputs = yaml.safe_load(OUTPUTS.read_text(encoding="utf-8"))
    assert [d["name"] for d in described] == list(HANDLERS), "tools.yaml and HANDLERS name the same tools"
    return {
        d["name"]: ToolSpec(
            name=d["name"], title=d["title"], description=d["description"], properties=d["properties"],
            handler=HANDLERS[d["name"]], required=tuple(d.get("required", ())),
            read_only="read_only" in d.get("hints", ()), destructive="destructive" in d.get("hints", ()),
            idempotent="idempotent" in d.get("hints", ()), defaults=d.get("defaults", {}),
            output_schema=with_result(outputs[d["output"]]),
        )
        for d in described
    }


def tools() -> list[ToolSpec]:
    """Every tool, in the order a client lists them."""
    return list(_table().values())


def tool(name: str) -> ToolSpec | None:
    return _table().get(name)
