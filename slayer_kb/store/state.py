"""The derived-state folder ``.slayer-kb/``: trusted only when this user made it here.

Whoosh's table of contents and its stored fields are pickles, and the folder also holds a crash
journal that recovery acts on: a folder that came from somewhere else (a force-added folder in a
clone, a symlink to another folder, a folder of another user) could run code or delete files
when slayer-kb opens it. So before anything in it is read:

- the folder must be a real folder (not a link) owned by this user;
- it must carry a stamp, an HMAC of its real path, device and inode under a key that only this
  user can read (``$XDG_STATE_HOME/slayer-kb/key``, mode 0600). git can copy the stamp's bytes
  but not the folder's inode, and an attacker does not know the key, so a folder checked out from
  a repository never matches;
- and git must track nothing in it: checked when HEAD has moved since the last check (a pull or
  checkout could bring tracked files into a folder that was ours), by one ``git ls-files``.

A folder that fails is moved aside (``.slayer-kb.untrusted-<time>``, renaming the link itself,
never following it) with a warning, and a new one is made. Nothing in it is read or deleted.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import secrets
import shutil
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path

STATE_DIR = ".slayer-kb"
STAMP = "owner"
CHECKED_HEAD = "checked-head"
# What git should never pick up from the folder, even where the repository's .gitignore does not
# say so (a SLayer storage folder put under git): its own .gitignore ignores everything in it.
GITIGNORE = "# slayer-kb's derived state: rebuilt from the files, never committed\n*\n"


def _key_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "slayer-kb" / "key"


def _key() -> bytes | None:
    """This user's secret, made on first use; None where it cannot be kept (no writable home)."""
    path = _key_path()
    try:
        return _read_private(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(32))
    except FileExistsError:
        pass  # another process made it first
    except OSError:
        return None
    try:
        return _read_private(path)
    except OSError:
        return None


def _read_private(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            raise PermissionError(f"{path} must be a file of yours that only you can read")
        return handle.read()


def _stamp(key: bytes, folder: Path, st: os.stat_result) -> str:
    what = f"{folder.resolve()}\0{st.st_dev}\0{st.st_ino}\0{os.geteuid()}".encode("utf-8", "surrogateescape")
    return hmac.new(key, what, hashlib.sha256).hexdigest()


def _read_small(path: Path) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        return handle.read(256).decode("ascii", "replace").strip()


def _write_small(path: Path, text: str) -> None:
    # A name of its own: processes opening the KB at once write the same files.
    tmp = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def _untrusted_reason(folder: Path, st: os.stat_result, key: bytes | None) -> str | None:
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if st.st_uid != os.geteuid():
        return "it belongs to another user"
    if key is not None and _read_small(folder / STAMP) != _stamp(key, folder, st):
        return "slayer-kb did not make it here for this user (a copy from git or elsewhere)"
    return None


def _set_aside(folder: Path, seen: os.stat_result, reason: str, warn: Callable[[str], None]) -> None:
    """Move ``folder`` (as ``seen`` by the check) aside, unless another process opening the KB at
    the same time already did, or already made a new one in its place."""
    aside = folder.with_name(f"{STATE_DIR}.untrusted-{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}")
    try:
        now = os.lstat(folder)
        if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
            return
        os.rename(folder, aside)  # renames a link itself, never what it points to
    except FileNotFoundError:
        return
    warn(
        f"{folder} was set aside as {aside.name} and will be rebuilt: {reason}. Nothing in it was "
        f"read; delete it once you have looked."
    )


def _stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def make(folder: Path) -> None:
    """Create the folder (if need be) and stamp it as this user's; call before writing in it."""
    if not os.path.lexists(folder):
        _create(folder)
    st = os.lstat(folder)
    key = _key()
    if key is not None and _read_small(folder / STAMP) != _stamp(key, folder, st):
        _write_small(folder / STAMP, _stamp(key, folder, st))
    if not (folder / ".gitignore").exists():
        _write_small(folder / ".gitignore", GITIGNORE.rstrip("\n"))


def _create(folder: Path) -> None:
    """Make the folder under a private name, stamped, and rename it into place: another process's
    ``check`` must never see it unstamped, or it would set it aside as untrusted."""
    tmp = folder.with_name(f"{STATE_DIR}.new-{secrets.token_hex(4)}")
    tmp.mkdir(mode=0o700)
    try:
        # .gitignore first: a folder a crash left here holds nothing git shows.
        _write_small(tmp / ".gitignore", GITIGNORE.rstrip("\n"))
        key = _key()
        if key is not None:
            _write_small(tmp / STAMP, _stamp(key, folder, os.lstat(tmp)))  # the inode survives the rename
        try:
            os.rename(tmp, folder)
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise  # else another process made it first: theirs is used
    finally:
        if os.path.lexists(tmp):
            shutil.rmtree(tmp, ignore_errors=True)


def check(
    folder: Path,
    head: Callable[[], str | None],
    tracked: Callable[[], bool],
    warn: Callable[[str], None] = _stderr,
) -> None:
    """Set the folder aside unless it is trusted (see the module's docstring). ``head()`` is the
    commit HEAD names; ``tracked()`` says whether git tracks any file in the folder."""
    key = _key()
    try:
        seen = os.lstat(folder)
    except FileNotFoundError:
        return
    reason = _untrusted_reason(folder, seen, key)
    if reason is None and stat.S_ISDIR(seen.st_mode):
        now = head() or ""
        if _read_small(folder / CHECKED_HEAD) != now:
            if tracked():
                reason = "git tracks files in it (force-added to the repository)"
            else:
                with contextlib.suppress(OSError):
                    _write_small(folder / CHECKED_HEAD, now)
    if reason is not None:
        _set_aside(folder, seen, reason, warn)
