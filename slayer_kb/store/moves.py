"""Ids this clone saw move: what ``sync`` could not avoid is never silent.

With leased ids (``leases.py``) no shared memory is ever renumbered. Two cases remain, and both
change an id an agent of this clone may still hold from a save's reply:

- a **renumbered** memory: an id allocated before leases (or by ``slayer-kb.ids sequential``)
  that the upstream had used for another memory; the memory now has a fresh id;
- a **merged** memory: a topic key saved first on two clones (or one save made alike on both,
  a duplicate); this clone's memory was folded into the upstream's, which keeps its id.

``sync`` records each move here (``slayer-kb-moves.json`` in the git folder, shared by the clone's
worktrees); a command on a moved id refuses and names both memories until the user says which
they mean (``slayer-kb renumber --accept ID``).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..core.fileio import write_whole
from ..core.memory import Memory
from ..core.problems import words
from .leases import IdLeases

MOVES_FILE = "slayer-kb-moves.json"


@dataclass(frozen=True)
class Move:
    old: str
    new: str
    why: str  # "renumbered" (by sync) | "renumber" (by 'slayer-kb renumber') | "merged" (sync) | "merge" | "rebase"
    duplicate: bool = False  # merged as one save made on both sides, not by its topic key


class MovedIds:
    """The moves of a clone, kept in its git folder (common to its worktrees), found through its
    ``leases`` (asked only once a move is looked up)."""

    def __init__(self, leases: IdLeases) -> None:
        self.leases = leases

    @property
    def path(self) -> Path:
        return self.leases.common_dir / MOVES_FILE

    def all(self) -> dict[str, Move]:
        return self._parsed(self.snapshot())

    @staticmethod
    def _parsed(text: str | None) -> dict[str, Move]:
        """The moves the file's ``text`` holds (None: no file; what does not parse: none)."""
        try:
            data = json.loads(text) if text is not None else {}
        except ValueError:
            return {}
        if not isinstance(data, dict):
            return {}
        return {old: Move(old, str(m["to"]), str(m["why"]), m.get("duplicate") is True) for old, m in data.items()
                if isinstance(m, dict) and "to" in m and "why" in m}

    def get(self, memory_id: str) -> Move | None:
        if not os.path.exists(self.path):  # the common case: nothing ever moved
            return None
        return self.all().get(memory_id)

    def record(self, moves: dict[str, str], why: str, duplicate: bool = False) -> None:
        """Record ``moves`` (old id -> new id); an earlier move to one of the old ids is carried
        on to the new one, so every entry names where the memory is now."""
        if moves:
            self.record_over(self.snapshot(), [(moves, why, duplicate)])

    def record_over(self, text: str | None, groups: list[tuple[dict[str, str], str, bool]]) -> None:
        """Make the file ``text`` (a ``snapshot``) with each of ``groups`` (moves, why, duplicate)
        recorded in turn, as ``record`` would one after the other: one write (``restore`` when
        no group moves anything)."""
        if not any(moves for moves, _why, _duplicate in groups):
            self.restore(text)
            return
        known = self._parsed(text)
        for moves, why, duplicate in groups:
            for move in list(known.values()):
                if move.new in moves:
                    known[move.old] = Move(move.old, moves[move.new], move.why, move.duplicate)
            for old, new in moves.items():
                known[old] = Move(old, new, why, duplicate)
            # A memory moved back to its own id (renumbered, then folded into the upstream's memory
            # under that id) is where the id's holder means: no move to refuse.
            known = {old: move for old, move in known.items() if move.new != old}
        self._write(known)

    def snapshot(self) -> str | None:
        """The file as it is (None: there is none), for ``restore`` and ``record_over``."""
        try:
            return self.path.read_text(encoding="utf-8")
        except OSError:
            return None

    def restore(self, text: str | None) -> None:
        """Put the file back as ``snapshot`` found it."""
        if text is None:
            with contextlib.suppress(OSError):
                self.path.unlink()
            return
        self._replace(text)

    def accept(self, memory_id: str) -> bool:
        """Forget the move of ``memory_id`` (the user now means whatever it names); whether there was one."""
        known = self.all()
        if known.pop(memory_id, None) is None:
            return False
        self._write(known)
        return True

    def _write(self, known: dict[str, Move]) -> None:
        self._replace(json.dumps({m.old: {"to": m.new, "why": m.why, **({"duplicate": True} if m.duplicate else {})}
                                  for m in known.values()}, indent=1))

    def _replace(self, text: str) -> None:
        with contextlib.suppress(OSError):
            write_whole(self.path, text)


def refusal(move: Move, now: Memory | None, run: str, went: str | None = None) -> str:
    """What a command on a moved id says as it refuses: where the memory saved here went, what
    the id names ``now``, and how to go on (``run``: ``slayer-kb`` as the user runs it; ``went``:
    where the memory went on from the id it went to, which no memory holds now, "" when not known,
    None when a memory holds that id)."""
    old = move.old
    return (f"{_account(move, now, run, went)}; to mean what '{old}' names now, run '{run} renumber --accept "
            f"{words(old)}' first.")


def note(move: Move, now: Memory | None, run: str, went: str | None = None) -> str:
    """What a command that reads a moved id's history (``show``, ``log``, ``timeline``) says
    beside its answer, which is about what the id names here: the refusal's account of both
    memories."""
    old = move.old
    return f"{_account(move, now, run, went)}; '{run} renumber --accept {words(old)}' ends this note."


def _account(move: Move, now: Memory | None, run: str, went: str | None) -> str:
    """Where the memory saved here as ``move.old`` went, and what that id names ``now``."""
    old = move.old
    alike = "as the same save (its title, text, links, project and scope)" if move.duplicate else "under the same topic key"
    if move.why == "merged":
        how = f"sync merged this clone's memory {old} into {move.new}, which the upstream holds {alike}"
    elif move.why == "merge":
        # Kept as the one the team holds (ops/folds.Standing), which may have been saved later.
        how = f"'slayer-kb merge' merged this clone's memory {old} into {move.new}, which the branch it merged holds {alike}"
    elif move.why == "rebase":
        how = (f"'slayer-kb rebase' merged this clone's memory {old} into {move.new}, which the branch it "
               f"was rebased onto holds {alike}")
    elif move.why == "renumber":
        how = (f"'slayer-kb renumber' gave this clone's memory {old} the id {move.new}, because the branch "
               f"it was renumbered onto had already used {old} for another memory")
    else:
        how = (f"sync renumbered this clone's memory {old} to {move.new}, because the upstream had "
               f"already used {old} for another memory")
    if now is None:
        named = f"no memory has id '{old}' now"
    else:
        text = now.title or " ".join(now.learning.split())
        named = f"'{old}' now names another memory: \"{text[:60]}{'...' if len(text) > 60 else ''}\""
    gone = (f" (no memory has id '{move.new}' now either: it {went})" if went else
            f" (no memory has id '{move.new}' now either: '{run} get {words(move.new)}' says what became of it)"
            if went is not None else "")
    return f"Memory id '{old}' moved: {how}; {named}. Use {move.new} for the memory saved here{gone}"
