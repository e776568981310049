"""Who a commit names: an author given as ``Name <email>`` (``--author``), and the neutral identity
a machine with no git identity commits under, so that a fresh machine can still commit."""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..core.errors import StoreError

_AUTHOR = re.compile(r"\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>]*)>\s*\Z")
FALLBACK = ("slayer-kb", "slayer-kb@localhost")


def parse_author(author: str) -> tuple[str, str]:
    match = _AUTHOR.match(author)
    if not match or not match.group("name") or not author.isprintable():  # git log would print a control raw
        raise StoreError(f"Author {author!r} is not of the form 'Name <email>' in printable text (no control or "
                         "invisible characters).")
    return match.group("name"), match.group("email")


def fallback_identity(config: bytes, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment a commit needs beyond ``environ`` so that git never refuses it for want of
    an identity: the neutral one for each of user.name and user.email that neither git's config
    (``config``: ``git config -z --get-regexp`` of both, the last value of each winning, as ``git
    config KEY`` answers) nor ``environ`` (``GIT_AUTHOR_NAME``...) sets."""
    values: dict[bytes, bytes] = {}
    for item in config.split(b"\0"):
        key, _, value = item.partition(b"\n")
        values[key] = value
    env: dict[str, str] = {}
    for name, var, fallback in ((b"user.name", "NAME", FALLBACK[0]), (b"user.email", "EMAIL", FALLBACK[1])):
        configured = values.get(name, b"").strip()
        for role in ("AUTHOR", "COMMITTER"):
            if not configured and f"GIT_{role}_{var}" not in environ:
                env[f"GIT_{role}_{var}"] = fallback
    return env
