"""The documentation against the code: the CLI reference is generated from the commands, links
point at files (and headings) that exist, and the README stays a short page for users."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
EXTRA_PAGES = [ROOT / name for name in ("CHANGELOG.md", "CONTRIBUTING.md", "SECURITY.md") if (ROOT / name).exists()]

FENCE_RE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
CODE_RE = re.compile(r"`[^`\n]*`")
LINK_RE = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING_RE = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def _cli_reference():
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "cli_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _prose(text: str) -> str:
    """The text without code blocks and code spans, where brackets are not links."""
    return CODE_RE.sub("", FENCE_RE.sub("", text))


def _anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown page."""
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING_RE.findall(FENCE_RE.sub("", path.read_text(encoding="utf-8"))):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _links(path: Path) -> list[str]:
    return LINK_RE.findall(_prose(path.read_text(encoding="utf-8")))


def test_cli_reference_matches_the_commands():
    expected = _cli_reference().render()
    actual = (DOCS / "cli.md").read_text(encoding="utf-8")
    assert actual == expected, "docs/cli.md is out of date: run `python docs/cli_reference.py --write`"


def test_cli_reference_has_every_command():
    from slayer_kb.cli import cli

    root = click.Context(cli, info_name="slayer-kb")
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    names = cli.list_commands(root)
    assert len(names) >= 30
    for name in names:
        assert f"### `slayer-kb {name}`" in text, name
    server = cli.get_command(root, "server")
    assert isinstance(server, click.Group)
    for name in server.list_commands(root):
        assert f"#### `slayer-kb server {name}`" in text, name


def test_cli_reference_renders_help_as_markdown():
    module = _cli_reference()
    lines = module._help_markdown("Do it.\n\n    \b\n    Example:\n      slayer-kb do <id>\n    ")
    assert lines == ["Do it.", "", "Example:", "", "```sh", "slayer-kb do <id>", "```", ""]
    assert module._prose("memories/<id>.md, count(*)") == "memories/\\<id>.md, count(\\*)"


@pytest.mark.parametrize("page", PAGES + EXTRA_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_existing_files(page: Path):
    broken = []
    for target in _links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif not linked.is_relative_to(ROOT):
            broken.append(f"{target}: outside the repository")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)


def test_link_checker_sees_links_and_skips_code(tmp_path: Path):
    page = tmp_path / "page.md"
    page.write_text(
        "# A `code` title\n\nSee [a](a.md#x) and ![img](i.png).\n\n```md\n[not](missing.md)\n```\n"
        "`[nor](this.md)`\n",
        encoding="utf-8",
    )
    assert _links(page) == ["a.md#x", "i.png"]
    assert _anchors(page) == {"a-code-title"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_cites_documents_outside_the_repository(page: Path):
    text = page.read_text(encoding="utf-8")
    for name in ("CLI.md", "DESIGN.md", "../shared"):
        assert name not in text, f"{page.relative_to(ROOT)} cites {name}"


def test_readme_is_a_short_page():
    size = (ROOT / "README.md").stat().st_size
    assert size <= 10_240, f"README.md is {size} bytes; move detail into docs/"


def test_docs_index_lists_every_page():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {target.partition("#")[0] for target in _links(DOCS / "README.md")}
    for page in DOCS.glob("*.md"):
        if page.name != "README.md":
            assert page.name in linked, f"docs/README.md does not link {page.name}"
    assert index.startswith("# ")


SERVER_VARIABLES = ("SLAYER_KB_SERVER=", "SLAYER_KB_SERVER_IDLE=", "SLAYER_KB_WRITE_NICENESS=",
                    "SLAYER_KB_BUILD_WORKERS=")


def test_the_server_help_and_page_name_every_setting_of_the_server():
    from click.testing import CliRunner

    from slayer_kb.cli import cli

    result = CliRunner().invoke(cli, ["server", "--help"])
    assert result.exit_code == 0, result.output
    page = (DOCS / "server.md").read_text(encoding="utf-8")
    for variable in SERVER_VARIABLES:
        assert variable in result.output, f"`slayer-kb server --help` does not name {variable}"
        assert f"`{variable[:-1]}`" in page, f"docs/server.md does not name {variable}"
