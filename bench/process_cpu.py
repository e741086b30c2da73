"""CPU time of processes of this machine, read from /proc (the benchmarks' per-process costs)."""

import os
from pathlib import Path


def cpu_seconds(pids) -> float:
    """User and system CPU time used so far by these processes (not their children)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / ticks


def cpu_by_process(pids) -> dict[int, float]:
    """Each process's CPU time so far (those gone already left out)."""
    found = {}
    for pid in pids:
        try:
            found[pid] = cpu_seconds([pid])
        except OSError:
            pass
    return found
