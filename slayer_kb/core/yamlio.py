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


def load(text: str) -> Any:
    """The data of one YAML document (plain dicts, lists, strings, numbers, booleans, None)."""
    return yaml.load(text, Loader=SafeLoader)


def compose(text: str) -> yaml.Node | None:
    """The document's node tree, with line numbers (for messages that point at a line)."""
    return yaml.compose(text, Loader=SafeLoader)


def parse(text: str) -> Iterator[yaml.Event]:
    """The document's parser events (for checks that need the text's own structure)."""
    return yaml.parse(text, Loader=SafeLoader)
