"""What sync merges that git cannot (core/merging.py), checked as properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slayer_kb.core.memory import Memory, dumps
from slayer_kb.core.merging import (
    carry_through_fold,
    carry_upsert_through_fold,
    forget_holds,
    merge_edits,
    merge_sessions,
    merge_topic_revisions,
)
from slayer_kb.core.session import Prompt, Session
from slayer_kb.store import mergedriver
from slayer_kb.store.leases import BLOCK, block_of, first_of

times = st.integers(min_value=0, max_value=59).map(lambda s: f"2026-11-29T20:42:{s:02d}Z")
prompts = st.lists(st.builds(Prompt, created_at=times, content=st.sampled_from(["a", "b", "c"])), max_size=5)
sessions = st.builds(Session, id=st.just("manual-save-api"), started_at=times, project=st.sampled_from([None, "api"]),
                     ended_at=st.one_of(st.none(), times), summary=st.sampled_from([None, "done"]), prompts=prompts)


@given(sessions, sessions)
def test_a_merged_session_keeps_every_prompt_of_both(a: Session, b: Session) -> None:
    merged = merge_sessions(None, a, b)
    keys = {(p.created_at, p.content) for p in merged.prompts}
    assert keys == {(p.created_at, p.content) for p in a.prompts + b.prompts}
    assert len(keys) == len(merged.prompts)
    assert [p.created_at for p in merged.prompts] == sorted(p.created_at for p in merged.prompts)
    assert merged.started_at == min(a.started_at, b.started_at)
    assert {(p.created_at, p.content) for p in merge_sessions(None, b, a).prompts} == keys


@given(sessions)
def test_merging_a_session_with_itself_changes_nothing(a: Session) -> None:
    unique = {(p.created_at, p.content): p for p in a.prompts}
    assert merge_sessions(None, a, a) == Session(**{**a.__dict__, "prompts": sorted(unique.values(), key=lambda p: p.created_at)})


def test_a_session_ended_on_two_clones_keeps_both_summaries() -> None:
    start = Session(id="s1", started_at="2026-11-29T20:00:00Z", prompts=[])
    a = Session(**{**start.__dict__, "ended_at": "2026-11-29T20:10:00Z", "summary": "Fixed the refund double count."})
    b = Session(**{**start.__dict__, "ended_at": "2026-11-29T20:05:00Z", "summary": "Found the flaky login test."})
    both = "Found the flaky login test.\n\nFixed the refund double count."
    for ours, theirs in ((a, b), (b, a)):
        merged = merge_sessions(None, ours, theirs)
        assert (merged.ended_at, merged.summary) == ("2026-11-29T20:10:00Z", both)
        # Met again along a rebase (the merge against one side's own version): said once.
        assert merge_sessions(None, merged, theirs).summary == merge_sessions(None, ours, merged).summary == both
    assert merge_sessions(start, a, start).summary == merge_sessions(start, start, a).summary == a.summary


def test_a_session_merged_from_times_with_fractions_keeps_them_in_time_order() -> None:
    """Session files take fractions of a second too: as text the later start (10:00:00.5Z)
    sorted first and the earlier end last, and the summaries and prompts went out of order."""
    a = Session(id="s1", started_at="2026-11-29T10:00:00.5Z", ended_at="2026-11-29T11:00:00.5Z",
                summary="Ended last.", prompts=[Prompt(content="second", created_at="2026-11-29T10:30:00.5Z")])
    b = Session(id="s1", started_at="2026-11-29T10:00:00Z", ended_at="2026-11-29T11:00:00Z",
                summary="Ended first.", prompts=[Prompt(content="first", created_at="2026-11-29T10:30:00Z")])
    merged = merge_sessions(None, a, b)
    assert (merged.started_at, merged.ended_at) == ("2026-11-29T10:00:00Z", "2026-11-29T11:00:00.5Z")
    assert (merged.summary, [p.content for p in merged.prompts]) == ("Ended first.\n\nEnded last.", ["first", "second"])


def test_a_summary_one_clone_replaced_is_not_brought_back_by_the_other() -> None:
    """A session ended with S0 is ended again on one clone (S1 replaces S0) while the other only
    adds a prompt: the merge gave "S0\n\nS1", the replaced summary back."""
    ended = Session(id="s1", started_at="2026-12-01T10:00:00Z", ended_at="2026-12-01T11:00:00Z", summary="S0",
                    prompts=[])
    again = Session(**{**ended.__dict__, "ended_at": "2026-12-01T12:00:00Z", "summary": "S1"})
    prompted = Session(**{**ended.__dict__, "prompts": [Prompt(created_at="2026-12-01T11:30:00Z", content="more")]})
    for ours, theirs in ((again, prompted), (prompted, again)):
        merged = merge_sessions(ended, ours, theirs)
        assert (merged.summary, merged.ended_at, len(merged.prompts)) == ("S1", "2026-12-01T12:00:00Z", 1)


def memory(revisions: int | None, at: str, text: str) -> Memory:
    return Memory(id="1", learning=text, created_at="2026-11-29T20:00:00Z", topic_key="arch/db",
                  revision_count=revisions, updated_at=at)


@given(st.integers(1, 20), st.integers(0, 20), st.integers(0, 20), times, times)
def test_revisions_of_both_sides_are_all_counted(base: int, mine: int, theirs: int, t1: str, t2: str) -> None:
    merged = merge_topic_revisions(memory(base, t1, "base"), memory(base + mine, t1, "upstream"),
                                   memory(base + theirs, t2, "replayed"))
    assert merged.revision_count == base + mine + theirs
    assert merged.learning == ("replayed" if t2 >= t1 else "upstream")


def test_two_new_memories_of_one_key_count_both_first_saves() -> None:
    merged = merge_topic_revisions(None, memory(None, "2026-11-29T20:00:01Z", "a"),
                                   memory(3, "2026-11-29T20:00:02Z", "b"))
    assert (merged.revision_count, merged.learning, merged.id) == (4, "b", "1")


def test_a_forget_of_a_topic_key_memory_holds_unless_the_other_side_revised_it_later() -> None:
    """A soft forget (MCP's mem_delete) on one clone, an upsert on the other: the later wins, as
    the two would have one after the other on one clone; two forgets keep the first."""
    base = memory(1, "2026-11-29T20:00:00Z", "base")
    revised = memory(2, "2026-11-29T20:00:05Z", "revised")
    early, late = (base.evolve(deleted_at=f"2026-11-29T20:00:0{s}Z") for s in (3, 7))
    for forgot, deleted_at in ((late, late.deleted_at), (early, None)):
        for merged in (merge_topic_revisions(base, forgot, revised), merge_topic_revisions(base, revised, forgot)):
            assert (merged.deleted_at, merged.learning, merged.revision_count) == (deleted_at, "revised", 2)
    assert merge_topic_revisions(base, late, early).deleted_at == early.deleted_at
    # A revision within the second of the save before it: the forget carries no time of writing,
    # so the tie of times must not hand its side's older text back.
    # A restore after the other side's forget stands (it is stamped as a write).
    restored = base.evolve(updated_at="2026-11-29T20:00:08Z")
    for merged in (merge_topic_revisions(base, restored, late), merge_topic_revisions(base, late, restored)):
        assert merged.deleted_at is None
    quick = memory(2, base.updated_at or "", "revised")
    for merged in (merge_topic_revisions(base, quick, late), merge_topic_revisions(base, late, quick)):
        assert (merged.deleted_at, merged.learning) == (late.deleted_at, "revised")


@given(st.integers(min_value=1, max_value=10**12))
def test_every_id_is_in_exactly_one_block(memory_id: int) -> None:
    block = block_of(memory_id)
    assert first_of(block) <= memory_id < first_of(block) + BLOCK


def test_two_sides_edits_of_one_memory_merge_by_field_unless_one_field_changed_two_ways() -> None:
    base = Memory(id="3", learning="Totals", created_at="2026-11-29T20:00:00Z",
                  entities=["shop.orders.status", "memory:1", "memory:2"])
    ours = base.evolve(entities=["shop.orders.status", "memory:1"], learning="Order totals",
                       updated_at="2026-11-29T20:05:00Z")
    theirs = base.evolve(entities=["shop.orders.amount", "shop.orders.status", "memory:2"],
                         updated_at="2026-11-29T20:06:00Z")
    assert merge_edits(base, ours, theirs) == base.evolve(
        learning="Order totals", entities=["shop.orders.status", "shop.orders.amount"],
        updated_at="2026-11-29T20:06:00Z")
    assert merge_edits(base, ours, theirs.evolve(learning="Totals per order")) is None
    forgot = base.evolve(deleted_at="2026-11-29T20:07:00Z", updated_at="2026-11-29T20:07:00Z")
    assert merge_edits(base, forgot, ours) is None  # a forget against an edit: a person decides
    assert merge_edits(base, theirs.evolve(learning=base.learning), forgot) == forgot.evolve(
        entities=["shop.orders.amount", "shop.orders.status", "memory:2"])
    assert merge_edits(base, forgot, base.evolve(deleted_at="2026-11-29T20:06:00Z")) == forgot.evolve(
        deleted_at="2026-11-29T20:06:00Z")  # both forgot it (soft): since the first


def test_an_edit_by_hand_is_dated_at_its_commit_and_the_later_holds() -> None:
    base = memory(1, "2026-11-29T20:00:00Z", "base")
    by_hand = base.evolve(learning="edited by hand")  # git commit: updated_at left as it was
    upsert = memory(2, "2026-11-29T20:00:05Z", "upserted")
    for committed_at, kept in (("2026-11-29T20:00:09Z", "edited by hand"), ("2026-11-29T20:00:03Z", "upserted")):
        def dated(at: str = committed_at) -> str:
            return at

        assert merge_topic_revisions(base, by_hand, upsert, (dated, lambda: None)).learning == kept
        assert merge_topic_revisions(base, upsert, by_hand, (lambda: None, dated)).learning == kept
    # Not asked when no side was edited by hand; a side whose commit git cannot date keeps its time.
    def never() -> str:
        raise AssertionError("asked for a commit's date")

    assert merge_topic_revisions(base, upsert, upsert.evolve(learning="b", updated_at="2026-11-29T20:00:06Z"),
                                 (never, never)).learning == "b"
    assert merge_topic_revisions(base, by_hand, upsert, (lambda: None, lambda: None)).learning == "upserted"


def test_a_forget_of_a_topic_key_against_a_change_the_later_holds_but_links_alone_never_win() -> None:
    base = memory(1, "2026-11-29T20:00:00Z", "base").evolve(entities=["shop.orders.amount", "memory:2"])
    upserted = base.evolve(learning="revised", revision_count=2, updated_at="2026-11-29T20:00:05Z")
    unlinked = base.evolve(entities=["shop.orders.amount"], updated_at="2026-11-29T20:00:09Z")
    def never() -> str:
        raise AssertionError("asked for a commit's date")

    def forgot(links: frozenset[str]) -> bool:  # the unlinking side forgot what its links named
        return links == {"memory:2"}

    assert [forget_holds(base, upserted, lambda at=at: at, never, forgot)
            for at in ("2026-11-29T20:00:04Z", "2026-11-29T20:00:05Z", None)] == [False, True, None]
    # Links alone, or no topic key: answered without dating the forget (a git log each).
    assert forget_holds(base, unlinked, never, never, forgot) is True
    assert forget_holds(base.evolve(topic_key=None), unlinked.evolve(topic_key=None), never, never, forgot) is True
    assert forget_holds(base.evolve(topic_key=None), upserted.evolve(topic_key=None), never, never, forgot) is None
    # A link dropped while its memory stayed, an entity dropped, a restore: not a forget's strip.
    plain = base.evolve(topic_key=None)
    soft = plain.evolve(deleted_at="2026-11-29T20:00:01Z")
    for was, kept in ((plain, unlinked.evolve(topic_key=None)), (plain, plain.evolve(entities=["memory:2"])),
                      (soft, plain.evolve(updated_at="2026-11-29T20:00:09Z"))):
        assert forget_holds(was, kept, never, never, lambda links: links == {"memory:9"}) is None
    # A topic key's restore is weighed by its date, as any revision: the later holds.
    restored = base.evolve(deleted_at=None, updated_at="2026-11-29T20:00:09Z")
    assert forget_holds(base.evolve(deleted_at="2026-11-29T20:00:01Z"), restored,
                        lambda: "2026-11-29T20:00:05Z", never, forgot) is False
    # The driver's own reading of the two versions: a soft forget is forgotten both ways, a strip
    # of links holds the forget; neither dates a commit.
    texts = [dumps(m) for m in (base, base.evolve(deleted_at="2026-11-29T20:00:02Z"), unlinked)]
    assert [mergedriver.forget_holds("memories/1.yaml", texts[0], kept, (never, never), forgot) for kept in texts[1:]] == [
        True, True]


def test_a_fold_or_a_strip_keeps_its_time_only_an_edit_of_what_a_memory_says_is_dated_by_its_commit() -> None:
    """Sync's own commits leave updated_at as it was: a fold (``memory: merge N into M``) or a
    recount changes only counts and created_at, a forget's strip only takes a link away. Each was
    taken for a person's edit, dated at its commit, and beat an upsert made before it."""
    base = memory(1, "2026-11-29T20:00:00Z", "base").evolve(entities=["shop.orders.amount", "memory:2"])
    upsert = base.evolve(learning="upserted", revision_count=2, updated_at="2026-11-29T20:00:05Z")

    def committed_later() -> str:
        return "2026-11-29T20:00:09Z"

    folded = base.evolve(revision_count=2, created_at="2026-11-29T19:59:00Z")
    stripped = base.evolve(entities=["shop.orders.amount"])
    for ours in (folded, stripped):
        merged = merge_topic_revisions(base, ours, upsert, (committed_later, lambda: None))
        assert (merged.learning, merged.updated_at) == ("upserted", upsert.updated_at)
    for edit in (base.evolve(title="Retries"), base.evolve(entities=[*base.entities, "shop.orders.status"])):
        assert merge_topic_revisions(base, edit, upsert, (committed_later, lambda: None)) == edit.evolve(
            revision_count=2, duplicate_count=None)


def test_a_forget_against_an_edit_by_hand_dates_the_edit_by_its_commit() -> None:
    """A person's edit (git commit, updated_at left as it was) made after the other clone's forget
    lost to it: the forget was compared with the edited version's updated_at, the base's."""
    base = memory(1, "2026-11-29T20:00:00Z", "base")
    by_hand = base.evolve(learning="edited by hand")
    forgot_at = "2026-11-29T20:00:05Z"
    assert [forget_holds(base, by_hand, lambda: forgot_at, lambda at=at: at, lambda _links: False)
            for at in ("2026-11-29T20:00:09Z", "2026-11-29T20:00:05Z", "2026-11-29T20:00:03Z", None)] == [
        False, True, True, None]  # git cannot date the edit: a person decides


def test_times_with_fractions_of_a_second_merge_in_time_order() -> None:
    """As plain text ``10:00:00.5Z`` sorts before ``10:00:00Z``: an edit's merge kept the earlier
    update, and a forget beat a revision made half a second after it."""

    def at(**fields: str) -> Memory:
        return Memory(**{"id": "1", "learning": "x", "created_at": "2026-12-01T09:00:00Z", "title": "T",
                         "type": "decision", "topic_key": "k/a", **fields})

    base = at()
    edited = merge_edits(base, at(updated_at="2026-12-01T10:00:00.5Z", title="A"),
                         at(updated_at="2026-12-01T10:00:00Z", description="B"))
    assert edited is not None and edited.updated_at == "2026-12-01T10:00:00.5Z"
    revised = merge_topic_revisions(base, at(updated_at="2026-12-01T10:00:00.5Z", learning="after the forget"),
                                    at(deleted_at="2026-12-01T10:00:00Z"))
    assert (revised.learning, revised.deleted_at) == ("after the forget", None)


def test_two_upserts_through_a_fold_are_the_newer_save_with_both_counted() -> None:
    # Held as two edits of the learning for a person, though both were saves under the key.
    key = {"topic_key": "decision/retry", "title": "Retry budget", "created_at": "2026-01-01T00:00:00Z"}
    base = Memory(id="101", learning="Retries: 5", revision_count=1, updated_at="2026-01-01T00:00:00Z", **key)
    kept = Memory(id="27", learning="Retries: 4", revision_count=3, updated_at="2026-01-02T00:00:00Z", **key)
    later = base.evolve(learning="Retries: 6", revision_count=2, updated_at="2026-01-03T00:00:00Z")
    assert carry_upsert_through_fold(base, kept, later) == kept.evolve(
        learning="Retries: 6", revision_count=4, updated_at="2026-01-03T00:00:00Z")
    earlier = later.evolve(updated_at="2026-01-01T12:00:00Z")
    assert carry_upsert_through_fold(base, kept, earlier) == kept.evolve(revision_count=4)
    # No field held two ways, or another key: carry_through_fold's, or a person's.
    assert carry_upsert_through_fold(base, kept, base.evolve(description="why")) is None
    assert carry_upsert_through_fold(base, kept, later.evolve(topic_key="decision/other")) is None


def test_an_edit_carried_through_a_fold_that_adds_links_the_memory_kept_holds_changes_nothing() -> None:
    # The link the folded memory gained, the memory kept held already: no field changed, so no
    # revision is counted and updated_at stays (it counted one, with the edit's time).
    base = Memory(id="27", learning="Retries: 5", entities=["shop.orders"], revision_count=1,
                  created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z")
    kept = Memory(id="101", learning="Retries: 3", entities=["shop.refunds"], revision_count=2,
                  created_at="2026-01-02T00:00:00Z", updated_at="2026-01-02T00:00:00Z")
    edit = base.evolve(entities=["shop.orders", "shop.refunds"], revision_count=2, updated_at="2026-01-03T00:00:00Z")
    assert carry_through_fold(base, kept, edit) == (kept, kept)
    added = base.evolve(entities=["shop.payments"], revision_count=2, updated_at="2026-01-03T00:00:00Z")
    assert carry_through_fold(base, kept, added)[0] == kept.evolve(
        entities=["shop.refunds", "shop.payments"], revision_count=3, updated_at="2026-01-03T00:00:00Z")
