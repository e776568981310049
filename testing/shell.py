"""What a shell makes of the commands slayer-kb prints, pasted as they are: each run by ``sh``, in
one process, with ``slayer-kb`` and ``git`` on its ``PATH`` being scripts that only write down
the words they were given. A word a shell would split (``x;y``) or expand (``1[0-9]``, a file of
that name being there) shows up as the wrong words, or as a call more."""

from __future__ import annotations

import re
import shlex
import subprocess
import tempfile
from pathlib import Path

# Where a printed command begins, as messages quote it ('slayer-kb ...'), and a quote that may
# close it: one followed by the end of the text, a space or punctuation.
_OPENING = re.compile(r"'(?=(?:slayer-kb|git) )")
_CLOSING = re.compile(r"'(?=[\s,.;:)]|$)")
_RECORD = '#!/bin/sh\n{{ printf "%s\\037" {name} "$@"; printf "\\036"; }} >> "$WORDS"\n'


def printed_commands(message: str) -> list[str]:
    """The commands ``message`` quotes ('slayer-kb ...', 'git ...'), in order: each up to the
    first closing quote after which its quotes are balanced ('slayer-kb edit 'x;y'' holds a
    quoted word)."""
    found: list[str] = []
    at = 0
    while (opening := _OPENING.search(message, at)) is not None:
        at = opening.end()
        for closing in _CLOSING.finditer(message, at):
            try:
                shlex.split(message[opening.end():closing.start()])
            except ValueError:  # a quote left open: this one is a quoted word's
                continue
            found.append(message[opening.end():closing.start()])
            at = closing.end()
            break
    return found


def as_pasted(commands: list[str], cwd: Path, shell: str = "sh") -> list[list[list[str]]]:
    """For each of ``commands``, typed in ``cwd`` (to ``shell``): the calls of ``slayer-kb`` and
    ``git`` it made, each the program's name and its words."""
    with tempfile.TemporaryDirectory() as folder:
        here = Path(folder)
        for name in ("slayer-kb", "git"):
            script = here / name
            script.write_text(_RECORD.format(name=name))
            script.chmod(0o755)
        words = here / "words"
        script = "".join(f'{command}\nprintf "\\035" >> "$WORDS"\n' for command in commands)
        subprocess.run([shell, "-c", script], cwd=cwd, env={"PATH": f"{here}:/usr/bin:/bin", "WORDS": str(words)},
                       capture_output=True, check=False)
        said = words.read_text() if words.exists() else ""
    return [[call.split("\037")[:-1] for call in typed.split("\036")[:-1]] for typed in said.split("\035")[:-1]]
