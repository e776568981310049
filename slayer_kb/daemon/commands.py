"""Which command a ``slayer-kb`` argv names, read without click (importing it costs as much as
relaying): where it runs (relay.py) and whether it writes, which decides its client's priority
from its first step (entry.py, core/priority.py). Nothing imported: the client reads this before
anything else."""

from __future__ import annotations

# The CLI group's own options, which may come before the command (tests/test_relay.py holds them
# to click's: the relay reads argv itself because importing click costs as much as relaying).
GLOBAL_WITH_VALUE = ("--kb", "--author")
GLOBAL_FLAGS = ("--json",)
# Run here, never relayed: they talk to the terminal, run for long, or make the KB.
LOCAL = frozenset({"init", "watch", "mcp", "server", "edit", "completion"})
# Run here when a person may have to answer at the terminal (git asking for credentials); an
# agent's sync is relayed, which spares it the cold start (imports, index, model: ~1 s of CPU).
LOCAL_AT_A_TERMINAL = frozenset({"sync"})
# Only read: after a server vanished mid-command they are run again without a word.
READS = frozenset({"search", "get", "list", "timeline", "context", "stats", "suggest-topic-key",
                   "log", "show", "review", "schema", "validate", "sessions"})
# Writes other clones wait for: a sync holds the remote's turn (ops/turn.py) from its fetch to
# its push, and every clone's sync queues behind it meanwhile. They never yield the CPU to reads
# as a write's spare work does (core/priority.py).
SHARED = frozenset({"sync"})
# Also run again here after a server vanished mid-command: a sync converges on whatever the
# server left (it pushes what was committed, pulls what is new), so running it twice is safe.
AGAIN = READS | LOCAL_AT_A_TERMINAL


# Where a command reads standard input for an argument "-" (cli/common.py's read_text_arg and
# read_query): (its positional text, else a positional id it cannot run without; the options
# whose "-" is stdin; every option of its that takes a value). The relay offers stdin for a "-"
# there alone (sent once the command got past its argument checks, server.py): a process reads
# none for `list --project -` or `save --title -`, and a client that did ate the input of what
# came after it (a `while read` loop) or waited for a pipe that never ends. tests/test_relay.py
# holds it to the CLI.
_SAVE = ("-e", "--entity", "--query", "--id", "--description", "--title", "--content", "--type", "--project",
         "--scope", "--topic-key", "--session")
STDIN: dict[str, tuple[bool, tuple[str, ...], tuple[str, ...]]] = {
    "save": (True, ("--content", "--query"), _SAVE),
    "search": (True, ("--query",), ("-e", "--entity", "--query", "--datasource", "--type", "--project", "--scope",
                                    "--limit", "--max-results")),
    "update": (False, ("--learning", "--content"), ("--title", "--learning", "--content", "--type", "--description",
                                                     "--project", "--scope", "--topic-key", "-e", "--entity")),
    "session-summary": (True, (), ("--project", "--session")),
    "session-end": (False, ("--summary",), ("--summary",)),
    "save-prompt": (True, (), ("--session", "--project")),
    "capture-passive": (True, (), ("--session", "--project", "--source")),
}


def reads_stdin(argv: list[str]) -> bool:
    """Whether the command ``argv`` names reads standard input (``STDIN``): a "-" as its
    positional text, or as the value of an option that reads it. Read without click, as click
    reads argv (an option's value, ``--name=value``, ``--`` before the positional ones). Each of
    these commands takes one positional argument at most: a second is a usage error, given
    before stdin is read (``search fiscal -``), and so is a missing id (``update --learning -``)."""
    found = parse(argv)
    where = STDIN.get(found[1]) if found is not None else None
    if found is None or where is None:
        return False
    positional, options, valued = where
    rest, at, plain, reads = found[2], 0, False, False
    positionals: list[str] = []
    while at < len(rest):
        arg = rest[at]
        name, equals, value = arg.partition("=")
        if plain or arg == "-" or not arg.startswith("-"):
            positionals.append(arg)
        elif arg == "--":
            plain = True
        elif name in valued:
            if not equals:
                at += 1
                value = rest[at] if at < len(rest) else ""
            reads = reads or (value == "-" and name in options)
        at += 1
    if len(positionals) > 1 or not (positional or positionals):
        return False
    return reads or (positional and positionals == ["-"])


def parse(argv: list[str]) -> tuple[str | None, str, list[str]] | None:
    """(the --kb value or None, the command, its arguments) when ``argv`` names a command after
    nothing but the global options; None otherwise (help, version, an unknown option)."""
    kb_path = None
    at = 0
    while at < len(argv):
        arg = argv[at]
        name, equals, value = arg.partition("=")
        if arg in GLOBAL_WITH_VALUE and at + 1 < len(argv):
            kb_path = argv[at + 1] if arg == "--kb" else kb_path
            at += 2
        elif equals and name in GLOBAL_WITH_VALUE:
            kb_path = value if name == "--kb" else kb_path
            at += 1
        elif arg in GLOBAL_FLAGS:
            at += 1
        elif arg.startswith("-"):
            return None
        else:
            return kb_path, arg, argv[at + 1:]
    return None


def yields(argv: list[str]) -> bool:
    """Whether ``argv`` names a command whose work yields the CPU to the searches beside it
    (core/priority.py): a command a server would relay that is not only a read (its client only
    waits for the server and prints) and that no other clone waits for (``SHARED``)."""
    found = parse(argv)
    return found is not None and found[1] not in READS and found[1] not in LOCAL and found[1] not in SHARED
