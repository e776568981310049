"""An example query an earlier release took and this one refuses fails no branch that left it alone:
``validate --against`` and the pre-commit hook's validate of a catalog file report it as a warning."""

from __future__ import annotations

from pathlib import Path

from slayer_kb import KnowledgeBase
from testing import commit_all, git

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"
# As an earlier release saved them: it took these queries, this one refuses them.
OLD_QUERIES = {
    "m-cd": ("Repeat buyers", "filters", "count(distinct customer_id) > 5"),
    "m-true": ("True count", "measures", "true:count"),
}
FIX = {
    "m-cd": "filters[0] 'count(distinct customer_id) > 5': 'distinct' names no column: SLayer's memory "
            "resolver reads it as a column in a filter (its engine runs count(distinct ...)); write "
            "'customer_id:count_distinct' or 'count_distinct(customer_id)'.",
    "m-true": "measures[0] 'true:count': 'true' names no column: it is a word of SLayer's formulas (Python's); "
              "name a column before ':' ('*:count' counts rows).",
}


def memory(learning: str, key: str, item: str) -> str:
    return f"learning: {learning}\nquery:\n  source_model: orders\n  {key}:\n  - {item}\n{CREATED}"


def _on_a_branch_adding_a_column(root: Path) -> tuple[Path, str]:
    """The KB's memories committed on main, a branch ``feature`` checked out, and the orders
    model and its text with a column ``note`` added (the caller writes it, changed further or not)."""
    commit_all(root, "saved by an earlier release")
    git(root, "branch", "-M", "main")
    git(root, "checkout", "-q", "-b", "feature")
    model = root / "models" / "shop" / "orders.yaml"
    amount = "- {name: amount, sql: amount, type: DOUBLE, description: Order total in EUR}\n"
    return model, model.read_text(encoding="utf-8").replace(amount, amount + "- {name: note, type: TEXT}\n")


def test_a_query_already_refused_at_the_base_fails_no_branch(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """Upgrading failed every pull request of a team: one that only added a column to a model
    failed CI's 'validate --against origin/main' on memories nobody touched, and the pre-commit
    hook's 'validate models/shop/orders.yaml' blocked every catalog commit."""
    root = catalog_kb.root
    for memory_id, (learning, key, item) in OLD_QUERIES.items():
        (root / "memories" / f"{memory_id}.yaml").write_text(memory(learning, key, item), encoding="utf-8")
    (root / "memories" / "m-fine.yaml").write_text(memory("Fine", "measures", "amount:sum"), encoding="utf-8")
    model, text = _on_a_branch_adding_a_column(root)
    model.write_text(text, encoding="utf-8")

    def warning(memory_id: str, line: int, at: str) -> str:
        return (f"memories/{memory_id}.yaml:{line}: warning: attached query is not a valid SlayerQuery "
                f"({FIX[memory_id]}); fix or remove the query with 'slayer-kb edit {memory_id}'; the query is "
                f"so at {at} already: not this branch's doing, so it fails nothing")

    # The hook, before the commit: the catalog file stands for every memory, compared with HEAD.
    proc = invoke_cli("validate", "models/shop/orders.yaml", cwd=root)
    assert (proc.returncode, proc.stdout.splitlines()) == (0, [
        warning("m-cd", 2, "HEAD"), warning("m-true", 2, "HEAD"), "Checked 3 files: no problems, 2 warnings."])
    commit_all(root, "a column")
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    assert (proc.returncode, proc.stdout.splitlines()) == (0, [
        warning("m-cd", 2, "main"), warning("m-true", 2, "main"), "Checked 3 files: no problems, 2 warnings."])
    # A query the branch writes so still fails; a plain validate checks everything, as before.
    fine = root / "memories" / "m-fine.yaml"
    fine.write_text(memory("Fine", "filters", "count(distinct customer_id) > 5"), encoding="utf-8")
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    assert (proc.returncode, proc.stdout.splitlines()[0], proc.stdout.splitlines()[-1]) == (
        1, f"memories/m-fine.yaml:2: attached query is not a valid SlayerQuery ({FIX['m-cd']}); fix or remove "
        "the query with 'slayer-kb edit m-fine'", "1 problem in 1 file (3 files checked), 2 warnings")
    assert invoke_cli("validate", cwd=root).stdout.splitlines()[-1] == "3 problems in 3 files (3 files checked)"


def test_only_the_same_problem_at_the_base_is_inherited(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """Any problem at the base made the branch's a warning: a branch that dropped a column a query
    reads passed review when that query had another problem at the base (m-two, m-new: only the
    first failing reference was compared; m-shape, m-tick, m-key: a formula, a filter or a key
    SLayer refuses hid the query's other references; m-inside, m-quoted, m-order, m-dim: it hid the
    names inside a refused measure, filter, order item or dimension). A query whose source model was missing at the base failed the branch
    that added the model for a name failing at the base too (m-stores). The same problem with other columns suggested (the
    branch added one spelled alike) or other models listed (the branch added one) is still the
    base's: it failed the branch."""
    root = catalog_kb.root
    memories = root / "memories"
    (memories / "m-two.yaml").write_text(
        "learning: Costs of repeat buyers\nquery:\n  source_model: orders\n  measures:\n  - sum(cost)\n  filters:\n"
        f"  - count(distinct customer_id) > 5\n{CREATED}", encoding="utf-8")
    (memories / "m-nope.yaml").write_text(memory("Nope", "measures", "sum(nope)"), encoding="utf-8")
    # Failing at the base already, each with a message that lists the catalog's models.
    (memories / "m-amb.yaml").write_text(memory("Ambiguous", "measures", "max(name)"), encoding="utf-8")
    (memories / "m-gone.yaml").write_text(memory("Gone", "dimensions", "shop.gone.id"), encoding="utf-8")
    # Stale at the base; the branch breaks its filter too, and the failure names the filter.
    (memories / "m-new.yaml").write_text(
        "learning: New\nquery:\n  source_model: orders\n  measures:\n  - sum(nope)\n  filters:\n  - cost > 1\n"
        f"{CREATED}", encoding="utf-8")
    # Refused whatever the catalog, at the base already (a measure, a filter, a setting and a key):
    # alone (m-src) inherited; beside a filter
    # the branch breaks, failing, named by the filter.
    refused = {"m-src": "", "m-shape": "", "m-tick": "  - \"`status` = 'a'\"\n", "m-key": ""}
    for memory_id, first in refused.items():
        measures = "" if first else "  measures:\n  - cumsum(sum(amount), 1)\n"
        measures = "  limit: many\n  nam: x\n" if memory_id == "m-key" else measures
        filters = "" if memory_id == "m-src" else f"  filters:\n{first}  - cost > 1\n"
        (memories / f"{memory_id}.yaml").write_text(
            f"learning: {memory_id}\nquery:\n  source_model: orders\n{measures}{filters}{CREATED}", encoding="utf-8")
    # Refused at the base, its words unread (a measure SLayer's parser refuses, a filter the
    # scan refuses): the branch breaks a name inside, which fails it, named by the name.
    (memories / "m-inside.yaml").write_text(memory("Inside", "measures", "cumsum(sum(cost), 1)"), encoding="utf-8")
    (memories / "m-quoted.yaml").write_text(memory("Quoted", "filters", "\"`status` = 'a' and cost > 1\""),
                                            encoding="utf-8")
    # Refused at the base by a setting (an order's direction, a dimension's label): the branch
    # breaks the column it names, which fails it, named by the column.
    (memories / "m-order.yaml").write_text(memory("Order", "order", "{column: cost, direction: sideways}"),
                                           encoding="utf-8")
    (memories / "m-dim.yaml").write_text(memory("Dim", "dimensions", "{name: cost, label: 3}"), encoding="utf-8")
    # No model stores at the base, its other words unread: the branch adds the model, and the
    # query fails for a name that failed there too, which is no new failure.
    (memories / "m-stores.yaml").write_text(memory("Stores", "measures", "sum(nope)").replace(
        "source_model: orders", "source_model: stores"), encoding="utf-8")
    model, text = _on_a_branch_adding_a_column(root)
    model.write_text(text.replace("- {name: cost, sql: cost, type: DOUBLE}\n", ""), encoding="utf-8")
    (root / "models" / "shop" / "stores.yaml").write_text(
        "version: 15\nname: stores\nsql_table: stores\ndata_source: shop\ncolumns:\n"
        "- {name: id, type: INT, primary_key: true}\n- {name: name, type: TEXT}\n", encoding="utf-8")
    commit_all(root, "a column added, one dropped, a model added")
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    edit = "fix or remove the query with 'slayer-kb edit"
    inherited = "the query is so at main already: not this branch's doing, so it fails nothing"
    nope = ("attached query has stale references (measures[0] 'sum(nope)': Entity 'nope' not found in any "
            "datasource (checked all known datasources). Did you mean: shop.orders.note?)")
    cost = "'cost > 1': Entity 'cost' not found in any datasource (checked all known datasources).)"
    cumsum = ("attached query is not a valid SlayerQuery (measures[0].formula: Invalid Mode-B expression "
              "'cumsum(sum(amount), 1)': Transform 'cumsum' accepts exactly one positional argument (the value "
              "to transform); it takes no settings: write cumsum(value).)")
    assert (proc.returncode, proc.stdout.splitlines()) == (1, [
        "memories/m-dim.yaml:2: attached query has stale references (dimensions[0]: Entity 'cost' not found in any "
        f"datasource (checked all known datasources).); {edit} m-dim'",
        "memories/m-inside.yaml:2: attached query has stale references (measures[0] 'cumsum(sum(cost), 1)': Entity "
        f"'cost' not found in any datasource (checked all known datasources).); {edit} m-inside'",
        f"memories/m-key.yaml:2: attached query has stale references (filters[0] {cost}; {edit} m-key'",
        f"memories/m-new.yaml:2: attached query has stale references (filters[0] {cost}; {edit} m-new'",
        "memories/m-order.yaml:2: attached query has stale references (order[0].column: Entity 'cost' not found in "
        f"any datasource (checked all known datasources).); {edit} m-order'",
        "memories/m-quoted.yaml:2: attached query has stale references (filters[0] \"`status` = 'a' and cost > 1\": "
        f"Entity 'cost' not found in any datasource (checked all known datasources).); {edit} m-quoted'",
        f"memories/m-shape.yaml:2: attached query has stale references (filters[0] {cost}; {edit} m-shape'",
        f"memories/m-tick.yaml:2: attached query has stale references (filters[1] {cost}; {edit} m-tick'",
        "memories/m-two.yaml:2: attached query has stale references (measures[0] 'sum(cost)': Entity 'cost' not "
        f"found in any datasource (checked all known datasources).); {edit} m-two'",
        "memories/m-amb.yaml:2: warning: attached query has stale references (measures[0] 'max(name)': Ambiguous "
        "bare name 'name' matches columns / measures / aggregations on ['countries', 'customers', 'regions', "
        f"'stores'] in datasource 'shop'. Qualify as '<model>.name'.); {edit} m-amb'; {inherited}",
        "memories/m-gone.yaml:2: warning: attached query has stale references (dimensions[0]: No model 'gone' in "
        "datasource 'shop'. Its models: ['countries', 'customers', 'orders', 'refunds', 'regions', 'stores'].); "
        f"{edit} m-gone'; {inherited}",
        f"memories/m-nope.yaml:2: warning: {nope}; {edit} m-nope'; {inherited}",
        f"memories/m-src.yaml:2: warning: {cumsum}; {edit} m-src'; {inherited}",
        f"memories/m-stores.yaml:2: warning: {nope}; {edit} m-stores'; {inherited}",
        "9 problems in 9 files (14 files checked), 5 warnings"])
