"""The ``Highest-auto-id`` trailer a commit slayer-kb makes ends with (idfloor.py reads it): the
highest auto id the memory folder it names has held on the branch's history with the commit, and
the commit's one parent and tree, which tell whether the trailer still describes the commit it is
in (not amended, rebased or cherry-picked since)::

    Highest-auto-id: 57 in memories/ (parent 1a2b3c4d5e6f, tree 0f1e2d3c4b5a)

The folder is the memories' path in the repository: two KBs of one repository count apart.
"""

from __future__ import annotations

import re

from ..core.ids import MAX_ID_BYTES
from ..core.locate import MEMORIES_DIR

KEY = "Highest-auto-id"
_SHORT = 12  # hex digits of the parent and the tree recorded: enough to tell a rebase or an amend
_VALUE = re.compile(rf"(0|[1-9][0-9]{{0,{MAX_ID_BYTES - 1}}}) in (.+) \(parent ([0-9a-f]{{{_SHORT},64}}), "
                    rf"tree ([0-9a-f]{{{_SHORT},64}})\)")
_LINE = re.compile(rf"^{KEY}: .*\n?", re.MULTILINE)
_TRAILER_LINE = re.compile(r"[A-Za-z0-9-]+: \S")  # a line git's trailer parsing reads as one


def with_trailer(message: str, top: int | None, prefix: str, parent: str | None, tree: str) -> str:
    """``message`` ending with the trailer that says ``top`` for the memory folder of the KB at
    ``prefix`` in the repository, in a commit of ``tree`` on ``parent``; as it is when the figure
    is not known or the commit would be a root (nothing before it)."""
    if top is None or parent is None:
        return message
    line = f"{KEY}: {top} in {folder_of(prefix)} (parent {parent[:_SHORT]}, tree {tree[:_SHORT]})"
    body = message.rstrip("\n")
    last = body.rpartition("\n\n")[2] if "\n\n" in body else ""
    # Joined to a paragraph of trailers (a rename's), since git reads only the last paragraph.
    joined = bool(last) and all(_TRAILER_LINE.match(part) for part in last.split("\n"))
    return f"{body}{chr(10) if joined else chr(10) * 2}{line}"


def folder_of(prefix: str) -> str:
    """The memory folder's path in the repository of a KB at ``prefix`` (``""`` or ``"sub/kb/"``)."""
    return f"{prefix}{MEMORIES_DIR}/"


def without_trailer(message: str) -> str:
    """``message`` as it reads without the trailer (what ``log`` shows of a commit)."""
    return _LINE.sub("", message).rstrip("\n")


def told(said: str, prefix: str, parents: list[str], tree: str) -> int | None:
    """The figure a commit's trailer tells (``said``: its value, as git reads it) for the KB at
    ``prefix``, if the trailer still describes the commit (its parents and tree)."""
    found = _VALUE.fullmatch(said)  # two such trailers (a line each) match nothing: not trusted
    if found is None or len(parents) != 1:
        return None
    value, named, parent, recorded_tree = found.groups()
    described = named == folder_of(prefix) and parents[0].startswith(parent) and tree.startswith(recorded_tree)
    return int(value) if described else None
