"""A long question costs the warm server in proportion to its words: the sentence model reads a
question of up to ``QUESTION_PIECES`` word pieces; a longer one is read by meaning through the
static vectors, every word of it, said in a note (its model runs held the server, and every
command behind it, for seconds). One over ``MAX_QUESTION`` bytes is refused whole, naming the
limit and the fix, by the CLI and MCP alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.mcp.tools import call_tool
from slayer_kb.search import encoder
from testing import CliRunner, make_notes_kb

NOTES = [
    ("Nomad chosen over Kubernetes for the card-authorisation services",
     "Decided to schedule the card-authorisation services on HashiCorp Nomad rather than Kubernetes. The team is "
     "four people, and a PCI audit of a Kubernetes control plane would have taken a quarter."),
    ("Robots report full battery but die early in the freezer aisle",
     "Lithium cells lose a third of their capacity below -10 C, but the battery board reports the charge measured at "
     "room temperature. Robots in the freezer zone now return to dock at 55% instead of 20%."),
]
LONG_NOTE = ("The question is longer than the sentence model reads for a question (1024 word pieces, about 4 KB of "
             "text): it is matched by meaning through the static vectors, every word of it, and by its words. Ask "
             "with the words that matter for a sharper answer.")
REFUSED = ("The question is 65537 bytes; the limit is 65536 bytes. Ask with the words that matter, or split it into "
           "several searches.")

pytestmark = pytest.mark.usefixtures("encoder_on")  # conftest.py turns it off elsewhere


@pytest.fixture
def notes_kb(tmp_path: Path) -> KnowledgeBase:
    kb = make_notes_kb(tmp_path / "kb", "long-question-notes", NOTES)
    assert kb.index.fill_sentences() == 2
    return kb


def test_a_long_question_is_read_whole_without_running_the_sentence_model(
        notes_kb: KnowledgeBase, monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[str] = []
    encode_later = encoder.Encoder.encode_later
    monkeypatch.setattr(encoder.Encoder, "encode_later",
                        lambda self, text, then=None: encoded.append(text) or encode_later(self, text, then))
    short = notes_kb.search("why do the robots die in the freezer?")
    assert [h["id"] for h in short.memories][0] == "2" and LONG_NOTE not in short.notes
    assert encoded == ["why do the robots die in the freezer?"]
    # 1,200 words no note holds, then what it is about, last: every word of it is read.
    filler = " ".join(f"zq{n}x" for n in range(1_200))
    long = notes_kb.search(f"{filler} Why Nomad and not Kubernetes?")
    assert [h["id"] for h in long.memories][0] == "1"
    assert LONG_NOTE in long.notes and long.warnings == []
    assert len(encoded) == 1  # its sentence vector was never made
    # A question of 1,024 word pieces or fewer is still read by the sentence model.
    notes_kb.search(" ".join(f"zq{n}x" for n in range(100)) + " Nomad")
    assert len(encoded) == 2


def test_a_question_over_the_limit_is_refused_in_the_cli_and_mcp(notes_kb: KnowledgeBase,
                                                                 invoke_cli: CliRunner) -> None:
    over = "a" * 65_537
    proc = invoke_cli("--kb", notes_kb.root, "search", over)
    assert (proc.returncode, proc.stderr) == (1, f"Error: {REFUSED}\n")
    reply = call_tool(notes_kb, "mem_search", {"query": over})
    assert reply.is_error and REFUSED in reply.text
    reply = call_tool(notes_kb, "search", {"question": over})
    assert reply.is_error and REFUSED in reply.text
    # At the limit: answered.
    assert notes_kb.search("Nomad " + "b" * (65_536 - len("Nomad "))).memories[0]["id"] == "1"


COLD_PROBE = """
import json, sys
from slayer_kb import KnowledgeBase
kb = KnowledgeBase(sys.argv[1])
kb.index.background_vectors = False  # what this process does alone
found = kb.search(sys.argv[2])
print(json.dumps({"model": "onnxruntime" in sys.modules, "first": found.memories[0]["id"], "notes": found.notes}))
"""


def test_a_cold_process_never_loads_the_model_for_a_question_it_will_not_read(notes_kb: KnowledgeBase) -> None:
    """Loading the model costs a cold process about a second: the question's length is read first."""
    notes_kb.close()
    env = {**os.environ, "SLAYER_KB_SERVER": "off"}
    filler = " ".join(f"zq{n}x" for n in range(1_200))
    out = subprocess.run([sys.executable, "-c", COLD_PROBE, str(notes_kb.root), f"{filler} Why Nomad and not Kubernetes?"],
                         capture_output=True, text=True, check=True, env=env)
    assert json.loads(out.stdout) == {"model": False, "first": "1", "notes": [
        LONG_NOTE, "No memory has all the words of the question; showing memories with some of them or close in meaning."]}
