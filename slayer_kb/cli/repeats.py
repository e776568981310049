"""Options given twice: click keeps the last value of an option that takes one, so ``save --id k1
--id k2`` saved ``k2`` unsaid and ``rebase --continue --abort`` aborted. A command line that gives
one option two different values, or two flags setting one value two ways, is a usage error naming
them."""

from __future__ import annotations

from typing import Any

import click

from ..core.text import shown_value
from .plain import option_left_without_value


def refuse_repeated(command: click.Command, args: list[str], parent: click.Context | None = None,
                    info_name: str | None = None) -> None:
    """Raise ``click.UsageError`` when ``args`` give an option of ``command`` that takes one value
    two different values (as its type reads them: ``--limit 5 --limit 05`` is one), or two of the
    flags that set one value, two ways (``--continue --abort``; ``-f --force`` is one). Read by
    click's own parser, so an option's value that looks like an option, and ``--``, count as
    click counts them; for a group (the root), up to its command's name. Nothing is checked while
    click completes a word (``resilient_parsing``) or when help is asked for. ``info_name``: what
    the command was called by, for the usage line of the root (a group with no ``parent``).

    First, an option given no value, which took the next option as its value
    (``option_left_without_value``): ``--title --help`` would take "--help" as the title too."""
    if parent is not None and parent.resilient_parsing:
        return
    help_names = parent.help_option_names if parent is not None else command.context_settings.get(
        "help_option_names", ["--help"])
    missing = option_left_without_value(command, args, help_names)
    if missing is not None:
        _refuse(command, args, parent, info_name, missing)
    if "--help" in args or "-h" in args:
        return
    counted: list[click.Parameter] = [click.Argument(["rest"], nargs=-1)]
    spellings: dict[str, list[tuple[str, str, Any]]] = {}  # a value's name: (flag, counter, value it sets)
    for param in command.params:
        if not isinstance(param, click.Option) or param.count:
            continue
        if param.is_flag:
            for n, flag in enumerate(param.opts + param.secondary_opts):
                name = f"flag{len(counted)}_{n}"
                counted.append(click.Option([name, flag], count=True))
                value = param.flag_value if flag in param.opts else not param.flag_value
                spellings.setdefault(str(param.name), []).append((flag, name, value))
        else:
            counted.append(click.Option([str(param.name), *param.opts, *param.secondary_opts], multiple=True))
    reader = click.Command(None, params=counted, add_help_option=False,
                           context_settings={"ignore_unknown_options": True})
    reader.allow_interspersed_args = not isinstance(command, click.Group)  # a group's options end at its command
    parsed = reader.make_context(command.name, list(args), resilient_parsing=True).params
    for param in command.params:
        if isinstance(param, click.Option) and not param.multiple and not param.is_flag and not param.count:
            given = parsed.get(str(param.name)) or ()
            if len({_read(param, value) for value in given}) > 1:
                shown = ", ".join(shown_value(value) for value in dict.fromkeys(given))
                _refuse(command, args, parent, info_name,
                        f"Option '{' / '.join(param.opts)}' was given {len(given)} values ({shown}); it takes one: "
                        "give it once.")
    for flags in spellings.values():
        given = [(flag, value) for flag, name, value in flags if parsed.get(name)]
        if len({repr(value) for _flag, value in given}) > 1:
            _refuse(command, args, parent, info_name,
                    f"{' and '.join(repr(flag) for flag, _value in given)} cannot be given together: give one.")


def _read(param: click.Option, value: str) -> object:
    """``value`` as the option's type reads it (a choice in any letter case, a number's digits),
    or as written where the type refuses it (the command's own parse says why)."""
    try:
        return repr(param.type.convert(value, param, None))
    except click.BadParameter:
        return value


def _refuse(command: click.Command, args: list[str], parent: click.Context | None, info_name: str | None,
            message: str) -> None:
    """The usage error, with the command's usage line as click gives it for its own."""
    if isinstance(command, click.Group):
        # Not parsed: its args run on into its command's. The root's line is the one click gives
        # for its other usage errors (``slayer-kb --bogus``).
        ctx = click.Context(command, parent=parent, info_name=info_name or command.name, **command.context_settings)
    else:
        ctx = command.make_context(command.name, list(args), parent=parent, resilient_parsing=True)
    raise click.UsageError(message, ctx=ctx)
