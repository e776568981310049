"""slayer-kb under a user's git configuration that changes what git prints: each team flow that
reads git's log and diff output, run once with an empty ~/.gitconfig and once with one turning on
every such setting, says and commits the same. The configuration is the slayer-kb commands' alone
(their environment): the tests' own git commands read none. Each clone's commits are signed before
they are read or pushed: git prints a signature check for a signed commit only."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slayer_kb.core.errors import StoreError
from slayer_kb.core.text import shown_value
from slayer_kb.store import config
from slayer_kb.store.identity import signs
from testing import CliRunner, default_first, examples, git, json_of, make_team, unlike

# Every setting that changes the output of a git command slayer-kb reads (log, show, diff,
# status, grep), and signing: commits signed (with an SSH key, no signers file) make
# log.showSignature print "No signature" on stdout before each commit of a log.
HOSTILE = """\
[user]
\tsigningKey = {key}
[gpg]
\tformat = ssh
[commit]
\tgpgSign = true
[log]
\tshowSignature = true
\tdecorate = full
\tabbrevCommit = true
\tfollow = true
\tdate = relative
\tshowRoot = false
\tdiffMerges = first-parent
[format]
\tpretty = fuller
[diff]
\tnoprefix = true
\tmnemonicPrefix = true
\trenames = copies
\texternal = /bin/false
\trelative = true
[color]
\tui = always
\tdiff = always
\tstatus = always
\tbranch = always
\tgrep = always
[core]
\tquotePath = false
\tabbrev = 12
[status]
\tshowUntrackedFiles = all
\trenames = false
\tbranch = true
\tshort = true
\tshowStash = true
[notes]
\tdisplayRef = refs/notes/*
[grep]
\tpatternType = fixed
\tfullName = true
\tlineNumber = true
\tcolumn = true
[i18n]
\tlogOutputEncoding = ISO-8859-1
\tcommitEncoding = ISO-8859-1
"""

Flow = Callable[[Path, CliRunner], None]

# git signs with ssh-keygen (gpg.format=ssh, git 2.34 or later).
pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="ssh-keygen is not installed")


def _signing_key(folder: Path) -> Path:
    """A new SSH key, ``folder``/signing, with no passphrase."""
    key = folder / "signing"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key


def _signed(clone: Path) -> None:
    """The clone's commits not pushed yet made again, signed (``log.showSignature`` then prints a
    line before each in a log): the plain run's config signs none (the hostile one's signs them
    already, as ``commit.gpgSign`` says: test_signing.py)."""
    key = Path(git(clone, "rev-parse", "--show-toplevel").strip()).parent / "signing"
    git(clone, "-c", "gpg.format=ssh", "-c", f"user.signingKey={key}", "-c", "commit.gpgSign=true",
        "rebase", "-q", "--force-rebase", "--no-fork-point", "@{upstream}")


def _history(tmp: Path, run: CliRunner) -> None:
    """Save, update, rename, forget and restore one memory; its log and its versions."""
    _bare, (a,) = make_team(tmp, clones=1)
    run("--kb", a, "save", unlike("revenue"), "-e", "shop.orders.amount")
    run("--kb", a, "save", unlike("refund"), "-e", "shop.orders.amount,memory:1")
    run("--kb", a, "--author", "José Núñez <j@e>", "update", "1", "--description", "what revenue counts",
        "--title", "Café à midi")
    run("--kb", a, "rename", "1", "kb.revenue")
    # A move by hand, staged: git's status names it a rename (status.renames=false would hide it).
    git(a, "mv", "memories/kb.revenue.yaml", "memories/kb.moved.yaml")
    run("--kb", a, "update", "kb.revenue", "--description", "not while moved")
    git(a, "mv", "memories/kb.moved.yaml", "memories/kb.revenue.yaml")
    _signed(a)
    run("--kb", a, "log", "kb.revenue")
    run("--kb", a, "--json", "log", "kb.revenue")
    run("--kb", a, "show", "kb.revenue", "--rev", "HEAD~2")
    run("--kb", a, "forget", "kb.revenue")
    run("--kb", a, "show", "kb.revenue")
    run("--kb", a, "restore", "kb.revenue", "--rev", "HEAD~1")
    run("--kb", a, "log", "kb.revenue")
    run("--kb", a, "validate")


def _renames_on_both_sides(tmp: Path, run: CliRunner) -> None:
    """Each clone renames a memory the other links and edits; each syncs (a KB in a folder)."""
    _bare, (a, b) = make_team(tmp, folder="kb")
    run("--kb", a, "save", unlike("revenue"), "-e", "shop.orders.amount")
    run("--kb", a, "save", unlike("refund"), "-e", "shop.orders.status")
    run("--kb", a, "sync")
    run("--kb", b, "sync")
    run("--kb", a, "rename", "1", "kb.revenue")
    run("--kb", a, "update", "2", "--description", "refunds, edited on a")
    run("--kb", b, "rename", "2", "kb.refund")
    run("--kb", b, "update", "1", "--description", "revenue, edited on b")
    run("--kb", b, "save", unlike("link"), "--id", "kb.q", "-e", "memory:1,memory:kb.refund")
    run("--kb", a, "save", unlike("other"), "--id", "kb.p", "-e", "memory:2")
    _signed(a)
    run("--kb", a, "sync")
    _signed(b)
    run("--kb", b, "validate", "--against", "origin/main")
    run("--kb", b, "sync")
    run("--kb", a, "sync")
    run("--kb", a, "log", "kb.refund")
    run("--kb", b, "review", "HEAD~3", "HEAD")


def _renumber_on_sync(tmp: Path, run: CliRunner) -> None:
    """Both clones count their ids (no leases): b's memory 1 becomes 2 when it syncs."""
    _bare, (a, b) = make_team(tmp)
    for clone in (a, b):
        git(clone, "config", "slayer-kb.ids", "sequential")
    run("--kb", a, "save", unlike("anote"), "-e", "shop.orders.amount")
    run("--kb", a, "sync")
    run("--kb", b, "save", unlike("bnote"), "-e", "shop.orders.qty")
    run("--kb", b, "update", "1", "--description", "b's note, revised")
    _signed(b)
    run("--kb", b, "sync")
    run("--kb", b, "log", "2")
    run("--kb", b, "renumber", "--accept", "1")
    run("--kb", b, "log", "1")


def _merge_stops(tmp: Path, run: CliRunner) -> None:
    """Both clones change one memory's description two ways: merge stops and names the file; b's
    branch, reviewed and validated against main, then merged once the stop is resolved by hand."""
    _bare, (a, b) = make_team(tmp)
    run("--kb", a, "save", unlike("shared"), "--id", "shared", "-e", "shop.orders.amount")
    run("--kb", a, "save", unlike("gone"), "--id", "gone", "-e", "shop.orders.amount")
    run("--kb", a, "sync")
    run("--kb", b, "sync")
    run("--kb", a, "update", "shared", "--description", "a's summary")
    run("--kb", a, "forget", "gone")
    run("--kb", a, "sync")
    run("--kb", b, "update", "shared", "--description", "b's summary")
    run("--kb", b, "save", unlike("linker"), "--id", "kb.l", "-e", "memory:gone")
    _signed(b)
    git(b, "fetch", "-q", "origin")
    run("--kb", b, "review", "origin/main", "HEAD")
    run("--kb", b, "validate", "--against", "origin/main")
    run("--kb", b, "merge", "origin/main")
    git(b, "merge", "--abort")
    run("--kb", b, "sync")


# Each flow, and a line it says that shows it did its work (without the config).
# The first in the default run (the one reading most of git's output: renames, a sync, links
# rewritten), the others in -m slow.
FLOWS: dict[str, tuple[Flow, str]] = {
    "renames on both sides": (_renames_on_both_sides, "  rewrote links to renamed memories: memory:2 -> "
                              "memory:kb.refund in kb.p, memory:1 -> memory:kb.revenue in kb.q"),
    "history": (_history, "    memory: restore kb.revenue as of SHA"),
    "renumber on sync": (_renumber_on_sync, "  renumbered: 1 -> 2 (origin had already used 1 for another memory)"),
    "merge stops": (_merge_stops, "2 problems in 2 files (2 files checked)"),
}


def _transcript(flow: Flow, tmp: Path, invoke_cli: CliRunner, env: dict[str, str]) -> list[str]:
    """What each command of ``flow`` said and the repositories it left: every commit's message and
    files, and the memories' text, with ``tmp``, object ids and times made alike."""
    said: list[str] = []

    def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
        proc = invoke_cli(*args, env=env)
        said.append(f"$ {' '.join(map(str, args))}\n{proc.returncode}\n{proc.stdout}{proc.stderr}")
        return proc

    flow(tmp, run)
    for clone in sorted(p for p in tmp.iterdir() if (p / ".git").is_dir()):
        said.append(git(clone, "log", "--format=%s%n%b", "--name-status", "-M", "HEAD"))
        said.extend(f"{path}\n{path.read_text()}" for path in sorted(clone.rglob("memories/*.yaml")))
    text = "\n".join(said).replace(str(tmp), "TMP")
    text = re.sub(r"\b[0-9a-f]{7,40}\b", "SHA", text)
    return re.sub(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?", "TIME", text).splitlines()


@pytest.mark.parametrize("name", default_first(list(FLOWS)))
def test_a_flow_says_and_commits_the_same_under_a_git_config_that_changes_gits_output(
        tmp_path: Path, invoke_cli: CliRunner, name: str) -> None:
    for run in ("plain", "hostile"):
        (tmp_path / run).mkdir()
        _signing_key(tmp_path / run)
    hostile = tmp_path / "hostile.gitconfig"
    hostile.write_text(HOSTILE.format(key=tmp_path / "hostile" / "signing"))
    flow, done = FLOWS[name]
    plain = _transcript(flow, tmp_path / "plain", invoke_cli, {})
    assert done in plain
    assert _transcript(flow, tmp_path / "hostile", invoke_cli, {"GIT_CONFIG_GLOBAL": str(hostile)}) == plain


def test_a_git_c_that_started_slayer_kb_is_followed_but_for_how_git_prints(tmp_path: Path, invoke_cli: CliRunner) -> None:
    """Settings given as `git -c` to the process that runs slayer-kb (a git alias, a hook) reach
    its git: the identity it commits under is theirs; the ones of git's output are slayer-kb's."""
    _signing_key(tmp_path)
    _bare, (a,) = make_team(tmp_path, clones=1)
    env = {"GIT_AUTHOR_NAME": None, "GIT_AUTHOR_EMAIL": None,
           "GIT_CONFIG_PARAMETERS": "'user.name'='Via Dash C' 'user.email'='c@example.com' "
                                    "'log.showSignature'='true' 'color.ui'='always'"}
    invoke_cli("--kb", a, "save", unlike("dashc"), "--id", "kb.c", "-e", "shop.orders.amount", env=env, check=True)
    _signed(a)
    assert invoke_cli("--kb", a, "log", "kb.c", env=env).stdout.splitlines()[1:] == ["    memory: save kb.c"]
    assert json_of(invoke_cli("--kb", a, "--json", "log", "kb.c", env=env, check=True))[0]["author"] == (
        "Via Dash C <c@example.com>")


# What commit.gpgSign may say: git's words in any case, integers as C reads them (signs, 0x, a
# leading 0, k/m/g units, white space, too large for an int), and anything else.
_BOOLEANS = st.one_of(
    st.sampled_from(["true", "YES", "On", "false", "No", "OFF", "", "maybe", "tru", "1 ", " 1", "0x", "08", "1kb", "-1",
                     "0x1", "1k", "0k", "2097151k", "2097152k", "-2147483647", "2147483648"]),
    st.from_regex(r"\A\s?[+-]?(0[xX][0-9a-fA-F]{1,9}|0[0-9]{0,12}|[1-9][0-9]{0,11})[kKmMgGtx]?\Z"),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=6))


@settings(max_examples=examples(150), deadline=None)
@given(value=st.one_of(st.none(), _BOOLEANS))
def test_commit_gpgsign_is_read_as_git_reads_a_boolean(tmp_path_factory: pytest.TempPathFactory,
                                                       value: str | None) -> None:
    """``git config --type=bool`` is the reference: true or false as it says, and where it stops
    on the value, the commit stops with the setting named and the fix (None: the name alone)."""
    given_as = "commit.gpgSign" if value is None else f"commit.gpgSign={value}"
    asked = subprocess.run(["git", "-c", given_as, "config", "--type=bool", "--get", "commit.gpgSign"],
                           cwd=tmp_path_factory.getbasetemp(), capture_output=True, text=True, check=False)
    config = b"commit.gpgsign" + (b"" if value is None else b"\n" + value.encode())
    if asked.returncode == 0:
        assert signs(config) is (asked.stdout == "true\n")
        return
    assert "bad boolean config value" in asked.stderr
    with pytest.raises(StoreError) as refused:
        signs(config)
    assert str(refused.value) == (
        f"commit.gpgSign is {shown_value(value or '')} in git's config, which git reads as neither true nor false, "
        "and stops on: set it to true or false (git config commit.gpgSign true), or remove it (git config --unset "
        "commit.gpgSign).")


def test_the_files_a_config_includes_are_found_as_git_resolves_them(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """What a warm server watches for who commits and signing beyond the files git reads itself:
    ``~`` is HOME, a relative path is from the including file's folder, quotes, escapes and
    comments read as git reads them, any condition of an ``includeIf``, includes of includes,
    each once; a section of another name, or a file that is not there, adds nothing."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "config").write_text(
        '[include]\n\tpath = ~/team.inc\n\tPath = "sub/with \\"quote\\".inc" # a comment\n'
        '[includeIf "gitdir:~/work/"] path = ../elsewhere.inc ; another\n'
        '[core]\n\tpath = not-an-include\n[INCLUDE]\n\tpath = sub/next.inc\n')
    (tmp_path / "sub" / "next.inc").write_text("[include]\n\tpath = ../config\n\tpath = deeper.inc\n")
    assert config.included([str(tmp_path / "config")]) == [
        str(tmp_path / "home" / "team.inc"), str(tmp_path / 'sub/with "quote".inc'), str(tmp_path / "../elsewhere.inc"),
        str(tmp_path / "sub/next.inc"), str(tmp_path / "sub/deeper.inc")]
