"""testing/bytecode.py: loaded before the plugins installed packages declare, so pytest keeps
their rewritten modules, and bytecode is written in every test process even where
PYTHONDONTWRITEBYTECODE is set (docs/testing.md)."""

from __future__ import annotations

import sys

import pytest


def test_the_bytecode_plugin_loads_before_every_installed_plugin(pytestconfig: pytest.Config) -> None:
    manager = pytestconfig.pluginmanager
    order = [name for name, _plugin in manager.list_name_plugin()]
    installed = sorted(str(manager.get_name(plugin)) for plugin, _dist in manager.list_plugin_distinfo())
    # hypothesis's plugin rewrites the most modules; xdist's and pytest-timeout's run the suite
    assert {"hypothesispytest", "xdist", "timeout"} <= set(installed), installed
    first = order.index("testing.bytecode")
    assert [name for name in installed if order.index(name) < first] == []
    assert sys.dont_write_bytecode is False
