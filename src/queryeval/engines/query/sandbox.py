"""The operating-system sandbox every query worker process runs in (Linux).

A safety decision made on query text can be fooled by text; this layer does not read the
query at all. Before a worker accepts its first query it restricts *itself*:

* **network** -- a seccomp filter (libseccomp through ``pyseccomp``, applied to every thread
  with TSYNC) makes ``socket()`` fail with EACCES for every address family, and refuses
  ``io_uring_setup`` (io_uring can create sockets without the ``socket`` system call),
  ``execve`` / ``execveat`` (no programs) and ``ptrace``. Landlock (ABI >= 4) also denies TCP
  ``connect`` / ``bind``. The PostgreSQL worker opens its one connection *before* the
  filter is installed; the open socket stays usable, no new one can be made. System calls
  of another ABI (i386 ``int 0x80``, x32) kill the process (libseccomp's bad-architecture
  action): the filter is written for the native ABI only.
* **processes** -- the same filter refuses ``fork`` / ``vfork`` and every ``clone`` without
  ``CLONE_THREAD`` (a child process would outlive the kill that holds the deadline); ``clone3``
  answers ENOSYS, so the C library falls back to ``clone`` for threads, which stay allowed.
  ``process_vm_readv`` / ``process_vm_writev`` / ``pidfd_getfd`` are refused too (Landlock
  already scopes them; this holds where Landlock is missing).
* **memory outside RLIMIT_DATA** -- the filter refuses shared anonymous mappings
  (``mmap`` with ``MAP_SHARED | MAP_ANONYMOUS``), ``memfd_create`` and System V / POSIX IPC
  objects (``shmget``, ``shmat``, ``msgget``, ``semget``, ``mq_open``: they outlive the
  process the deadline kills); none of the engines uses them.
* **file metadata** -- Landlock does not govern a file's mode, owner, times or extended
  attributes, so the filter refuses the ``chmod`` / ``chown`` / ``utime`` / ``setxattr`` /
  ``removexattr`` families everywhere (the worker needs none of them).
* **files** -- Landlock (ABI >= 1): reading only the worker's own data (the ``readable``
  files or folders :func:`apply` is given: its database, store or allowed roots), the
  Python installation, every ``sys.path`` entry and the system files a worker needs
  (:func:`readable_roots`, :data:`SYSTEM_READABLE`) -- not ``/etc``, the user's home, the
  parent's ``/proc`` files or the worker's own ``environ``, a file beside the database or the
  run folder; executing stays allowed everywhere (the seccomp filter refuses ``execve``);
  writing, creating, removing, renaming and truncating are allowed only inside the worker's
  own temporary folder (and ``/dev/null``). The readable set is fixed at start: a worker
  allowed other files is started again (:mod:`.worker_handle`).
  Landlock applies to the calling thread and the threads it starts later, so it is applied
  first thing, before any engine is imported (the PostgreSQL worker: right after it
  connects; psycopg starts no thread); :func:`apply` counts the process's threads and
  reports the layer unavailable when another one was already running. With ABI >= 6 the
  worker also cannot signal processes outside its own domain.
* **memory** -- ``RLIMIT_DATA`` (heap and private writable mappings; RocksDB's read-only
  file mappings are not counted, so the store still opens), ``RLIMIT_FSIZE`` (no file
  larger than the memory cap, even in the temporary folder), no core dumps.
* **time** -- the parent kills the worker (SIGKILL) at its deadline (see
  :class:`..worker.WorkerProcess`).

What is available is detected, never assumed; :func:`apply` returns a report (a dict of
layer -> how it is held, or ``"unavailable: why"``) that the worker sends to the parent in
its ``ready`` message; engines expose it as ``engine.sandbox`` and the query task records it
on every execution when a layer is missing. Platform limits (docs/reliability.md): macOS and
Windows have neither seccomp nor Landlock -- there only the time and memory limits hold
(RLIMIT_DATA is advisory on macOS) and the text checks decide alone.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from collections.abc import Sequence
from typing import Any

# Landlock (include/uapi/linux/landlock.h); the system call numbers are the same on every
# architecture (they were added after the tables were unified).
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_FS_EXECUTE, _FS_WRITE_FILE, _FS_READ_FILE, _FS_READ_DIR = 1, 2, 4, 8
_FS_ALL_ABI1 = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2

DENIED_SYSCALLS = (
    "socket", "io_uring_setup", "execve", "execveat", "ptrace",
    # processes: a child would outlive the deadline's SIGKILL (clone: see _deny_processes)
    "fork", "vfork", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
    # file metadata, which Landlock does not govern
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "utime", "utimes", "futimesat", "utimensat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    # memory RLIMIT_DATA does not count (shared mappings: see _MAP_SHARED_ANONYMOUS), and
    # System V / POSIX IPC objects, which outlive the process the deadline kills
    "memfd_create", "memfd_secret", "shmget", "shmat", "msgget", "semget", "mq_open",
)
"""System calls the seccomp filter makes fail with EACCES (names libseccomp may not know on
this architecture are skipped; ``socket`` must be known)."""
_NEWER_SYSCALLS = {"setxattrat": 463, "removexattrat": 466}
"""File-metadata calls newer than some libseccomp releases, by number (the same on every
architecture since the tables were unified at 424)."""
_CLONE_THREAD = 0x00010000
_MAP_TYPE_AND_ANONYMOUS, _MAP_SHARED, _MAP_SHARED_VALIDATE, _MAP_ANONYMOUS = 0x23, 1, 3, 0x20


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        version = _libc().syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0),
                                  ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


SYSTEM_READABLE = ("/lib", "/lib32", "/lib64", "/usr/lib", "/usr/lib32", "/usr/lib64",
                   "/usr/local/lib", "/usr/share/zoneinfo", "/etc/ld.so.cache", "/etc/localtime",
                   "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random",
                   "/proc/self/cgroup", "/proc/sys/vm/overcommit_memory",
                   "/sys/devices/system/cpu", "/sys/fs/cgroup")
"""What every worker may read besides its own files and the Python installation: the shared
libraries' folders (an engine may still ``dlopen`` one, the loader reads its cache), the time
zone data, the few device files the C library and Python use, and what DuckDB reads to size
itself (its own cgroup, the CPUs, the cgroup's limits, the overcommit mode). Nothing else of
``/etc``, ``/proc`` (not the worker's own ``environ``), ``/home`` or the user's home; a
missing one is skipped. ``/proc/self`` is resolved in the worker, so it names the worker."""


def readable_roots(extra: Sequence[str] = ()) -> list[str]:
    """Every path a worker may read (:func:`restrict_filesystem_and_tcp`): ``extra`` (the
    database, store or folders it serves), the Python installation (``sys.prefix`` and the
    base ones) and every ``sys.path`` entry (imports happen lazily, after the sandbox), the
    folders of the shared libraries this process has mapped already, and
    :data:`SYSTEM_READABLE`. Paths are resolved (Landlock follows the real file); missing
    ones are left out."""
    wanted = [*extra, sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              *_import_folders(), *_mapped_library_folders(), *SYSTEM_READABLE]
    out: list[str] = []
    for path in wanted:
        real = os.path.realpath(path)
        if real not in out and os.path.exists(real):
            out.append(real)
    return out


def _import_folders() -> list[str]:
    """The ``sys.path`` entries a late import may need, less the current folder and any entry
    holding it (``python -m`` puts the folder the user ran from first, and a ``PYTHONPATH`` of
    a home folder holds it): the user's data and run folders stay closed. queryeval's own
    package folder is added back wherever it lives (a checkout run from its root)."""
    cwd = os.path.realpath(os.getcwd())
    out = []
    for entry in sys.path:
        real = os.path.realpath(entry or ".")
        if real == cwd or cwd.startswith(real.rstrip(os.sep) + os.sep):
            continue
        out.append(real)
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out.append(here)  # .../queryeval: the package, not the folder that holds it
    return out


def _mapped_library_folders() -> list[str]:
    """The folders of the shared objects mapped into this process now (``/proc/self/maps``,
    read before the sandbox closes ``/proc``): a library's neighbours load from there."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            files = {line.split(None, 5)[5].strip() for line in maps
                     if len(line.split(None, 5)) == 6}
    except OSError:
        return []
    return sorted({os.path.dirname(f) for f in files if f.startswith("/") and ".so" in f})


def restrict_filesystem_and_tcp(writable: str, *, readable: Sequence[str] = (),
                                deny_tcp: bool = True) -> dict[str, str]:
    """Landlock this thread (and the threads it starts later): reads only of
    :func:`readable_roots` ``(readable)``, writes only under ``writable``; with ``deny_tcp``
    and ABI >= 4 no TCP connect/bind either. Executing stays allowed everywhere (the seccomp
    filter refuses ``execve``)."""
    abi = landlock_abi()
    if abi <= 0:
        why = "unavailable: no Landlock in this kernel" if sys.platform.startswith("linux") \
            else f"unavailable: no Landlock on {sys.platform}"
        return {"filesystem": why}
    libc = _libc()
    fs = _FS_ALL_ABI1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0) \
        | (_FS_IOCTL_DEV if abi >= 5 else 0)
    net = (_NET_BIND_TCP | _NET_CONNECT_TCP) if deny_tcp and abi >= 4 else 0
    scoped = (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0
    attr = _RulesetAttr(fs, net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    roots = readable_roots(readable)  # before the ruleset: it reads /proc/self/maps
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return {"filesystem": f"unavailable: landlock_create_ruleset: "
                              f"{os.strerror(ctypes.get_errno())}"}
    try:
        read = _FS_EXECUTE | _FS_READ_FILE | _FS_READ_DIR
        file_rights = _FS_EXECUTE | _FS_WRITE_FILE | _FS_READ_FILE \
            | (_FS_TRUNCATE if abi >= 3 else 0)
        rules = [("/", _FS_EXECUTE), *((path, read) for path in roots), (writable, fs),
                 ("/dev/null", _FS_WRITE_FILE | _FS_READ_FILE
                  | (_FS_TRUNCATE if abi >= 3 else 0))]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | getattr(os, "O_CLOEXEC", 0))
            except OSError as exc:
                if rights == read:  # a readable path that vanished: it is simply not read
                    continue
                return {"filesystem": f"unavailable: cannot open {path}: {exc.strerror}"}
            try:
                if not os.path.isdir(path):  # a file takes only a file's rights
                    rights &= file_rights
                rule = _PathBeneathAttr(rights & fs, fd)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset),
                                ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                                ctypes.c_uint32(0)) < 0:
                    return {"filesystem": f"unavailable: landlock_add_rule({path}): "
                                          f"{os.strerror(ctypes.get_errno())}"}
            finally:
                os.close(fd)
        others = _thread_count() - 1  # threads Landlock will not reach
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
                libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            return {"filesystem": f"unavailable: landlock_restrict_self: "
                                  f"{os.strerror(ctypes.get_errno())}"}
    finally:
        os.close(ruleset)
    out = {"filesystem": f"landlock ABI {abi}: reads only the worker's own files, Python and "
                         "the shared libraries; writes only under the worker's temporary folder"}
    if others:
        out["filesystem"] = (f"unavailable: {others} other thread(s) were already running "
                             "(Landlock confines only the calling thread and its later ones)")
    if net:
        out["tcp"] = f"landlock ABI {abi}: no TCP connect or bind"
    return out


def _thread_count() -> int:
    """This process's threads (``/proc/self/task``); 1 where that cannot be read."""
    try:
        return max(1, len(os.listdir("/proc/self/task")))
    except OSError:
        return 1


def deny_network() -> str:
    """Install the seccomp filter (:data:`DENIED_SYSCALLS` fail with EACCES, on every
    thread); return how the network is held, or ``"unavailable: why"``."""
    if not sys.platform.startswith("linux"):
        return f"unavailable: no seccomp on {sys.platform}"
    try:
        import pyseccomp as seccomp
    except (ImportError, OSError, RuntimeError) as exc:  # no libseccomp on this machine
        return f"unavailable: libseccomp could not be loaded ({type(exc).__name__})"
    try:
        flt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
        flt.set_attr(seccomp.Attr.CTL_TSYNC, 1)
        for name in DENIED_SYSCALLS:
            try:
                flt.add_rule(seccomp.ERRNO(errno.EACCES), name)
            except (RuntimeError, ValueError, OSError):
                if name == "socket":  # the one rule this layer is about
                    raise
        for name, number in _NEWER_SYSCALLS.items():
            if seccomp.resolve_syscall(seccomp.Arch.NATIVE, name) < 0:
                _try_rule(flt, seccomp.ERRNO(errno.EACCES), number)
            else:
                _try_rule(flt, seccomp.ERRNO(errno.EACCES), name)
        # a new process, never a new thread: clone without CLONE_THREAD fails; clone3 (whose
        # flags sit in memory a filter cannot read) answers ENOSYS so threads use clone
        flt.add_rule(seccomp.ERRNO(errno.EACCES), "clone",
                     seccomp.Arg(0, seccomp.MASKED_EQ, _CLONE_THREAD, 0))
        _try_rule(flt, seccomp.ERRNO(errno.ENOSYS), "clone3")
        # shared anonymous memory is not counted by RLIMIT_DATA (private memory is)
        for kind in (_MAP_SHARED, _MAP_SHARED_VALIDATE):
            flt.add_rule(seccomp.ERRNO(errno.EACCES), "mmap",
                         seccomp.Arg(3, seccomp.MASKED_EQ, _MAP_TYPE_AND_ANONYMOUS,
                                     kind | _MAP_ANONYMOUS))
        flt.load()
    except Exception as exc:  # noqa: BLE001 - whatever failed, the filter is not in place
        return f"unavailable: seccomp filter not loaded ({type(exc).__name__}: {exc})"
    return ("seccomp: socket(), io_uring, exec, new processes, ptrace, file-metadata changes, "
            "shared memory and IPC objects fail")


def _try_rule(flt: Any, action: Any, syscall: str | int) -> None:
    """Add one rule; a call this kernel or libseccomp does not know needs none."""
    try:
        flt.add_rule(action, syscall)
    except (RuntimeError, ValueError, OSError):
        pass


def cap_resources(limit: int) -> str:
    """RLIMIT_DATA and RLIMIT_FSIZE at ``limit`` bytes (0: no memory cap), no core dumps."""
    try:
        import resource
    except ImportError:
        return f"unavailable: no resource limits on {sys.platform}"

    def lower(which: int, value: int) -> None:
        _soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, hard))

    lower(resource.RLIMIT_CORE, 0)
    if limit <= 0:
        return "unavailable: no memory cap was asked for"
    if not hasattr(resource, "RLIMIT_DATA"):
        return f"unavailable: no RLIMIT_DATA on {sys.platform}"
    lower(resource.RLIMIT_DATA, limit)
    lower(resource.RLIMIT_FSIZE, limit)
    return f"RLIMIT_DATA and RLIMIT_FSIZE {limit // 1024**2} MiB"


def apply(writable: str, memory_limit: int, *, readable: Sequence[str] = (),
          network: bool = True, filesystem: bool = True) -> dict[str, str]:
    """Apply the layers asked for to this process, in the order that keeps each of them
    whole (module docstring). ``readable``: the worker's own files or folders (its database,
    store, the folders a multi-file worker serves), the only data it may read. Returns the report: layer -> how it is held, or
    ``"unavailable: why"``; ``unavailable_layers(report)`` names the missing ones."""
    report: dict[str, str] = {"memory": cap_resources(memory_limit)}
    if filesystem:
        if network:  # pyseccomp finds libseccomp (ldconfig, /etc) when imported: do it now
            try:
                import pyseccomp  # noqa: F401
            except (ImportError, OSError, RuntimeError):
                pass  # deny_network reports it
        report.update(restrict_filesystem_and_tcp(writable, readable=readable,
                                                  deny_tcp=network))
    if network:
        report["network"] = deny_network()
    report["deadline"] = "the parent kills the worker (SIGKILL) at the deadline"
    return report


def unavailable_layers(report: dict[str, str] | None) -> list[str]:
    """The layers of a worker's sandbox report that are not held ("network", "filesystem",
    "memory"); every layer when there is no report."""
    if not report:
        return ["network", "filesystem", "memory"]
    return [k for k in ("network", "filesystem", "memory")
            if str(report.get(k, "unavailable")).startswith("unavailable")]


def allowed(path: str, roots: list[str]) -> bool:
    """Whether ``path`` (resolved) is one of ``roots`` or lies under one of them: the folders
    a sandboxed worker may open (the SQL worker's multi-file mode, the neighbour runner)."""
    real = os.path.realpath(path)
    for root in roots:
        root = os.path.realpath(root)
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False
