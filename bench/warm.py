"""What the benchmarks of a warm server share (readers.py, savecpu.py, clientcpu.py): a relayed
command timed, the cached corpus's server started afresh and waited for, and the corpus put back
afterwards."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from . import corpus as corpus_mod


def corpus_options(parser: argparse.ArgumentParser) -> None:
    """``--size`` and ``--seed``: which cached corpus (bench/corpus.py) to measure."""
    parser.add_argument("--size", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)


def slayer_kb(root: Path, *args: str) -> tuple[float, int]:
    """Seconds and exit code of one relayed command."""
    env = {**os.environ, "SLAYER_KB_SERVER": "on", "SLAYER_KB_SERVER_IDLE": "600"}
    began = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - began, proc.returncode


def wait_warm(root: Path, timeout: float = 600.0) -> None:
    """Until the server has warmed up (its searcher and vectors loaded)."""
    from slayer_kb.daemon import relay

    deadline = time.monotonic() + timeout
    slayer_kb(root, "list", "--limit", "1")
    while not ((status := relay.control(root, "status")) and status.get("warm")):
        if time.monotonic() > deadline:
            raise SystemExit(f"the server of {root} did not warm up within {timeout:g} s")
        time.sleep(0.2)


def fresh_server(root: Path) -> None:
    """Stop the corpus's server (it may run older code or settings), start one and wait for it."""
    from slayer_kb.daemon import relay

    relay.control(root, "stop")
    time.sleep(1.0)
    wait_warm(root)


def put_back(corpus: corpus_mod.Corpus) -> None:
    """Stop the corpus's server and undo the run's saves, for the next benchmark."""
    from slayer_kb.daemon import relay

    relay.control(corpus.root, "stop")
    corpus_mod.reset(corpus.root, corpus.base)
