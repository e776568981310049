"""Line ends: a learning sent with Windows (CRLF) or old Mac (CR) line ends is stored as given
(a ``|`` block would read back with LF ones), and its summary is its first paragraph."""

from __future__ import annotations

import json

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from testing import CliRunner, commit_all, git

CRLF = "What: chose X\r\nWhy: because Y\r\n\r\nWhere: src/a.py"


def test_a_crlf_learning_is_kept_as_given_and_summed_up_by_its_first_paragraph(
        empty_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = empty_kb.root
    saved = invoke_cli("--kb", root, "save", CRLF, "--title", "Win agent")
    assert saved.returncode == 0, saved.stderr
    assert 'learning: "What: chose X\\r\\nWhy: because Y\\r\\n\\r\\nWhere: src/a.py"\n' in (
        root / "memories" / "1.yaml").read_text(encoding="utf-8")
    got = json.loads(invoke_cli("--kb", root, "get", "1", "--json").stdout)
    assert got["learning"] == CRLF
    listed = json.loads(invoke_cli("--kb", root, "list", "--json").stdout)
    assert [m["description"] for m in listed["memories"]] == ["What: chose X Why: because Y"]


def test_an_mcp_save_and_update_with_cr_line_ends_read_back_as_sent(empty_kb: KnowledgeBase) -> None:
    sent = "What: chose X\rWhy: because Y\r\n\r\nWhere: src/a.py"
    reply = call_tool(empty_kb, "mem_save", {"title": "Win agent", "content": sent})
    assert not reply.is_error, reply.text
    assert empty_kb.get("1").learning == sent
    reply = call_tool(empty_kb, "mem_update", {"id": "1", "content": "What: chose Z\r\n\r\nWhy: Y"})
    assert not reply.is_error, reply.text
    assert empty_kb.get("1").learning == "What: chose Z\r\n\r\nWhy: Y"


def test_a_line_of_spaces_ends_the_summary(empty_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = empty_kb.root
    saved = invoke_cli("--kb", root, "save", "What: chose X\nWhy: because Y\n   \nWhere: src/a.py", "--title", "T")
    assert saved.returncode == 0, saved.stderr
    listed = json.loads(invoke_cli("--kb", root, "list", "--json").stdout)
    assert [m["description"] for m in listed["memories"]] == ["What: chose X Why: because Y"]


def test_a_checkout_under_a_text_eol_crlf_attribute_is_canonical(
        indexed_example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """``* text eol=crlf`` in .gitattributes: git stores LF and checks out CRLF. validate called
    every such file not canonical; a file whose attribute says ``-text`` git commits as it is, so
    its CRLF is reported even under core.autocrlf."""
    root = indexed_example_kb.root
    files = ["memories/7.yaml", "sessions/ses-20261009-payments-recon.yaml"]
    (root / ".gitattributes").write_text("* text eol=crlf\n", encoding="utf-8")
    commit_all(root, "attributes")
    for name in files:
        path = root / name
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    assert git(root, "diff", "--stat") == ""  # to git, as committed
    clean = invoke_cli("--kb", root, "validate", *files, cwd=root)
    assert (clean.returncode, clean.stdout) == (0, "Checked 2 files: no problems.\n")
    assert invoke_cli("--kb", root, "fmt", "--check", *files, cwd=root).returncode == 0
    (root / ".gitattributes").write_text("* text eol=crlf\nmemories/7.yaml -text\n", encoding="utf-8")
    git(root, "config", "core.autocrlf", "true")
    flagged = invoke_cli("--kb", root, "validate", *files, cwd=root)
    assert (flagged.returncode, flagged.stdout) == (
        1, "memories/7.yaml:1: not in canonical form; run 'slayer-kb fmt memories/7.yaml'\n"
        "1 problem in 1 file (2 files checked)\n")


def test_update_takes_a_learning_as_a_save_of_its_kind_does(catalog_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """An untitled save keeps a note's text as given, its final line break and indent too; an
    update trimmed it, so a note given back through update lost them. A titled memory's (an
    observation's) text is trimmed by both, as Engram's are."""
    root = catalog_kb.root
    note = "  indented first line\nsecond\n"
    invoke_cli("--kb", root, "save", note, "-e", "orders.amount", check=True)
    invoke_cli("--kb", root, "save", f"  {note}", "--title", "Obs", check=True)
    assert (catalog_kb.get("1").learning, catalog_kb.get("2").learning) == (note, note.strip())
    again = "  rewritten\n\nby update\n"
    for memory_id in ("1", "2"):
        invoke_cli("--kb", root, "update", memory_id, "--learning", again, check=True)
    assert (catalog_kb.get("1").learning, catalog_kb.get("2").learning) == (again, again.strip())
    # Titled by the update itself: trimmed as a titled save trims.
    invoke_cli("--kb", root, "update", "1", "--learning", f"{again}again\n", "--title", "Now titled", check=True)
    assert catalog_kb.get("1").learning == f"{again}again".strip()
