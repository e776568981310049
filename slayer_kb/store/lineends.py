"""Which of a KB's files git commits with LF line ends where the checkout holds CRLF: under
``core.autocrlf`` (true or input), or a ``.gitattributes`` ``text`` / ``eol`` attribute
(``* text eol=crlf``). Such a file is canonical as git stores it, CRLF and all."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from .config import setting
from .repo import run_git


def autocrlf(root: Path) -> bool:
    """Whether ``core.autocrlf`` is true or input (Git for Windows' default), or named with no value."""
    value = setting(str(root), "core.autocrlf")
    if value == "\n":  # named with no value (true) or an empty one (false): git prints neither
        value = setting(str(root), "core.autocrlf", "bool")
    return value.strip().lower() in ("true", "yes", "on", "1", "input")


# The folders whose files are asked about together: a Windows checkout has CRLF in every one.
_FOLDERS = ("memories", "sessions")


class LineEnds:
    """A KB's line-end conversion, file by file. git is asked only once a file holds a CRLF, and
    then once for every file of that file's folder (10,000 processes took minutes)."""

    def __init__(self, root: Path, converts: bool | None = None) -> None:
        self.root = root
        self.autocrlf = autocrlf(root) if converts is None else converts
        self._asked: dict[str, bool] = {}

    def as_committed(self, text: str, path: str | os.PathLike[str]) -> str:
        """``text`` of the file at ``path`` (absolute, or relative to the KB) as git would commit
        it: its CRLF line endings as LF where git converts them."""
        if "\r\n" not in text or not self.converts(path):
            return text
        return text.replace("\r\n", "\n")

    def converts(self, path: str | os.PathLike[str]) -> bool:
        name = os.path.relpath(Path(self.root, path), self.root)
        if name not in self._asked:
            folder = os.path.dirname(name)
            names = [name]
            if folder in _FOLDERS:
                with contextlib.suppress(OSError):
                    names += [f"{folder}/{entry}" for entry in os.listdir(self.root / folder)]
            self._asked.update(self._attributes(names))
        return self._asked.get(name, self.autocrlf)

    def _attributes(self, names: list[str]) -> dict[str, bool]:
        """Whether git converts each of ``names``: gitattributes(5)'s rule, where ``text`` set or
        auto, or an ``eol`` given, converts; ``-text`` never does; unspecified, core.autocrlf decides."""
        given = "".join(f"{name}\0" for name in names).encode("utf-8", "surrogateescape")
        proc = run_git(["check-attr", "-z", "--stdin", "text", "eol"], self.root, input=given, check=False)
        if proc.returncode != 0:
            return dict.fromkeys(names, self.autocrlf)
        fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
        values: dict[str, dict[str, str]] = {}
        for name, attribute, value in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
            values.setdefault(name, {})[attribute] = value
        return {name: self._rule(attrs.get("text", "unspecified"), attrs.get("eol", "unspecified"))
                for name, attrs in values.items()}

    def _rule(self, text: str, eol: str) -> bool:
        if text == "unset":
            return False
        return text in ("set", "auto") or eol in ("crlf", "lf") or (text == "unspecified" and self.autocrlf)

