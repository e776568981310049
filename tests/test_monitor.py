"""A warm KnowledgeBase (keep_warm) skips the per-file scan while nothing changed, and still sees
edits made behind its back."""

from __future__ import annotations

import time

from slayer_kb import KnowledgeBase


def wait_for(check, limit: float = 3.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_warm_kb_sees_hand_edits_and_skips_scans(example_kb: KnowledgeBase) -> None:
    kb = example_kb
    kb.keep_warm()
    try:
        assert kb.search("fiscal year").memories[0]["id"] == "kb.fiscal-calendar"
        # Nothing changed: the next check is answered by the monitor, not by a scan.
        scans = []
        original = kb.index.scan
        kb.index.scan = lambda: scans.append(1) or original()  # type: ignore[method-assign]
        kb.search("fiscal year")
        assert scans == []
        # A hand edit behind the KB's back is found by the next search once its event arrived.
        path = kb.root / "memories" / "3.yaml"
        path.write_text(path.read_text().replace("orders.is_returned", "orders.is_returned zebrafish"))
        assert wait_for(lambda: [h["id"] for h in kb.search("zebrafish").memories] == ["3"])
        assert scans, "the edit must have triggered a real freshness check"
        # A deleted file disappears the same way.
        path.unlink()
        assert wait_for(lambda: kb.search("zebrafish").memories == [])
    finally:
        kb.close()
    assert kb.monitor is None
