"""What a test process collected is kept out of the garbage collector's full passes
(testing/gcfreeze.py, from conftest's ``pytest_collection_finish``)."""

from __future__ import annotations

import gc

import pytest


def test_what_collection_made_is_frozen(request: pytest.FixtureRequest) -> None:
    # Frozen before any test ran: this module, its items and the imports collection made
    # (pytest, hypothesis, the package: tens of thousands of objects even for this file alone).
    assert gc.get_freeze_count() > 20_000, gc.get_freeze_count()
    # The item itself is frozen: in no generation a full pass walks (compared by identity: the
    # generation holds numpy arrays, whose == is elementwise).
    assert gc.is_tracked(request.node)
    assert not any(held is request.node for held in gc.get_objects(generation=2))
