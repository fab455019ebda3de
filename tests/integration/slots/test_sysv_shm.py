"""A killed process's SysV shared memory (what a SIGKILLed x11vnc leaves) is removed; nobody else's is."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from openbrowse.slots.sysv_shm import KilledCreators, remove_orphan_segments

MAKE_SEGMENT = """
import ctypes, sys, time
libc = ctypes.CDLL("libc.so.6")
shmid = libc.shmget(0, 4096, 0o1000 | 0o600)  # IPC_PRIVATE, IPC_CREAT
print(shmid, flush=True)
time.sleep(600)
"""

ATTACH_SEGMENT = """
import ctypes, sys, time
libc = ctypes.CDLL("libc.so.6")
libc.shmat.restype = ctypes.c_void_p
assert libc.shmat(int(sys.argv[1]), None, 0) not in (None, ctypes.c_void_p(-1).value)
print("attached", flush=True)
time.sleep(600)
"""


def segment_ids() -> set[int]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()
    at = lines[0].split().index("shmid")
    return {int(line.split()[at]) for line in lines[1:]}


def make_segment() -> tuple[subprocess.Popen[str], int]:
    child = subprocess.Popen([sys.executable, "-c", MAKE_SEGMENT], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    shmid = int(child.stdout.readline())
    assert shmid >= 0 and shmid in segment_ids()
    return child, shmid


def test_segments_of_a_killed_creator_are_removed_and_others_kept() -> None:
    started = time.time()
    victim, victim_segment = make_segment()
    bystander, bystander_segment = make_segment()
    try:
        victim.kill()
        victim.wait(10)
        assert victim_segment in segment_ids()  # the kernel keeps it: nobody marked it for removal
        assert remove_orphan_segments({victim.pid: started}) == 1
        assert victim_segment not in segment_ids()
        assert bystander_segment in segment_ids()
    finally:
        bystander.kill()
        bystander.wait(10)
        remove_orphan_segments({bystander.pid: started})
    assert bystander_segment not in segment_ids()


def test_an_older_orphan_under_a_reused_pid_is_not_taken_for_the_creators() -> None:
    """Pids wrap around: a process that got a dead program's pid did not make that program's segments."""
    older, segment = make_segment()
    try:
        older.kill()
        older.wait(10)
        reused_at = time.time() + 5  # a later process with the same pid
        assert remove_orphan_segments({older.pid: reused_at}) == 0
        assert segment in segment_ids()
    finally:
        remove_orphan_segments({older.pid: 0.0})
    assert segment not in segment_ids()


def test_a_segment_still_held_when_its_creator_is_reaped_is_swept_once_the_holder_is_gone() -> None:
    """What x11vnc and Xvfb do: the X server holds the killed x11vnc's segments for a moment after it is reaped."""
    started = time.time()
    creator, segment = make_segment()
    holder = subprocess.Popen([sys.executable, "-c", ATTACH_SEGMENT, str(segment)], stdout=subprocess.PIPE, text=True)
    killed = KilledCreators()
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "attached"
        creator.kill()
        creator.wait(10)
        killed.killed(creator.pid, started)
        assert segment in segment_ids()  # attached by the holder: not an orphan yet
        holder.kill()
        holder.wait(10)
        assert segment in segment_ids()  # nobody marked it for removal: it would stay for good
        assert remove_orphan_segments(killed.take()) == 1
        assert segment not in segment_ids()
        assert killed.take() == {}
    finally:
        for child in (creator, holder):
            child.kill()
            child.wait(10)
        remove_orphan_segments({creator.pid: 0.0})
