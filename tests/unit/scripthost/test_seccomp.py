"""The script host's seccomp filter, loaded in a child process: what it denies, and what a script still does."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64", reason="syscall numbers below are x86-64's")

PROBE = """
import ctypes, errno, json, os, subprocess, threading
from openbrowse.scripthost.seccomp import install_filter
install_filter()
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
out = {}
def call(name, number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(L(number), *args)
    out[name] = [result, errno.errorcode.get(ctypes.get_errno(), "0")]
buffer = ctypes.create_string_buffer(256)
call("io_uring_setup", 425, L(1), buffer)
call("io_uring_enter", 426, L(0), L(0), L(0), L(0), L(0))
call("io_uring_register", 427, L(0), L(0), L(0), L(0))
call("bpf", 321, L(0), buffer, L(64))
call("keyctl", 250, L(0), L(-3), L(0))
call("add_key", 248, b"user", b"k", buffer, L(1), L(-3))
call("request_key", 249, b"user", b"k", L(0), L(-3))
call("userfaultfd", 323, L(0))
call("perf_event_open", 298, buffer, L(0), L(-1), L(-1), L(0))
call("ptrace", 101, L(2), L(os.getppid()), L(0), L(0))
call("process_vm_readv", 310, L(os.getppid()), L(0), L(0), L(0), L(0), L(0))
call("process_vm_writev", 311, L(os.getppid()), L(0), L(0), L(0), L(0), L(0))
call("setns", 308, L(-1), L(0))
call("unshare", 272, L(0x10000000))
call("unshare net", 272, L(0x40000000))
call("clone newuser", 56, L(0x10000000 | 17), L(0), L(0), L(0), L(0))
call("clone3", 435, L(0), L(0))
thread = threading.Thread(target=lambda: out.setdefault("thread", "ran"))
thread.start(); thread.join()
out["subprocess"] = subprocess.run(["/bin/echo", "child"], capture_output=True, text=True).stdout.strip()
print(json.dumps(out))
"""
DENIED = (
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "bpf",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "perf_event_open",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "setns",
    "unshare",
    "unshare net",
    "clone newuser",
)


def test_the_filter_denies_the_kernels_risky_interfaces_and_leaves_threads_and_children_alone() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for name in DENIED:
        assert out[name] == [-1, "EPERM"], (name, out[name])
    assert out["clone3"] == [-1, "ENOSYS"]
    assert out["thread"] == "ran" and out["subprocess"] == "child"
