"""Line ends: a learning sent with Windows (CRLF) or old Mac (CR) line ends is stored as the
readable ``|`` block every other learning is, and its summary is its first paragraph."""

from __future__ import annotations

import json

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from testing import CliRunner

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
