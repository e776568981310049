from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slayer_kb.errors import InvalidIdError
from slayer_kb.ids import case_conflict, check_id, highest_auto_id, is_auto_id


@pytest.mark.parametrize("good", ["1", "0", "001", "kb.policy.42", "kb.paid-revenue", "Émile_ü", "x" * 200])
def test_valid_ids(good: str) -> None:
    assert check_id(good) == good


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("", "Memory id must not be empty; omit the id to get an auto id."),
        ("a:b", "Memory id 'a:b' contains ':'"),
        ("a/b", "Memory id 'a/b' contains '/'"),
        ("a/../b", "Memory id 'a/../b' contains '/'"),
        ("a?b", "contains '?'"),
        ("a#b", "contains '#'"),
        ("a\\b", "contains '\\\\'"),
        ("a b", "contains whitespace or an invisible/control character (U+0020)"),
        ("a\tb", "(U+0009)"),
        ("a\x00b", "(U+0000)"),
        ("abc\u200f", "(U+200F)"),
        (".", "Memory id '.' is not a usable file name"),
        ("..", "Memory id '..' is not a usable file name"),
        (".git", "starts with '.', which would make a hidden file"),
        ("-rf", "starts with '-'"),
        ("--help", "starts with '-'"),
        ("x" * 201, "Memory id is 201 bytes long; the limit is 200 bytes (UTF-8)."),
        ("é" * 101, "is 202 bytes long"),
    ],
)
def test_invalid_ids_say_why(bad: str, message: str) -> None:
    with pytest.raises(InvalidIdError) as info:
        check_id(bad)
    assert message in str(info.value)


def test_non_string_id() -> None:
    with pytest.raises(InvalidIdError, match="must be a string, not int"):
        check_id(42)


@pytest.mark.parametrize(
    ("value", "auto"),
    [
        ("1", True),
        ("42", True),
        ("0", True),
        ("001", False),
        ("kb.x", False),
        ("1.0", False),
        ("", False),
        ("٣", False),
    ],
)
def test_auto_id_shape(value: str, auto: bool) -> None:
    assert is_auto_id(value) is auto


def test_highest_auto_id_ignores_other_shapes() -> None:
    assert highest_auto_id(["3", "010", "kb.9", "12", "x"]) == 12
    assert highest_auto_id([]) == 0


def test_case_conflict() -> None:
    assert case_conflict("KB.x", ["kb.x", "y"]) == "kb.x"
    assert case_conflict("kb.x", ["kb.x"]) is None


@given(st.text(max_size=60))
def test_check_id_accepts_exactly_safe_file_names(value: str) -> None:
    try:
        check_id(value)
    except InvalidIdError:
        return
    # Whatever passes is a single, visible, non-hidden path component.
    assert value and value not in (".", "..")
    assert not any(ch in value for ch in ':/?#\\<>"|*\x00')
    assert value[0] not in ".-"
    assert not any(ch.isspace() for ch in value)
    assert len(value.encode("utf-8")) <= 200


@given(st.integers(min_value=0, max_value=10**12))
def test_every_int_is_an_auto_id(n: int) -> None:
    assert is_auto_id(str(n))
    assert not is_auto_id("0" + str(n))
