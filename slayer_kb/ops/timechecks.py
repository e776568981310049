"""``validate``'s warning about a memory's time in the future: one a person or a machine with a
wrong clock wrote by hand. It is no problem (the file is valid, reads take it as it is, and sync
pushes it), but it sorts wrongly until that time comes, so validate says so, naming the fix."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from ..core.problems import Problem, words

# Further ahead than two machines' clocks differ: a time that no save could have written.
SKEW = timedelta(days=1)
# The fields, as a top-level key with a time in the schema's form, and what the time misleads.
_WHAT_IT_MISLEADS = {
    "created_at": "newest-first lists (list, context, mem_context) put the memory first until then",
    "updated_at": "a merge of two versions of the memory takes this one as the newer until then",
}
_TIME = re.compile(r"^(created_at|updated_at):[ \t]*(['\"]?)(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)\2[ \t]*$",
                   re.MULTILINE)


def future_times(text: str, name: str, memory_id: str, now: datetime | None = None) -> list[Problem]:
    """A warning, at its line, for each of the memory file's times more than ``SKEW`` after
    ``now`` (this machine's clock). The text is scanned, not parsed: validate parsed it already."""
    limit = (now or datetime.now(timezone.utc)) + SKEW
    warnings = []
    for match in _TIME.finditer(text):
        field, value = match.group(1), match.group(3)
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:  # a 31st of February: the schema check says so (schema_words.impossible_times)
            continue
        if when > limit:
            line = text.count("\n", 0, match.start()) + 1
            warnings.append(Problem(name, line, f"{field} {value!r} is more than a day ahead of this machine's clock, "
                                    f"so {_WHAT_IT_MISLEADS[field]}; write the time it happened, with "
                                    f"'slayer-kb edit {words(memory_id)}'"))
    return warnings
