"""SLayer's catalog as it lies on disk (entity references are resolved against it in resolve.py).

Layout (SLayer's own YAML storage, so a SLayer storage folder under git is a knowledge base)::

    datasources/<ds>.yaml       name (defaults to the file stem), description; other keys ignored
    models/<ds>/<model>.yaml    name (defaults to the stem), description, columns, measures,
                                aggregations (lists of {name, description}), joins
                                ({target_model, name})
    priority.yaml               {priority: [ds, ...]}  (a bare list is accepted too)

Only ``*.yaml`` files are read, the same set the index watches for catalog changes. A file that
cannot be used (bad YAML, wrong types) becomes a :class:`CatalogProblem` and is skipped: one broken
model never hides the rest of the catalog.

"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..core import yamlio
from ..core.errors import MemoryFileError
from ..core.fileio import NotRegularFile, TooLarge, outside, read_regular
from ..core.memory import check_duplicate_keys
from ..core.text import kind_of
from .leafuses import JoinKey, Use, dangling, join_keys, missing_target, uses
from .spelling import spelled_like

SEGMENT_RE = re.compile(r"[A-Za-z0-9_-]+")
LEAF_SECTIONS = (("columns", "column"), ("measures", "measure"), ("aggregations", "aggregation"))
# Every command reads the catalog: a clone's 1 GB model file made each one take minutes. The
# problem of a larger file, in the work tree or at a revision (OVERSIZED.format(size=...)):
MAX_CATALOG_BYTES = 16 * 1024 * 1024
OVERSIZED = ("is {size} bytes; a catalog file may hold at most 16777216 bytes (16 MiB), so it is not read: keep one "
             "model per file, with shorter descriptions")


# --------------------------------------------------------------------------------------------
# The catalog
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    datasource: str
    name: str
    description: str | None
    columns: dict[str, str | None]
    measures: dict[str, str | None]
    aggregations: dict[str, str | None]
    joins: tuple[str, ...]
    path: Path
    # Each join's optional edge name (SLayer's ModelJoin.name), beside its target in ``joins``.
    join_names: tuple[str | None, ...] = field(default=(), compare=False)
    # The columns its joins read of their targets (``join_pairs``' second), and the dotted names
    # its measures and aggregation parameters read through its joins: checked against those models.
    join_keys: tuple[JoinKey, ...] = field(default=(), compare=False)
    through: tuple[Use, ...] = field(default=(), compare=False)
    # Resolution asks "is X a leaf here?" for every model of a datasource; one dict answers it.
    _kinds: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kinds: dict[str, str] = {}
        for section, kind in LEAF_SECTIONS:
            for name in getattr(self, section):
                kinds.setdefault(name, kind)
        object.__setattr__(self, "_kinds", kinds)

    @property
    def entity(self) -> str:
        return f"{self.datasource}.{self.name}"

    def leaves(self) -> dict[str, str | None]:
        """Columns, then named measures, then custom aggregations; a column shadows the others."""
        merged = dict(self.columns)
        for leaves in (self.measures, self.aggregations):
            for name, description in leaves.items():
                merged.setdefault(name, description)
        return merged

    def leaf_kind(self, name: str) -> str | None:
        """``"column"``, ``"measure"``, ``"aggregation"``, or None when there is no such leaf."""
        return self._kinds.get(name)


@dataclass(frozen=True)
class Datasource:
    name: str
    description: str | None
    path: Path | None
    models: dict[str, Model]


@dataclass
class CatalogProblem:
    path: Path
    line: int | None
    message: str
    skipped: bool = True  # the file is not used; else only the part the message names is not

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"

    def shown(self, root: Path) -> str:
        """The problem with its path relative to the KB's ``root``, as memory files' are shown."""
        path = self.path.relative_to(root).as_posix() if self.path.is_relative_to(root) else str(self.path)
        return f"{path}:{self.line}: {self.message}" if self.line else f"{path}: {self.message}"


@dataclass
class Catalog:
    datasources: dict[str, Datasource] = field(default_factory=dict)
    priority: list[str] = field(default_factory=list)
    problems: list[CatalogProblem] = field(default_factory=list)

    def entity_exists(self, entity: str) -> bool:
        """Whether a canonical ``ds``, ``ds.model`` or ``ds.model.leaf`` exists."""
        parts = entity.split(".")
        datasource = self.datasources.get(parts[0])
        if datasource is None or len(parts) > 3:
            return False
        if len(parts) == 1:
            return True
        model = datasource.models.get(parts[1])
        if model is None:
            return False
        return len(parts) == 2 or model.leaf_kind(parts[2]) is not None

    def iter_entities(self) -> Iterator[tuple[str, str, str | None]]:
        """Every entity as (canonical name, kind, description), datasources before their models."""
        for datasource in self.datasources.values():
            yield datasource.name, "datasource", datasource.description
            for model in datasource.models.values():
                yield model.entity, "model", model.description
                for name, description in model.leaves().items():
                    yield f"{model.entity}.{name}", model._kinds[name], description

    def models_named(self, name: str) -> list[Model]:
        return [ds.models[name] for ds in self.datasources.values() if name in ds.models]


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


class _Broken(Exception):
    """A file that cannot be used; ``keys`` locate the offending value for the line number."""

    def __init__(self, message: str, keys: tuple[Any, ...] = (), line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.keys = keys
        self.line = line


def catalog_files(root: Path) -> list[tuple[str, bool]]:
    """The KB-relative paths of the catalog's files (what ``load_catalog`` reads), sorted, each
    with whether it is a link out of the KB (a file, or a whole models/<ds> or datasources
    folder), which is never read or listed (``outside``).

    Listed with scandir: every command checks them, and pathlib's glob costs 5x as much.
    """

    def yaml_files(folder: str, link: bool) -> list[tuple[str, bool]]:
        if link and outside(root, root / folder):
            return [(folder, True)]
        try:
            with os.scandir(root / folder) as entries:
                return [(f"{folder}/{e.name}", e.is_symlink() and outside(root, e.path) is not None)
                        for e in entries if e.name.endswith(".yaml") and e.name[0] != "."]
        except OSError:
            return []

    files = yaml_files("datasources", os.path.islink(root / "datasources"))
    if os.path.islink(root / "models") and outside(root, root / "models"):
        files.append(("models", True))
    else:
        try:
            with os.scandir(root / "models") as entries:
                folders = [(e.name, e.is_symlink()) for e in entries if e.name[0] != "." and e.is_dir()]
        except OSError:
            folders = []
        for folder, link in folders:
            files.extend(yaml_files(f"models/{folder}", link))
    priority = root / "priority.yaml"
    with contextlib.suppress(OSError):
        link = stat.S_ISLNK(os.lstat(priority).st_mode)
        files.append(("priority.yaml", link and outside(root, priority) is not None))
    return sorted(files)


def load_catalog(root: Path) -> Catalog:
    """Read the catalog under the KB folder ``root``; missing folders give an empty catalog."""
    root = Path(root)
    problems: list[CatalogProblem] = []
    ds_files = _load_datasource_files(root, problems)
    models = _load_model_folders(root, problems)
    datasources: dict[str, Datasource] = {}
    for name in sorted(set(ds_files) | set(models)):
        description, path = ds_files.get(name, (None, None))
        datasources[name] = Datasource(name, description, path, models.get(name, {}))
    priority = _load_priority(root, problems)
    problems.extend(_unknown_priorities(root, datasources, priority, problems))
    return Catalog(datasources, priority, problems)


def _yaml_files(root: Path, folder: Path, problems: list[CatalogProblem]) -> list[Path]:
    """The catalog files in the KB ``root``'s ``folder``; a link out of the KB is a problem, never read.
    A folder or FIFO named ``*.yaml`` is listed too, for ``_read_text`` to name it."""
    try:
        with os.scandir(folder) as entries:
            found = [(e.name, e.is_symlink()) for e in entries
                     if e.name.endswith(".yaml") and not e.name.startswith(".")]
    except OSError:
        return []
    return [folder / name for name, link in sorted(found)
            if not (link and _leads_out(root, folder / name, problems))]


def _leads_out(root: Path, path: Path, problems: list[CatalogProblem]) -> bool:
    """Whether ``path`` is a symlink out of the KB ``root`` (see ``outside``), recorded as a problem."""
    target = os.path.islink(path) and outside(root, path)
    if target:
        rel = path.relative_to(root).as_posix()
        problems.append(CatalogProblem(path, None, f"is a symlink to {target}, outside the knowledge base, and "
                                       "slayer-kb never reads outside it. Replace the link with a copy of what "
                                       f"it points to, or remove it with 'git rm {rel}'"))
    return bool(target)


def _read_text(path: Path) -> str:
    try:
        return read_regular(path, follow_symlinks=True, limit=MAX_CATALOG_BYTES).decode("utf-8")
    except TooLarge as exc:
        raise _Broken(OVERSIZED.format(size=exc.size)) from None
    except NotRegularFile as exc:
        raise _Broken(f"{exc.strerror}: the catalog is read from files. Remove it, or rename it without .yaml") from None
    except UnicodeDecodeError as exc:
        raise _Broken(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise _Broken(f"cannot read the file: {exc.strerror or exc}") from None


def _parse_yaml(text: str) -> Any:
    try:
        return yamlio.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise _Broken(f"invalid YAML: {problem}", line=mark.line + 1 if mark else None) from None


# Long-running processes (the MCP server, the watcher) reload the catalog after every change, and
# YAML parsing is nearly all of the load time: a file whose text is unchanged is not parsed again.
# Keyed by the text itself, never by mtime, so that a same-size rewrite cannot leave it stale.
_PARSED: dict[Path, tuple[str, Any, list[CatalogProblem]]] = {}


def _load_file(path: Path, parse: Callable[[Any], Any], problems: list[CatalogProblem]) -> Any:
    """``parse(data)`` of the file's YAML, or None after recording why the file is unusable."""
    try:
        text = _read_text(path)
    except _Broken as exc:
        problems.append(CatalogProblem(path, exc.line, exc.message))
        return None
    cached = _PARSED.get(path)
    if cached is not None and cached[0] == text:
        _text, result, found = cached
    else:
        result, found = _parse_text(path, text, parse)
        _PARSED[path] = (text, result, found)
    problems.extend(CatalogProblem(p.path, p.line, p.message, p.skipped) for p in found)
    return result


def _parse_text(path: Path, text: str, parse: Callable[[Any], Any]) -> tuple[Any, list[CatalogProblem]]:
    """The file parsed, and its problems: each value its explicit tag does not fit (``!!int x``,
    read as its text, as SLayer's loader would refuse it: the file is used all the same), then
    why the file cannot be used, if it cannot."""
    tagged = [CatalogProblem(path, found.line, f"'{found.path}' {found.message}", skipped=False)
              for found in yamlio.mistagged(text)]
    try:  # as in a memory file; the file is read as SLayer reads it, the last of the two kept
        check_duplicate_keys(text, str(path))
    except MemoryFileError as exc:
        if exc.message.startswith("duplicate key"):  # a second document is the YAML reader's to say
            tagged.append(CatalogProblem(path, exc.line, exc.message, skipped=False))
    try:
        data = _parse_yaml(text)
        result = parse(data)
    except _Broken as exc:
        line = exc.line if exc.line is not None else _line_of(text, exc.keys)
        return None, [*tagged, CatalogProblem(path, line, exc.message)]
    if isinstance(result, Model):  # a definition naming what the model lacks: the file is used all the same
        tagged += [CatalogProblem(path, _line_of(text, keys), message, skipped=False)
                   for keys, message in dangling(data, set(result.leaves()))]
    return result, tagged


def _line_of(text: str, keys: tuple[Any, ...]) -> int | None:
    """1-based line of the value at ``keys``; composing the YAML again only happens for errors."""
    try:
        node = yamlio.compose(text)
    except yaml.YAMLError:
        return None
    if node is None:
        return None
    line = node.start_mark.line + 1
    for key in keys:
        if isinstance(node, yaml.MappingNode):
            found = [(k, v) for k, v in node.value if k.value == key]
            if not found:
                break
            key_node, node = found[-1]
            line = key_node.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _load_datasource_files(root: Path, problems: list[CatalogProblem]) -> dict[str, tuple[str | None, Path]]:
    found: dict[str, tuple[str | None, Path]] = {}
    if _leads_out(root, root / "datasources", problems):
        return found
    for path in _yaml_files(root, root / "datasources", problems):
        parsed = _load_file(path, functools.partial(_parse_datasource, path=path), problems)
        if parsed is None:
            continue
        name, description = parsed
        if name in found:
            problems.append(CatalogProblem(path, None, f"datasource '{name}' is also defined in {found[name][1]}"))
            continue
        found[name] = (description, path)
    return found


def _parse_datasource(data: Any, path: Path) -> tuple[str, str | None]:
    data = _mapping(data, "a datasource (name, type, description, ...)")
    name = _name(data, path.stem, "datasource")
    return name, _optional_text(data, "description", ())


def _load_model_folders(root: Path, problems: list[CatalogProblem]) -> dict[str, dict[str, Model]]:
    folder = root / "models"
    if _leads_out(root, folder, problems):
        return {}
    try:
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if not e.name.startswith(".") and e.is_dir())
    except OSError:
        return {}
    found: dict[str, dict[str, Model]] = {}
    for ds_name in names:
        if _leads_out(root, folder / ds_name, problems):
            continue
        if not SEGMENT_RE.fullmatch(ds_name):
            problems.append(
                CatalogProblem(folder / ds_name, None, _bad_name_message("datasource", ds_name))
            )
            continue
        found[ds_name] = _load_models(root, folder / ds_name, ds_name, problems)
    return found


def _load_models(root: Path, folder: Path, ds_name: str, problems: list[CatalogProblem]) -> dict[str, Model]:
    models: dict[str, Model] = {}
    for path in _yaml_files(root, folder, problems):
        model = _load_file(path, functools.partial(_parse_model, ds_name=ds_name, path=path), problems)
        if model is None:
            continue
        if model.name in models:
            problems.append(CatalogProblem(path, None, f"model '{model.name}' is also defined in {models[model.name].path}"))
            continue
        models[model.name] = model
    for model in models.values():
        for key in model.join_keys:
            # A join to a model the datasource lacks is the resolver's to say; a column of one it has:
            if (target := models.get(key.target)) is not None and target.leaf_kind(key.column) is None:
                text = _PARSED.get(model.path, ("",))[0]
                problems.append(CatalogProblem(model.path, _line_of(text, ("joins", key.at)), missing_target(key),
                                               skipped=False))
        for use in model.through:
            if (reached := through_joins(models, model, use.name)) is not None and reached[0].leaf_kind(reached[1]) is None:
                text = _PARSED.get(model.path, ("",))[0]
                problems.append(CatalogProblem(model.path, _line_of(text, use.keys), (
                    f"{use.place} names '{use.name}', and model {reached[0].name} has no column, measure or "
                    f"aggregation '{reached[1]}'; add the column back or fix the {use.place.split()[0]}"), skipped=False))
    return models


def through_joins(models: dict[str, Model], model: Model, dotted: str) -> tuple[Model, str] | None:
    """The model ``dotted`` (``orders.customers.region``) reaches from ``model`` through its joins
    (by target or edge name), hop by hop among ``models``, and the leaf it names there; None when
    a hop is no join of the model before it (the resolver's to say)."""
    *hops, leaf = dotted.split(".")
    for hop in hops:
        targets = [t for t, name in zip(model.joins, model.join_names or [None] * len(model.joins), strict=True)
                   if hop in (t, name)]
        if not targets or (found := models.get(targets[0])) is None:
            return None
        model = found
    return model, leaf


def _parse_model(data: Any, ds_name: str, path: Path) -> Model:
    data = _mapping(data, "a model (name, columns, measures, joins, ...)")
    sections = {section: _leaves(data, section) for section, _kind in LEAF_SECTIONS}
    joins = _joins(data)
    return Model(
        datasource=ds_name,
        name=_name(data, path.stem, "model"),
        description=_optional_text(data, "description", ()),
        columns=sections["columns"],
        measures=sections["measures"],
        aggregations=sections["aggregations"],
        joins=tuple(target for target, _name in joins),
        path=path,
        join_names=tuple(name for _target, name in joins),
        join_keys=join_keys(data),
        through=tuple(uses(data, dotted=True)),
    )


def _mapping(data: Any, what: str) -> dict[str, Any]:
    # An empty file is a valid (empty) definition: everything defaults.
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _Broken(f"expected a mapping describing {what}, got {kind_of(data)}")
    return data


def _name(data: dict[str, Any], default: str, what: str) -> str:
    name = data.get("name", default)
    if not isinstance(name, str):
        raise _Broken(f"'name' must be a string, got {kind_of(name)}", ("name",))
    if not SEGMENT_RE.fullmatch(name):
        raise _Broken(_bad_name_message(what, name), ("name",) if "name" in data else ())
    return name


def _bad_name_message(what: str, name: str) -> str:
    return f"{what} name '{name}' cannot be referenced: use only letters, digits, '_' and '-'"


def _optional_text(data: dict[str, Any], key: str, where: tuple[Any, ...]) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        raise _Broken(f"{_where(where)}'{key}' must be a string, got {kind_of(value)}", (*where, key))
    return value


def _leaves(data: dict[str, Any], section: str) -> dict[str, str | None]:
    items = _list(data, section, "mappings with a 'name'")
    leaves: dict[str, str | None] = {}
    for index, item in enumerate(items):
        where = (section, index)
        if not isinstance(item, dict):
            raise _Broken(
                f"{_where(where)}expected a mapping with a 'name', got {kind_of(item)}", where
            )
        name = item.get("name")
        if not isinstance(name, str) or not SEGMENT_RE.fullmatch(name):
            raise _Broken(
                f"{_where(where)}'name' must be a name of letters, digits, '_' and '-', got "
                + (repr(name) if isinstance(name, str) else kind_of(name)),
                (*where, "name"),
            )
        leaves[name] = _optional_text(item, "description", where)
    return leaves


def _joins(data: dict[str, Any]) -> list[tuple[str, str | None]]:
    """``(target_model, name)`` of each join; the name is SLayer's edge name, usable as a path
    segment in either direction."""
    joins: list[tuple[str, str | None]] = []
    for index, item in enumerate(_list(data, "joins", "mappings with a 'target_model'")):
        where = ("joins", index)
        target = item.get("target_model") if isinstance(item, dict) else None
        if not isinstance(target, str) or not target:
            raise _Broken(f"{_where(where)}expected a mapping with a 'target_model' string", where)
        joins.append((target, _optional_text(item, "name", where)))
    return joins


def _list(data: dict[str, Any], key: str, of: str) -> list[Any]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Broken(f"'{key}' must be a list of {of}, got {kind_of(value)}", (key,))
    return value


def _where(keys: tuple[Any, ...]) -> str:
    if not keys:
        return ""
    section, index = keys
    return f"{section}[{index}]: "


def _load_priority(root: Path, problems: list[CatalogProblem]) -> list[str]:
    path = root / "priority.yaml"
    if not os.path.lexists(path) or _leads_out(root, path, problems):
        return []
    parsed = _load_file(path, _parse_priority, problems)
    if parsed is None:
        return []
    priority, extra = parsed
    if extra:  # the list is used; a key beside it (a default datasource?) would do nothing unsaid
        with contextlib.suppress(_Broken):
            name, line = _other_key(_read_text(path))
            problems.append(CatalogProblem(path, line, f"unknown key {name!r} is ignored (the file holds only "
                                           "priority: [datasource, ...]); remove it", skipped=False))
    return priority


def _other_key(text: str) -> tuple[str, int | None]:
    """The first top-level key of a priority.yaml but ``priority``, as written (``null``, ``1``:
    not str() of what YAML made of them), and its line."""
    node = yamlio.compose(text)
    for key, _value in node.value if isinstance(node, yaml.MappingNode) else []:
        if key.value != "priority":
            return str(key.value), key.start_mark.line + 1
    return "", None


def _parse_priority(data: Any) -> tuple[list[str], bool]:
    """The priority list, and whether a key other than ``priority`` is beside it."""
    if isinstance(data, dict):
        if data and "priority" not in data:  # a misspelt key would leave bare names unresolved
            found = ", ".join(repr(str(key)) for key in data)
            raise _Broken(f"no 'priority' key (found {found}): write priority: [datasource, ...]", (next(iter(data)),))
        return _priority_list(data.get("priority"), ("priority",)), any(key != "priority" for key in data)
    return _priority_list(data, ()), False


def _priority_list(data: Any, keys: tuple[str, ...]) -> list[str]:
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(item, str) for item in data):
        raise _Broken("expected {priority: [datasource, ...]}: a list of datasource names", keys)
    return list(data)


def _unknown_priorities(root: Path, datasources: dict[str, Datasource], priority: list[str],
                        problems: list[CatalogProblem]) -> list[CatalogProblem]:
    """Each name in the priority list that is no datasource: the resolver skips it, so a typo
    (``shpo``) changed what bare names mean in silence. A datasource whose file is skipped has
    its problem said already."""
    skipped = {p.path.stem for p in problems if p.skipped and p.path.parent == root / "datasources"}
    unknown = [(index, name) for index, name in enumerate(priority) if name not in datasources and name not in skipped]
    if not unknown:
        return []
    path = root / "priority.yaml"
    try:
        text = _read_text(path)  # read again only for the lines of what is wrong
    except _Broken:  # changed since: the problems are said without their lines
        text = ""
    keys: tuple[str, ...] = ("priority",) if isinstance(yamlio.compose(text), yaml.MappingNode) else ()
    found = []
    for index, name in unknown:
        owners = [ds.name for ds in datasources.values() if name in ds.models]
        if owners:
            what, near = f"is a model (of {', '.join(owners)}), not a datasource", owners
        else:
            head = name.split(".")[0]  # shop.orders: a model written whole
            near = [head] if head in datasources else spelled_like(name, {ds: [ds] for ds in datasources})
            what = "is no datasource of the catalog"
        fix = (f"Did you mean: {', '.join(near)}? Write the datasource's name in its place, or remove '{name}'" if near
               else "Remove it, or add the datasource it names")
        found.append(CatalogProblem(path, _line_of(text, (*keys, index)), f"the priority list's '{name}' {what}: it "
                                    f"orders nothing, and bare names resolve as if it were not listed. {fix}",
                                    skipped=False))
    return found
