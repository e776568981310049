"""``bench.readers``' savers save texts whose sentence vectors no cache holds: each phase's own,
of a real note's length, so the server makes every save's vector during the run."""

from __future__ import annotations

from bench.readers import notes, saved_text


def test_each_phase_saves_new_notes_of_40_to_100_words_and_repeat_keeps_the_old_texts() -> None:
    texts = notes()
    assert len(texts) > 50 and all(40 <= len(t.split()) <= 100 for t in texts)
    one = [saved_text(texts, "aaaa", worker, n) for worker in (0, 1) for n in range(1, 60)]
    other = [saved_text(texts, "bbbb", worker, n) for worker in (0, 1) for n in range(1, 60)]
    assert len(set(one + other)) == len(one) + len(other)
    assert one[0].endswith(" (Run aaaa, saver 0, note 1.)") and one[0].removesuffix(" (Run aaaa, saver 0, note 1.)") in texts
    assert saved_text(None, "aaaa", 1, 7) == saved_text(None, "bbbb", 1, 7) == "bench saver 1 note 7"
