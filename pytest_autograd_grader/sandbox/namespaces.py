"""PID namespaces for the zygote and the keepers, each with a /proc of its own.

A process in a new PID namespace that still sees the old namespace's /proc
gets wrong answers wherever it looks itself up there. CUDA's driver does,
and refuses to start ("cudaGetDeviceCount(): Error 304", or "initialization
error" inside bubblewrap): no check could run on a GPU. The zygote's and
the keepers' own scans of /proc (orphans to kill, children to reap) would
read another namespace's pids too. So a PID namespace of ours always comes
with a /proc of its own, mounted in a mount namespace of its own; where the
kernel refuses that mount (bubblewrap's /proc has read-only parts mounted
over it, a container may mask some), no PID namespace is made at all and
the keepers reap as subreapers instead.
"""

from __future__ import annotations

import os
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_RDONLY = 0x1
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_RELATIME = 1 << 21
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MNT_DETACH = 2
MS_PRIVATE = 1 << 18
PR_SET_DUMPABLE = 4
NO_PIDNS_ENV = "PYTEST_AUTOGRAD_GRADER_NO_PIDNS"


def libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def unshare_pid_namespace(allow_user_namespace: bool = True) -> bool:
    """Make our next child pid 1 of a new PID namespace; False where the
    kernel refuses. Without privilege this needs a user namespace too, which
    maps only our own uid and gid."""
    if os.environ.get(NO_PIDNS_ENV) or not sys.platform.startswith("linux"):
        return False
    try:
        lib = libc()
    except OSError:
        return False
    if lib.unshare(CLONE_NEWPID) == 0:
        return True
    if not allow_user_namespace:
        return False
    uid, gid = os.getuid(), os.getgid()
    if lib.unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0:
        return False
    # A non-dumpable process (the zygote's forks are) cannot write its own
    # maps: its /proc files belong to root.
    lib.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
    try:
        for path, text in (
            ("/proc/self/setgroups", "deny"),
            ("/proc/self/uid_map", f"{uid} {uid} 1"),
            ("/proc/self/gid_map", f"{gid} {gid} 1"),
        ):
            with open(path, "w") as handle:
                handle.write(text)
    except OSError:
        pass  # still a new PID namespace; only the ids show as unmapped
    finally:
        lib.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # workers must not read each other's memory
    return True


def mount_own_proc(own_tmp_mb: int | None = None, keep: tuple = (), cover: tuple = (), read_only: tuple = ()) -> bool:
    """Called by pid 1 of a new PID namespace: a mount namespace of its own
    holding a /proc of this namespace; with ``own_tmp_mb`` the rest of a
    worker's fence too (``fence_worker``). False where the kernel refuses a
    /proc."""
    lib = libc()
    if lib.unshare(CLONE_NEWNS) != 0:
        return False
    # systemd makes / shared: without this our /proc would replace the host's
    if lib.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return False
    if lib.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None) != 0:
        return False
    if own_tmp_mb is not None:
        return fence_worker(own_tmp_mb, keep, cover, read_only)
    return True


def within(path: str, folders: list[str]) -> bool:
    """Whether ``path`` is one of ``folders`` or lies inside one."""
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def outermost(paths) -> list[str]:
    """``paths`` without those that lie inside another of them."""
    kept: list[str] = []
    for path in sorted(set(paths)):
        if not within(path, kept):
            kept.append(path)
    return kept


def fence_worker(size_mb: int, keep: tuple = (), cover: tuple = (), read_only: tuple = ()) -> bool:
    """For a keeper's worker, in the keeper's new mount namespace: an empty
    /tmp and /dev/shm of ``size_mb`` MB each, and IPC and network namespaces
    of its own. What the worker's code leaves there (files, SysV shared
    memory and semaphores, message queues, which outlive the process that
    made them) goes with it; it sees nothing another worker of the sandbox
    left (a class's next student, or the one graded beside it), and reaches
    no socket of another worker or of the machine, and no network (a new
    network namespace has only a loopback, down). Each folder of ``cover``
    (the sandbox's staged submissions) is emptied the same way. The folders
    of ``keep`` that lie in those (the worker's own staged submission and
    folder) are bound back at their paths, and so, read-only, are those of
    ``read_only`` (where Python imports from, none inside another: a venv
    in /tmp). /var/tmp and /run/lock are not covered: a Python or venv of
    the grader's may lie there. Answers whether all of it was done; where a step fails, that part
    stays as it was."""
    options = f"mode=1777,size={max(1, int(size_mb))}m".encode()
    done = libc().unshare(CLONE_NEWIPC) == 0
    done = libc().unshare(CLONE_NEWNET) == 0 and done
    done = (_cover("/dev/shm", options, ()) if os.path.isdir("/dev/shm") else True) and done
    for folder in ("/tmp", *cover):
        done = _cover(folder, options if folder == "/tmp" else b"mode=0755,size=1m", keep, read_only) and done
    return done


def _cover(folder: str, options: bytes, keep: tuple, read_only: tuple = ()) -> bool:
    """An empty tmpfs over ``folder``, with what of ``keep`` and (read-only)
    of ``read_only`` lies in it bound back; False (and ``folder`` as it
    was) where that cannot be done."""
    lib = libc()
    back = [
        (path, fixed)
        for paths, fixed in ((keep, False), (read_only, True))
        for path in paths
        if path and path != folder and within(path, [folder])
    ]
    fds: list[int] = []
    try:
        for path, _ in back:
            fds.append(os.open(path, os.O_PATH | os.O_DIRECTORY))
    except OSError:
        for fd in fds:
            os.close(fd)
        return False
    mounted = lib.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) == 0
    bound = mounted
    for (path, fixed), fd in zip(back, fds):
        if bound:
            try:
                mask = os.umask(0)  # a class run's is 077: a worker's uid must pass to its own folder
                try:
                    os.makedirs(path, mode=0o711, exist_ok=True)
                finally:
                    os.umask(mask)
                # with what is mounted inside (the empty folders over torch's in
                # a numpy-only sandbox): a bind without them is refused in a
                # user namespace, as it would show what they hide
                bound = lib.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None) == 0
                if bound and fixed:  # a bind of a folder inside a writable mount is writable
                    bound = (
                        lib.mount(None, path.encode(), None, _kept_flags(path) | MS_REMOUNT | MS_BIND | MS_RDONLY, None)
                        == 0
                    )
            except OSError:
                bound = False
        os.close(fd)
    if mounted and not bound:
        lib.umount2(folder.encode(), MNT_DETACH)  # the worker must find its files: as before
    return bound


def _kept_flags(path: str) -> int:
    """The flags of the mount at ``path`` that a remount must repeat: in a
    user namespace the kernel refuses (EPERM) a remount that would drop one
    locked by whoever mounted it (bubblewrap's read-only binds are nosuid
    and nodev), and a venv bound from bubblewrap's /tmp stayed hidden."""
    pairs = (
        (os.ST_NOSUID, MS_NOSUID),
        (os.ST_NODEV, MS_NODEV),
        (os.ST_NOEXEC, MS_NOEXEC),
        (os.ST_NOATIME, MS_NOATIME),
        (os.ST_NODIRATIME, MS_NODIRATIME),
        (os.ST_RELATIME, MS_RELATIME),
    )
    have = os.statvfs(path).f_flag
    return sum(flag for st, flag in pairs if have & st)


def own_proc_levels(most: int) -> int:
    """How many nested PID namespaces, up to ``most``, each with its own
    /proc, can be made from here, as the zygote (outside bubblewrap) and
    then each keeper make them. Tried in throwaway children, before the
    zygote imports torch: a fork of that small process costs about a
    millisecond."""
    probe = os.fork()
    if probe == 0:
        made = 0
        try:
            while made < most and unshare_pid_namespace():
                child = os.fork()
                if child:
                    _, status = os.waitpid(child, 0)
                    made = max(made, os.waitstatus_to_exitcode(status))
                    break
                if not mount_own_proc():
                    break
                made += 1
        finally:
            os._exit(made)
    _, status = os.waitpid(probe, 0)
    return max(0, os.waitstatus_to_exitcode(status))
