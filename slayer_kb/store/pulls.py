"""A sync's pull, recorded before its branch moves onto the upstream (``slayer-kb-pull-<branch
hash>.json`` in the git folder, one a branch: a sync of another branch leaves it be): what the next sync needs to finish it when this one is killed (``kill -9``, a
server's write process stopped) before it is done.

The steps after the pull (a topic key both sides saved folded into one memory, a save
made alike on both folded, links to what the upstream forgot stripped or pointed at a memory it
renamed, both sides' revisions counted) are decided from where the sides parted and from the
branch before it moved, which the moved branch no longer tells: once it sits on the upstream,
the next sync finds nothing to pull. This record keeps them until the sync that wrote it is done
(pushed, or put back where it was), so that the next sync makes the steps the killed one did not
(each makes nothing a second time) and a client whose server died says that the branch moved.

It also keeps what the sync did (``said``: its folds, renumberings, strips...), written again
just before its push with the commit it pushes (``pushing``): a sync killed after its push landed
and before it answered leaves them for the next sync to report (the record is removed only once
the sync is done), and a client whose server died can tell whether the push had begun.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..core.errors import StoreError
from ..core.fileio import write_whole

if TYPE_CHECKING:
    from .repo import GitStore

PULL_FILES = "slayer-kb-pull-*.json"
_NAMED = ("branch", "start", "parted", "upstream", "ours", "name", "request")  # Pull's fields every record has


@dataclass(frozen=True)
class Pull:
    """One sync's pull of ``upstream`` (the tip fetched from ``name``, as ``origin/main``)."""

    branch: str
    start: str  # the branch when the sync began
    parted: str  # where the branch and the upstream parted ("" for nowhere: histories made apart)
    upstream: str
    ours: str  # the branch as it was just before it moved onto ``upstream``
    name: str
    request: str  # the relayed request that ran the sync ("" when run in its own process)
    # What the sync did so far, as its result's ``to_json`` says it (renumbered, merged...), not yet reported.
    said: dict[str, Any] = field(default_factory=dict)
    pushing: str = ""  # the commit its push sends, once the push is about to begin


class Pulls:
    """The record of a worktree's ``branch``, as one sync found it and leaves it."""

    def __init__(self, store: GitStore, branch: str) -> None:
        self.store = store
        self.written: Pull | None = None  # the record this sync wrote last
        self.path = store.git_dirs()[0] / PULL_FILES.replace("*", hashlib.sha256(branch.encode()).hexdigest()[:16])
        self.found = self._text()  # put back by ``undo``
        self._owed_at_start = self.owed(branch)

    def _text(self) -> str | None:
        try:
            return self.path.read_text(encoding="utf-8")
        except OSError:
            return None

    def read(self) -> Pull | None:
        """The pull recorded now (None: none, or a file that does not parse)."""
        return _parsed(self._text())

    def owed(self, branch: str) -> Pull | None:
        """The pull of ``branch`` recorded when this sync began (a sync that did not finish),
        whose upstream HEAD holds: the steps after it may not have been made (made again, they
        make nothing)."""
        pull = _parsed(self.found)
        if pull is None or pull.branch != branch or not pull.upstream:
            return None
        return pull if self.store.is_ancestor(pull.upstream, "HEAD") else None

    @property
    def earlier(self) -> dict[str, Any]:
        """What the sync that left the record did and did not report (killed once its branch had
        moved, or after its push), as it was when this sync began."""
        pull = self._owed_at_start
        return pull.said if pull is not None else {}

    def say(self, said: dict[str, Any], pushing: str) -> None:
        """Just before the push of ``pushing``: put what the sync did in its record (the one it
        wrote, else the one left owed, which it finishes). No record: nothing moved, nothing kept."""
        pull = self.written or self._owed_at_start
        if pull is not None and (pull.said, pull.pushing) != (said, pushing):
            self.write(replace(pull, said=said, pushing=pushing))

    def write(self, pull: Pull) -> None:
        """Record ``pull`` before the branch moves: a sync killed after the move must find it. A
        record that cannot be written fails the sync (put back where it was). Written whole (a
        rename), with no fsync: it is in the race with other clones, and a kill leaves the page
        cache to the next process; a power cut may lose it as git may lose the branch's move."""
        try:
            write_whole(self.path, json.dumps(asdict(pull)))
            self.written = pull
        except OSError as exc:
            raise StoreError(f"Cannot write {self.path}: {exc.strerror}; sync records its pull there before "
                             "the branch moves. Make the git folder writable and run sync again.") from None

    def done(self) -> None:
        """The sync finished: nothing is owed."""
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    def undo(self) -> None:
        """The sync put the branch back where it found it: the record as it found it too."""
        if self.found is None:
            self.done()
        elif self._text() != self.found:
            self.path.write_text(self.found, encoding="utf-8")


def moved_by(store: GitStore, request: str) -> Pull | None:
    """The pull of the relayed ``request``'s sync, when it moved the branch (HEAD is no longer
    where that sync began), whatever it committed; None when it did not, or finished."""
    for path in store.git_dirs()[0].glob(PULL_FILES):
        with contextlib.suppress(OSError):
            pull = _parsed(path.read_text(encoding="utf-8"))
            if pull is not None and pull.request == request:
                return pull if store.head() != pull.start else None
    return None


def _parsed(text: str | None) -> Pull | None:
    try:
        data = json.loads(text) if text is not None else None
        if not isinstance(data, dict):
            return None
        said = data.get("said", {})  # a record an older build wrote has neither: none said, no push begun
        return Pull(**{key: str(data[key]) for key in _NAMED}, said=said if isinstance(said, dict) else {},
                    pushing=str(data.get("pushing", "")))
    except (ValueError, KeyError, TypeError):
        return None
