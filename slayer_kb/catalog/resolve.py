"""Entity references resolved against the catalog (catalog.py), by SLayer 1.4.1's rules.

Resolution follows SLayer's rules (see :class:`Resolver`), with two deliberate differences: a bare
leaf found in several datasources that no priority list orders is rejected as ambiguous instead of
silently taking the first, and inside a query the source model's datasource is preferred for model
and leaf names (a query runs against one datasource, so a name it uses means that datasource's).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

from ..core.errors import (
    AmbiguousEntityError,
    InvalidInputError,
    KBError,
    ReferenceFormError,
    ResolutionError,
)
from ..core.ids import check_link_id, is_valid_id, latin_spelling, looks_latin, no_memory
from ..core.locate import linked_id, memory_link
from ..core.text import kind_of, shown_value
from . import suggest
from .catalog import Catalog, Datasource, Model
from .refs import REFERENCE_SEGMENT_RE, Resolution, check_reference_length, invalid_segment, parse_reference
from .spelling import spelled_like

# An error listing a datasource's models stays readable even with hundreds of models.
_MAX_LISTED = 50


class Resolver:
    """Turns entity references into canonical entities, by the rules of SLayer 1.4.1's memory
    resolver (``slayer/memories/resolver.py``), in its words where it has them.

    1. Surrounding whitespace is stripped; an empty reference is an error.
    2. ``memory:<id>``: the id must pass ``check_id`` (``check_link_id``) and the memory must exist.
    3. An aggregation is stripped (``sum(x)``, ``x:sum``, ``weighted_avg(x, weight=w)``, ...);
       ``count(*)`` / ``*:count`` name the source model; ``count(m.*)`` / ``m.*:count`` resolve
       as the name ``m`` does, warnings included (SLayer resolves the name again).
    4. The name is split on ``.``; every segment must be an identifier (a letter or ``_``, then
       letters, digits, ``_`` or ``-``).
    5. A first segment naming a datasource wins, with SLayer's warning whenever a model of that
       name exists too (whether or not reading it as that model would resolve).
    6. A bare name: a leaf of the source model; else a model (source datasource, then priority),
       with a warning when other models of its datasource have a leaf of that name; else a leaf
       in the first datasource (source, then priority, then the rest) that has it.
    7. A dotted name headed by a model walks the joins, in either direction: a join declared on
       customers to regions is walked as ``customers.regions`` and as ``regions.customers``, and
       a named join (``name: original_order``) by its name from either end. The last segment is
       a leaf of the model the others reach (preferred), else one more hop;
       ``orders.customers.regions.name`` is ``<ds>.regions.name``. A walk that comes back to a
       model already on it is an error.

    Two differences from SLayer, on purpose: a bare leaf found in several datasources that no
    priority orders is ambiguous (SLayer takes the first), and inside a query the source model's
    datasource is preferred for model names (a query runs against one datasource).
    """

    def __init__(
        self,
        catalog: Catalog,
        memory_exists: Callable[[str], bool] = lambda _id: False,
        check_id: Callable[[str], object] = check_link_id,
    ) -> None:
        self.catalog = catalog
        self.memory_exists = memory_exists
        self.check_id = check_id
        datasources = catalog.datasources
        self._priority = [name for name in dict.fromkeys(catalog.priority) if name in datasources]
        rest = sorted(name for name in datasources if name not in self._priority)
        self._order = self._priority + rest
        self._sources: dict[str, Model] = {}
        self._folded: dict[str, str] | None = None  # suggest.by_folded_case, made at the first mistyped name
        self._edges: dict[str, dict[str, list[_Edge]]] = {}

    # -- public ------------------------------------------------------------------------------

    def resolve_leniently(self, refs: Iterable[str], warnings: list[str]) -> list[str]:
        """The references that resolve, canonical and de-duplicated; each other one dropped with a
        warning (search and imports are lenient where a save is strict)."""
        kept: list[str] = []
        for ref in refs:
            try:
                entity = self.resolve(ref).entity
            except KBError as exc:
                warnings.append(f"entity {shown_value(ref)} dropped: {exc}{self.link_meant(ref)}")
                continue
            if entity not in kept:
                kept.append(entity)
        return kept

    def link_meant(self, ref: str) -> str:
        """For a reference refused that is a memory's id (``12`` for ``memory:12``): the sentence
        naming the link to write, to follow the refusal; else ``""``."""
        memory_id = ref.strip() if isinstance(ref, str) else ""
        if not memory_id or not is_valid_id(memory_id) or not self.memory_exists(memory_id):
            return ""
        return f" A memory has id '{memory_id}': to link it, write {memory_link(memory_id)}."

    def candidates(self, name: str) -> list[str]:
        """The catalog entities a name written in free text may mean: the one it resolves to, or,
        when it is ambiguous, every reading that resolves (a model in several datasources that
        no priority orders: each datasource's; a bare leaf: each model holding it); none when it
        names nothing. A dotted name whose first part is neither a datasource nor a model, and a
        bare name that is no model's or leaf's, are not looked up further (prose holds many
        such words: ``e.g``, ``node.js``, ``config.yaml``, ``snake_case``), so no spelling
        suggestion is computed for them."""
        head, dot, _rest = name.partition(".")
        if not dot:
            return self._bare_candidates(name)
        if head not in self.catalog.datasources and not self.catalog.models_named(head):
            return []
        try:
            return [self.resolve(name).entity]
        except AmbiguousEntityError:
            pass
        except KBError:
            return []
        found: list[str] = []
        for datasource in self._order:
            try:
                entity = self.resolve(f"{datasource}.{name}").entity
            except KBError:
                continue
            if entity not in found:
                found.append(entity)
        return found

    def _bare_candidates(self, name: str) -> list[str]:
        if not REFERENCE_SEGMENT_RE.fullmatch(name):
            return []
        models = self.catalog.models_named(name)
        if models:
            try:
                return [self._pick_model(name, models, None).entity]
            except AmbiguousEntityError:
                return [model.entity for model in models]
        return [f"{model.entity}.{name}" for _ds, holders in self._leaf_holders(name, None) for model in holders]

    def resolve(self, ref: str, source_model: str | Model | None = None) -> Resolution:
        """The canonical entity ``ref`` names, with warnings; a ResolutionError if there is none."""
        try:
            return self._resolve(ref, source_model)
        except AmbiguousEntityError:
            raise
        except ResolutionError as exc:
            raise self._mistyped(ref, source_model, exc) from None

    def _mistyped(self, ref: str, source_model: str | Model | None, exc: ResolutionError) -> ResolutionError:
        """``exc``, and for a reference typed in another letter case (``ORDERS.AMOUNT``) or with a
        letter that only looks Latin (a Cyrillic ``о``), which no catalog name has, what it then
        names and why: the two look alike to the person who typed them."""
        if self._folded is None:
            self._folded = suggest.by_folded_case(self.catalog)
        text = ref.strip()
        latin = latin_spelling(text)
        typed = suggest.in_catalog_case(latin, self._folded)
        note = looks_latin(text)
        entity = None
        if typed != text:
            with contextlib.suppress(KBError):
                entity = self._resolve(typed, source_model).entity
        if entity is None:  # which letters only look Latin is true all the same
            return type(exc)(f"{exc} {note}.", exc.suggestions) if note else exc
        why = [note] if note else []
        if typed != latin:
            why.append("Catalog names are case-sensitive: write it as the catalog spells it")
        said = str(exc).removesuffix(f" Did you mean: {', '.join(exc.suggestions)}?")
        return type(exc)(f"{said} Did you mean: {entity}? {'. '.join(why)}.", (entity,))

    def _resolve(self, ref: str, source_model: str | Model | None) -> Resolution:
        if not isinstance(ref, str):
            raise InvalidInputError(f"An entity reference must be a string, got {kind_of(ref)}.")
        text = ref.strip()
        if not text:
            raise ResolutionError(
                "entity reference is empty: name a datasource, model, column or memory:<id>."
            )
        check_reference_length(text)
        if (memory_id := linked_id(text)) is not None:
            return Resolution(self._memory(memory_id), [])
        source = self.source(source_model) if isinstance(source_model, str) else source_model
        target = parse_reference(text)
        if target.star:
            if source is None:
                raise ResolutionError(
                    "'count(*)' requires a model context: write 'count(<model>.*)' or invoke from "
                    "a query that has a source_model."
                )
            return Resolution(source.entity, [])
        segments = _segments(target.name, text)
        warnings: list[str] = []
        entity = self._path(segments, source, warnings, text)
        return Resolution(entity, warnings)

    def resolve_from(self, ref: str, source: Model) -> Resolution:
        """The column or model the dotted name ``ref`` reaches walked from ``source``'s joins, as
        SLayer's engine reads a name its memory resolver does not (an aggregation's later
        argument): ``original_order.created_at`` on refunds, a join named ``original_order``."""
        return Resolution(self._dotted(source, _segments(ref, ref)), [])

    def resolve_model(self, ref: str) -> Resolution:
        """A model reference (``orders``, ``shop.orders``) as a canonical model entity."""
        return Resolution(self.source(ref).entity, [])

    def source(self, ref: str) -> Model:
        """The model ``ref`` names (``orders``, ``shop.orders``); a bare name is always a model."""
        model = self._sources.get(ref)
        if model is None:
            model = self._sources[ref] = self._find_source(ref)
        return model

    def query_source(self, name: str) -> Model:
        """A SlayerQuery's ``source_model`` as SLayer's storage finds it: a model's bare name
        (the shape check has refused a dotted one), the datasource priority list deciding."""
        found = self.catalog.models_named(name)
        if not found:
            raise ResolutionError(f"Source model not found: {name!r}.")
        return self._pick_model(name, found, None)

    # -- steps -------------------------------------------------------------------------------

    def _memory(self, memory_id: str) -> str:
        self.check_id(memory_id)  # an empty one is told LINK_FIX: a link has no auto id to fall back on
        if not self.memory_exists(memory_id):
            raise no_memory(memory_id, self.memory_exists)
        return memory_link(memory_id)

    def _find_source(self, ref: Any) -> Model:
        if not isinstance(ref, str) or not ref.strip():
            raise InvalidInputError(
                "source_model must be a model name: '<model>' or '<datasource>.<model>'."
            )
        text = ref.strip()
        segments = _segments(text, text)
        if len(segments) == 1:
            model = self._find_model(segments[0], None)
            if model is None:
                raise ResolutionError(f"Source model not found: {shown_value(text)}.")
            return model
        datasource = self.catalog.datasources.get(segments[0])
        if len(segments) > 2 or datasource is None:
            raise ResolutionError(
                f"source_model '{text}' must be '<model>' or '<datasource>.<model>'"
                + ("." if datasource else f"; there is no datasource '{segments[0]}'.")
            )
        return self._model_in(datasource, segments[1])

    def _path(self, segments: list[str], source: Model | None, warnings: list[str], ref: str) -> str:
        head = segments[0]
        datasource = self.catalog.datasources.get(head)
        if datasource is not None:
            if self.catalog.models_named(head):
                warnings.append(
                    f"'{head}' is both a datasource and a model; interpreted as datasource. "
                    f"To force the model interpretation, qualify as <other_ds>.{head}..."
                )
            if len(segments) == 1:
                return head
            model = self._model_in(datasource, segments[1])
            return self._dotted(model, segments[2:])
        if len(segments) == 1:
            return self._bare(head, source, warnings)
        found = self._find_model(head, source)
        if found is None:
            raise suggest.unresolved(
                f"'{head}' is neither a known datasource nor a saved model. (segment of '{ref}').",
                spelled_like(head, suggest.heads(self.catalog)),
            )
        return self._dotted(found, segments[1:])

    def _dotted(self, model: Model, rest: list[str]) -> str:
        """SLayer's ``_resolve_dotted_against_model``: the last segment is a leaf of the model the
        others reach; failing that, every segment is a join hop."""
        if not rest:
            return model.entity
        try:
            owner = self._walk(model, rest[:-1])
        except AmbiguousEntityError:
            raise
        except ResolutionError:
            owner = None
        if owner is not None and owner.leaf_kind(rest[-1]):
            return f"{owner.entity}.{rest[-1]}"
        try:
            return self._walk(model, rest).entity
        except _NoJoin as exc:
            # The last segment neither a leaf nor a join of the model reached: say so, where it
            # was looked for, and what exists that was probably meant.
            if owner is not None and exc.model is owner:
                raise suggest.missing_leaf(self.catalog, str(exc), model, owner, rest) from None
            raise ResolutionError(str(exc)) from None

    def _walk(self, root: Model, path: list[str]) -> Model:
        """The model ``path`` reaches from ``root``, hop by hop over joins in either direction
        (SLayer's join walker)."""
        current = root
        visited = {root.name}
        for token in path:
            edges = self._incident(current).get(token, [])
            named = [e for e in edges if e.name == token]
            edges = named or [e for e in edges if e.target == token]
            if len(edges) > 1:
                raise AmbiguousEntityError(
                    f"Ambiguous join hop '{current.name}' \u2192 '{edges[0].target}': {len(edges)} "
                    "edges connect these models and no edge name resolves it. Name the joins "
                    "(name: ...) and walk them by name."
                )
            joined = self.catalog.datasources[current.datasource].models.get(edges[0].target) if edges else None
            if joined is None and edges:
                raise ResolutionError(
                    f"'{token}' is not a join target on model '{current.name}'. It joins "
                    f"'{edges[0].target}', which is not a model of datasource '{current.datasource}'."
                )
            if joined is None:
                raise _NoJoin(f"'{token}' is not a join target on model '{current.name}'.", current)
            if joined.name in visited:
                raise ResolutionError(
                    f"Circular join detected resolving {'.'.join(path)!r} from {root.name!r}: hop "
                    f"{token!r} revisits model {joined.name!r}."
                )
            visited.add(joined.name)
            current = joined
        return current

    def _incident(self, model: Model) -> dict[str, list[_Edge]]:
        """The join edges at ``model``, by the tokens that name them: each edge by its name (if
        any) and by the model at its other end. Built once per datasource."""
        by_model = self._edges.get(model.datasource)
        if by_model is None:
            by_model = self._edges[model.datasource] = {}
            for declaring in self.catalog.datasources[model.datasource].models.values():
                names = declaring.join_names or (None,) * len(declaring.joins)
                for target, name in zip(declaring.joins, names, strict=True):
                    by_model.setdefault(declaring.name, []).append(_Edge(target, name))
                    if target != declaring.name:
                        by_model.setdefault(target, []).append(_Edge(declaring.name, name))
        tokens: dict[str, list[_Edge]] = {}
        for edge in by_model.get(model.name, []):
            tokens.setdefault(edge.target, []).append(edge)
            if edge.name is not None and edge.name != edge.target:
                tokens.setdefault(edge.name, []).append(edge)
        return tokens

    def _bare(self, name: str, source: Model | None, warnings: list[str]) -> str:
        if source is not None and source.leaf_kind(name):
            return f"{source.entity}.{name}"
        model = self._find_model(name, source)
        if model is None:
            return self._find_leaf(name, source)
        others = [m.name for m in _holders(self.catalog.datasources[model.datasource], name) if m.name != model.name]
        if others:
            warnings.append(
                f"'{name}' is both a model and a column on {sorted(others)}; resolved as the model. "
                f"Qualify as <model>.{name} to refer to the column."
            )
        return model.entity

    def _find_model(self, name: str, source: Model | None) -> Model | None:
        models = self.catalog.models_named(name)
        return self._pick_model(name, models, source) if models else None

    def _pick_model(self, name: str, models: list[Model], source: Model | None) -> Model:
        if len(models) == 1:
            return models[0]
        by_ds = {model.datasource: model for model in models}
        if source is not None and source.datasource in by_ds:
            return by_ds[source.datasource]
        for ds_name in self._priority:
            if ds_name in by_ds:
                return by_ds[ds_name]
        raise AmbiguousEntityError(
            f"Model '{name}' exists in multiple datasources: {sorted(by_ds)}. Specify a data_source "
            f"or set a datasource priority to disambiguate: write '<datasource>.{name}' in an entity "
            "reference, or list the datasources in priority.yaml."
        )

    def _model_in(self, datasource: Datasource, name: str) -> Model:
        model = datasource.models.get(name)
        if model is None:
            raise suggest.unresolved(
                f"No model '{name}' in datasource '{datasource.name}'. "
                f"Its models: {_listing(list(datasource.models))}.",
                spelled_like(name, suggest.models_of(self.catalog, datasource.name)),
            )
        return model

    def _leaf_holders(self, name: str, source: Model | None) -> list[tuple[str, list[Model]]]:
        """The models holding a leaf ``name``, by datasource: the first preferred datasource that
        has one (the source's, then priority), else every datasource that has one."""
        order = self._order
        if source is not None:
            order = [source.datasource] + [ds for ds in order if ds != source.datasource]
        matches: list[tuple[str, list[Model]]] = []
        for ds_name in order:
            holders = _holders(self.catalog.datasources[ds_name], name)
            if holders:
                matches.append((ds_name, holders))
                # A preferred datasource decides on its own; otherwise keep looking for rivals.
                if ds_name in self._priority or (source and ds_name == source.datasource):
                    break
        return matches

    def _find_leaf(self, name: str, source: Model | None) -> str:
        matches = self._leaf_holders(name, source)
        if not matches:
            raise suggest.unresolved(
                f"Entity '{name}' not found in any datasource (checked all known datasources).",
                spelled_like(name, {**suggest.heads(self.catalog), **suggest.leaves(self.catalog)}),
            )
        ds_name, holders = matches[0]
        if len(matches) > 1:
            kinds = _kinds_word([m for _ds, found in matches for m in found], name)
            raise AmbiguousEntityError(
                f"Ambiguous bare name '{name}' matches {kinds} in datasources "
                f"{[ds for ds, _found in matches]}, and none of them is in the priority list. "
                f"Qualify as '<ds>.<model>.{name}' or add a priority.yaml."
            )
        if len(holders) > 1:
            raise AmbiguousEntityError(
                f"Ambiguous bare name '{name}' matches columns / measures / aggregations on "
                f"{sorted(m.name for m in holders)} in datasource '{ds_name}'. "
                f"Qualify as '<model>.{name}'."
            )
        return f"{holders[0].entity}.{name}"


class _NoJoin(ResolutionError):
    """SLayer's "not a join target": ``model`` has no join of that name."""

    def __init__(self, message: str, model: Model) -> None:
        super().__init__(message)
        self.model = model


class _Edge(NamedTuple):
    target: str  # the model at the other end
    name: str | None  # the join's edge name




def _segments(name: str, ref: str) -> list[str]:
    segments = name.split(".")
    if not all(REFERENCE_SEGMENT_RE.fullmatch(segment) for segment in segments):
        raise ReferenceFormError(invalid_segment(ref))
    return segments


def _holders(datasource: Datasource, name: str) -> list[Model]:
    return [model for model in datasource.models.values() if model.leaf_kind(name)]


def _kinds_word(models: list[Model], name: str) -> str:
    kinds = {model.leaf_kind(name) for model in models}
    return f"{kinds.pop()}s" if len(kinds) == 1 else "leaves"


def _listing(names: list[str]) -> str:
    if len(names) <= _MAX_LISTED:
        return str(names)
    return f"{names[:_MAX_LISTED]} and {len(names) - _MAX_LISTED} more"
