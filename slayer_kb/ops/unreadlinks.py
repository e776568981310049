"""The memory files a forget or a rename passes by because they do not parse, and
that hold one of the links it rewrites: it cannot rewrite them, and left unsaid, the link stayed
behind the cascade's commit, which said it had stripped or rewritten every one."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..core.ids import id_sort_key
from ..core.locate import id_of_path
from ..core.problems import command

if TYPE_CHECKING:
    from ..context import Context


def holding(kb: Context, links: Iterable[str]) -> list[str]:
    """The ids, sorted, of the KB's memory files that do not parse and whose text names one of
    ``links`` as a list item (``- memory:15``, quoted or not): read as text, since YAML cannot."""
    wanted = "|".join(re.escape(link) for link in links)
    if not wanted:
        return []
    item = re.compile(rf"^\s*-\s*(['\"]?)(?:{wanted})\1\s*(?:#.*)?$", re.M)
    found = set()
    for problem in kb.problems:
        memory_id = id_of_path(str(problem.path))
        if memory_id is None or memory_id in found:
            continue
        with contextlib.suppress(OSError):
            if item.search(kb.path_of(memory_id).read_bytes().decode("utf-8", "replace")):
                found.add(memory_id)
    return sorted(found, key=id_sort_key)


def warnings(kb: Context, links: list[str], done: str) -> list[str]:
    """One warning for each file ``holding`` finds: ``done`` is what the cascade did to the links."""
    run = command(kb.root)
    return [f"memories/{memory_id}.yaml does not parse, so its link {' or '.join(links)} was not {done}: fix the file "
            f"('{run} validate' names the problem), then run '{run} prune'." for memory_id in holding(kb, links)]
