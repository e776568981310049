"""Checks every operation applies to what a person or an agent hands it, whichever adapter
(CLI, MCP, the library) it came through."""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import os
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InvalidInputError
from .fileio import NotRegularFile, TooLarge, read_regular, refuses_folders
from .memory import DEFAULT_MAX_CONTENT, MAX_CONTENT_CEILING, MAX_DESCRIPTION


def readable(value: str | None) -> str | None:
    """Text with what is not valid Unicode replaced (search is lenient about its input)."""
    return value.encode("utf-8", "replace").decode("utf-8") if isinstance(value, str) else value


def check_unicode(value: Any, name: str) -> None:
    """Refuse text that cannot be written as UTF-8: a lone surrogate (from bytes that were not
    UTF-8, e.g. in a command-line argument) would otherwise fail half-way through a save."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                bad = item[exc.start]
                raise InvalidInputError(
                    f"{name} contains U+{ord(bad):04X}, which is not valid Unicode text (often bytes "
                    "that are not UTF-8); fix the text's encoding and retry."
                ) from None
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


# Spaces, line breaks and the characters that print as nothing: controls, and the format
# characters (zero-width space, joiners, direction marks, the byte-order mark, the interlinear
# annotation marks and Egyptian hieroglyph joiners, which print nothing of their own).
_INVISIBLE = frozenset({"Cc", "Cf", "Zl", "Zp", "Zs"})
# The format characters that print a sign of their own (Unicode's Prepended_Concatenation_Mark:
# Arabic number signs, the end of ayah U+06DD, the Syriac abbreviation mark, Kaithi's number signs).
_VISIBLE_FORMAT = frozenset("\u0600\u0601\u0602\u0603\u0604\u0605\u06dd\u070f\u0890\u0891\u08e2"
                            "\U000110bd\U000110cd")
# Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt) beyond the format characters,
# which unicodedata does not name: a renderer shows none of them alone. The combining grapheme
# joiner U+034F, the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0), Khmer's inherent vowels
# (U+17B4-5), Mongolian's variation selectors (U+180B-F), the variation selectors (U+FE00-F,
# U+E0100-E01EF), and the code points Unicode keeps ignorable for characters to come.
_IGNORABLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2065, 0x2065),
              (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0xE0000, 0xE0FFF))
# The braille blank U+2800 is no default-ignorable (it is braille's space, a cell of no dots) but
# prints as a space: a text of only it says nothing either.
_BLANK_SYMBOL = "\u2800"


def _invisible(ch: str) -> bool:
    if ch.isspace() or ch == _BLANK_SYMBOL:
        return True
    if unicodedata.category(ch) in _INVISIBLE:
        return ch not in _VISIBLE_FORMAT
    code = ord(ch)
    return any(low <= code <= high for low, high in _IGNORABLE)


def blank(value: Any) -> bool:
    """True for what is not text, or text with nothing visible in it (``str.strip`` keeps a
    zero-width space, so ``"\u200b"`` passed as a learning)."""
    return not isinstance(value, str) or all(_invisible(ch) for ch in value)


def checked_learning(learning: Any, limit: int, name: str = "learning", tool_name: str | None = None) -> str:
    """``learning`` (or the field ``name``) as given, refused when blank or over ``limit`` bytes;
    ``tool_name``: what an MCP tool calls it, where that differs (mem_update's ``content``). Free
    of the KB: ``save`` checks a learning it was given before it reads a ``--query -`` from stdin."""
    def refused(problem: str) -> InvalidInputError:
        return InvalidInputError(name + problem, tool_message=tool_name and tool_name + problem)

    if blank(learning):
        raise refused(" is empty: write what was learned (it is required and must not be blank).")
    check_unicode(learning, name)  # a lone surrogate is told, not a crash counting bytes
    size = len(learning.encode("utf-8"))
    if size > limit:
        raise refused(f" is {size} bytes; the limit is {limit} bytes. Split it into several memories "
                      "or raise the limit with SLAYER_KB_MAX_CONTENT (bytes).")
    return learning


def content_limit(env: Mapping[str, str] | None = None) -> int:
    """The size limit of a text (``SLAYER_KB_MAX_CONTENT``, bytes, of ``env``, else this process's),
    else the default: what a save refuses past, and validate reports a file past."""
    return whole_number("SLAYER_KB_MAX_CONTENT", DEFAULT_MAX_CONTENT, "bytes", MAX_CONTENT_CEILING, env=env)


def check_folder_named(folder: str | os.PathLike[str], what: str, example: str) -> None:
    """Refuse a blank folder name: an unset shell variable (``init "$DIR"``) would otherwise mean
    the current folder, or make a folder named ' '."""
    if not os.fspath(folder).strip():
        raise InvalidInputError(f"{what} is blank ({os.fspath(folder)!r}): give a folder, e.g. '{example}' ('.' for "
                                "the current one).")


def check_description(description: Any) -> str | None:
    """A description, trimmed, refused when it is not text or longer than MAX_DESCRIPTION."""
    if description is None:
        return None
    if not isinstance(description, str):
        raise InvalidInputError("description must be a string.")
    description = description.strip()
    if len(description) > MAX_DESCRIPTION:
        raise InvalidInputError(
            f"description is {len(description)} characters long; the limit is {MAX_DESCRIPTION}. "
            "Put the detail in the learning."
        )
    return description or None


def whole_number(variable: str, default: int, unit: str, most: int | None = None,
                 env: Mapping[str, str] | None = None) -> int:
    """The environment variable ``variable`` (of ``env``, else this process's), a whole number of
    ``unit`` above 0 (and at most ``most``), or ``default`` when it is unset or blank; anything
    else is an error that names it, its default and the fix (``int()`` of it was a traceback on
    every command)."""
    value = (os.environ if env is None else env).get(variable, "").strip()
    if not value:
        return default
    number = int(value) if value.isascii() and value.isdigit() else 0
    if number < 1:
        raise InvalidInputError(
            f"{variable} is {value!r}, not a number of {unit}; set it to a whole number above 0 "
            f"(the default is {default}) or unset it.")
    if most is not None and number > most:
        raise InvalidInputError(
            f"{variable} is {value!r}; the most it may be is {most} {unit}. Set it to at most {most} "
            f"(the default is {default}) or unset it.")
    return number


def given_text(data: bytes) -> str:
    """The text of a file a person or an agent named: UTF-8, a byte-order mark dropped (Windows
    editors write one), or UTF-16 after its mark (Windows PowerShell's ``>`` writes that). Raises
    UnicodeDecodeError for anything else."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return data.decode("utf-16")
    return data.decode("utf-8-sig")


def read_given_file(path: str | os.PathLike[str], what: str, limit: int | None = None,
                    fix: str = "give a regular file") -> bytes:
    """The bytes of a file a person or an agent named (``--query @FILE``, an export to import):
    a link is followed (they chose it), but only a regular file is read: a FIFO would block the
    command for ever and ``/dev/zero`` never ends (it took 10 GB of memory). With ``limit``, a
    larger file is refused by its size, unread. ``fix`` ends the message for anything else."""
    if not os.fspath(path):  # ``--query @``: the OS's "No such file" quoted an empty name
        raise InvalidInputError(f"Cannot read {what}: its path is empty; {fix}.")
    try:
        return read_regular(path, follow_symlinks=True, limit=limit)
    except NotRegularFile as exc:
        raise InvalidInputError(f"Cannot read {what} {os.fspath(path)}: it {exc.strerror}; {fix}.") from None
    except TooLarge as exc:
        raise InvalidInputError(f"Cannot read {what} {os.fspath(path)}: it is {exc.size} bytes, and the most "
                                f"slayer-kb reads is {limit} bytes; give a smaller file.") from None
    except OSError as exc:
        raise InvalidInputError(f"Cannot read {what} {os.fspath(path)}: {exc.strerror}.") from None


def make_given_folder(path: Path, what: str) -> Path | None:
    """Create (with its parents) a folder a person or an agent named to write into (``init DIR``,
    ``export-slayer DIR``), or say which path refused it, why, and what to give instead: the OS's
    own error names neither the folder in the way nor the fix. Returns the outermost folder it
    created (None: the folder was there), which a caller that fails later removes; a failure
    here removes the parents it made."""
    missing = [p for p in (path, *path.parents) if not (p.exists() or p.is_symlink())]
    # A folder that is there may still take nothing (/proc): git would say only "No such file".
    if not missing and path.is_dir() and (refused := refuses_folders(path)) is not None:
        raise InvalidInputError(f"Cannot use {what} {path}: it takes no new folder ({refused}); give a path in a "
                                "folder you can write to.")
    made_here: list[Path] = []
    try:
        for folder in reversed(missing):  # outermost first
            try:
                folder.mkdir()
            except FileExistsError:
                if not folder.is_dir():
                    raise
                continue  # made by another process meanwhile (two inits at once): not this one's to remove
            made_here.append(folder)
        path.mkdir(parents=True, exist_ok=True)  # what is at ``path`` itself (a link to nothing): said below
    except OSError as exc:
        # The nearest part of the path that exists is the one that refused.
        at = next((p for p in (path, *path.parents) if p.exists() or p.is_symlink()), path)
        if at.is_dir():
            why = f"{at} refuses new folders ({exc.strerror}); give a path in a folder you can write to"
        elif at.is_symlink() and not at.exists():
            why = f"{at} is a symlink to nothing that exists, or a loop; give another path"
        else:
            why = f"{at} is a file, not a folder; move that file aside or give another path"
        for made in missing:  # innermost first; one that someone else filled meanwhile stays
            with contextlib.suppress(OSError):
                made.rmdir()
        raise InvalidInputError(f"Cannot create {what} {path}: {why}.") from None
    return made_here[0] if made_here else None


@dataclass
class Undo:
    """Whether a failed ``given_folder`` block's additions are removed (a block that published
    them, as a commit into a repository it did not make, says no)."""

    wanted: bool = True


@contextlib.contextmanager
def given_folder(path: Path, what: str) -> Iterator[Undo]:
    """``make_given_folder``, and when the block fails, nothing left behind: the folders made
    here, or else what the block added to the folder (``init``'s .git, .slayer-kb and first
    commit's files), never what was there before."""
    made = make_given_folder(path, what)
    with _held(path):
        there = set(os.listdir(path))
        if there:
            # Another process filled the folder made here while this one waited for the lock (two
            # inits at once): its work, which a failure here must not remove with the folder.
            made = None
        undo = Undo()
        try:
            yield undo
        except BaseException:
            if not undo.wanted:
                raise
            added = [made] if made is not None else [path / name for name in set(os.listdir(path)) - there]
            for entry in added:
                if entry.is_dir() and not entry.is_symlink():
                    import shutil  # on use: 2 ms of every start, for a folder a failed command made

                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    with contextlib.suppress(OSError):
                        entry.unlink()
            raise


@contextlib.contextmanager
def _held(path: Path) -> Iterator[None]:
    """The folder locked against another ``given_folder`` block on it (an flock of the folder
    itself: no file made there). Four ``init --example`` of one folder at once each took the
    others' files for its own additions and removed them when it failed, leaving the one that
    committed with every file of its work tree deleted. A file system without flock: unlocked."""
    fd = os.open(path, os.O_RDONLY)
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # which lets go of the lock
