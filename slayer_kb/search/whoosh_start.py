"""Whoosh imported without the two modules its import pulls in that no search uses.

``whoosh.compat`` imports ``urllib.request`` for ``urlretrieve`` (which slayer-kb never calls),
and ``whoosh.reading`` imports the ``cached_property`` package for one property, a package that
imports ``asyncio`` (to wrap coroutines; Whoosh's property is a plain method). With ``ssl``,
``http.client`` and ``email`` under them they were a tenth of the CPU a process that opens the
index spends starting (docs/testing.md, "Where the CPU is: the tests' processes"). While those two
Whoosh modules run, stand-ins answer in their place: ``urlretrieve`` imports the real one when
called, and the property is the standard library's ``functools.cached_property`` (the same
caching in the instance's ``__dict__``). The stand-ins are removed once Whoosh has taken its names;
any other name asked of one meanwhile is the real module's. Every module that imports Whoosh
imports this one before it (tests/test_architecture.py)."""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def _urlretrieve(*args: Any, **kwargs: Any) -> Any:
    from urllib.request import urlretrieve

    return urlretrieve(*args, **kwargs)  # noqa: S310 - Whoosh's own call, as it made it


class _StandIn(types.ModuleType):
    """A module whose names ``given`` answer at once and any other from the real module."""

    def __init__(self, name: str, given: dict[str, Any]) -> None:
        super().__init__(name)
        self.__dict__.update(given)

    def __getattr__(self, attr: str) -> Any:
        import importlib

        if attr.startswith("__"):  # what the import system asks of any module (``__path__``)
            raise AttributeError(attr)

        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attr)


@contextmanager
def _standing_in() -> Iterator[None]:
    placed: list[_StandIn] = []
    for name, given in (("urllib.request", {"urlretrieve": _urlretrieve}),
                        ("cached_property", {"cached_property": functools.cached_property})):
        if name not in sys.modules:  # already imported by someone: Whoosh takes the real one
            placed.append(_StandIn(name, given))
            sys.modules[name] = placed[-1]
    try:
        yield
    finally:
        for module in placed:
            if sys.modules.get(module.__name__) is module:
                del sys.modules[module.__name__]


with _standing_in():
    import whoosh.compat  # noqa: F401
    import whoosh.reading  # noqa: F401
