"""The shape of an MCP tool (``ToolSpec``, ``Reply``) and the check of a call's arguments
against the tool's JSON Schema, with ``jsonschema``: the SDK's low-level server does not
validate, and a client may send anything, so a bad type must come back as a tool error that
names the tool, the parameter, what was wanted and what came, never as a crash inside the
knowledge base."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from ..core import nesting
from ..core.errors import InvalidInputError
from ..core.nesting import MAX_DEPTH, too_deep, value_depth
from ..core.text import kind_of, shown_value, warning_lines

if TYPE_CHECKING:
    from ..kb import KnowledgeBase

# The largest integer every JSON reader holds exactly (JavaScript's Number.MAX_SAFE_INTEGER):
# the schemas' maximum of an integer parameter, so that 1e308 is refused as 1.5 is, rather than
# read as a 309-digit number.
MAX_INTEGER = 2**53 - 1


@dataclass(frozen=True)
class Reply:
    """A tool's answer: text for the model (Engram's or SLayer's words), and beside it the
    structured content its output schema declares; an error has text only."""

    text: str
    data: dict[str, Any] | None = None
    is_error: bool = False
    # What the text is the JSON of (SLayer's replies), else None: the text is words.
    shown: dict[str, Any] | None = None

    def structured(self) -> dict[str, Any] | None:
        """The structured content sent: ``data`` and, as ``result``, the text (``with_result``)."""
        return None if self.data is None else {**self.data, RESULT: self.text}

    def warned(self, told: list[str]) -> Reply:
        """This reply with ``told`` (warnings about the KB's surroundings) where its own warnings
        go: the structured ``warnings``, and the text's warning lines or its JSON's ``warnings``
        when SLayer's shape has one (``forget_memory``'s has none: SLayer's answer is kept)."""
        if not told:
            return self
        data = None if self.data is None else {**self.data, "warnings": [*self.data.get("warnings", []), *told]}
        if self.shown is None:
            return replace(self, text=self.text + warning_lines(told), data=data)
        if "warnings" not in self.shown:
            return replace(self, data=data)
        shown = {**self.shown, "warnings": [*self.shown["warnings"], *told]}
        return replace(self, text=json.dumps(shown, ensure_ascii=False, indent=2), data=data, shown=shown)


# SLayer's and Engram's servers (FastMCP) return their reply text as the structured content's one
# field, ``result`` (the seeds' output schemas): a client written for them reads it there.
RESULT = "result"


def with_result(output_schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's output schema (outputs.yaml) with ``result``, the reply text, required beside
    its fields."""
    text = {"type": "string", "description": "The reply text, as the text content gives it (the seeds' one output)."}
    return {**output_schema, "required": [*output_schema["required"], RESULT],
            "properties": {**output_schema["properties"], RESULT: text}}


Handler = Callable[["KnowledgeBase", dict[str, Any]], Reply]


@dataclass(frozen=True)
class ToolSpec:
    name: str
    title: str
    description: str
    properties: dict[str, dict[str, Any]]
    handler: Handler
    required: tuple[str, ...] = ()
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False
    defaults: dict[str, Any] = field(default_factory=dict)
    output_schema: dict[str, Any] = field(default_factory=dict)

    def input_schema(self) -> dict[str, Any]:
        properties = {}
        for name, schema in self.properties.items():
            prop = dict(schema)
            if "integer" in _types(prop):
                prop.setdefault("maximum", MAX_INTEGER)
            if name in self.defaults:
                prop["default"] = self.defaults[name]
            properties[name] = prop
        return {
            "type": "object",
            "properties": properties,
            "required": list(self.required),
            "additionalProperties": False,
        }

    @cached_property
    def validator(self) -> Draft202012Validator:
        return Draft202012Validator(self.input_schema())


_ARTICLE = {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
            "array": "a list", "object": "an object"}
# Which of one parameter's failures is told: its type before its value.
_ORDER = {"type": 0, "enum": 1, "minimum": 2, "maximum": 2}
DEEP_ARGUMENT_FIX = "send a flatter value (a SlayerQuery needs a few levels, entity references one)"


def _json_type_name(value: Any) -> str:
    # bool before int: in Python True is an int, in JSON it is not a number.
    for python_type, name in ((bool, "a boolean"), (int, "an integer"), (float, "a number"), (str, "a string"),
                              (list, "a list"), (dict, "an object")):
        if isinstance(value, python_type):
            return name
    return kind_of(value)


def _types(schema: dict[str, Any]) -> list[str]:
    declared = schema.get("type", [])
    return declared if isinstance(declared, list) else [declared]


def check_arguments(spec: ToolSpec, arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments checked against the tool's schema, with defaults filled in.

    A null counts as "not given", since some clients send every optional parameter as null; a
    null for a parameter the tool does not have is still an unknown parameter (a misspelt one
    was taken silently). The items of a list are left to the knowledge base, whose messages name
    what is wrong with the item (``linked_entities[1]: entity reference 5 must be a string like
    'orders.amount'.``).
    """
    given = {k: v for k, v in arguments.items() if v is not None or k not in spec.properties}
    for name, value in given.items():
        given[name] = _lax(value, spec.properties.get(name, {}), f"{spec.name}: '{name}'")
    order = list(given)
    errors = [e for e in spec.validator.iter_errors(given) if len(e.path) <= 1]
    # A parameter nested too deep is told after its type, value and minimum, in the same order.
    deep = [name for name, value in given.items()
            if name in spec.properties and isinstance(value, (list, dict)) and value_depth(value) > MAX_DEPTH]
    candidates: list[tuple[tuple[int, int, int], ValidationError | str]] = [(_rank(e, order), e) for e in errors]
    candidates += [((2, order.index(name), len(_ORDER)), name) for name in deep]
    if candidates:
        _, first = min(candidates, key=lambda c: c[0])
        if isinstance(first, str):
            raise too_deep(f"{spec.name}: '{first}'", DEEP_ARGUMENT_FIX)
        raise InvalidInputError(_message(spec, given, first))
    return {**spec.defaults, **given}


# The texts FastMCP's models (pydantic, lax) take for a boolean, in any letter case.
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no"}
_WHOLE = re.compile(r"[+-]?[0-9]{1,16}")


def _lax(value: Any, schema: dict[str, Any], what: str) -> Any:
    """``value`` as SLayer's and Engram's servers (FastMCP, its models lax) take it for a parameter
    of ``schema``: 10.0 or "10" for an integer is 10, "true" or 1 for a boolean is True, a list
    or object sent as JSON text is that list or object; anything else as it came, for the schema
    to refuse by name. ``what``: the tool and parameter, as an error names them."""
    types = _types(schema)
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_INTEGER and "integer" in types:
        return int(value)  # JSON has one number type: 10.0 means 10
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1) and types == ["boolean"]:
        return bool(value)
    if not isinstance(value, str):
        return value
    if "string" not in types:  # where text is a value of its own ("12" an id), it stays text
        if "integer" in types and _WHOLE.fullmatch(value.strip()):
            return int(value)
        if "boolean" in types and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
    return _decoded(value, schema, what)


def _decoded(value: str, schema: dict[str, Any], what: str) -> Any:
    """A list or object sent as JSON text, as some clients send nested arguments, taken as that
    list or object where the parameter takes one, as FastMCP (SLayer's and Engram's servers)
    takes it; anything else as it came (comma-separated references stay text). Read as the CLI
    reads --query: JSON text naming one key twice is refused (its last value was taken unsaid)."""
    if not {"array", "object"} & set(_types(schema)) or value.lstrip()[:1] not in ("[", "{"):
        return value
    try:
        decoded = nesting.loads(value, what, "give each key once.")
    except nesting.KeyTwiceError:
        raise
    except InvalidInputError:  # not JSON, or nested too deep: text, refused as such below
        return value
    return decoded if isinstance(decoded, (list, dict)) else value


def _rank(error: ValidationError, order: list[str]) -> tuple[int, int, int]:
    """Unknown parameters first, then missing ones, then each parameter's in the order given."""
    if error.validator == "additionalProperties":
        return (0, 0, 0)
    if error.validator == "required":
        return (1, 0, 0)
    name = str(error.path[0])
    return (2, order.index(name), _ORDER.get(str(error.validator), len(_ORDER)))


def _message(spec: ToolSpec, given: dict[str, Any], error: ValidationError) -> str:
    if error.validator == "additionalProperties":
        unknown = sorted(set(given) - set(spec.properties))
        return (
            f"{spec.name} has no parameter {', '.join(repr(u) for u in unknown)}; "
            f"its parameters are: {', '.join(spec.properties) or 'none'}."
        )
    if error.validator == "required":
        missing = next(name for name in spec.required if name not in given)
        return f"{spec.name} needs the parameter '{missing}'."
    name = str(error.path[0])
    value, schema = given[name], spec.properties[name]
    if "integer" in _types(schema) and isinstance(value, (int, float, str)) and not isinstance(value, bool):
        # 0, 1.5 and 1e308 alike: the one message says which numbers are taken. Text too: "1" is
        # taken, so "1.5" is refused for not being a whole number, not for being text.
        most = schema.get("maximum", MAX_INTEGER)
        numbers = f"from {schema['minimum']} to {most}" if "minimum" in schema else f"up to {most}"
        kinds = [_ARTICLE[t] for t in _types(schema) if t != "integer"] + [f"a whole number {numbers}"]
        return f"{spec.name}: '{name}' must be {' or '.join(kinds)}, not {shown_value(value) if isinstance(value, str) else value}."
    if error.validator == "type":
        wanted = " or ".join(_ARTICLE[t] for t in _types(schema))
        return f"{spec.name}: '{name}' must be {wanted}, not {_json_type_name(value)}."
    if error.validator == "enum":
        return f"{spec.name}: '{name}' must be one of {', '.join(repr(e) for e in schema['enum'])}, not {shown_value(value)}."
    return f"{spec.name}: '{name}': {error.message}."
