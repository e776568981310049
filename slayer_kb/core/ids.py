"""Memory ids: the rules a given id must pass, and what counts as an auto id.

An id is also a file name (``memories/<id>.yaml``) on every platform a knowledge base is checked
out on, so the seed's rules (no ``:`` ``/`` ``?`` ``#`` ``\\`` whitespace or control characters)
are extended with what would make a bad or dangerous file name.

:func:`check_id` is what any id must pass to be read or referred to. A *new* id (a save, an
import, a restore) must also pass :func:`check_new_id`: it must name a file that can be checked
out everywhere (no Windows device name, Unicode NFC) and must not name the same file as an
existing id on macOS or Windows (ids differing only in letter case or in Unicode normalisation).
Existing files that break these rules stay readable, so they can still be fixed or forgotten.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from .errors import InvalidIdError, NotFoundError
from .locate import MEMORY_LINK, id_of_memory_file
from .text import kind_of

MAX_ID_BYTES = 200
# A given int-shaped id makes every later auto id count on from it, so a long one would make
# them all as long (and, at 200 digits, too long to be ids at all); past 15 digits JSON readers
# that hold numbers as doubles lose digits too.
MAX_AUTO_DIGITS = 15
# ':' '/' '?' '#' '\' are the seed's; '<' '>' '"' '|' '*' cannot appear in Windows file names.
FORBIDDEN_CHARS = frozenset(':/?#\\<>"|*')
# Cc control, Cf format (right-to-left marks, zero-width joiners: they disguise a name),
# Cs lone surrogates (not encodable as a file name), Zl/Zp/Zs separators (whitespace).
FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"})
# Device names Windows reserves in every folder, whatever the case and whatever follows a '.'
# (NUL.txt and nul.tar.gz are NUL too); ¹ ² ³ count as digits there.
WINDOWS_RESERVED = frozenset(
    ["con", "prn", "aux", "nul", "conin$", "conout$"]
    + [f"{port}{n}" for port in ("com", "lpt") for n in "123456789\u00b9\u00b2\u00b3"]
)
_AUTO_ID = re.compile(r"(?:0|[1-9][0-9]*)\Z")
# A lone surrogate as ascii() writes it, standing for a byte that is not UTF-8 (surrogateescape).
_SURROGATE_BYTE = re.compile(r"\\udc([89a-f][0-9a-f])")
# What to do about an empty id where a new memory takes it (a save, an import).
NEW_ID_FIX = "omit the id to get an auto id"


# Where an agent finds the id of an existing memory: the CLI's commands, or the MCP tools (MCP
# has no list).
_IDS_SHOWN = "search and list show the ids"
_IDS_SHOWN_TO_TOOLS = "the search, mem_search and mem_context tools show the ids"


def check_existing_id(memory_id: object, purpose: str) -> str:
    """:func:`check_id` where a command acts on an existing memory: an id that is empty or no
    valid id is told to give the memory's id, ``purpose`` saying what the command does with it
    ("to forget"), and what an id looks like; not the advice for a new id ("choose another")."""
    fix = f"give the id of the memory {purpose}"
    return check_sought_id(memory_id, f"{fix} ({_IDS_SHOWN})", f"{fix} ({_IDS_SHOWN_TO_TOOLS})")


# What to give instead of a link's id that is no id (``check_link_id``).
LINK_FIX = "write memory:<id> with the id of a saved memory"


def check_link_id(memory_id: object) -> str:
    """:func:`check_sought_id` of the id in a ``memory:<id>`` link, which names a saved memory; what
    names one but is not its id is told the link to write (``memory:12``, not the id alone)."""
    if isinstance(memory_id, str) and memory_id:
        _refuse_a_name_of_an_id(memory_id, link=True)
    return check_sought_id(memory_id, LINK_FIX)


def check_sought_id(memory_id: object, cli_fix: str, tool_fix: str | None = None) -> str:
    """:func:`check_id` of an id given to find a memory (a command's, a link's, the id sync
    moved): one that is empty or no valid id is told ``cli_fix`` (``tool_fix`` in an MCP
    client's terms) and what an id looks like, not a new id's advice ("choose another")."""
    if isinstance(memory_id, str) and memory_id:
        _refuse_a_name_of_an_id(memory_id)
        problem = _id_problem(memory_id)
        if problem is not None:
            subject = "The id given" if problem.too_long else f"Memory id '{_typed(memory_id)}'"
            said = f"{subject} is not a valid id ({problem.reason}), so no memory has it; {{}}. {_ID_FORM}"
            raise InvalidIdError(said.format(cli_fix), tool_message=tool_fix and said.format(tool_fix))
    return check_id(memory_id, cli_fix, tool_fix=tool_fix)


def _refuse_a_name_of_an_id(given: str, link: bool = False) -> None:
    """Refuse, naming the id, what names a memory but is not its id: the link ``memory:7`` an
    agent copies from a memory's entities, the file ``memories/7.yaml`` a person copies from a
    pull request, an id with blanks around it. ``link``: ``given`` is the id in a ``memory:``
    link, whose fix is the link written with the id alone."""
    for what, inner in (("a link to a memory", given.removeprefix(MEMORY_LINK)),
                        ("a memory's file", id_of_memory_file(given) or given),
                        ("an id with blanks around it", given.strip())):
        if inner != given and is_valid_id(inner):
            if link:
                raise InvalidIdError(f"'{MEMORY_LINK}{_typed(given)}' holds {what}, not a memory id: write the link "
                                     f"as '{MEMORY_LINK}{_typed(inner)}'.")
            raise InvalidIdError(f"'{_typed(given)}' is {what}, not a memory id: give the id alone, "
                                 f"'{_typed(inner)}'.")


def _typed(text: str) -> str:
    """``text`` as it is typed, what cannot be seen in it escaped (a newline, a zero-width space):
    an id to give back is shown as the user gives it, not ASCII-escaped."""
    return "".join(ch if ch.isprintable() else escaped_id(ch) for ch in text)


def is_valid_id(text: str) -> bool:
    """Whether ``text`` passes :func:`check_id`."""
    try:
        check_id(text)
    except InvalidIdError:
        return False
    return True


def check_id(memory_id: object, empty_fix: str = NEW_ID_FIX, tool_fix: str | None = None) -> str:
    """Return ``memory_id`` if it is a valid id, else raise :class:`InvalidIdError` saying why;
    ``empty_fix`` says what to do instead of an empty id, which differs by command, and
    ``tool_fix`` the same in an MCP client's terms when it names commands."""
    if not isinstance(memory_id, str):
        raise InvalidIdError(f"Memory id must be a string, not {kind_of(memory_id)}.")
    if memory_id == "":
        said = "Memory id must not be empty; {}."
        raise InvalidIdError(said.format(empty_fix), tool_message=tool_fix and said.format(tool_fix))
    problem = _id_problem(memory_id)
    if problem is not None:
        raise InvalidIdError(problem.message)
    return memory_id


# What an id looks like, for the message about one given to find a memory that is no id.
_ID_FORM = "An id is letters, digits, '.', '_' or '-', starting with a letter or digit: 12, kb.paid-revenue."


@dataclass(frozen=True)
class _IdProblem:
    """Why a non-empty string is no valid id: ``message`` as a new id is told it (with what to
    choose instead), ``reason`` alone for a message about an id given to find a memory."""

    message: str
    reason: str
    too_long: bool = False  # the reason, not the message, holds the id's length: it is not quoted


def _id_problem(memory_id: str) -> _IdProblem | None:
    # Before its characters: the messages below quote the whole id, and a 17 MB one sent by an
    # agent took seconds to look through (surrogatepass: a lone surrogate is told below).
    size = len(memory_id.encode("utf-8", "surrogatepass"))
    if size > MAX_ID_BYTES:
        return _IdProblem(f"Memory id is {size} bytes long; the limit is {MAX_ID_BYTES} bytes (UTF-8). Choose a "
                          f"shorter id.", f"it is {size} bytes long; an id is at most {MAX_ID_BYTES} bytes", too_long=True)
    shown = escaped_id(memory_id)
    for ch in memory_id:
        if 0xDC80 <= ord(ch) <= 0xDCFF:  # a byte of a command line that is not UTF-8 (surrogateescape)
            byte = f"\\x{ord(ch) - 0xDC00:02x}"
            return _IdProblem(
                f"Memory id '{shown}' holds the byte {byte}, which is not UTF-8; type the id as UTF-8 text "
                "(letters, digits, '.', '_' or '-').", f"it holds the byte {byte}, which is not UTF-8")
        if ch in FORBIDDEN_CHARS:
            return _IdProblem(
                f"Memory id '{shown}' contains {ch!r}; ids may not contain "
                f"{' '.join(sorted(FORBIDDEN_CHARS))}. Use letters, digits, '.', '_' or '-'.",
                f"it contains {ch!r}")
        if is_invisible(ch):
            return _IdProblem(
                f"Memory id '{shown}' contains {invisible_words(ch).replace(', U+', ' (U+')}); use letters, digits, "
                "'.', '_' or '-'.", f"it contains {invisible_words(ch)}")
    if memory_id in (".", ".."):
        return _IdProblem(f"Memory id '{memory_id}' is not a usable file name; choose another.",
                          "it names a folder, not a file")
    if memory_id[0] in ".-":
        return _IdProblem(
            f"Memory id '{shown}' starts with {memory_id[0]!r}, which would make a hidden file or "
            "look like a command-line option; start it with a letter or digit.",
            f"it starts with {memory_id[0]!r}")
    return None


def is_invisible(ch: str) -> bool:
    """Whether ``ch`` is whitespace or a character one does not see (``FORBIDDEN_CATEGORIES``:
    a zero-width space, a direction mark, a soft hyphen, a control character)."""
    return ch.isspace() or unicodedata.category(ch) in FORBIDDEN_CATEGORIES


def invisible_words(ch: str) -> str:
    """What an error calls ``is_invisible``'s ``ch``: the text shows it escaped, or not at all."""
    return f"whitespace or an invisible/control character, U+{ord(ch):04X}"


def is_auto_id(memory_id: str) -> bool:
    """Int-shaped: digits, no leading zero. ``001`` and ``kb.x`` are not auto ids."""
    return _AUTO_ID.match(memory_id) is not None


def number_read(memory_id: str) -> str | None:
    """The auto id ``memory_id`` reads as, written as one, or None when it is no number. It
    reads as the whole number N >= 0 that Python reads it as (after NFKC: a fullwidth ``１`` is a
    ``1``): int() (``012``, ``+12``, ``1_2``, other scripts' digits, ``١٢``), int() of a
    prefixed base (``0xc``, ``0o14``, ``0b1100``), float() exactly (``12.0``, ``1.2e1``; not
    ``1e-400``, which it rounds to 0). ``12`` itself reads as ``12``."""
    text = unicodedata.normalize("NFKC", memory_id)
    for base in (10, 0):  # 0: Python's prefixes, which refuse leading zeros (base 10 takes them)
        with contextlib.suppress(ValueError):
            return _whole(int(text, base))
    try:
        value = float(text)
    except ValueError:
        return None
    # The decimal written must be the whole number itself, not one float() rounds to it.
    from decimal import Decimal  # on use: only an id that reads as a float gets here

    return _whole(int(value)) if value.is_integer() and Decimal(text) == value else None


def _whole(value: int) -> str | None:
    plain = str(value)
    return plain if value >= 0 and len(plain) <= MAX_ID_BYTES else None


def meant_id(memory_id: str, exists: Callable[[str], bool], listed: Callable[[], Iterable[str]] | None = None) -> str:
    """For the error of an id no memory has: ``"; did you mean '1'? ..."`` (to end with a
    ".") when the id is another spelling of an existing auto id (``01``, ``+1``, ``1.0``, a
    fullwidth ``１``), else ``""``. Such ids are valid ids of their own (``001`` may be saved), so they are not taken
    for the number: the agent is told which id it probably meant. ``listed``: every id there is,
    for one in another letter case (``KB.Fiscal-Calendar``), asked only when nothing else is meant."""
    plain = number_read(memory_id)
    if plain is not None and plain != memory_id and exists(plain):
        return (f"; did you mean '{plain}'? An auto id is written in plain ASCII digits, without a sign, "
                "leading zeros or decimals")
    composed = unicodedata.normalize("NFC", memory_id)
    # An accent typed decomposed (macOS's file names, some keyboards): the same-looking id in NFC.
    if composed != memory_id and is_valid_id(composed) and exists(composed):
        return (f"; did you mean '{composed}'? The id typed has decomposed accents (a letter and a combining "
                "mark); ids are in Unicode NFC, with composed ones: type it so, or paste it from search or list")
    latin = latin_spelling(memory_id)
    # Only an id (fullwidth '．．／' reads as '../': never a path to look at).
    if latin != memory_id and is_valid_id(latin) and exists(latin):
        return f"; did you mean '{latin}'? {looks_latin(memory_id) or 'It is that id in other Unicode characters'}"
    if listed is not None:
        folded = fold_id(latin)
        ids = list(listed())
        cased = [i for i in ids if i != memory_id and fold_id(i) == folded]
        if len(cased) == 1:
            return f"; did you mean '{cased[0]}'? Ids are case-sensitive: type it as the memory has it"
        if not memory_id.isdigit():  # a number one digit off is another memory, not a slip
            close = _close_spellings(memory_id, ids)
            if close:
                return f"; the nearest id{' is' if len(close) == 1 else 's are'} {' and '.join(repr(i) for i in close)}"
    return ""


def _close_spellings(memory_id: str, ids: list[str]) -> list[str]:
    """At most two named ids spelt nearly as ``memory_id`` (``kb.fiscal-calender``): those of
    about its length and first letter, so a KB of 100,000 ids compares a few."""
    import difflib

    near = [i for i in ids if abs(len(i) - len(memory_id)) <= 2 and i[:1] == memory_id[:1] and not i.isdigit()]
    return difflib.get_close_matches(memory_id, near, n=2, cutoff=0.85)


def no_memory(memory_id: str, exists: Callable[[str], bool], what: str = "No memory with id '{}'",
              listed: Callable[[], Iterable[str]] | None = None) -> NotFoundError:
    """The error for an id no memory has (``what`` with the id), naming the id it probably
    meant (``meant_id``)."""
    return NotFoundError(what.format(_shown_id(memory_id)) + meant_id(memory_id, exists, listed) + ".")


def highest_auto_id(ids: Iterable[str]) -> int:
    # is_auto_id spelled with str methods: a save scans every id, and this is twice as fast.
    return max((int(i) for i in ids if i.isascii() and i.isdigit() and (i[0] != "0" or i == "0")), default=0)


# An auto id's file name among names joined by "/", which no file name holds.
_AUTO_FILE = re.compile(r"(?<![^/])(0|[1-9][0-9]*)\.yaml(?![^/])")


def highest_auto_file(names: list[str]) -> int:
    """``highest_auto_id`` of the memory files (``<id>.yaml``) among the file names ``names``.

    A save takes the next auto id after every file of the work tree; the scan runs in the regex
    engine, as one pass over the joined names, twice as fast as a loop over 100,000 names.
    """
    found = _AUTO_FILE.findall("/".join(names))
    if not found:
        return 0
    width = max(map(len, found))  # no leading zeros: the longest ids are the largest
    return int(max(i for i in found if len(i) == width))


@dataclass(frozen=True)
class NewIdAdvice:
    """What a command that gives a memory a new id says of one it cannot take: a save's words by
    default (an id may be a number, and a memory whose id differs only in letter case may be the
    one meant). ``numbers``: refuse every id that reads as a number, with this fix (a rename's
    ids are names); ``clash``: the error for an id ``case_conflict`` matched, ``{new}``,
    ``{other}`` (shown escaped where it passed no check) and ``{difference}`` filled in."""

    numbers: str | None = None
    clash: str = ("Memory id '{new}' conflicts with existing '{other}': ids that differ only in {difference} "
                  "collide on macOS and Windows checkouts. Use the existing id or another name.")


SAVE_ADVICE = NewIdAdvice()


def check_new_id(memory_id: object, existing: Iterable[str] = (), advice: NewIdAdvice = SAVE_ADVICE) -> str:
    """Return ``memory_id`` if a new memory may take it, else raise :class:`InvalidIdError` with
    the caller's ``advice``.

    On top of :func:`check_id`: the id is in Unicode NFC, is no Windows device name, and names
    no file that an id of ``existing`` names on macOS or Windows (see :func:`check_no_clash`).
    """
    memory_id = check_id(memory_id)
    if advice.numbers is not None and (plain := number_read(memory_id)) is not None:
        said = "is a number" if plain == memory_id else f"reads as the number '{plain}'"
        raise InvalidIdError(
            f"Memory id '{memory_id}' {said}, as auto ids are: slayer-kb allocates those to new memories (one "
            f"above every number used), they are not chosen. {advice.numbers}")
    if not unicodedata.is_normalized("NFC", memory_id):
        composed = unicodedata.normalize("NFC", memory_id)
        raise InvalidIdError(
            f"Memory id '{ascii(memory_id)[1:-1]}' is not in Unicode NFC form (it has decomposed "
            "accents): macOS names its file the same as the composed spelling, so the two would "
            f"collide. Use the NFC form '{composed}' instead."
        )
    # From here on the id has passed check_id: nothing invisible, so it is shown as it is.
    stem = memory_id.split(".", 1)[0]
    if stem.casefold() in WINDOWS_RESERVED:
        what = "is" if stem == memory_id else f"begins with '{stem}',"
        raise InvalidIdError(
            f"Memory id '{memory_id}' {what} a device name Windows reserves (CON, PRN, AUX, NUL, "
            "COM1-9, LPT1-9, in any letter case, also before a '.' as in nul.txt): its file cannot "
            f"exist on Windows. Choose another id, e.g. 'kb.{memory_id}'."
        )
    check_look_alike(memory_id)
    if len(memory_id) > MAX_AUTO_DIGITS and is_auto_id(memory_id):
        raise InvalidIdError(
            f"Memory id '{memory_id}' is a number of {len(memory_id)} digits: every later auto id "
            f"would count on from it. Use a number of at most {MAX_AUTO_DIGITS} digits, a name such as "
            "'kb.orders-total', or omit the id to get an auto id."
        )
    check_no_clash(memory_id, existing, advice)
    return memory_id


def check_no_clash(memory_id: str, existing: Iterable[str], advice: NewIdAdvice = SAVE_ADVICE) -> None:
    """Refuse, in ``advice``'s words, a new id that names one file with an id of ``existing`` on
    macOS and Windows checkouts (:func:`case_conflict`)."""
    other = case_conflict(memory_id, existing)
    if other is not None:
        raise InvalidIdError(advice.clash.format(new=memory_id, other=_shown_id(other),
                                                 difference=_folded_difference(memory_id, other)))


def _shown_id(memory_id: str) -> str:
    """An existing id as a message shows it: one that passed no check (decomposed, invisible
    characters) with escapes."""
    plain = memory_id.isprintable() and unicodedata.is_normalized("NFC", memory_id)
    return memory_id if plain else escaped_id(memory_id)


def escaped_id(memory_id: str) -> str:
    """``memory_id`` in ASCII (``save --id`` shows ``cafe\\u0301`` so), a byte of a command line
    that is not UTF-8 as ``\\xff`` as it was typed, not the surrogate Python holds it as."""
    return _SURROGATE_BYTE.sub(r"\\x\1", ascii(memory_id)[1:-1])


def _folded_difference(memory_id: str, other: str) -> str:
    """How two ids that ``case_conflict`` matched differ: what macOS and Windows fold away."""
    if unicodedata.normalize("NFC", other) == memory_id:
        return "Unicode normalisation (composed or decomposed accents)"
    if other.casefold() == memory_id.casefold():
        return "letter case"
    return "letter case and Unicode normalisation"


# The scripts whose letters look alike (Latin a, Cyrillic а, Greek α): one word mixing them
# reads as another word of one script.
_CONFUSABLE_SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def check_look_alike(memory_id: str) -> None:
    """Refuse a new id that reads as another one: digits of other scripts or widths that read as
    an auto id (``１２``, ``١٢`` beside ``12``), compatibility forms (fullwidth letters, ligatures,
    superscripts) and words mixing Latin, Cyrillic and Greek letters (``kb.оrders`` with a
    Cyrillic ``о``). An agent told the one would type the other, and find nothing or a
    neighbour's memory. The error names the plain spelling when there is one."""
    if memory_id.isascii():
        return
    if memory_id.isdecimal():
        plain = "".join(str(unicodedata.decimal(ch)) for ch in memory_id)
        raise InvalidIdError(
            f"Memory id '{memory_id}' is made of non-ASCII digits that read as the id '{plain}' "
            f"(auto ids are ASCII digits): use '{plain}', or omit the id to get an auto id."
        )
    dash = next((ch for ch in memory_id if ch in _DASHES), None)
    if dash is not None:
        plain = memory_id.translate(_TO_LATIN)
        fix = f"use '{plain}'" if plain.isascii() and is_valid_id(plain) else "use the ASCII '-'"
        raise InvalidIdError(f"Memory id '{memory_id}' contains {_named(dash)}, which looks like '-' but names "
                             f"another file; {fix}.")
    compatible = unicodedata.normalize("NFKC", memory_id)
    if compatible != memory_id:
        odd = next(ch for ch in memory_id if unicodedata.normalize("NFKC", ch) != ch)
        try:
            fix = f"use the plain spelling '{check_id(compatible)}'"
        except InvalidIdError:
            fix = "use plain letters and digits"
        raise InvalidIdError(
            f"Memory id '{memory_id}' contains {_named(odd)}, a compatibility form (fullwidth, "
            f"ligature, superscript...) that reads as '{compatible}'; {fix}."
        )
    for word in re.findall(r"[^\W\d_]+", memory_id):
        scripts: dict[str, str] = {}  # script -> its first letter in the word
        for ch in word:
            script = unicodedata.name(ch, "").split(" ", 1)[0]
            if script in _CONFUSABLE_SCRIPTS:
                scripts.setdefault(script, ch)
        if len(scripts) > 1:
            mixed = " and ".join(f"{script.title()} ({_named(ch)})" for script, ch in sorted(scripts.items()))
            raise InvalidIdError(
                f"Memory id '{memory_id}' mixes the letters of {mixed} in the word '{word}': it looks "
                "like a word of one script but names another file. Spell each word in one script."
            )


# The Cyrillic and Greek letters drawn as a Latin one (Unicode's confusables of ASCII letters):
# what a word typed with one, often from another keyboard layout, was meant to be.
_LATIN_LOOKS = dict(zip(
    "аеорсухіјѕԁһӏԛԝкАВЕКМНОРСТХІЈЅУοαικνρυΑΒΕΖΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdhlqwkABEKMHOPCTXIJSYoaikvpuABEZHIKMNOPTYX", strict=True))
# Dashes drawn as the ASCII hyphen-minus (general punctuation's hyphens and dashes, their
# presentation and fullwidth forms, minus signs): pasted from a document, ``kb.fiscal‐calendar``
# names another file than ``kb.fiscal-calendar``. A script's own hyphen (Hebrew maqaf, Armenian,
# CJK wave dashes) is part of its words, and kept.
_DASHES = ("\u2010\u2011\u2012\u2013\u2014\u2015\u2e17\u2e1a\u2e3a\u2e3b\u2e40\ufe31\ufe32\ufe58\ufe63\uff0d"
           "\u2212\u02d7\u2043\u2796")
_TO_LATIN = str.maketrans({**_LATIN_LOOKS, **dict.fromkeys(_DASHES, "-")})


def latin_spelling(text: str) -> str:
    """``text`` with each letter that only looks Latin (a Cyrillic ``о``, a Greek ``ο``, a
    fullwidth ``ｏ``) written as the Latin letter it looks like."""
    if text.isascii():
        return text
    return unicodedata.normalize("NFKC", text).translate(_TO_LATIN)


def looks_latin(text: str) -> str:
    """A sentence naming ``text``'s letters that only look Latin (``latin_spelling``), without its
    full stop (``meant_id``'s callers add it), or ``""``."""
    odd = list(dict.fromkeys(ch for ch in text if not ch.isascii() and latin_spelling(ch) != ch))
    if not odd:
        return ""
    named = ", ".join(f"'{ch}' ({_named(ch)})" for ch in odd)
    alike = ", ".join(f"'{latin_spelling(ch)}'" for ch in odd)
    letters = all(ch.isalpha() for ch in odd)
    return (f"It holds {named}, which only {'looks' if len(odd) == 1 else 'look'} like the "
            f"{'Latin' if letters else 'ASCII'} {alike}: type it in {'Latin letters' if letters else 'ASCII'}")


def _named(ch: str) -> str:
    return f"U+{ord(ch):04X} {unicodedata.name(ch, '?')}"


def fold_id(memory_id: str) -> str:
    """The key under which macOS and Windows see two ids as one file name: letter case and
    Unicode normalisation folded (Unicode's canonical caseless matching)."""
    if memory_id.isascii():
        return memory_id.lower()
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", memory_id).casefold())


def free_variant(memory_id: str, folded: Collection[str]) -> str:
    """The first ``ID-2``, ``ID-3``, ... whose ``fold_id`` is not in ``folded`` (the folded ids
    it must not collide with): the id rename, sync's keep-both steps and validate suggest."""
    return next(name for n in itertools.count(2) if fold_id(name := f"{memory_id}-{n}") not in folded)


def case_conflict(memory_id: str, existing: Iterable[str]) -> str | None:
    """The existing id that differs from ``memory_id`` only by letter case or Unicode
    normalisation, if any.

    Such ids are distinct in git but collide on case-insensitive, normalising checkouts (macOS,
    Windows).
    """
    folded = fold_id(memory_id)
    for other in existing:
        # fold_id inlined for the ASCII ids a save compares against by the hundred thousand
        if (other.lower() if other.isascii() else fold_id(other)) == folded and other != memory_id:
            return other
    return None


def id_sort_key(memory_id: str) -> tuple[int, int, str]:
    """Auto ids in numeric order first, then the others by name: the order people expect."""
    return (0, int(memory_id), "") if is_auto_id(memory_id) else (1, 0, memory_id)
