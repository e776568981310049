"""testing/quickexit.py: an xdist worker leaves once the exit handlers have run, without Python's
finalization (docs/testing.md); any other process finishes as Python does."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import testing.quickexit

# The plugin loaded by path (importing ``testing`` would load the whole package), then an exit
# handler registered after it, as the helpers' are, and an object that only finalization frees.
SCRIPT = f"""
import atexit, importlib.util, sys
spec = importlib.util.spec_from_file_location("quickexit", {testing.quickexit.__file__!r})
spec.loader.exec_module(importlib.util.module_from_spec(spec))
atexit.register(lambda: print("later handler ran", flush=True))

class Freed:
    def __del__(self):
        print("finalized", flush=True)

kept = Freed()
sys.stdout.write("unflushed output\\n")
"""


@pytest.mark.parametrize("worker, printed", [
    ("gw0", "unflushed output\nlater handler ran\n"),
    (None, "unflushed output\nlater handler ran\nfinalized\n"),
])
def test_a_worker_leaves_after_the_exit_handlers_without_finalization(worker: str | None, printed: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != testing.quickexit.WORKER}
    if worker is not None:
        env[testing.quickexit.WORKER] = worker
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, printed, "")


def test_the_plugin_is_loaded_in_every_run(pytestconfig: pytest.Config) -> None:
    # By pyproject's addopts, so in each worker too (the workers take the controller's options).
    assert pytestconfig.pluginmanager.get_plugin("testing.quickexit") is testing.quickexit
