"""No way in: YAML only through safe loaders, git only with argument lists and `--` before paths,
the MCP server only on stdio, dependencies past their known vulnerabilities."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

import pytest

from slayer_kb import KnowledgeBase

PACKAGE = Path(__file__).resolve().parent.parent / "slayer_kb"
SOURCES = sorted(PACKAGE.glob("*.py"))
SAFE_LOADERS = {"_Loader", "_LOADER", "CSafeLoader", "SafeLoader"}


def calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Attribute):
        return f"{dotted(node.value)}.{node.attr}"
    return node.id if isinstance(node, ast.Name) else ""


@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_yaml_is_only_read_with_safe_loaders(source: Path) -> None:
    tree = ast.parse(source.read_text(encoding="utf-8"))
    text = source.read_text(encoding="utf-8")
    for banned in ("unsafe_load", "full_load", "FullLoader", "UnsafeLoader", "yaml.Loader", "CLoader"):
        assert banned not in text, f"{source.name} mentions {banned}"
    for call in calls(tree):
        name = dotted(call.func)
        if name in ("yaml.load", "yaml.load_all", "yaml.parse", "yaml.compose"):
            loader = {k.arg: k.value for k in call.keywords}.get("Loader")
            assert loader is not None and dotted(loader).split(".")[-1] in SAFE_LOADERS, (
                f"{source.name}:{call.lineno}: {name} without a safe Loader"
            )


@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_subprocesses_take_argument_lists_never_a_shell(source: Path) -> None:
    tree = ast.parse(source.read_text(encoding="utf-8"))
    for call in calls(tree):
        name = dotted(call.func)
        if name.startswith("subprocess.") or name == "os.system" or name.startswith("os.popen"):
            assert name.startswith("subprocess."), f"{source.name}:{call.lineno}: {name}"
            assert not any(k.arg == "shell" for k in call.keywords), f"{source.name}:{call.lineno}: shell="
            if call.args:
                assert not isinstance(call.args[0], (ast.Constant, ast.JoinedStr)), (
                    f"{source.name}:{call.lineno}: a command string instead of a list"
                )


def test_every_path_given_to_git_comes_after_a_double_dash(empty_kb: KnowledgeBase, tmp_path: Path) -> None:
    trace = tmp_path / "git-trace.txt"
    env = {**os.environ, "GIT_TRACE": str(trace), "SLAYER_KB": str(empty_kb.root)}
    script = """
from slayer_kb import KnowledgeBase
import os
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
        time.sleep(2.0)  # long enough to import the SDK and start serving
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
        proc.wait(timeout=5)


def test_dependencies_are_past_their_known_vulnerabilities() -> None:
    deps = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    assert '"gitpython>=3.1.41"' in deps  # CVE-2022-24439, CVE-2023-40267, -41040, CVE-2024-22190
    assert '"pyyaml>=6.0.1"' in deps  # CVE-2020-14343 (fixed in 5.4)
    assert '"whoosh-reloaded>=2.7.5,<2.8"' in deps  # 2.7.4 hangs on some multi-field queries; 2.8 may move internals

    def numbers(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split(".")[:3] if part.isdigit())

    assert numbers(version("gitpython")) >= (3, 1, 41)
    assert numbers(version("pyyaml")) >= (6, 0, 1)
