"""A SLayer storage folder made a knowledge base (docs/format.md, "Bringing a SLayer storage
folder"): SLayer's own ``memories/<n>.md`` are memories of the store not imported yet. No save is
handed their ids, ``validate`` tells two memories under one id from an import left beside its
file, and ``import-slayer`` never replaces a memory that was not made from the file it reads."""

from __future__ import annotations

import json
from pathlib import Path

from slayer_kb import KnowledgeBase
from slayer_kb.ops.interchange import import_slayer
from testing import git, make_team

UNIMPORTED = ("SLayer's memories of this store not imported yet ({}) keep their ids, which no new memory is given; "
              "bring them in with 'slayer-kb import-slayer .'.")


def slayer_file(body: str, created_at: str, entities: str = "") -> str:
    return f"---\n{entities}created_at: '{created_at}'\n---\n\n{body}\n"


def test_a_save_never_takes_the_id_of_slayers_own_memory_file(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """The first save in a storage folder made a KB was handed ``1``, the id of SLayer's 1.md, and
    ``import-slayer .`` then replaced the agent's memory with SLayer's, silently."""
    root = catalog_kb.root
    (root / "memories" / "1.md").write_text(slayer_file("SLayer: orders.amount is gross of VAT", "2026-01-01T00:00:00Z"))
    (root / "memories" / "2.md").write_text(slayer_file("SLayer: status is paid or refunded", "2026-01-02T00:00:00Z"))
    first = json.loads(invoke_cli("--kb", root, "save", "Agent: refunds are negative rows", "-e", "orders.amount",
                                  "--json", cwd=root, check=True).stdout)
    assert (first["memory_id"], first["warnings"]) == ("3", [UNIMPORTED.format("memories/1.md, memories/2.md")])
    second = json.loads(invoke_cli("--kb", root, "save", "Agent: amounts are in EUR", "-e", "orders.amount", "--json",
                                   cwd=root, check=True).stdout)
    assert (second["memory_id"], second["warnings"]) == ("4", [])  # said once: no id skipped this time
    imported = json.loads(invoke_cli("--kb", root, "import-slayer", ".", "--json", cwd=root, check=True).stdout)
    assert (imported["imported"], imported["replaced"], imported["warnings"]) == (["1", "2"], [], [])
    learnings = {i: catalog_kb.get(i).learning for i in "1234"}
    assert learnings == {"1": "SLayer: orders.amount is gross of VAT", "2": "SLayer: status is paid or refunded",
                         "3": "Agent: refunds are negative rows", "4": "Agent: amounts are in EUR"}


def test_a_leased_id_is_never_that_of_slayers_own_memory_file(tmp_path: Path, invoke_cli) -> None:
    _bare, (a,) = make_team(tmp_path, clones=1)
    (a / "memories").mkdir(exist_ok=True)
    (a / "memories" / "1.md").write_text(slayer_file("SLayer's memory one", "2026-01-01T00:00:00Z"))
    saved = json.loads(invoke_cli("--kb", a, "save", "Agent: a note", "-e", "orders", "--json", check=True).stdout)
    assert saved["memory_id"] == "2"
    assert git(a, "ls-remote", "origin", "refs/slayer-kb/ids/*").strip()  # drawn from a leased block


def test_two_memories_under_one_id_keep_both_and_import_again_changes_nothing(
        catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A KB memory 1 an agent saved and SLayer's 1.md beside it (as an older slayer-kb let happen):
    validate said 1.yaml "holds" it and to delete it; import-slayer replaced the agent's memory."""
    kb, root = catalog_kb, catalog_kb.root
    assert kb.save_memory("Agent: refunds are negative rows", ["orders.amount"]).memory_id == "1"
    created = kb.get("1").created_at
    (root / "memories" / "1.md").write_text(slayer_file("SLayer: orders.amount is gross of VAT", "2026-01-01T00:00:00Z"))
    (root / "memories" / "7.md").write_text(
        slayer_file("SLayer: see memory 1", "2026-01-03T00:00:00Z", "entities:\n- memory:1\n"))
    checked = invoke_cli("--kb", root, "validate", "memories/1.md", cwd=root)
    assert checked.stdout.splitlines()[0] == (
        f"memories/1.md:1: is SLayer's memory 1, not the one 1.yaml holds (created {created}, SLayer's "
        "2026-01-01T00:00:00Z): two memories under one id. Keep it: 'slayer-kb import-slayer FOLDER' (the folder "
        "holding memories/) imports it under a new id and says which; delete this file only then")
    said = ("memories/1.md: the knowledge base's memory 1 is another memory (another created_at), which stays; {}, "
            "and the folder's links to it name 2 (see both: 'slayer-kb get 1', 'slayer-kb get 2').")
    imported = json.loads(invoke_cli("--kb", root, "import-slayer", ".", "--json", cwd=root, check=True).stdout)
    assert (sorted(imported["imported"]), imported["replaced"], imported["warnings"]) == (
        ["2", "7"], [], [said.format("imported as memory 2")])
    assert kb.get("1").learning == "Agent: refunds are negative rows"
    assert kb.get("2").learning == "SLayer: orders.amount is gross of VAT"
    assert kb.get("7").entities == ["memory:2"]  # the folder's link follows its memory
    head = git(root, "rev-parse", "HEAD")
    again = json.loads(invoke_cli("--kb", root, "import-slayer", ".", "--json", cwd=root, check=True).stdout)
    assert (again["imported"], sorted(again["unchanged"]), again["commit"]) == ([], ["2", "7"], None)
    assert again["warnings"] == [said.format("it is memory 2, which an earlier import gave it")]
    assert git(root, "rev-parse", "HEAD") == head
    # The team's change to it since is not undone: skipped, as for a memory imported under its own id.
    kb.update("2", description="Gross of VAT, as SLayer stores it")
    third = json.loads(invoke_cli("--kb", root, "import-slayer", ".", "--json", cwd=root, check=True).stdout)
    assert (third["skipped"], third["commit"]) == (1, None)
    assert kb.get("2").description == "Gross of VAT, as SLayer stores it"


def test_import_of_another_folder_never_replaces_the_kbs_own_memory(catalog_kb: KnowledgeBase, tmp_path: Path) -> None:
    kb = catalog_kb
    kb.save_memory("The team's own rule", ["orders.amount"], id="kb.rule")
    (tmp_path / "s" / "memories").mkdir(parents=True)
    (tmp_path / "s" / "memories" / "kb.rule.md").write_text(slayer_file("SLayer's rule", "2026-01-01T00:00:00Z"))
    result = import_slayer(kb, tmp_path / "s")
    assert (result.imported, result.replaced) == (["1"], [])
    assert (kb.get("kb.rule").learning, kb.get("1").learning) == ("The team's own rule", "SLayer's rule")
