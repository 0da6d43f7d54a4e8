"""Several processes (and machines) through JAX's own distributed runtime.

A worker learns its place from three environment variables, set by
`python -m jbind.launch` or by the user / a cluster scheduler on several machines:

    JBIND_COORDINATOR    host:port of process 0's coordinator service
    JBIND_NUM_PROCESSES  how many worker processes take part
    JBIND_PROCESS_ID     this worker's rank, 0 .. N-1

and, optionally:

    JBIND_JOIN_TIMEOUT       seconds to wait for every worker to join (default 120)
    JBIND_HEARTBEAT_TIMEOUT  seconds a silent worker is given before the others give up (default 60)
    JBIND_TRUST_NETWORK=1    allow a coordinator on a non-loopback address (a job over several
                             machines): its service and gloo's connections have no authentication

`import jbind` calls `initialize()`, which starts `jax.distributed` before JAX picks its
devices (on CPU the collectives are gloo's, over TCP; on GPUs, NCCL). Without the
variables, or with one process, nothing happens and jbind runs on its own.

The coordinator listens only on the host of JBIND_COORDINATOR. A job whose workers do not
all join within the join timeout, or a coordinator port already taken, is an `MXNetError`;
a worker that dies, freezes or goes silent later ends every other worker within the
heartbeat timeout, each with one line naming it and exit code 1 (jbind/_dist_runtime.py).

The workers' mesh holds one device per worker per context, in rank order; collectives
(the gradient sum of `kvstore='dist_sync'`) run inside compiled programs over it.
"""
from __future__ import annotations

import math
import os
import sys
import threading

import jax
import numpy as np

from . import _dist_runtime
from .base import MXNetError

ENV_COORDINATOR = "JBIND_COORDINATOR"
ENV_NUM_PROCESSES = "JBIND_NUM_PROCESSES"
ENV_PROCESS_ID = "JBIND_PROCESS_ID"
ENV_JOIN_TIMEOUT = "JBIND_JOIN_TIMEOUT"
ENV_HEARTBEAT_TIMEOUT = "JBIND_HEARTBEAT_TIMEOUT"
ENV_TRUST_NETWORK = "JBIND_TRUST_NETWORK"
DEFAULT_JOIN_TIMEOUT = 120.0
DEFAULT_HEARTBEAT_TIMEOUT = 60.0

_lock = threading.Lock()
_state = {"initialized": False}


def _env_int(name: str):
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise MXNetError(f"{name}={value!r} is not an integer") from None


def env_seconds(name: str, default: float, env=None) -> float:
    """A positive number of seconds from the environment variable `name` (default if unset)."""
    value = (os.environ if env is None else env).get(name)
    if value is None or value == "":
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not seconds > 0 or math.isinf(seconds):
        raise MXNetError(f"{name}={value!r} must be a positive number of seconds")
    return seconds


def env_flag(name: str, env=None) -> bool:
    """A yes / no environment variable (1 / 0, true / false, yes / no; unset is no)."""
    value = (os.environ if env is None else env).get(name, "").strip().lower()
    if value in ("", "0", "false", "no"):
        return False
    if value in ("1", "true", "yes"):
        return True
    raise MXNetError(f"{name}={value!r} must be 1 or 0")


def initialize(coordinator: str | None = None, num_processes: int | None = None,
               process_id: int | None = None, join_timeout: float | None = None,
               heartbeat_timeout: float | None = None, trust_network: bool | None = None) -> bool:
    """Join the job described by the arguments or the JBIND_* variables; idempotent.

    Args:
        coordinator: HOST:PORT of rank 0's coordinator; it listens on HOST only. A
            non-loopback HOST is refused unless `trust_network` (JBIND_TRUST_NETWORK=1).
        num_processes, process_id: the job's size and this worker's rank.
        join_timeout: seconds for every worker to join (JBIND_JOIN_TIMEOUT, default 120).
        heartbeat_timeout: seconds after which a silent worker ends the job
            (JBIND_HEARTBEAT_TIMEOUT, default 60).
        trust_network: allow a coordinator reachable from the network (JBIND_TRUST_NETWORK).

    Returns True when this process is one of several workers. Raises MXNetError when the
    job cannot be joined (bad variables, an untrusted address, the port taken, a worker
    that never arrives).
    """
    with _lock:
        if _state["initialized"]:
            return num_workers() > 1
        if _is_launcher():  # `python -m jbind.launch` starts the workers; it is not one of them
            return False
        coordinator = coordinator or os.environ.get(ENV_COORDINATOR)
        num_processes = num_processes if num_processes is not None else _env_int(ENV_NUM_PROCESSES)
        process_id = process_id if process_id is not None else _env_int(ENV_PROCESS_ID)
        if not coordinator or not num_processes or num_processes <= 1:
            return False
        if process_id is None or not 0 <= process_id < num_processes:
            raise MXNetError(f"{ENV_PROCESS_ID}={process_id} must be in 0..{num_processes - 1} "
                             f"({ENV_NUM_PROCESSES}={num_processes})")
        env = {ENV_JOIN_TIMEOUT: join_timeout, ENV_HEARTBEAT_TIMEOUT: heartbeat_timeout}
        env = {k: str(v) for k, v in env.items() if v is not None}
        join_timeout = env_seconds(ENV_JOIN_TIMEOUT, DEFAULT_JOIN_TIMEOUT, {**os.environ, **env})
        heartbeat_timeout = env_seconds(ENV_HEARTBEAT_TIMEOUT, DEFAULT_HEARTBEAT_TIMEOUT, {**os.environ, **env})
        trust_network = env_flag(ENV_TRUST_NETWORK) if trust_network is None else trust_network
        _dist_runtime.check_network(coordinator, trust_network, ENV_TRUST_NETWORK,
                                    "`python -m jbind.launch --trust-network`")
        _dist_runtime.join(coordinator, num_processes, process_id, join_timeout, heartbeat_timeout)
        _state["initialized"] = True
        return True


def _is_launcher() -> bool:
    argv = list(getattr(sys, "orig_argv", None) or [])
    return any(a == "-m" and b == "jbind.launch" for a, b in zip(argv, argv[1:]))


def rank() -> int:
    return jax.process_index()


def num_workers() -> int:
    return jax.process_count()


def is_distributed() -> bool:
    return jax.process_count() > 1


def worker_devices(local_devices) -> list:
    """The devices of every worker that stand where `local_devices` stand here, rank-major.

    Every worker is assumed to use the same contexts (same local indices), as MXNet's
    dist_sync jobs did.
    """
    local = jax.local_devices(backend=local_devices[0].platform)
    positions = [local.index(d) for d in local_devices]
    by_proc: dict = {}
    for d in jax.devices(local_devices[0].platform):
        by_proc.setdefault(d.process_index, []).append(d)
    out = []
    for p in sorted(by_proc):
        devs = sorted(by_proc[p], key=lambda d: d.id)
        if max(positions) >= len(devs):
            raise MXNetError(f"worker {p} has {len(devs)} {local_devices[0].platform} device(s); this worker "
                             f"uses local devices {positions}")
        out.extend(devs[i] for i in positions)
    return out


_SUMS: dict = {}


def allreduce_sum(arrays, device=None) -> list:
    """Sum same-shaped arrays over all workers in one collective; returns local arrays.

    `arrays`: this worker's values (numpy or jax), all placed on `device` (default: the
    first CPU device: host values meet on the host, also where the default backend is a
    GPU that several workers share). One compiled program per (shapes, dtypes).
    """
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    device = device or jax.local_devices(backend="cpu")[0]
    devices = worker_devices([device])
    n = len(devices)
    vals = [jax.device_put(np.asarray(a) if not isinstance(a, jax.Array) else a, device) for a in arrays]
    vals = [v.reshape((1,) + v.shape) for v in vals]
    key = (tuple(str(d) for d in devices), tuple((v.shape, v.dtype.name) for v in vals))
    entry = _SUMS.get(key)
    if entry is None:
        mesh = Mesh(np.array(devices), ("w",))
        sharding = NamedSharding(mesh, P("w"))
        fn = jax.jit(jax.shard_map(lambda xs: jax.lax.psum(xs, "w"), mesh=mesh, in_specs=(P("w"),),
                                   out_specs=P("w"), check_vma=False))
        entry = _SUMS[key] = (fn, sharding)
    fn, sharding = entry
    glob = tuple(jax.make_array_from_single_device_arrays((n,) + v.shape[1:], sharding, [v]) for v in vals)
    try:
        outs = fn(glob)
    except Exception as e:  # gloo: a peer's connection closed under the collective
        if "gloo" not in str(e).lower():
            raise
        raise MXNetError(f"worker {rank()}: the all-reduce over {n} workers failed, most likely because another "
                         f"worker died ({str(e).splitlines()[0]})") from None
    return [o.addressable_data(0)[0] for o in outs]


def barrier(name: str = "jbind_barrier") -> None:
    """Block until every worker reaches the same barrier (`name` is for the reader)."""
    if not is_distributed():
        return
    jax.block_until_ready(allreduce_sum([np.zeros(1, np.int32)]))


def broadcast_from_rank0(arrays) -> list:
    """Rank 0's values on every worker (numpy arrays, bit for bit), in one collective on
    the host: a sum of the arrays' bytes to which only rank 0 contributes."""
    arrays = [np.asarray(a) for a in arrays]
    if not is_distributed():
        return arrays
    mine = [np.ascontiguousarray(a).reshape(-1).view(np.uint8) if rank() == 0 else
            np.zeros(a.size * a.dtype.itemsize, np.uint8) for a in arrays]
    sums = allreduce_sum(mine)
    return [np.asarray(b).view(a.dtype).reshape(a.shape) for a, b in zip(arrays, sums)]
