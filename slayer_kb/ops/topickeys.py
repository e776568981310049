"""A topic key (in one project and scope) held by more than one live memory: Engram's upsert then
revises only the newest, and the other is stranded.

``validate`` reports such a pair among the files it checks (``topic_key_twins``). A pair a
branch's own change makes where it meets another revision is named at the branch's memory, with
the fix: a memory new on the branch or one it gave the key to (``keys_given``: a save, an
``update --topic-key``, a plain-git commit alike) beside another holder. ``sync`` checks it with
the upstream in, before it pushes (``keys_held_on_top``); ``validate --against REF`` and ``review
REF`` check it against what REF added or changed since the branch parted from it
(``topic_keys_taken``).

The key, project and scope are read from the keys' lines (the canonical form writes them
top-level), so that a large KB is not parsed twice; a value YAML reads otherwise than its line
(escapes in a double-quoted scalar, ``''`` in a single-quoted one, a folded or multi-line one, a
comment) is read from the file parsed. The files a search for a key's holders opens are those
``git grep`` finds holding its text, or one of those forms (``_holders_at``).
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import yaml

from ..core import yamlio
from ..core.fileio import read_regular
from ..core.ids import id_sort_key
from ..core.locate import MEMORIES_DIR, id_of_path, memory_path
from ..core.memory import MAX_FILE_BYTES, alias_line
from ..core.problems import Problem, shell_word, shown
from ..store.repo import GitStore
from .snapshot import blobs_at
from .teamchecks import Branch

Topic = tuple[str, str, str]  # (topic key, project, scope) of a live memory
_FIELDS = ("topic_key", "project", "scope", "deleted_at")
# Each field's line, and the next line when it goes on indented (a value YAML folds over lines).
_TOPIC_FIELDS = re.compile(r"^(topic_key|project|scope|deleted_at): *(.*)$(\n[ \t]+\S)?", re.MULTILINE)
# A value its line gives as YAML reads it: quoted without escapes, or plain without a comment and
# not starting with an indicator (a block scalar's '>' or '|', a tag, an anchor, a flow collection).
_AS_WRITTEN = re.compile(r"""(?:"[^"\\]*"|'[^']*'|[^\s"'>|&*!{\[#%@`][^#]*?)? *""")
# How a key's line starts when the key may be written otherwise than as typed (quoted, so maybe
# with escapes or '', a block scalar, spaces or a tab YAML allows): a file holding one is read
# by a search for the key's holders too. The canonical form quotes a key only when YAML needs it.
_REWRITTEN_KEY = ('topic_key: "', "topic_key: '", "topic_key: >", "topic_key: |", "topic_key:  ", "topic_key:\t")


def topic_key_holders(root: Path, store: GitStore) -> dict[Path, str]:
    """The memory files of the KB at ``root`` whose text names a topic key, found by ``git grep``
    (tracked files as they are in the work tree) without reading 10,000 files in Python; the
    caller adds the untracked ones."""
    out = store.git("grep", "-l", "-z", "-F", "topic_key:", "--", store.repo_path(MEMORIES_DIR + "/"), check=False).stdout
    paths = (root / p[len(store.prefix):] for p in out.decode("utf-8", "surrogateescape").split("\0") if p)
    return {path: shown(path) for path in paths}


def topic_key_twins(files: dict[Path, str], run: str) -> list[Problem]:
    """A topic key held by more than one live memory among ``files``. ``run``: ``slayer-kb`` as
    the user runs it (``problems.command``)."""
    holders: dict[Topic, list[str]] = {}
    for path, name in files.items():
        where = topic_of(path)
        if where is not None:
            holders.setdefault(where, []).append(name)
    problems = []
    for (key, project, _scope), names in sorted(holders.items()):
        if len(names) < 2:
            continue
        ids = ", ".join(Path(n).stem for n in sorted(names))
        problems += [Problem(
            name, 1,
            f"topic_key '{key}'{_in(project)} is held by {len(names)} memories ({ids}); a save under the "
            "key revises only the newest. Keep one: merge their learnings into it and forget the others "
            f"('{run} forget ID'), or give each its own topic_key",
        ) for name in sorted(names)]
    return problems


def keyed(files: dict[Path, str]) -> dict[str, tuple[Topic, str]]:
    """The live memories among ``files`` (path -> shown name) that hold a topic key: id -> (its
    topic, shown name)."""
    return {path.stem: (where, name) for path, name in files.items() if (where := topic_of(path)) is not None}


def keys_given(store: GitStore, since: str, mine: dict[str, tuple[Topic, str]]) -> dict[str, bool]:
    """Of the memories ``mine`` (``keyed``), those that did not hold their topic at ``since``:
    id -> whether the memory is new since. One that held it there made no pair the branch can be
    asked to mend (a pair older code made must not block edits to either memory, as
    ``observations.check_key_change`` has it)."""
    texts = blobs_at(store, [(since, memory_path(i)) for i in mine])
    return {i: text is None for i, text in zip(mine, texts, strict=True)
            if text is None or _topic_of_blob(text) != mine[i][0]}


def keys_held_on_top(store: GitStore, other: str, mine: dict[str, tuple[Topic, str]], run: str) -> list[Problem]:
    """Sync's check before it pushes, the upstream ``other`` in: a topic key a memory this branch
    changed on top of ``other`` (``mine``, ``keyed``) holds since, which another memory at HEAD
    holds too (the upstream's, or one of the branch's it left alone). A pair of ``mine`` alone is
    left to ``topic_key_twins``, which validating them runs."""
    given = keys_given(store, other, mine)
    holders = _holders_at(store, "HEAD", {mine[i][0] for i in given}) if given else {}
    problems = []
    for memory_id in sorted(given, key=id_sort_key):
        where, name = mine[memory_id]
        held = holders.get(where, [])
        if any(i not in mine for i in held):
            problems.append(Problem(name, 1, _held_twice(where, {memory_id, *held}, memory_id, "", run)))
    return problems


def topic_keys_taken(compared: Branch, mine: dict[str, tuple[Topic, str]], run: str, head: bool = False) -> list[Problem]:
    """Topic keys the branch gave its memories since it parted from the revision compared with
    (``mine``, ``keyed``; ``keys_given``) that another memory holds once the two are merged: one that
    revision added or changed since (and, with ``head``, one the branch holds at its head: review
    reads no work tree, whose holders ``topic_key_twins`` finds for validate). A memory new on the
    branch beside the revision's is folded by ``slayer-kb merge REF``; one it gave the key to, and
    one beside its own, needs a person."""
    store, base, tip = compared.store, compared.base, compared.head
    given = keys_given(store, base, mine) if base is not None and tip is not None else {}
    if not given:
        return []
    assert base is not None and tip is not None
    topics = {mine[i][0] for i in given}
    out = store.git("diff", "--name-status", "-z", "--no-renames", "--diff-filter=AM", base, compared.against_sha,
                    "--", store.repo_path(MEMORIES_DIR + "/")).stdout.decode("utf-8", "surrogateescape").split("\0")
    # The branch's own versions of memories it changed are its to merge (or to stop on).
    theirs = {store.repo_path(memory_path(i)): (i, "added" if status == "A" else "changed")
              for status, path in zip(out[::2], out[1::2], strict=False)
              if (i := id_of_path(path[len(store.prefix):])) is not None and i not in mine}
    there = store.objects.blobs_at(store.objects.tree_of(compared.against_sha), theirs)
    here = store.objects.blobs_at(store.objects.tree_of(tip), theirs)
    texts = store.objects.read_many("blob", {blob for blob in there.values() if blob})
    held = {path: where for path, blob in there.items() if blob and (where := _topic_of_blob(texts[blob])) in topics}
    texts = store.objects.read_many("blob", {blob for path in held if (blob := here.get(path))})
    holders: dict[Topic, dict[str, str]] = {}  # topic -> holder -> what the revision did to it
    for path, where in held.items():
        # One the branch holds under the key too is the branch's holder (head's, or the work tree's).
        if (blob := here.get(path)) is None or _topic_of_blob(texts[blob]) != where:
            holders.setdefault(where, {})[theirs[path][0]] = theirs[path][1]
    # A holder this branch added itself (REF took it in by a squash or rebase merge) is its own
    # memory, not a second holder: forgotten here, the merge keeps it forgotten.
    own = compared.same_memories([memory_path(i) for ids in holders.values() for i in ids])
    holders = {where: {i: did for i, did in ids.items() if memory_path(i) not in own} for where, ids in holders.items()}
    for where, ids in _holders_at(store, tip, topics).items() if head else ():
        holders.setdefault(where, {}).update({i: "" for i in ids if i not in holders.get(where, {})})
    problems = []
    for memory_id, new in sorted(given.items(), key=lambda item: id_sort_key(item[0])):
        where, name = mine[memory_id]
        others = {i: did for i, did in holders.get(where, {}).items() if i != memory_id}
        if not others:
            continue
        ids = sorted(others, key=id_sort_key)
        theirs_only = all(others.values())
        if new and theirs_only:
            other = ", ".join(ids)
            fix = compared.fix(f"merge {shell_word(compared.against)}")
            problems.append(Problem(name, 1, (
                f"topic_key '{where[0]}'{_in(where[1])} is also held by memory {other} that {compared.against} "
                f"{' or '.join(sorted(set(others.values())))} since this branch parted from it; merged, the key would be "
                f"held twice. Run '{fix}': it folds this memory into {other} (one memory, both sides' revisions)")))
            continue
        came = [i for i in ids if others[i]]
        merged = (f" once merged with {compared.against}, which {' or '.join(sorted({others[i] for i in came}))} "
                  f"memory {', '.join(came)} since this branch parted from it") if came else ""
        problems.append(Problem(name, 1, _held_twice(where, {memory_id, *ids}, memory_id, merged, run)))
    return problems


def holds_a_topic_key(files: dict[Path, str]) -> bool:
    """Whether a live memory among ``files`` holds a topic key: only then can a branch compared
    with its upstream have made a key held twice (a key twice in files it left alone was so
    where it parted, and was checked there)."""
    return any(topic_of(path) is not None for path in files)


def topic_of(path: Path) -> Topic | None:
    """The topic of the live memory file ``path``, None without a key (or for no memory file)."""
    if path.suffix != ".yaml" or path.parent.name != MEMORIES_DIR:
        return None
    try:
        # Only a regular file, and not one too large to be a memory (check_file reports both).
        text = read_regular(path, limit=MAX_FILE_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return topic_in(text)


def topic_in(text: str) -> Topic | None:
    """The topic of a live memory's text, None without a key."""
    if "topic_key:" not in text:
        return None
    lines = _TOPIC_FIELDS.findall(text)
    if all(_AS_WRITTEN.fullmatch(value) and not more for _key, value, more in lines):
        found = {key: value.strip().strip("'\"") for key, value, _more in lines}
    elif (parsed := _parsed(text)) is None:
        return None
    else:
        found = parsed
    # NFC as a read of the file gives them (memory.COMPOSED_KEYS): a key typed on macOS is the same key.
    found = {key: unicodedata.normalize("NFC", value) for key, value in found.items()}
    if not found.get("topic_key") or "deleted_at" in found:
        return None
    return found["topic_key"], found.get("project", ""), found.get("scope", "project")


def _parsed(text: str) -> dict[str, str] | None:
    """The topic's fields of a memory's text as YAML reads them (``str`` of a number or a time, as
    the lines give them), those it holds; None for a text that is no memory file's."""
    if alias_line(text) is not None:  # refused by every reader, never expanded
        return None
    try:
        data = yamlio.load(text)
    except (yaml.YAMLError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    return {key: str(data[key]) for key in _FIELDS if data.get(key) is not None}


def _topic_of_blob(data: bytes) -> Topic | None:
    return topic_in(data.decode("utf-8", "replace"))


def _holders_at(store: GitStore, rev: str, topics: set[Topic]) -> dict[Topic, list[str]]:
    """The live memories (ids) holding each of ``topics`` at commit ``rev``: only the files whose
    text holds one of the keys (composed or not) are read, found by ``git grep`` there (``rev:path``
    a line), not every memory holding a key."""
    keys = sorted({form for key, _project, _scope in topics for form in (key, unicodedata.normalize("NFD", key))})
    # A plain value YAML folds over lines keeps its first line's words: its first word is looked for.
    words = {key.split(" ", 1)[0] for key in keys}
    out = store.git("grep", "-l", "-z", "-F", *(word for key in [*sorted(words), *_REWRITTEN_KEY] for word in ("-e", key)),
                    rev, "--", store.repo_path(MEMORIES_DIR + "/"), check=False).stdout.decode("utf-8", "surrogateescape")
    ids = [i for p in out.split("\0") if p and (i := id_of_path(p[len(rev) + 1 + len(store.prefix):])) is not None]
    found: dict[Topic, list[str]] = {}
    for memory_id, text in zip(ids, blobs_at(store, [(rev, memory_path(i)) for i in ids]), strict=True):
        if text is not None and (where := _topic_of_blob(text)) in topics:
            found.setdefault(where, []).append(memory_id)
    return found


def _held_twice(where: Topic, ids: set[str], memory_id: str, merged: str, run: str) -> str:
    """The problem of ``memory_id``, to which the branch gave the topic ``where`` that the others
    of ``ids`` hold (``merged``: where they meet, when not on the branch), with its fix."""
    return (f"topic_key '{where[0]}'{_in(where[1])} is held by {len(ids)} memories "
            f"({', '.join(sorted(ids, key=id_sort_key))}){merged}: this branch gave it to memory {memory_id}, and a "
            f"save under the key revises only the newest. Keep one: give memory {memory_id} another key or none "
            f"('{run} update {shell_word(memory_id)} --topic-key NEW', '' for none), or forget one of them "
            f"('{run} forget ID')")


def _in(project: str) -> str:
    return f" in project '{project}'" if project else ""
