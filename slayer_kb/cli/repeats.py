"""Options given twice: click keeps the last value of an option that takes one, so ``save --id k1
--id k2`` saved ``k2`` unsaid and ``rebase --continue --abort`` aborted. A command line that gives
one option two different values, or two flags setting one value, is a usage error naming them."""

from __future__ import annotations

import click

from ..core.text import shown_value


def refuse_repeated(command: click.Command, args: list[str]) -> None:
    """Raise ``click.UsageError`` when ``args`` (the command's own) give an option that takes one
    value two different values, or two of the flags that set one value. Read by click's own
    parser, so an option's value that looks like an option, and ``--``, count as click counts them."""
    counted: list[click.Parameter] = [click.Argument(["rest"], nargs=-1)]
    flags: dict[str, list[tuple[str, str]]] = {}  # a value's name: (its flag, the counter's name)
    for param in command.params:
        if not isinstance(param, click.Option) or param.count:
            continue
        if param.is_flag:
            for n, flag in enumerate(param.opts + param.secondary_opts):
                name = f"flag{len(counted)}_{n}"
                counted.append(click.Option([name, flag], count=True))
                flags.setdefault(str(param.name), []).append((flag, name))
        else:
            counted.append(click.Option([str(param.name), *param.opts, *param.secondary_opts], multiple=True))
    parsed = click.Command(None, params=counted, add_help_option=False,
                           context_settings={"ignore_unknown_options": True}).make_context(
        command.name, list(args), resilient_parsing=True).params
    for param in command.params:
        if isinstance(param, click.Option) and not param.multiple and not param.is_flag and not param.count:
            values = list(dict.fromkeys(parsed.get(str(param.name)) or ()))
            if len(values) > 1:
                shown = ", ".join(shown_value(value) for value in values)
                raise click.UsageError(f"Option '{' / '.join(param.opts)}' was given {len(values)} values ({shown}); "
                                       "it takes one: give it once.")
    for pairs in flags.values():
        given = list(dict.fromkeys(flag for flag, name in pairs if parsed.get(name)))
        if len(given) > 1:
            raise click.UsageError(f"{' and '.join(repr(flag) for flag in given)} cannot be given together: give one.")
