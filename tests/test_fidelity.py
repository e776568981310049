"""slayer-kb answers the fidelity set as SLayer 1.4.1 does (tests/fidelity/, docs/fidelity.md).

tests/fidelity/slayer_answers.json holds SLayer 1.4.1's own answers, recorded by
tests/fidelity/record.py from tests/fidelity/cases.yaml. Every case here runs slayer-kb's rules on
the same input over the same catalog: the answers agree (the same entities and warnings, or both
refuse, slayer-kb's message carrying SLayer's), or the case says in ``differs`` why slayer-kb
answers otherwise, and ``kb`` is slayer-kb's answer, checked exactly. The steps of
tests/fidelity/memory_cases.yaml (save_memory, forget_memory, search) run in turn on one knowledge
base and are held to SLayer's answers the same way.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.relevance import FAST_LOADER
from slayer_kb import KnowledgeBase
from slayer_kb.catalog.catalog import load_catalog
from slayer_kb.catalog.refs import query_entities
from slayer_kb.catalog.resolve import Resolver
from slayer_kb.core.errors import KBError

FIDELITY = Path(__file__).parent / "fidelity"
sys.path.insert(0, str(FIDELITY))
from catalog import write_catalog  # noqa: E402

from testing import commit_all, make_empty_kb  # noqa: E402

# Read at collection, in every worker: libyaml's safe loader (bench.relevance.FAST_LOADER), a
# tenth of the pure-Python parse's CPU.
CASES = yaml.load((FIDELITY / "cases.yaml").read_text(encoding="utf-8"), Loader=FAST_LOADER)  # noqa: S506 - a safe loader
STEPS = yaml.load((FIDELITY / "memory_cases.yaml").read_text(encoding="utf-8"), Loader=FAST_LOADER)["steps"]  # noqa: S506
ANSWERS = json.loads((FIDELITY / "slayer_answers.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def resolver(tmp_path_factory: pytest.TempPathFactory) -> Resolver:
    root = tmp_path_factory.mktemp("fidelity")
    write_catalog(root)
    catalog = load_catalog(root)
    assert catalog.problems == []
    return Resolver(catalog, memory_exists=lambda _id: False)  # its id check, as every KB resolver has


def kb_reference(resolver: Resolver, ref: str) -> dict[str, Any]:
    try:
        found = resolver.resolve(ref)
    except KBError as exc:
        return {"error": str(exc)}
    return {"entities": [found.entity], "warnings": found.warnings}


def kb_query(resolver: Resolver, query: Any) -> dict[str, Any]:
    try:
        entities, warnings = query_entities(query, resolver)
    except KBError as exc:
        return {"error": str(exc)}
    return {"entities": entities, "warnings": warnings}


def _slayer_words(message: str) -> str:
    """The part of SLayer's message a user reads: pydantic's "Value error, " and an error class's
    "XError: " prefix dropped, and its first line only."""
    message = message.removeprefix("Value error, ")
    message = re.sub(r"^\w+Error: ", "", message)
    return message.splitlines()[0] if message else message


def _place(loc: str) -> str:
    """Where pydantic says the error is, without its union tags (``function-after[...]``,
    ``source_model``'s ``name`` / ``extension`` branches)."""
    parts = [p for p in loc.split(".") if not p.startswith(("function-", "str-enum["))]
    if len(parts) > 1 and parts[0] == "source_model" and parts[1] in ("name", "extension", "model"):
        del parts[1]
    return ".".join(parts)


def agree(slayer: dict[str, Any], kb: dict[str, Any]) -> bool:
    if "error" not in slayer or "error" not in kb:
        return slayer.get("entities") == kb.get("entities") and slayer.get("warnings") == kb.get("warnings")
    errors = slayer.get("errors") or [{"loc": "", "msg": slayer["error"]}]
    return any(
        _slayer_words(e["msg"]) in kb["error"] and _place(e["loc"]).split(".")[0] in kb["error"]
        for e in errors
    )


def check(case: dict[str, Any], slayer: dict[str, Any], kb: dict[str, Any]) -> None:
    if "differs" in case:
        assert case["differs"].strip(), "a difference says why"
        assert kb == case["kb"], "slayer-kb's own answer to a case that differs on purpose"
        assert not agree(slayer, kb), "the case says it differs, but the answers agree: drop 'differs'"
    else:
        assert agree(slayer, kb), f"SLayer 1.4.1: {slayer}\nslayer-kb:   {kb}"


def test_the_set_is_large_enough_and_recorded_whole() -> None:
    assert ANSWERS["slayer"] == "1.4.1"
    assert len(CASES["references"]) >= 60 and len(CASES["queries"]) >= 30
    assert len(ANSWERS["memory"]) == len(STEPS)
    assert set(ANSWERS["references"]) == {c["ref"] for c in CASES["references"]}
    assert set(ANSWERS["queries"]) == {c["id"] for c in CASES["queries"]}


@pytest.mark.parametrize("case", CASES["references"], ids=lambda c: repr(c["ref"]))
def test_reference(resolver: Resolver, case: dict[str, Any]) -> None:
    check(case, ANSWERS["references"][case["ref"]], kb_reference(resolver, case["ref"]))


@pytest.mark.parametrize("case", CASES["queries"], ids=lambda c: c["id"])
def test_query(resolver: Resolver, case: dict[str, Any]) -> None:
    check(case, ANSWERS["queries"][case["id"]], kb_query(resolver, case["query"]))


def kb_step(kb: KnowledgeBase, step: dict[str, Any]) -> dict[str, Any]:
    """slayer-kb's answer to one step of memory_cases.yaml, as its MCP tools give it."""
    try:
        if step["op"] == "save":
            saved = kb.save_memory(step["learning"], step["linked_entities"], id=step.get("id"),
                                   description=step.get("description"))
            return {"memory_id": saved.memory_id, "entities": saved.resolved_entities, "warnings": saved.warnings}
        if step["op"] == "forget":
            return {"deleted_id": kb.forget(str(step["id"])).deleted_id}  # MCP takes a legacy int id
        if step["op"] == "get":
            return {"entities": kb.get(step["id"]).entities}
        found = kb.search(None, step["entities"], datasource=step.get("datasource"),
                          limit=step.get("max_results", 10)).to_json()
        hits = found["memories"] + found["example_queries"]
        return {"entities": found["resolved_input_entities"], "warnings": found["warnings"],
                "memories": sorted(hit["id"] for hit in hits)}
    except KBError as exc:
        return {"error": str(exc)}


def test_memory_steps(tmp_path: Path) -> None:
    # One knowledge base, every step in turn: each step reads what the ones before it wrote.
    root = make_empty_kb(tmp_path / "kb")
    write_catalog(root)
    commit_all(root, "the fidelity catalog")
    kb = KnowledgeBase(root)
    try:
        for index, (step, slayer) in enumerate(zip(STEPS, ANSWERS["memory"], strict=True)):
            kb_answer = kb_step(kb, step)
            if "differs" in step or "error" in slayer or "error" in kb_answer:
                check(step, slayer, kb_answer)
            else:
                assert kb_answer == slayer, f"step {index} {step}\nSLayer 1.4.1: {slayer}\nslayer-kb:   {kb_answer}"
    finally:
        kb.close()
