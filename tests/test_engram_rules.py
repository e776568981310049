"""Engram's memory rules (slayer_kb.core.engram): exact values from the reference, plus properties."""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slayer_kb.core.engram import (
    RECOGNISED_TYPES,
    TYPE_HELP,
    content_hash,
    default_session_id,
    format_save_reply,
    normalize_project,
    normalize_scope,
    normalize_topic_key,
    redact_private,
    session_summary_title,
    similar_projects,
    suggest_topic_key,
)
from slayer_kb.core.errors import InvalidInputError, KBError
from slayer_kb.core.inputs import blank

KEY_RE = re.compile(r"^[a-z0-9-]+/[a-z0-9-]+$")


# --- types ----------------------------------------------------------------------------------


def test_recognised_types_match_the_seed() -> None:
    assert RECOGNISED_TYPES == (
        "decision",
        "architecture",
        "bugfix",
        "pattern",
        "config",
        "discovery",
        "learning",
        "manual",
    )


def test_type_help_covers_exactly_the_recognised_types() -> None:
    assert set(TYPE_HELP) == set(RECOGNISED_TYPES)
    assert TYPE_HELP["bugfix"] == "bug fixes and incident resolutions"
    assert all(text and "\n" not in text for text in TYPE_HELP.values())


# --- redaction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key is <private>hunter2</private> ok", "key is [REDACTED] ok"),
        ("key is <PRIVATE>hunter2</Private> ok", "key is [REDACTED] ok"),
        ("a <private>line one\nline two</private> b", "a [REDACTED] b"),
        (
            "<private>one</private> and <private>two</private>",
            "[REDACTED] and [REDACTED]",
        ),
        ("keep <private>unclosed secret", "keep <private>unclosed secret"),
        ("  <private>x</private>  \n", "[REDACTED]"),
        ("  plain text \n", "plain text"),
        ("", ""),
        ("a </private> b <private>", "a </private> b <private>"),
        ("<private><private>a</private>b</private>", "[REDACTED]b</private>"),
    ],
)
def test_redact_private(text: str, expected: str) -> None:
    assert redact_private(text) == expected


def test_redaction_is_non_greedy_between_tags() -> None:
    text = "<private>a</private> public <private>b</private>"
    assert "public" in redact_private(text)


# --- scope ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("personal", "personal"),
        ("  Personal ", "personal"),
        ("PERSONAL", "personal"),
        ("project", "project"),
        ("team", "project"),
        ("", "project"),
        (None, "project"),
        ("personally", "project"),
    ],
)
def test_normalize_scope(scope: str | None, expected: str) -> None:
    assert normalize_scope(scope) == expected


# --- content hash ---------------------------------------------------------------------------


def test_content_hash_is_sha256_of_the_canonical_form() -> None:
    expected = hashlib.sha256(b"hello big world").hexdigest()
    assert content_hash("  Hello\t BIG\n\nworld \n") == expected


def test_content_hash_ignores_case_and_whitespace_runs() -> None:
    assert content_hash("Fixed the N+1 query") == content_hash("fixed  the\nn+1\tQUERY")
    assert content_hash("text") == content_hash("text\n")


@pytest.mark.parametrize(
    ("a", "b"),
    [("fixed the query", "fixed a query"), ("ab", "a b"), ("x", ""), ("n+1", "n-1")],
)
def test_content_hash_differs_for_different_content(a: str, b: str) -> None:
    assert content_hash(a) != content_hash(b)


# --- topic key normalisation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("architecture/auth-model", "architecture/auth-model"),
        ("  Architecture/Auth Model  ", "architecture/auth-model"),
        ("bug/fts5   sanitization\t\nfix", "bug/fts5-sanitization-fix"),
        ("", None),
        ("   \n", None),
        (None, None),
    ],
)
def test_normalize_topic_key(key: str | None, expected: str | None) -> None:
    assert normalize_topic_key(key) == expected


def test_normalize_topic_key_cuts_at_120_characters() -> None:
    key = "pattern/" + "x" * 200
    assert normalize_topic_key(key) == ("pattern/" + "x" * 200)[:120]
    assert len(normalize_topic_key(key) or "") == 120
    assert normalize_topic_key("a" * 120) == "a" * 120


# --- project normalisation ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("project", "expected"),
    [
        ("my-api", "my-api"),
        ("  My-API \n", "my-api"),
        ("Engram", "engram"),
        ("", None),
        ("   ", None),
        (None, None),
    ],
)
def test_normalize_project(project: str | None, expected: str | None) -> None:
    assert normalize_project(project) == expected


# --- suggest_topic_key ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "title", "content", "expected"),
    [
        # The reference's and the seed's own examples.
        ("architecture", "  Auth Model  ", "", "architecture/auth-model"),
        (
            "bugfix",
            "",
            "Fix nil panic in auth middleware on empty token",
            "bug/fix-nil-panic-in-auth-middleware-on-empty",
        ),
        ("", "ADR: Split API gateway boundary", "", "architecture/adr-split-api-gateway-boundary"),
        ("architecture", "Database schema design", None, "architecture/database-schema-design"),
    ],
)
def test_suggest_topic_key_reference_examples(
    type_: str, title: str, content: str | None, expected: str
) -> None:
    assert suggest_topic_key(type_, title, content) == expected


@pytest.mark.parametrize(
    ("type_", "family"),
    [
        ("architecture", "architecture"),
        ("design", "architecture"),
        ("adr", "architecture"),
        ("refactor", "architecture"),
        ("bug", "bug"),
        ("bugfix", "bug"),
        ("fix", "bug"),
        ("incident", "bug"),
        ("hotfix", "bug"),
        ("decision", "decision"),
        ("pattern", "pattern"),
        ("convention", "pattern"),
        ("guideline", "pattern"),
        ("config", "config"),
        ("setup", "config"),
        ("infra", "config"),
        ("infrastructure", "config"),
        ("ci", "config"),
        ("discovery", "discovery"),
        ("investigation", "discovery"),
        ("root_cause", "discovery"),
        ("root-cause", "discovery"),
        ("learning", "learning"),
        ("learn", "learning"),
        ("session_summary", "session"),
    ],
)
def test_type_decides_the_family(type_: str, family: str) -> None:
    # The title holds a keyword of another group, to show the type wins over keywords.
    assert suggest_topic_key(type_, "Crash report", "") == f"{family}/crash-report"


def test_type_is_trimmed_and_lower_cased_before_mapping() -> None:
    assert suggest_topic_key("  BugFix ", "Token expiry", "") == "bug/token-expiry"
    assert suggest_topic_key("Session_Summary", "Today", "") == "session/today"


@pytest.mark.parametrize(
    ("title", "content", "family"),
    [
        ("Nil panic in handler", "", "bug"),
        ("Regression in search", "", "bug"),
        ("Hexagonal layout", "", "architecture"),
        ("We chose Postgres", "", "decision"),
        ("Tradeoff: speed vs safety", "", "decision"),
        ("Naming of handlers", "", "pattern"),
        ("Docker image", "", "config"),
        ("Build pipeline", "", "config"),
        ("Root cause of slowness", "", "discovery"),
        ("We found a quirk", "", "discovery"),
        ("What I learned", "", "learning"),
        ("Notes", "we hit an error here", "bug"),
        # Substring matching, as in Engram: "prefix" contains "fix".
        ("Prefix handling", "", "bug"),
        # Groups are checked in order: bug before architecture.
        ("Refactor after crash", "", "bug"),
        # Architecture before decision, decision before pattern.
        ("Decide on design", "", "architecture"),
        ("Decide on naming", "", "decision"),
        # "env" alone is a config keyword.
        ("Env vars", "", "config"),
        # "learned" before "learning" only matters within the group; both give learning.
        ("Learning Rust", "", "learning"),
    ],
)
def test_keywords_decide_the_family_when_the_type_does_not(
    title: str, content: str, family: str
) -> None:
    assert suggest_topic_key("", title, content).split("/")[0] == family
    assert suggest_topic_key("manual", title, content).split("/")[0] == family


def test_fallback_family_is_the_type_then_topic() -> None:
    assert suggest_topic_key("note", "Weekly sync", "") == "note/weekly-sync"
    assert suggest_topic_key("manual", "Weekly sync", "") == "topic/weekly-sync"
    assert suggest_topic_key("", "Weekly sync", "") == "topic/weekly-sync"
    assert suggest_topic_key(None, "Weekly sync", "") == "topic/weekly-sync"
    assert suggest_topic_key(" MANUAL ", "Weekly sync", "") == "topic/weekly-sync"


def test_free_form_type_is_slugged_into_the_family() -> None:
    assert suggest_topic_key("Team Note!", "Weekly sync", "") == "team-note/weekly-sync"
    assert suggest_topic_key("!!!", "Weekly sync", "") == "topic/weekly-sync"


def test_segment_slugging() -> None:
    assert suggest_topic_key("", "Weekly: sync -- v2 (Q3)", "") == "topic/weekly-sync-v2-q3"
    assert suggest_topic_key("", "--Ünïcode thing--", "") == "topic/n-code-thing"


def test_segment_falls_back_to_the_first_eight_content_words() -> None:
    content = "one two three four five six seven eight nine ten"
    assert suggest_topic_key("note", "", content) == "note/one-two-three-four-five-six-seven-eight"
    assert suggest_topic_key("note", "???", "alpha beta") == "note/alpha-beta"


def test_segment_is_general_when_nothing_sluggable() -> None:
    assert suggest_topic_key("note", "???", "!!! ...") == "note/general"


def test_segment_is_cut_at_100_without_a_trailing_dash() -> None:
    title = "a" * 99 + " bcd"
    assert suggest_topic_key("note", title, "") == "note/" + "a" * 99
    long_title = "word " * 60
    segment = suggest_topic_key("note", long_title, "").split("/")[1]
    assert len(segment) <= 100
    assert not segment.endswith("-")
    assert segment == ("word-" * 20).rstrip("-")


def test_leading_family_is_removed_from_the_segment() -> None:
    assert suggest_topic_key("architecture", "Architecture of auth", "") == ("architecture/of-auth")
    assert suggest_topic_key("bugfix", "Bug in parser", "") == "bug/in-parser"
    # Only a whole leading word is removed.
    assert suggest_topic_key("bugfix", "Bugs in parser", "") == "bug/bugs-in-parser"


def test_segment_equal_to_family_becomes_general() -> None:
    assert suggest_topic_key("architecture", "Architecture", "") == "architecture/general"
    assert suggest_topic_key("bugfix", "Bug", "") == "bug/general"
    assert suggest_topic_key("architecture", "Architecture architecture", "") == (
        "architecture/general"
    )


def test_a_type_named_general_keeps_the_general_segment() -> None:
    assert suggest_topic_key("general", "General", "") == "general/general"


@pytest.mark.parametrize(
    ("title", "content"), [("", ""), (None, None), ("  ", "\n\t"), (None, " "), ("\x01", "\u200b")]
)
def test_empty_title_and_content_is_an_error(title: str | None, content: str | None) -> None:
    with pytest.raises(InvalidInputError) as info:
        suggest_topic_key("architecture", title, content)
    assert isinstance(info.value, KBError)
    # Each in its own terms: the command's options, the MCP tool's parameters.
    assert str(info.value) == ("A topic key needs a title or content, and both are empty: pass --title (preferred) "
                               "or --content to derive the key from.")
    assert info.value.for_tools() == ("mem_suggest_topic_key needs a title or content, and both are empty: pass the "
                                      "memory's title (preferred) or its content to derive the key from.")


def test_private_text_never_reaches_the_key() -> None:
    key = suggest_topic_key("note", "Token <private>sk-abc123</private> rotation", "")
    assert key == "note/token-rotation"
    # A private keyword does not pick the family either.
    assert suggest_topic_key("", "Notes <private>crash</private>", "") == "topic/notes"
    # Only private text: still a key, since something was given.
    assert suggest_topic_key("note", "<private>secret</private>", "") == "note/general"


# --- sessions, replies ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("project", "expected"),
    [
        ("my-api", "manual-save-my-api"),
        ("  My-API ", "manual-save-my-api"),
        (None, "manual-save"),
        ("", "manual-save"),
        ("   ", "manual-save"),
    ],
)
def test_default_session_id(project: str | None, expected: str) -> None:
    assert default_session_id(project) == expected


def test_format_save_reply() -> None:
    assert format_save_reply("JWT auth middleware", "decision", None) == (
        'Memory saved: "JWT auth middleware" (decision)'
    )
    assert format_save_reply("Fixed N+1 query", "bugfix", "bug/n1-query-user-list") == (
        'Memory saved: "Fixed N+1 query" (bugfix)\nSuggested topic_key: bug/n1-query-user-list'
    )
    assert format_save_reply("T", "manual", "") == 'Memory saved: "T" (manual)'


@pytest.mark.parametrize(
    ("project", "expected"),
    [
        ("engram", "Session summary: engram"),
        ("  My-API ", "Session summary: my-api"),
        (None, "Session summary"),
        ("", "Session summary"),
    ],
)
def test_session_summary_title(project: str | None, expected: str) -> None:
    assert session_summary_title(project) == expected


# --- similar projects -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "existing"),
    [
        ("my-api", "myapi"),
        ("myapi", "my-api"),
        ("frontend", "front-end"),
        ("front_end", "Frontend"),
        ("my api", "my_api"),
        ("analytics", "analytic"),
        ("analytic", "analytics"),
        ("service", "services"),
        ("branch", "branches"),
        ("slayer", "slayer-kb"),
        ("engram", "engarm"),
        ("kubernetes", "kuberntes"),
        ("dashbaord", "dashboard"),
        ("web", "wep"),
    ],
)
def test_similar_projects_positives(name: str, existing: str) -> None:
    assert similar_projects(name, [existing]) == [existing]


@pytest.mark.parametrize(
    ("name", "existing"),
    [
        ("my-api", "my-api"),
        ("my-api", "My-API "),
        ("frontend", "backend"),
        ("api", "api-gateway"),
        ("api", "cli"),
        ("ab", "ac"),
        ("engram", "slayer"),
        ("auth", "oauth-server"),
        ("my-api", ""),
        ("my-api", "   "),
        ("---", "___"),
        ("", "anything"),
    ],
)
def test_similar_projects_negatives(name: str, existing: str) -> None:
    assert similar_projects(name, [existing]) == []


def test_similar_projects_sorted_by_closeness_and_deduplicated() -> None:
    existing = ["my-apis", "myapi", "my_api", "my-api", "my-ap", "other", "myapi"]
    assert similar_projects("my-api", existing) == ["my_api", "myapi", "my-ap", "my-apis"]


def test_similar_projects_accepts_any_iterable() -> None:
    assert similar_projects("frontend", (n for n in ["front-end", "infra"])) == ["front-end"]


# --- properties -----------------------------------------------------------------------------

_texts = st.text(max_size=300)


# Plain st.text() rarely spells a keyword or a family, so mix in words that exercise them.
_words = st.sampled_from(
    [
        "bug",
        "Architecture",
        "general",
        "topic",
        "manual",
        "fix",
        "env",
        "-",
        "<private>",
        "</private>",
        "design",
        "x" * 60,
        " ",
        "\n",
        "ÿ",
        "session_summary",
        "/",
    ]
)
_keyish = st.one_of(_texts, st.lists(_words, max_size=12).map(" ".join))


@given(st.one_of(st.none(), _keyish), _keyish, _keyish)
def test_suggest_topic_key_shape(type_: str | None, title: str, content: str) -> None:
    if blank(title) and blank(content):
        with pytest.raises(InvalidInputError):
            suggest_topic_key(type_, title, content)
        return
    given = (type_ or "").strip()
    if len(given) > 200 or any(not ch.isprintable() and ch != " " for ch in given):  # refused as a save's type
        with pytest.raises(InvalidInputError, match="^type "):
            suggest_topic_key(type_, title, content)
        return
    key = suggest_topic_key(type_, title, content)
    assert KEY_RE.match(key), key
    family, segment = key.split("/")
    assert len(segment) <= 100
    assert not segment.startswith("-") and not segment.endswith("-")
    # "general" is the one segment that may equal the family (a type literally named general).
    assert segment != family or segment == "general"
    assert suggest_topic_key(type_, title, content) == key


@given(st.one_of(st.none(), _texts))
def test_normalize_topic_key_idempotent_and_bounded(key: str | None) -> None:
    once = normalize_topic_key(key)
    assert normalize_topic_key(once) == once
    if once is not None:
        assert 0 < len(once) <= 120
        assert not any(ch.isspace() for ch in once)


_private_texts = st.lists(
    st.sampled_from(["<private>", "</private>", "<PRIVATE>", "</Private>", "x", " ", "\n", "<"]),
    max_size=20,
).map("".join)


@given(st.one_of(_texts, _private_texts))
def test_redact_private_idempotent(text: str) -> None:
    once = redact_private(text)
    assert redact_private(once) == once
    assert once == once.strip()


@given(st.lists(st.text(alphabet=st.characters(blacklist_categories=("Z", "C")), min_size=1)))
def test_content_hash_invariant_under_whitespace_runs(words: list[str]) -> None:
    joined = " ".join(words)
    varied = "\n\t ".join(words)
    assert content_hash(joined) == content_hash(varied)
    assert content_hash(joined) == content_hash("  " + joined + "\n")
