"""Bytecode written once, not compiled again in every process: a pytest plugin loaded before all
others (``-p testing.bytecode`` in pyproject's addopts), in the controller and in each worker.

Where PYTHONDONTWRITEBYTECODE is set (CI, many shells) nothing an import compiles is kept, and:

- pytest rewrites the asserts of every module of each distribution that declares a pytest
  plugin (hypothesis, anyio, xdist, pytest-timeout: hundreds of modules) as the plugins load,
  and keeps the result only where bytecode is written: every worker rewrote them all again.
- the tests start hundreds of Python processes (the CLI, servers, git's merge driver,
  background jobs), each importing the package: each compiled every module (0.15 s of CPU).
- pytest rewrites the test modules' asserts on import (3,400 asserts: seconds a worker).

Loaded by ``-p``, this module runs before the plugins that setuptools' entry points name, so
their rewritten modules are kept from the first run on. A changed source file is compiled again
on import, as always: every cache is checked against its file's mtime and size.
"""

from __future__ import annotations

import compileall
import contextlib
import os
import sys
from collections.abc import Generator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

sys.dont_write_bytecode = False
# The controller compiles the package and the helpers before any worker or test process starts;
# the workers (PYTEST_XDIST_WORKER set) then find it written. Importing this module imported
# ``testing`` first, so some of it was compiled in memory already: compileall writes it.
if "PYTEST_XDIST_WORKER" not in os.environ:
    for package in ("slayer_kb", "testing"):
        compileall.compile_dir(ROOT / package, quiet=1)


def _shared_out(collector: pytest.Collector) -> bool:
    """Whether every test module of ``collector``'s folder is collected (the folder is, or is
    under, a folder the run was given, and no rerun of the last failures skips the others): only
    then may a worker import its share of them early."""
    if "PYTEST_XDIST_WORKER" not in os.environ or not isinstance(collector, pytest.Directory):
        return False
    if collector.config.getoption("lf", False) or collector.config.getoption("stepwise", False):
        return False  # the cache provider's reruns import only the modules they pick
    where = collector.config.invocation_params.dir
    folders = [(where / arg).resolve() for arg in collector.config.args if "::" not in arg]
    return any(collector.path.is_relative_to(folder) for folder in folders if folder.is_dir())


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Each worker imports its share of a folder's test modules first, then collects them all in
    order, as it would have. pytest rewrites a test module's asserts on its first import, and
    keeps the result beside it (``__pycache__``): in a fresh clone, the three workers, collecting
    the same modules in the same order, all rewrote every one of them at once (5 s of CPU each,
    most of a worker's collection); taking a share each, they rewrite each module about once. A
    module that fails to import (an error, or pytest's skip, fail or xfail at its top, or an
    exit) is imported again by the collection, which reports it."""
    report = yield
    if _shared_out(collector):
        modules = [node for node in report.result if isinstance(node, pytest.Module)]
        share = int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw"))
        for module in modules[share::int(os.environ["PYTEST_XDIST_WORKER_COUNT"])]:
            with contextlib.suppress(Exception, pytest.skip.Exception, pytest.fail.Exception, SystemExit):
                module.obj  # noqa: B018 - pytest's own import of the module, kept on its node
    return report
