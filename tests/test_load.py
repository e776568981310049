"""Load: 8 processes doing 100 mixed operations each at once, every one logged, then the final KB
checked against a model of the operations that completed.

Each process owns its given ids, its topic keys, its auto-id saves (it alone forgets them) and one
cascade model, so the final state of every memory follows from that process's own log order; the
processes still share the lock, the auto-id sequence, the index and HEAD.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from slayer_kb import KnowledgeBase
from testing import commit_all, fsck, git

PROCESSES = 8
OPERATIONS = 100
CASCADE_AT = 50

WORKER = r"""
import json, random, sys, traceback
from slayer_kb import KnowledgeBase
from slayer_kb.core.errors import KBError

root, w, count, cascade_at, log_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
rng = random.Random(w)
kb = KnowledgeBase(root)
autos = []
log = open(log_path, "w", encoding="utf-8")
for n in range(count):
    roll = rng.random()
    own = f"shop.load{w}.c1" if n < cascade_at else "orders.amount"
    if n == cascade_at:
        op = {"op": "delete_model", "model": f"load{w}"}
    elif roll < 0.25:
        op = {"op": "save", "id": None, "learning": f"w{w} auto {n}", "entities": [own]}
    elif roll < 0.45:
        op = {"op": "save", "id": f"p{w}-k{n % 5}", "learning": f"w{w} given {n}", "entities": [own, "orders.amount"]}
    elif roll < 0.62:
        op = {"op": "observe", "topic_key": f"load/w{w}/{n % 3}", "title": f"w{w} topic {n % 3}",
              "content": f"w{w} observation {n}"}
    elif roll < 0.75 and autos:
        op = {"op": "forget", "id": autos.pop(rng.randrange(len(autos))), "soft": rng.random() < 0.3}
    else:
        op = {"op": "search", "question": rng.choice(["auto", "given", f"w{w}", "observation topic", 'a:b "(*'])}
    entry = dict(op)
    try:
        if op["op"] == "save":
            r = kb.save_memory(op["learning"], op["entities"], id=op["id"])
            entry.update(result=r.memory_id, action=r.action, entities=r.resolved_entities)
            if op["id"] is None:
                autos.append(r.memory_id)
        elif op["op"] == "observe":
            r = kb.save_observation(title=op["title"], content=op["content"], topic_key=op["topic_key"],
                                    project="load")
            entry.update(result=r.memory_id, action=r.action)
        elif op["op"] == "forget":
            r = kb.forget(op["id"], soft=op["soft"])
            entry.update(result=r.deleted_id)
        elif op["op"] == "delete_model":
            r = kb.delete_model(op["model"], "shop")
            entry.update(result=r.commit, rewritten=r.rewritten)
        else:
            r = kb.search(op["question"], limit=5)
            entry.update(result=[m["id"] for m in r.memories])
        entry["ok"] = True
    except KBError as exc:
        entry.update(ok=False, kb_error=True, error=f"{type(exc).__name__}: {exc}")
    except BaseException as exc:
        entry.update(ok=False, kb_error=False, error=traceback.format_exc())
    log.write(json.dumps(entry) + "\n")
    log.flush()
"""


def make_load_kb(root: Path) -> None:
    from testing import write_test_catalog

    root.mkdir()
    git(root, "init", "-q")
    write_test_catalog(root, priority=["shop"])
    for w in range(PROCESSES):
        (root / "models" / "shop" / f"load{w}.yaml").write_text(
            f"name: load{w}\nsql_table: public.load{w}\ndata_source: shop\ncolumns:\n"
            "- {name: c1, sql: c1, type: INT}\n"
        )
    (root / "memories").mkdir()
    (root / ".gitignore").write_text(".slayer-kb/\n")
    commit_all(root)
    KnowledgeBase(root).reindex()


def expected_state(logs: list[list[dict[str, Any]]]) -> dict[str, tuple[str, tuple[str, ...], bool]]:
    """id -> (learning, entities, soft-deleted), replaying each process's log in order."""
    state: dict[str, tuple[str, tuple[str, ...], bool]] = {}
    for w, entries in enumerate(logs):
        cascaded = False
        for e in entries:
            if not e["ok"]:
                continue
            if e["op"] == "save":
                entities = tuple(x for x in e["entities"] if not (cascaded and x.startswith(f"shop.load{w}")))
                state[e["result"]] = (e["learning"], entities, False)
            elif e["op"] == "observe":
                state[e["result"]] = (e["content"], (), False)
            elif e["op"] == "forget" and e["soft"]:
                learning, entities, _ = state[e["id"]]
                state[e["id"]] = (learning, entities, True)
            elif e["op"] == "forget":
                del state[e["id"]]
            elif e["op"] == "delete_model":
                cascaded = True
                gone = f"shop.load{w}"
                for mid, (learning, entities, deleted) in list(state.items()):
                    kept = tuple(x for x in entities if x != gone and not x.startswith(gone + "."))
                    state[mid] = (learning, kept, deleted)
    return state


@pytest.mark.slow
# Eight processes, a hundred operations each: 45 s on a quiet machine, over 300 s beside two other full test
# runs (load 20). The bound is for a hang, not a speed.
@pytest.mark.timeout(900)
def test_eight_processes_hundred_mixed_operations(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    make_load_kb(root)
    logs_dir = tmp_path / "logs"
    logs_dir.mkdir()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(root), str(w), str(OPERATIONS), str(CASCADE_AT),
             str(logs_dir / f"{w}.jsonl")],
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(PROCESSES)
    ]
    errors = [p.communicate(timeout=400)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * PROCESSES, errors
    logs = [
        [json.loads(line) for line in (logs_dir / f"{w}.jsonl").read_text().splitlines()]
        for w in range(PROCESSES)
    ]

    # Every operation completed or failed with a KBError (no traceback, no other exception).
    assert [len(entries) for entries in logs] == [OPERATIONS] * PROCESSES
    crashes = [e for entries in logs for e in entries if not e["ok"] and not e["kb_error"]]
    assert crashes == []
    failed = [e for entries in logs for e in entries if not e["ok"]]
    completed = sum(e["ok"] for entries in logs for e in entries)
    counts: dict[str, int] = {}
    for entries in logs:
        for e in entries:
            counts[e["op"]] = counts.get(e["op"], 0) + 1
    print(f"\nload: {completed} of {PROCESSES * OPERATIONS} completed, failed: {failed}, by kind: {counts}")
    # Only the lock timeout could refuse a valid operation here, and it did not.
    assert failed == []

    # Auto ids are distinct: no two creating saves got the same id.
    created = [
        e["result"] for entries in logs for e in entries
        if e["ok"] and e["op"] in ("save", "observe") and e.get("action") == "created" and e.get("id") is None
    ]
    assert len(created) == len(set(created))
    # Each topic key names one memory, revised in place.
    for w, entries in enumerate(logs):
        by_key: dict[str, set[str]] = {}
        for e in entries:
            if e["op"] == "observe":
                by_key.setdefault(e["topic_key"], set()).add(e["result"])
        assert all(len(ids) == 1 for ids in by_key.values()), (w, by_key)

    # The files hold exactly what the completed operations imply.
    expected = expected_state(logs)
    actual = {}
    for path in sorted((root / "memories").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        actual[path.stem] = (doc["learning"], tuple(doc.get("entities") or ()), doc.get("deleted_at") is not None)
    assert actual == expected
    assert not any((root / "models" / "shop" / f"load{w}.yaml").exists() for w in range(PROCESSES))

    # git agrees: a clean tree, a sound repository, one commit per write.
    assert git(root, "status", "--porcelain") == ""
    checked = fsck(root)
    assert checked.returncode == 0 and "error" not in checked.stderr.lower(), checked.stderr
    writes = sum(
        1 for entries in logs for e in entries
        if e["op"] in ("save", "observe", "forget", "delete_model")
    )
    assert int(git(root, "rev-list", "--count", "HEAD").strip()) == writes + 1
    assert list((root / ".slayer-kb" / "tmp").iterdir()) == []

    # The index agrees with the files (a fresh process-independent open).
    with KnowledgeBase(root) as kb:
        live = sorted(mid for mid, (_, _, deleted) in expected.items() if not deleted)
        assert sorted(m["id"] for m in kb.newest(limit=None)) == live
        for w in range(PROCESSES):
            hits = kb.search(f"w{w}", limit=1000, full=True).memories + kb.search(
                f"w{w}", limit=1000, full=True
            ).example_queries
            mine = sorted(mid for mid in live if expected[mid][0].startswith(f"w{w} "))
            assert sorted(h["id"] for h in hits) == mine
            for hit in hits:
                assert hit["learning"] == expected[hit["id"]][0]
        for mid, (learning, _entities, deleted) in expected.items():
            assert kb.get(mid, include_deleted=True).to_dict()["learning"] == learning
            assert (kb.get(mid, include_deleted=True).to_dict()["deleted_at"] is not None) == deleted
