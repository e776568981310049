"""The environment git runs in for a KB: the user's, without the variables that point git at a
repository. A KB's repository is the one holding its folder (``--kb``, ``$SLAYER_KB``, the
enclosing KB); a GIT_DIR, GIT_WORK_TREE or GIT_INDEX_FILE left in the environment (a git hook
sets GIT_INDEX_FILE, `git commit -a` to the other repository's ``index.lock``) would send the
KB's commit, index or objects to another repository. Nor is a program looked up in a relative
folder of PATH (``children.program_path``): git runs in the KB's folder. And how a file's path
is given to git as itself (``LITERAL_PATHS``), and the settings of git's output slayer-kb fixes
(``OUTPUT_SETTINGS``). Imports only ``os`` and ``core.children`` (``os`` and ``sys``): the lean
client reads git's config through it (config.py)."""

from __future__ import annotations

import os

from ..core.children import program_path

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy reads the name)
if TYPE_CHECKING:
    from collections.abc import Mapping

# `git rev-parse --local-env-vars` (what git itself clears on entering a submodule), less the
# config variables: settings given that way (`git -c`, GIT_CONFIG_COUNT) are the user's, wherever.
REPOSITORY_VARIABLES = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_IMPLICIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_GRAFT_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE",
    "GIT_PREFIX", "GIT_INTERNAL_SUPER_PREFIX", "GIT_SHALLOW_FILE", "GIT_NAMESPACE", "GIT_QUARANTINE_PATH",
)


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` without ``REPOSITORY_VARIABLES`` and PATH's relative folders, then ``extra``
    (slayer-kb's own settings)."""
    env = {name: value for name, value in os.environ.items() if name not in REPOSITORY_VARIABLES}
    if "PATH" in env:
        env["PATH"] = program_path(env["PATH"])
    if extra:
        env.update(extra)
    return env


# For a git command given file paths (the env of that one command): each path is taken as it
# is, not as a glob. An id may hold '[' and ']', and `git rm -- memories/1[0-9].yaml` would
# remove memories 10 to 19 with it. Not for commands that run the user's hooks, which would
# inherit it.
LITERAL_PATHS = {"GIT_LITERAL_PATHSPECS": "1"}


# The settings that change only how git prints what slayer-kb reads (log, show, diff, status,
# grep), which a user's ~/.gitconfig, the clone's .git/config or a `git -c` that started slayer-kb
# may turn on (signature checks, decorations, paths relative to a folder, colours, another
# encoding): every git slayer-kb runs takes git's defaults, given as `git -c`, which comes after
# the user's and holds. None changes what a command does: hooks, signing, merge drivers,
# identity, rerere and rename detection in merges keep following the user's config
# (merge.renames falls back to diff.renames, so each command that lists changes asks for renames,
# or none, itself). The hooks and merge drivers git starts inherit them.
OUTPUT_SETTINGS = tuple(arg for setting in (
    "log.showSignature=false", "log.decorate=false", "log.abbrevCommit=false", "log.follow=false",
    "log.date=default", "log.showRoot=true", "log.diffMerges=separate", "format.pretty=medium",
    "diff.noprefix=false", "diff.mnemonicPrefix=false", "diff.relative=false", "i18n.logOutputEncoding=UTF-8",
    "status.branch=false", "status.showStash=false", "grep.fullName=false", "grep.lineNumber=false",
    "grep.column=false", "color.ui=false", "color.diff=false", "color.status=false", "color.branch=false",
    "color.grep=false", "color.advice=false", "color.remote=false", "color.push=false", "color.transport=false",
) for arg in ("-c", setting))


# For the commits slayer-kb writes (``commit-tree``): their messages are UTF-8 whatever a user's
# i18n.commitEncoding says, which git would write into the commit, and a log then converts the
# UTF-8 bytes again ("CafÃ©"). Not among the settings above: a rebase or merge that git makes
# from a user's own commits keeps following it.
UTF8_COMMITS = ("-c", "i18n.commitEncoding=UTF-8")
