"""What SLayer 1.4.1's Mode-B parser (``slayer.engine.syntax.parse_expr``) refuses in a formula
that Python parses, in its words: the check of a formula (``querychecks.formula_problem``) parses
it with Python first (``extract(part from x)`` read as :func:`extract_as_date_part` writes it),
then asks :func:`node_problem`; and what its engine refuses when the query runs, an aggregation
given more arguments than it takes (:func:`aggregation_problem`)."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from . import lexer

# What the check writes for a colon aggregation (``amount:sum``) before Python reads the formula;
# called, it has its arguments after the colon's (``amount:weighted_avg(weight=qty)``). SLayer's
# parser writes its own under the prefix it reserves, so no name of the user's is one.
AGGREGATED = "__slayer_agg__"
# And for a counted star (count(*), count(orders.*)).
COUNTED = "_star"

# SLayer 1.4.1's built-in granularities: a time dimension's (``month(created_at)``), and the unit a
# date function takes (``date_add(x, 1, 'day')``, ``interval(1, 'day')``).
GRANULARITIES = ("second", "minute", "hour", "day", "week", "week_sunday", "month", "quarter", "year")

# The binary operators SLayer's Mode-B parser takes: arithmetic, and | (SQL's ||, which it
# reads as concat(x, y)); ^ & << >> @ it refuses.
_BINARY = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Mod, ast.Pow, ast.FloorDiv, ast.BitOr)

# Python that SLayer's Mode-B parser does not take: subscripts, lambdas, containers, comprehensions
# (a tuple or list only as the right-hand side of ``in``).
_UNSUPPORTED = (
    ast.Subscript, ast.Lambda, ast.Dict, ast.Set, ast.ListComp, ast.SetComp, ast.DictComp,
    ast.GeneratorExp, ast.NamedExpr, ast.Starred, ast.JoinedStr, ast.Tuple, ast.List,
)

# SLayer 1.4.1's aggregations (``BUILTIN_AGGREGATIONS``, in any case, and the aliases
# ``normalize_aggregation_name`` maps to them) and transforms (``ALL_TRANSFORMS``, as written), which
# take the value they aggregate or transform as their first positional argument; and its scalar
# functions (any case), which may take none. Any other name called with no argument is unknown
# (with one, SLayer defers it to a custom aggregation of the model).
_AGGREGATIONS = frozenset(
    """avg corr count count_distinct count_distinct_approx covar_pop covar_samp first last max median min
    percentile stddev_pop stddev_samp sum var_pop var_samp weighted_avg countd countdistinct
    approx_count_distinct countdistinctapprox stddev var variance""".split()
)
_TRANSFORMS = frozenset(
    """change change_pct consecutive_periods cumsum dense_rank first lag last lead ntile percent_rank rank
    time_shift""".split()
)
_SCALARS = frozenset(
    """abs ceil ceiling coalesce concat current_date date_add date_diff date_part exp floor greatest ifnull
    iif instr interval least length like ln log log10 log2 lower ltrim mod now nullif pow power replace round
    rtrim sign sqrt substr substring trim trunc upper""".split()
)
# The literals SLayer reads (``type(value).__name__`` names any other in its message).
_LITERALS = (type(None), bool, int, float, str)
_IN = (
    "the right-hand side of ``in`` / ``not in`` must be a tuple/list literal (e.g. ``status in ('a', 'b')``) "
    "or a time-point string (``created_at in '2025-Q1'``)"
)
# SLayer's names for what an element of ``in``'s tuple may not be.
_SLAYER_NODES = {ast.Name: "Ref", ast.Attribute: "DottedRef"}


def node_problem(tree: ast.Expression) -> str | None:
    """What Python parses and SLayer does not (``sum(amount) ^ 2``, ``x[0]``, ``sum()``), in
    SLayer's words; None when it takes every node."""
    allowed: set[int] = set()  # the tuples and lists on the right of an ``in``
    added: set[int] = set()  # the intervals added to a value or taken from one, where SLayer takes them
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            # SLayer drops a unary plus, then takes exactly one side of + an interval, or -'s right.
            left, right = _unsigned(node.left), _unsigned(node.right)
            if _interval(left) != _interval(right) and not (isinstance(node.op, ast.Sub) and _interval(left)):
                added.add(id(left if _interval(left) else right))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)):
            problem = _in_problem(node.comparators[0])
            if problem is not None:
                return problem
            allowed.add(id(node.comparators[0]))
        problem = _node_problem(node)
        if problem is not None and id(node) not in allowed:
            return problem
    # Checked once the calls are read, as SLayer checks where an interval stands after its unit.
    if any(_interval(node) and id(node) not in added for node in ast.walk(tree)):
        return ("interval(n, unit) is only valid as `x + interval(n, unit)`, `interval(n, unit) + x` or "
                "`x - interval(n, unit)`; otherwise use date_add(x, n, unit).")
    return None


def _unsigned(node: ast.expr) -> ast.expr:
    """``node`` without its unary pluses, which SLayer's parser drops (``+x`` is ``x``)."""
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        node = node.operand
    return node


def _interval(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.lower() == "interval"


def _in_problem(right: ast.expr) -> str | None:
    """What SLayer refuses on the right of ``in``: anything but a literal tuple, list or string."""
    if isinstance(right, ast.Constant) and isinstance(right.value, str):
        return None
    if not isinstance(right, (ast.Tuple, ast.List)):
        return f"{_IN}; got {type(right).__name__}."
    if not right.elts:
        return ("empty tuple is not allowed on the right-hand side of ``in`` / ``not in`` (dialect-dependent "
                "SQL); use a non-empty literal tuple.")
    for element in right.elts:
        value = element.operand if isinstance(element, ast.UnaryOp) and isinstance(element.op, ast.USub) else element
        if not isinstance(value, ast.Constant):
            got = _SLAYER_NODES.get(type(value), "an expression")
            return ("every element on the right-hand side of ``in`` / ``not in`` must be a literal (string, number, "
                    f"or boolean); got {got}.")
    return None


def _node_problem(node: ast.AST) -> str | None:
    """What SLayer's parser refuses in one node."""
    if isinstance(node, ast.BinOp) and not isinstance(node.op, _BINARY):
        return f"unsupported binary operator {type(node.op).__name__}."
    if isinstance(node, ast.Compare) and len(node.ops) > 1:
        return ("chained comparisons are not supported. Each Cmp must be a single comparison; split (e.g.) "
                "`1 < x < 10` into `1 < x and x < 10`.")
    if isinstance(node, ast.IfExp):
        return (
            "the Python conditional 'x if cond else y' is not supported. Use SQL "
            "'CASE WHEN cond THEN x ELSE y END' or iif(cond, x, y)."
        )
    if isinstance(node, _UNSUPPORTED):
        return f"unsupported AST node {type(node).__name__}."
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _empty_call(node.func.id) if not node.args else _call_problem(node.func.id, node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return _method_problem(node, node.func)
    if isinstance(node, ast.Constant) and not isinstance(node.value, _LITERALS):
        return f"unsupported literal type {type(node.value).__name__}."
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return "unsupported unary operator Invert."
    if isinstance(node, ast.Attribute):
        base = node.value
        while isinstance(base, ast.Attribute):
            base = base.value
        if not isinstance(base, ast.Name):
            return f"unsupported attribute base {type(base).__name__}."
    return None


def _method_problem(node: ast.Call, func: ast.Attribute) -> str | None:
    """Why SLayer refuses the method call ``path.agg(value, ...)``, its spelling of
    ``agg(path.value, ...)`` (``slayer.engine.syntax._method_call_refusal``), in its words; None
    when it takes it (a custom aggregation's name is the catalog's, unknown here: taken)."""
    path, name = ast.unparse(func.value), func.attr
    base = func.value
    while isinstance(base, ast.Attribute):
        base = base.value
    if not isinstance(base, ast.Name):
        return None  # the attribute's own check names it
    lowered = name.lower()
    if lowered in _SCALARS or lowered in _DATE_PART_FUNCTIONS or (name in _TRANSFORMS and lowered not in _AGGREGATIONS):
        reason = f"calls {name!r}, which is not an aggregation"
    elif not node.args:
        reason = "needs the aggregated value as its first argument"
    elif any(isinstance(leaf, ast.Attribute) or (isinstance(leaf, ast.Call) and not _scalar(leaf))
             or (isinstance(leaf, ast.Name) and leaf.id == AGGREGATED) for leaf in _leaves(node.args[0])):
        reason = "may read only bare column names of that path"
    elif any(keyword.arg == "partition_by" for keyword in node.keywords):
        reason = "cannot take partition_by="
    elif not all(_literal(value) for value in [*node.args[1:], *(keyword.value for keyword in node.keywords)]):
        reason = "takes only literal further arguments"
    else:
        return None
    problem = f"the method call {path}.{name}(...) {reason}; write the functional form, e.g. {_functional(node, path, name)}."
    return problem + (_meant(node, path, name) if not node.args else "")


def _meant(node: ast.Call, path: str, name: str) -> str:
    """With no argument, SLayer's example is the bare name: what the call most likely meant,
    which hangs on what ``path`` is (the catalog's, not read here): a column's aggregation; a
    model's count is of its rows (``count(customers)`` SLayer's engine cannot resolve), and a
    name no aggregation of SLayer's may be a model's measure (``orders.aov``)."""
    lowered = name.lower()
    if (name in _TRANSFORMS and lowered not in _AGGREGATIONS) or lowered in _SCALARS | _DATE_PART_FUNCTIONS:
        return f" Here that is {name}({path})."
    if lowered in _DATE_PARTS:  # SLayer reads year(x) as x's year, row by row: no measure
        return (f" '{name}' is a date part, not an aggregation: for each {lowered}, put {lowered}({path}) in "
                f"dimensions; as a measure, aggregate it, e.g. max(date_part('{lowered}', {path})).")
    keywords = [f"{keyword.arg}={ast.unparse(keyword.value)}" for keyword in node.keywords]
    if lowered == "percentile" and not any(keyword.arg == "p" for keyword in node.keywords):
        keywords.append("p=0.5")  # SLayer runs no percentile without its p=
    called = ", ".join([path, *keywords])
    if lowered not in _AGGREGATIONS and not node.keywords:
        return f" If {path} is a column, that is {name}({called}); if a model, its measure is {path}.{name}."
    if lowered == "count":  # a formula's COUNT(m.*) SLayer's memory resolver refuses
        return f" If {path} is a column, that is count({called}); if a model, count({path}.*) counts its rows."
    return f" If {path} is a column, that is {lowered}({called})."


def _leaves(node: ast.expr) -> list[ast.expr]:
    """The operands of a method call's value, through arithmetic, comparisons and scalar calls,
    as SLayer projects the call's path onto them (``_source_leaves``)."""
    if isinstance(node, ast.BinOp):
        return [*_leaves(node.left), *_leaves(node.right)]
    if isinstance(node, ast.UnaryOp):
        return _leaves(node.operand)
    if isinstance(node, ast.BoolOp):
        return [leaf for value in node.values for leaf in _leaves(value)]
    if isinstance(node, ast.Compare):
        return [leaf for part in (node.left, *node.comparators) for leaf in _leaves(part)]
    if isinstance(node, ast.Call) and _scalar(node):
        return [leaf for arg in node.args for leaf in _leaves(arg)]
    return [node]


def _scalar(node: ast.Call) -> bool:
    """A scalar call, which a method call's path goes through: extract and the date-part aliases
    are SLayer's date_part()."""
    return isinstance(node.func, ast.Name) and (node.func.id.lower() in _SCALARS | _DATE_PART_FUNCTIONS
                                                or node.func.id.lower() == "extract")


# The names SLayer's parser reads as constants, in any case (``none`` is a column to it).
_CONSTANT_NAMES = ("true", "false", "null")


def _literal(node: ast.expr) -> bool:
    """A literal further argument: a constant or true/false/null, maybe signed once after its
    pluses are dropped (``+0.5``, ``-0.5``; ``{variable}`` is one, read as 0)."""
    node = _unsigned(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = _unsigned(node.operand)
    return isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id.lower() in _CONSTANT_NAMES)


def _functional(node: ast.Call, path: str, name: str) -> str:
    """``path.name(value, ...)`` written as the call it stands for, ``name(path.value, ...)``;
    the bare name when it has no argument, as SLayer writes it."""
    if not node.args and not node.keywords:
        return name
    probed = any((isinstance(leaf, ast.Name) and leaf.id in (AGGREGATED, COUNTED))
                 or (isinstance(leaf, ast.Attribute) and leaf.attr == COUNTED)
                 for arg in node.args for leaf in ast.walk(arg))
    if probed:  # the check rewrote what it holds (x:agg, a counted star): not shown
        return f"{name}(...)"

    class _OntoPath(ast.NodeTransformer):
        def visit_Name(self, leaf: ast.Name) -> ast.expr:
            return ast.Attribute(ast.Name(path), leaf.id) if path else leaf

        def visit_Call(self, call: ast.Call) -> ast.Call:
            if _scalar(call):  # its arguments go onto the path, not its name
                call.args = [self.visit(arg) for arg in call.args]
                return _spelled(call)
            return call

    args = [_OntoPath().visit(node.args[0]) if node.args else None, *node.args[1:]]
    params = [ast.unparse(arg) for arg in args if arg is not None]
    params += [f"{keyword.arg}={ast.unparse(keyword.value)}" for keyword in node.keywords]
    return f"{name}({', '.join(params)})"


def _spelled(call: ast.Call) -> ast.Call:
    """A scalar call as SLayer's parser spells it back: its name and a date unit in lower case, a
    date part's alias as date_part's part (``DOY(x)``, ``date_part('Doy', x)``: ``date_part('day_of_year', x)``)."""
    assert isinstance(call.func, ast.Name)
    name, args = call.func.id.lower(), list(call.args)
    if name in _DATE_PART_FUNCTIONS and len(args) == 1:
        name, args = "date_part", [ast.Constant(name), *args]
    at = _UNIT_ARGS.get(name)
    unit = args[at] if at is not None and at < len(args) else None
    if at is not None and isinstance(unit, ast.Constant) and isinstance(unit.value, str):
        word = unit.value.lower()
        args[at] = ast.Constant(_DATE_PART_ALIASES.get(word, word) if name == "date_part" else word)
    return ast.Call(ast.Name(name), args, call.keywords)


# The transforms that take more than their value positionally, and what (SLayer's
# ``_TRANSFORM_POSITIONAL_KWARGS``); any other takes its settings as keywords.
_TRANSFORM_POSITIONAL = {"time_shift": ("periods", "granularity"), "lag": ("periods",), "lead": ("periods",)}
# The keywords SLayer 1.4.1 binds for each other transform (``_TRANSFORM_KWARG_RULES``, and the
# rank family's partition_by and direction): cumsum, change, change_pct and consecutive_periods none.
_TRANSFORM_KEYWORDS = {"rank": ("partition_by", "direction"), "dense_rank": ("partition_by", "direction"),
                       "percent_rank": ("partition_by",), "ntile": ("n", "partition_by")}
# The date functions whose unit (date_part's part) is a string literal, and where (``DATE_UNIT_ARGS``).
_UNIT_ARGS = {"date_part": 0, "date_diff": 0, "date_add": 2, "interval": 1}


def _call_problem(name: str, args: list[ast.expr]) -> str | None:
    """Why SLayer refuses ``name(args...)``, a call with arguments: a transform given more
    positional arguments than it takes, a date function's unit that is not one of its words."""
    if name in _TRANSFORMS and name.lower() not in _AGGREGATIONS and len(args) > 1:
        taken = _TRANSFORM_POSITIONAL.get(name)
        if taken is None:  # SLayer's words, then what it takes (its advice names keywords some refuse)
            keywords = _TRANSFORM_KEYWORDS.get(name, ())
            settings = (f"give its settings as keywords: {', '.join(k + '=' for k in keywords)}" if keywords
                        else f"it takes no settings: write {name}(value)")
            return f"Transform {name!r} accepts exactly one positional argument (the value to transform); {settings}."
        if len(args) - 1 > len(taken):
            return (f"Transform {name!r} accepts at most {len(taken)} positional argument(s) after the value "
                    f"({', '.join(taken)}); got {len(args) - 1}.")
    lowered = name.lower()
    at = _UNIT_ARGS.get(lowered)
    if at is None or at >= len(args):
        return None
    words = _DATE_PARTS if lowered == "date_part" else GRANULARITIES
    what = "part" if lowered == "date_part" else "unit"
    unit = args[at]
    if not (isinstance(unit, ast.Constant) and isinstance(unit.value, str)):
        return f"the {what} of {lowered}() must be a string literal, one of: {', '.join(words)}."
    word = unit.value.lower()
    if lowered == "date_part":
        if word in _AMBIGUOUS_WEEKDAYS:
            return _ambiguous_weekday(unit.value)
        word = _DATE_PART_ALIASES.get(word, word)
    if word not in words:
        return f"unknown {lowered}() {what} {unit.value!r}; accepted: {', '.join(words)}."
    return None


def aggregation_call(name: str) -> bool:
    """Whether SLayer calls ``name(value, ...)`` as an aggregation: a built-in one, or a name it
    does not know, which it defers to a custom aggregation of the model."""
    lowered = name.lower()
    if lowered in _AGGREGATIONS:
        return True
    return name not in _TRANSFORMS and lowered not in _SCALARS | _DATE_PART_FUNCTIONS and lowered != "extract"


# SLayer's aliases of its aggregations (``AGGREGATION_ALIASES``), and the parameters a built-in one
# takes positionally after its value (``BUILTIN_AGGREGATION_PARAM_ORDER``); first and last rank by
# one column so given, and the rest take none.
_ALIASES = {"countd": "count_distinct", "countdistinct": "count_distinct", "approx_count_distinct": "count_distinct_approx",
            "countdistinctapprox": "count_distinct_approx", "stddev": "stddev_samp", "var": "var_samp", "variance": "var_samp"}
_PARAMETERS = {"percentile": ("p",), "weighted_avg": ("weight",), "corr": ("other",), "covar_samp": ("other",),
               "covar_pop": ("other",), "first": ("the ranking column",), "last": ("the ranking column",)}


def aggregation_problem(tree: ast.Expression, colons: Sequence[str] = ()) -> str | None:
    """Why SLayer's engine refuses a query whose formula gives a built-in aggregation more
    positional arguments than it takes, when the query runs (``_fold_positional_agg_args``; its
    memory resolver reads none of them and saves the query), in its words, then the fix. ``colons``:
    the formula's colon aggregations in order (``amount:max``), which ``tree`` holds as
    :data:`AGGREGATED`, each argument of theirs a parameter. Not an entity reference's concern:
    ``last(balance, updated_at)`` names ``balance`` there."""
    written = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id == AGGREGATED),
                     key=lambda node: (node.lineno, node.col_offset))
    colon = {id(node): spelled for node, spelled in zip(written, colons, strict=False)}
    calls = (node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name))
    return next((problem for call in calls if (problem := _aggregation_call_problem(call, colon)) is not None), None)


def _aggregation_call_problem(call: ast.Call, colon: dict[int, str]) -> str | None:
    assert isinstance(call.func, ast.Name)
    spelled = colon.get(id(call.func))  # amount:max(status) is max with the parameter status
    name = spelled.rpartition(":")[2] if spelled else call.func.id
    keywords = call.keywords
    agg = _ALIASES.get(name.lower(), name.lower())
    taken = _PARAMETERS.get(agg, ())
    given = len(call.args) - (spelled is None)
    if agg not in _AGGREGATIONS or given <= len(taken):
        if any(keyword.arg in taken[:given] for keyword in keywords):
            param = next(keyword.arg for keyword in keywords if keyword.arg in taken[:given])
            return f"Aggregation {agg!r} got parameter {param!r} both positionally and by name."
        return None
    if not taken:
        return (f"Aggregation {agg!r} takes no parameters; got {given} positional value(s). It aggregates one "
                f"value: write {spelled or f'{name}(value)'}.")
    if agg in ("first", "last"):
        return (f"Aggregation {agg!r} ranks by at most one column; got {given} positional value(s). Write "
                f"{spelled + '(ranking_column)' if spelled else f'{name}(value, ranking_column)'}.")
    return (f"Aggregation {agg!r} takes at most {len(taken)} parameter(s) ({', '.join(taken)}); got {given} "
            f"positional value(s).")


def _empty_call(name: str) -> str | None:
    """Why SLayer refuses ``name()``, a call with no positional argument; None when it takes it."""
    if name == AGGREGATED:
        return None
    if name.lower() in _AGGREGATIONS:
        return f"aggregation {name!r} requires a value argument, e.g. {name}(column)."
    if name in _TRANSFORMS:
        return f"transform {name!r} requires at least one positional argument (the value to transform)."
    if name.lower() in _SCALARS:
        return None
    return (f"Function {name!r} is not allowed in Mode B. It takes the scalar functions "
            f"({', '.join(sorted(_SCALARS))}), transforms and aggregations (`sum(revenue)`).")


# extract's part, as SLayer's date_part() takes it: one of its parts or an alias of one.
_DATE_PARTS = ("year", "iso_year", "quarter", "month", "week", "day", "day_of_week", "day_of_year", "hour",
               "minute", "second")
_DATE_PART_ALIASES = {
    "isodow": "day_of_week", "doy": "day_of_year", "dayofyear": "day_of_year", "isoyear": "iso_year",
    "isoweek": "week", "iso_week": "week", "weekofyear": "week", "dayofmonth": "day", "day_of_month": "day",
}
_AMBIGUOUS_WEEKDAYS = ("weekday", "dayofweek", "dow")
# The names SLayer calls as date_part() aliases (``DATE_PART_ALIASES``), no aggregation's method.
_DATE_PART_FUNCTIONS = frozenset({*_DATE_PART_ALIASES, "day_of_week", "day_of_year", "iso_year"})


class MalformedExtract(ValueError):
    """An ``extract(...)`` SLayer's parser refuses, in its words."""


def extract_as_date_part(text: str) -> str:
    """``text`` with each ``extract(part from x)`` written as SLayer's parser lowers it,
    ``date_part('part', x)`` (``_rewrite_extract``, which reads a comment's words as tokens too):
    its part is then checked as date_part's, and a method call's example shows it so, as SLayer's
    does. :class:`MalformedExtract` for one SLayer refuses (``extract(year from)``)."""
    if "extract" not in text.lower():
        return text
    found = lexer.tokens(text)
    written, at = [], 0
    for call in lexer.extracts(found):
        if found[call.at].start < at:
            continue  # inside the value of one written already, which wrote it
        if not call.taken(found):
            raise MalformedExtract("write extract(<part> from <value>), e.g. extract(day from created_at).")
        part = found[call.at + 2].text
        word = part if part[0] in "'\"" else f"'{part}'"
        value = extract_as_date_part(text[found[call.word].end : found[call.end].start].strip())
        written += [text[at : found[call.at].start], f"date_part({word}, {value})"]
        at = found[call.end].end
    return "".join([*written, text[at:]])


def _ambiguous_weekday(part: str) -> str:
    return (f"{part!r} has conflicting weekday numberings across databases; write date_part('day_of_week', "
            "x) (ISO, Monday = 1 … Sunday = 7) or date_part('day_of_week', x) % 7 (Sunday = 0 … Saturday = 6).")
