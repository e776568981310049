"""The GitHub Action (action.yml) run without GitHub: its steps run as the runner would run them,
against a real pull request between two branches, with a ``gh`` stand-in on PATH that keeps the
pull request's comments and records every call."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from slayer_kb import KnowledgeBase
from testing import ROOT, commit_all, counted_apart, git, in_process_runner, write_test_catalog

GH_STANDIN = '''\
#!{python}
"""gh, as far as the action uses it: list, create and update the comments of one pull request."""
import json, os, re, sys

state_path = os.environ["GH_STANDIN_STATE"]
with open(state_path) as f:
    state = json.load(f)
args = sys.argv[1:]
call = {{"args": args}}
state["calls"].append(call)
method, fields, rest = "GET", {{}}, []
i = 0
while i < len(args):
    if args[i] == "--method":
        method, i = args[i + 1], i + 2
    elif args[i] == "-F":
        key, value = args[i + 1].split("=", 1)
        with open(value[1:], encoding="utf-8") as f:
            fields[key] = f.read()
        i += 2
    else:
        rest.append(args[i])
        i += 1
call["fields"] = fields
comments = state["comments"]
if rest[0] != "api" or not os.environ.get("GH_TOKEN"):
    sys.exit("gh stand-in: unexpected call " + repr(args))
if method == "GET" and rest[1:] == ["--paginate", "repos/team/kb/issues/7/comments"]:
    # One page per comment, as --paginate prints them: JSON arrays one after another.
    sys.stdout.write("".join(json.dumps([c]) for c in comments) or "[]")
elif method == "POST" and rest[1:] == ["repos/team/kb/issues/7/comments"]:
    comments.append({{"id": 1000 + len(comments), "body": fields["body"]}})
    print(json.dumps(comments[-1]))
elif method == "PATCH" and re.fullmatch(r"repos/team/kb/issues/comments/\\d+", rest[1]):
    comment = next(c for c in comments if c["id"] == int(rest[1].rsplit("/", 1)[1]))
    comment["body"] = fields["body"]
    print(json.dumps(comment))
else:
    sys.exit("gh stand-in: unexpected call " + repr(args))
with open(state_path, "w") as f:
    json.dump(state, f)
'''


def action() -> dict:
    return yaml.safe_load((ROOT / "action.yml").read_text())


def run_action(repo: Path, tmp_path: Path, with_: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The action's steps on a runner: setup-python is this interpreter, the install step is
    this environment's install of slayer-kb (checked, not run: it needs the network)."""
    spec = action()
    inputs = {name: str(i.get("default", "")) for name, i in spec["inputs"].items()}
    inputs.update(with_ or {})
    inputs["github-token"] = "token-from-the-workflow"
    context = {f"inputs.{name}": value for name, value in inputs.items()}
    context.update({"github.event.pull_request.number": "7", "github.action_path": str(ROOT)})
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "gh").write_text(GH_STANDIN.format(python=sys.executable))
    (bin_dir / "gh").chmod(0o755)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ["PATH"]]),
        "GH_STANDIN_STATE": str(tmp_path / "gh-state.json"),
        "GITHUB_ACTION_PATH": str(ROOT),
        "GITHUB_REPOSITORY": "team/kb",
        "GITHUB_BASE_REF": "main",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "RUNNER_TEMP": str(runner_temp),
    }
    steps = spec["runs"]["steps"]
    assert spec["runs"]["using"] == "composite"
    assert steps[0] == {"uses": "actions/setup-python@v5", "with": {"python-version": "${{ inputs.python-version }}"}}
    assert steps[1]["run"] == 'python -m pip install --quiet "$GITHUB_ACTION_PATH"'
    proc = None
    for step in steps[2:]:
        assert step["shell"] == "bash"
        step_env = dict(env)
        for name, value in step.get("env", {}).items():
            step_env[name] = re.sub(r"\$\{\{\s*([\w.-]+)\s*\}\}", lambda m: context[m.group(1)], str(value))
        # GitHub runs a bash step as 'bash --noprofile --norc -eo pipefail FILE'.
        script = tmp_path / "step.sh"
        script.write_text(step["run"])
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=repo, env=step_env, capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            break
    assert proc is not None
    return proc


def gh_state(tmp_path: Path) -> dict:
    return json.loads((tmp_path / "gh-state.json").read_text())


@pytest.fixture
def pull_request(tmp_path: Path) -> Path:
    """A team's KB on GitHub (a bare repository), main moved on after 'feature' left it, and the
    runner's checkout of feature with the whole history (actions/checkout, fetch-depth: 0)."""
    upstream = tmp_path / "upstream"
    KnowledgeBase.init(upstream)
    git(upstream, "branch", "-M", "main")
    write_test_catalog(upstream, priority=["shop"])
    commit_all(upstream, "catalog")
    kb = KnowledgeBase(upstream)
    kb.save_memory("Amount is in EUR.", ["orders.amount"])
    kb.save_memory("Status is paid, refunded or pending.", ["orders.status"])
    git(upstream, "switch", "-q", "-c", "feature")
    kb.save_memory("Refunds are net of fees.", ["orders.refunds"])
    kb.update("1", learning="Amount is in EUR, VAT included.")
    # main's agent works in its own clone (a work tree with its own state): it allocates 3 too.
    other = tmp_path / "main-clone"
    git(upstream, "worktree", "add", "-q", str(other), "main")
    main = KnowledgeBase(other)
    main.forget("2")
    counted_apart(other)  # as another clone: the worktrees' shared count forgotten
    assert main.save_memory("Main: cost excludes shipping.", ["orders.cost"]).memory_id == "3"
    bare = tmp_path / "github.git"
    git(tmp_path, "clone", "-q", "--bare", str(upstream), str(bare))
    runner = tmp_path / "workspace"
    git(tmp_path, "clone", "-q", str(bare), str(runner))
    git(runner, "checkout", "-q", "--detach", "origin/feature")
    return runner


REVIEW = """\
<!-- slayer-kb-review -->
## Knowledge base changes (origin/main...HEAD)

Memories: 1 added, 1 changed, 0 re-linked, 0 removed.

### Added

- **3**: Refunds are net of fees. (entities: `shop.orders.refunds`)

### Changed

- **1**: Amount is in EUR, VAT included. (changed: learning, updated_at)

  ```diff
  Amount is in [-EUR.-]{+EUR, VAT included.+}
  ```
"""

FIRST_COMMENT = REVIEW + """
### Validation failed

`slayer-kb validate --against origin/main` found problems; fix them on this branch:

```text
memories/3.yaml:1: id '3' was added on this branch, but origin/main already uses it for \
another memory; run 'git fetch origin && slayer-kb renumber --onto origin/main' to give this branch's \
memory a fresh id and rewrite its memory:3 references, in one commit
1 problem in 1 file (2 files checked)
```
"""

SECOND_COMMENT = """\
<!-- slayer-kb-review -->
## Knowledge base changes (origin/main...HEAD)

Memories: 1 added, 1 changed, 0 re-linked, 0 removed.

### Added

- **4**: Refunds are net of fees. (entities: `shop.orders.refunds`)

### Changed

- **1**: Amount is in EUR, VAT included. (changed: learning, updated_at)

  ```diff
  Amount is in [-EUR.-]{+EUR, VAT included.+}
  ```

### Validation

`slayer-kb validate --against origin/main`: Checked 2 files: no problems, 1 warning.

```text
memories/4.yaml:4: warning: created_at '2999-01-01T00:00:00Z' is more than a day ahead of this machine's clock, \
so newest-first lists (list, context, mem_context) put the memory first until then; write the time it happened, \
with 'slayer-kb edit 4'
```
"""


def test_the_action_posts_one_comment_and_updates_it_on_every_push(pull_request: Path, tmp_path: Path) -> None:
    runner = pull_request
    (tmp_path / "gh-state.json").write_text(json.dumps({"calls": [], "comments": [
        {"id": 5, "body": "Looks good to me"},
    ]}))
    # First push: the branch's memory 3 collides with main's 3, so the check fails, and says how.
    proc = run_action(runner, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == FIRST_COMMENT
    state = gh_state(tmp_path)
    assert [c["args"] for c in state["calls"]] == [
        ["api", "--paginate", "repos/team/kb/issues/7/comments"],
        ["api", "--method", "POST", "repos/team/kb/issues/7/comments", "-F",
         f"body=@{tmp_path}/runner-temp/slayer-kb-review/comment.md"],
    ]
    assert state["calls"][1]["fields"] == {"body": FIRST_COMMENT}
    assert state["comments"] == [{"id": 5, "body": "Looks good to me"}, {"id": 1001, "body": FIRST_COMMENT}]
    assert (tmp_path / "summary.md").read_text() == FIRST_COMMENT
    # The author does what the comment says and pushes: the same comment is updated, none added.
    author = tmp_path / "upstream"
    git(author, "fetch", "-q", str(tmp_path / "github.git"), "main:refs/remotes/origin/main")
    in_process_runner()("renumber", "--onto", "origin/main", cwd=author, check=True)  # the author's own step
    # A time in the future passes (a warning), and the comment shows the warning, not just the count.
    path = author / "memories" / "4.yaml"
    path.write_text(re.sub(r"created_at: '[^']*'", "created_at: '2999-01-01T00:00:00Z'", path.read_text()))
    commit_all(author, "memory 4 dated by hand")
    git(author, "push", "-q", str(tmp_path / "github.git"), "feature")
    git(runner, "fetch", "-q", "origin")
    git(runner, "checkout", "-q", "--detach", "origin/feature")
    proc = run_action(runner, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == SECOND_COMMENT
    state = gh_state(tmp_path)
    assert [c["args"] for c in state["calls"][2:]] == [
        ["api", "--paginate", "repos/team/kb/issues/7/comments"],
        ["api", "--method", "PATCH", "repos/team/kb/issues/comments/1001", "-F",
         f"body=@{tmp_path}/runner-temp/slayer-kb-review/comment.md"],
    ]
    assert state["comments"] == [{"id": 5, "body": "Looks good to me"}, {"id": 1001, "body": SECOND_COMMENT}]


def test_without_comments_the_action_only_prints(pull_request: Path, tmp_path: Path) -> None:
    (tmp_path / "gh-state.json").write_text(json.dumps({"calls": [], "comments": []}))
    proc = run_action(pull_request, tmp_path, {"comment": "false", "base": "origin/main"})
    assert proc.returncode == 1 and proc.stdout == FIRST_COMMENT
    assert gh_state(tmp_path)["calls"] == []


# -- the GitLab CI job of docs/review.md ----------------------------------------------------------


def doc_block(after_heading: str, language: str = "yaml") -> str:
    """The first ```language block of docs/review.md after the heading ``after_heading``."""
    text = (ROOT / "docs" / "review.md").read_text()
    section = text[text.index(f"\n{after_heading}\n"):]
    start = section.index(f"```{language}\n") + len(f"```{language}\n")
    # The block ends at a fence alone on a line, at the block's own indentation (column 0).
    end = section.index("\n```\n", start)
    return section[start:end + 1]


class FakeGitLab:
    """The merge-request notes API of one merge request (project 1, !7), on localhost."""

    def __init__(self, notes: list[dict]) -> None:
        import http.server
        import threading

        self.notes, self.calls = notes, []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self, data: object) -> None:
                body = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                data = json.loads(self.rfile.read(length)) if length else None
                fake.calls.append((self.command, self.path, self.headers["PRIVATE-TOKEN"], data))
                base = "/api/v4/projects/1/merge_requests/7/notes"
                if self.command == "GET" and self.path.startswith(base + "?per_page=100&page="):
                    page = int(self.path.rsplit("=", 1)[1])
                    self._answer(fake.notes[(page - 1) * 100:page * 100])
                elif self.command == "POST" and self.path == base:
                    fake.notes.append({"id": 2000 + len(fake.notes), "body": data["body"]})
                    self._answer(fake.notes[-1])
                elif self.command == "PUT" and self.path.startswith(base + "/"):
                    note = next(n for n in fake.notes if n["id"] == int(self.path.rsplit("/", 1)[1]))
                    note["body"] = data["body"]
                    self._answer(note)
                else:
                    self.send_error(404)

            do_GET = do_POST = do_PUT = _handle

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/api/v4"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=60)


def run_gitlab_job(repo: Path, tmp_path: Path, api: str) -> subprocess.CompletedProcess[str]:
    job = yaml.safe_load(doc_block("## GitLab CI"))["slayer-kb"]
    assert job["rules"] == [{"if": '$CI_PIPELINE_SOURCE == "merge_request_event"'}]
    assert job["variables"]["GIT_DEPTH"] == 0
    assert job["script"][0].startswith('pip install --quiet "git+')  # the network: not run here
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
        **{name: str(value) for name, value in job["variables"].items()},
        "KB": ".",  # this repository's KB is at its root
        "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
        "CI_API_V4_URL": api,
        "CI_PROJECT_ID": "1",
        "CI_MERGE_REQUEST_IID": "7",
        "SLAYER_KB_TOKEN": "glpat-test",
    }
    # The runner runs a job's script lines in one shell, stopping at the first that fails.
    script = tmp_path / "job.sh"
    script.write_text("\n".join(job["script"][1:]) + "\n")
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=120)


def test_the_gitlab_job_posts_the_same_comment_and_updates_it(pull_request: Path, tmp_path: Path) -> None:
    runner = pull_request
    git(runner, "remote", "rename", "origin", "gitlab")
    git(runner, "remote", "add", "origin", str(tmp_path / "github.git"))  # the job fetches origin
    gitlab = FakeGitLab([{"id": i, "body": f"note {i}"} for i in range(1, 101)])  # two pages
    try:
        proc = run_gitlab_job(runner, tmp_path, gitlab.url)
        assert proc.returncode == 1, proc.stderr
        assert proc.stdout == FIRST_COMMENT
        notes = "/api/v4/projects/1/merge_requests/7/notes"
        assert gitlab.calls == [
            ("GET", f"{notes}?per_page=100&page=1", "glpat-test", None),
            ("GET", f"{notes}?per_page=100&page=2", "glpat-test", None),
            ("POST", notes, "glpat-test", {"body": FIRST_COMMENT}),
        ]
        gitlab.calls.clear()
        proc = run_gitlab_job(runner, tmp_path, gitlab.url)
        assert proc.returncode == 1 and proc.stdout == FIRST_COMMENT
        assert gitlab.calls[-1] == ("PUT", f"{notes}/2100", "glpat-test", {"body": FIRST_COMMENT})
        assert len(gitlab.notes) == 101
    finally:
        gitlab.close()
