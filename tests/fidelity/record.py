"""Record SLayer 1.4.1's own answers for the fidelity set (how slayer_answers.json was made).

Not run by the tests, and SLayer is not a dependency of slayer-kb: run it by hand in a separate
environment that has SLayer installed, from the repository's root::

    python -m venv /tmp/slv && /tmp/slv/bin/pip install motley-slayer==1.4.1
    /tmp/slv/bin/python tests/fidelity/record.py

It writes the catalog of tests/fidelity/catalog.py into a temporary SLayer storage folder and, for
every case of tests/fidelity/cases.yaml, runs what SLayer's ``save_memory`` runs:

- a reference: ``slayer.memories.resolver.resolve_entity(ref, storage=...)``;
- a query: ``SlayerQuery.model_validate(query)``, then
  ``slayer.memories.resolver.extract_entities_from_query(query, storage=...)``.

Each answer is ``{"entities": [...], "warnings": [...]}``, or ``{"error": str(exc), "type":
<exception class>}``; a pydantic refusal adds ``"errors": [{"loc": "time_dimensions[0].dimension",
"msg": "Field required"}, ...]``. The steps of tests/fidelity/memory_cases.yaml run in turn through
SLayer's ``MemoryService`` and ``SearchService`` on a store that starts empty. The answers go to
tests/fidelity/slayer_answers.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from catalog import write_catalog  # noqa: E402


def _loc(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


def error_answer(exc: BaseException) -> dict[str, Any]:
    from pydantic import ValidationError

    answer: dict[str, Any] = {"error": str(exc), "type": type(exc).__name__}
    if isinstance(exc, ValidationError):
        answer["errors"] = [{"loc": _loc(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
        answer["error"] = "\n".join(f"{e['loc']}: {e['msg']}" for e in answer["errors"])
    return answer


async def _record(folder: Path, cases: dict[str, Any]) -> dict[str, Any]:
    from slayer.core.query import SlayerQuery
    from slayer.memories.resolver import extract_entities_from_query, resolve_entity
    from slayer.storage.yaml_storage import YAMLStorage

    storage = YAMLStorage(base_dir=str(folder))
    references: dict[str, Any] = {}
    for case in cases["references"]:
        ref = case["ref"]
        try:
            found = await resolve_entity(ref, storage=storage)
        except Exception as exc:  # noqa: BLE001 - every refusal is an answer
            references[ref] = error_answer(exc)
        else:
            references[ref] = {"entities": found.canonical_forms, "warnings": found.warnings}
    queries: dict[str, Any] = {}
    for case in cases["queries"]:
        try:
            query = SlayerQuery.model_validate(case["query"])
            found = await extract_entities_from_query(query, storage=storage)
        except Exception as exc:  # noqa: BLE001
            queries[case["id"]] = error_answer(exc)
        else:
            queries[case["id"]] = {"entities": found.canonical_forms, "warnings": found.warnings}
    return {"references": references, "queries": queries}


async def _record_memory(folder: Path, steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """SLayer's answer to each step of memory_cases.yaml, on a store that starts empty."""
    from slayer.memories.service import MemoryService
    from slayer.search.service import SearchService
    from slayer.storage.yaml_storage import YAMLStorage

    storage = YAMLStorage(base_dir=str(folder))
    memories, search = MemoryService(storage), SearchService(storage=storage)
    answers: list[dict[str, Any]] = []
    for step in steps:
        try:
            if step["op"] == "save":
                saved = await memories.save_memory(
                    learning=step["learning"], linked_entities=step["linked_entities"],
                    id=step.get("id"), description=step.get("description"),
                )
                answer = {"memory_id": saved.memory_id, "entities": saved.resolved_entities, "warnings": saved.warnings}
            elif step["op"] == "forget":
                answer = {"deleted_id": (await memories.forget_memory(identifier=step["id"])).deleted_id}
            elif step["op"] == "get":
                answer = {"entities": (await storage.get_memory_row(step["id"])).entities}
            else:
                found = await search.search(
                    entities=step["entities"], datasource=step.get("datasource"),
                    max_results=step.get("max_results", 10),
                )
                answer = {
                    "entities": found.resolved_input_entities, "warnings": found.warnings,
                    "memories": sorted(hit.id for hit in found.results if hit.kind == "memory"),
                }
        except Exception as exc:  # noqa: BLE001 - every refusal is an answer
            answer = error_answer(exc)
        answers.append(answer)
    return answers


def main() -> None:
    from importlib.metadata import version

    cases = yaml.safe_load((HERE / "cases.yaml").read_text(encoding="utf-8"))
    steps = yaml.safe_load((HERE / "memory_cases.yaml").read_text(encoding="utf-8"))["steps"]
    with tempfile.TemporaryDirectory() as tmp:
        write_catalog(Path(tmp))
        os.chdir(tmp)  # SLayer's storage writes nothing here, but never into the repository
        answers = asyncio.run(_record(Path(tmp), cases))
    with tempfile.TemporaryDirectory() as tmp:
        write_catalog(Path(tmp))
        os.chdir(tmp)
        answers["memory"] = asyncio.run(_record_memory(Path(tmp), steps))
    out = {"slayer": version("motley-slayer"), **answers}
    (HERE / "slayer_answers.json").write_text(
        json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    print(
        f"{len(answers['references'])} references, {len(answers['queries'])} queries, "
        f"{len(answers['memory'])} memory steps recorded."
    )


if __name__ == "__main__":
    main()
