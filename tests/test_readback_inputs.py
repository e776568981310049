"""What an agent reads back from inputs it got slightly wrong: each refusal names the problem and
the fix, and nothing is written (an adversarial read-back pass)."""

from __future__ import annotations

from slayer_kb import KnowledgeBase
from testing import CliRunner, git


def test_update_refuses_to_replace_an_example_querys_entities(indexed_example_kb: KnowledgeBase,
                                                              invoke_cli: CliRunner) -> None:
    """``update 5 -e wh`` on an example query replaced the entities its query gives with ``wh``,
    unsaid: a search by ``shop.orders.amount`` then missed it while its query still summed the column."""
    kb = indexed_example_kb
    head, before = git(kb.root, "rev-parse", "HEAD"), (kb.root / "memories" / "5.yaml").read_bytes()
    refused = invoke_cli("--kb", kb.root, "update", "5", "-e", "wh")
    assert (refused.returncode, refused.stderr) == (1, (
        "Error: Memory 5 is an example query: its entities are its query's (shop.orders, shop.regions.name, "
        "shop.orders.created_at, shop.orders.amount, shop.orders.status, shop.orders.is_test) and change with it, so "
        f"-e cannot replace them. To change them, save it again with the query changed ('slayer-kb --kb {kb.root} save "
        "--id 5 --query @query.json' with its learning: a save replaces the memory whole); to link other entities, "
        "save a note that links them and memory:5.\n"))
    assert (git(kb.root, "rev-parse", "HEAD"), (kb.root / "memories" / "5.yaml").read_bytes()) == (head, before)
    # Its other fields still change.
    assert invoke_cli("--kb", kb.root, "update", "5", "--description", "Paid revenue by region", check=True).returncode == 0
