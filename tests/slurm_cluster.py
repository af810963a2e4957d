"""A one-node Slurm cluster on this machine, for tests/test_slurm.py and
bench/bench_slurm.py: munged as the munge user with a key of its own,
slurmctld and slurmd in the foreground with a configuration written here
(REFERENCE.md's settings for Slurm 22.05 as root), on ports of their own."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

SBIN = os.pathsep.join((os.environ.get("PATH", ""), "/usr/sbin", "/sbin"))


class ClusterUnavailable(Exception):
    """The cluster cannot start here; the message says why."""


def _which(name: str) -> str:
    found = shutil.which(name, path=SBIN)
    if found is None:
        raise ClusterUnavailable(f"{name} is not installed (apt-get install slurm-wlm munge)")
    return found


def _conf(folder: Path, spool: Path) -> Path:
    """The configuration; ``spool`` a short path: slurmd makes a Unix socket
    in it per job step, and a socket's path may not pass 108 bytes (CI's
    temporary folders are deep enough to, and jobs then never launch)."""
    host = socket.gethostname().split(".")[0]
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1 << 20)
    for sub in ("state", "logs"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    conf = folder / "slurm.conf"
    conf.write_text(f"""ClusterName=grader
SlurmctldHost={host}
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmctldPort=16817
SlurmdPort=16818
StateSaveLocation={folder / "state"}
SlurmdSpoolDir={spool}
SlurmctldPidFile={folder / "slurmctld.pid"}
SlurmdPidFile={folder / "slurmd.pid"}
SlurmctldLogFile={folder / "logs" / "slurmctld.log"}
SlurmdLogFile={folder / "logs" / "slurmd.log"}
NodeName={host} CPUs={os.cpu_count()} RealMemory={max(memory - 1024, 1024)} State=UNKNOWN
PartitionName=grade Nodes={host} Default=YES MaxTime=INFINITE State=UP
""")
    return conf


def _munge() -> None:
    """munged as the munge user with a key of its own, unless one answers."""
    if subprocess.run(["munge", "-n"], capture_output=True).returncode == 0:
        return
    try:
        munge = pwd.getpwnam("munge")
    except KeyError:
        raise ClusterUnavailable("no munge user (apt-get install munge)") from None
    key = Path("/etc/munge/munge.key")
    if not key.exists():
        key.write_bytes(os.urandom(1024))
    os.chown(key, munge.pw_uid, munge.pw_gid)
    key.chmod(0o400)
    for folder in ("/run/munge", "/var/lib/munge", "/var/log/munge"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        os.chown(folder, munge.pw_uid, munge.pw_gid)
    subprocess.run(["runuser", "-u", "munge", "--", _which("munged")], capture_output=True)
    for _ in range(50):
        if subprocess.run(["munge", "-n"], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    raise ClusterUnavailable("munged did not answer")


@contextlib.contextmanager
def one_node_cluster(folder: Path):
    """Start the cluster; yields the environment its commands need (SLURM_CONF)."""
    if os.geteuid() != 0:
        raise ClusterUnavailable("the daemons are started as root")
    for name in ("sbatch", "squeue", "sinfo", "scancel", "munge"):
        _which(name)
    _munge()
    spool = Path(tempfile.mkdtemp(prefix="slurmd-", dir="/tmp"))
    conf = _conf(folder, spool)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    daemons = [
        subprocess.Popen(
            [_which(d), "-D", "-f", str(conf)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for d in ("slurmctld", "slurmd")
    ]
    try:
        deadline = time.monotonic() + 60
        while True:
            state = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout.strip()
            if state == "idle":
                break
            if time.monotonic() > deadline or any(d.poll() is not None for d in daemons):
                logs = "\n".join(p.read_text()[-1500:] for p in (folder / "logs").glob("*.log"))
                raise ClusterUnavailable(f"the daemons did not bring the node up (state {state!r}):\n{logs}")
            time.sleep(0.3)
        yield env
    finally:
        subprocess.run(["scancel", "--user", "root"], env=env, capture_output=True)
        for daemon in daemons:
            daemon.terminate()
        for daemon in daemons:
            try:
                daemon.wait(timeout=20)
            except subprocess.TimeoutExpired:
                daemon.kill()
        shutil.rmtree(spool, ignore_errors=True)


def wait_for_queue(env: dict, seconds: float) -> bool:
    """True once the queue is empty, False after ``seconds``; a job Slurm
    held after failing to launch it raises at once, with slurmd's log."""
    deadline = time.monotonic() + seconds
    while True:
        queue = subprocess.run(["squeue", "-h", "-o", "%i %T %r"], env=env, capture_output=True, text=True).stdout
        if not queue.strip():
            return True
        if "launch failed" in queue:
            log = Path(env["SLURM_CONF"]).parent / "logs" / "slurmd.log"
            raise RuntimeError(f"Slurm could not launch a job:\n{queue}\n{log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
