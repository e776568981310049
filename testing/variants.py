"""A flow parametrized over how it is reached (merge, rebase or sync; which side goes first;
keep or let go; the server on or off): the default run takes the variant users meet most,
``-m slow`` the rest (docs/testing.md, "A flow's variants"). And a Hypothesis test's examples:
a share in a developer's default run, all of them in CI's (``examples``)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pytest

# pytest.param's type (pytest.ParameterSet is public from pytest 9.2 only; the dev extra takes 8).
_PARAM = type(pytest.param())


def default_first(values: Sequence[object], keep: int = 1) -> list[object]:
    """``values`` for ``pytest.mark.parametrize``: the first ``keep`` as given, the rest marked
    ``slow``, each with the id pytest gives it unmarked. A tuple is the values of several argnames;
    a ``pytest.param`` keeps its marks and id (so a single argname's tuple value goes in one)."""
    if not 0 < keep < len(values):
        raise ValueError(f"default_first keeps {keep} of {len(values)} values: keep 1 to {len(values) - 1}, "
                         "or parametrize without it")
    return [value if n < keep else _slow(value) for n, value in enumerate(values)]


def _slow(value: object) -> object:
    if isinstance(value, _PARAM):
        return pytest.param(*value.values, marks=(*value.marks, pytest.mark.slow), id=value.id)
    return pytest.param(*(value if isinstance(value, tuple) else (value,)), marks=pytest.mark.slow)


# Set by .ci/run after the README's run, for its rerun of the Hypothesis tests and the slow suites:
# every Hypothesis test runs all the examples it names.
FULL_EXAMPLES = "SLAYER_KB_FULL_EXAMPLES"


def examples(count: int) -> int:
    """A Hypothesis test's ``max_examples``: ``count`` where ``FULL_EXAMPLES`` is set (CI), else a
    quarter of it and at least 10 (or ``count``, if fewer): what an example finds is found by
    the first few in most runs, and CI runs them all on every landing."""
    return count if os.environ.get(FULL_EXAMPLES) else max(min(count, 10), count // 4)
