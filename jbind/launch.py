"""`python -m jbind.launch`: start the workers of a `jbind.distributed` job on this machine.

    python -m jbind.launch -n 2 train.py --kv-store dist_sync
    python -m jbind.launch -n 2 --coordinator 127.0.0.1:29500 -m mypackage.train --epochs 3

Each worker is `python SCRIPT ARGS...` (or `python -m MODULE ARGS...`) with the same
Python, and JBIND_COORDINATOR / JBIND_NUM_PROCESSES / JBIND_PROCESS_ID set; `import
jbind` joins the job from them. Every line a worker prints comes out prefixed with its
rank, `[0] ...`, on the launcher's stdout or stderr. When a worker fails, the others are
stopped (SIGTERM, then SIGKILL after `--grace` seconds; a worker in a JAX job takes SIGTERM
as a preemption notice and keeps running, so it is the SIGKILL that ends it) and the
launcher exits with the failed worker's code (128 + the signal for a worker killed by
one), after one line naming the worker and its exit code or signal; a worker stopped
(SIGSTOP) for longer than the heartbeat timeout fails the job too. Ctrl-C stops every
worker; so does killing the launcher (on Linux). It exits 0 when every worker does.

The coordinator listens on its HOST only (default 127.0.0.1). It has no authentication,
so a HOST other than a loopback address is refused unless `--trust-network` (or
JBIND_TRUST_NETWORK=1) says that every host on the network between the job's machines is
trusted. A port already taken is refused before any worker starts. `--join-timeout`
(JBIND_JOIN_TIMEOUT) bounds how long the workers wait for each other at the start, and
`--heartbeat-timeout` (JBIND_HEARTBEAT_TIMEOUT) how long a silent worker is waited for.

Several machines: run one launcher per machine with the same `--coordinator` (a free port
on the machine of rank 0), `--num-processes` (all workers) and each machine's own
`--first-rank`; or set the three variables for each worker yourself (a scheduler's job
script), as jbind/distributed.py describes.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from . import _dist_runtime
from .base import MXNetError
from .distributed import (DEFAULT_HEARTBEAT_TIMEOUT, ENV_COORDINATOR, ENV_HEARTBEAT_TIMEOUT, ENV_JOIN_TIMEOUT,
                          ENV_NUM_PROCESSES, ENV_PROCESS_ID, ENV_TRUST_NETWORK, env_flag, env_seconds)

__all__ = ["free_port", "launch", "main", "worker_envs"]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on now (the OS's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def worker_envs(num_local: int, coordinator: str, num_processes: int | None = None, first_rank: int = 0,
                extra: dict | None = None, base: dict | None = None) -> list:
    """The environment of each local worker: `base` (default os.environ), `extra`, and the job's variables."""
    total = num_processes if num_processes is not None else num_local
    if num_local < 1:
        raise ValueError(f"the number of workers must be at least 1, got {num_local}")
    if not 0 <= first_rank or first_rank + num_local > total:
        raise ValueError(f"ranks {first_rank}..{first_rank + num_local - 1} do not fit in a job of {total} workers")
    envs = []
    for i in range(num_local):
        env = dict(os.environ if base is None else base)
        env.update(extra or {})
        env.update({ENV_COORDINATOR: coordinator, ENV_NUM_PROCESSES: str(total),
                    ENV_PROCESS_ID: str(first_rank + i), "PYTHONUNBUFFERED": "1"})
        envs.append(env)
    return envs


def _pump(pipe, out, prefix: bytes, lock: threading.Lock) -> None:
    for line in iter(pipe.readline, b""):
        if not line.endswith(b"\n"):
            line += b"\n"
        with lock:
            try:
                out.write(prefix + line)
                out.flush()
            except (BrokenPipeError, ValueError):  # the launcher's own output went away: keep draining
                pass
    pipe.close()


def _die_with_parent():
    """A preexec_fn: the kernel sends SIGKILL to the worker when the launcher dies (Linux),
    so a launcher killed outright (a scheduler's timeout) leaves no worker behind."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGKILL)


def _signal_group(proc, sig) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(procs, grace: float) -> None:
    """SIGTERM every running worker (its whole process group), SIGKILL what is left after `grace` s."""
    running = [p for p in procs if p.poll() is None]
    for p in running:
        _signal_group(p, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in running:
        try:
            p.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        if p.poll() is None:
            _signal_group(p, signal.SIGKILL)
        p.wait()


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def _how(returncode: int) -> str:
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        name = f" ({signal.Signals(-returncode).name})"
    except ValueError:
        name = ""
    return f"was killed by signal {-returncode}{name}"


def _is_stopped(pid: int) -> bool:
    """True when the process is stopped (SIGSTOP, SIGTSTP; Linux's /proc only)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] in (b"T", b"t")
    except (OSError, IndexError):
        return False


def launch(cmd: list, envs: list, ranks: list, grace: float = 3.0, poll: float = 0.05,
           heartbeat_timeout: float = DEFAULT_HEARTBEAT_TIMEOUT) -> int:
    """Run `cmd` once per environment in `envs`, prefixing output with `ranks`; the launcher's exit code.

    A worker that exits non-zero or is killed, or stays stopped for longer than
    `heartbeat_timeout` seconds, stops the others; one line on stderr names it.
    """
    lock = threading.Lock()
    procs, pumps = [], []
    note = None
    stopped_since: dict = {}

    # Ctrl-C and SIGTERM are noted and acted on by the loop below, never raised inside it: an
    # exception raised between Popen.poll()'s taking and releasing its lock left the lock
    # held, and stopping the workers then waited on it forever.
    received: list = []

    def on_signal(signum, frame):
        received.append(signum)

    old = {}
    if threading.current_thread() is threading.main_thread():
        old = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        preexec = _die_with_parent()
        for env in envs:
            # its own process group: Ctrl-C reaches the launcher only, which stops the workers in order
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          start_new_session=True, preexec_fn=preexec))
        for p, rank in zip(procs, ranks):  # threads after every fork: preexec_fn and threads do not mix
            prefix = f"[{rank}] ".encode()
            for pipe, out in ((p.stdout, sys.stdout), (p.stderr, sys.stderr)):
                t = threading.Thread(target=_pump, args=(pipe, getattr(out, "buffer", out), prefix, lock),
                                     daemon=True)
                t.start()
                pumps.append((p, t))
        while True:
            if received:
                sig = received[0]
                code = 128 + sig
                note = f"{'interrupted' if sig == signal.SIGINT else 'terminated'}; stopping every worker"
                break
            codes = [p.poll() for p in procs]
            now = time.monotonic()
            for p, c in zip(procs, codes):
                if c is None and _is_stopped(p.pid):
                    stopped_since.setdefault(p.pid, now)
                else:
                    stopped_since.pop(p.pid, None)
            stopped = [r for p, r in zip(procs, ranks) if p.pid in stopped_since]
            also = f"; worker {', '.join(map(str, stopped))} is stopped (SIGSTOP)" if stopped else ""
            failed = [(r, c) for r, c in zip(ranks, codes) if c not in (None, 0)]
            if failed:
                (rank, c), code = failed[0], _exit_code(failed[0][1])
                note = f"worker {rank} {_how(c)}{also}; stopping the others"
                break
            frozen = [(r, now - stopped_since[p.pid]) for p, r in zip(procs, ranks)
                      if now - stopped_since.get(p.pid, now) > heartbeat_timeout]
            if frozen:
                code = 1
                note = (f"worker {frozen[0][0]} has been stopped (SIGSTOP) for {frozen[0][1]:.0f} s, more than "
                        f"the heartbeat timeout of {heartbeat_timeout:g} s; stopping the others")
                break
            if all(c == 0 for c in codes):
                code, note = 0, None
                break
            time.sleep(poll)
    except KeyboardInterrupt:  # before the handlers were in place, or off the main thread
        code, note = 128 + signal.SIGINT, "interrupted; stopping every worker"
    finally:
        for p, t in pumps:  # a failed worker's last lines first, then the reason
            if p.returncode not in (None, 0):
                t.join(timeout=1.0)
        if note:
            with lock:
                print(f"jbind.launch: {note}", file=sys.stderr, flush=True)
        _stop(procs, grace)
        for _, t in pumps:
            t.join(timeout=grace)
        for sig, handler in old.items():
            signal.signal(sig, handler)
    return code


_VALUED = {"-n", "--num-workers", "--coordinator", "--num-processes", "--first-rank", "--env", "--grace",
           "--join-timeout", "--heartbeat-timeout"}


def _split(argv: list):
    """-> (launcher options, program argv): the program starts at `-m`, `--` or the first non-option."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv[:i], argv[i + 1:]
        if a == "-m" or not a.startswith("-"):
            return argv[:i], argv[i:]
        if a in _VALUED:
            i += 2
        else:
            i += 1
    return argv, []


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m jbind.launch", description=__doc__.split("\n\n")[0],
                                usage="%(prog)s -n N [options] (SCRIPT | -m MODULE) [ARGS...]")
    p.add_argument("-n", "--num-workers", type=int, required=True, help="worker processes to start here")
    p.add_argument("--coordinator", help="HOST:PORT of rank 0's coordinator (default 127.0.0.1 and a free port)")
    p.add_argument("--num-processes", type=int, help="workers in the whole job, over every machine (default -n)")
    p.add_argument("--first-rank", type=int, default=0, help="rank of this machine's first worker (default 0)")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VAL", help="set in every worker (repeatable)")
    p.add_argument("--grace", type=float, default=3.0, help="seconds between SIGTERM and SIGKILL (default 3)")
    p.add_argument("--join-timeout", type=_seconds, metavar="S",
                   help=f"seconds for every worker to join the job (default {ENV_JOIN_TIMEOUT} or 120)")
    p.add_argument("--heartbeat-timeout", type=_seconds, metavar="S",
                   help=f"seconds a silent or stopped worker is waited for (default {ENV_HEARTBEAT_TIMEOUT} or 60)")
    p.add_argument("--trust-network", action="store_true",
                   help="allow a coordinator on a non-loopback HOST: the coordinator and the workers' gloo "
                        f"connections have no authentication (also {ENV_TRUST_NETWORK}=1)")
    return p


def _seconds(text: str) -> float:
    try:
        return env_seconds("value", 1.0, {"value": text})
    except MXNetError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds") from None


def main(argv: list | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    opts, program = _split(argv)
    parser = _parser()
    args = parser.parse_args(opts)
    if not program or program == ["-m"]:
        parser.error("give the worker's SCRIPT (or -m MODULE) and its arguments")
    extra = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            parser.error(f"--env takes KEY=VAL, got {item!r}")
        extra[key] = value
    total = args.num_processes if args.num_processes is not None else args.num_workers
    if args.coordinator is None and total > args.num_workers:
        parser.error("a job over several machines needs --coordinator HOST:PORT (on the machine of rank 0)")
    coordinator = args.coordinator or f"127.0.0.1:{free_port()}"
    for key, value in ((ENV_JOIN_TIMEOUT, args.join_timeout), (ENV_HEARTBEAT_TIMEOUT, args.heartbeat_timeout),
                       (ENV_TRUST_NETWORK, "1" if args.trust_network else None)):
        if value is not None:
            extra[key] = f"{value:g}" if isinstance(value, float) else value
    try:
        envs = worker_envs(args.num_workers, coordinator, total, args.first_rank, extra)
    except ValueError as e:
        parser.error(str(e))
    try:  # what every worker would refuse, refused once here, before any starts
        heartbeat = env_seconds(ENV_HEARTBEAT_TIMEOUT, DEFAULT_HEARTBEAT_TIMEOUT, envs[0])
        env_seconds(ENV_JOIN_TIMEOUT, 1.0, envs[0])
        _dist_runtime.check_network(coordinator, env_flag(ENV_TRUST_NETWORK, envs[0]), ENV_TRUST_NETWORK,
                                    "--trust-network")
        if args.coordinator and args.first_rank == 0:  # rank 0, and so its coordinator, runs here
            _dist_runtime.check_port_free(*_dist_runtime.parse_address(coordinator))
    except MXNetError as e:
        print(f"jbind.launch: {e}", file=sys.stderr, flush=True)
        return 2
    ranks = [args.first_rank + i for i in range(args.num_workers)]
    return launch([sys.executable] + program, envs, ranks, grace=args.grace, heartbeat_timeout=heartbeat)


if __name__ == "__main__":
    sys.exit(main())
