"""Names spelled like a name that names nothing (``difflib``): what an unresolved reference
(suggest.py) and a priority list's unknown datasource (catalog.py) suggest. Apart from
suggest.py, which reads the catalog's models, so that the catalog's loader can use it too."""

from __future__ import annotations

import difflib

MAX_SUGGESTIONS = 3
# difflib's ratio: 0.6 is its default; typos of short names (amout, ordr) pass, unrelated names not.
CUTOFF = 0.6


def spelled_like(name: str, candidates: dict[str, list[str]]) -> list[str]:
    """The references of the candidates (name -> the references it stands for) spelled like
    ``name``, nearest first."""
    close = difflib.get_close_matches(name, list(candidates), n=MAX_SUGGESTIONS, cutoff=CUTOFF)
    return [ref for word in close for ref in candidates[word]]
