"""A SlayerQuery's time points: a time dimension's ``date_range`` and the shapes of a time point
SLayer accepts (an instant, a period, a relative point)."""

from __future__ import annotations

import re
from typing import Any

from .querychecks import VARIABLE, fail

TIME_POINT_FORMS = (
    "an instant 'YYYY-MM-DD HH:MM[:SS[.ffffff]]' (no zone offset), a period literal "
    "'YYYY', 'YYYY-Qn', 'YYYY-MM', 'YYYY-Www' or 'YYYY-MM-DD', or a relative token: "
    "'today', 'yesterday', 'tomorrow', 'this|last|next <unit>', 'last N <units>', "
    "'next N <units>', 'N <units> ago', 'N <units> from now', "
    "'week|month|quarter|year to date' (unit: second, minute, hour, day, week, "
    "week_sunday, month, quarter, year, or a custom granularity of the datasource)"
)


def check_date_range(bounds: Any, column: str, where: str) -> None:
    if not isinstance(bounds, (list, tuple)):
        fail(f"{where}.date_range", "Input should be a valid list")
    for i, bound in enumerate(bounds):
        if bound is not None and not isinstance(bound, str):
            fail(f"{where}.date_range[{i}]", "Input should be a valid string")
    shown = list(bounds)
    problem = None
    if not 1 <= len(bounds) <= 2:
        problem = "must be one time point or a [lower, upper] pair"
    elif all(bound is None for bound in bounds):
        problem = "needs at least one non-null bound"
    else:
        bad = next((b for b in bounds if b is not None and not VARIABLE.search(b) and not is_time_point_shape(b)), None)
        if bad is not None:
            problem = f"has {bad!r}, which is not {TIME_POINT_FORMS}"
    if problem:
        fail(where, f"time dimension {column!r}: date_range {shown!r} {problem}.")


_INSTANT = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?")
_PERIODS = (
    re.compile(r"\d{4}-\d{2}-\d{2}"), re.compile(r"\d{4}-W\d{2}", re.I), re.compile(r"\d{4}-\d{2}"),
    re.compile(r"\d{4}-Q[1-4]", re.I), re.compile(r"\d{4}"),
)
_RELATIVE = (
    re.compile(r"(today|yesterday|tomorrow)"), re.compile(r"(week|month|quarter|year) to date"),
    re.compile(r"(this|last|next) [a-z_]\w*"), re.compile(r"(last|next) [1-9]\d* [a-z_]\w*"),
    re.compile(r"[1-9]\d* [a-z_]\w* (ago|from now)"),
)


def is_time_point_shape(text: str) -> bool:
    """SLayer's ``is_time_point_shape``: an instant, a period literal or a relative token."""
    import datetime as _dt

    literal = text.strip()
    try:
        if match := _INSTANT.fullmatch(literal):
            y, mo, d, h, mi, s, _frac = match.groups()
            _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(s or 0))
            return True
        if _PERIODS[0].fullmatch(literal):
            _dt.date.fromisoformat(literal)
            return True
        if _PERIODS[1].fullmatch(literal):
            _dt.date.fromisocalendar(int(literal[:4]), int(literal[6:]), 1)
            return True
        if _PERIODS[2].fullmatch(literal):
            return 1 <= int(literal[5:]) <= 12
        if _PERIODS[3].fullmatch(literal) or _PERIODS[4].fullmatch(literal):
            return int(literal[:4]) >= 1
    except ValueError:
        return False
    token = " ".join(text.lower().split())
    return any(pattern.fullmatch(token) for pattern in _RELATIVE)
