"""The commits slayer-kb writes itself (a save, an update, a rename, a forget, a renumber), made by
``git commit-tree``: signed when the repository's config says ``commit.gpgSign`` (read with who
commits, identity.py), which ``commit-tree`` does not read itself, so that a remote that takes
signed commits only takes them. git signs with what the config says (``user.signingKey``,
``gpg.format``, ``gpg.ssh.program``); a signing that fails or waits for a passphrase fails the
commit, with the fix, before anything is published."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping

from ..core.errors import StoreError
from .bounded import checked, git_timeout
from .gitenv import UTF8_COMMITS
from .identity import parse_author

_ATTEMPTS = 5


def author_env(author: str | None) -> dict[str, str]:
    """The environment naming ``author`` (``Name <email>``) a commit's author; none: who commits."""
    if not author:
        return {}
    name, email = parse_author(author)
    return {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email}


def write(git: Callable[..., subprocess.CompletedProcess[bytes]], committing: tuple[dict[str, str], bool], tree: str,
          parent: str | None, message: str, author: Mapping[str, str]) -> str:
    """The commit of ``tree`` on ``parent`` with ``message``, made by ``git`` (``GitStore.git``)
    as ``committing`` says (``Identity.committing``: who commits, whether to sign), ``author``
    overriding who authored it."""
    env, sign = committing
    args = ["commit-tree", tree, "-F", "-", *(["-p", parent] if parent else [])]

    def run(signed: bool) -> subprocess.CompletedProcess[bytes]:
        for _ in range(_ATTEMPTS):
            # Signing runs ssh-keygen or gpg, which may wait for a passphrase: bounded. Their
            # stdin is git's, the message's pipe, never a terminal.
            proc = git(*UTF8_COMMITS, *args, *(["-S"] if signed else []), input=message.encode(),
                       env={**env, **author}, check=False, timeout=git_timeout() if signed else None)
            # git makes the object's fan-out folder and retries once; a concurrent repack's
            # prune-packed can remove it again (objects.py retries the same way).
            if b"unable to create temporary file: No such file or directory" not in proc.stderr:
                break
        return proc

    try:
        proc = run(sign)
    except subprocess.TimeoutExpired:
        raise StoreError(_unsigned(f"signing did not finish within {git_timeout()} s and was stopped (waiting "
                                   "for a passphrase no one can type?)")) from None
    # Which failed, the signing or the commit (an author git refuses): the commit made unsigned
    # tells, one more git call where one failed.
    if sign and proc.returncode != 0 and run(False).returncode == 0:
        said = "; ".join(line.strip() for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip())
        raise StoreError(_unsigned(said or f"git commit-tree exited {proc.returncode}"))
    return checked(args, proc).stdout.decode().strip()


def _unsigned(why: str) -> str:
    """Why a commit could not be signed, ``why`` as git says it, and the fixes."""
    # git may end its words with its own mark ("No such file or directory?"): no second one.
    ended = why if why.endswith((".", "?", "!")) else f"{why}."
    return (f"git could not sign the commit (commit.gpgSign is true): {ended} Nothing was committed. Make the "
            "signing key usable with no prompt (load it into ssh-agent or gpg-agent; check user.signingKey and "
            "gpg.format), or turn signing off for this repository: git config commit.gpgSign false")
