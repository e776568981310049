"""Line ends: a learning sent with Windows (CRLF) or old Mac (CR) line ends is stored as the
readable ``|`` block every other learning is, and its summary is its first paragraph."""

from __future__ import annotations

import json

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from testing import CliRunner, commit_all, git

BLOCK = "learning: |-\n  What: chose X\n  Why: because Y\n\n  Where: src/a.py\n"


def test_a_crlf_learning_is_stored_as_a_block(empty_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = empty_kb.root
    saved = invoke_cli("--kb", root, "save", "What: chose X\r\nWhy: because Y\r\n\r\nWhere: src/a.py\r\n",
                       "--title", "Win agent")
    assert saved.returncode == 0, saved.stderr
    assert BLOCK in (root / "memories" / "1.yaml").read_text(encoding="utf-8")
    listed = json.loads(invoke_cli("--kb", root, "list", "--json").stdout)
    assert [m["description"] for m in listed["memories"]] == ["What: chose X Why: because Y"]


def test_an_mcp_save_and_update_with_cr_line_ends_are_blocks(empty_kb: KnowledgeBase) -> None:
    reply = call_tool(empty_kb, "mem_save", {"title": "Win agent", "content": "What: chose X\rWhy: because Y\r\n\r\nWhere: src/a.py"})
    assert not reply.is_error, reply.text
    path = empty_kb.root / "memories" / "1.yaml"
    assert BLOCK in path.read_text(encoding="utf-8")
    reply = call_tool(empty_kb, "mem_update", {"id": "1", "content": "What: chose Z\r\n\r\nWhy: Y"})
    assert not reply.is_error, reply.text
    assert "learning: |-\n  What: chose Z\n\n  Why: Y\n" in path.read_text(encoding="utf-8")


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
