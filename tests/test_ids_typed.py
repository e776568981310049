"""An id typed in a form no memory has is shown as it was typed and told why: a decomposed accent
(``cafe`` + U+0301 for the saved ``café``) read "No memory with id 'café'; did you mean 'café'? ."
(two ids that look alike, a stray " ."), and a byte that is not UTF-8 was told as U+DCFF, the
surrogate Python holds it as, "whitespace or an invisible/control character"."""

from __future__ import annotations

from slayer_kb import KnowledgeBase
from testing import CliRunner

ID_FORM = ("An id is letters, digits, '.', '_' or '-', starting with a letter or digit: 12, "
           "kb.paid-revenue.")


def test_a_decomposed_spelling_of_an_id_is_told_its_nfc_form(indexed_example_kb: KnowledgeBase,
                                                                 invoke_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    invoke_cli("--kb", root, "save", "Café opening hours are nine to five on weekdays, ten to four on Saturdays.",
               "-e", "shop.orders", "--id", "café", check=True)
    got = invoke_cli("--kb", root, "get", "cafe\u0301")
    assert (got.returncode, got.stderr) == (1, (
        "Error: No memory with id 'cafe\\u0301'; did you mean 'café'? The id typed has decomposed accents (a letter "
        "and a combining mark); ids are in Unicode NFC, with composed ones: type it so, or paste it from search or "
        "list.\n"))
    assert invoke_cli("--kb", root, "get", "café", check=True).stdout.startswith("id: café\n")


def test_a_byte_that_is_not_utf8_is_shown_as_typed(indexed_example_kb: KnowledgeBase, run_cli: CliRunner) -> None:
    root = indexed_example_kb.root
    got = run_cli("--kb", root, "get", "a\udcffb")  # the byte 0xff on the command line
    assert (got.returncode, got.stderr) == (1, (
        "Error: Memory id 'a\\xffb' is not a valid id (it holds the byte \\xff, which is not UTF-8), so no memory "
        "has it; give the id of the memory to show (search and list show the ids). " + ID_FORM + "\n"))
    saved = run_cli("--kb", root, "save", "A memory whose id holds a byte that is no text.", "-e", "shop.orders",
                    "--id", "a\udcffb")
    assert (saved.returncode, saved.stderr) == (1, (
        "Error: Memory id 'a\\xffb' holds the byte \\xff, which is not UTF-8; type the id as UTF-8 text (letters, "
        "digits, '.', '_' or '-').\n"))
