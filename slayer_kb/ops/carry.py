"""What one side did to a memory the other side's fold took away, carried to the memory kept
(``follow_folds``), at a stop of ``slayer-kb merge`` or of a ``slayer-kb rebase`` pick; the words
a stop says of it (``held_words``); and, at a merge's stop that holds a rename's edit, the fold's
record kept in the merge's own commit (``record_held_renames``)."""

from __future__ import annotations

import contextlib

from ..core.errors import KBError
from ..core.locate import MEMORIES_DIR, id_of_path, memory_link, memory_path
from ..core.memory import loads
from ..core.merging import fold_subject
from ..store import mergedriver
from ..store.foldlog import folded_to, held_folds
from ..store.gitenv import LITERAL_PATHS
from ..store.renames import renames_between
from ..store.repo import GitStore
from .folds import carried_upserts
from .renumber import renumbered_text


def follow_folds(store: GitStore, parted: str, tips: tuple[str, str], names: tuple[str, str],
                 followed: dict[str, dict[str, str]], held_renames: dict[str, tuple[str, str]] | None = None) -> bool:
    """Carry through each side's folds since ``parted`` (``foldlog.folded_to``; ``tips``: this
    branch, REF: a merge's HEAD and MERGE_HEAD, or a rebase's HEAD and REBASE_HEAD, git's stages 2
    and 3; ``names``: theirs in the words said, "this branch" and REF) what the other side did since to a memory the fold took away: git knows no fold,
    and pairs the folded file with the kept one only where their texts are alike (a rename), else
    sees a forget. An edit lands on the memory kept (followed to where the folding side renamed
    it) field by field from the folded one's version at ``parted`` (``mergedriver.carried``;
    held as two whole memories, in markers naming the fold, where the memory kept holds a field
    the edit changed another way), and so does a rename's, with or without an edit (its new file
    stays, for ``folds.fold_renamed`` to fold after the merge's commit; held, it goes); a forget,
    hard or soft, leaves the memory kept as the folding side holds it, the memory the team holds
    with that side's own revisions (forgetting it too is the person's choice, which the reply
    names). A folded memory the folding side holds again (brought back) is git's to merge. Whether any was
    found, ``followed`` given {folded id: {kept, change (forgot, edited, renamed), renamed (the
    id the other side gave it), folded_on (either of ``names``)}}; ``held_renames`` given each
    held rename's new id -> (the id kept, its blob on the folding side), for ``record_held_renames``."""
    here_name, ref = names
    lines: list[str] = []
    held: dict[str, tuple[tuple[str, str], tuple[str, str]]] = {}  # each path held: its stages 2 and 3, their labels
    paths: dict[str, str] = {}
    found: dict[str, dict[str, str]] = {}
    objects = store.objects
    # A held rename's merge whose message the person wrote over still folded the new id (``held_folds``).
    folds = [{**held_folds(store, parted, tip), **folded_to(store, parted, tip)} for tip in tips]
    for folding in (0, 1):
        # A fold both sides made (two reviewers' merges of one branch) is no change to carry.
        moved = {old: new for old, new in folds[folding].items() if old not in folds[1 - folding]}
        renamed = renames_between(store, parted, tips[1 - folding]) if moved else {}
        # The memory kept, renamed since on the folding side: the change follows it there.
        ends = renames_between(store, parted, tips[folding]) if moved else {}
        moved = {old: ends.get(new, new) for old, new in moved.items()}
        paths.update({i: store.repo_path(memory_path(i)) for i in {*moved, *moved.values(), *renamed.values()}})
        was, here, there = (objects.blobs_at(objects.tree_of(c), paths.values())
                            for c in (parted, tips[folding], tips[1 - folding]))
        for old, new in moved.items():
            base, kept, edit = was[paths[old]], here[paths[new]], there[paths[renamed.get(old, old)]]
            if (base is None or kept is None or here[paths[old]] is not None or (edit == base and old not in renamed)
                    or there[paths[new]] not in (None, kept)):
                # Not the other side's (added since), the memory kept gone, the folded one on the folding
                # side again (brought back: git merges it), left as it was there, or the memory kept
                # changed there too (the other side holds it: git merges it)
                continue
            carry = carried_upserts(store, parted, (tips[folding], new), (tips[1 - folding], renamed.get(old, old)),
                                    paths[new], (base, kept, edit)) if edit is not None else None
            forgot = edit is None or (carry is not None and carry.forgot)
            clean = forgot or (carry is not None and carry.kept == carry.edited)
            lines.append(f"0 {'0' * 40}\t{paths[old]}\n")
            if old in renamed and not forgot:
                # Held, the rename's file goes: its edit is in the memory kept's stop, and the file
                # committed beside it would be folded again from nothing over the person's choice.
                lines.append(f"0 {'0' * 40}\t{paths[renamed[old]]}\n" + (
                    f"100644 {edit} 0\t{paths[renamed[old]]}\n" if clean else ""))
            lines.append(f"0 {'0' * 40}\t{paths[new]}\n")
            named = ref if folding else here_name
            if clean:
                lines.append(f"100644 {kept if forgot or carry is None else carry.kept} 0\t{paths[new]}\n")
            else:
                # git's stages 2 and 3: this branch's, REF's; each a whole memory, so that either step keeps one
                assert edit is not None  # not forgot
                kept_side, edit_side = (kept, edit) if carry is None else (carry.kept, carry.edited)
                sides = (kept_side, edit_side) if folding == 0 else (edit_side, kept_side)
                lines += [f"100644 {blob} {n}\t{paths[new]}\n" for n, blob in enumerate((base, *sides), 1)]
                labels = (f"{here_name}: {new}", f"{ref}: {old}, which {named} merged into {new}")
                held[paths[new]] = (sides, labels if folding == 0 else (
                    f"{here_name}: {old}, which {named} merged into {new}", f"{ref}: {new}"))
                if old in renamed and held_renames is not None:
                    held_renames[renamed[old]] = (new, kept)
            change = "forgot" if forgot else "renamed" if old in renamed else "edited"
            found[old] = {"kept": new, "change": change, "folded_on": named,
                          **({"renamed": renamed[old]} if change == "renamed" else {})}
    if not lines:
        return False
    # ``followed`` may hold an earlier attempt's (a sync's retry): only this call's files are touched.
    followed.update(found)
    store.git_writing_index("update-index", "--index-info", input="".join(lines).encode())
    for old, f in found.items():
        (store.top / paths[old]).unlink(missing_ok=True)  # git's conflict left the edit there
        renamed_path = [paths[f["renamed"]]] if "renamed" in f else []
        if paths[f["kept"]] in held:
            for path in renamed_path:
                (store.top / path).unlink(missing_ok=True)
            continue
        for path in (paths[f["kept"]], *renamed_path):
            store.git_writing_index("checkout", "--", path, env=LITERAL_PATHS)
    for path, (sides, labels) in held.items():  # both versions, in git's markers naming the fold
        (store.top / path).write_bytes(mergedriver.both_sides(store, sides, labels))
    return True


def forgotten_folds(store: GitStore, parted: str, tips: tuple[str, str]) -> set[tuple[str, str]]:
    """Each fold either side of ``tips`` made since ``parted`` whose memory kept that side has
    soft-forgotten since, as (folded id, kept id): git's rename guess pairs the two files where
    their texts are alike, and the driver would take the other side's edit of the folded memory
    as a later revision under the key, which brings the memory kept back. Not paired, the edit
    stops at ``follow_folds`` as a forget against an edit (``guesses.rename_detection``)."""
    found: set[tuple[str, str]] = set()
    for tip in tips:
        folds = folded_to(store, parted, tip)
        if not folds:
            continue
        paths = {new: store.repo_path(memory_path(new)) for new in folds.values()}
        blobs = store.objects.blobs_at(store.objects.tree_of(tip), paths.values())
        texts = store.objects.read_many("blob", {b for b in blobs.values() if b is not None})
        for old, new in folds.items():
            blob = blobs[paths[new]]
            with contextlib.suppress(KBError, UnicodeDecodeError):
                if blob is not None and loads(texts[blob].decode("utf-8"), new).deleted_at is not None:
                    found.add((old, new))
    return found


def held_words(store: GitStore, followed: dict[str, dict[str, str]], paths: list[str], names: tuple[str, str]) -> str:
    """Of ``followed`` (``follow_folds``'), each fold whose memory kept is among ``paths`` (a stop's,
    repository-relative): the edit of the folded id held there, the file naming an id the side
    that edited never held. ``names``: the two sides' names, as ``follow_folds`` was given them
    (a merge's "this branch" and REF, a rebase's upstream and "your commits"); the side that
    edited is the one that did not fold."""
    def editor(f: dict[str, str]) -> str:
        other = names[1] if f["folded_on"] == names[0] else names[0]
        return other.capitalize() if other in ("this branch", "your commits") else other  # a ref as it is spelled

    return "".join(
        f" {editor(f)} {f['change']} {old}, which "
        f"{f['folded_on']} had merged into {f['kept']}: its edit is held at {memory_path(f['kept'])} as an "
        f"edit of {f['kept']}." for old, f in followed.items() if store.repo_path(memory_path(f["kept"])) in paths)


def kept_paths(store: GitStore, followed: dict[str, dict[str, str]]) -> set[str]:
    """The repository paths of the memories kept that ``followed`` (``follow_folds``') names."""
    return {store.repo_path(memory_path(f["kept"])) for f in followed.values()}


def record_held_renames(store: GitStore, held: dict[str, tuple[str, str]]) -> None:
    """For each rename of ``held`` (the other side's new id -> the memory kept, its blob on the
    folding side) whose edit the stop holds at the memory kept: no ``folds.fold_renamed`` commit
    follows the person's ``git commit``, so the merge's commit is the fold's. The links to the new
    id point at the memory kept (staged with the merge, as ``fold_renamed`` would: else
    ``validate`` and the next sync strip them as links to a forgotten memory), and the merge's
    message begins with the fold's subject (``memory: merge kb.retry into 101 (...)``), which
    ``get`` and later merges read."""
    if not held:
        return
    moved = {renamed: kept for renamed, (kept, _blob) in held.items()}
    kept_texts = store.objects.read_many("blob", {blob for _kept, blob in held.values()})
    keys = set()
    for kept, blob in held.values():
        with contextlib.suppress(KBError, UnicodeDecodeError):
            keys.add(loads(kept_texts[blob].decode("utf-8"), kept).topic_key or "")
    # The files that may link a new id (git's index searched, not every memory read), merged (stage 0).
    named = [arg for renamed in moved for arg in ("-e", memory_link(renamed))]
    found = store.git("grep", "--cached", "-l", "-z", "-F", *named, "--", f"{store.repo_path(MEMORIES_DIR)}/",
                      check=False, env=LITERAL_PATHS).stdout.decode("utf-8", "surrogateescape").split("\0")
    staged = store.git("ls-files", "-s", "-z", "--", *filter(None, found), env=LITERAL_PATHS).stdout.decode(
        "utf-8", "surrogateescape") if any(found) else ""
    blobs = {path: info.split()[1] for info, _, path in (e.partition("\t") for e in staged.split("\0") if e)
             if info.split()[2] == "0"}
    texts = store.objects.read_many("blob", set(blobs.values()))
    lines: list[str] = []
    rewritten: list[str] = []
    for path, blob in blobs.items():
        memory_id = id_of_path(path[len(store.prefix):])
        text = texts[blob].decode("utf-8", "replace")
        new_text = renumbered_text(memory_id, text, moved) if memory_id is not None else None
        if new_text is not None:
            lines.append(f"100644 {store.objects.write('blob', new_text.encode())} 0\t{path}\n")
            rewritten.append(path)
    if lines:
        store.git_writing_index("update-index", "--index-info", input="".join(lines).encode())
        store.git_writing_index("checkout", "--", *rewritten, env=LITERAL_PATHS)
    message = store.git_dirs()[0] / "MERGE_MSG"
    why = f"topic {', '.join(sorted(keys - {''}))}" if keys - {""} else "same save"
    message.write_text(f"{fold_subject(moved, why)}\n\n{message.read_text() if message.exists() else ''}")
