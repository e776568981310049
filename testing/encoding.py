"""The sentence encoder for the tests about it (``tests/conftest.py`` turns it off elsewhere)."""

from __future__ import annotations

from slayer_kb.search import encoder


def loaded_encoder() -> encoder.Encoder:
    """The pinned model, loaded (a test about the encoder fails here if it cannot load)."""
    loaded = encoder.load()
    assert isinstance(loaded, encoder.Encoder), loaded
    return loaded
