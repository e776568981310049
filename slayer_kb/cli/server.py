"""``slayer-kb server status|start|stop``: the KB's warm server (server.py, docs/server.md).
With ``watch`` (the server in the foreground) and ``mcp``."""

from __future__ import annotations

import time
from typing import Any

import click

from ..core.errors import StoreError
from ..core.text import counted
from ..daemon import relay
from .common import Settings, emit, json_option, json_refused, pass_settings

WAIT_SECONDS = 20.0


def _root(settings: Settings) -> str:
    # Not settings.kb(): opening the KB (its index, its git) is most of a status's time.
    return str(settings.root())


def _status_text(data: dict[str, Any]) -> str:
    if not data.get("running"):
        unheard = relay.no_channel(data["root"]) if relay.SUPPORTED else "commands run in their own process on this system"
        why = f" ({unheard})" if unheard else ""
        return f"No server for {data['root']}{why}; mode: {data['mode']}."
    idle = f"exits after {data['idle_exit']:g} s idle" if data.get("idle_exit") else "in the foreground (watch)"
    lines = [
        f"Server {data['pid']} for {data['root']}: up {data['uptime']:g} s, {data['served']} commands, {idle}.",
        f"mode: {data['mode']}; channel: {data['channel']}",
    ]
    if data.get("log"):
        lines.append(f"log: {data['log']}")
    if data.get("current"):
        lines.append(f"running: {data['current']}")
    lines.extend(f"reading beside it: {read}" for read in data.get("reading") or [])
    if writer := data.get("writer"):
        lines.append(f"write process: {writer['pid']}, {writer['niceness']} steps lower, "
                     f"{writer['writes']} writes, started {writer['starts']} times")
    vectors = data.get("sentence_vectors") or {}
    if vectors.get("memories") is not None:
        making = vectors["building"] and vectors["pass_total"]
        doing = f"; making them: {vectors['pass_done']} of {vectors['pass_total']}" if making else ""
        standing = vectors.get("stand_ins") or 0
        final = f" ({vectors['final']} final, {counted(standing, 'stand-in')})" if standing else ""
        lines.append(f"sentence vectors: {vectors['covered']} of {vectors['memories']} memories{final}{doing}")
    return "\n".join(lines)


@click.group()
@json_option  # ``server --json status`` as well as ``server status --json`` (and before ``server``)
def server() -> None:
    """The KB's warm server: started by the first command, it answers the next ones.

    \b
    SLAYER_KB_SERVER=off runs every command in its own process; manual relays to a running
    server but starts none; on (the default, except where CI is set) starts one on demand.
    SLAYER_KB_SERVER_IDLE=SECONDS sets its idle exit (default 300).
    SLAYER_KB_WRITE_NICENESS=STEPS runs a write's spare work (the write process with its git,
    the server's sentence model) that many steps lower, so reads go first (0-19, default 10;
    0: off). The server's setting, as it was when the server started, counts for these; a
    client's lowers only the client itself.
    SLAYER_KB_BUILD_WORKERS=N makes N sentence model runs at once while vectors are built
    (default 2, at most one for each core). See docs/server.md.

    \b
    Examples:
      slayer-kb server status
      slayer-kb server --json status
      slayer-kb server stop
    """


@server.command()
@json_option
@pass_settings
def status(settings: Settings) -> None:
    """Whether a server answers for this KB, since when, and how much it served.

    \b
    Example:
      slayer-kb server status --json
    """
    root = _root(settings)
    answer = relay.control(root, "status") if relay.SUPPORTED else None
    data: dict[str, Any] = {"root": root, "mode": relay.mode(root), "running": answer is not None}
    if answer is not None:
        data.update({k: v for k, v in answer.items() if k != "root"})
    emit(settings, data, lambda: _status_text(data))


@server.command()
@json_option
@pass_settings
def stop(settings: Settings) -> None:
    """Stop this KB's server (a command it is running is finished first).

    \b
    Example:
      slayer-kb --kb ./kb server stop
    """
    root = _root(settings)
    answer = relay.control(root, "stop") if relay.SUPPORTED else None
    if answer is not None:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and (conn := relay.connect(root, timeout=0.5)) is not None:
            conn.close()
            time.sleep(0.05)
    data = {"root": root, "stopped": answer.get("stopping") if answer else None}
    emit(settings, data, f"Stopped the server {data['stopped']}." if answer else "No server was running.")


@server.command()
@json_option
@pass_settings
def start(settings: Settings) -> None:
    """Start this KB's server in the background now (whatever SLAYER_KB_SERVER says).

    \b
    Example:
      slayer-kb server start
    """
    root = str(settings.kb().root)  # opened here, so that a folder that is no KB is refused now
    if not relay.SUPPORTED:
        raise StoreError("no server on this system: commands run in their own process")
    if (unheard := relay.no_channel(root)) is not None:
        raise StoreError(f"no server for {root}: {unheard}.")
    answer = relay.control(root, "status")
    if answer is None:
        relay.spawn(root)
        deadline = time.monotonic() + WAIT_SECONDS
        while answer is None and time.monotonic() < deadline:
            time.sleep(0.05)
            answer = relay.control(root, "status")
    data = {"root": root, "pid": answer.get("pid") if answer else None}
    if answer is None:
        raise StoreError(f"the server did not start; see {root}/.slayer-kb/server.log")
    emit(settings, data, f"Server {data['pid']} answers for {root}.")


@click.command()
@json_refused("it runs until stopped, saying so on stdout.")
@pass_settings
def watch(settings: Settings) -> None:
    """Keep the search index current while files change (Ctrl-C stops).

    This is the KB's server (docs/server.md) in the foreground: while it runs, other
    'slayer-kb' commands are answered by it, from its warm index, with the same output.

    \b
    Example:
      slayer-kb watch
    """
    from ..daemon.server import run

    root = settings.kb().root
    settings.kb().close()
    raise SystemExit(run(root, idle=None))


@click.command()
# stdout is the protocol's: no document of ours may go there
@json_refused("it speaks MCP's JSON-RPC on stdin and stdout until its client closes them.")
@pass_settings
def mcp(settings: Settings) -> None:
    """Serve the memory tools over MCP on stdio (needs the 'mcp' extra).

    \b
    Example:
      slayer-kb --kb ./kb mcp
    """
    from ..mcp.server import serve

    serve(settings.kb())
