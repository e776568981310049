"""What an entity-resolution error suggests: the references that exist and were probably meant.

The resolver keeps SLayer's words for what went wrong (tests/fidelity holds them); this module
adds where it looked (datasource and model), what is missing there, and the nearest references:
the same path in another datasource (bare ``orders`` means ``shop.orders``, but ``order_date`` is
a column of ``wh.orders``), and names spelled alike (spelling.py). ``save``, ``validate`` and
search's warnings all print these words, since they all come from the resolver.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from ..core.errors import ResolutionError
from .catalog import Catalog, Model
from .spelling import CUTOFF, MAX_SUGGESTIONS


def unresolved(message: str, suggestions: Iterable[str] = ()) -> ResolutionError:
    """The error, its message ending with the suggestions (``Did you mean: a, b?``) if any."""
    found = tuple(dict.fromkeys(suggestions))[:MAX_SUGGESTIONS]
    if found:
        message += f" Did you mean: {', '.join(found)}?"
    return ResolutionError(message, found)


def in_catalog_case(ref: str, names: dict[str, str]) -> str:
    """``ref`` with each name in the letter case of the catalog's (``ORDERS.AMOUNT``:
    ``orders.amount``); ``names``: ``by_folded_case``."""
    return _NAME.sub(lambda word: names.get(word[0].lower(), word[0]), ref)


_NAME = re.compile(r"[\w-]+")


def by_folded_case(catalog: Catalog) -> dict[str, str]:
    """Each datasource, model and leaf name by its lower case, where no other name has it."""
    found: dict[str, set[str]] = {}
    for name in [*heads(catalog), *leaves(catalog)]:
        found.setdefault(name.lower(), set()).add(name)
    return {folded: names.pop() for folded, names in found.items() if len(names) == 1}


def heads(catalog: Catalog) -> dict[str, list[str]]:
    """What may head a dotted reference: datasources and models, by name."""
    names: dict[str, list[str]] = {name: [name] for name in catalog.datasources}
    for datasource in catalog.datasources.values():
        for model in datasource.models.values():
            names.setdefault(model.name, []).append(model.entity)
    return names


def leaves(catalog: Catalog) -> dict[str, list[str]]:
    """Every leaf (column, measure, aggregation) of every model, by name."""
    names: dict[str, list[str]] = {}
    for datasource in catalog.datasources.values():
        for model in datasource.models.values():
            for leaf in model.leaves():
                names.setdefault(leaf, []).append(f"{model.entity}.{leaf}")
    return names


def models_of(catalog: Catalog, datasource: str) -> dict[str, list[str]]:
    return {name: [model.entity] for name, model in catalog.datasources[datasource].models.items()}


def missing_leaf(catalog: Catalog, message: str, root: Model, owner: Model, rest: list[str]) -> ResolutionError:
    """Why ``root`` then the segments ``rest`` name nothing: the last segment is no leaf and no
    join of ``owner``, the model the others reach; then what exists. SLayer's ``message`` ("not a
    join target") is kept whole, after the words that name the segment as the field it most
    likely is (a typo'd column reads oddly as only a join target)."""
    leaf = rest[-1]
    message = (
        f"Unknown field '{leaf}' on model '{owner.name}' (datasource '{owner.datasource}'): no column, "
        f"measure or aggregation of that name, and {message}"
    )
    # The same model path in another datasource, where the leaf exists.
    path = [root.name, *rest[:-1]]
    elsewhere = [
        ".".join([name, *path, leaf])
        for name in catalog.datasources
        if name != root.datasource and _has_path(catalog, name, path, leaf)
    ]
    spelled = difflib.get_close_matches(leaf, list(owner.leaves()), n=MAX_SUGGESTIONS, cutoff=CUTOFF)
    return unresolved(message, [*elsewhere, *(f"{owner.entity}.{word}" for word in spelled)])


def _has_path(catalog: Catalog, datasource: str, path: list[str], leaf: str) -> bool:
    """Whether ``datasource`` has the models of ``path`` and the last one has the leaf (a path
    of joins is checked by model names only: a suggestion, not a resolution)."""
    models = catalog.datasources[datasource].models
    if any(name not in models for name in path):
        return False
    return models[path[-1]].leaf_kind(leaf) is not None
