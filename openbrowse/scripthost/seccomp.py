"""The script host's seccomp filter: the kernel interfaces scripts never need, and that widen the kernel's surface.

Denied (``EPERM``): new user namespaces (``unshare`` altogether, ``clone`` with ``CLONE_NEWUSER``, ``setns``),
io_uring, ``bpf``, the key ring (``keyctl``, ``add_key``, ``request_key``), ``userfaultfd``, ``perf_event_open``,
``ptrace`` and ``process_vm_readv``/``writev``. ``clone3`` is answered ``ENOSYS`` (its flags are behind a pointer
seccomp cannot read), so libc falls back to ``clone``, whose flags it can. Syscalls of a foreign ABI (i386 through
``int 0x80`` on x86-64) kill the process: libseccomp's default for an architecture the filter does not name.

Built with pyseccomp (ctypes over Debian's libseccomp2) and installed before any script runs; the filter is
inherited by every child and cannot be removed. Chromium keeps its own sandbox (it needs user namespaces): this
filter is for the script host only.
"""

from __future__ import annotations

import errno

import pyseccomp

CLONE_NEWUSER = 0x10000000
DENIED = (
    "unshare",
    "setns",
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
)


def build_filter() -> pyseccomp.SyscallFilter:
    """The filter, not yet loaded (everything else allowed)."""
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name in DENIED:
        rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
    rules.add_rule(
        pyseccomp.ERRNO(errno.EPERM), "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER)
    )
    rules.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")
    return rules


def install_filter() -> None:
    """Load the filter into this process (and so every child it starts); sets ``no_new_privs`` too."""
    build_filter().load()
