"""``slayer-kb completion SHELL``: print the shell completion script (click's own protocol).

The script calls ``slayer-kb`` back with ``_SLAYER_KB_COMPLETE=<shell>_complete`` set; click
answers that itself before any command runs. Importing this module registers the command on ``cli``.
"""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class

from .common import Settings, emit, json_option, pass_settings

SHELLS = ("bash", "zsh", "fish")
INSTALL = {
    "bash": 'eval "$(slayer-kb completion bash)"  # in ~/.bashrc',
    "zsh": 'eval "$(slayer-kb completion zsh)"  # in ~/.zshrc',
    "fish": "slayer-kb completion fish > ~/.config/fish/completions/slayer-kb.fish",
}


def complete_var(prog_name: str) -> str:
    """The environment variable click reads, as ``click.Command.main`` derives it."""
    return f"_{prog_name}_COMPLETE".replace("-", "_").upper()


@click.command()
@click.argument("shell", type=click.Choice(SHELLS))
@json_option
@pass_settings
@click.pass_context
def completion(ctx: click.Context, settings: Settings, shell: str) -> None:
    """Print the completion script for SHELL (bash, zsh or fish); source it in your shell.

    \b
    Examples:
      eval "$(slayer-kb completion bash)"     # in ~/.bashrc
      eval "$(slayer-kb completion zsh)"      # in ~/.zshrc
      slayer-kb completion fish > ~/.config/fish/completions/slayer-kb.fish
    """
    prog_name = ctx.find_root().info_name or "slayer-kb"
    comp_cls = get_completion_class(shell)
    assert comp_cls is not None  # every name in SHELLS is one of click's built-in shells
    script = comp_cls(ctx.find_root().command, {}, prog_name, complete_var(prog_name)).source()
    emit(settings, {"shell": shell, "script": script, "install": INSTALL[shell]}, script.rstrip("\n"))
