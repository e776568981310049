"""``default_first`` (testing/variants.py): a flow's first variant in the default run, the rest
in ``-m slow``, under the ids pytest gives them unmarked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from testing import ROOT, default_first, examples

FLOWS = '''
import pytest
{helper}

@pytest.mark.parametrize("how", default_first(["sync", "merge", "rebase"]))
def test_one(how): pass

@pytest.mark.parametrize(("first", "keep"), default_first([(True, True), (False, False), (True, False)], keep=2))
def test_two(first, keep): pass

@pytest.mark.parametrize("command", default_first([
    pytest.param(("merge", "x")), pytest.param(("rebase", "y"), marks=pytest.mark.skipif(True, reason="r"), id="rebased")]))
def test_three(command): pass
'''


def _collected_each(modules: list[Path], *marks: str) -> dict[str, list[str]]:
    """The ids pytest collects of each of ``modules`` (by file name; all in one folder, the run's
    root, so that each id names its file), in one run under the project's own settings (its
    ``-m 'not slow'`` unless ``marks`` says otherwise)."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"),
                           "--rootdir", str(modules[0].parent), *map(str, modules),
                           "-n", "0", "-p", "no:cacheprovider", "-q", "--collect-only", *marks],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode in (0, 5), proc.stdout + proc.stderr  # 5: nothing collected
    found: dict[str, list[str]] = {module.name: [] for module in modules}
    for line in proc.stdout.splitlines():
        if "::" in line:
            path, test = line.split("::", 1)
            found[Path(path).name].append(test)
    return found


def _collected(module: Path, *marks: str) -> list[str]:
    """The ids pytest collects of ``module`` (``_collected_each`` of it alone)."""
    return _collected_each([module], *marks)[module.name]


def test_the_first_values_run_by_default_and_the_rest_in_slow_under_the_same_ids(tmp_path: Path) -> None:
    marked = tmp_path / "test_marked.py"
    marked.write_text(FLOWS.format(helper="from testing import default_first"))
    plain = tmp_path / "test_plain.py"
    plain.write_text(FLOWS.format(helper="def default_first(values, keep=1): return values"))
    default, slow = _collected(marked), _collected(marked, "-m", "slow")
    assert default == ["test_one[sync]", "test_two[True-True]", "test_two[False-False]", "test_three[command0]"]
    assert slow == ["test_one[merge]", "test_one[rebase]", "test_two[True-False]", "test_three[rebased]"]
    every = _collected_each([plain, marked], "-m", "")  # both modules in one run
    assert sorted(slow + default) == sorted(every[plain.name]) == sorted(every[marked.name])


def test_the_marks_of_each_value() -> None:
    skip = pytest.mark.skipif(True, reason="r")
    given = [("sync", True), pytest.param("merge", False, marks=skip, id="m"), ("rebase", True)]
    values = default_first(given)
    assert values[0] is given[0]
    assert [(v.values, [m.name for m in v.marks], v.id) for v in values[1:]] == [
        (("merge", False), ["skipif", "slow"], "m"), (("rebase", True), ["slow"], None)]


@pytest.mark.parametrize("keep", [0, 3])
def test_a_keep_that_leaves_nothing_to_one_run_is_refused(keep: int) -> None:
    with pytest.raises(ValueError, match=rf"^default_first keeps {keep} of 3 values: keep 1 to 2, or parametrize "
                                         "without it$"):
        default_first(["sync", "merge", "rebase"], keep=keep)


def test_a_hypothesis_test_runs_a_share_of_its_examples_by_default_and_all_of_them_in_ci(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``examples``: CI (``.ci/run`` sets ``SLAYER_KB_FULL_EXAMPLES`` after the README's run, and runs
    the Hypothesis tests again) runs every example a test names, the README's run a quarter of them,
    never fewer than 10 unless it names fewer."""
    ci = (ROOT / ".ci" / "run").read_text()
    assert "\npython -m pytest\n" in ci  # the README's command, as it is
    assert ci.index("export SLAYER_KB_FULL_EXAMPLES=1\npython -m pytest -m \"hypothesis and not slow\"\n") < ci.index(
        "python -m pytest -m slow")

    def run(count: int) -> int:
        seen = []

        @settings(max_examples=examples(count), database=None)
        @given(st.integers())
        def check(number: int) -> None:
            seen.append(number)

        check()
        return len(seen)

    monkeypatch.delenv("SLAYER_KB_FULL_EXAMPLES", raising=False)
    assert [run(count) for count in (400, 40, 12, 4)] == [100, 10, 10, 4]
    monkeypatch.setenv("SLAYER_KB_FULL_EXAMPLES", "1")
    assert [run(count) for count in (400, 40, 12, 4)] == [400, 40, 12, 4]
