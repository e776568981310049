"""Catalog cascades (delete-model, delete-datasource, delete-leaf, forget) and prune.

References sit at every depth, next to near-miss names that must survive (``shop.orders_archive``
beside ``shop.orders``, ``shop.orders.amount_wavg`` beside ``shop.orders.amount``, ``memory:X1``
and ``memory:X.y`` beside ``memory:X``). Every memory file is compared byte for byte with what the
cascade must leave: the original text minus exactly the stripped entity lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.ops import cascade
from slayer_kb.store.idtrailer import without_trailer
from testing import commit_all, git, json_of

ARCHIVE_MODEL = """\
name: orders_archive
description: Orders older than two years.
columns:
- {name: id, type: INT}
- {name: amount, type: DOUBLE}
"""

# id -> (lines before the entities, entities, lines after). A memory keeps everything but the
# entity lines a cascade strips; the hand-ordered one (created_at first, a stored query, a
# comment) shows that only the entities block is touched.
MEMORIES: dict[str, tuple[str, list[str], str]] = {
    "1": ("learning: About the whole shop database.\n", ["shop"], ""),
    "2": ("learning: Orders, one row each.\n", ["shop.orders"], ""),
    "3": (
        "learning: |\n  Amounts are in EUR.\n\n  Archive amounts too.\n",
        ["shop.orders.amount", "shop.orders_archive.amount", "wh.orders.amount"],
        "",
    ),
    "4": ("learning: AOV and names.\n", ["shop.orders.aov", "shop.customers.name"], ""),
    "5": ("learning: Weighted amount.\n", ["shop.orders.amount_wavg", "shop.orders.status"], ""),
    "6": ("learning: The archive.\n", ["shop.orders_archive", "shop.orders_archive.id"], ""),
    "X": ("learning: Customers.\n", ["shop.customers"], ""),
    "X1": ("learning: Near miss one.\n", ["wh.shop.orders"], ""),
    "X.y": ("learning: Near miss two.\n", ["wh"], ""),
    "links": (
        "learning: Links to other memories.\n",
        ["memory:X", "memory:X1", "memory:X.y", "shop.orders.status"],
        "",
    ),
    "kb.hand": (
        "created_at: '2026-01-02T03:04:05Z'\n"
        "# written by hand, keys in their own order\n"
        "title: Paid revenue\n"
        "learning: |\n  Paid orders only.\n",
        ["shop.orders.amount", "shop.orders.status", "shop.orders_archive.amount"],
        "query:\n  source_model: orders\n  measures: [sum(amount)]\n  filters:\n  - status = 'paid'\n"
        "type: decision\n",
    ),
}
CREATED = "created_at: '2026-01-01T00:00:00Z'\n"


def memory_text(memory_id: str, stripped: frozenset[str] = frozenset()) -> str:
    before, entities, after = MEMORIES[memory_id]
    kept = [e for e in entities if e not in stripped]
    block = ("entities:\n" + "".join(f"- {e}\n" for e in kept)) if kept else ""
    created = "" if "created_at" in before else CREATED
    return before + block + after + created


@pytest.fixture
def cascade_kb(catalog_kb: KnowledgeBase) -> KnowledgeBase:
    root = catalog_kb.root
    (root / "models" / "shop" / "orders_archive.yaml").write_text(ARCHIVE_MODEL)
    (root / "priority.yaml").write_text("priority:\n- shop\n- wh\n")
    for memory_id in MEMORIES:
        (root / "memories" / f"{memory_id}.yaml").write_text(memory_text(memory_id))
    commit_all(root, "memories at every depth")
    return KnowledgeBase(root)


def assert_memories(root: Path, stripped: set[str], forgotten: str | None = None) -> None:
    for memory_id in MEMORIES:
        path = root / "memories" / f"{memory_id}.yaml"
        if memory_id == forgotten:
            assert not path.exists()
            continue
        assert path.read_text() == memory_text(memory_id, frozenset(stripped)), memory_id


def rewritten_by(stripped: set[str], forgotten: str | None = None) -> list[str]:
    order = ["1", "2", "3", "4", "5", "6", "X", "X.y", "X1", "kb.hand", "links"]
    return [i for i in order if i != forgotten and set(MEMORIES[i][1]) & stripped]


def head_count(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "HEAD").strip())


def committed_clean(root: Path) -> None:
    """The work tree is exactly the commit: nothing half-written, nothing left to stage."""
    assert git(root, "status", "--porcelain") == ""


MODEL_GONE = {"shop.orders", "shop.orders.amount", "shop.orders.aov", "shop.orders.amount_wavg",
              "shop.orders.status"}

TRIGGERS = [
    pytest.param(["delete-model", "orders", "--datasource", "shop"], "shop.orders", MODEL_GONE,
                 "model", id="model"),
    pytest.param(["delete-datasource", "wh"], "wh", {"wh", "wh.orders.amount", "wh.shop.orders"},
                 "datasource", id="datasource"),
    pytest.param(["delete-leaf", "shop.orders.amount"], "shop.orders.amount",
                 {"shop.orders.amount"}, "column", id="column"),
    pytest.param(["delete-leaf", "shop.orders.aov"], "shop.orders.aov", {"shop.orders.aov"},
                 "measure", id="measure"),
    pytest.param(["delete-leaf", "shop.orders.amount_wavg"], "shop.orders.amount_wavg",
                 {"shop.orders.amount_wavg"}, "aggregation", id="aggregation"),
]


@pytest.mark.parametrize(("args", "deleted", "stripped", "kind"), TRIGGERS)
def test_cascade_strips_the_entity_and_everything_under_it_in_one_commit(
    cascade_kb: KnowledgeBase, invoke_cli, args: list[str], deleted: str, stripped: set[str], kind: str
) -> None:
    root = cascade_kb.root
    before = head_count(root)
    proc = invoke_cli("--kb", root, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json_of(proc)
    expected = rewritten_by(stripped)
    # kb.hand's query sums shop.orders.amount: deleting either leaves it stale.
    stale = ["kb.hand"] if deleted in ("shop.orders", "shop.orders.amount") else []
    # ... and its model's measure aov, which sums it, is left broken: said.
    broken = {"broken_definitions": ["models/shop/orders.yaml: measure aov (sum(amount) / count(*))"]}
    assert out == {"deleted": deleted, "commit": git(root, "rev-parse", "HEAD").strip(),
                   "rewritten": expected, "stale_queries": stale, **(broken if deleted == "shop.orders.amount" else {})}
    assert head_count(root) == before + 1
    assert_memories(root, stripped)
    committed_clean(root)
    message = without_trailer(git(root, "log", "-1", "--format=%B"))
    assert message == (
        f"catalog: delete {kind} {deleted}\n\nStripped {deleted} and everything under it from "
        f"{len(expected)} memor{'y' if len(expected) == 1 else 'ies'}: {', '.join(expected)}"
    )
    # The catalog no longer has it, and the files the commit touched are exactly those.
    changed = set(git(root, "show", "--name-only", "--format=", "HEAD").split())
    memory_files = {f"memories/{i}.yaml" for i in expected}
    assert memory_files <= changed
    assert not KnowledgeBase(root).catalog.entity_exists(deleted)


def test_a_delete_names_the_live_example_queries_it_left_stale(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    # The query keeps its text (SLayer's rule); the reply says which now name what was deleted.
    kb, root = catalog_kb, catalog_kb.root
    refunds = {"source_model": "refunds", "measures": ["sum(amount)"]}
    assert kb.save_memory("Refund totals", refunds).memory_id == "1"
    assert kb.save_memory("Refunds are net of fees", ["shop.refunds.amount"]).memory_id == "2"
    assert kb.save_memory("Old refund query", refunds).memory_id == "3"
    kb.forget("3", soft=True)  # search never shows it, so never calls it stale
    proc = invoke_cli("--kb", root, "--json", "delete-model", "shop.refunds")
    assert json_of(proc) == {"deleted": "shop.refunds", "commit": git(root, "rev-parse", "HEAD").strip(),
                             "rewritten": ["1", "2", "3"], "stale_queries": ["1"]}


def test_delete_model_removes_only_its_file(cascade_kb: KnowledgeBase) -> None:
    result = cascade.delete_model(cascade_kb, "shop.orders")
    root = cascade_kb.root
    assert not (root / "models/shop/orders.yaml").exists()
    assert (root / "models/shop/orders_archive.yaml").read_text() == ARCHIVE_MODEL
    assert (root / "models/wh/orders.yaml").exists()
    # A memory left with no entities stays, without an entities key.
    assert "2" in result.rewritten
    assert (root / "memories/2.yaml").read_text() == "learning: Orders, one row each.\n" + CREATED
    assert cascade_kb.get("2").to_dict()["entities"] == []


def test_delete_datasource_removes_its_files_and_priority_entry(cascade_kb: KnowledgeBase) -> None:
    root = cascade_kb.root
    cascade.delete_datasource(cascade_kb, "wh")
    assert not (root / "datasources/wh.yaml").exists()
    assert list((root / "models" / "wh").glob("*.yaml")) == []
    assert (root / "priority.yaml").read_text() == "priority:\n- shop\n"
    changed = git(root, "show", "--name-only", "--format=", "HEAD").split()
    assert "models/wh/orders.yaml" in changed and "datasources/wh.yaml" in changed
    assert "shop" in cascade_kb.catalog.datasources


def test_delete_leaf_cuts_only_the_lines_of_that_item(cascade_kb: KnowledgeBase) -> None:
    path = cascade_kb.root / "models/shop/orders.yaml"
    original = path.read_text()
    cascade.delete_leaf(cascade_kb, "shop.orders.amount_wavg")
    # The only aggregation (a four-line block item) goes and leaves an empty list.
    without_agg = original.replace(
        "aggregations:\n- name: amount_wavg\n  formula: sum(amount * qty) / sum(qty)\n"
        "  params: [weight]\n  description: Amount weighted by quantity\n", "aggregations: []\n")
    assert without_agg != original
    assert path.read_text() == without_agg
    cascade.delete_leaf(cascade_kb, "shop.orders.cost")
    assert path.read_text() == without_agg.replace("- {name: cost, sql: cost, type: DOUBLE}\n", "")


def test_a_flow_priority_list_loses_only_the_item(cascade_kb: KnowledgeBase) -> None:
    # A flow list: the item and the comma before it go, the rest of the file as it was.
    root = cascade_kb.root
    (root / "priority.yaml").write_text("priority: [wh, shop]\n")
    commit_all(root, "flow priority")
    cascade.delete_datasource(KnowledgeBase(root), "shop")
    assert (root / "priority.yaml").read_text() == "priority: [wh]\n"


def test_a_flow_list_loses_only_the_item_its_comments_and_values_kept(cascade_kb: KnowledgeBase) -> None:
    """A model whose columns are a flow list: delete-leaf dumped the whole file again from its data,
    dropping every comment and writing back what the loader read (``{yes: no, on: off, ver: 1.10}``
    became ``{true: false, ver: 1.1}``: two keys one, a version a number). Only the item goes."""
    root = cascade_kb.root
    path = root / "models" / "shop" / "flow.yaml"
    text = ("# kept by hand\nname: flow\nsql_table: flow  # the table\n"
            "columns: [{name: id, type: INT}, {name: gone, type: INT},  # inline\n  {name: last, type: TEXT}]\n"
            "meta: {yes: no, on: off, ver: 1.10}\n")
    path.write_text(text)
    commit_all(root, "a flow-style model")
    cascade.delete_leaf(KnowledgeBase(root), "shop.flow.gone")
    assert path.read_text() == text.replace("{name: gone, type: INT},  # inline\n  ", "")
    cascade.delete_leaf(KnowledgeBase(root), "shop.flow.last")
    assert path.read_text() == text.replace("{name: gone, type: INT},  # inline\n  ", "").replace(
        ", {name: last, type: TEXT}", "")


def test_forget_strips_exactly_memory_x(cascade_kb: KnowledgeBase, invoke_cli) -> None:
    root = cascade_kb.root
    proc = invoke_cli("--kb", root, "forget", "X", "--json")
    assert json_of(proc) == {"deleted_id": "X", "action": "forgotten", "stripped_from": ["links"], "soft": False}
    assert_memories(root, {"memory:X"}, forgotten="X")
    committed_clean(root)


def test_ambiguous_and_unknown_targets_are_refused(cascade_kb: KnowledgeBase, invoke_cli) -> None:
    root = cascade_kb.root
    before = head_count(root)
    cases = [
        (["delete-model", "orders"], "Error: Model 'orders' exists in datasources ['shop', 'wh']; "
         "say which to delete with --datasource or as '<datasource>.orders'."),
        (["delete-model", "nope"],
         "Error: Unknown model 'nope': no datasource has a model of that name."),
        (["delete-datasource", "dw"], "Error: Unknown datasource 'dw'. Known datasources: shop, wh."),
        (["delete-leaf", "shop.orders"],
         "Error: 'shop.orders' is not DS.MODEL.LEAF: give it as the catalog names it, e.g. shop.orders.amount."),
        # A path, an empty or oddly dotted name is named as such (it was "Unknown datasource ''").
        (["delete-model", "../../etc"], "Error: '../../etc' is a path, not a catalog name: give MODEL or "
         "DS.MODEL as the catalog names it, e.g. orders or shop.orders."),
        (["delete-model", "orders", "--datasource", "../wh"], "Error: '../wh' is a path, not a catalog name: "
         "give --datasource DS as the catalog names it, e.g. shop."),
        (["delete-model", " "], "Error: No name given: give MODEL or DS.MODEL, e.g. orders or shop.orders."),
        (["delete-model", "."], "Error: '.' is not MODEL or DS.MODEL: give it as the catalog names it, "
         "e.g. orders or shop.orders."),
        (["delete-model", "shop..orders"], "Error: 'shop..orders' is not MODEL or DS.MODEL: give it as the "
         "catalog names it, e.g. orders or shop.orders."),
        (["delete-datasource", "models/shop"], "Error: 'models/shop' is a path, not a catalog name: give DS "
         "as the catalog names it, e.g. shop."),
        (["delete-datasource", ""], "Error: No name given: give DS, e.g. shop."),
        (["delete-leaf", "..\\shop"], "Error: '..\\\\shop' is a path, not a catalog name: give DS.MODEL.LEAF "
         "as the catalog names it, e.g. shop.orders.amount."),
        (["delete-leaf", "shop.orders.nope"],
         "Error: Model 'shop.orders' has no column, measure or aggregation 'nope'. Its leaves: "
         "['amount', 'amount_wavg', 'aov', 'cost', 'created_at', 'customer_id', 'id', 'qty', "
         "'refunds', 'status']."),
    ]
    for args, error in cases:
        proc = invoke_cli("--kb", root, *args)
        assert (proc.returncode, proc.stderr.strip()) == (1, error)
    proc = invoke_cli("--kb", root, "--json", "delete-model", "../../etc")
    assert json_of(proc) == {"error": {"type": "invalid_input", "message": "'../../etc' is a path, not a catalog "
                                       "name: give MODEL or DS.MODEL as the catalog names it, e.g. orders or shop.orders."}}
    assert head_count(root) == before
    assert_memories(root, set())


def test_human_output(cascade_kb: KnowledgeBase, invoke_cli) -> None:
    proc = invoke_cli("--kb", cascade_kb.root, "delete-leaf", "shop.orders.aov")
    sha = git(cascade_kb.root, "rev-parse", "HEAD").strip()
    assert proc.stdout == f"Deleted leaf shop.orders.aov (commit {sha[:12]}); stripped it from 1 memory: 4\n"
    proc = invoke_cli("--kb", cascade_kb.root, "delete-leaf", "shop.orders.qty")
    assert proc.stdout.endswith("; no memory referred to it.\n")


# -- prune ---------------------------------------------------------------------------------------


def test_prune_strips_what_was_deleted_outside_slayer_kb(cascade_kb: KnowledgeBase, invoke_cli) -> None:
    root = cascade_kb.root
    # A model file deleted by hand and a memory removed with git, as a merge might do.
    git(root, "rm", "-q", "models/shop/orders_archive.yaml", "memories/X1.yaml")
    git(root, "commit", "-q", "-m", "by hand")
    gone = {"shop.orders_archive", "shop.orders_archive.amount", "shop.orders_archive.id",
            "memory:X1"}
    dry = invoke_cli("--kb", root, "prune", "--dry-run", "--json")
    assert json_of(dry) == {
        "commit": None,
        "rewritten": ["3", "6", "kb.hand", "links"],
        "stripped": {"3": ["shop.orders_archive.amount"],
                     "6": ["shop.orders_archive", "shop.orders_archive.id"],
                     "kb.hand": ["shop.orders_archive.amount"], "links": ["memory:X1"]},
        "dry_run": True,
    }
    assert git(root, "status", "--porcelain") == ""
    before = head_count(root)
    proc = invoke_cli("--kb", root, "prune")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(
        "Stripped from memory 3: shop.orders_archive.amount\n"
        "Stripped from memory 6: shop.orders_archive, shop.orders_archive.id\n"
    )
    assert head_count(root) == before + 1
    for memory_id in MEMORIES:
        if memory_id != "X1":
            text = (root / "memories" / f"{memory_id}.yaml").read_text()
            assert text == memory_text(memory_id, frozenset(gone)), memory_id
    again = invoke_cli("--kb", root, "prune")
    assert again.stdout == "Nothing to prune: every reference resolves.\n"
    assert head_count(root) == before + 1


def test_prune_keeps_hand_written_references_that_still_resolve(cascade_kb: KnowledgeBase) -> None:
    root = cascade_kb.root
    path = root / "memories" / "hand2.yaml"
    path.write_text(f"learning: x\nentities:\n- orders.amount\n- shop.gone\n{CREATED}")
    commit_all(root, "hand-written")
    result = cascade.prune(KnowledgeBase(root))
    assert result.stripped == {"hand2": ["shop.gone"]}
    assert path.read_text() == f"learning: x\nentities:\n- orders.amount\n{CREATED}"


def indexed(kb: KnowledgeBase) -> dict[str, dict[str, object]]:
    return {doc["id"]: doc for doc in kb.index.documents(None, limit=None)}


def test_memories_indexed_from_the_cascade_match_a_rebuild(cascade_kb: KnowledgeBase) -> None:
    """A cascade hands the index the memories it rewrote instead of letting it parse them again:
    what it indexed must be exactly what parsing the files gives."""
    cascade_kb.save_memory("Saved with a query.", {"source_model": "orders", "measures": ["amount:sum"]}, id="q")
    cascade_kb.delete_model("orders", datasource="shop")
    cascade_kb.forget("X")
    after_cascade = indexed(cascade_kb)
    assert after_cascade["kb.hand"]["data"]["entities"] == ["shop.orders_archive.amount"]
    cascade_kb.reindex()
    assert indexed(cascade_kb) == after_cascade


def test_the_indexed_memory_stands_in_for_the_file_only_while_the_bytes_match(cascade_kb: KnowledgeBase) -> None:
    import hashlib

    cascade_kb.ensure_fresh()
    path = cascade_kb.root / "memories/2.yaml"
    stored = {**indexed(cascade_kb)["2"]["data"], "learning": "what the index remembers"}
    digest = hashlib.sha1(path.read_bytes()).hexdigest()
    assert cascade_kb.read_with_text("2", (digest, stored))[0].learning == "what the index remembers"
    path.write_text(memory_text("2").replace("one row each", "edited since"))
    memory, text = cascade_kb.read_with_text("2", (digest, stored))
    assert memory.learning == "Orders, edited since." and "edited since" in text


def test_a_file_that_does_not_parse_is_named_where_its_link_stays(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A forget or a rename passed by a memory file it could not read: its link to the memory
    stayed behind a commit that said every link was stripped or rewritten, unsaid."""
    kb = catalog_kb
    root = kb.root
    for memory_id in ("a", "b", "c"):
        (root / "memories" / f"{memory_id}.yaml").write_text(f"learning: Memory {memory_id}.\ncreated_at: '2026-01-01T00:00:00Z'\n")
    # Broken (a key twice), each linking one; another names the link outside its entity list.
    (root / "memories" / "x.yaml").write_text("learning: Links a.\nentities:\n- 'memory:a'\nlearning: twice\n"
                                             "created_at: '2026-01-01T00:00:00Z'\n")
    (root / "memories" / "y.yaml").write_text("learning: Links b.\nentities:\n- memory:b  # why\nlearning: twice\n"
                                             "created_at: '2026-01-01T00:00:00Z'\n")
    (root / "memories" / "z.yaml").write_text("learning: 'memory:a and memory:b in words'\nlearning: twice\n"
                                             "created_at: '2026-01-01T00:00:00Z'\n")
    commit_all(root)
    fix = f"fix the file ('slayer-kb --kb {root} validate' names the problem), then run 'slayer-kb --kb {root} prune'."
    proc = invoke_cli("--kb", root, "forget", "a", check=True)
    assert proc.stdout == f"Forgot memory a\nwarning: memories/x.yaml does not parse, so its link memory:a was not removed: {fix}\n"
    reply = json_of(invoke_cli("--kb", root, "--json", "rename", "b", "kb.b", check=True))
    assert reply["warnings"] == [f"memories/y.yaml does not parse, so its link memory:b was not rewritten: {fix}"]
    # No such file: the replies are as they were, with no warnings key.
    assert json_of(invoke_cli("--kb", root, "--json", "forget", "c", check=True)) == {
        "deleted_id": "c", "action": "forgotten", "stripped_from": [], "soft": False}


def test_delete_leaf_names_the_definitions_it_leaves_broken_and_validate_reports_them(
    indexed_example_kb: KnowledgeBase, invoke_cli
) -> None:
    """Deleting a column the model's measures sum and its join keys on left them naming nothing,
    unsaid, and validate said "no problems"; so did one a custom aggregation's parameter's SQL
    reads (weighted_avg's weight, quantity by default)."""
    root = indexed_example_kb.root
    deleted = invoke_cli("--kb", root, "delete-leaf", "shop.order_items.quantity")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.splitlines()[1:] == [
        "broken catalog definitions (they still read what was deleted, so SLayer cannot run them, and validate "
        "reports them): models/shop/order_items.yaml: measure units_sold (sum(quantity)); "
        "models/shop/order_items.yaml: measure net_item_revenue (sum(quantity * unit_price)); "
        "models/shop/order_items.yaml: aggregation weighted_avg parameter weight (quantity); fix each, or add "
        "the column back"]
    joined = json_of(invoke_cli("--kb", root, "delete-leaf", "shop.orders.customer_id", "--json"))
    assert joined["broken_definitions"] == ["models/shop/orders.yaml: join to customers (customer_id = id)"]
    checked = invoke_cli("--kb", root, "validate", cwd=root)
    said = "which is no column, measure or aggregation of this model; add the column back or fix the"
    assert (checked.returncode, checked.stdout.splitlines()[:4]) == (1, [
        f"models/shop/order_items.yaml:16: catalog: measure units_sold (sum(quantity)) names 'quantity', {said} measure",
        "models/shop/order_items.yaml:17: catalog: measure net_item_revenue (sum(quantity * unit_price)) names "
        f"'quantity', {said} measure",
        "models/shop/order_items.yaml:20: catalog: aggregation weighted_avg parameter weight (quantity) names "
        f"'quantity', {said} aggregation",
        f"models/shop/orders.yaml:28: catalog: join to customers (customer_id = id) names 'customer_id', {said} join"])


def test_delete_leaf_names_the_joins_of_other_models_that_read_it(indexed_example_kb: KnowledgeBase, invoke_cli) -> None:
    """A join pair's second column is its target model's: deleting customers.id left orders'
    join to customers naming nothing, unsaid by delete-leaf and validate alike."""
    root = indexed_example_kb.root
    deleted = json_of(invoke_cli("--kb", root, "delete-leaf", "shop.customers.id", "--json", check=True))
    assert deleted["broken_definitions"] == ["models/shop/orders.yaml: join to customers (customer_id = id)"]
    checked = invoke_cli("--kb", root, "validate", cwd=root)
    assert (checked.returncode, [line for line in checked.stdout.splitlines() if "join to" in line]) == (1, [
        "models/shop/orders.yaml:29: catalog: join to customers (customer_id = id) names 'id', which is no column, "
        "measure or aggregation of model customers; add the column back or fix the join"])


def test_a_measure_reading_through_joins_is_checked_against_the_model_it_reaches(
        indexed_example_kb: KnowledgeBase, invoke_cli) -> None:
    """A dotted name in a measure goes through the model's joins (order_items -> orders ->
    customers): deleting customers.segment left it naming nothing, unsaid by delete-leaf and
    validate, which skipped every dotted name."""
    root = indexed_example_kb.root
    model = root / "models" / "shop" / "order_items.yaml"
    text = model.read_text(encoding="utf-8")
    model.write_text(text.replace("aggregations:\n", "- {name: segments, formula: count_distinct(orders.customers.segment)}\n"
                                  "aggregations:\n", 1), encoding="utf-8")
    commit_all(root, "a measure through two joins")
    deleted = json_of(invoke_cli("--kb", root, "delete-leaf", "shop.customers.segment", "--json", check=True))
    assert deleted["broken_definitions"] == [
        "models/shop/order_items.yaml: measure segments (count_distinct(orders.customers.segment))"]
    checked = invoke_cli("--kb", root, "validate", cwd=root)
    assert (checked.returncode, [line for line in checked.stdout.splitlines() if "segments" in line]) == (1, [
        "models/shop/order_items.yaml:20: catalog: measure segments (count_distinct(orders.customers.segment)) names "
        "'orders.customers.segment', and model customers has no column, measure or aggregation 'segment'; add the "
        "column back or fix the measure"])
