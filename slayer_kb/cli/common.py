"""What every command module shares: the settings a command runs with, the ``--json`` and
``--force`` options, and how results and errors are printed."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, overload

import click
import yaml

from ..core import nesting
from ..core.errors import (
    InvalidInputError,
    KBError,
    NotFoundError,
    ResolutionError,
    StoreError,
    UsageError,
    output_lost,
)
from ..core.inputs import content_limit, given_text, read_given_file
from ..core.locate import find_kb_root, named_kb, not_a_kb
from ..core.memory import MAX_CONTENT_CEILING, MAX_FILE_BYTES
from ..core.text import MAX_SHOWN, json_document, one_line_shown, shown_value, terminal_text, warning_lines, writable
from ..daemon.relay import MAX_STDIN_CHARS, STDIN_CLOSED
from ..daemon.settings import mode as server_mode
from .plain import walk

if TYPE_CHECKING:
    from ..kb import KnowledgeBase

HELP_NAMES = ["-h", "--help"]
CONTEXT_SETTINGS = {"help_option_names": HELP_NAMES, "max_content_width": 100}


@dataclass
class Preset:
    """What the server running a relayed command (server.py) hands it: its warm KB, the width
    of the terminal the command was typed in, whether it is a read run beside a write
    (daemon/running.py), which leaves the KB's settings to the write, whether the server
    checked the command's settings already (``Runner.goes_beside``), so that it needs not again,
    and, for a run of its argument checks alone (``PastArguments``), the client's environment:
    that run is not in the command's turn, where the client's environment is the process's."""

    kb: KnowledgeBase
    width: int
    beside: bool = False
    checked: bool = False
    dry: Mapping[str, str] | None = None


class PastArguments(BaseException):  # noqa: N818 - a signal, not an error: nothing may catch it as one
    """A command run for its argument checks alone (``Preset.dry``) got past them: it was about
    to open its KB or read standard input. The server runs a command that may read stdin so
    before it asks its client for the input (daemon/running.py): a usage error comes first and
    leaves stdin unread, as in a process of its own."""


class Settings:
    def __init__(self, kb_path: str | None, json_out: bool, author: str | None, preset: Preset | None = None) -> None:
        self.kb_path = kb_path
        self.json = json_out
        self.author = author
        self.preset = preset
        self._kb: KnowledgeBase | None = preset.kb if preset is not None else None
        self._ready = False  # kb() has checked the settings and set the KB up for this command
        self._told: list[str] | None = None  # under --json: what the KB told, for the JSON's warnings

    def width(self) -> int:
        """Columns for human output: the terminal's, 60 to 120."""
        if self.preset is not None:
            columns = self.preset.width
        else:
            import shutil  # on use: 2 ms of a start (its archive formats), and JSON needs no width

            columns = shutil.get_terminal_size((100, 24)).columns
        return max(60, min(columns, 120))

    def root(self) -> Path:
        """The KB's folder, found without opening the KB (no index, no git, no heavy import): what
        the commands about its server need, which answer from the server itself."""
        if self._kb is not None:
            return self._kb.root
        try:
            path = named_kb(self.kb_path)
        except ValueError as exc:
            raise InvalidInputError(str(exc)) from None
        # realpath, not resolve(): a symlink loop is then refused as no folder, not a traceback.
        root = Path(os.path.realpath(path)) if path is not None else find_kb_root(Path.cwd())
        if root is None:
            raise NotFoundError(
                "No knowledge base here: pass --kb DIR, set SLAYER_KB, or run inside a KB "
                "(a folder with memories/). Create one with 'slayer-kb init DIR'."
            )
        if not root.is_dir():
            raise NotFoundError(not_a_kb(str(root)))
        return root

    def opened(self) -> Path:
        """The KB's folder, once what opening it refuses is told (a folder that is no KB, a bad
        setting): for the checks a command makes before it reads stdin, which a run of its
        argument checks alone (``Preset.dry``) reaches with the server's KB left unopened."""
        if self.preset is not None and self.preset.dry is not None:
            checked_settings(self.preset.dry)
            return self.preset.kb.root
        return self.kb().root

    def max_content(self) -> int:
        """The size limit of a text in the command's environment."""
        return max_content(self.preset.dry if self.preset is not None else None)

    def kb(self) -> KnowledgeBase:
        if self._ready and self._kb is not None:  # a command's second call (validate's paths, then its KB)
            return self._kb
        if self.preset is not None and self.preset.dry is not None:
            checked_settings(self.preset.dry)  # a bad setting is refused before stdin is read, as here
            raise PastArguments
        # Imported here, not above: help, usage errors and the commands that open no KB
        # (schema, completion) start without the KB's modules (Whoosh, numpy: most of a start).
        from ..kb import KnowledgeBase

        if self.preset is None or not self.preset.checked:
            checked_settings()
        if self.preset is not None and not self.preset.beside:
            # A server's warm KB (server.py) takes this command's author and size limit.
            self.preset.kb.author = self.author or os.environ.get("SLAYER_KB_AUTHOR") or None
            self.preset.kb.max_content = max_content()
        context = click.get_current_context(silent=True)
        if self._kb is None:
            root = self.root()
            server_mode(str(root), strict=True)  # a bad git config slayer-kb.server runs it here: refused
            self._kb = KnowledgeBase(root, author=self.author, max_content=max_content())
            # Closed with the command, not left to the process's exit: the CLI also runs inside
            # a longer-lived process (the tests' in-process runner, testing/cli.py).
            if context is not None:
                context.find_root().call_on_close(self._kb.close)
        if self.json and self._told is None and context is not None:
            # Until the command ends (failed too), when those no JSON carried go to stderr.
            self._told = context.find_root().with_resource(self._kb.collecting_warnings(then_tell=True))
        self._ready = True
        return self._kb

    def room_for_told(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` (a read's: get's memory, list's) with an empty ``warnings`` for ``with_told`` to fill, when the KB told any."""
        return {**data, "warnings": []} if self._told and "warnings" not in data else data

    def with_told(self, data: Any) -> Any:
        """``data`` with the warnings the KB told meanwhile (``KnowledgeBase.tell``: a commit on a
        detached HEAD, an index left behind) after its own, when it has a ``warnings`` list of texts
        (validate's are records): an agent reads ``--json`` from stdout alone. Not told again."""
        own = data.get("warnings") if isinstance(data, dict) else None
        if not self._told or not isinstance(own, list) or not all(isinstance(w, str) for w in own):
            return data
        carried = {**data, "warnings": [*data["warnings"], *self._told]}
        self._told.clear()
        return carried


def max_content(env: Mapping[str, str] | None = None) -> int:
    """The size limit of a text (``SLAYER_KB_MAX_CONTENT``, bytes), else the default."""
    return content_limit(env)


def checked_settings(env: Mapping[str, str] | None = None) -> None:
    """Refuse a bad setting (of ``env``, else this process's) before anything runs, rather than
    half-way through by whatever reads it: the cache's folder and bound (``cachedir``), the server's
    settings (``daemon.settings``), the size limit and git's time limits (``store.bounded``: read
    only where git runs)."""
    from ..daemon import settings as server_settings
    from ..search import cachedir
    from ..store import bounded

    cachedir.folder(env)
    cachedir.max_bytes(env)
    server_settings.check(env)
    max_content(env)
    bounded.git_timeout(env)
    bounded.sync_timeout(env)


def settings_taken(env: Mapping[str, str] | None = None) -> bool:
    """Whether a command takes the settings of ``env`` (else this process's): ``checked_settings``
    refuses none of them."""
    try:
        checked_settings(env)
    except InvalidInputError:
        return False
    return True


def _json_flag(hidden: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--json`` after the command as well as before it, as CLI.md writes it."""

    def callback(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        if value:
            ctx.find_object(Settings).json = True  # type: ignore[union-attr]
        return value

    return click.option(
        "--json",
        "json_flag",
        is_flag=True,
        expose_value=False,
        callback=callback,
        hidden=hidden,
        help="Print one JSON document on stdout.",
    )


json_option = _json_flag(hidden=False)


def json_refused(reason: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """For a command that prints no JSON document (watch, mcp): ``--json``, before or after it, is
    a usage error saying why. The option is still taken, so that ``mcp --json`` is told so rather
    than "No such option", but hidden: help offers nothing the command refuses."""

    def refusing(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def run(*args: Any, **kwargs: Any) -> Any:
            ctx = click.get_current_context()
            if ctx.find_object(Settings).json:  # type: ignore[union-attr]
                raise click.UsageError(f"{ctx.info_name} prints no JSON document: {reason} Drop --json.", ctx=ctx)
            return function(*args, **kwargs)

        return _json_flag(hidden=True)(run)

    return refusing


force_option = click.option(
    "--force",
    is_flag=True,
    help="Rewrite files holding uncommitted work from HEAD, your versions kept as <file>.orig (put back on failure).",
)


def kept_line(kept: list[str], dry_run: bool = False) -> str:
    """The human output's line about the versions ``--force`` set aside, or would (``dry_run``);
    empty when none."""
    return f"\n{'would keep' if dry_run else 'kept'} your uncommitted versions as: {', '.join(kept)}" if kept else ""


def for_terminal(text: str) -> str:
    """``text`` with every control character a terminal would act on shown as ``\\xNN`` (a bidi
    control as ``\\uNNNN``): memories are written by agents and read by people, and an escape
    sequence in one must not retitle, clear or recolour the reader's terminal, or write its
    clipboard (OSC 52); a lone carriage return must not overwrite the line it is on. ``--json``
    keeps the exact text."""
    return terminal_text(text)


def fail(settings: Settings | None, error: KBError) -> NoReturn:
    message = str(error)
    click.echo(f"Error: {for_terminal(message)}", err=True)
    if settings is not None and settings.json:
        with contextlib.suppress(OSError):  # stdout may be what failed (output_lost)
            click.echo(json.dumps({"error": {"type": error.type_name, "message": message}}))
    sys.exit(1)


def _asks_json(command: click.Command, args: list[str]) -> bool:
    """Whether the command line asks for ``--json``, before or after the command name: what a
    usage error goes by, as it may come before click has read ``--json`` (or read anything).

    The arguments are walked as click reads them (``plain.walk``), so that a ``--json`` that is an option's value
    (``save --title=--json``) or follows ``--`` is text, not the flag: a usage error then prints
    as the user asked, without JSON. ``save --title --json`` (refused: no title) asks for it."""
    for read in walk(command, args, HELP_NAMES):
        if read.arg == "--json":
            return True
        if read.command is not None:
            # An unknown command's options are unknown: any --json before a '--' counts.
            return _asks_json(read.command, args[read.at + 1:])
    return False


# click 8.2's error for a group given no command (click 8.1 prints the help and exits 0).
_NO_COMMAND: Any = getattr(click.exceptions, "NoArgsIsHelpError", ())


def _print_usage_json(error: click.UsageError) -> None:
    """A usage error as every other error prints under ``--json``, for an agent that reads only
    stdout; click then prints its usage text on stderr and exits 2, as without ``--json``."""
    # A group given no command: click's message is the group's whole help, which stderr shows.
    message = "Missing command." if isinstance(error, _NO_COMMAND) else error.format_message()
    # click lists a missing argument's choices one a line, tab-indented: one line here.
    message = message.replace("\n\t", " ")
    if not message.endswith((".", "?")):
        message += "."
    if error.ctx is not None:
        option = max(error.ctx.help_option_names, key=len)  # as click names it on stderr
        message += f" Try '{error.ctx.command_path} {option}' for help."
    click.echo(json.dumps({"error": {"type": "usage", "message": message}}))


def _with_dash_hint(error: click.UsageError) -> click.UsageError:
    """"No such option '-1'." with how to give an argument that starts with '-' (an id, a
    learning, a question): after '--', where click reads no options. A misspelt long option
    (``--limt``) keeps click's own suggestion only."""
    if not isinstance(error, click.NoSuchOption) or error.ctx is None:
        return error
    argument = next((p for p in error.ctx.command.params if isinstance(p, click.Argument)), None)
    if argument is None or error.option_name.startswith("--") or error.possibilities:
        return error
    name = argument.human_readable_name.strip("[].")  # "[ID]", "[PATH]...": the name alone
    return click.NoSuchOption(error.option_name, ctx=error.ctx, message=(
        f"{error.message} If '{error.option_name}' begins the {name} rather than naming an option, put "
        f"the {name} after '--': {error.ctx.command_path} [OPTIONS] -- {name}."))


def _with_global_hint(error: click.UsageError) -> click.UsageError:
    """"No such option '--kb'." after a command, with where the root's options go: before the
    command (``slayer-kb --kb DIR get ...``), which is how every example writes them."""
    if not isinstance(error, click.NoSuchOption) or error.ctx is None or error.ctx.parent is None:
        return error
    root = error.ctx.find_root()
    option = next((p for p in root.command.params if isinstance(p, click.Option) and error.option_name in p.opts), None)
    if option is None:
        return error
    value = "" if option.is_flag else f" {option.metavar or 'VALUE'}"
    below = error.ctx.command_path.split(" ", 1)[1]
    # --version (eager) answers and exits: no command follows it.
    where = f"{root.info_name} {error.option_name}{value}" + ("" if option.is_eager else f" {below} ...")
    return click.NoSuchOption(error.option_name, ctx=error.ctx, message=(
        f"{error.message} {error.option_name} is a global option: give it before the command: {where}"))


# click's words for arguments past the last one a command takes, which it quotes whole.
_EXTRA = re.compile(r"(Got unexpected extra arguments?) \((.*)\)\Z", re.S)
# The arguments that are a text, which a person may type unquoted, as words.
_TEXTS = ("LEARNING", "QUESTION", "CONTENT")


def _with_extra_hint(error: click.UsageError) -> click.UsageError:
    """Click's "Got unexpected extra arguments (...)" quoted every one of them: 20,000 words
    typed unquoted made a message of 100 KB. At most ``MAX_SHOWN`` characters are quoted; a text
    argument (``search how are refunds counted``) is told to be quoted."""
    match = _EXTRA.match(error.message)
    if match is None or error.ctx is None:
        return error
    said, extra = match[1], match[2]
    shown = extra if len(extra) <= MAX_SHOWN else f"{extra[:MAX_SHOWN]}... ({len(extra)} characters)"
    argument = next((p for p in error.ctx.command.params if isinstance(p, click.Argument)), None)
    name = argument.human_readable_name.strip("[].") if argument is not None else ""
    hint = ""
    if argument is not None and name in _TEXTS:
        typed = f"{error.ctx.params.get(argument.name or '') or ''} {extra}".strip()
        hint = f" The {name} is one argument: quote it" + (
            f" ({error.ctx.command_path} \"{typed}\")." if len(typed) <= MAX_SHOWN and '"' not in typed else ".")
    return click.UsageError(f"{said} ({shown}).{hint}", ctx=error.ctx)


def _with_cut_values(error: click.UsageError, given: tuple[str, ...]) -> click.UsageError:
    """click quotes a value it refuses whole: a path that does not exist, a choice or a number it
    cannot take (a 10 KB import path came back whole, on stderr and under --json). Each argument
    ``given`` over ``MAX_SHOWN`` characters (an option's ``--name=VALUE`` too) is quoted as our
    own messages quote a long value (``shown_value``). A path is found as click shows it too
    (``format_filename``: a byte that is not UTF-8 as U+FFFD)."""
    values = {value for arg in given for value in (arg, arg.partition("=")[2] if arg.startswith("--") else "")
              if len(value) > MAX_SHOWN}
    said = message = error.format_message()
    for value in sorted(values, key=len, reverse=True):  # an option's value is inside its --name=VALUE
        for typed in dict.fromkeys((value, click.format_filename(value))):
            for quoted in (repr(typed), f"'{typed}'", f'"{typed}"', typed):
                message = message.replace(quoted, shown_value(value))
    return error if message == said else click.UsageError(message, ctx=error.ctx)


class KBContext(click.Context):
    """The root context, which knows whether the command line asks for ``--json`` (_asks_json)
    from before its options are read: the eager ``--version`` runs before ``--json`` is, and
    the arguments it was given (``given``), which a usage error quotes cut (_with_cut_values)."""

    def __init__(self, *args: Any, json_asked: bool = False, given: tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.json_asked = json_asked
        self.given = given


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    number = version("slayer-kb")
    asked = isinstance(ctx, KBContext) and ctx.json_asked
    click.echo(json.dumps({"version": number}, indent=2) if asked else f"slayer-kb, version {number}")
    ctx.exit()


version_option = click.option(
    "--version", is_flag=True, is_eager=True, expose_value=False, callback=_print_version,
    help="Show the version and exit.",
)


class KBGroup(click.Group):
    context_class = KBContext

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: Any) -> click.Context:
        asked, given = _asks_json(self, args), tuple(args)  # (click's parser consumes ``args``)
        try:
            if parent is None and not extra.get("resilient_parsing"):
                from .repeats import refuse_repeated  # the root's own options: --kb, --author given twice

                refuse_repeated(self, list(args), info_name=info_name)
            return super().make_context(info_name, args, parent=parent, json_asked=asked, given=given, **extra)
        except click.UsageError as exc:  # among the options before the command name
            error = _with_cut_values(exc, given)
            if asked:
                _print_usage_json(error)
            raise error from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # the command's name, options or arguments
            error = _with_extra_hint(_with_dash_hint(_with_global_hint(exc)))
            error = _with_cut_values(error, ctx.given if isinstance(ctx, KBContext) else ())
            settings = ctx.find_object(Settings)
            if (isinstance(ctx, KBContext) and ctx.json_asked) or (settings is not None and settings.json):
                _print_usage_json(error)
            raise error from None
        except KBError as exc:
            fail(ctx.find_object(Settings), exc)
        except OSError as exc:
            fail(ctx.find_object(Settings), StoreError.from_os(exc))
        except UnicodeEncodeError as exc:
            encoding = sys.getfilesystemencoding()
            if encoding.replace("-", "").lower() == "utf8":
                raise
            # PYTHONUTF8=0 in the C locale: Python takes file names to be ASCII, and a path git
            # gives in UTF-8 cannot be named to the system (a traceback).
            fail(ctx.find_object(Settings), StoreError(
                f"Cannot name a path holding {exc.object[exc.start:exc.end]!r}: Python reads file names as {encoding} "
                "here, the locale's, with its UTF-8 mode off. Set LC_ALL=C.UTF-8 (or another UTF-8 locale) and unset "
                "PYTHONUTF8, then retry."))


def emit(settings: Settings, data: Any, human: Callable[[], str] | str) -> None:
    try:
        _emit(settings, data, human)
    except OSError as exc:
        if exc.errno == errno.EPIPE:  # a reader that stopped (| head): as click ends it
            raise
        raise StoreError(output_lost(exc)) from None


def _emit(settings: Settings, data: Any, human: Callable[[], str] | str) -> None:
    encoding = getattr(sys.stdout, "encoding", None)
    if settings.json:
        click.echo(json_document(settings.with_told(data), encoding))
    else:
        text = human() if callable(human) else human
        if text:
            click.echo(writable(for_terminal(text), encoding))


@overload
def read_text_arg(value: str) -> str: ...
@overload
def read_text_arg(value: None) -> None: ...
def read_text_arg(value: str | None) -> str | None:
    """The text of an argument that may be ``-``: standard input."""
    if value == "-":
        return read_stdin()
    return value


def stdin_once(text_name: str, text: str | None, query: str | None) -> None:
    """Refuses ``-`` for both a text argument and ``--query``: the first read all of standard
    input, and the query was then told it was no JSON."""
    if text == "-" and query == "-":
        raise UsageError(f"{text_name} and --query are both '-', and standard input can feed only one of them: "
                         "give the query inline or as @FILE.")


def read_stdin() -> str:
    """Standard input, refused past MAX_STDIN_CHARS characters unread: ``yes | slayer-kb save -``
    read for ever, and 300 MB piped took 900 MB of memory before the size was refused."""
    if getattr(sys.stdin, STDIN_CLOSED, False):
        raise InvalidInputError("Standard input is closed (the command was started with '<&-'), so '-' reads nothing: "
                                "pipe the text or query in, or give it on the command line.")
    text = sys.stdin.read(MAX_STDIN_CHARS + 1).removeprefix("\ufeff")  # a BOM (Windows, PowerShell): no text
    if len(text) > MAX_STDIN_CHARS:
        raise InvalidInputError(
            f"Standard input holds more than {MAX_STDIN_CHARS} characters, the most slayer-kb reads from it; "
            f"give a smaller text (a learning is at most {MAX_CONTENT_CEILING} bytes, a query file "
            f"{MAX_FILE_BYTES} bytes)."
        )
    # UTF-16 (PowerShell's pipe) has a NUL after each ASCII letter: read as UTF-8, one symbol that found nothing.
    if "\0" in text:
        raise InvalidInputError(f"Standard input holds a NUL byte (character {text.index(chr(0)) + 1}), which no UTF-8 "
                                "text holds: is it UTF-16? Give it as UTF-8 (iconv -f UTF-16 -t UTF-8, or PowerShell's "
                                "$OutputEncoding = [Text.UTF8Encoding]::new()).")
    return text


def read_query(value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    source = value
    if value.startswith("@"):
        data = read_given_file(value[1:], "the query file", MAX_FILE_BYTES,
                               "give a regular file, or --query - to read the query from standard input")
        try:
            source = given_text(data)
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"The query file {value[1:]} is not UTF-8 text ({exc.reason} at byte "
                                    f"{exc.start}); save it as UTF-8.") from None
    elif value == "-":
        source = read_stdin()
    query = nesting.loads(
        source,
        "--query",
        'pass a SlayerQuery object such as \'{"source_model": "orders", "measures": ["sum(amount)"]}\' '
        "or @FILE.",
        nesting.QUERY_FIX,
    )
    if not isinstance(query, dict):
        raise InvalidInputError("--query must be a JSON object (a SlayerQuery with source_model).")
    return query


_pass_settings = click.make_pass_decorator(Settings)


def pass_settings(function: Callable[..., Any]) -> Callable[..., Any]:
    """Hand the command its ``Settings``; options the library finds cannot go together (a
    ``UsageError``) exit 2 with the command's usage, as click's own usage errors do (CLI.md)."""

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except UsageError as exc:
            raise click.UsageError(str(exc), ctx=click.get_current_context()) from None

    return _pass_settings(run)


# Options several commands share, each with its help in one place.
PROJECT_HELP = "Project name (trimmed, lower-cased)."
ONLY_TYPE_HELP = "Only memories of this observation type (decision, bugfix, ...; trimmed, blank: any)."
ONLY_PROJECT_HELP = "Only memories of this project (trimmed, lower-cased; blank: any)."
# Any case, as MCP's scope (Engram's) takes it: 'PERSONAL' is personal on both.
SCOPE_CHOICE = click.Choice(["project", "personal"], case_sensitive=False)
ONLY_SCOPE_HELP = "Only memories of this scope: project or personal."
SCOPE_HELP = "project (default) or personal."

ENTITY_HELP = (
    "An entity reference (repeatable, or comma-separated): orders.amount, shop.orders, sum(amount), memory:12."
)


def memory_text(data: dict[str, Any]) -> str:
    lines = [f"id: {data['id']}"]
    for key, value in data.items():
        if key in ("id", "learning", "warnings") or value in (None, []):
            continue
        if isinstance(value, list):
            lines.append(f"{key}:")
            lines.extend(f"  - {one_line_shown(str(item))}" for item in value)
        elif isinstance(value, dict):
            lines.append(f"{key}:")
            lines.extend("  " + row for row in yaml.safe_dump(value, sort_keys=False, allow_unicode=True).splitlines())
        else:  # one line each: a title's line break forges no field (or heading) of its own
            lines.append(f"{key}: {one_line_shown(str(value))}")
    lines.append("")
    lines.append(data["learning"].rstrip("\n"))
    return "\n".join(lines) + warning_lines(data.get("warnings", []))


def check_entity_options(entities: tuple[str, ...], fix: str = "") -> None:
    """Refuse an empty ``-e`` (an empty shell variable) by the option typed: the API behind it
    would name its own field (``linked_entities[0]`` for a save, ``entities[0]`` for an update)."""
    for number, ref in enumerate(entities, 1):
        if not ref.replace(",", "").strip():
            raise ResolutionError(
                f"-e/--entity #{number} is empty: give a reference such as -e orders.amount, or drop it{fix}."
            )
