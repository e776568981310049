"""Engram's memory rules as pure functions: redaction, normalisation, hashing, topic keys, replies.

The store, CLI and MCP server call these so that every path applies the same rules Engram's
`mem_save` and `mem_suggest_topic_key` apply (see shared/reference/engram-memory.md). Nothing
here touches the disk or the clock, which keeps the rules testable on their own.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

from slayer_kb.core.errors import InvalidInputError
from slayer_kb.core.inputs import blank, check_description
from slayer_kb.core.memory import RECOGNISED_TYPES as RECOGNISED_TYPES  # re-exported: the rules name them
from slayer_kb.core.memory import canonical_type
from slayer_kb.core.text import quoted, shown_value

DEFAULT_TYPE = "manual"
# The longest project or type, and the longest title (a title is shown on one line).
MAX_KEY = 200
MAX_TITLE = 1000

# Wording taken from the mem_save documentation, so help texts match what agents were taught.
TYPE_HELP: dict[str, str] = {
    "decision": "architectural or technical decisions",
    "architecture": "system design, structure, patterns",
    "bugfix": "bug fixes and incident resolutions",
    "pattern": "conventions, guidelines, code patterns",
    "config": "configuration, setup, environment changes",
    "discovery": "technical findings, investigations",
    "learning": "lessons learned, gotchas",
    "manual": "general observations (the default)",
}

TOPIC_KEY_MAX = 120
TOPIC_SEGMENT_MAX = 100
REDACTED = "[REDACTED]"
# The context digest when there is nothing to tell, in Engram's words (ops/digest.py).
EMPTY_CONTEXT = "No previous session memories found.\n"

# Non-greedy and DOTALL so that several tags are each redacted and a tag may span lines; an
# opening tag with no closing tag after it simply never matches, which leaves it untouched.
_PRIVATE_RE = re.compile(r"<private>.*?</private>", re.IGNORECASE | re.DOTALL)
_NON_SLUG_RE = re.compile(r"[^a-z0-9]+")
_NON_ALNUM_RE = re.compile(r"[\W_]+")
# A line break as ``str.splitlines`` takes one; ``\r\n`` is one break.
_LINE_BREAK_RE = re.compile("\r\n|[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


# How an import's commit subject starts (``import_subject``).
IMPORT_PREFIX = "memory: import "


def import_subject(count: int, what: str) -> str:
    """The subject of an import's commit, ``memory: import COUNT WHAT``: import-engram's (WHAT
    ``observations from Engram (FILE)``, which ``is_import`` tells) and import-slayer's (WHAT
    ``memories from SLayer storage FOLDER``, which ``slayersince`` tells)."""
    return f"{IMPORT_PREFIX}{count} {what}"


def is_import(subject: str) -> bool:
    """Whether a commit's subject is an ``import-engram``'s: sync's folds tell an imported record
    (which two clones importing one export both hold) from a save made on each clone."""
    return subject.startswith(IMPORT_PREFIX) and " from Engram (" in subject


def redact_private(text: str, trim: bool = True) -> str:
    """Replace every closed `<private>...</private>` span with `[REDACTED]` and trim the result
    (``trim``; a SLayer note keeps its text as given, a final line break too)."""
    redacted = _PRIVATE_RE.sub(REDACTED, text)
    return redacted.strip() if trim else redacted


def normalize_scope(scope: str | None) -> str:
    """`personal` stays personal; anything else, including nothing, is `project`."""
    if scope is not None and scope.strip().lower() == "personal":
        return "personal"
    return "project"


def scope_filter(scope: str | None) -> str | None:
    """The scope a search or listing keeps to: ``project`` or ``personal`` (any case), None for
    both (not given, or blank). Any other value is refused: taken as ``project``, as a save takes
    it, it would hide the personal memories without a word."""
    if scope is None or not scope.strip():
        return None
    if (said := scope.strip().lower()) in ("project", "personal"):
        return said
    raise InvalidInputError(f"scope {shown_value(scope)} is neither 'project' nor 'personal': give one of them, "
                            "or omit scope for both.")


def scope_warnings(scope: str | None) -> list[str]:
    """What a save or update says of a scope that is neither ``project`` nor ``personal``: Engram
    takes it as ``project`` (``normalize_scope``), and the agent hears so instead of finding out."""
    if scope is None or scope.strip().lower() in ("project", "personal"):
        return []
    return [f"scope {shown_value(scope)} is neither 'project' nor 'personal': saved as 'project'; give 'personal' for "
            "knowledge that holds across projects, or 'project' (the default)."]


def type_warnings(type: str | None) -> list[str]:
    """What a save or update says of a type spelt nearly as one of Engram's (``decison``): kept
    as given, as Engram keeps any other type, a filter on the type meant misses it."""
    if type is None or not type.strip() or canonical_type(type) in RECOGNISED_TYPES:
        return []
    import difflib

    meant = difflib.get_close_matches(type.strip().lower(), RECOGNISED_TYPES, n=1, cutoff=0.75)
    if not meant:
        return []
    return [f"type {shown_value(type)} is not one of Engram's types but looks like '{meant[0]}': saved as given, "
            f"so a filter on '{meant[0]}' misses it; give '{meant[0]}' if that was meant."]


def content_hash(content: str) -> str:
    """sha256 hex of the content lower-cased, whitespace runs collapsed to one space, ends stripped.

    Stripping the ends (as Go's strings.Fields does in Engram) means a trailing newline an editor
    adds does not defeat de-duplication.
    """
    canonical = " ".join(content.lower().split())
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def normalize_topic_key(key: str | None) -> str | None:
    """Trim, lower-case, whitespace runs -> `-`, Unicode NFC, cut to 120 characters; blank -> None."""
    if key is None:
        return None
    return _whole_topic_key(key)[:TOPIC_KEY_MAX] or None


def _whole_topic_key(key: str) -> str:
    # split() with no argument both trims and finds whitespace runs, Unicode spaces included.
    return "-".join(_composed(key).lower().split())


def topic_key_warnings(key: str | None) -> list[str]:
    """What a save or update says of a topic key it cuts (``normalize_topic_key``, as Engram
    does): two keys that share their first 120 characters are then one topic, and the second
    save revises the first one's memory."""
    whole = _whole_topic_key(key) if key is not None else ""
    if len(whole) <= TOPIC_KEY_MAX:
        return []
    return [f"topic_key is {len(whole)} characters long: only its first {TOPIC_KEY_MAX} are kept, and any key that "
            "starts with them is the same topic; use a shorter key."]


def normalize_project(project: str | None) -> str | None:
    """Trimmed, lower-cased and NFC so `My-API` and `my-api ` are one project; blank -> None."""
    if project is None:
        return None
    normalised = _composed(project).strip().lower()
    return normalised or None


def _composed(text: str) -> str:
    """``text`` in Unicode NFC: 'café' typed (é) and 'café' from a macOS file name (e and a
    combining accent) read alike, and were two topic keys (two memories) and two projects."""
    return unicodedata.normalize("NFC", text)


def normalize_type(type: str | None) -> str | None:
    """A type filter trimmed, and one of Engram's types lower-cased, as a write stores them
    (``given_type``); blank -> None (no filter, as a blank project), not a filter no memory matches."""
    return canonical_type(type.strip() if type is not None else "") or None


def given_type(type: str | None) -> str | None:
    """A type a write stores: trimmed, checked (``check_printable``), one of Engram's types in
    its own spelling (``Bugfix`` is ``bugfix``: a type spelled two ways would split a filter and
    the stats), any other kept as given; blank -> None."""
    return check_printable(normalize_type(type), "type")


def given_project(project: str | None) -> str | None:
    """A project a write stores (``normalize_project``), refused when it holds an invisible or
    control character: a right-to-left mark or zero-width space would make two projects that
    read alike, and would reorder the lines that show it."""
    return check_printable(normalize_project(project), "project")


def given_topic_key(key: str | None) -> str | None:
    """A topic key a write stores (``normalize_topic_key``), refused as ``given_project`` is."""
    return check_printable(normalize_topic_key(key), "topic_key")


def check_printable(value: str | None, name: str) -> str | None:
    """``value`` (the field ``name``: a project, topic key or type), refused when it holds a
    character that is not printable text (a space aside), or is longer than MAX_KEY: a key names
    something, the detail goes in the content."""
    if value is not None and len(value) > MAX_KEY:
        raise InvalidInputError(
            f"{name} is {len(value)} characters long; the limit is {MAX_KEY}. Use a short name; "
            "put the detail in the content."
        )
    bad = next((ch for ch in value or "" if not ch.isprintable() and ch != " "), None)
    if bad is not None:
        raise InvalidInputError(
            f"{name} contains U+{ord(bad):04X}, a control or invisible character; write it as "
            "printable text (e.g. 'my-api'), without the character."
        )
    return value


def check_title(title: str) -> str:
    """``title``, refused when longer than MAX_TITLE or of more than one line once trimmed (it is
    one line of every listing and the subject of the save's commit, where a line break showed as
    ``\\x0a`` and a space). Engram keeps such a title; an agent told the fix writes one line."""
    if len(title) > MAX_TITLE:
        raise InvalidInputError(
            f"title is {len(title)} characters long; the limit is {MAX_TITLE}. Keep the title short "
            "and put the detail in the content."
        )
    if breaks := title_breaks(title):
        raise InvalidInputError(
            f"title is one line, and this one breaks at {breaks[0]}: a title heads the memory in "
            "every listing and names it in the commit. Write it on one line; the detail goes in the content."
        )
    return title


def title_breaks(title: str) -> list[str]:
    """The line breaks inside ``title`` once trimmed, each as ``U+000A``, in order (one for
    ``\\r\\n``): a break at either end is trimmed away."""
    return [f"U+{ord(found[0]):04X}" for found in _LINE_BREAK_RE.findall(title.strip())]


def one_line_title(title: str) -> str:
    """``title`` trimmed, each line break inside it a space (``title_breaks``)."""
    return _LINE_BREAK_RE.sub(" ", title.strip())


def title_problem(title: str | None) -> str | None:
    """What ``validate`` and ``edit`` say of a memory file's title that breaks a line, with the
    fix; None for a title on one line."""
    if title is None or not (breaks := title_breaks(title)):
        return None
    return (f"title is one line, and this one breaks at {breaks[0]} (a save refuses it; an import makes each break "
            f"a space): write it on one line, e.g. {one_line_title(title)!r}")


def given_title(title: str) -> str | None:
    """A title a save, an update or an import stores: private spans redacted, trimmed, checked
    (``check_title``); one with nothing visible in it (a zero-width space) is none, as ''
    is (a save refuses it)."""
    title = check_title(redact_private(title))
    return None if blank(title) else title


def given_description(description: object) -> str | None:
    """A description a save or an update stores: private spans redacted, as a title's and a
    learning's are, then checked (``check_description``)."""
    return check_description(redact_private(description) if isinstance(description, str) else description)


def import_title(title: str, memory_id: str, where: str, notes: list[str]) -> str | None:
    """An import's title (``given_title``; import-engram's and import-slayer's), on one line:
    Engram and a hand edit keep a line break a save refuses, and an import that skipped the
    memory for it lost it. The breaks it held (``title_breaks``) are said in ``notes``."""
    redacted = redact_private(title)
    if breaks := title_breaks(redacted):
        notes.append(f"{where}: memory {memory_id}'s title broke a line ({', '.join(dict.fromkeys(breaks))}); "
                     "it is kept on one line, each break a space.")
    return given_title(one_line_title(redacted))


# A type names its family outright; no type appears twice, so lookup order is irrelevant.
_TYPE_FAMILIES: dict[str, str] = {
    **dict.fromkeys(("architecture", "design", "adr", "refactor"), "architecture"),
    **dict.fromkeys(("bug", "bugfix", "fix", "incident", "hotfix"), "bug"),
    "decision": "decision",
    **dict.fromkeys(("pattern", "convention", "guideline"), "pattern"),
    **dict.fromkeys(("config", "setup", "infra", "infrastructure", "ci"), "config"),
    **dict.fromkeys(("discovery", "investigation", "root_cause", "root-cause"), "discovery"),
    **dict.fromkeys(("learning", "learn"), "learning"),
    "session_summary": "session",
}

# Checked in this order as plain substrings, exactly like Engram (so "prefix" does hit "fix").
_KEYWORD_FAMILIES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("bug", "fix", "panic", "error", "crash", "regression", "incident", "hotfix"), "bug"),
    (("architecture", "design", "adr", "boundary", "hexagonal", "refactor"), "architecture"),
    (("decision", "tradeoff", "chose", "choose", "decide"), "decision"),
    (("pattern", "convention", "naming", "guideline"), "pattern"),
    (("config", "setup", "environment", "env", "docker", "pipeline"), "config"),
    (("discovery", "investigate", "investigation", "found", "root cause"), "discovery"),
    (("learned", "learning"), "learning"),
)


def _slug(text: str, limit: int | None = None) -> str:
    slug = _NON_SLUG_RE.sub("-", text.lower()).strip("-")
    if limit is not None:
        # Cutting can land just after a separator; a key ending in "-" looks like a typo.
        slug = slug[:limit].rstrip("-")
    return slug


def _strip_private(text: str) -> str:
    # Private text must not leak into a key that is stored and shown in the clear; dropping the
    # span, and the [REDACTED] a save already wrote for one, keeps "redacted" out of the segment,
    # so mem_save's suggestion (made from its redacted title) is mem_suggest_topic_key's.
    return _PRIVATE_RE.sub(" ", text).replace(REDACTED, " ")


def _topic_family(type_: str, text: str) -> str:
    if type_ in _TYPE_FAMILIES:
        return _TYPE_FAMILIES[type_]
    for keywords, family in _KEYWORD_FAMILIES:
        if any(keyword in text for keyword in keywords):
            return family
    if type_ and type_ != DEFAULT_TYPE:
        # Slugged so that a free-form type cannot put "/" or spaces into the key.
        return _slug(type_) or "topic"
    return "topic"


def suggest_topic_key(type: str | None, title: str | None, content: str | None) -> str:
    """A stable `family/segment` topic key, computed as Engram's mem_suggest_topic_key does.

    The type is trimmed and lower-cased first, so " Bugfix " maps like "bugfix". Closed
    `<private>` spans are ignored, so a suggestion never reveals private text.
    """
    raw_title = title or ""
    raw_content = content or ""
    if blank(raw_title) and blank(raw_content):
        raise InvalidInputError(
            "A topic key needs a title or content, and both are empty: pass --title (preferred) or --content "
            "to derive the key from.",
            tool_message="mem_suggest_topic_key needs a title or content, and both are empty: pass the memory's title "
                         "(preferred) or its content to derive the key from.",
        )
    clean_title = _strip_private(raw_title)
    clean_content = _strip_private(raw_content)
    # Refused as a save refuses it: a family made of an escape or 300 letters is no key.
    type_ = (check_printable((type or "").strip(), "type") or "").lower()
    family = _topic_family(type_, (clean_title + " " + clean_content).lower())

    segment = _slug(clean_title, TOPIC_SEGMENT_MAX)
    if not segment:
        segment = _slug(" ".join(clean_content.split()[:8]), TOPIC_SEGMENT_MAX)
    if not segment:
        segment = "general"
    if segment.startswith(family + "-"):
        segment = segment[len(family) + 1 :]
    if not segment or segment == family:
        segment = "general"
    return f"{family}/{segment}"


def default_session_id(project: str | None) -> str:
    """`manual-save-{project}` (project normalised), or `manual-save` without a project. A
    project too long for it is refused here, by its own name: the user gave no session id."""
    from .session import MAX_SESSION_ID, check_session_id

    normalised = normalize_project(project)
    if not normalised:
        return "manual-save"
    session_id = f"manual-save-{normalised}"
    try:
        return check_session_id(session_id, "session")
    except InvalidInputError:
        most = MAX_SESSION_ID - len("manual-save-")
        raise InvalidInputError(
            f"project is too long to name its default session 'manual-save-PROJECT' ({len(normalised)} "
            f"characters): a project may have at most {most} characters for it (fewer when they are not ASCII "
            "letters and digits, as the session's file name holds at most 255 bytes). Use a shorter "
            "project (--project), or name the session (--session; session_id over MCP)."
        ) from None


def _squash(name: str) -> str:
    # Separators and case are how one project most often ends up under several names.
    return _NON_ALNUM_RE.sub("", name.lower())


def _levenshtein(a: str, b: str) -> int:
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _is_plural_pair(a: str, b: str) -> bool:
    short, long_ = sorted((a, b), key=len)
    return long_ in (short + "s", short + "es")


def _is_close(a: str, b: str) -> bool:
    """Whether two squashed, non-equal names probably mean the same project."""
    if a == b or _is_plural_pair(a, b):
        return True
    short, long_ = sorted((a, b), key=len)
    # A prefix only counts when it carries most of the name: "slayer" ~ "slayer-kb" is a likely
    # split, "api" vs "api-gateway" is likely two real projects.
    if len(short) >= 3 and long_.startswith(short) and len(short) * 2 >= len(long_):
        return True
    # Typos: tolerance grows with length, and tiny names get none, or everything would match.
    allowed = 0 if len(short) < 3 else 1 if len(short) <= 5 else 2
    return _levenshtein(a, b) <= allowed


def similar_projects(name: str, existing: Iterable[str]) -> list[str]:
    """Existing project names that are close to `name` without being the same project.

    Close means equal once case and separators are ignored ("my-api" ~ "myapi"), a plural
    ("analytic" ~ "analytics"), a prefix covering at least half of the longer name, or a small
    edit distance (1 for names up to 5 characters, 2 beyond). Names equal to `name` after
    normalize_project are left out, since they are the same project. The result keeps the
    spelling given in `existing`, without duplicates, closest first (edit distance ignoring
    separators, then edit distance as written, then alphabetically).
    """
    target = normalize_project(name)
    if target is None:
        return []
    target_squashed = _squash(target)
    if not target_squashed:
        return []
    scored: dict[str, tuple[int, int, str]] = {}
    for candidate in existing:
        normalised = normalize_project(candidate)
        if normalised is None or normalised == target or candidate in scored:
            continue
        squashed = _squash(normalised)
        if not squashed or not _is_close(target_squashed, squashed):
            continue
        scored[candidate] = (
            _levenshtein(target_squashed, squashed),
            _levenshtein(target, normalised),
            candidate,
        )
    return sorted(scored, key=scored.__getitem__)


def format_save_reply(title: str, type: str, suggested_topic_key: str | None) -> str:
    """Engram's reply: `Memory saved: "TITLE" (TYPE)`, the title quoted as Go's %q quotes it, then
    the suggested key when there is one."""
    reply = f"Memory saved: {quoted(title)} ({type})"
    if suggested_topic_key:
        reply += f"\nSuggested topic_key: {suggested_topic_key}"
    return reply


def session_summary_title(project: str | None) -> str:
    """`Session summary: PROJECT`; plain `Session summary` without a project.

    Engram would print a dangling "Session summary: "; a placeholder word such as "manual" could
    be mistaken for a project of that name, so the suffix is dropped instead.
    """
    normalised = normalize_project(project)
    return f"Session summary: {normalised}" if normalised else "Session summary"


def session_summary_reply(project: str | None) -> str:
    """Engram's ``mem_session_summary`` reply, `Session summary saved for project "PROJECT"`
    (the project quoted as Go's %q quotes it); plain `Session summary saved` without one."""
    normalised = normalize_project(project)
    return f"Session summary saved for project {quoted(normalised)}" if normalised else "Session summary saved"
