"""validate, fmt and the JSON Schema: exact ``path:line: message`` output on real files."""

from __future__ import annotations

import json
import shlex
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import jsonschema
import pytest
import yaml

from slayer_kb import KnowledgeBase
from slayer_kb.catalog.slayerquery import check_query
from slayer_kb.core import yamlio
from slayer_kb.core.errors import KBError
from slayer_kb.core.memory import TIME_KEYS
from slayer_kb.ops.schema_words import SCHEMA_PATH, read_times
from slayer_kb.ops.snapshot import catalog_at, deleted_entities
from slayer_kb.ops.timechecks import future_times
from slayer_kb.ops.validate import validate
from testing import EXAMPLE_KB, CliRunner, commit_all, counted_apart, git, json_of

CREATED = "created_at: '2026-01-01T00:00:00Z'\n"
GOOD = f"learning: Fine.\nentities:\n- shop.orders.amount\n{CREATED}"


def write(kb: KnowledgeBase, name: str, text: str) -> Path:
    path = kb.root / "memories" / name
    path.write_text(text)
    return path


def test_the_example_kb_is_valid_and_canonical(example_kb: KnowledgeBase, invoke_cli) -> None:
    proc = invoke_cli("--kb", example_kb.root, "validate")
    count = len(list((example_kb.root / "memories").glob("*.yaml")))
    count += len(list((example_kb.root / "sessions").glob("*.yaml")))  # sessions.py's files
    assert (proc.returncode, proc.stdout) == (0, f"Checked {count} files: no problems.\n")
    proc = invoke_cli("--kb", example_kb.root, "fmt", "--check")
    assert (proc.returncode, proc.stdout) == (0, f"0 of {count} files need formatting\n")


def test_every_kind_of_problem_is_reported_at_its_line(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    write(catalog_kb, "ok.yaml", GOOD)
    write(catalog_kb, "bad-yaml.yaml", "learning: [unclosed\n" + CREATED)
    write(catalog_kb, "schema.yaml",
          f"learning: x\nscope: team\nid: 7\nrevision_count: 0\n{CREATED}")
    write(catalog_kb, "refs.yaml",
          "learning: x\nentities:\n- shop.orders.amount\n- shop.orders.nope\n- memory:ghost\n"
          f"- orders.status\n{CREATED}")
    write(catalog_kb, "pattern.yaml", f"learning: x\nentities:\n- shop\n- shop..x\n{CREATED}")
    write(catalog_kb, "refs2.yaml",
          f"learning: x\nentities:\n- memory:ok\n- shop.orders.nope\n- shop\n- shop\n{CREATED}")
    write(catalog_kb, "order.yaml", f"{CREATED}learning: Fine.\n")
    write(catalog_kb, "time.yaml", "learning: x\ncreated_at: 2026-01-01T00:00:00Z\n")
    write(catalog_kb, "Ok.yaml", GOOD)
    write(catalog_kb, "-dash.yaml", GOOD)
    write(catalog_kb, "note.yml", GOOD)
    write(catalog_kb, "list.yaml", "- learning: x\n")
    write(catalog_kb, "types.yaml", f"learning: x\nentities: shop.orders\ntitle: [1]\n{CREATED}")
    proc = invoke_cli("--kb", catalog_kb.root, "validate", cwd=catalog_kb.root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "memories/-dash.yaml:1: the file name is the id: Memory id '-dash' starts with '-', which "
        "would make a hidden file or look like a command-line option; start it with a letter or "
        "digit.",
        "memories/Ok.yaml:1: id 'Ok' differs only in letter case from ok: they collide on macOS "
        "and Windows checkouts; rename one: slayer-kb rename Ok Ok-2 (it rewrites the memory:Ok links; where the "
        "two share one file, as on macOS, run git checkout HEAD -- memories/Ok.yaml before it and git checkout HEAD "
        "-- memories/ok.yaml after it)",
        "memories/bad-yaml.yaml:2: invalid YAML: did not find expected ',' or ']'",
        "memories/list.yaml:1: a memory file must be a mapping of keys (learning:, entities:, ...)",
        "memories/note.yml:1: slayer-kb reads only .yaml files in memories/; rename it to note.yaml",
        "memories/ok.yaml:1: id 'ok' differs only in letter case from Ok: they collide on macOS "
        "and Windows checkouts; rename one: slayer-kb rename ok ok-2 (it rewrites the memory:ok links; where the "
        "two share one file, as on macOS, run git checkout HEAD -- memories/ok.yaml before it and git checkout HEAD "
        "-- memories/Ok.yaml after it)",
        "memories/order.yaml:1: not in canonical form; run 'slayer-kb fmt memories/order.yaml'",
        "memories/pattern.yaml:4: entities[1]: 'shop..x' is not an entity reference (<ds>, "
        "<ds>.<model>, <ds>.<model>.<leaf> or memory:<id>)",
        "memories/refs.yaml:4: entity 'shop.orders.nope' does not resolve: "
        "Unknown field 'nope' on model 'orders' (datasource 'shop'): no column, measure or aggregation of that "
        "name, and 'nope' is not a join target on model 'orders'. "
        "(correct it with 'slayer-kb edit refs', or, if the catalog dropped it, strip it with 'slayer-kb prune')",
        "memories/refs.yaml:5: 'memory:ghost' refers to a memory that does not exist (run "
        "'slayer-kb prune' to strip it)",
        "memories/refs.yaml:6: entity 'orders.status' is not canonical; write 'shop.orders.status'",
        "memories/refs2.yaml:4: entity 'shop.orders.nope' does not resolve: "
        "Unknown field 'nope' on model 'orders' (datasource 'shop'): no column, measure or aggregation of that "
        "name, and 'nope' is not a join target on model 'orders'. "
        "(correct it with 'slayer-kb edit refs2', or, if the catalog dropped it, strip it with 'slayer-kb prune')",
        "memories/refs2.yaml:6: entity 'shop' is listed twice; keep one",
        "memories/schema.yaml:2: 'scope' must be project or personal, not 'team'",
        "memories/schema.yaml:3: unknown key 'id' (the file name is the id; remove the id key)",
        "memories/schema.yaml:4: 'revision_count' must be at least 1, not 0",
        "memories/time.yaml:2: not in canonical form; run 'slayer-kb fmt memories/time.yaml'",
        "memories/types.yaml:2: 'entities' must be a list, not a string",
        "memories/types.yaml:3: 'title' must be a string, not a list",
        "19 problems in 13 files (13 files checked)",
    ]
    out = json_of(invoke_cli("--kb", catalog_kb.root, "validate", "--json", "memories/refs2.yaml",
                          cwd=catalog_kb.root))
    assert out["ok"] is False and out["checked"] == 1
    assert out["problems"][0] == {
        "path": "memories/refs2.yaml", "line": 4,
        "message": "entity 'shop.orders.nope' does not resolve: "
                   "Unknown field 'nope' on model 'orders' (datasource 'shop'): no column, measure or aggregation of that "
                   "name, and 'nope' is not a join target on model 'orders'. "
                   "(correct it with 'slayer-kb edit refs2', or, if the catalog dropped it, strip it with 'slayer-kb prune')",
        "kind": None,
    }


def test_fields_over_a_saves_limits_are_problems_told_without_their_value(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A hand edit's 3,000-character title, type, project or topic key passed, though a save
    refuses them; a description over its limit was told with all 3,000 characters of it."""
    write(catalog_kb, "1.yaml", f"title: {'t' * 1001}\ntype: {'y' * 201}\nlearning: Fine.\ndescription: {'d' * 3000}\n"
                                f"project: {'p' * 201}\ntopic_key: {'k' * 201}\n{CREATED}")
    proc = invoke_cli("--kb", catalog_kb.root, "validate", cwd=catalog_kb.root)
    fix = "shorten it (put the detail in the learning)"
    assert (proc.returncode, proc.stdout) == (1, (
        f"memories/1.yaml:1: 'title' is 1001 characters long; the limit is 1000: {fix}\n"
        f"memories/1.yaml:2: 'type' is 201 characters long; the limit is 200: {fix}\n"
        f"memories/1.yaml:4: 'description' is 3000 characters long; the limit is 500: {fix}\n"
        f"memories/1.yaml:5: 'project' is 201 characters long; the limit is 200: {fix}\n"
        f"memories/1.yaml:6: 'topic_key' is 201 characters long; the limit is 200: {fix}\n"
        "5 problems in 1 file (1 file checked)\n"))


def test_a_catalog_file_stands_for_every_memory_of_its_kb(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    write(catalog_kb, "a.yaml", GOOD)
    (catalog_kb.root / "models/shop/orders.yaml").unlink()
    (catalog_kb.root / "models/shop/regions.yaml").write_text("columns: 3\n")
    proc = invoke_cli("validate", "models/shop/customers.yaml", cwd=catalog_kb.root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "memories/a.yaml:3: entity 'shop.orders.amount' does not resolve: No model 'orders' in "
        "datasource 'shop'. Its models: ['countries', 'customers', 'refunds']. "
        # Deleted and not committed: prune would refuse, so the fix comes first.
        "(first: models/shop/orders.yaml is missing from the work tree, and HEAD still has it: a deletion (or a "
        "move) that is not committed. Bring the file back (git checkout HEAD -- models/shop/orders.yaml), or "
        "commit the deletion (git rm models/shop/orders.yaml; git commit); then "
        "correct it with 'slayer-kb edit a', or, if the catalog dropped it, strip it with 'slayer-kb prune')",
        "models/shop/regions.yaml:1: catalog: 'columns' must be a list of mappings with a 'name', "
        "got a number",
        "2 problems in 2 files (1 file checked)",
    ]


def test_fmt_rewrites_into_canonical_form_and_check_reports(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    path = write(catalog_kb, "a.yaml",
                 "created_at: 2026-01-01T00:00:00Z\nentities: [shop.orders]\nlearning: |-\n  two\n  lines\n")
    broken = write(catalog_kb, "b.yaml", "learning: x\n")
    check = invoke_cli("fmt", "--check", "memories", cwd=catalog_kb.root)
    assert check.returncode == 1
    assert check.stdout.splitlines() == [
        "memories/b.yaml:1: missing required key 'created_at' (add created_at: "
        "'YYYY-MM-DDTHH:MM:SSZ'); fix it by hand",
        "would reformat memories/a.yaml",
        "1 of 2 files need formatting",
    ]
    assert path.read_text().startswith("created_at: 2026")
    invoke_cli("fmt", "memories/a.yaml", cwd=catalog_kb.root, check=True)
    assert path.read_text() == "learning: |-\n  two\n  lines\nentities:\n- shop.orders\n" + CREATED
    assert broken.read_text() == "learning: x\n"
    again = invoke_cli("fmt", "--check", "memories/a.yaml", cwd=catalog_kb.root)
    assert (again.returncode, again.stdout) == (0, "0 of 1 files need formatting\n")


def test_against_reports_auto_ids_both_branches_allocated(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    root = catalog_kb.root
    write(catalog_kb, "1.yaml", GOOD)
    commit_all(root, "base")
    git(root, "branch", "-M", "main")
    git(root, "checkout", "-q", "-b", "feature")
    write(catalog_kb, "2.yaml", "learning: Feature's two.\n" + CREATED)
    write(catalog_kb, "3.yaml", "learning: Same on both.\n" + CREATED)
    write(catalog_kb, "kb.named.yaml", "learning: Named.\n" + CREATED)
    commit_all(root, "feature")
    git(root, "checkout", "-q", "main")
    write(catalog_kb, "2.yaml", "learning: Main's two.\n" + CREATED)
    write(catalog_kb, "3.yaml", "learning: Same on both.\n" + CREATED)
    write(catalog_kb, "kb.named.yaml", "learning: Other named.\n" + CREATED)
    commit_all(root, "main moved on")
    git(root, "checkout", "-q", "feature")
    plain = invoke_cli("validate", cwd=root)
    assert plain.returncode == 0, plain.stdout
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "memories/2.yaml:1: id '2' was added on this branch, but main already uses it for "
        "another memory; run 'slayer-kb renumber --onto main' to give this branch's memory a "
        "fresh id and rewrite its memory:2 references, in one commit",
        # A named id both sides added for different memories: git's merge stops on it.
        "memories/kb.named.yaml:1: main wrote this memory too since this branch parted from it, in lines git's "
        "merge cannot join: a plain git merge of this branch stops on it. Run 'slayer-kb merge main': it merges "
        "both sides' revisions of a topic key, and fields each side changed alone, and stops on two edits of one "
        "field (two memories under one id among them) with the steps to merge by hand",
        "2 problems in 2 files (3 files checked)",
    ]
    # From outside the KB, the command names it.
    proc = invoke_cli("validate", "--against", "main", "kb/memories/2.yaml", cwd=root.parent)
    assert proc.stdout.splitlines()[0] == (
        "kb/memories/2.yaml:1: id '2' was added on this branch, but main already uses it for "
        "another memory; run 'slayer-kb --kb kb renumber --onto main' to give this branch's "
        "memory a fresh id and rewrite its memory:2 references, in one commit"
    )
    # Doing what it says leaves nothing to report.
    invoke_cli("renumber", "--onto", "main", cwd=root, check=True)
    (root / "memories" / "kb.named.yaml").unlink()
    commit_all(root, "main names it")
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    assert (proc.returncode, proc.stdout) == (0, "Checked 2 files: no problems.\n")


def test_against_names_two_new_memories_under_one_named_id_as_merge_does(catalog_kb: KnowledgeBase,
                                                                         invoke_cli: CliRunner) -> None:
    # Before: "main wrote this memory too ... Run 'slayer-kb merge main'", as for one memory edited
    # on both sides; merge then stops on two memories given one new id, naming a rename.
    root = catalog_kb.root
    write(catalog_kb, "1.yaml", GOOD)
    commit_all(root, "base")
    git(root, "branch", "-M", "main")
    git(root, "checkout", "-q", "-b", "feature")
    write(catalog_kb, "kb.conventions.yaml", "learning: Feature's conventions.\ncreated_at: '2026-01-02T00:00:00Z'\n")
    write(catalog_kb, "kb.linking.yaml", "learning: Links them.\nentities:\n- memory:kb.conventions\n" + CREATED)
    commit_all(root, "feature")
    git(root, "checkout", "-q", "main")
    write(catalog_kb, "kb.conventions.yaml", "learning: Main's conventions.\n" + CREATED)
    commit_all(root, "main")
    git(root, "checkout", "-q", "feature")
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    assert (proc.returncode, proc.stdout.splitlines()) == (1, [
        "memories/kb.conventions.yaml:1: this branch saved a new memory as kb.conventions (created "
        "2026-01-02T00:00:00Z), and main saved a new memory as kb.conventions (created 2026-01-01T00:00:00Z): two "
        "memories given one new id, and a link to kb.conventions means a different one on each side; a plain git "
        "merge of this branch stops on it, and slayer-kb merge keeps main's kb.conventions. Run 'slayer-kb rename "
        "kb.conventions kb.conventions-2' (or another id: it rewrites this branch's links to it), then 'slayer-kb "
        "merge main'",
        "1 problem in 1 file (2 files checked)",
    ])
    # merge says the same, and its fix, as validate gives it, leaves nothing to report.
    refused = invoke_cli("merge", "main", cwd=root)
    assert "two memories given one new id" in refused.stderr and "rename kb.conventions kb.conventions-2" in refused.stderr
    invoke_cli("rename", "kb.conventions", "kb.conventions-2", cwd=root, check=True)
    invoke_cli("merge", "main", cwd=root, check=True)
    assert yaml.safe_load((root / "memories" / "kb.linking.yaml").read_text())["entities"] == ["memory:kb.conventions-2"]
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    assert (proc.returncode, proc.stdout) == (0, "Checked 2 files: no problems.\n")
    # An unknown revision is named as such, as review and renumber name it.
    for command in (["validate", "--against", "nope"], ["review", "nope"], ["renumber", "--onto", "nope"]):
        bad = invoke_cli(*command, cwd=root)
        assert (bad.returncode, bad.stderr) == (
            1, "Error: Unknown revision 'nope': give a commit, branch or tag (see 'git log').\n")


def test_against_checks_only_what_the_branch_changed(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """With --against, a whole-KB validate checks the files the branch changed (committed or not)
    and every holder of a topic key; a catalog change or a removed memory checks every file."""
    root = catalog_kb.root
    write(catalog_kb, "1.yaml", GOOD)
    write(catalog_kb, "2.yaml", "learning: Broken on main.\nentities:\n- shop.orders.nope\n" + CREATED)
    write(catalog_kb, "3.yaml", f"learning: Keyed.\ntopic_key: decision/retry\n{CREATED}")
    commit_all(root, "base")
    git(root, "branch", "-M", "main")
    git(root, "checkout", "-q", "-b", "feature")
    write(catalog_kb, "4.yaml", GOOD)
    commit_all(root, "feature")
    write(catalog_kb, "5.yaml", f"learning: Keyed again.\ntopic_key: decision/retry\n{CREATED}")  # untracked
    twice = ("topic_key 'decision/retry' is held by 2 memories (3, 5); a save under the key revises only the "
             "newest. Keep one: merge their learnings into it and forget the others ('slayer-kb forget ID'), "
             "or give each its own topic_key")
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    # 2.yaml's problem came from main, where it was checked; the key held twice needs 3.yaml too.
    assert (proc.returncode, proc.stdout.splitlines()) == (1, [
        f"memories/3.yaml:1: {twice}", f"memories/5.yaml:1: {twice}", "2 problems in 2 files (2 files checked)"])
    (root / "memories" / "5.yaml").unlink()
    everything = invoke_cli("validate", cwd=root)
    assert everything.stdout.splitlines()[-1] == "1 problem in 1 file (4 files checked)"
    # A removed memory may leave references dangling: every file is checked again.
    git(root, "rm", "-q", "memories/1.yaml")
    assert invoke_cli("validate", "--against", "main", cwd=root).stdout.splitlines()[-1] == (
        "1 problem in 1 file (3 files checked)")
    git(root, "checkout", "-q", "HEAD", "--", "memories/1.yaml")
    # So does a changed priority list, committed or not: any unqualified reference may move.
    priority = root / "priority.yaml"
    priority.write_text(priority.read_text() + "\n", encoding="utf-8")
    assert invoke_cli("validate", "--against", "main", cwd=root).stdout.splitlines()[-1] == (
        "1 problem in 1 file (4 files checked)")


def test_against_a_changed_model_checks_the_memories_it_reaches(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A branch that changes a model file checks the memories linking an entity of that model
    (by its name where the branch parted and now) and those holding a query, not every memory:
    at 10,000 memories, a pull request that described one column checked them all."""
    root = catalog_kb.root
    write(catalog_kb, "1.yaml", GOOD)
    write(catalog_kb, "2.yaml", "learning: Broken on main.\nentities:\n- shop.orders.nope\n" + CREATED)
    # Not in canonical form (a comment fmt drops): said on main, and not again for a model's change.
    write(catalog_kb, "3.yaml", f"# by hand\nlearning: Billing city.\nentities:\n- shop.customers.city\n{CREATED}")
    write(catalog_kb, "4.yaml", "learning: Orders by city.\nentities:\n- shop.orders\nquery:\n"
                                "  source_model: orders\n  dimensions:\n  - customers.city\n" + CREATED)
    commit_all(root, "base")
    git(root, "branch", "-M", "main")
    git(root, "checkout", "-q", "-b", "feature")
    model = root / "models" / "shop" / "customers.yaml"
    text = model.read_text(encoding="utf-8")
    model.write_text(text.replace("- {name: city, type: TEXT, description: Billing city}\n", ""), encoding="utf-8")
    commit_all(root, "customers: no city")
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    # 1.yaml and 2.yaml link only shop.orders, which the branch left alone (2.yaml's problem
    # came from main, where it was checked); 4.yaml's query reaches customers through a join.
    # Of 3.yaml and 4.yaml, which the branch left alone too, only the references are checked.
    assert (proc.returncode, proc.stdout.splitlines()[-1]) == (1, "2 problems in 2 files (2 files checked)")
    assert [line.split(":")[0] for line in proc.stdout.splitlines()[:-1]] == ["memories/3.yaml", "memories/4.yaml"]
    assert "shop.customers.city" in proc.stdout.splitlines()[0]
    # A model renamed in its file: the memories linking its old name are reached, uncommitted too.
    model.write_text(text.replace("name: customers\n", "name: clients\n"), encoding="utf-8")
    # A folder the catalog does not read (its name no datasource's), whose name would break git grep.
    (root / "models" / "a(b").mkdir()
    (root / "models" / "a(b" / "x.yaml").write_text("name: x\n", encoding="utf-8")
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    assert [line.split(":")[0] for line in proc.stdout.splitlines()[:-1]] == [
        "memories/3.yaml", "memories/4.yaml", "models/a(b"]
    assert proc.stdout.splitlines()[-1] == "3 problems in 3 files (2 files checked)"


def test_against_looks_for_twins_only_of_the_branchs_keys(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A key held twice where the branch parted was checked there: --against reports twins
    only of keys the branch's own files hold (and reads no other file for them)."""
    root = catalog_kb.root
    for name in ("1.yaml", "2.yaml"):
        write(catalog_kb, name, f"learning: Keyed {name}.\ntopic_key: decision/retry\n{CREATED}")
    commit_all(root, "twins on main")
    git(root, "branch", "-M", "main")
    git(root, "checkout", "-q", "-b", "feature")
    write(catalog_kb, "3.yaml", GOOD)
    proc = invoke_cli("validate", "--against", "main", cwd=root)
    assert (proc.returncode, proc.stdout) == (0, "Checked 1 file: no problems.\n")
    assert invoke_cli("validate", cwd=root).stdout.splitlines()[-1] == "2 problems in 2 files (3 files checked)"
    write(catalog_kb, "3.yaml", f"learning: Keyed too.\ntopic_key: decision/other\n{CREATED}")
    write(catalog_kb, "4.yaml", f"learning: Keyed again.\ntopic_key: decision/other\n{CREATED}")
    twice = invoke_cli("validate", "--against", "main", cwd=root).stdout.splitlines()
    assert [line.split(":")[0] for line in twice] == [
        "memories/1.yaml", "memories/2.yaml", "memories/3.yaml", "memories/4.yaml", "4 problems in 4 files (2 files checked)"]


def test_against_main_where_the_branch_is_master(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    root = catalog_kb.root
    write(catalog_kb, "1.yaml", GOOD)
    commit_all(root, "one")
    assert git(root, "symbolic-ref", "--short", "HEAD") == "master\n"
    for command in (["validate", "--against", "main"], ["review", "main"]):
        proc = invoke_cli(*command, cwd=root)
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            1, "", "Error: Unknown revision 'main': give a commit, branch or tag (see 'git log').\n")


def test_one_run_reports_what_search_warns_about(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """Stale example queries (after a cascade, or a priority list gone), tags that no longer
    resolve and ids --against REF uses: every file's every problem, in one run."""
    kb, root = catalog_kb, catalog_kb.root
    assert kb.save_memory("Paid orders", ["orders.status"]).memory_id == "1"
    git(root, "switch", "-q", "-c", "feature")
    refunds = {"source_model": "refunds", "measures": ["sum(amount)"]}
    by_status = {"source_model": "orders", "dimensions": ["status"], "measures": ["sum(amount)"]}
    assert kb.save_memory("Refund totals", refunds).memory_id == "2"
    assert kb.save_memory("Revenue by status", by_status).memory_id == "3"
    assert kb.save_memory("Customers by region", ["customers.region_id"]).memory_id == "4"
    assert kb.save_memory("Old refund query", refunds).memory_id == "5"
    kb.forget("5", soft=True)  # search never shows it, so it never warns about it
    kb.delete_model("shop.refunds")
    git(root, "rm", "-q", "models/shop/customers.yaml", "priority.yaml")
    git(root, "commit", "-q", "-m", "drop customers and the priority list by hand")
    # A query key SlayerQuery does not have, written by hand (save refuses it).
    write(kb, "6.yaml", "learning: Misspelt\nquery:\n  source_model: shop.orders\n  measurez:\n"
                        f"  - sum(amount)\n{CREATED}")
    commit_all(root, "a hand-written query")
    other = root.parent / "master-worktree"
    git(root, "worktree", "add", "-q", str(other), "master")
    counted_apart(other)  # as another clone: the worktrees' shared count forgotten
    assert KnowledgeBase(other).save_memory("Master's two", ["orders.amount"]).memory_id == "2"
    fresh = KnowledgeBase(root)
    warnings = fresh.search("refund totals revenue status", limit=10).warnings
    stale = {w.split()[1].rstrip(":"): w for w in warnings if "stale" in w}
    assert sorted(stale) == ["memory:2", "memory:3"]
    # validate gives search's reason, word for word, with the fix.
    reasons = {k: w.split(" has stale references (", 1)[1].rsplit("); re-save to clean.", 1)[0]
               for k, w in stale.items()}
    assert "'refunds'" in reasons["memory:2"]
    assert "'orders'" in reasons["memory:3"] and "priority" in reasons["memory:3"]
    with pytest.raises(KBError) as unresolved:
        fresh.resolver().resolve("shop.customers.region_id")
    with pytest.raises(KBError) as misspelt:
        check_query({"source_model": "shop.orders", "measurez": ["sum(amount)"]})
    assert "measurez" in str(misspelt.value) and "'measures'" in str(misspelt.value)
    proc = invoke_cli("validate", "--against", "master", cwd=root)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "memories/2.yaml:1: id '2' was added on this branch, but master already uses it for "
        "another memory; run 'slayer-kb renumber --onto master' to give this branch's memory a "
        "fresh id and rewrite its memory:2 references, in one commit",
        f"memories/2.yaml:2: attached query has stale references ({reasons['memory:2']}); fix or "
        "remove the query with 'slayer-kb edit 2'",
        f"memories/3.yaml:6: attached query has stale references ({reasons['memory:3']}); fix or "
        "remove the query with 'slayer-kb edit 3'",
        f"memories/4.yaml:3: entity 'shop.customers.region_id' does not resolve: {unresolved.value} "
        "(correct it with 'slayer-kb edit 4', or, if the catalog dropped it, strip it with 'slayer-kb prune')",
        f"memories/6.yaml:2: attached query is not a valid SlayerQuery ({misspelt.value}); fix or "
        "remove the query with 'slayer-kb edit 6'",
        "5 problems in 4 files (6 files checked)",
    ]


def test_paths_that_are_not_memories(tmp_path: Path, invoke_cli) -> None:
    (tmp_path / "notes.yaml").write_text("a: 1\n")
    proc = invoke_cli("validate", "notes.yaml", "missing.yaml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        "missing.yaml:1: no such file",
        "notes.yaml:1: not a memory or session file: expected <kb>/memories/<id>.yaml or "
        "<kb>/sessions/<id>.yaml",
        "2 problems in 2 files (0 files checked)",
    ]


def test_a_time_in_the_future_is_a_warning_and_reads_go_on(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A hand-written time later than now by more than a clock's skew (a day) sorts the memory
    first in every newest-first list until then: validate warns, naming file, field and fix, and
    does not fail; reads take the memory as it is. From elsewhere, the fix names the KB (--kb)."""
    write(catalog_kb, "ok.yaml", GOOD)
    write(catalog_kb, "late.yaml",
          "learning: Fine.\ncreated_at: '2999-01-01T00:00:00Z'\nupdated_at: '2999-01-02T00:00:00.5Z'\n")
    proc = invoke_cli("validate", cwd=catalog_kb.root)
    ahead, fix = "is more than a day ahead of this machine's clock, so", "; write the time it happened, with 'slayer-kb edit late'"
    assert (proc.returncode, proc.stdout) == (0, (
        f"memories/late.yaml:2: warning: created_at '2999-01-01T00:00:00Z' {ahead} newest-first lists (list, context, "
        f"mem_context) put the memory first until then{fix}\n"
        f"memories/late.yaml:3: warning: updated_at '2999-01-02T00:00:00.5Z' {ahead} a merge of two versions of the "
        f"memory takes this one as the newer until then{fix}\n"
        "Checked 2 files: no problems, 2 warnings.\n"))
    data = json_of(invoke_cli("validate", "--json", cwd=catalog_kb.root))
    assert (data["ok"], data["problems"], [w["line"] for w in data["warnings"]]) == (True, [], [2, 3])
    assert catalog_kb.get("late").created_at == "2999-01-01T00:00:00Z"
    elsewhere = invoke_cli("--kb", "kb", "validate", cwd=catalog_kb.root.parent).stdout.splitlines()
    assert elsewhere[0].endswith("; write the time it happened, with 'slayer-kb --kb kb edit late'"), elsewhere


def test_the_time_warnings_quote_the_file_and_point_at_the_value_kept(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A time's warning quotes it as the file writes it (an offset, nine digits of a second), at
    the line of the value YAML keeps (a key given twice keeps the last; a quoted key has a line);
    a time at the calendar's last microsecond, or past it in UTC, was an OverflowError traceback."""
    write(catalog_kb, "twice.yaml", "learning: Twice.\nupdated_at: '2026-01-01T00:00:00Z'\n"
          "created_at: '2026-01-01T00:00:00Z'\nupdated_at: '2999-01-01T00:00:00Z'\n")
    write(catalog_kb, "quoted.yaml", "learning: Quoted key.\n\"created_at\": '2999-01-01T00:00:00Z'\n")
    write(catalog_kb, "offset.yaml", "learning: Offset.\ncreated_at: 2999-01-01T00:00:00+02:00\n")
    write(catalog_kb, "nano.yaml", "learning: Nanoseconds.\ncreated_at: 2999-01-01T00:00:00.123456789Z\n")
    write(catalog_kb, "last.yaml", "learning: The last.\ncreated_at: '9999-12-31T23:59:59.9999999Z'\n")
    write(catalog_kb, "past.yaml", "learning: Past the last.\ncreated_at: 9999-12-31T23:59:59-01:00\n")
    (catalog_kb.root / "sessions").mkdir(exist_ok=True)
    (catalog_kb.root / "sessions" / "ses-1.yaml").write_text("started_at: '9999-12-31T23:59:59.9999999Z'\n")
    proc = invoke_cli("validate", cwd=catalog_kb.root)
    ahead = "is more than a day ahead of this machine's clock, so"
    created = "newest-first lists (list, context, mem_context) put the memory first until then"
    fix = "; write the time it happened, with 'slayer-kb edit"
    assert (proc.returncode, proc.stdout) == (1, (
        "memories/nano.yaml:2: not in canonical form; run 'slayer-kb fmt memories/nano.yaml'\n"
        "memories/offset.yaml:2: not in canonical form; run 'slayer-kb fmt memories/offset.yaml'\n"
        "memories/past.yaml:2: 'created_at' must be a UTC time, quoted: '2026-11-29T20:42:40Z'\n"
        "memories/quoted.yaml:2: not in canonical form; run 'slayer-kb fmt memories/quoted.yaml'\n"
        "memories/twice.yaml:4: duplicate key 'updated_at' (first on line 2); keep one\n"
        f"memories/last.yaml:2: warning: created_at '9999-12-31T23:59:59.9999999Z' {ahead} {created}{fix} last'\n"
        f"memories/nano.yaml:2: warning: created_at '2999-01-01T00:00:00.123456789Z' {ahead} {created}{fix} nano'\n"
        f"memories/offset.yaml:2: warning: created_at '2999-01-01T00:00:00+02:00' {ahead} {created}{fix} offset'\n"
        f"memories/quoted.yaml:2: warning: created_at '2999-01-01T00:00:00Z' {ahead} {created}{fix} quoted'\n"
        f"memories/twice.yaml:4: warning: updated_at '2999-01-01T00:00:00Z' {ahead} a merge of two versions of the "
        f"memory takes this one as the newer until then{fix} twice'\n"
        "5 problems in 5 files (7 files checked), 5 warnings\n"))


def test_the_future_time_warning_starts_a_day_ahead(tmp_path: Path) -> None:
    """The limit is a day past ``now``: 23 h ahead is a clock's skew, 25 h ahead is told."""
    now = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
    told = []
    for ahead in (timedelta(hours=23), timedelta(days=1), timedelta(days=1, seconds=1), timedelta(hours=25),
                  timedelta(days=1, microseconds=500000), -timedelta(days=400)):
        text = f"learning: x\ncreated_at: '{(now + ahead).isoformat().replace('+00:00', 'Z')}'\n"
        times = read_times(text, yamlio.load(text), TIME_KEYS)
        told += [(p.line, p.message.split(" is ")[0]) for p in future_times(times, "memories/m.yaml", "m", "slayer-kb", now=now)]
    assert told == [(2, "created_at '2026-03-02T12:00:01Z'"), (2, "created_at '2026-03-02T13:00:00Z'"),
                    (2, "created_at '2026-03-02T12:00:00.500000Z'")]


def test_a_time_no_calendar_has_is_a_problem_and_reads_go_on(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """A 31st of February passed validate ("no problems"), quoted; unquoted, YAML's timestamp
    raised ValueError, a traceback from every command that read the file. Year 0 is the schema's
    (RFC 3339's), read by every command, and was called no real time (Python's years start at 1):
    it is checked as any year, a leap year."""
    write(catalog_kb, "feb.yaml", "learning: Quoted.\ncreated_at: '2026-02-31T00:00:00Z'\n")
    write(catalog_kb, "zero.yaml", "learning: Year zero.\ncreated_at: '0000-02-29T00:00:00Z'\n")
    write(catalog_kb, "zero-30.yaml", "learning: Year zero.\ncreated_at: '0000-02-30T00:00:00Z'\n")
    write(catalog_kb, "bare.yaml", "learning: Unquoted.\ncreated_at: 2026-04-01T24:00:00Z\n")
    (catalog_kb.root / "sessions").mkdir(exist_ok=True)
    (catalog_kb.root / "sessions" / "ses-1.yaml").write_text("started_at: '2026-02-29T10:00:00Z'\n")
    proc = invoke_cli("validate", cwd=catalog_kb.root)
    fix = "write the time it happened, quoted: '2026-11-29T20:42:40Z'"
    assert (proc.returncode, proc.stdout) == (1, (
        f"memories/bare.yaml:2: 'created_at' '2026-04-01T24:00:00Z' is no real time (hour must be in 0..23); {fix}\n"
        f"memories/feb.yaml:2: 'created_at' '2026-02-31T00:00:00Z' is no real time (day is out of range for month); {fix}\n"
        f"memories/zero-30.yaml:2: 'created_at' '0000-02-30T00:00:00Z' is no real time (day is out of range for month); {fix}\n"
        f"sessions/ses-1.yaml:1: 'started_at' '2026-02-29T10:00:00Z' is no real time (day is out of range for month); {fix}\n"
        "4 problems in 4 files (5 files checked)\n"))
    listed = invoke_cli("--kb", catalog_kb.root, "list", check=True).stdout
    assert "[feb] Quoted." in listed and "[bare] Unquoted." in listed
    assert "2026-04-01T24:00:00Z [bare] Unquoted." in invoke_cli("--kb", catalog_kb.root, "timeline", "bare",
                                                                 check=True).stdout


def test_a_value_its_explicit_tag_does_not_fit_is_a_problem_and_reads_go_on(catalog_kb: KnowledgeBase,
                                                                            invoke_cli) -> None:
    """`created_at: !!timestamp nope` ended validate, get and list in a traceback (AttributeError),
    as did `!!int x`, `!!float x` (ValueError) and `!!bool x` (KeyError): such a value is kept as
    its text, and validate names it at its line, once (not again as, say, a created_at that is no
    time); tags of the wrong shape are YAML problems."""
    created = "created_at: '2026-01-01T00:00:00Z'\n"
    write(catalog_kb, "stamp.yaml", "learning: Stamped.\ncreated_at: !!timestamp nope\n")
    write(catalog_kb, "whole.yaml", f"learning: !!int x\n{created}title: !!float y\n")
    write(catalog_kb, "flag.yaml", f"learning: Flagged.\n{created}entities:\n- shop.orders\n- !!bool maybe\n")
    write(catalog_kb, "set.yaml", f"learning: !!set [a]\n{created}")
    write(catalog_kb, "omap.yaml", f"learning: !!omap {{a: 1}}\n{created}")
    (catalog_kb.root / "sessions").mkdir(exist_ok=True)
    (catalog_kb.root / "sessions" / "ses-1.yaml").write_text("started_at: !!timestamp nope\n")
    proc = invoke_cli("validate", cwd=catalog_kb.root)
    fix = "remove the tag to keep it as text, or write"
    assert (proc.returncode, proc.stdout) == (1, (
        f"memories/flag.yaml:5: 'entities[1]' 'maybe' is not true or false, as its tag !!bool says: {fix} true or false\n"
        "memories/omap.yaml:1: invalid YAML: expected a sequence, but found mapping\n"
        "memories/set.yaml:1: invalid YAML: expected a mapping node, but found sequence\n"
        f"memories/stamp.yaml:2: 'created_at' 'nope' is not a time, as its tag !!timestamp says: {fix} a time\n"
        f"memories/whole.yaml:1: 'learning' 'x' is not a whole number, as its tag !!int says: {fix} a whole number\n"
        f"memories/whole.yaml:3: 'title' 'y' is not a number, as its tag !!float says: {fix} a number\n"
        f"sessions/ses-1.yaml:1: 'started_at' 'nope' is not a time, as its tag !!timestamp says: {fix} a time\n"
        "7 problems in 6 files (6 files checked)\n"))
    assert invoke_cli("--kb", catalog_kb.root, "get", "whole", check=True).stdout.startswith("id: whole\ntitle: y\n")
    stamp = invoke_cli("--kb", catalog_kb.root, "get", "stamp", cwd=catalog_kb.root)
    assert (stamp.returncode, stamp.stderr.splitlines()[0]) == (
        1, "Error: memories/stamp.yaml:2: 'created_at' must be a UTC time like '2026-11-29T20:42:40Z'. Edit "
           "memories/stamp.yaml to fix it, then check it with 'slayer-kb validate' (or run 'slayer-kb edit stamp', "
           "which checks it on close).")
    listed = invoke_cli("--kb", catalog_kb.root, "list")
    assert (listed.returncode, "[whole] y" in listed.stdout) == (0, True)
    assert listed.stdout.endswith(
        "\nwarning: memories/stamp.yaml:2: 'created_at' must be a UTC time like '2026-11-29T20:42:40Z' (skipped)\n")


def test_a_value_its_tag_does_not_fit_in_a_catalog_file_is_named_at_its_line(catalog_kb: KnowledgeBase,
                                                                             invoke_cli) -> None:
    """The catalog reads such a value as its text, as the memories' reader does, so validate said
    nothing, where SLayer's loader refuses the file: it is named at its file and line, as in a
    memory file, and the model is still used."""
    models = catalog_kb.root / "models" / "shop"
    (models / "regions.yaml").write_text("name: regions\ncolumns:\n- {name: id, type: INT}\n"
                                         "- {name: country_id, type: !!int x}\ndescription: !!timestamp nope\n")
    (catalog_kb.root / "datasources" / "shop.yaml").write_text("name: shop\ntype: postgres\nread_only: !!bool maybe\n")
    proc = invoke_cli("validate", cwd=catalog_kb.root)
    fix = "remove the tag to keep it as text, or write"
    assert (proc.returncode, proc.stdout) == (1, (
        f"datasources/shop.yaml:3: catalog: 'read_only' 'maybe' is not true or false, as its tag !!bool says: {fix} "
        "true or false\n"
        f"models/shop/regions.yaml:4: catalog: 'columns[1].type' 'x' is not a whole number, as its tag !!int says: "
        f"{fix} a whole number\n"
        f"models/shop/regions.yaml:5: catalog: 'description' 'nope' is not a time, as its tag !!timestamp says: "
        f"{fix} a time\n"
        "3 problems in 2 files (0 files checked)\n"))
    assert catalog_kb.save_memory("Regions are sales regions", ["shop.regions.country_id"]).resolved_entities == [
        "shop.regions.country_id"]


def test_schema_is_valid_and_agrees_with_the_files(invoke_cli) -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validators.validator_for(schema).check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for path in sorted((EXAMPLE_KB / "memories").glob("*.yaml")):
        assert list(validator.iter_errors(yaml.safe_load(path.read_text()))) == [], path
    assert json.loads(invoke_cli("schema", check=True).stdout) == schema


@pytest.mark.slow
def test_ten_thousand_files_in_one_run(catalog_kb: KnowledgeBase) -> None:
    # How fast is a figure of the benchmark; here, that 10,001 files are all read and pass.
    folder = catalog_kb.root / "memories"
    for i in range(1, 10_001):
        (folder / f"{i}.yaml").write_text(
            f"learning: |\n  Memory {i}.\n  Second line.\nentities:\n- shop.orders.amount\n"
            f"- memory:{max(i - 1, 1)}\n{CREATED}")
    shutil.copy(folder / "5.yaml", folder / "kb.five.yaml")
    report = validate([folder])
    assert report.checked == 10_001 and report.problems == []


@pytest.mark.parametrize("memory_id, fix", [
    ("a(1);b", "run 'slayer-kb fmt 'memories/a(1);b.yaml''"),
    ("CAFÉ", "run 'slayer-kb fmt memories/CAFÉ.yaml'"),
])
def test_the_fmt_fix_quotes_a_file_name_a_shell_would_split(catalog_kb: KnowledgeBase, invoke_cli,
                                                            memory_id: str, fix: str) -> None:
    """An id may hold '(' and ';' (a shell's syntax), and the fix 'slayer-kb fmt memories/a(1).yaml'
    was a shell's syntax error: the name is quoted (a quoted word in the quoted command, as
    testing/shell.py reads it), and the fix works as a shell reads it. A letter beyond ASCII needs
    no quotes: 'slayer-kb fmt 'memories/CAFÉ.yaml'' quoted a word no shell splits."""
    mid = catalog_kb.save_memory("Amount is in EUR", ["orders.amount"], id=memory_id).memory_id
    path = catalog_kb.root / "memories" / f"{mid}.yaml"
    path.write_text("# by hand\n" + path.read_text())
    proc = invoke_cli("--kb", catalog_kb.root, "validate", cwd=catalog_kb.root)
    assert proc.stdout.splitlines()[0] == f"memories/{memory_id}.yaml:1: not in canonical form; {fix}"
    invoke_cli(*shlex.split(fix.removeprefix("run ")[1:-1])[1:], check=True, cwd=catalog_kb.root)
    assert invoke_cli("--kb", catalog_kb.root, "validate", check=True).stdout == "Checked 1 file: no problems.\n"


def test_a_model_deleted_on_one_side_is_told_from_its_datasources_models(catalog_kb: KnowledgeBase) -> None:
    """What REF deleted from the catalog (validate --against, review, sync's cascade) is read from
    the datasources whose model files changed alone: both whole catalogs cost 0.6 s of CPU at
    the bench's 284 models, for a pull request that touched one."""
    root = catalog_kb.root
    base = git(root, "rev-parse", "HEAD").strip()
    git(root, "rm", "-q", "models/shop/refunds.yaml")
    git(root, "commit", "-q", "-m", "delete-model shop.refunds")
    store = catalog_kb.store
    scoped = catalog_at(store, "HEAD", ("models/shop/",))
    assert sorted(scoped.datasources) == ["shop"]
    assert "refunds" not in scoped.datasources["shop"].models
    assert deleted_entities(store, base, "HEAD", {"models/shop/refunds.yaml"}) == {
        "shop.refunds", "shop.refunds.id", "shop.refunds.order_id", "shop.refunds.amount"}


def test_what_older_releases_took_is_invalid_with_its_fix_not_stale(
    catalog_kb: KnowledgeBase, invoke_cli
) -> None:
    """Forms slayer-kb took before it read formulas as SLayer does: no catalog change made them
    fail, and re-saving fails too, so they are invalid queries (with the fix), never stale (a SQL
    word SLayer looks up as a column, distinct, was reported stale: sync pushed it as such)."""
    kb, root = catalog_kb, catalog_kb.root
    query = "query:\n  source_model: orders\n  {}:\n  - {}\n"
    write(kb, "1.yaml", "learning: Spaced colon\n" + query.format("measures", "'amount : sum'") + CREATED)
    write(kb, "2.yaml", "learning: Upper count\n" + query.format("filters", "COUNT(*) > 10") + CREATED)
    write(kb, "3.yaml", "learning: Upper count\n" + query.format("measures", "COUNT(*)") + CREATED)
    write(kb, "4.yaml", "learning: Repeat buyers\n" + query.format("filters", "count(distinct customer_id) > 5") + CREATED)
    commit_all(root, "written by an older release")
    proc = invoke_cli("validate", cwd=root)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout.splitlines() == [
        "memories/1.yaml:2: attached query is not a valid SlayerQuery (measures[0].formula: Invalid "
        "Mode-B expression 'amount : sum': invalid syntax (<unknown>, line 1); write 'amount:sum', "
        "with no spaces around an aggregation's colon); fix or remove the query with 'slayer-kb edit 1'",
        "memories/3.yaml:2: attached query is not a valid SlayerQuery (measures[0]: formula 'COUNT(*)': "
        "'*:COUNT' is not a valid entity reference; use 'count(*)' to refer to a model's row count.); "
        "fix or remove the query with 'slayer-kb edit 3'",
        "memories/4.yaml:2: attached query is not a valid SlayerQuery (filters[0] 'count(distinct customer_id) > 5': "
        "'distinct' names no column: SLayer's memory resolver reads it as a column in a filter (its "
        "engine runs count(distinct ...)); write "
        "'customer_id:count_distinct' or 'count_distinct(customer_id)'.); fix or remove the query with "
        "'slayer-kb edit 4'",
        "3 problems in 3 files (4 files checked)",
    ]
    proc = invoke_cli("search", "upper count", cwd=root)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0,
        "Example queries:\n  [2] Upper count\n  [3] Upper count\n"
        "warning: example_query memory:3: attached query is not a valid SlayerQuery (measures[0]: "
        "formula 'COUNT(*)': '*:COUNT' is not a valid entity reference; use 'count(*)' to refer to "
        "a model's row count.); correct it with 'slayer-kb edit 3'.\n",
        "",
    )
    proc = invoke_cli("save", "Spaced", "-e", "orders.amount : sum", cwd=root)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        1, "", "Error: 'orders.amount : sum' contains an invalid identifier segment. Write "
        "'orders.amount:sum', with no spaces around an aggregation's colon.\n")


def test_a_reference_no_catalog_can_resolve_is_invalid_not_stale(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    # A reference over the length limit (ReferenceFormError) is wrong in its form: no catalog
    # change mends it, so it is an invalid query (which sync refuses), never a stale one.
    long = "x" * 1001
    write(catalog_kb, "1.yaml", f"learning: Long\nquery:\n  source_model: orders\n  measures:\n  - {long}\n{CREATED}")
    proc = invoke_cli("validate", cwd=catalog_kb.root)
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout == (
        f"memories/1.yaml:2: attached query is not a valid SlayerQuery (measures[0]: entity reference '{'x' * 100}'"
        "... (1001 characters) is over the limit of 1000 characters: name a datasource, model, column or "
        "memory:<id> (e.g. 'orders.amount').); fix or remove the query with 'slayer-kb edit 1'\n"
        "1 problem in 1 file (1 file checked)\n")


def test_a_time_inside_a_merge_key_is_told_at_its_line(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    head = "learning: Fine.\nentities:\n- shop.orders.amount\n"
    write(catalog_kb, "1.yaml", head + "<<: {created_at: '2999-01-01T00:00:00Z'}\n")
    write(catalog_kb, "2.yaml", head + "<<:\n- {title: Merged}\n- {created_at: '2999-01-01T00:00:00Z'}\n")
    proc = invoke_cli("validate", "memories/1.yaml", "memories/2.yaml", cwd=catalog_kb.root)
    ahead = ("warning: created_at '2999-01-01T00:00:00Z' is more than a day ahead of this machine's clock, so "
             "newest-first lists (list, context, mem_context) put the memory first until then; write the time "
             "it happened, with 'slayer-kb edit {}'")
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout.splitlines() == [
        "memories/1.yaml:4: not in canonical form; run 'slayer-kb fmt memories/1.yaml'",
        "memories/2.yaml:1: not in canonical form; run 'slayer-kb fmt memories/2.yaml'",
        "memories/1.yaml:4: " + ahead.format(1),
        "memories/2.yaml:6: " + ahead.format(2),
        "2 problems in 2 files (2 files checked), 2 warnings",
    ]


def test_an_empty_path_is_refused_not_read_as_the_whole_kb(example_kb_read_only: KnowledgeBase,
                                                           invoke_cli: CliRunner) -> None:
    """``validate "$FILE"`` with FILE unset checked (and ``fmt`` rewrote) the whole KB, as '.'
    is, and said ok of a file it never named."""
    root = example_kb_read_only.root
    for command in ("validate", "fmt"):
        proc = invoke_cli("--kb", root, "--json", command, "memories/1.yaml", "")
        message = ("PATH #2 is empty (an unset shell variable?): give a memory or session file or a knowledge "
                   "base's folder, or no PATH for the whole knowledge base.")
        assert (proc.returncode, json_of(proc), proc.stderr) == (
            1, {"error": {"type": "invalid_input", "message": message}}, f"Error: {message}\n"), command


def test_the_schemas_limits_are_a_saves() -> None:
    from slayer_kb.core import engram
    from slayer_kb.core.memory import MAX_DESCRIPTION

    properties = json.loads(SCHEMA_PATH.read_text())["properties"]
    assert {key: properties[key].get("maxLength") for key in ("title", "type", "project", "topic_key", "description")} == {
        "title": engram.MAX_TITLE, "type": engram.MAX_KEY, "project": engram.MAX_KEY, "topic_key": engram.MAX_KEY,
        "description": MAX_DESCRIPTION}


def test_an_editors_leftovers_are_no_problem_and_a_copy_is_never_renamed_onto_its_memory(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """validate failed on what editors leave beside a memory at each save (``3.yaml~``, vim's
    ``.swp``, ``.bak``) and on the ``.orig`` that ``update --force`` keeps, advising to rename
    ``4.yaml.orig`` to ``4.yaml.yaml`` and ``3.yaml~`` to ``3.yaml``: over the memory, a stale
    version. The whole KB's check passes them by, as the index does; named, each is a copy to
    compare and delete; a copy of a memory under another suffix is never to be renamed onto it."""
    root = indexed_example_kb.root
    memories = root / "memories"
    for name, of in (("3.yaml~", "3"), ("4.yaml.orig", "4"), ("4.yaml.orig.2", "4"), ("5.yaml.bak", "5"),
                     ("6.yaml.swp", "6"), ("#7.yaml#", "7"), ("4913", "8"), ("12.yaml.txt", "12")):
        (memories / name).write_bytes((memories / f"{of}.yaml").read_bytes())
    (memories / "9.yml").write_text("learning: x\n")
    copy = ("is a copy of {0}.yaml (an editor's backup, or one --force kept), not a memory: slayer-kb reads only .yaml "
            "files in memories/; compare it with {0}.yaml, then delete it")
    checked = invoke_cli("--kb", root, "validate", cwd=root)
    assert (checked.returncode, checked.stdout.splitlines()[:3]) == (1, [
        f"memories/12.yaml.txt:1: {copy.format(12)}",
        "memories/9.yml:1: slayer-kb reads only .yaml files in memories/; rename it to 9.yaml",
        checked.stdout.splitlines()[2]])
    assert checked.stdout.splitlines()[2].startswith("2 problems in 2 files (")
    named = invoke_cli("--kb", root, "validate", "memories/3.yaml~", "memories/4.yaml.orig", cwd=root)
    assert named.stdout.splitlines()[:2] == [f"memories/3.yaml~:1: {copy.format(3)}",
                                            f"memories/4.yaml.orig:1: {copy.format(4)}"]
    # A leftover committed is news (a stale edit in a pull request): the whole KB's check names it.
    git(root, "add", "-f", "memories/5.yaml.bak")
    git(root, "commit", "-q", "-m", "a backup committed")
    assert f"memories/5.yaml.bak:1: {copy.format(5)}" in invoke_cli("--kb", root, "validate", cwd=root).stdout
    # SLayer's files left beside what import-slayer made of them, or not imported (a rename would
    # put front matter where YAML is read): compare and delete, or import; never rename.
    (memories / "1.md").write_text("---\nid: '1'\n---\n\nA note\n")
    (memories / "99.md").write_text("---\nid: '99'\n---\n\nA note\n")
    assert invoke_cli("--kb", root, "validate", "memories/1.md", "memories/99.md", cwd=root).stdout.splitlines()[:2] == [
        "memories/1.md:1: is SLayer's file of memory 1, which 1.yaml holds: slayer-kb reads only .yaml files in "
        "memories/; compare the two, then delete it",
        "memories/99.md:1: is a SLayer memory file, which slayer-kb does not read (a rename would not convert it): "
        "bring it in with 'slayer-kb import-slayer FOLDER' (the folder holding memories/), then delete it"]
    # A copy of a memory file no memory has is to be renamed to it, not to x.yaml.yaml.
    (memories / "50.yaml.txt").write_text("learning: x\n")
    assert invoke_cli("--kb", root, "validate", "memories/50.yaml.txt", cwd=root).stdout.splitlines()[0] == (
        "memories/50.yaml.txt:1: slayer-kb reads only .yaml files in memories/; rename it to 50.yaml")


def test_a_fix_runs_slayer_kb_as_the_user_does(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """From outside the KB, a fix's slayer-kb names the KB as every other fix does: ``fmt`` and
    ``import-slayer`` said a bare 'slayer-kb', which from there opens another KB or none."""
    root = indexed_example_kb.root
    (root / "memories" / "99.md").write_text("---\nid: '99'\n---\n\nA note\n")
    messy = root / "memories" / "1.yaml"
    messy.write_text("\n" + messy.read_text(encoding="utf-8"), encoding="utf-8")
    session = next((root / "sessions").glob("*.yaml"))
    session.write_text("\n" + session.read_text(encoding="utf-8"), encoding="utf-8")
    here, kb = root.parent, root.name
    checked = invoke_cli("--kb", kb, "validate", f"{kb}/memories/99.md", f"{kb}/memories/1.yaml",
                         f"{kb}/sessions/{session.name}", cwd=here)
    assert checked.stdout.splitlines()[:3] == [
        f"{kb}/memories/1.yaml:1: not in canonical form; run 'slayer-kb --kb {kb} fmt {kb}/memories/1.yaml'",
        f"{kb}/memories/99.md:1: is a SLayer memory file, which slayer-kb does not read (a rename would not convert "
        f"it): bring it in with 'slayer-kb --kb {kb} import-slayer FOLDER' (the folder holding memories/), then "
        "delete it",
        f"{kb}/sessions/{session.name}:1: not in canonical form; run 'slayer-kb --kb {kb} fmt "
        f"{kb}/sessions/{session.name}'"]


def test_fmt_of_a_catalog_file_formats_no_memory(indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``fmt models/shop/orders.yaml`` (pre-commit names a commit's catalog files so) rewrote every
    memory of the KB not in canonical form, a file the user had not named among them, its comment
    dropped; validate of it still checks them all (a catalog change can break any memory)."""
    root = indexed_example_kb.root
    memory = root / "memories" / "11.yaml"
    edited = memory.read_text().replace("learning: ", "# a comment of mine\nlearning: ", 1)
    memory.write_text(edited)
    commit_all(root, "a comment by hand")
    formatted = invoke_cli("--kb", root, "fmt", "models/shop/orders.yaml", cwd=root)
    assert (formatted.returncode, memory.read_text()) == (0, edited), formatted.stdout
    checked = invoke_cli("--kb", root, "validate", "models/shop/orders.yaml", cwd=root)
    assert "memories/11.yaml:1: not in canonical form" in checked.stdout
    # Named with the catalog file, a memory is formatted.
    invoke_cli("--kb", root, "fmt", "models/shop/orders.yaml", "memories/11.yaml", cwd=root, check=True)
    assert memory.read_text() != edited


def test_a_learning_over_the_size_limit_is_reported(catalog_kb: KnowledgeBase, invoke_cli) -> None:
    """format.md's Sizes: validate reports a file over any limit. A hand-made learning over the
    KB's content limit passed (exit 0), while a save of the same text is refused."""
    write(catalog_kb, "huge.yaml", f"learning: {'x' * 150}\nentities:\n- shop.orders.amount\n{CREATED}")
    small = {"SLAYER_KB_MAX_CONTENT": "100"}
    proc = invoke_cli("validate", "memories/huge.yaml", cwd=catalog_kb.root, env=small)
    assert (proc.returncode, proc.stdout) == (1, (
        "memories/huge.yaml:1: learning is 150 bytes; the limit is 100 bytes. Split it into several memories or "
        "raise the limit with SLAYER_KB_MAX_CONTENT (bytes).\n1 problem in 1 file (1 file checked)\n"))
    assert invoke_cli("validate", "memories/huge.yaml", cwd=catalog_kb.root, env={"SLAYER_KB_MAX_CONTENT": "150"},
                      check=True).stdout == "Checked 1 file: no problems.\n"


@pytest.mark.parametrize("sql", [
    "CAST(quantity AS DOUBLE)", "CASE WHEN quantity BETWEEN 1 AND 5 THEN quantity END",
    "EXTRACT(YEAR FROM created_at) * 0 + quantity  -- a note", "orders__amount / 100",
    "quantity FILTER (WHERE quantity > 0)",
])
def test_an_aggregation_parameters_sql_is_read_as_sql(example_kb: KnowledgeBase, invoke_cli, sql: str) -> None:
    """A parameter's SQL (SLayer's "column name or SQL expression") was read as a formula: validate
    reported CAST(quantity AS DOUBLE) as naming 'AS', BETWEEN as a column, and failed a healthy KB.
    ``orders__amount`` is SLayer's join path in SQL, not this model's column."""
    model = example_kb.root / "models" / "shop" / "order_items.yaml"
    text = model.read_text(encoding="utf-8")
    model.write_text(text.replace("- {name: weight, sql: quantity}", f"- {{name: weight, sql: {json.dumps(sql)}}}"),
                     encoding="utf-8")
    assert sql in model.read_text(encoding="utf-8")
    proc = invoke_cli("--kb", example_kb.root, "validate")
    assert (proc.returncode, proc.stdout.endswith(": no problems.\n")) == (0, True), proc.stdout
    model.write_text(text.replace("- {name: weight, sql: quantity}", "- {name: weight, sql: \"CAST(qty AS DOUBLE)\"}"),
                     encoding="utf-8")
    proc = invoke_cli("--kb", example_kb.root, "validate")
    assert "parameter weight (CAST(qty AS DOUBLE)) names 'qty', which is no column" in proc.stdout


def test_the_repositorys_own_kb_is_valid(invoke_cli) -> None:
    """The kb/ shipped in the repository (``init --example``'s source) passes validate."""
    proc = invoke_cli("--kb", EXAMPLE_KB, "validate")
    assert (proc.returncode, proc.stdout.endswith(": no problems.\n")) == (0, True), proc.stdout
