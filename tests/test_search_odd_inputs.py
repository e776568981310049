"""Inputs a search dropped or misread unsaid: a blank ``-e ''`` was not named, UTF-16 on standard
input (a NUL after each letter) made one symbol that found nothing, with no warning, and a link
``memory:3`` in a markdown link or before Chinese punctuation was taken with what follows it (up to
the next blank, which Chinese text does not have), and one after a Chinese word was not read."""

from __future__ import annotations

from slayer_kb import KnowledgeBase
from testing import CliRunner, json_of

BLANK = "entity '' dropped: an entity reference is blank; give one such as orders.amount, or leave it out."
NAMED = "'memory:3' names memory 3: it comes first, and memories linked to it are found too."


def test_a_blank_entity_is_named(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = example_kb_read_only.root
    alone = json_of(invoke_cli("--kb", root, "--json", "search", "-e", "", check=True))
    assert alone["warnings"] == [BLANK, "Every input entity was dropped: nothing left to search for."]
    beside = json_of(invoke_cli("--kb", root, "--json", "search", "-e", "", "-e", "shop.orders.is_returned", check=True))
    assert (beside["warnings"], beside["memories"][0]["id"]) == ([BLANK], "3")


def test_utf16_on_standard_input_is_refused(example_kb_read_only: KnowledgeBase, run_cli: CliRunner) -> None:
    got = run_cli("--kb", example_kb_read_only.root, "search", "-", input="r\0e\0f\0u\0n\0d\0")
    assert (got.returncode, got.stdout, got.stderr) == (1, "", (
        "Error: Standard input holds a NUL byte (character 2), which no UTF-8 text holds: is it UTF-16? Give it as "
        "UTF-8 (iconv -f UTF-16 -t UTF-8, or PowerShell's $OutputEncoding = [Text.UTF8Encoding]::new()).\n"))


def test_a_link_is_read_without_what_follows_it(example_kb_read_only: KnowledgeBase, invoke_cli: CliRunner) -> None:
    root = example_kb_read_only.root
    for question in ("[memory:3](x)", "see [memory:3](https://kb/3) first", "memory:3。", "（memory:3）",
                     "memory:3。然后呢", "请看memory:3。", "memory:3：退货", "memory:3、memory:3"):
        data = json_of(invoke_cli("--kb", root, "--json", "search", question, check=True))
        assert (data["memories"][0]["id"], data["warnings"]) == ("3", []), question
        assert NAMED in data["notes"], question
