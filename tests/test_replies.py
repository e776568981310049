"""What agents and reviewers read back (issue 30): errors that name the fix, in the same words
from ``save`` and ``validate``; every problem of a file in one run; plurals right."""

from __future__ import annotations

from slayer_kb import KnowledgeBase
from slayer_kb.ops.history import review as kb_review
from testing import commit_all, git

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"
# Bare `orders` means shop.orders (first on the priority list); order_date is a column of wh.orders.
NOT_IN_SHOP = (
    "'order_date' is not a join target on model 'orders'. Looked in datasource 'shop', model "
    "'orders': it has no column, measure or aggregation 'order_date', and no join to a model "
    "'order_date'. Did you mean: wh.orders.order_date?"
)


def test_save_names_where_it_looked_and_what_exists(catalog_kb: KnowledgeBase, run_cli) -> None:
    proc = run_cli("--kb", catalog_kb.root, "save", "Order dates are UTC", "-e", "orders.order_date")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == f"Error: {NOT_IN_SHOP}\n"
    proc = run_cli("--kb", catalog_kb.root, "save", "Amounts are in cents", "-e", "shop.orders.amout")
    assert proc.returncode == 1
    assert proc.stderr == (
        "Error: 'amout' is not a join target on model 'orders'. Looked in datasource 'shop', model "
        "'orders': it has no column, measure or aggregation 'amout', and no join to a model 'amout'. "
        "Did you mean: shop.orders.amount, shop.orders.amount_wavg?\n"
    )
    proc = run_cli("--kb", catalog_kb.root, "save", "Amounts are in cents", "-e", "ordrs.amount")
    assert proc.stderr == (
        "Error: 'ordrs' is neither a known datasource nor a saved model. (segment of 'ordrs.amount'). "
        "Did you mean: shop.orders, wh.orders?\n"
    )


def test_save_of_an_empty_learning_says_so(catalog_kb: KnowledgeBase, run_cli) -> None:
    proc = run_cli("--kb", catalog_kb.root, "save", "")
    assert (proc.returncode, proc.stderr) == (
        1, "Error: learning is empty: write what was learned (it is required and must not be blank).\n"
    )


def test_validate_gives_saves_words_and_no_prune_for_a_typo(catalog_kb: KnowledgeBase, run_cli) -> None:
    (catalog_kb.root / "memories" / "7.yaml").write_text(
        f"learning: Order dates are UTC.\nentities:\n- orders.order_date\n{CREATED}"
    )
    proc = run_cli("validate", "memories/7.yaml", cwd=catalog_kb.root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"memories/7.yaml:3: entity 'orders.order_date' does not resolve: {NOT_IN_SHOP} "
        "(correct it with 'slayer-kb edit 7')",
        "1 problem in 1 file (1 file checked)",
    ]


def test_validate_reports_schema_entity_and_query_problems_in_one_run(
    catalog_kb: KnowledgeBase, run_cli
) -> None:
    # An unknown key, no created_at, an entity that does not resolve and a stale query: all at once.
    (catalog_kb.root / "memories" / "8.yaml").write_text(
        "learning: Paid revenue.\ncolour: red\nentities:\n- shop.orders.nope\n"
        "query:\n  source_model: orders\n  measures: [sum(ghost)]\n"
    )
    proc = run_cli("validate", "memories/8.yaml", cwd=catalog_kb.root)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0] == "memories/8.yaml:1: missing required key: 'created_at' is a required property"
    assert lines[1].startswith("memories/8.yaml:2: unknown key 'colour' (allowed keys: ")
    assert lines[2].startswith("memories/8.yaml:4: entity 'shop.orders.nope' does not resolve: ")
    assert lines[3].startswith("memories/8.yaml:5: attached query has stale references (measures[0] ")
    assert lines[4:] == ["4 problems in 1 file (1 file checked)"]


def test_a_clean_run_counts_in_the_singular(catalog_kb: KnowledgeBase, run_cli) -> None:
    (catalog_kb.root / "memories" / "9.yaml").write_text(
        f"learning: Fine.\nentities:\n- shop.orders.amount\n{CREATED}"
    )
    commit_all(catalog_kb.root)
    proc = run_cli("validate", "memories/9.yaml", cwd=catalog_kb.root)
    assert (proc.returncode, proc.stdout) == (0, "Checked 1 file: no problems.\n")


def test_the_review_comment_lists_every_problem_of_a_file(catalog_kb: KnowledgeBase) -> None:
    kb = catalog_kb
    kb.save_memory("Uses qty", ["orders.qty"])
    base = git(kb.root, "rev-parse", "HEAD").strip()
    (kb.root / "memories" / "9.yaml").write_text(
        "learning: hand written\ncolour: red\nentities:\n- shop.orders.nope\n"
    )
    commit_all(kb.root, "hand")
    problems = kb_review(kb, base).problems
    assert problems[0] == "memories/9.yaml:1: missing required key: 'created_at' is a required property"
    assert problems[1].startswith("memories/9.yaml:2: unknown key 'colour' (allowed keys: ")
    assert problems[2].startswith("memories/9.yaml:4: entity 'shop.orders.nope' does not resolve: 'nope' ")
    assert len(problems) == 3
    markdown = kb_review(kb, base).markdown()
    assert all(f"- {p[:40]}" in markdown.replace("\\", "") for p in problems)
