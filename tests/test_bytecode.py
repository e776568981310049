"""testing/bytecode.py: loaded before the plugins installed packages declare, so pytest keeps
their rewritten modules, and bytecode is written in every test process even where
PYTHONDONTWRITEBYTECODE is set (docs/testing.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import testing.bytecode


def test_the_bytecode_plugin_loads_before_every_installed_plugin(pytestconfig: pytest.Config) -> None:
    manager = pytestconfig.pluginmanager
    order = [name for name, _plugin in manager.list_name_plugin()]
    installed = sorted(str(manager.get_name(plugin)) for plugin, _dist in manager.list_plugin_distinfo())
    # hypothesis's plugin rewrites the most modules; xdist's and pytest-timeout's run the suite
    assert {"hypothesispytest", "xdist", "timeout"} <= set(installed), installed
    first = order.index("testing.bytecode")
    assert [name for name in installed if order.index(name) < first] == []
    assert sys.dont_write_bytecode is False


def _shares(request: pytest.FixtureRequest, folder: Path, args: list[str], worker: str | None,
            last_failed: bool = False) -> list[pytest.Module]:
    """The test modules of ``folder``, after ``testing.bytecode``'s collection hook ran over the
    folder's report in ``worker`` (of 2) of a run given ``args`` (and ``--lf``)."""
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(request.config, "args", args)
        mp.setattr(request.config.option, "lf", last_failed, raising=False)
        mp.setattr(sys, "path", list(sys.path))  # the import puts the folder first
        mp.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
        if worker is None:
            mp.delenv("PYTEST_XDIST_WORKER", raising=False)
        else:
            mp.setenv("PYTEST_XDIST_WORKER", worker)
        directory = pytest.Dir.from_parent(request.session, path=folder)
        report = pytest.CollectReport(directory.nodeid, "passed", None, list(directory.collect()))
        hook = testing.bytecode.pytest_make_collect_report(directory)
        next(hook)
        with pytest.raises(StopIteration) as stopped:
            hook.send(report)
        assert stopped.value.value is report
        return [node for node in report.result if isinstance(node, pytest.Module)]
    finally:
        mp.undo()


def test_each_worker_imports_its_share_of_a_folders_test_modules_first(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    # Each module notes its import; the second fails at its top as pytest.fail does, the last
    # with an error.
    log = tmp_path / "imported"
    folder = tmp_path / "suite"
    folder.mkdir()
    (tmp_path / "elsewhere").mkdir()
    for n in range(4):
        body = f"open({str(log)!r}, 'a').write(__name__ + '\\n')\n" + {
            1: "import pytest\npytest.fail('needs a GPU', pytrace=False)\n", 3: "raise RuntimeError('broken')\n"}.get(n, "")
        (folder / f"test_share_{n}.py").write_text(body + "def test_x():\n    assert True\n")
    try:
        assert len(_shares(request, folder, [str(tmp_path / "elsewhere")], "gw1")) == 4
        assert not log.exists()  # a run not given the whole folder: collected as before
        _shares(request, folder, [str(folder)], None)
        assert not log.exists()  # not in a worker
        _shares(request, folder, [str(tmp_path)], "gw1", last_failed=True)
        assert not log.exists()  # --lf imports only the modules it picks
        modules = _shares(request, folder, [str(tmp_path)], "gw1")
        assert log.read_text() == "test_share_1\ntest_share_3\n"
        # A module that failed is imported again by the collection, and fails there as it would have.
        with pytest.raises(pytest.fail.Exception, match="needs a GPU"):
            modules[1].obj  # noqa: B018
        with pytest.raises(RuntimeError, match="broken"):
            modules[3].obj  # noqa: B018
        assert log.read_text() == "test_share_1\ntest_share_3\ntest_share_1\ntest_share_3\n"
    finally:
        for n in range(4):
            sys.modules.pop(f"test_share_{n}", None)
