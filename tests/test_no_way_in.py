"""No way in: YAML only through safe loaders and no shell (ruff's security rules), `--` before paths given to git,
the MCP server only on stdio, dependencies past their known vulnerabilities."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase
from testing import WAIT_SECONDS

ROOT = Path(__file__).resolve().parent.parent
UNSAFE = {
    "S506": "import yaml\nyaml.load(open('f').read(), Loader=yaml.Loader)\n",
    "S602": "import subprocess\nsubprocess.run('git status', shell=True)\n",
    "S605": "import os\nos.system('git status')\n",
    "S307": "eval(input())\n",
    "S301": "import pickle\npickle.loads(b'')\n",
}


@pytest.mark.parametrize("rule", sorted(UNSAFE))
def test_the_linter_refuses_unsafe_loading_and_shells(rule: str, tmp_path: Path) -> None:
    """ruff's security rules (pyproject.toml, run by CI on the package) catch YAML loaded with a
    loader that builds objects, a shell, eval and pickle: the check runs with the project's own
    configuration (CI runs ``ruff check slayer_kb``)."""
    module = tmp_path / "probe.py"
    module.write_text(UNSAFE[rule], encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"),
                           "--output-format", "concise", str(module)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 1 and f" {rule} " in proc.stdout, proc.stdout + proc.stderr


def test_every_path_given_to_git_comes_after_a_double_dash(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    trace = tmp_path / "git-trace.txt"
    env = {**os.environ, "GIT_TRACE": str(trace), "SLAYER_KB": str(empty_kb.root)}
    script = """
from slayer_kb import KnowledgeBase
from testing import WAIT_SECONDS
import json
import os
import select
kb = KnowledgeBase(os.environ["SLAYER_KB"])
kb.save_observation(title="A", content="alpha", topic_key="a/b")
kb.save_observation(title="A", content="beta", topic_key="a/b")
kb.save_observation(title="B", content="gamma")
kb.forget("1", soft=True)
kb.restore("1")
kb.forget("2")
kb.search("alpha")
"""
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    commands = [line.split("built-in: git ", 1)[1] for line in trace.read_text().splitlines() if "built-in: git " in line]
    assert any(c.startswith("commit-tree") for c in commands)
    for command in commands:
        words = command.split(" ")
        for position, word in enumerate(words):
            if "memories/" in word or word.endswith(".yaml") or word.startswith(str(tmp_path).strip("'")):
                assert "'--'" in words[:position] or "--" in words[:position], command


def test_mcp_server_opens_no_socket(example_kb: KnowledgeBase) -> None:
    pytest.importorskip("mcp")
    proc = subprocess.Popen(
        [sys.executable, "-m", "slayer_kb", "--kb", str(example_kb.root), "mcp"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        # Serving once it answers the handshake: the SDK is imported and every socket it opens is open.
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}},
        }).encode() + b"\n")
        proc.stdin.flush()
        assert select.select([proc.stdout], [], [], WAIT_SECONDS)[0], "no answer to the MCP handshake"
        assert json.loads(proc.stdout.readline())["id"] == 1
        assert proc.poll() is None
        fds = Path(f"/proc/{proc.pid}/fd")
        sockets = {os.readlink(fd)[len("socket:["):-1] for fd in fds.iterdir() if os.readlink(fd).startswith("socket:")}
        # asyncio's wake-up socketpair is a Unix socket; no socket may be a network one.
        network = set()
        for table in ("tcp", "tcp6", "udp", "udp6"):
            path = Path(f"/proc/{proc.pid}/net/{table}")
            if path.exists():
                network |= {line.split()[9] for line in path.read_text().splitlines()[1:]}
        assert not sockets & network
    finally:
        proc.kill()
        proc.wait(timeout=60)


def test_dependencies_are_past_their_known_vulnerabilities() -> None:
    deps = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'gitpython' not in deps.lower()  # nothing imports it (test_architecture): no dependency to keep patched
    assert '"pyyaml>=6.0.1"' in deps  # CVE-2020-14343 (fixed in 5.4)
    assert '"whoosh-reloaded>=2.7.5,<2.8"' in deps  # 2.7.4 hangs on some multi-field queries; 2.8 may move internals

    def numbers(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())

    assert numbers(version("pyyaml")) >= (6, 0, 1)
