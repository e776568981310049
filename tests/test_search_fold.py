"""A question or a memory written in compatibility characters (fullwidth letters and digits, a
ligature) is matched by its plain spelling and the other way round: the words channel reads both
in NFKC, case-folded, at index and at query time (``analysis.fold``), and an index written before
it did is rebuilt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import analysis, schema
from slayer_kb.search.schema import FORMAT
from testing import CliRunner, json_of

# The last index format whose words were not folded.
UNFOLDED_FORMAT = 12


def found(data: dict) -> list[str]:
    return [hit["id"] for hit in data["memories"] + data["example_queries"]]


def test_a_fullwidth_question_finds_what_its_plain_spelling_finds(example_kb_read_only: KnowledgeBase,
                                                                    invoke_cli: CliRunner) -> None:
    """``search 'ｒｅｆｕｎｄｓ'`` found nothing by its words where ``search refunds`` finds the refunds
    memories; a fullwidth dotted or bare name is the name, read by the catalog."""
    root = example_kb_read_only.root
    for plain, wide in (("refunds", "ｒｅｆｕｎｄｓ"), ("REFUNDS", "ＲＥＦＵＮＤＳ"),
                        ("orders.amount vat", "ｏｒｄｅｒｓ．ａｍｏｕｎｔ ｖａｔ")):
        for match in (["--all"], []):  # the words alone, and every channel
            asked = json_of(invoke_cli("--kb", root, "--json", "search", plain, *match, check=True))
            typed = json_of(invoke_cli("--kb", root, "--json", "search", wide, *match, check=True))
            assert found(asked) and found(typed) == found(asked), (wide, match)
            assert typed["notes"] == asked["notes"], (wide, match)
    bare = json_of(invoke_cli("--kb", root, "--json", "search", "ｉｓ_ｒｅｔｕｒｎｅｄ", check=True))
    assert "'is_returned' names shop.orders.is_returned; memories linked to it are found too." in bare["notes"]


def test_a_memory_in_compatibility_characters_is_found_by_its_plain_spelling(example_kb: KnowledgeBase) -> None:
    """A ligature (ﬁ) and fullwidth digits saved are found as fi and 28; plain text saved is found
    by a question written in them; letter case folds beyond ASCII (STRASSE, straße)."""
    kb = example_kb
    wide = kb.save_memory("The ﬁscal calendar of the warehouse closes on day ２８ of each month.", ["shop"]).memory_id
    plain = kb.save_memory("Invoices for the Hauptstrasse depot are sent by courier, never by e-mail.",
                           ["shop"]).memory_id
    for question, memory_id in (("fiscal calendar 28", wide), ("FISCAL day 28", wide), ("ﬁscal ２８", wide),
                                ("hauptstraße courier", plain), ("ＨＡＵＰＴＳＴＲＡＳＳＥ courier", plain)):
        hits = [hit["id"] for hit in kb.search(question, match="all").memories]
        assert hits == [memory_id], question


def test_an_index_whose_words_were_not_folded_is_rebuilt(example_kb: KnowledgeBase,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An index written before the words were folded holds ``ｒｅｆｕｎｄ`` as it was typed: kept, a
    plain question would never find that memory. Its format is older, so it is rebuilt."""
    assert FORMAT > UNFOLDED_FORMAT
    kb = example_kb
    with monkeypatch.context() as unfolded:  # the analysis of the version before
        for module in (analysis, schema):
            unfolded.setattr(module, "fold", lambda text: text)
        memory_id = kb.save_memory("Ｐａｌｌｅｔ counts of the Ｌｉｓｂｏｎ depot are booked weekly.", ["shop"]).memory_id
        assert kb.search("pallet lisbon", match="all").memories == []
    kb.close()
    manifest_path = kb.root / ".slayer-kb" / "index" / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["format"] = UNFOLDED_FORMAT
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    upgraded = KnowledgeBase(Path(kb.root))
    report = upgraded.ensure_fresh()
    assert report is not None and report.rebuilt
    assert [hit["id"] for hit in upgraded.search("pallet lisbon", match="all").memories] == [memory_id]
    upgraded.close()
