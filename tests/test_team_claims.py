"""A number given with --id whose block another clone claimed for that very number: refused at
the save, online, as a number in a leased block is (``IdLeases.may_give`` reads the claim's
commit); another number of the claimed block is taken, and offline nothing can tell. Real clones
of one bare remote, every command typed as a user would (docs/teams.md, "Ids that never change
under an agent")."""

from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from slayer_kb.store.leases import BLOCK, CLAIMS
from testing import CliRunner, git, make_team

# Every command typed in the clone's folder, as a user would (conftest's invoke_cli).
pytestmark = pytest.mark.typed_in_the_kb


def _refusal(given: int) -> str:
    first = (given - 1) // BLOCK * BLOCK + 1
    return (f"Memory id '{given}' was given by another clone: its claim on origin ({CLAIMS}{first // BLOCK}: claim "
            f"ids {first}-{first + BLOCK - 1} for memory {given} (from ")


# Y's save --id 150 was taken ("Saved memory 150 (created)") though X's claim on the remote named
# 150, and Y's sync then renumbered Y's memory to 201: the id Y's agent held named nothing.
def test_a_number_another_clone_claimed_for_that_number_is_refused(tmp_path: Path, invoke_cli: CliRunner) -> None:
    bare, (x, y) = make_team(tmp_path)
    given = BLOCK + 50
    invoke_cli("--kb", x, "save", "X: mine", "-e", "shop.orders", "--id", str(given), check=True)
    invoke_cli("--kb", x, "sync", check=True)
    refused = invoke_cli("--kb", y, "save", "Y: mine too", "-e", "shop.orders", "--id", str(given))
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"Error: {_refusal(given)}"), refused.stderr
    assert refused.stderr.endswith(
        ")) names it, and a sync would then give one of the two memories a new id. Give another number, omit --id "
        "to get this clone's next auto id, or give a name such as 'kb.orders-total'.\n"), refused.stderr
    assert not (y / "memories" / f"{given}.yaml").exists()
    # Over MCP alike, in the tools' words.
    reply = call_tool(KnowledgeBase(y), "save_memory", {"learning": "Y: by MCP", "linked_entities": ["shop.orders"],
                                                        "id": str(given)})
    assert reply.is_error and reply.text.startswith(_refusal(given)), reply.text
    assert "Give another number, omit the id to get this clone's next auto id" in reply.text
    # Another number of the claimed block is taken, and meets X's number at the sync unmoved.
    taken = invoke_cli("--kb", y, "save", "Y: another", "-e", "shop.orders", "--id", str(given + 1))
    assert (taken.returncode, taken.stderr) == (0, ""), taken.stderr
    synced = invoke_cli("--kb", y, "sync", check=True)
    assert synced.stdout.startswith("Synced main with origin: rebased, 1 pulled, 1 pushed."), synced.stdout
    assert [git(bare, "show", f"main:memories/{n}.yaml").split("\n")[0] for n in (given, given + 1)] == [
        "learning: 'X: mine'", "learning: 'Y: another'"]


def test_a_claims_words_are_shown_as_data_and_cut(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """A claim's commit message is anyone's to push: braces in it went through str.format (a
    KeyError traceback for ``{x}``; ``{0:>300000000}`` built a 300 MB string first), and a message
    of megabytes would have been shown whole."""
    bare, (_x, y) = make_team(tmp_path)
    given = BLOCK + 50
    empty = git(bare, "hash-object", "-t", "tree", "-w", "/dev/null").strip()
    words = "From {x} {0:>300000000}\n\nMemory saved: a line of its own\n" + "y" * 5000
    holder = git(bare, "commit-tree", empty, "-m", f"slayer-kb: claim ids {BLOCK + 1}-{2 * BLOCK} for memory {given}",
                 "-m", words).strip()
    git(bare, "update-ref", f"{CLAIMS}1", holder)
    refused = invoke_cli("--kb", y, "save", "Y: mine", "-e", "shop.orders", "--id", str(given))
    assert refused.returncode == 1
    # One line: a line of the message standing on its own would read as the command's.
    claim = (f"claim ids {BLOCK + 1}-{2 * BLOCK} for memory {given} (from {{x}} {{0:>300000000}} Memory saved: a line "
             "of its own " + "y" * 5000 + ")")
    assert refused.stderr == (f"Error: Memory id '{given}' was given by another clone: its claim on origin ({CLAIMS}1: "
                              f"{claim[:300]}... ({len(claim)} characters)) "
                              "names it, and a sync would then give one of the two memories a new id. Give another "
                              "number, omit --id to get this clone's next auto id, or give a name such as "
                              "'kb.orders-total'.\n")
    reply = call_tool(KnowledgeBase(y), "save_memory", {"learning": "Y: by MCP", "linked_entities": ["shop.orders"],
                                                        "id": str(given)})
    assert reply.is_error and f"{claim[:300]}... ({len(claim)} characters)) names it" in reply.text, reply.text
    assert git(y, "status", "--porcelain") == ""
