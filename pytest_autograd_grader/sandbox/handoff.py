"""Hand the sandbox what its uid cannot reach, then become that uid.

A grader running as root starts bubblewrap as a fresh unprivileged uid. When
the Python installation (or the grader's package) lies behind a directory
that uid cannot enter (pyenv under /root, mode 0700, is common in Docker
images), bubblewrap cannot bind it: it resolves every source path as the
uid. This script is the step in between, run as root by the grader:

1. a mount namespace of its own, private, so nothing it mounts is seen
   outside (and everything it mounts goes away with the sandbox);
2. each unreachable directory bind-mounted, read-only, onto a mount point
   the uid can reach (inside the sandbox's own base directory);
3. supplementary groups, gid and uid dropped to the sandbox's;
4. bubblewrap (by its full path) exec'd in its place, with the mount points as sources, so
   inside the sandbox everything appears at its usual path.

The standard library only, run as ``python -I -S handoff.py SPEC BWRAP...``:
it must start before (and without) anything on sys.path. Exit status 121
and one line on stderr when a step is refused (no CAP_SYS_ADMIN in a
container, say): the grader's probe reports it and falls back.
"""

import ctypes
import json
import os
import sys

CLONE_NEWNS = 0x00020000
MS_RDONLY = 0x1
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
FAILED = 121


def _fail(step: str, detail: str) -> None:
    sys.stderr.write(f"handoff: {step}: {detail}\n")
    sys.stderr.flush()
    os._exit(FAILED)


def main(argv: list[str]) -> None:
    spec = json.loads(argv[1])
    command = argv[2:]
    libc = ctypes.CDLL(None, use_errno=True)

    def check(result: int, step: str) -> None:
        if result != 0:
            _fail(step, os.strerror(ctypes.get_errno()))

    check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    # systemd makes / shared: without this our mounts would appear on the host
    check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making / private")
    for source, target in spec["binds"]:
        source_b, target_b = os.fsencode(source), os.fsencode(target)
        check(libc.mount(source_b, target_b, None, MS_BIND | MS_REC, None), f"binding {source}")
        check(libc.mount(None, target_b, None, MS_REMOUNT | MS_BIND | MS_RDONLY, None), f"read-only {source}")
    uid = int(spec["uid"])
    try:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    except OSError as exc:
        _fail("dropping to uid", str(exc))
    if os.getuid() != uid or os.geteuid() != uid:
        _fail("dropping to uid", "still privileged")
    try:
        # execv, not execvp: its PATH search imports a module, and the
        # standard library may be behind the very directory we just lost
        os.execv(command[0], command)
    except OSError as exc:
        _fail(f"starting {command[0]}", str(exc))


if __name__ == "__main__":
    main(sys.argv)
