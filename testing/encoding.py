"""The sentence encoder for the tests about it (``tests/conftest.py`` turns it off elsewhere)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb.search import encoder


def loaded_encoder() -> encoder.Encoder:
    """The pinned model, loaded (a test about the encoder fails here if it cannot load)."""
    loaded = encoder.load()
    assert isinstance(loaded, encoder.Encoder), loaded
    return loaded


def model_package(site: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An importable package ``name`` under ``site`` that the encoder takes for its model's,
    holding a ``model.onnx`` that is not the pinned file; its path."""
    package = site / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    model = package / encoder.MODEL_FILE
    model.write_bytes(b"not the model")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(encoder, "PACKAGE", name)
    return model
