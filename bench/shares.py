"""``python -m bench.shares``: how much CPU a lowered process leaves to one at niceness 0 on this
machine's scheduler (Linux; docs/performance.md, "Reads beside writes").

    python -m bench.shares                   # 4 s a pair: niceness 10, 19, SCHED_IDLE, a session 19 lower
    python -m bench.shares --seconds 10 --cpu 1

Two busy processes share one core (``--cpu``): one at niceness 0, one lowered (``nice`` steps,
or the ``SCHED_IDLE`` policy, or its session's group lowered), the lowered one either in the same
session or in a session of its own (as a process started with ``start_new_session``). Linux groups each session's processes
(autogroup, ``/proc/sys/kernel/sched_autogroup_enabled``) and shares a core between the groups
first: a niceness or a policy counts only against the threads of its own group. Printed as
JSON: the CPU seconds each got, and how many times the lowered one's the other got.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

# A child: lower itself as told, spin for the given seconds, print its CPU seconds.
SPIN = """import os, sys, time
how = sys.argv[1]
if how == "idle":
    os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
elif how.startswith("session"):  # the niceness of the session's group (core/priority.lower_session)
    open("/proc/self/autogroup", "w").write(how[len("session"):])
elif how != "0":
    os.nice(int(how))
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    pass
print(time.process_time())
"""


# Run in a session of its own, so that the pair's "same session" holds nothing else (not this
# bench's caller): start both spinners on one core, print their CPU seconds.
PAIR = """import os, subprocess, sys
spin, how, own, seconds, cpu = sys.argv[1:]
def start(lowered, session):
    return subprocess.Popen([sys.executable, "-c", spin, lowered, seconds], stdout=subprocess.PIPE, text=True,
                            start_new_session=session, preexec_fn=lambda: os.sched_setaffinity(0, {int(cpu)}))
procs = [start("0", False), start(how, own == "1")]
print(" ".join(proc.communicate()[0].strip() for proc in procs))
"""


def pair(how: str, own_session: bool, seconds: float, cpu: int) -> dict[str, object]:
    """CPU seconds of a process at niceness 0 and of one lowered by ``how`` beside it."""
    out = subprocess.run([sys.executable, "-c", PAIR, SPIN, how, "1" if own_session else "0", str(seconds), str(cpu)],
                         capture_output=True, text=True, check=True, start_new_session=True).stdout
    got = [float(word) for word in out.split()]
    return {"lowered": how, "session": "its own" if own_session else "the same", "normal_s": round(got[0], 2),
            "lowered_s": round(got[1], 2), "times": round(got[0] / got[1], 1) if got[1] else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.shares", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--cpu", type=int, default=0)
    parser.add_argument("--lowered", default="10,19,idle,session19",
                        help="comma-separated: niceness steps, idle, or sessionN (its session's group N lower)")
    args = parser.parse_args(argv)
    if not sys.platform.startswith("linux"):
        raise SystemExit("python -m bench.shares needs Linux (sched_setaffinity, SCHED_IDLE)")
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    result: dict[str, object] = {
        "autogroup": autogroup.read_text().strip() if autogroup.exists() else None,
        "kernel": os.uname().release, "load": [round(x, 2) for x in os.getloadavg()],
        # A session's group is lowered by its leader only: a process of its own session.
        "pairs": [pair(how, own, args.seconds, args.cpu) for how in args.lowered.split(",") for own in (False, True)
                  if own or not how.startswith("session")],
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
