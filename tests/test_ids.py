from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slayer_kb.core.errors import InvalidIdError
from slayer_kb.core.ids import (
    WINDOWS_RESERVED,
    case_conflict,
    check_id,
    check_new_id,
    highest_auto_file,
    highest_auto_id,
    is_auto_id,
    number_read,
)


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
    with pytest.raises(InvalidIdError, match="must be a string, not a number"):
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


def test_highest_auto_file_reads_only_memory_file_names() -> None:
    names = ["3.yaml", "010.yaml", "99.yml", "120.yaml.swp", ".500.yaml", "kb.9.yaml", "12.yaml", "7"]
    assert highest_auto_file(names) == 12
    assert highest_auto_file(["0.yaml"]) == 0
    assert highest_auto_file([]) == 0
    assert highest_auto_file(["9.yaml", "10.yaml", "100000.yaml", "99999.yaml"]) == 100000


# File names as os.listdir gives them: anything but "/" and NUL, digits and ".yaml" often.
_NAME = st.one_of(
    st.text(st.characters(blacklist_characters="/\x00"), min_size=1, max_size=12),
    st.from_regex(r"\A\.?[0-9]{1,6}(\.yaml)?(\.swp)?\Z"),
)


@given(st.lists(_NAME, max_size=30))
def test_highest_auto_file_agrees_with_highest_auto_id(names: list[str]) -> None:
    ids = [n[: -len(".yaml")] for n in names if n.endswith(".yaml") and not n.startswith(".")]
    assert highest_auto_file(names) == highest_auto_id(ids)


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


# -- ids that would name one file on macOS or Windows (issue 16, item 12) ------------------------

CAFE_NFC = "caf\u00e9"
CAFE_NFD = "cafe\u0301"
RESERVED = "CON, PRN, AUX, NUL, COM1-9, LPT1-9, in any letter case, also before a '.' as in nul.txt"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (CAFE_NFD, "Memory id 'cafe\\u0301' is not in Unicode NFC form (it has decomposed accents): "
                   "macOS names its file the same as the composed spelling, so the two would "
                   "collide. Use the NFC form 'caf\u00e9' instead."),
        ("CON", f"Memory id 'CON' is a device name Windows reserves ({RESERVED}): its file cannot "
                "exist on Windows. Choose another id, e.g. 'kb.CON'."),
        ("aux", f"Memory id 'aux' is a device name Windows reserves ({RESERVED}): its file cannot "
                "exist on Windows. Choose another id, e.g. 'kb.aux'."),
        ("nul.txt", f"Memory id 'nul.txt' begins with 'nul', a device name Windows reserves "
                    f"({RESERVED}): its file cannot exist on Windows. Choose another id, e.g. "
                    "'kb.nul.txt'."),
    ],
)
def test_new_ids_that_cannot_be_checked_out_everywhere_say_why(bad: str, message: str) -> None:
    assert check_id(bad) == bad  # still readable: an existing file can be fixed or forgotten
    with pytest.raises(InvalidIdError) as info:
        check_new_id(bad)
    assert str(info.value) == message


@pytest.mark.parametrize("name", ["PRN", "Nul", "com1", "COM9", "lpt1", "LpT9", "com\u00b9", "conin$", "AUX.tar.gz"])
def test_every_windows_device_name_is_refused(name: str) -> None:
    with pytest.raises(InvalidIdError, match="a device name Windows reserves"):
        check_new_id(name)


@pytest.mark.parametrize("good", ["kb.con", "console", "com10", "lpt0", "nul_", "auxiliary.x", "con-1", CAFE_NFC])
def test_names_merely_like_device_names_are_fine(good: str) -> None:
    assert check_new_id(good, ["other"]) == good


@pytest.mark.parametrize(
    ("new", "existing", "why"),
    [
        (CAFE_NFC, CAFE_NFD, "ids that differ only in Unicode normalisation (composed or decomposed accents)"),
        ("Caf\u00e9", CAFE_NFD, "ids that differ only in letter case and Unicode normalisation"),
        ("KB.x", "kb.x", "ids that differ only in letter case"),
    ],
)
def test_new_ids_colliding_with_existing_ones_name_them(new: str, existing: str, why: str) -> None:
    shown = ascii(existing)[1:-1] if existing == CAFE_NFD else existing
    with pytest.raises(InvalidIdError) as info:
        check_new_id(new, ["1", existing])
    assert str(info.value) == (
        f"Memory id '{new}' conflicts with existing '{shown}': {why} collide on macOS and Windows "
        "checkouts. Use the existing id or another name."
    )
    assert case_conflict(new, [existing]) == existing


# Letters whose case or composition macOS and Windows fold: accents with both spellings, and
# letters whose case changes their length ('ß' -> 'SS').
ALPHABET = "abzAZ09._-\u00e9\u00c9\u00fc\u00dc\u00df\u00f1\u00d1\u00e5\u00c5\u00e7\u00c7\u01c5\u1e9e"


@given(st.text(alphabet=ALPHABET, min_size=1, max_size=12), st.data())
def test_no_two_accepted_ids_name_one_file(first: str, data: st.DataObject) -> None:
    try:
        check_new_id(first)
    except InvalidIdError:
        return
    flips = data.draw(st.lists(st.booleans(), min_size=len(first), max_size=len(first)))
    second = "".join(ch.swapcase() if flip else ch for ch, flip in zip(first, flips, strict=True))
    if data.draw(st.booleans()):
        second = unicodedata.normalize("NFD", second)
    same_file = (unicodedata.normalize("NFD", first).casefold()
                 == unicodedata.normalize("NFD", second).casefold())
    assert same_file  # what macOS and Windows see: one name
    if second == first:
        assert check_new_id(second, [first]) == second  # replacing a memory is no collision
    else:
        with pytest.raises(InvalidIdError):
            check_new_id(second, [first])


@given(
    st.sampled_from(sorted(WINDOWS_RESERVED)),
    st.data(),
    st.sampled_from(["", ".txt", ".tar.gz", ".yaml", "."]),
)
def test_device_names_are_refused_in_any_case_and_with_any_extension(
    name: str, data: st.DataObject, extension: str
) -> None:
    flips = data.draw(st.lists(st.booleans(), min_size=len(name), max_size=len(name)))
    spelled = "".join(ch.upper() if flip else ch for ch, flip in zip(name, flips, strict=True)) + extension
    with pytest.raises(InvalidIdError, match="a device name Windows reserves"):
        check_new_id(spelled)


@given(st.text(max_size=40))
def test_check_new_id_accepts_only_portable_file_names(value: str) -> None:
    try:
        check_new_id(value)
    except InvalidIdError:
        return
    assert check_id(value) == value
    assert unicodedata.is_normalized("NFC", value)
    assert value.split(".", 1)[0].casefold() not in WINDOWS_RESERVED


_FULLWIDTH = str.maketrans("0123456789", "０１２３４５６７８９")
_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


@st.composite
def _number_spelling(draw: st.DrawFn) -> tuple[str, int]:
    """A whole number and one way Python's int() or float() reads a string as it."""
    n = draw(st.integers(0, 10**12))
    digits = str(n)
    forms = [digits, "0" * draw(st.integers(1, 3)) + digits, "+" + digits, digits + "." + "0" * draw(st.integers(0, 3)),
             "_".join(digits), f"{n:#x}", f"{n:#o}", f"{n:#b}", digits.translate(_FULLWIDTH),
             digits.translate(_ARABIC_INDIC)]
    if n:
        zeros = len(digits) - len(digits.rstrip("0"))
        shift = draw(st.integers(0, zeros))
        mantissa = digits[:len(digits) - shift]
        forms.append(f"{mantissa[0]}.{mantissa[1:] or '0'}e{len(mantissa) - 1 + shift}")  # 1.2e1
        forms.append(f"{mantissa}E+{shift}")
    return draw(st.sampled_from(forms)), n


def _python_reads(text: str) -> float | int | None:
    for parse in (int, lambda t: int(t, 0), float):
        try:
            return parse(text)
        except ValueError:
            pass
    return None


@given(_number_spelling())
def test_every_spelling_python_reads_as_a_whole_number_reads_as_that_number(spelling: tuple[str, int]) -> None:
    """The rule rename refuses by and a lookup's "did you mean" maps by is Python's: what int()
    (any base it takes with a prefix) or float() reads as a whole number N >= 0 reads as N
    (``012``, ``+12``, ``12.0``, ``1_2``, ``0xc``, ``1.2e1``, ``１２``)."""
    text, n = spelling
    assert _python_reads(text) == n  # the spelling is one Python reads so
    assert number_read(text) == str(n)


@given(st.text("0123456789+-._eExXbBoOafinN１٣ ", max_size=12)
       | st.builds(lambda n, tail: f"{n}{tail}", st.integers(0, 99), st.sampled_from([".5", "e-1", ".25e1", "x"])))
def test_what_reads_as_a_number_python_reads_as_that_number(text: str) -> None:
    """Nothing else reads as a number: not a fraction (``1.5``, ``1e-1``), not what Python
    refuses (``1e``, ``x1``), not a negative or no finite number (``-1``, ``inf``, ``nan``),
    not a decimal that float() only rounds to a whole number (``1e-400``)."""
    read = number_read(text)
    if read is not None:
        assert _python_reads(text) == int(read) and is_auto_id(read)


@pytest.mark.parametrize("text", ["1.5", "1e-1", "-1", "inf", "nan", "1e", "x1", "0x", "1e-400", "1" + "0" * 200,
                                  "1.0000000000000000001", "kb.1"])
def test_what_no_number_is(text: str) -> None:
    assert number_read(text) is None
