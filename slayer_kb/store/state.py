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
- and it must hold no file that git put there. What git tracks under the folder is listed by
  ``git ls-files`` (nothing, without git, where git's index file read in the process cannot
  hold the folder's path: ``gitindex.may_hold``) and kept, under the key's MAC, in
  ``checked-head``, bound to HEAD and to git's index file (its device, inode, size, times and
  checksum trailer: any git command that stages rewrites it). A change to either lists again: a pull or checkout moves HEAD, and ``git
  checkout BRANCH -- .slayer-kb``, ``merge --squash``, ``cherry-pick -n``, ``stash pop`` or
  ``apply --index`` stage git's files without moving it. Each check then looks for those paths
  in the folder, and a file there with the very bytes (or link) git tracks, or the bytes git's
  checkout writes of them (its attributes' conversions applied), is git's copy (a ``git
  checkout .`` or ``git stash`` brings one back with neither HEAD nor the index changed).
  A file of ours at a tracked path differs from git's blob. slayer-kb's own commit moves HEAD
  and stages its files, so the command after it lists again. What git writes without tracking
  it (``git restore --source`` without ``--staged``, ``checkout-index --prefix``, ``git show >
  file``, ``git archive``) is the user's own copy, as any file put there by hand: not caught.

A folder that fails is moved aside (``.slayer-kb.untrusted-<time>``, renaming the link itself,
never following it; git's ``info/exclude`` then ignores it) with a warning, and a new one is made. Nothing in it is read or deleted.
A repository that tracks files under the folder (force-added, or the folder committed as a
symbolic link) is told once how to stop (``git rm -r --cached .slayer-kb``); meanwhile the folder
slayer-kb made stays in use, since git's paths in it are missing or not git's bytes, and the index
is not rebuilt on every command.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..core.errors import StoreError
from ..core.fileio import identity
from ..core.home import account_home, home
from . import gitindex
from .gitenv import LITERAL_PATHS

STATE_DIR = ".slayer-kb"
STAMP = "owner"
KEY_BYTES = 32
CHECKED_HEAD = "checked-head"
# What git should never pick up from the folder, even where the repository's .gitignore does not
# say so (a SLayer storage folder put under git): its own .gitignore ignores everything in it.
GITIGNORE = "# slayer-kb's derived state: rebuilt from the files, never committed\n*\n"


# A path git tracks under the folder: (mode, object id, size of the object, path inside the
# folder, "" for the folder itself).
Tracked = tuple[str, str, int, str]
_GITLINK = "160000"
# How many files at paths git tracks in the folder, not of the very bytes of git's blob, are
# compared with what git's checkout writes of it (``_git_copies``).
_MOST_ASKED = 32
_SYMLINK = "120000"


def _key_paths() -> list[Path]:
    """Where the key may be, in order: ``$XDG_STATE_HOME/slayer-kb/key``, else under the home the
    system gives this user, not ``$HOME``, which a command may run with another of (core/home.py);
    then under ``$HOME``, where that home takes no file (a read-only one in a container)."""
    chosen = os.environ.get("XDG_STATE_HOME", "")
    if os.path.isabs(chosen):  # a relative one is ignored, as the XDG spec says
        return [Path(chosen) / "slayer-kb" / "key"]
    homes = dict.fromkeys(where for where in (account_home(), home()) if where is not None)
    return [_key_under(where) for where in homes]


def _key_under(home_folder: Path) -> Path:
    return home_folder / ".local" / "state" / "slayer-kb" / "key"


def _key() -> bytes | None:
    """This user's secret, made on first use in the first place that takes it; None where none
    does (no home, or none writable)."""
    return next((key for key in map(_key_at, _key_paths()) if key is not None), None)


def _former_key() -> bytes | None:
    """The key a slayer-kb before the account's home kept, without ``$XDG_STATE_HOME``, under
    ``$HOME``: a state folder it stamped is this user's too. Only a file of this user's that no one
    else can read, of a key's length, counts; never made."""
    if os.path.isabs(os.environ.get("XDG_STATE_HOME", "")) or (where := home()) is None:
        return None  # the key was there before too
    try:
        key = _read_private(_key_under(where))
    except OSError:
        return None
    return key if len(key) == KEY_BYTES else None


def _key_at(path: Path) -> bytes | None:
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
            # The former key carried over: the folders an upgrade finds stamped stay trusted.
            handle.write(_former_key() or secrets.token_bytes(KEY_BYTES))
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
    data = _read_regular(path, 256)
    return None if data is None else data.decode("ascii", "replace").strip()


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
    if key is not None and not _stamped(key, folder, st):
        return "slayer-kb did not make it here for this user (a copy from git or elsewhere)"
    return None


def _stamped(key: bytes, folder: Path, st: os.stat_result) -> bool:
    """Whether the folder carries its stamp under ``key``, or under the key a former slayer-kb
    kept under ``$HOME`` (then stamped again under ``key``: an upgrade sets nothing aside)."""
    found = _read_small(folder / STAMP)
    if found == _stamp(key, folder, st):
        return True
    former = _former_key()
    if former is None or former == key or found != _stamp(former, folder, st):
        return False
    with contextlib.suppress(OSError):  # a read-only KB: checked under the former key each time
        _write_small(folder / STAMP, _stamp(key, folder, st))
    return True


# What a folder set aside is called (its time and a random tail follow), and the pattern that keeps
# every such folder out of ``git add -A``: a link set aside points out of the KB.
ASIDE = f"{STATE_DIR}.untrusted-"
ASIDE_PATTERN = f"{ASIDE}*"


def _set_aside(folder: Path, seen: os.stat_result, reason: str, warn: Callable[[str], None], advice: str = "",
               exclude: Callable[[], Path] | None = None) -> None:
    """Move ``folder`` (as ``seen`` by the check) aside, unless another process opening the KB at
    the same time already did, or already made a new one in its place; ``exclude()`` (git's
    ``info/exclude``) then ignores it."""
    aside = folder.with_name(f"{ASIDE}{time.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(3)}")
    try:
        now = os.lstat(folder)
        if (now.st_dev, now.st_ino) != (seen.st_dev, seen.st_ino):
            return
        os.rename(folder, aside)  # renames a link itself, never what it points to
    except FileNotFoundError:
        return
    except OSError as exc:  # a read-only KB: the untrusted folder can be neither used nor moved
        raise StoreError(
            f"Cannot set {folder} aside ({reason}): {exc.strerror}. Move or delete it yourself (nothing in it is "
            f"needed), or make {folder.parent} writable by this user, then retry.") from None
    if exclude is not None:
        _exclude(exclude)
    warn(
        f"{folder} was set aside as {aside.name} and will be rebuilt: {reason}. Nothing in it was "
        f"read; delete it once you have looked.{advice}"
    )


def _exclude(where: Callable[[], Path]) -> None:
    """Folders set aside ignored by git in this clone (``info/exclude``, never committed): untracked,
    a ``git add -A`` would commit one, a link out of the KB among them. Best effort."""
    with contextlib.suppress(OSError, StoreError):
        path = where()
        held = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        if ASIDE_PATTERN not in held.splitlines():
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a", encoding="utf-8") as out:
                out.write(("" if not held or held.endswith("\n") else "\n") + ASIDE_PATTERN + "\n")


def _stderr(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def make(folder: Path, opened: tuple[int, int] | None = None) -> None:
    """Create the folder (if need be) and stamp it as this user's; call before writing in it.
    ``opened``: the KB's folder as the process opened it, (device, inode), where one is made
    only (None: where its path is now)."""
    if not os.path.lexists(folder):
        if opened is not None and identity(folder.parent)[0] != opened:
            # Moved away since the open (a long-lived process's): a folder made at its path since
            # (one being copied into place) is not this process's to write in.
            raise StoreError(f"The knowledge base at {folder.parent} is not the folder this process opened: it was "
                             "deleted, moved or replaced since, and no state folder is made in the one there now. "
                             "Run the command again (start a server or MCP process again) to open it.")
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
            import shutil  # on use: 2 ms of every start, for a folder a failed make left

            shutil.rmtree(tmp, ignore_errors=True)


def check(
    folder: Path,
    head: Callable[[], str | None],
    index: Callable[[], str],
    tracked: Callable[[], Sequence[Tracked]],
    warn: Callable[[str], None] = _stderr,
    shown: str = STATE_DIR,
    checked_out: Callable[[str, str], bytes | None] = lambda _oid, _path: None,
    exclude: Callable[[], Path] | None = None,
) -> bool:
    """Set the folder aside unless it is trusted (see the module's docstring), and say whether it
    was not (True: set aside, or another process did it first). ``head()`` is the
    commit HEAD names; ``index()`` the state of git's index (``index_state``); ``tracked()`` what
    git tracks under the folder, named ``shown`` (its path in the repository) in the advice to
    stop tracking it; ``checked_out(oid, path)`` the bytes git's checkout writes of a blob at a
    path inside the folder (its attributes' conversions applied: ``checked_out_bytes``); ``exclude()``
    git's ``info/exclude``, where a folder set aside is ignored."""
    key = _key()
    try:
        seen = os.lstat(folder)
    except FileNotFoundError:
        return False
    reason = _untrusted_reason(folder, seen, key)
    entries: Sequence[Tracked] | None = None
    if reason is None and stat.S_ISDIR(seen.st_mode):
        # Both read before the listing: a change made while it runs is listed next time.
        now = (head() or "", index())
        record = _read_checked(folder, key)
        current = record is not None and record[:2] == now
        if record is not None and current:
            entries = record[2]
        else:
            entries = list(tracked() or ())
            with contextlib.suppress(OSError):
                _write_small(folder / CHECKED_HEAD, _checked_text(key, now, entries))
        copied = _git_copies(folder, entries, checked_out)
        if copied is not None:
            reason = f"git tracks files in it (force-added to the repository) and put {copied} there"
        elif not current and entries and (record is None or record[2] != entries):  # told once
            warn(f"git tracks {_what(entries, shown)}, slayer-kb's derived state; slayer-kb keeps "
                 f"its own folder and ignores git's copies. {_advice(shown)}")
    if reason is not None:
        if entries is None:
            entries = list(tracked() or ())
        advice = f" git tracks {_what(entries, shown)}: {_advice(shown)}" if entries else ""
        _set_aside(folder, seen, reason, warn, advice, exclude)
    return reason is not None


def index_state(path: Path) -> str:
    """What tells one state of git's index file ``path`` from another: git writes a new file and
    renames it into place (a new inode), and ends it with a checksum of its content (zeros under
    ``index.skipHash``, where the rest still changes). "none" while there is no index; a value
    never recorded when it cannot be read, so that the check lists again."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return "none"
    except OSError:
        return secrets.token_hex(8)
    if stat.S_ISDIR(os.fstat(fd).st_mode):  # fdopen refuses a folder
        os.close(fd)
        return secrets.token_hex(8)
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if st.st_size >= 32 and stat.S_ISREG(st.st_mode):
            handle.seek(-32, os.SEEK_END)  # the trailer: 20 bytes of SHA-1, or 32 of SHA-256
            trailer = handle.read(32).hex()
        else:
            trailer = ""
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{trailer}"


def tracked(git: Callable[..., subprocess.CompletedProcess[bytes]], folder: str, index_file: Path) -> list[Tracked]:
    """What git tracks at ``folder`` (its path in the repository) or under it: each path's mode,
    object id and size, its path inside the folder. ``git`` runs git in the repository, whose
    index file is ``index_file``: where that file cannot hold the folder's path (nearly always:
    nothing under it is tracked), no git process is started."""
    if not gitindex.may_hold(index_file, folder):
        return []
    out = git("ls-files", "-s", "-z", "--", folder, check=False, env=LITERAL_PATHS).stdout
    staged = [entry.split(b"\t", 1) for entry in out.split(b"\0") if b"\t" in entry]
    if not staged:
        return []
    ids = [info.split()[1].decode("ascii") for info, _path in staged]
    sizes = git("cat-file", "--batch-check=%(objectsize)", input="".join(i + "\n" for i in ids).encode(),
                check=False).stdout.split(b"\n")
    return [
        (info.split()[0].decode("ascii"), oid, int(size) if size.isdigit() else -1,
         os.fsdecode(path)[len(folder):].lstrip("/"))
        for (info, path), oid, size in zip(staged, ids, sizes, strict=False)
    ]


def _what(entries: Sequence[Tracked], shown: str) -> str:
    itself = [mode for mode, _oid, _size, path in entries if path == ""]
    if itself:
        return f"{shown} itself ({'a symbolic link' if itself[0] == '120000' else 'a file'})"
    return f"{len(entries)} file{'s' if len(entries) != 1 else ''} under {shown}"


def _advice(shown: str) -> str:
    return (f"Stop tracking it with 'git rm -r --cached {shown}' and commit, so that clones stop "
            f"bringing it (it is yours to commit: slayer-kb never does).")


def _checked_text(key: bytes | None, now: tuple[str, str], entries: Sequence[Tracked]) -> str:
    body = json.dumps({"head": now[0], "index": now[1], "tracked": [list(e) for e in entries]}, separators=(",", ":"))
    return f"{_mac(key, body)} {body}"


def _mac(key: bytes | None, body: str) -> str:
    # Without a key (no writable home) nothing here can be authenticated: the folder's owner and
    # inode checks stand alone, as they do for the stamp.
    return hmac.new(key, body.encode("utf-8"), hashlib.sha256).hexdigest() if key is not None else "-"


def _read_checked(folder: Path, key: bytes | None) -> tuple[str, str, list[Tracked]] | None:
    """The HEAD and index state of the last check, with what git tracked under the folder then;
    None when there was none (or the file is not this user's writing: git could bring one)."""
    try:
        fd = os.open(folder / CHECKED_HEAD, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        text = handle.read(1 << 20).decode("utf-8", "replace").strip()
    mac, _, body = text.partition(" ")
    if not hmac.compare_digest(mac, _mac(key, body)):
        return None
    try:
        found = json.loads(body)
        entries = [(str(mode), str(oid), int(size), str(path)) for mode, oid, size, path in found["tracked"]]
        return str(found["head"]), str(found["index"]), entries
    except (ValueError, KeyError, TypeError):
        return None


def _git_copies(folder: Path, entries: Sequence[Tracked], checked_out: Callable[[str, str], bytes | None]
                ) -> str | None:
    """The first path of ``entries`` that holds git's own copy (the same bytes, or link, or the
    bytes git's checkout writes of them: an attribute's ``ident``, ``eol`` or ``working-tree-
    encoding`` changes them), or None. A submodule's folder is left alone: git does not fill it
    unless asked to."""
    asked = 0
    for mode, oid, size, path in entries:
        if mode == _GITLINK:
            continue
        where = folder / path if path else folder
        try:
            st = os.lstat(where)
        except OSError:
            continue
        if mode == _SYMLINK:
            data = os.fsencode(os.readlink(where)) if stat.S_ISLNK(st.st_mode) else None
        elif stat.S_ISREG(st.st_mode):
            data = _read_regular(where)
        else:
            continue
        if data is None:
            continue
        if len(data) == size and _blob_id(data, len(oid)) == oid:
            return path or "the folder"
        if mode != _SYMLINK:
            asked += 1
            # A git process a file, where a repository tracks files there at all: past a few
            # dozen such files, each is taken for git's rather than asked about.
            if asked > _MOST_ASKED or data == checked_out(oid, path):
                return path or "the folder"
    return None


def checked_out_bytes(git: Callable[..., subprocess.CompletedProcess[bytes]], folder: str, oid: str,
                      path: str) -> bytes | None:
    """The bytes git's checkout writes of blob ``oid`` at ``path`` inside ``folder`` (its path in
    the repository), with the conversions its attributes ask for; None when git cannot say."""
    proc = git("cat-file", "--filters", f"--path={folder}/{path}" if path else f"--path={folder}", oid, check=False,
               env=LITERAL_PATHS)
    return proc.stdout if proc.returncode == 0 else None


def _read_regular(path: Path, most: int = -1) -> bytes | None:
    """At most ``most`` bytes of the regular file ``path`` (never through a symlink, never
    waiting on a FIFO), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(most) if stat.S_ISREG(os.fstat(handle.fileno()).st_mode) else None


def _blob_id(data: bytes, length: int) -> str:
    """The id git gives a blob of ``data`` (SHA-1, or SHA-256 for 64-digit ids)."""
    digest = hashlib.sha256() if length == 64 else hashlib.sha1(usedforsecurity=False)
    digest.update(b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()
