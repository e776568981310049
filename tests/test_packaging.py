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
