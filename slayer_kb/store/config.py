"""One git setting read with nothing heavy imported: the ``slayer-kb`` client asks for
``slayer-kb.server`` before it knows whether a warm server answers (daemon/relay.py)."""

from __future__ import annotations


def setting(root: str, key: str) -> str:
    """The value of ``key`` in git's config as seen from ``root`` (the repository's, then the
    user's), or "" when it is not set or git cannot say."""
    import subprocess  # here: most commands never need it, and the client starts lean

    try:
        found = subprocess.run(["git", "config", "--get", key], cwd=root,
                               capture_output=True, text=True, check=False, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return found.stdout
