"""``pytest --cpu-durations=N`` (testing/cpu.py): each test's CPU time, most first. Run with
``-n 0``: the figures travel in the reports' ``user_properties``, which xdist sends on as they are
(one process less for the suite to start)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from testing import ROOT

TESTS = ("tests/test_ids.py::test_case_conflict", "tests/test_ids.py::test_every_int_is_an_auto_id")


def test_each_tests_cpu_time_is_reported_most_first(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *TESTS, "-n", "0", "-q", "-p", "no:cacheprovider",
         "--basetemp", str(tmp_path / "base"), "--cpu-durations=0"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    [header] = [n for n, line in enumerate(lines) if "CPU time:" in line]
    total = re.fullmatch(r"=+ CPU time: (\d+\.\d) s \((\d+\.\d) s sys\) over 2 tests =+", lines[header])
    assert total, lines[header]
    rows = [re.fullmatch(r" *(\d+\.\d\d)s +(\d+\.\d\d)s sys (\S+)", line) for line in lines[header + 1: header + 3]]
    assert all(rows), lines[header:]
    seconds = [float(row[1]) for row in rows if row]
    kernel = [float(row[2]) for row in rows if row]
    assert sorted(row[3] for row in rows if row) == sorted(TESTS)
    assert seconds == sorted(seconds, reverse=True) and seconds[0] > 0  # hypothesis's 100 examples take some
    assert abs(sum(seconds) - float(total[1])) <= 0.06  # rounding of two figures
    assert abs(sum(kernel) - float(total[2])) <= 0.06
    assert all(part <= whole for part, whole in zip(kernel, seconds, strict=True))  # sys is part of the time
