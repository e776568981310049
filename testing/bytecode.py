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
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

sys.dont_write_bytecode = False
# The controller compiles the package and the helpers before any worker or test process starts;
# the workers (PYTEST_XDIST_WORKER set) then find it written. Importing this module imported
# ``testing`` first, so some of it was compiled in memory already: compileall writes it.
if "PYTEST_XDIST_WORKER" not in os.environ:
    for package in ("slayer_kb", "testing"):
        compileall.compile_dir(ROOT / package, quiet=1)
