"""The values an option takes as given: a bare ``-`` (standard input only for the text and
``--query``) is refused as a title, a description, a topic key, a project or a session id; and no
option takes one of its command's own option names as its value (``update 2 --title --json``, a
``$TITLE`` left empty, committed the title "--json" and printed no JSON)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

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


class Read(NamedTuple):
    """One argument as click reads it at a command's level (``walk``)."""

    at: int  # its index in the arguments
    arg: str  # as typed
    option: click.Option | None  # the option it names, if that option takes a value
    value: str | None  # that option's value: the next argument; None if that is missing or an option name
    command: click.Command | None  # for a group, the command it names (an unknown name: one with no options)


def walk(command: click.Command, args: Sequence[str], help_names: Sequence[str] = ()) -> Iterator[Read]:
    """``args`` read as click reads them at ``command``'s level, the one rule for everything that
    reads a command line before click does: an option that takes a value takes the next argument,
    unless that is one of ``command``'s own option names (or ``help_names``) or ``--``, which is
    then read itself; the joined form (``--title=--json``) is one argument, a value. The walk stops at ``--``
    (not read) and, for a group (the root), after its command's name (``Read.command``): what
    follows is that command's."""
    options = [p for p in command.params if isinstance(p, click.Option)]
    names = {name for p in options for name in (*p.opts, *p.secondary_opts)} | set(help_names)
    valued = {name: p for p in options if not p.is_flag and not p.count for name in p.opts}
    at = 0
    while at < len(args):
        arg = args[at]
        if arg == "--":
            return
        if isinstance(command, click.Group) and not arg.startswith("-"):
            yield Read(at, arg, None, None, command.get_command(click.Context(command), arg) or click.Command(arg))
            return
        param = valued.get(arg)
        if param is None:
            yield Read(at, arg, None, None, None)
            at += 1
        elif at + 1 < len(args) and (args[at + 1] in names or args[at + 1] == "--"):
            yield Read(at, arg, param, None, None)
            at += 1
        else:
            yield Read(at, arg, param, args[at + 1] if at + 1 < len(args) else None, None)
            at += 2


def option_left_without_value(command: click.Command, args: Sequence[str], help_names: Sequence[str]) -> str | None:
    """The usage error for the first option in ``args`` whose value, the next argument, is one of
    ``command``'s own option names (or ``help_names``), or None. click takes the next argument as
    the value whatever it is; the joined form (``--title=--json``) stays a value, as it is the way
    to give one that starts with '-'. Read as click reads (``walk``): for a group (the root), up
    to its command's name."""
    for read in walk(command, args, help_names):
        if read.option is not None and read.value is None and read.at + 1 < len(args):
            return _without_value(read.arg, read.option, args[read.at + 1])
    return None


def _without_value(typed: str, param: click.Option, taken: str) -> str:
    # The joined form reads clearly only as --name=VALUE: the long name, as typed if it was.
    long = typed if typed.startswith("--") else max(param.opts, key=len)
    plain = _PLAIN_VALUES.get(long.removeprefix("--"))
    if plain is not None:
        what, itself, example = plain
    else:
        what, itself, example = "a value", "its value", param.metavar or long.removeprefix("--").upper()
    kind = "ends the options" if taken == "--" else "is an option itself"  # "$T" left empty before "--"
    return (f"Option '{typed}' was given no value: the next argument, '{taken}', {kind}. Give "
            f"{itself} after it ({long} {example}); for {what} that really is '{taken}', join them: {long}={taken}.")
