"""The server's settings: whether commands go to a server (``mode``), how long one started on
demand waits (``idle_seconds``), and their check as a command begins
(``cli.common.checked_settings``). The relaying client, the server and its background work read
them where nothing could say so (a bad niceness or idle time taken as the default, a build pass
failed in the server's log). Each is read here by its reader's own parse, strictly, so that the
check refuses what the reader would not take and nothing the reader takes. Imported by the
client (relay.py): nothing heavy."""

from __future__ import annotations

import os

from ..core import priority
from ..store.config import setting

TYPE_CHECKING = False  # typing is not imported: the client needs none of it

if TYPE_CHECKING:
    from collections.abc import Mapping

IDLE_VARIABLE = "SLAYER_KB_SERVER_IDLE"
DEFAULT_IDLE = 300.0
MODE_VARIABLE = "SLAYER_KB_SERVER"
MODE_SETTING = "slayer-kb.server"

_OFF = ("off", "0", "no", "false", "never")
_ON = ("on", "1", "yes", "true", "auto")
_ENCODER_SETTINGS = ("SLAYER_KB_BUILD_WORKERS", "SLAYER_KB_ENCODER_THREADS")


def mode(root: str | None = None, strict: bool = False, env: Mapping[str, str] | None = None) -> str:
    """``on`` (start a server on demand and relay), ``manual`` (relay to a running server, start
    none) or ``off`` (run every command in its process). ``SLAYER_KB_SERVER`` decides; unset,
    the KB's setting (``git config slayer-kb.server``, the repository's or the user's) does;
    with neither, ``on``, except under CI (``CI`` set), where it is ``off``. A value that is none
    of these is ``off`` (the command runs in its process, whose check refuses it), or with
    ``strict`` an error naming the setting, its value and the values it takes."""
    env = os.environ if env is None else env
    value = _named(env.get(MODE_VARIABLE, ""), MODE_VARIABLE, strict)
    if value is None and root is not None:
        value = _named(setting(root, MODE_SETTING), f"git config {MODE_SETTING}", strict)
    if value is not None:
        return value
    ci = env.get("CI", "").strip().lower()
    return "off" if ci not in ("", "0", "false", "no") else "on"


def _named(given: str, where: str, strict: bool) -> str | None:
    value = given.strip().lower()
    if not value:
        return None
    if value in _OFF:
        return "off"
    if value == "manual":
        return "manual"
    if value in _ON:
        return "on"
    if strict:
        from ..core.errors import InvalidInputError  # only here: the client imports little

        raise InvalidInputError(f"{where} is {given.strip()!r}, not a server setting; set it to on, manual or off "
                                f"(also {', '.join(_ON[1:] + _OFF[1:])}) or unset it.")
    return "off"


def idle_seconds(strict: bool = False, env: Mapping[str, str] | None = None) -> float:
    """How long a server started on demand waits for a command before it exits
    (``SLAYER_KB_SERVER_IDLE``: seconds above 0, a fraction too; default 300). Anything else is
    the default, where nothing could say so (the relaying client), or with ``strict`` (the check
    as a command begins) an error naming the fix. ``env``: the environment to read, else this
    process's."""
    value = (os.environ if env is None else env).get(IDLE_VARIABLE, "").strip()
    if not value:
        return DEFAULT_IDLE
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if 0 < seconds < float("inf"):  # neither a NaN nor an infinity: no time to wait
        return seconds
    if strict:
        from ..core.errors import InvalidInputError  # only here: the client imports little

        raise InvalidInputError(f"{IDLE_VARIABLE} is {value!r}, not a number of seconds; set it to a number above 0 "
                                f"(the default is {DEFAULT_IDLE:g}) or unset it.")
    return DEFAULT_IDLE


def check(env: Mapping[str, str] | None = None) -> None:
    """Refuse a bad ``SLAYER_KB_SERVER``, ``SLAYER_KB_WRITE_NICENESS``, ``SLAYER_KB_SERVER_IDLE``,
    ``SLAYER_KB_BUILD_WORKERS`` or ``SLAYER_KB_ENCODER_THREADS`` (of ``env``, else this
    process's), naming the variable and the fix. The KB's ``git config slayer-kb.server`` is
    checked as the KB opens (``mode`` with its root)."""
    env = os.environ if env is None else env
    mode(strict=True, env=env)
    priority.niceness(strict=True, env=env)
    idle_seconds(strict=True, env=env)
    if any(env.get(variable, "").strip() for variable in _ENCODER_SETTINGS):
        # Only then: the encoder's module imports the search stack, which a read of files never needs.
        from ..search import encoder

        encoder.wanted_workers(env)
        encoder.threads(env)
