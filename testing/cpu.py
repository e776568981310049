"""``pytest --cpu-durations=N``: the N tests that used the most CPU time, setup and teardown included,
and how much of it was the kernel's (sys: process starts, file system work, page faults).

pytest's ``--durations`` measures wall-clock time, which on a shared machine measures the other
work as much as the test. CPU time does not: the test's own process plus the child processes it
waited for (each CLI or git run). A server or background job a test started, which nobody waits
for, is not counted: it is the test's cost all the same.
"""

from __future__ import annotations

import resource
from collections.abc import Generator, Iterator

import pytest

KEY = "cpu_seconds"
_SPENT = pytest.StashKey[tuple[float, float]]()


def add_option(parser: pytest.Parser) -> None:
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="show the N tests that used the most CPU time (this process and the children it "
                          "waited for), 0 for all: unlike --durations, another run beside it changes little")


def _cpu() -> tuple[float, float]:
    """(user + sys, sys) of this process and the children it waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    kernel = own.ru_stime + children.ru_stime
    return own.ru_utime + children.ru_utime + kernel, kernel


class CpuTimes:
    """Measured where each test runs (an xdist worker); reported where the summary is printed."""

    def __init__(self, shown: int) -> None:
        self.shown = shown
        self.spent: dict[str, tuple[float, float]] = {}

    def _measured(self, item: pytest.Item) -> Iterator[None]:
        (total, kernel) = _cpu()
        try:
            yield
        finally:  # a failing test's time counts too
            (total_now, kernel_now), (total_before, kernel_before) = _cpu(), item.stash.get(_SPENT, (0.0, 0.0))
            item.stash[_SPENT] = (total_before + total_now - total, kernel_before + kernel_now - kernel)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._measured(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._measured(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator[None]:
        return (yield from self._measured(item))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.when == "teardown":  # the last report, which xdist sends on with its properties
            total, kernel = item.stash.get(_SPENT, (0.0, 0.0))
            report.user_properties.append((KEY, [total, kernel]))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for name, value in report.user_properties:
            if name == KEY and isinstance(value, list):  # [user + sys, sys]
                self.spent[report.nodeid] = (float(value[0]), float(value[1]))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        ranked = sorted(self.spent.items(), key=lambda pair: -pair[1][0])
        total, kernel = (sum(spent[n] for spent in self.spent.values()) for n in (0, 1))
        terminalreporter.write_sep("=", f"CPU time: {total:.1f} s ({kernel:.1f} s sys) over {len(ranked)} tests")
        for nodeid, (seconds, sys_seconds) in ranked[: self.shown or None]:
            terminalreporter.write_line(f"{seconds:7.2f}s {sys_seconds:6.2f}s sys {nodeid}")
