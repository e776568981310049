"""``core.fileio.write_whole``: the one way the state files, caches and records are put in place,
whole or not at all (a temporary file beside them, renamed over them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from slayer_kb.core.fileio import write_whole


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_file_is_put_whole_in_place_of_the_old_and_no_temporary_file_stays(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")
    write_whole(path, '{"a": "é"}\n')
    assert path.read_bytes() == '{"a": "é"}\n'.encode()
    write_whole(path, b"\x00\xff")
    assert (path.read_bytes(), names(tmp_path)) == (b"\x00\xff", ["state.json"])


def test_the_temporary_file_and_the_newlines_are_the_callers(tmp_path: Path) -> None:
    # fmt's: a hidden name in memories/, which no reader of the folder lists, and the line ends as given.
    path = tmp_path / "1.yaml"
    write_whole(path, "a\r\nb\n", tmp_path / ".1.yaml.fmt-tmp", newline="")
    assert (path.read_bytes(), names(tmp_path)) == (b"a\r\nb\n", ["1.yaml"])


def test_a_write_that_fails_leaves_the_old_file_and_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("old", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):  # failing while written
        write_whole(path, "half \udc80")
    assert (path.read_text(encoding="utf-8"), names(tmp_path)) == ("old", ["state.json"])
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "kept").write_text("x", encoding="utf-8")
    with pytest.raises(OSError):  # failing at the rename: a folder is in the way
        write_whole(tmp_path / "folder", "new", tmp_path / "folder.tmp")
    assert (names(tmp_path), names(tmp_path / "folder")) == (["folder", "state.json"], ["kept"])


def test_a_link_at_the_callers_temporary_name_is_never_written_through(tmp_path: Path) -> None:
    """fmt's temporary name is known and sits in memories/, which a clone fills: a committed link
    ``memories/.1.yaml.fmt-tmp -> /tmp/victim`` made fmt overwrite the file outside the KB, and
    left the memory a link to it."""
    kb, outside = tmp_path / "memories", tmp_path / "victim"
    kb.mkdir()
    outside.write_text("precious", encoding="utf-8")
    (kb / ".1.yaml.fmt-tmp").symlink_to(outside)
    write_whole(kb / "1.yaml", "learning: x\n", kb / ".1.yaml.fmt-tmp", newline="")
    assert outside.read_text(encoding="utf-8") == "precious"
    assert not (kb / "1.yaml").is_symlink() and (kb / "1.yaml").read_text(encoding="utf-8") == "learning: x\n"
    assert names(kb) == [".1.yaml.fmt-tmp", "1.yaml"]  # the link is the clone's, left as it was
