"""The index's codec, at the module path every existing index names.

Whoosh pickles a segment's codec into the index's table of contents, so the class's module and
name are part of every index on disk: moved or renamed, each KB's index becomes unreadable and
is rebuilt in full. Its code is ``whoosh_internals.Codec``; this class only keeps its name.
"""

from __future__ import annotations

from . import whoosh_internals


class Codec(whoosh_internals.Codec):
    """``whoosh_internals.Codec`` under the name existing indexes were written with."""
