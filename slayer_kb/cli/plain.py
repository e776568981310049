"""The values an option takes as given: a bare ``-`` (standard input only for the text and
``--query``) is refused as a title, a description, a topic key, a project or a session id; and no
option takes one of its command's own option names as its value (``update 2 --title --json``, a
``$TITLE`` left empty, committed the title "--json" and printed no JSON)."""

from __future__ import annotations

from collections.abc import Sequence

import click

from ..core.errors import UsageError

# The options that store their value as it is given, each with what it names and an example: a
# "-" there is no standard input (the text's and --query's), and was stored as "-".
_PLAIN_VALUES = {
    "title": ("a title", "the title", '"Auth decision"'),
    "description": ("a description", "the description", '"JWT over sessions"'),
    "topic-key": ("a topic key", "the topic key", "architecture/auth-model"),
    "project": ("a project", "the project", "api"),
    "session": ("a session id", "the session id", "ses-42"),
}


def no_stdin_for(**values: str | None) -> None:
    """Refuses ``-`` as the value of a plain option (``_PLAIN_VALUES``; ``topic_key`` for
    --topic-key), naming the first given."""
    for key, value in values.items():
        if value == "-":
            option = key.replace("_", "-")
            what, itself, example = _PLAIN_VALUES[option]
            raise UsageError(f"--{option} is '-', which reads standard input for the text and --query but not for "
                             f"{what}: give {itself} itself (--{option} {example}).")


def option_left_without_value(command: click.Command, args: Sequence[str], help_names: Sequence[str]) -> str | None:
    """The usage error for the first option in ``args`` whose value, the next argument, is one of
    ``command``'s own option names (or ``help_names``), or None. click takes the next argument as
    the value whatever it is; the joined form (``--title=--json``) stays a value, as it is the way
    to give one that starts with '-'. Walked as click reads: up to ``--``, and for a group (the
    root) up to its command's name."""
    options = [p for p in command.params if isinstance(p, click.Option)]
    names = {name for p in options for name in (*p.opts, *p.secondary_opts)} | set(help_names)
    valued = {name: p for p in options if not p.is_flag and not p.count for name in p.opts}
    at = 0
    while at < len(args):
        arg = args[at]
        if arg == "--" or (isinstance(command, click.Group) and not arg.startswith("-")):
            return None
        param = valued.get(arg)
        if param is None:
            at += 1
            continue
        if at + 1 < len(args) and args[at + 1] in names:
            return _without_value(arg, param, args[at + 1])
        at += 2
    return None


def _without_value(typed: str, param: click.Option, taken: str) -> str:
    # The joined form reads clearly only as --name=VALUE: the long name, as typed if it was.
    long = typed if typed.startswith("--") else max(param.opts, key=len)
    plain = _PLAIN_VALUES.get(long.removeprefix("--"))
    if plain is not None:
        what, itself, example = plain
    else:
        what, itself, example = "a value", "its value", param.metavar or long.removeprefix("--").upper()
    return (f"Option '{typed}' was given no value: the next argument, '{taken}', is an option itself. Give "
            f"{itself} after it ({long} {example}); for {what} that really is '{taken}', join them: {long}={taken}.")
