"""What a non-editable install ships: pyproject.toml lists its packages by hand, so a new
subpackage left off the list installs fine in development and is missing from every wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parent.parent


def test_every_subpackage_is_listed_for_the_wheel() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    on_disk = {
        ".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "slayer_kb").rglob("__init__.py")
    }
    assert on_disk - listed == set(), "add these to [tool.setuptools] packages in pyproject.toml"


def test_the_license_is_an_spdx_expression_the_build_backend_reads() -> None:
    # A TOML table is deprecated by setuptools (an error from 2027-02-18); the string form needs 77+.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert (config["project"]["license"], config["project"]["license-files"]) == ("MIT", ["LICENSE"])
    assert "setuptools>=77" in config["build-system"]["requires"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
