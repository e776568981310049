"""A new project spelt like an existing one draws the one warning (``ops/projects.py``) from every
write that names a project, over the CLI and MCP alike; and "existing" means a live memory has it
now, not that the index once held it."""

from __future__ import annotations

from typing import Any

import pytest

from slayer_kb import KnowledgeBase
from testing import CliRunner, json_of

pytest.importorskip("mcp")
from mcp import ClientSession  # noqa: E402

from testing.mcp import with_server_in_process  # noqa: E402


def near(project: str, existing: str = "'analytics'") -> str:
    return (f"New project '{project}' looks like existing {existing}; if you meant one of those, use that "
            "project name instead.")


LEARNINGS = "## Key Learnings:\n1. Refunds are counted when the payment settles, not when they are asked for\n"


def test_session_prompt_and_capture_warn_of_a_project_like_another(example_kb: KnowledgeBase,
                                                                   invoke_cli: CliRunner) -> None:
    root = example_kb.root

    async def script(session: ClientSession) -> list[Any]:
        calls = [("mem_session_start", {"id": "s-close", "project": "Analytic"}),
                 ("mem_save_prompt", {"content": "Why are refunds late?", "session_id": "s-close",
                                      "project": "Analytic"}),
                 ("mem_capture_passive", {"content": LEARNINGS, "project": "Analytic"})]
        return [await session.call_tool(name, arguments) for name, arguments in calls]

    # The prompt into the session that took the project says nothing again (the review: every
    # prompt of an agent's every turn repeated it).
    for result, warned in zip(with_server_in_process(root, script), (True, False, True), strict=True):
        assert not result.is_error and result.structured_content.get("warnings") == ([near("analytic")] if warned else None)
        assert result.content[0].text.endswith(f"\nwarning: {near('analytic')}") == warned

    # The CLI, with another spelling: the capture above made 'analytic' a project too.
    cli_near = near("analytcs", "'analytics', 'analytic'")
    started = invoke_cli("--kb", root, "session-start", "s-cli", "--project", "Analytcs")
    assert (started.returncode, started.stdout) == (
        0, f'Session "s-cli" started for project "analytcs"\nwarning: {cli_near}\n')
    prompt = invoke_cli("--kb", root, "save-prompt", "Why are refunds late?", "--session", "s-cli",
                        "--project", "Analytcs")
    assert (prompt.returncode, prompt.stdout) == (0, 'Prompt saved: "Why are refunds late?"\n')
    made = invoke_cli("--kb", root, "save-prompt", "Why?", "--session", "s-new", "--project", "Analytcs")
    assert (made.returncode, made.stdout) == (0, f'Prompt saved: "Why?"\nwarning: {cli_near}\n')  # it makes the session
    captured = invoke_cli("--kb", root, "--json", "capture-passive", LEARNINGS.replace("asked for", "requested"),
                          "--project", "Analytcs")
    assert json_of(captured)["warnings"] == [cli_near]
    # Its own project, and one the session keeps out (said otherwise), draw none.
    again = json_of(invoke_cli("--kb", root, "--json", "session-start", "s-ok", "--project", "analytics"))
    assert again["warnings"] == []
    kept = json_of(invoke_cli("--kb", root, "--json", "session-start", "s-ok", "--project", "analytix"))
    assert kept["warnings"] == ["session 's-ok' exists with project 'analytics', which it keeps: the project given "
                                "('analytix') is not used; give another session id for a session of its own"]
    # A prompt naming a project its session has not says it, as the prompt records that project.
    other = invoke_cli("--kb", root, "save-prompt", "Why?", "--session", "s-ok", "--project", "Analytix")
    assert (other.returncode, other.stdout.split(" looks like")[0]) == (
        0, 'Prompt saved: "Why?"\nwarning: New project \'analytix\'')


def test_a_blank_project_starts_no_session(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    said = "project is required and must not be blank: give the session's project (e.g. 'analytics')."
    head = example_kb.store.head()
    refused = invoke_cli("--kb", example_kb.root, "--json", "session-start", "s-new", "--project", "")
    assert (refused.returncode, json_of(refused)["error"]["message"]) == (1, said)

    async def script(session: ClientSession) -> Any:
        return await session.call_tool("mem_session_start", {"id": "s-new", "project": "  "})

    result = with_server_in_process(example_kb.root, script)
    assert (result.is_error, result.content[0].text) == (True, said)
    assert example_kb.store.head() == head and not (example_kb.root / "sessions" / "s-new.yaml").exists()


def test_a_project_corrected_away_is_warned_of_again(example_kb: KnowledgeBase, invoke_cli: CliRunner) -> None:
    """The index's words of a memory changed since (Whoosh keeps them until a merge) made the
    typo an existing project: the save after the correction said nothing."""
    root = example_kb.root

    def save(title: str) -> Any:
        return json_of(invoke_cli("--kb", root, "--json", "save", f"{title}: refunds settle a day after the "
                                  "payment, so daily totals lag", "--title", title, "--project", "Analytik", check=True))

    first = save("Refund lag")
    assert first["warnings"] == [near("analytik")]
    invoke_cli("--kb", root, "update", first["memory_id"], "--project", "analytics", check=True)
    second = save("Refund lag, again")
    assert second["warnings"] == [near("analytik")]
    # Nor is a soft-deleted memory's project an existing one, as stats counts them.
    invoke_cli("--kb", root, "forget", second["memory_id"], "--soft", check=True)
    assert save("Refund lag, once more")["warnings"] == [near("analytik")]
