"""The model onnxruntime runs is the pinned file rewritten in memory (search/rewrite.py): the
rewrite is pinned by its own sha256, its vectors are the file's within float32 rounding (so the
cache keys stay), and a rewrite that is not the pinned one, or a file that changed after its
check, is never run."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from slayer_kb.search import encoder, rewrite, sentences
from testing.encoding import model_package

TEXTS = [
    "Nomad chosen over Kubernetes",
    "Nomad chosen over Kubernetes\nFour people run a dozen binaries. Kubernetes needed a platform team. "
    "Nomad's single binary was enough; we revisit it at fifty services.",
    # Longer than one run of the model: embedded as passages under its title.
    "Release checklist for the charger firmware\n"
    + " ".join(f"Step {n}: flash board {n} with firmware 3.{n}, read its serial log and compare the checksum." for n in range(40)),
]


def _loaded() -> encoder.Encoder:
    model = encoder.load()
    if not isinstance(model, encoder.Encoder):
        pytest.skip(f"the sentence encoder is not installed: {model}")
    return model


def _as_installed(model: encoder.Encoder, options: dict[str, list[str]]) -> encoder.Encoder:
    """The encoder over the installed file itself, as onnxruntime loads it with these options."""
    import onnxruntime

    path = encoder.model_file()
    assert isinstance(path, Path)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"], **options)
    return encoder.Encoder(model._tokenizer, session)  # the same tokenizer, another session


@pytest.fixture
def unpinned_rewrite(encoder_on: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process whose rewrite does not make the pinned bytes (as a changed rewrite.py would)."""
    monkeypatch.setattr(encoder, "REWRITTEN_SHA256", "0" * 64)
    encoder.load.cache_clear()
    yield
    monkeypatch.undo()
    encoder.load.cache_clear()


def test_the_pinned_file_is_rewritten_as_pinned(encoder_on: None) -> None:
    _loaded()
    path = encoder.model_file()
    assert isinstance(path, Path)
    fast, counts = rewrite.rewrite(path.read_bytes())
    assert counts == [6, 6]  # each of the six layers: its GELU, its self-attention fused
    assert hashlib.sha256(fast).hexdigest() == encoder.REWRITTEN_SHA256
    assert len(fast) < path.stat().st_size
    # Rewritten again, nothing is left to change.
    assert rewrite.rewrite(fast) == (fast, [0, 0])


def test_the_vectors_are_the_files_within_float32_rounding(encoder_on: None) -> None:
    model = _loaded()
    before = _as_installed(model, {})
    whole, units = model.encode_with_units(TEXTS, 2)
    was_whole, was_units = before.encode_with_units(TEXTS, 2)
    assert [len(u) for u in units] == [len(u) for u in was_units] == [0, 4, 40]
    for new, old in [(whole, was_whole), *zip(units[1:], was_units[1:], strict=True)]:
        assert np.abs(new - old).max() <= 1e-6
        assert (new * old).sum(axis=1).min() >= 0.999999
        # As the cache stores them, at most one step of int8 apart.
        for a, b in zip(new, old, strict=True):
            steps = np.frombuffer(sentences.pack(a), np.int8).astype(int) - np.frombuffer(sentences.pack(b), np.int8)
            assert np.abs(steps).max() <= 1
    # The rewrite is what runs: the same bits as before only if it changed nothing.
    assert not np.array_equal(whole, was_whole)


def test_the_stand_in_graph_is_pinned_and_near_the_shipped_one(encoder_on: None) -> None:
    model = _loaded()
    path = encoder.model_file()
    assert isinstance(path, Path)
    int8, counts = rewrite.rewrite(path.read_bytes(), rewrite.INT8_EDITS)
    assert counts == [6, 6, 6, 36]  # and every one of the six products of each of the six layers
    assert hashlib.sha256(int8).hexdigest() == encoder.STAND_IN_SHA256
    stand_in = encoder.load_stand_in()
    assert isinstance(stand_in, encoder.Encoder), stand_in
    assert (model.key, stand_in.key) == (encoder.MODEL_KEY, encoder.STAND_IN_KEY)
    whole, units = model.encode_with_units(TEXTS, 2)
    near_whole, near_units = stand_in.encode_with_units(TEXTS, 2)
    assert [len(u) for u in near_units] == [0, 4, 40]
    for new, old in [(near_whole, whole), *zip(near_units[1:], units[1:], strict=True)]:
        cosines = (new * old).sum(axis=1)
        assert cosines.min() >= 0.98 and cosines.mean() >= 0.99
        assert not np.array_equal(new, old)  # near, never the same: never cached as the same


def test_a_stand_in_not_pinned_is_no_stand_in(encoder_on: None, monkeypatch: pytest.MonkeyPatch) -> None:
    _loaded()
    monkeypatch.setattr(encoder, "STAND_IN_SHA256", "0" * 64)
    refused = encoder.load_stand_in()
    assert isinstance(refused, encoder.Unavailable) and refused.reason == "the stand-in graph is not the pinned one"


def test_the_stand_in_hashes_no_file_load_checked_and_runs_only_the_pinned_graph(
        encoder_on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``load`` read and hashed the model file; the stand-in reads it again for its rewrite but
    hashes only the graph it runs (``STAND_IN_SHA256``): a file swapped after the check makes
    no stand-in."""
    installed = encoder.model_file()
    assert isinstance(installed, Path)
    model = model_package(tmp_path / "site", "stand_in_minilm_package", monkeypatch)
    model.write_bytes(installed.read_bytes())
    hashed: list[Path] = []
    real_read = encoder.read_model

    def read_model(path: Path) -> tuple[bytes, str]:
        hashed.append(path)
        return real_read(path)

    monkeypatch.setattr(encoder, "read_model", read_model)
    encoder.load.cache_clear()
    try:
        assert isinstance(encoder.load(), encoder.Encoder)
        stand_in = encoder.load_stand_in()
        assert isinstance(stand_in, encoder.Encoder) and stand_in.key == encoder.STAND_IN_KEY
        assert hashed == [model]  # by load() alone
        model.write_bytes(b"not the model")
        refused = encoder.load_stand_in()
        assert isinstance(refused, encoder.Unavailable)
        assert refused.reason == "the stand-in graph cannot be made: wire type 6 of field 13 is not read here"
    finally:
        encoder.load.cache_clear()


def test_a_rewrite_not_pinned_runs_the_file_itself(unpinned_rewrite: None) -> None:
    model = _loaded()
    whole, units = model.encode_with_units(TEXTS, 2)
    itself = _as_installed(model, {"disabled_optimizers": encoder.SLOWER_FUSIONS})
    was_whole, was_units = itself.encode_with_units(TEXTS, 2)
    assert np.array_equal(whole, was_whole)
    assert all(np.array_equal(a, b) for a, b in zip(units, was_units, strict=True))


def test_the_bytes_checked_are_the_bytes_run(encoder_on: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file swapped just after its check changes nothing: the model is read once, and what was
    checked is what onnxruntime loads."""
    installed, package = encoder.model_file(), encoder.PACKAGE
    assert isinstance(installed, Path)
    model = model_package(tmp_path / "site", "swapped_minilm_package", monkeypatch)
    model.write_bytes(installed.read_bytes())
    reads: list[Path] = []
    real_read = encoder.read_model

    def read_model(path: Path) -> tuple[bytes, str]:  # the check passes; then the file is swapped
        reads.append(path)
        checked = real_read(path)
        model.write_bytes(b"not the model")  # the test's copy, never the installed file
        return checked

    monkeypatch.setattr(encoder, "read_model", read_model)
    encoder.load.cache_clear()
    try:
        loaded = encoder.load()
        assert isinstance(loaded, encoder.Encoder), loaded
        assert reads == [model] and model.read_bytes() == b"not the model"
        encoder.load.cache_clear()
        monkeypatch.setattr(encoder, "PACKAGE", package)
        monkeypatch.setattr(encoder, "read_model", real_read)
        assert np.array_equal(loaded.encode(TEXTS), _loaded().encode(TEXTS))
    finally:
        encoder.load.cache_clear()


def test_bytes_that_are_not_a_model_are_refused() -> None:
    with pytest.raises(rewrite.Malformed, match="^wire type 6 of field 13 is not read here$"):
        rewrite.rewrite(b"not a model")
    with pytest.raises(rewrite.Malformed, match="^the model has no graph$"):
        rewrite.rewrite(b"\x08\x0a")  # ir_version 10, nothing else
    with pytest.raises(rewrite.Malformed, match="^field 7 runs past the end$"):
        rewrite.rewrite(b"\x3a\x10\x0a")  # a graph of 16 bytes, one there
    with pytest.raises(rewrite.Malformed, match="^the graph has no nodes$"):
        rewrite.rewrite(b"\x3a\x00")
    with pytest.raises(rewrite.Malformed, match="^a name is not UTF-8: "):
        rewrite.rewrite(b"\x3a\x05\x0a\x03\x0a\x01\xff")  # one node, its input named b"\xff"
