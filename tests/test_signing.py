"""The commits slayer-kb writes itself (``git commit-tree``: a save, an update, a rename, a forget,
a restore, a renumber) follow the repository's ``commit.gpgSign``, as the commits git makes for it
do: signed with real SSH keys (``gpg.format=ssh``), checked by ``git verify-commit``; a signing
that fails or waits for a passphrase fails the command with the fix, and writes nothing."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testing import CliRunner, Watcher, blocker, default_first, git, make_team, unlike

# git signs with ssh-keygen (gpg.format=ssh, git 2.34 or later).
pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")


def _key(folder: Path, passphrase: str = "") -> Path:
    """A new SSH key in ``folder``, protected by ``passphrase`` when one is given."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / ("locked" if passphrase else "signing")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-f", str(key)], check=True)
    return key


def _signing(clone: Path, key: Path, on: bool = True) -> None:
    """The clone's config as a team requiring signed commits has it (``on``), and what
    ``git verify-commit`` checks signatures against: ``key``'s, for the committer of the tests."""
    signers = key.parent / "allowed_signers"
    signers.write_text(f"{os.environ['GIT_COMMITTER_EMAIL']} {key.with_suffix('.pub').read_text()}")
    for name, value in (("gpg.format", "ssh"), ("user.signingKey", str(key)), ("gpg.ssh.allowedSignersFile", str(signers)),
                        ("commit.gpgSign", "true" if on else "false")):
        git(clone, "config", name, value)


def _signatures(clone: Path, since: str) -> list[tuple[str, str]]:
    """Each commit after ``since`` to HEAD, oldest first: git's check of its signature (G: good,
    N: none) and its subject."""
    lines = git(clone, "log", "--reverse", "--format=%G? %s", f"{since}..HEAD").splitlines()
    return [(line[0], line[2:]) for line in lines]


@pytest.mark.parametrize("on", [True, False])
def test_each_commit_slayer_kb_writes_is_signed_when_commit_gpgsign_says_so(
        tmp_path: Path, invoke_cli: CliRunner, on: bool) -> None:
    _bare, (a, b) = make_team(tmp_path)
    key = _key(tmp_path / "key")
    for clone in (a, b):
        git(clone, "config", "slayer-kb.ids", "sequential")
        _signing(clone, key, on)
    base = git(b, "rev-parse", "HEAD").strip()
    invoke_cli("--kb", a, "save", unlike("anote"), "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    # Dated in 1970: made again by a sync, b's commits keep their author's date.
    dated = {"GIT_AUTHOR_DATE": "@12345 +0530"}
    invoke_cli("--kb", b, "save", unlike("bnote"), "-e", "shop.orders.qty", env=dated, check=True)
    invoke_cli("--kb", b, "update", "1", "--description", "b's note", env=dated, check=True)
    # b's memory 1 is a's on the remote: renumbered to 2 by commits slayer-kb writes.
    assert "  renumbered: 1 -> 2 (origin had already used 1 for another memory)" in invoke_cli("--kb", b, "sync", check=True).stdout.splitlines()
    for args in (("rename", "2", "kb.bnote"), ("forget", "kb.bnote"), ("restore", "kb.bnote", "--rev", "HEAD~1")):
        invoke_cli("--kb", b, *args, check=True)
    mark = "G" if on else "N"
    assert _signatures(b, base) == [
        (mark, "memory: save 1"), (mark, "memory: save 2 (renumber 1 -> 2)"), (mark, "memory: update 2 (description) (renumber 1 -> 2)"),
        (mark, "memory: rename 2 to kb.bnote"), (mark, "memory: forget kb.bnote"),
        (mark, "memory: restore kb.bnote as of " + git(b, "rev-parse", "HEAD~2")[:12])]
    assert git(b, "log", "-2", "--format=%ad", "--date=raw", "HEAD~3").splitlines() == ["12345 +0530"] * 2
    verified = subprocess.run(["git", "verify-commit", "HEAD"], cwd=b, capture_output=True, text=True, check=False)
    assert verified.returncode == (0 if on else 1)
    assert ('Good "git" signature for ' + os.environ["GIT_COMMITTER_EMAIL"] in verified.stderr) is on


def _without_terminal(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``slayer-kb --kb ROOT ARGS`` as a process with no terminal to ask a passphrase on (a session
    of its own), as the warm server runs a write, and no ssh-agent."""
    full = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"} | (env or {})
    return subprocess.run([sys.executable, "-m", "slayer_kb", "--kb", str(root), *args], capture_output=True,
                          text=True, env=full, stdin=subprocess.DEVNULL, start_new_session=True, timeout=120, check=False)


FIX = (" Nothing was committed. Make the signing key usable with no prompt (load it into ssh-agent or gpg-agent; "
       "check user.signingKey and gpg.format), or turn signing off for this repository: git config commit.gpgSign false\n")


# A signer that hangs, stopped past SLAYER_KB_GIT_TIMEOUT (2 s of waiting), is a hang test: -m slow.
@pytest.mark.parametrize("problem", default_first(["no key", "passphrase", "waits"], keep=2))
def test_a_commit_that_cannot_be_signed_fails_with_the_fix_and_writes_nothing(tmp_path: Path, problem: str) -> None:
    _bare, (a,) = make_team(tmp_path, clones=1)
    key = _key(tmp_path / "key", "secret" if problem == "passphrase" else "")
    _signing(a, key)
    env = {}
    if problem == "no key":
        git(a, "config", "user.signingKey", str(tmp_path / "missing"))
    elif problem == "waits":  # a signing program waiting for an answer that never comes, as a pinentry may
        waiting = tmp_path / "waiting-signer"
        waiting.write_text("#!/bin/sh\nsleep 600\n")
        waiting.chmod(0o755)
        git(a, "config", "gpg.ssh.program", str(waiting))
        env = {"SLAYER_KB_GIT_TIMEOUT": "2"}
    head, files = git(a, "rev-parse", "HEAD"), sorted(a.glob("memories/*"))
    proc = _without_terminal(a, "save", unlike("signed"), "--id", "kb.signed", "-e", "shop.orders.amount", env=env)
    why = {"no key": f"error: Couldn't load public key {tmp_path / 'missing'}: No such file or directory?",
           "passphrase": f'error: Enter passphrase: Load key "{key}": incorrect passphrase supplied to decrypt '
                         "private key?",
           "waits": "signing did not finish within 2 s and was stopped (waiting for a passphrase no one can type?)."}
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == f"Error: git could not sign the commit (commit.gpgSign is true): {why[problem]}{FIX}"
    # Nothing written: no commit, no file, git's index as HEAD, and the memory neither found nor listed.
    assert (git(a, "rev-parse", "HEAD"), sorted(a.glob("memories/*"))) == (head, files)
    assert git(a, "status", "--porcelain") == ""
    git(a, "config", "commit.gpgSign", "false")
    assert "kb.signed" not in _without_terminal(a, "search", "signed0word").stdout
    assert _without_terminal(a, "get", "kb.signed").returncode == 1


def test_the_warm_server_follows_commit_gpgsign_as_it_changes(watcher: Watcher, tmp_path: Path) -> None:
    """Relayed saves (the client cannot run one itself): the write process, kept warm, reads
    the setting again when the config changes, on and off."""
    root = watcher.root
    _signing(root, _key(tmp_path / "key"), on=False)
    blocked = blocker(tmp_path / "blocker")
    base = git(root, "rev-parse", "HEAD").strip()
    for n, on in enumerate((False, True, False)):
        git(root, "config", "commit.gpgSign", str(on).lower())
        proc = _without_terminal(root, "save", unlike(f"warm{n}"), "--id", f"kb.warm{n}", "-e", "shop.orders.amount",
                                 env={"PYTHONPATH": str(blocked)})
        assert proc.returncode == 0, proc.stderr
    assert _signatures(root, base) == [("N", "memory: save kb.warm0"), ("G", "memory: save kb.warm1"),
                                       ("N", "memory: save kb.warm2")]


def test_a_commit_gpgsign_git_cannot_read_stops_the_command_with_the_fix(tmp_path: Path) -> None:
    """git stops on such a value ("bad boolean config value"): slayer-kb neither signs nor writes unsigned."""
    _bare, (a,) = make_team(tmp_path, clones=1)
    git(a, "config", "commit.gpgSign", "maybe")
    head = git(a, "rev-parse", "HEAD")
    proc = _without_terminal(a, "save", unlike("maybe"), "--id", "kb.maybe", "-e", "shop.orders.amount")
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == ("Error: commit.gpgSign is 'maybe' in git's config, which git reads as neither true nor false, "
                           "and stops on: set it to true or false (git config commit.gpgSign true), or remove it (git "
                           "config --unset commit.gpgSign).\n")
    assert (git(a, "rev-parse", "HEAD"), git(a, "status", "--porcelain")) == (head, "")


@pytest.mark.parametrize(("author", "encoding", "message", "made"), [
    (b"Doe, Jane, <j@x.> 1234 -0000", b"", b"subject only, no newline", None),
    (b"'Quoted' <q@x> 99 -0130", b"", b"subj\r\n\r\nbody with CR\r\n", None),
    (b"Ann  Double  <a@x> 7 +0100", b"", b"  lead space\n", None),
    # git rebase writes the message in UTF-8 (i18n.commitEncoding), the same text.
    (b"Ann Lee <ann@x> 1234 +0530", b"encoding ISO-8859-1\n", b"caf\xe9\n", (b"", "caf\u00e9\n".encode()))])
def test_a_signing_sync_keeps_commits_commit_tree_would_change(
        tmp_path: Path, invoke_cli: CliRunner, author: bytes, encoding: bytes, message: bytes,
        made: tuple[bytes, bytes] | None) -> None:
    """An author git would tidy (crud at an end of the name or email, the zone -0000), or a message
    in another encoding: ``git commit-tree`` cannot make such a commit again as it is, so the sync
    replays it with ``git rebase``, which signs it and keeps its author line and message."""
    _bare, (a, b) = make_team(tmp_path)
    key = _key(tmp_path / "key")
    _signing(b, key)
    invoke_cli("--kb", a, "save", unlike("anote"), "--id", "kb.anote", "-e", "shop.orders.amount", check=True)
    invoke_cli("--kb", a, "sync", check=True)
    base = git(b, "rev-parse", "HEAD").strip()
    invoke_cli("--kb", b, "save", unlike("bnote"), "--id", "kb.bnote", "-e", "shop.orders.qty", check=True)
    # b's save, made again by hand with that author and message.
    header = (f"tree {git(b, 'rev-parse', 'HEAD^{tree}').strip()}\nparent {base}\n".encode() + b"author " + author +
              b"\ncommitter C <c@x> 1 +0000\n" + encoding)
    crafted = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin", "--literally"], cwd=b,
                             input=header + b"\n" + message, capture_output=True, check=True).stdout.decode().strip()
    git(b, "reset", "-q", "--soft", crafted)
    invoke_cli("--kb", b, "sync", check=True)
    assert git(b, "rev-parse", "HEAD~1") == git(a, "rev-parse", "HEAD")
    replayed = subprocess.run(["git", "cat-file", "commit", "HEAD"], cwd=b, capture_output=True, check=True).stdout
    head, _, said = replayed.partition(b"\n\n")
    encoded, text = made or (encoding, message)
    assert [line for line in head.split(b"\n") if line.startswith((b"author ", b"encoding "))] == [
        b"author " + author, *([encoded.strip()] if encoded else [])]
    assert said == text
    assert git(b, "log", "-1", "--format=%G?") == "G\n"


def test_a_commit_git_refuses_signed_or_not_fails_as_git_says_not_as_a_signing(tmp_path: Path) -> None:
    """Signing on, and an author git refuses: the commit made unsigned fails too, so the failure is
    not the signing's, and the message is git's own, with no advice about keys."""
    _bare, (a,) = make_team(tmp_path, clones=1)
    _signing(a, _key(tmp_path / "key"))
    head = git(a, "rev-parse", "HEAD")
    proc = _without_terminal(a, "save", unlike("refused"), "--id", "kb.refused", "-e", "shop.orders.amount",
                             env={"SLAYER_KB_AUTHOR": "',' <a@x>"})
    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr == "Error: git commit-tree failed: fatal: name consists only of disallowed characters: ','\n"
    assert (git(a, "rev-parse", "HEAD"), git(a, "status", "--porcelain")) == (head, "")


@pytest.mark.parametrize("spelt", default_first(["absolute", "relative", "nested"]))
def test_the_warm_server_follows_commit_gpgsign_in_an_included_file(watcher: Watcher, tmp_path: Path,
                                                                     spelt: str) -> None:
    """The setting in a file the repository's config includes (``include.path``, an
    ``includeIf`` one's include, a path relative to the including file's folder): an edit of
    that file alone is followed, with no touch of the config that names it."""
    root = watcher.root
    _signing(root, _key(tmp_path / "key"), on=False)
    git(root, "config", "--unset", "commit.gpgSign")
    signing = root / ".git" / "signing.inc" if spelt == "relative" else tmp_path / "signing.inc"
    if spelt == "nested":  # a file included by a file included when the repository is where it is
        (tmp_path / "team.inc").write_text(f'[include]\n\tpath = "{signing}" ; the signing part\n')
        git(root, "config", f"includeIf.gitdir:{root}/.path", str(tmp_path / "team.inc"))
    else:
        git(root, "config", "include.path", "signing.inc" if spelt == "relative" else str(signing))
    blocked = blocker(tmp_path / "blocker")
    base = git(root, "rev-parse", "HEAD").strip()
    for n, on in enumerate((False, True, False)):
        signing.write_text(f"[commit]\n\tgpgSign = {str(on).lower()}\n")
        proc = _without_terminal(root, "save", unlike(f"warm{n}"), "--id", f"kb.warm{n}", "-e", "shop.orders.amount",
                                 env={"PYTHONPATH": str(blocked)})
        assert proc.returncode == 0, proc.stderr
    assert _signatures(root, base) == [("N", "memory: save kb.warm0"), ("G", "memory: save kb.warm1"),
                                       ("N", "memory: save kb.warm2")]
