"""What ``slayer-kb review`` reports: the memories, catalog files and sessions a branch changed,
and its markdown for a pull request (ops/history.py makes it)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from .text import clip, counted

# How one side took in a memory the other side added first, so that both hold it under commits of
# their own (``revisions.taken_from``): the base from the branch, or the branch from the base.
SQUASHED = "(a squash or rebase merge, under commits of its own)"
# What a memory the branch soft-deleted or restored is listed with, as removed or added.
SOFT_DELETED = "soft-deleted: its file stays, and no search shows it"
RESTORED = "restored from a soft delete"
PICKED = "(a cherry-pick, a squash or a copy, under commits of its own)"


@dataclass
class MemoryChange:
    id: str
    status: str  # added | changed | relinked | removed | renamed | taken in
    label: str = ""
    entities: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    entities_added: list[str] = field(default_factory=list)
    entities_removed: list[str] = field(default_factory=list)
    learning_diff: str | None = None
    old_id: str | None = None
    # What the reviewer must know beyond the diff: a squash-merged memory the base has edited,
    # forgotten or renamed since (ops/history.py ``_taken_in``).
    note: str | None = None
    # Of one the base holds already: the branch took it in from the base, not the base from it.
    picked: bool = False
    # The side whose file does not read as a memory (a YAML or schema error): "head", "base" or
    # "both". Listed all the same, with ``note`` saying so: a branch that breaks a memory changes it.
    unreadable: str | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"id": self.id, "label": self.label}
        if self.status in ("added", "removed", "taken in"):
            data["entities"] = self.entities
            if self.fields:  # a soft delete or a restore that changed more: those edits too
                data.update(fields=self.fields, entities_added=self.entities_added,
                            entities_removed=self.entities_removed, learning_diff=self.learning_diff)
        else:
            data.update(fields=self.fields, entities_added=self.entities_added,
                        entities_removed=self.entities_removed, learning_diff=self.learning_diff)
        if self.old_id is not None:
            data["old_id"] = self.old_id
        if self.note is not None:
            data["note"] = self.note
        if self.unreadable is not None:
            data["unreadable"] = self.unreadable
        if self.status == "taken in":  # which side took it in from the other, as the markdown says
            data.update(taken_in_by="head" if self.picked else "base", how=(PICKED if self.picked else SQUASHED)[1:-1])
        return data


@dataclass
class Review:
    base: str
    head: str
    merge_base: str = ""
    added: list[MemoryChange] = field(default_factory=list)
    changed: list[MemoryChange] = field(default_factory=list)
    relinked: list[MemoryChange] = field(default_factory=list)
    removed: list[MemoryChange] = field(default_factory=list)
    renamed: list[MemoryChange] = field(default_factory=list)
    # Memories the branch added that the base took in already (a squash or rebase merge of an
    # earlier pull request), left as the base has them: no change of the branch's.
    taken_in: list[MemoryChange] = field(default_factory=list)
    catalog: dict[str, list[str]] = field(default_factory=dict)
    catalog_files: list[dict[str, str]] = field(default_factory=list)  # {status, path[, old_path]}
    sessions: list[dict[str, Any]] = field(default_factory=list)  # sessions.review_entry
    problems: list[str] = field(default_factory=list)
    # What the reader should know of the comparison itself (a HEAD behind BASE: arguments swapped?).
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "base": self.base,
            "head": self.head,
            "merge_base": self.merge_base,
            **{name: [c.to_json() for c in getattr(self, name)]
               for name in ("added", "changed", "relinked", "removed", "renamed", "taken_in")},
            "catalog": self.catalog,
            "catalog_files": self.catalog_files,
            "sessions": self.sessions,
            "problems": self.problems,
            "warnings": self.warnings,
        }

    def markdown(self) -> str:
        return render_review(self)

def render_review(r: Review) -> str:
    total = len(r.added) + len(r.changed) + len(r.relinked) + len(r.removed) + len(r.renamed)
    lines = [f"## Knowledge base changes ({_md(r.base)}...{_md(r.head)})", ""]
    counts = [f"{len(r.added)} added", f"{len(r.changed)} changed", f"{len(r.relinked)} re-linked",
              f"{len(r.removed)} removed"]
    if r.renamed:
        counts.append(f"{len(r.renamed)} renamed")
    if r.taken_in:
        counts.append(f"{len(r.taken_in)} already on {_md(r.base)}")
    lines.append(("Memories: " + ", ".join(counts) + ".") if total or r.taken_in else "No memory changed.")
    if r.sessions:
        kinds = [k for k in ("added", "changed", "renamed", "removed") if any(e["status"] == k for e in r.sessions)]
        prompts = sum(len(e["prompts_added"]) for e in r.sessions)
        lines.append("Sessions: " + ", ".join(f"{sum(e['status'] == k for e in r.sessions)} {k}" for k in kinds)
                     + f"; {prompts} prompt{'' if prompts == 1 else 's'} added.")

    def section(title: str, items: list[str]) -> None:
        if items:
            lines.extend(["", f"### {title}", "", *items])

    def entity_list(entities: list[str]) -> str:
        return "entities: " + ", ".join(map(_code, entities)) if entities else "no entities"

    def noted(c: MemoryChange) -> str:
        return f"; {_md(c.note)}" if c.note else ""

    def unread(c: MemoryChange) -> str:
        """A memory whose file does not read on one side: the other side's label, if any, and why."""
        return f"{_md(c.label)} ({_md(c.note or '')})" if c.label else _md(c.note or "")

    def also(c: MemoryChange) -> str:
        """A soft delete's or a restore's other edits, named as an edit's are."""
        return f"; also changed: {', '.join(c.fields)}" if c.fields else ""

    section("Warnings", [f"- {_md(w)}" for w in r.warnings])  # of the comparison: read before its lists
    section("Added", [line for c in r.added for line in [
        f"- **{_md(c.id)}**: " + (unread(c) if c.unreadable else
                                  f"{_md(c.label)} ({entity_list(c.entities)}{noted(c)}{also(c)})"),
        *(_edits(c) if c.fields else [])]])
    changed_lines: list[str] = []
    for c in r.changed + r.renamed:
        head = f"- **{_md(c.id)}**" + (f" (was {_md(c.old_id)})" if c.old_id else "") + ": "
        if c.unreadable:
            changed_lines.append(head + unread(c))
            continue
        head += _md(c.label)
        if c.fields:
            head += f" (changed: {', '.join(c.fields)}{noted(c)})"
        changed_lines.append(head)
        changed_lines.extend(_edits(c))
    section("Changed", changed_lines)
    relinked_lines: list[str] = []
    for c in r.relinked:
        relinked_lines.append(f"- **{_md(c.id)}**: {_md(c.label)}" + (f" ({_md(c.note)})" if c.note else ""))
        relinked_lines.extend(_entity_moves(c))
    section("Re-linked", relinked_lines)
    section("Removed", [line for c in r.removed for line in [
        f"- **{_md(c.id)}**: " + (unread(c) if c.unreadable else _md(c.label) + (f" ({_md(c.note)}{also(c)})" if c.note else "")),
        *(_edits(c) if c.fields else [])]])
    section(f"Already on {_md(r.base)}", [
        f"- **{_md(c.id)}**: {_md(c.label)} ({entity_list(c.entities)}; "
        + (f"taken in from {_md(r.base)} {PICKED}" if c.picked else "taken in by a squash or rebase merge")
        + "; unchanged since" + (f", but {_md(c.note)}" if c.note else "") + ")" for c in r.taken_in])
    catalog_lines = [
        f"- {f['status']} {_code(f['path'])}" + (f" (was {_code(f['old_path'])})" if "old_path" in f else "")
        for f in r.catalog_files
    ]
    for key, values in r.catalog.items():
        if key == "priority":
            catalog_lines.append(f"- priority: {values[0]} -> {values[1]}")
        else:
            catalog_lines.append(f"- {key.replace('_', ' ')}: " + ", ".join(map(_code, values)))
    section("Catalog", catalog_lines)
    section("Sessions", review_lines(r.sessions))
    section("Problems", [f"- {_md(p)}" for p in r.problems])
    return "\n".join(lines) + "\n"


def _edits(c: MemoryChange) -> list[str]:
    """An edited memory's lines under its own: the entities it gained and lost, the word diff."""
    out = _entity_moves(c)
    if c.learning_diff is not None:
        fence = "`" * max(3, _longest_run(c.learning_diff) + 1)  # a line of ``` in it closes no fence
        out.extend(["", f"  {fence}diff", *("  " + line for line in c.learning_diff.splitlines()), f"  {fence}"])
    return out


def _entity_moves(c: MemoryChange) -> list[str]:
    out = []
    if c.entities_added:
        out.append("  - entities added: " + ", ".join(map(_code, c.entities_added)))
    if c.entities_removed:
        out.append("  - entities removed: " + ", ".join(map(_code, c.entities_removed)))
    return out


# An @mention GitHub would notify (not an email address's @).
_MENTION = re.compile(r"(?<![\w`])@[\w-]+(?:/[\w-]+)?")


def _md(text: str) -> str:
    """A branch's text (a title, a problem, a session's id) as markdown that shows it as it is, on
    one line: the review is posted as a pull request's comment, where a title ending in '<!--' hid
    the rest (the failed validation below it too), and '@team' notified the team. No HTML, code
    span, link or emphasis of its own; a mention as code, which notifies no one."""
    text = re.sub(r"([\\`*<\[\]])", r"\\\1", text.replace("\n", " "))
    return _MENTION.sub(lambda mention: f"`{mention.group()}`", text)


def _longest_run(text: str) -> int:
    return max(map(len, re.findall("`+", text)), default=0)


def _code(text: str) -> str:
    """``text`` as one inline code span, whatever backticks it holds."""
    fence = "`" * (_longest_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def review_lines(entries: list[dict[str, Any]]) -> list[str]:
    """The review's markdown lines for its sessions."""
    lines = []
    for e in entries:
        what = []
        if e["status"] == "added":
            what.append("started" + (f" in {_md(e['project'])}" if e["project"] else ""))
        elif e["status"] == "removed":
            what.append("removed")
        elif e.get("old_id"):
            what.append(f"renamed from {_md(e['old_id'])}")
        if e["prompts_added"]:
            what.append(counted(len(e["prompts_added"]), "prompt") + " added")
        if e["prompts_removed"]:
            what.append(counted(len(e["prompts_removed"]), "prompt") + " removed")
        if "ended_at" in e["fields"] or (e["status"] == "added" and e["ended_at"]):
            what.append("ended")
        other = [f for f in e["fields"] if f != "ended_at"]
        if other:
            what.append("changed: " + ", ".join(other))
        lines.append(f"- **{_md(e['id'])}**: {'; '.join(what) or 'reformatted'}")
        lines.extend(f"  - prompt: {_md(clip(' '.join(text.split()), 200))}" for text in e["prompts_added"])
        if e["summary"] and ("summary" in e["fields"] or e["status"] == "added"):
            lines.append(f"  - summary: {_md(clip(' '.join(e['summary'].split()), 200))}")
    return lines


_TOKEN = re.compile(r"\s+|[^\s]+")


def word_diff(old: str, new: str) -> str:
    """``git diff --word-diff=plain`` style: ``[-removed-]{+added+}``, unchanged words as they are."""
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append("".join(a[i1:i2]))
            continue
        if op in ("delete", "replace"):
            out.append("[-" + "".join(a[i1:i2]) + "-]")
        if op in ("insert", "replace"):
            out.append("{+" + "".join(b[j1:j2]) + "+}")
    return "".join(out)
