"""The system calls the answer process may not make: a seccomp filter that bubblewrap installs (`bwrap --seccomp FD`)
just before it starts the process, built with libseccomp (through `pyseccomp`, ctypes over libseccomp.so.2).

The list starts from Docker's default profile, less what the course needs (numpy, numba and llvmlite, threads,
`fork`); a denied call fails with EPERM, as it does in a container. Calls of another architecture's numbering (the
32-bit `int 0x80` ABI) kill the process: they would bypass the list.
"""
from __future__ import annotations

import errno
import functools
import os
import sys
import tempfile

from tito.workspace import TitoError

LIBRARY_PACKAGE = "libseccomp2"

DENIED = (
    # the kernel keyring: no namespace separates it (a submission would reach the grader's keys, the hidden inputs
    # its own graded run saw, and the answers of the submission graded before it)
    "add_key", "keyctl", "request_key",
    # leaving the job's session (and with it the job's autogroup, the kernel's unit of CPU sharing without cgroups)
    "setsid",
    # namespaces, mounts and root changes
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr",
    # other processes' memory, and kernel objects shared with them
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "userfaultfd", "perf_event_open",
    "bpf", "fanotify_init", "name_to_handle_at", "open_by_handle_at", "lookup_dcookie",
    # the machine itself: clock, modules, swap, reboot, accounting, quotas, NUMA placement, I/O ports, kernel log
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "init_module", "finit_module", "delete_module",
    "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "syslog",
    "mbind", "set_mempolicy", "move_pages", "migrate_pages", "iopl", "ioperm", "uselib", "ustat", "sysfs",
    "vhangup", "nfsservctl", "personality",
)
# clone() flags that make namespaces (CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET): a plain fork
# or thread sets none of them
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000)


def _library():
    "pyseccomp, or a one-line error naming what to install."
    try:
        import pyseccomp
    except ImportError:
        raise TitoError("autograde needs the Python package pyseccomp for its sandbox's system-call filter: "
                        "pip install pyseccomp") from None
    except (OSError, RuntimeError):  # pyseccomp found no libseccomp.so.2
        raise TitoError(f"autograde needs libseccomp for its sandbox's system-call filter, which is not installed: "
                        f"install the package `{LIBRARY_PACKAGE}` (Debian/Ubuntu: sudo apt-get install "
                        f"{LIBRARY_PACKAGE})") from None
    return pyseccomp


# Runs before bwrap: a new anonymous session keyring (KEYCTL_JOIN_SESSION_KEYRING), so that the grader's own is not
# handed down even where the filter is not in force; then bwrap. Failing that (keyctl denied to tito itself), bwrap.
KEYRING_SCRIPT = """\
import ctypes, os, sys
libc = ctypes.CDLL(None)
libc.syscall.restype = ctypes.c_long
libc.syscall(ctypes.c_long(int(sys.argv[1])), ctypes.c_long(1), None)
os.execv(sys.argv[2], sys.argv[2:])
"""


def fresh_keyring_prefix() -> list[str]:
    "The command that starts what follows it with a session keyring of its own."
    nr = _library().resolve_syscall(_library().Arch.NATIVE, "keyctl")
    return [sys.executable, "-I", "-S", "-c", KEYRING_SCRIPT, str(nr)]


@functools.lru_cache(maxsize=1)
def program() -> bytes:
    "The filter as the BPF program bwrap loads."
    sc = _library()
    f = sc.SyscallFilter(sc.ALLOW)
    deny = sc.ERRNO(errno.EPERM)
    for name in DENIED:
        if sc.resolve_syscall(sc.Arch.NATIVE, name) >= 0:  # < 0: not a system call libseccomp knows here
            f.add_rule(deny, name)
    for flag in NAMESPACE_FLAGS:
        f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # its flags are out of the filter's sight; libc falls back to clone
    with tempfile.TemporaryFile() as out:
        f.export_bpf(out)
        out.seek(0)
        return out.read()


def program_fd(bpf: bytes) -> int:
    "A file descriptor holding `bpf` from its start, for `bwrap --seccomp FD` (the caller closes it)."
    fd = os.memfd_create("tito-seccomp", 0)
    os.write(fd, bpf)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
