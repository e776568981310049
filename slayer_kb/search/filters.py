"""Which memories a search may return, said once and applied the same way by every channel:
as Whoosh filter and mask sets by the words and entities channels, as value masks by the
meaning channel (table.Filter)."""

from __future__ import annotations

from dataclasses import dataclass

from . import whoosh_start  # noqa: F401  # isort: skip  (first: see its doc)
from whoosh import query as Q

from .schema import value_or_none
from .table import Filter


@dataclass(frozen=True)
class Restriction:
    """``only`` must match, ``exclude`` must not; ``values`` says the same as field values.

    Passed to Whoosh as ``filter`` and ``mask`` rather than as ``And`` clauses: a clause such as
    "not deleted" matches nearly every document, and scoring through it costs more than the
    search itself.
    """

    only: Q.Query | None
    exclude: Q.Query
    values: Filter


def restrict(
    *,
    type: str | None = None,
    project: str | None = None,
    scope: str | None = None,
    datasource: str | None = None,
    has_query: bool | None = None,
    exact: dict[str, str | None] | None = None,
) -> Restriction:
    """Live memories, narrowed by the given fields (None: any value); ``exact`` fields must equal
    their value, None meaning "no value"."""
    wanted: list[Q.Query] = []
    if type:
        wanted.append(Q.Term("type", type))
    if project:
        wanted.append(Q.Term("project", project))
    if scope:
        wanted.append(Q.Term("scope", scope))
    if datasource:
        wanted.append(Q.Term("datasources", datasource))
    if has_query:
        wanted.append(Q.Term("has_query", "1"))
    wanted.extend(Q.Term(name, value_or_none(value)) for name, value in (exact or {}).items())
    unwanted: list[Q.Query] = [Q.Term("kind", "catalog"), Q.Term("deleted", "1")]
    if has_query is False:
        unwanted.append(Q.Term("has_query", "1"))
    only = None if not wanted else (wanted[0] if len(wanted) == 1 else Q.And(wanted))
    values = Filter(type=type or None, project=project or None, scope=scope or None,
                    datasource=datasource or None, has_query=has_query)
    return Restriction(only, Q.Or(unwanted), values)
