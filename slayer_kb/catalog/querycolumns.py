"""The columns a SlayerQuery names, as SLayer 1.4.1 checks them (``slayerquery.py`` checks the
rest): a column reference (a name, a dotted join path, or ``{name, model, label}``), and a time
dimension (``{dimension, granularity, date_range, label}``, or the string ``gran(col)``: a
built-in granularity or a datasource's own), in SLayer's words, each at its place in the query."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..core.text import shown_value
from .modeb import GRANULARITIES
from .querychecks import VARIABLE, dotted, fail, ignored_keys, parses, required, string
from .timepoints import check_date_range

COLUMN_REF_KEYS = ("name", "model", "label")
TIME_DIMENSION_KEYS = ("dimension", "column", "granularity", "date_range", "label")

NAME = re.compile(r"[a-zA-Z_]\w*", re.ASCII)
NAME_RULE = "must contain only letters, digits, and underscores, and start with a letter or underscore"
CALL = re.compile(r"\s*([A-Za-z_]\w*)\s*\((.*)\)\s*", re.S)  # f(...): a granularity call, a function
_COLUMN_ARG = re.compile(r"\s*([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*")


def column_ref_name(text: str) -> bool:
    """Whether SLayer's ``ColumnRef`` takes ``text``: a name, or a dotted path of names."""
    return all(NAME.fullmatch(part) for part in text.split("."))


def column_ref(value: Mapping[str, Any], where: str, name_where: str | None = None) -> str:
    """A ``{name, model, label}`` mapping's reference text (``model.name``)."""
    required(value, "name", where, COLUMN_REF_KEYS)
    name_where = name_where or f"{where}.name"
    ignored_keys(value, where, COLUMN_REF_KEYS, "a column reference")
    name = string(value["name"], name_where)
    model = value.get("model")
    if model is not None:
        model = string(model, f"{where}.model")
    if value.get("label") is not None:
        string(value["label"], f"{where}.label")
    if model is None and "." in name:
        model, name = name.rsplit(".", 1)
    if not NAME.fullmatch(name):
        fail(name_where, f"Invalid name '{name}': {NAME_RULE}")
    if model:
        if not all(NAME.fullmatch(part) for part in model.split(".")):
            fail(
                f"{where}.model",
                f"Invalid model path '{model}': each part must contain only letters, digits, and underscores",
            )
        return f"{model}.{name}"
    return name


def column_value(value: Any, where: str) -> str:
    """A time dimension's ``dimension`` or an order ``column``: a string or a ColumnRef mapping."""
    if isinstance(value, str):
        return column_ref({"name": value}, where, where)
    if isinstance(value, Mapping):
        return column_ref(value, where)
    fail(where, "Input should be a valid dictionary or instance of ColumnRef")


def strip_source(column: str, source: str | None) -> str:
    """A column reference without the source model's name in front (``orders.created_at`` is
    ``created_at`` in a query on orders)."""
    if source and column.startswith(source + "."):
        return column[len(source) + 1 :]
    return column


def time_string(entry: str, where: str) -> dict[str, str]:
    """A time dimension given as the string ``gran(col)``, as its mapping ``{dimension, granularity}``."""
    _placeholder_names(entry, where)
    found = functional(entry, where, GRANULARITIES)
    if found is not None:
        return found
    call = CALL.fullmatch(entry)
    column = _COLUMN_ARG.fullmatch(call.group(2)) if call else None
    if call is None or column is None or not parses(entry):
        fail(
            where,
            f"Time dimension {entry!r} must be the functional form ``gran(col)`` (e.g. "
            f"``month(created_at)``) for one of: {', '.join(GRANULARITIES)} or a datasource "
            "granularity; no default granularity is invented.",
        )
    return {"dimension": dotted(column.group(1)), "granularity": call.group(1)}


def functional(entry: str, where: str, names: tuple[str, ...]) -> dict[str, str] | None:
    """``{dimension, granularity}`` of a ``gran(col)`` string whose callee is one of ``names``
    (any case); None for another callee or no call; an error for such a callee of another shape."""
    call = CALL.fullmatch(entry)
    if call is None or call.group(1).casefold() not in names:
        return None
    column = _COLUMN_ARG.fullmatch(call.group(2))
    if column is None or not parses(entry):
        _placeholder_names(entry, where)
        fail(
            where,
            f"Granularity call {entry!r} must be a single column reference ``gran(col)`` (e.g. "
            f"``month(created_at)``) for one of: {', '.join(GRANULARITIES)}.",
        )
    return {"dimension": dotted(column.group(1)), "granularity": call.group(1).lower()}


def _placeholder_names(entry: str, where: str) -> None:
    call = CALL.fullmatch(entry) or re.fullmatch(r"\s*(\{[^}]*\})\s*\((.*)\)\s*", entry, re.S)
    if call is None:
        return
    for what, value in (("granularity", call.group(1).strip()), ("column", call.group(2))):
        if VARIABLE.search(value):
            fail(where, f"Time dimension {entry!r}: variables supply literal values; they can't name a {what} ({value!r}).")


def time_dimension(value: Any, where: str) -> str:
    """The column of a time dimension mapping, its keys, granularity, label and date range checked."""
    if not isinstance(value, Mapping):
        fail(where, "Input should be a valid dictionary or instance of TimeDimension")
    key = "dimension" if "dimension" in value else "column" if "column" in value else None
    for what, text in (("granularity", value.get("granularity")), ("column", value.get(key) if key else None)):
        if isinstance(text, str) and VARIABLE.search(text):
            fail(where, f"Time dimension {dict(value)!r}: variables supply literal values; they can't name a {what} ({shown_value(text)}).")
    if key is None:
        required(value, "dimension", where, TIME_DIMENSION_KEYS,
                  "a time dimension is {dimension: created_at, granularity: month}, or the string 'month(created_at)'")
    required(value, "granularity", where, TIME_DIMENSION_KEYS,
              f"one of {', '.join(GRANULARITIES)}, or a custom granularity of the datasource")
    ignored_keys(value, where, TIME_DIMENSION_KEYS, "a time dimension")
    assert key is not None
    column = column_value(value[key], f"{where}.{key}")
    string(value["granularity"], f"{where}.granularity")
    if value.get("label") is not None:
        string(value["label"], f"{where}.label")
    date_range = value.get("date_range")
    if date_range is not None:
        check_date_range([date_range] if isinstance(date_range, str) else date_range, column, where)
    return column
