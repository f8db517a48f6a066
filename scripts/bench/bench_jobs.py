"""What the fault benchmarks (scripts/bench/faults, scripts/bench/chaos) share: a run's records,
the pauses its surviving workers logged, the pid of one rank of a running job, a SIGKILL from
outside at a chosen moment, and the wait for an mpirun that may outlive its ranks."""
import glob
import json
import os
import re
import signal
import subprocess
import time


def records(run_dir):
    path = os.path.join(run_dir, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def recovery_pauses(run_dir):
    """Seconds each surviving gradient-sharing worker's training stood still for a recovery (its
    rank-N.log line "training paused S s by the recovery")."""
    pauses = []
    for path in glob.glob(os.path.join(run_dir, "rank-*.log")):
        with open(path, errors="replace") as f:
            pauses += [float(m) for m in re.findall(r"training paused ([0-9.]+) s by the recovery", f.read())]
    return pauses


def rank_pids(run_dir):
    """{pid: logical rank} of the live ranks of the job writing RUN_DIR."""
    ranks = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
            if b"train" not in cmdline or f"run.dir={run_dir}".encode() not in cmdline:
                continue
            with open(f"/proc/{pid}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue  # a zombie: dead, only not reaped
            with open(f"/proc/{pid}/environ", "rb") as f:
                for item in f.read().split(b"\0"):
                    if item.startswith(b"OMPI_COMM_WORLD_RANK="):
                        ranks[int(pid)] = int(item.split(b"=")[1])
        except (OSError, IndexError, ValueError):
            continue
    return ranks


def wait_job(job, run_dir, hang_seconds=60):
    """Waits for JOB (an mpirun writing RUN_DIR) and returns its exit code. Open MPI 5.0.7's
    prterun was seen to stay for good after every rank had ended (a rank killed early in
    MPI_Init): once no rank has been alive for HANG_SECONDS it is killed, and "prterun hung"
    returned."""
    idle_since = None
    while True:
        try:
            return job.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        if rank_pids(run_dir):
            idle_since = None
        elif idle_since is None:
            idle_since = time.monotonic()
        elif time.monotonic() - idle_since > hang_seconds:
            job.kill()
            job.wait()
            return "prterun hung"


def rank_pid(run_dir, rank):
    """The pid of logical rank RANK of the job writing RUN_DIR, or None."""
    return next((pid for pid, r in rank_pids(run_dir).items() if r == rank), None)


def kill_later(run_dir, rank, delay, done, killed):
    """SIGKILLs logical rank RANK of the job DELAY seconds after its start, unless DONE is set."""
    if done.wait(delay):
        return
    for _ in range(200):  # a rank that has not started yet is waited for (start-up kills)
        pid = rank_pid(run_dir, rank)
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(time.monotonic())
            except OSError:
                pass
            return
        if done.wait(0.01):
            return
