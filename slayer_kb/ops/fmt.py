"""``fmt``: memory and session files rewritten into their canonical form, under the KB lock so a
concurrent slayer-kb commit is never overwritten with older content."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from urllib.parse import unquote

from ..core.errors import MemoryFileError, os_fix
from ..core.fileio import write_whole
from ..core.memory import dumps, loads
from ..core.session import SESSIONS_DIR
from ..core.session import dumps as dump_session
from ..core.session import loads as load_session
from ..store.lineends import LineEnds
from ..store.repo import GitStore, find_toplevel
from .validate import Problem, Report, expand, read_text, targets


def fmt(paths: Sequence[Path], check: bool = False, opened: GitStore | None = None) -> Report:
    """Rewrite memory files into canonical form (``check``: only report which would change).

    Files that cannot be read as memories are reported and left alone. The KB lock is held while
    writing so that a concurrent slayer-kb commit is never overwritten with older content
    (``opened``: the repository of a KB among them, already open, not located again).
    """
    report = Report()
    for target in targets(paths, report.problems).values():
        # A catalog file named (pre-commit's way) asks validate for every memory, fmt for none of them.
        target.everything = target.everything and (target.folder or not target.hook)
        expand(target)
        line_ends = LineEnds(target.root)
        with _locked(target.root, enabled=not check, opened=opened):
            for path, name in sorted(target.files.items()):
                if path.suffix != ".yaml":
                    continue
                report.checked += 1
                _format_one(path, name, check, line_ends, report)
    return report


def _format_one(path: Path, name: str, check: bool, line_ends: LineEnds, report: Report) -> None:
    problems: list[Problem] = []
    text = read_text(path, lambda line, message: problems.append(Problem(name, line or 1, message)))
    if text is not None:
        try:
            if path.parent.name == SESSIONS_DIR:
                canonical = dump_session(load_session(text, unquote(path.stem), name))
            else:
                canonical = dumps(loads(text, path.stem, name))
        except MemoryFileError as exc:
            problems.append(Problem(name, exc.line or 1, f"{exc.message}; fix it by hand"))
        else:
            if canonical != line_ends.as_committed(text, path):
                if check:
                    report.reformatted.append(name)
                elif (refused := _rewrite(path, canonical)) is None:
                    report.reformatted.append(name)
                else:
                    problems.append(Problem(name, 1, f"cannot be rewritten: {refused.strerror}; {os_fix(refused)}"))
    report.problems.extend(problems)


def _rewrite(path: Path, canonical: str) -> OSError | None:
    """Put ``canonical`` in place of ``path`` whole, or leave it as it was (and no temporary file)
    and return why not."""
    try:
        write_whole(path, canonical, path.with_name(f".{path.name}.fmt-tmp"), newline="")
    except OSError as exc:
        return exc
    return None


@contextlib.contextmanager
def _locked(root: Path, enabled: bool, opened: GitStore | None) -> Iterator[None]:
    if not enabled:
        yield
        return
    if opened is not None and opened.root == root:
        store = opened
    elif find_toplevel(root) is None:
        yield
        return
    else:
        store = GitStore(root)
    with store.locked():
        yield
