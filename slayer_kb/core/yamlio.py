"""YAML read safely: libyaml's C safe loader where PyYAML was built with it (several times faster
on a catalog or thousands of memory files), else PyYAML's own safe loader. Every YAML slayer-kb
reads goes through ``load``, so no file a clone brings in can build a Python object (ruff's S506
checks that nothing else loads YAML)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

try:
    from yaml import CSafeLoader as SafeLoader
except ImportError:  # PyYAML built without libyaml
    from yaml import SafeLoader  # type: ignore[assignment]


class _Loader(SafeLoader):  # type: ignore[valid-type,misc]
    """The safe loader, but a timestamp no calendar has (``2026-02-31T00:00:00Z``, unquoted) is
    kept as its text: PyYAML raised ValueError, a traceback from every command reading the file;
    as text, reads go on and validate names the impossible time."""


def _timestamp(loader: yaml.BaseLoader, node: yaml.ScalarNode) -> Any:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_timestamp(loader, node)  # type: ignore[arg-type]
    except ValueError:
        return node.value


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)


def load(text: str) -> Any:
    """The data of one YAML document (plain dicts, lists, strings, numbers, booleans, None)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - the safe loader, its timestamps kept when impossible


def compose(text: str) -> yaml.Node | None:
    """The document's node tree, with line numbers (for messages that point at a line)."""
    return yaml.compose(text, Loader=SafeLoader)


def parse(text: str) -> Iterator[yaml.Event]:
    """The document's parser events (for checks that need the text's own structure)."""
    return yaml.parse(text, Loader=SafeLoader)
