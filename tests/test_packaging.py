"""What a non-editable install ships: pyproject.toml lists its packages by hand, so a new
subpackage left off the list installs fine in development and is missing from every wheel; a
folder of data files left off it makes setuptools warn at every build."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent


def _folders(base: Path, package: str) -> set[str]:
    """The package name of ``base`` and of each folder under it that holds a file (not Python's
    caches or hidden folders, such as a KB's ``.slayer-kb``)."""
    found = set()
    for folder in (base, *base.rglob("*")):
        parts = folder.relative_to(base).parts
        if folder.is_dir() and not any(p.startswith(".") or p == "__pycache__" for p in parts) and any(
                child.is_file() for child in folder.iterdir()):
            found.add(".".join((package, *parts)))
    return found


def test_every_subpackage_and_data_folder_is_listed_for_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    assert config["tool"]["setuptools"]["package-dir"] == {"": "."}
    assert (ROOT / "slayer_kb" / "example").readlink() == Path("..", "kb")
    on_disk = _folders(ROOT / "slayer_kb", "slayer_kb") | _folders(ROOT / "kb", "slayer_kb.example")
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"
    assert listed - on_disk == set(), "these packages in pyproject.toml have no files"

def test_the_license_is_an_spdx_expression_the_build_backend_reads() -> None:
    # A TOML table is deprecated by setuptools (an error from 2027-02-18); the string form needs 77+.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert (config["project"]["license"], config["project"]["license-files"]) == ("MIT", ["LICENSE"])
    assert "setuptools>=77" in config["build-system"]["requires"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_an_editable_install_is_a_path_not_an_import_hook() -> None:
    # setuptools writes an import hook (a finder module imported by site at every start, 15 ms)
    # unless every package lies where its name says: kb/ is reached through a symlink for this.
    import slayer_kb

    site = Path(slayer_kb.__file__).resolve().parent.parent
    found = [p for p in Path(sys.prefix, "lib").glob("python3*/site-packages/__editable__.slayer_kb*.pth")]
    if not found:
        pytest.skip("not an editable install")
    assert [line for line in found[0].read_text(encoding="utf-8").splitlines() if line] == [str(site)]
