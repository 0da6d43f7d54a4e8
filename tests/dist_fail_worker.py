"""A worker of tests/test_dist_failures.py: joins the job from the JBIND_* variables, prints
the TCP ports this process listens on, then sums over the workers step after step; the
worker whose rank is VICTIM does ACTION to itself after a few steps.

    python tests/dist_fail_worker.py ACTION VICTIM PIDDIR
    ACTION: none | kill (SIGKILL) | stop (SIGSTOP)
"""
import os
import signal
import sys
import time

open(os.path.join(sys.argv[3], "pid.%s" % os.environ["JBIND_PROCESS_ID"]), "w").write(str(os.getpid()))

import numpy as np  # noqa: E402
import jax  # noqa: E402, F401

print("joining at", time.time(), flush=True)  # jax is imported: what is left of the join is jbind's
from jbind import distributed  # noqa: E402  (joins the job)


def listening():
    """host:port of every TCP socket of this process in the LISTEN state."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    out = []
    for name in ("tcp", "tcp6"):
        with open(f"/proc/net/{name}") as f:
            for line in list(f)[1:]:
                cols = line.split()
                if cols[3] == "0A" and cols[9] in inodes:  # 0A: LISTEN
                    out.append(_addr(cols[1]))
    return out


def _addr(hexaddr):
    host, port = hexaddr.split(":")
    raw = bytes.fromhex(host)
    if len(raw) == 4:
        return "%s:%d" % (".".join(str(b) for b in raw[::-1]), int(port, 16))
    words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]  # /proc prints each 32-bit word in host order
    import ipaddress
    return "[%s]:%d" % (ipaddress.IPv6Address(b"".join(words)), int(port, 16))


def main():
    action, victim = sys.argv[1], int(sys.argv[2])
    r = distributed.rank()
    total = distributed.allreduce_sum([np.ones(2, np.float32)])[0]
    print("joined", r, np.asarray(total).tolist(), flush=True)
    print("listen", " ".join(listening()), flush=True)
    print("coordinator", os.environ["JBIND_COORDINATOR"], flush=True)
    for step in range(40):
        if r == victim and step == 3:
            print("victim", r, action, "at", time.time(), flush=True)
            if action == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif action == "stop":
                os.kill(os.getpid(), signal.SIGSTOP)
        np.asarray(distributed.allreduce_sum([np.full(3, step, np.float32)])[0])
        time.sleep(0.05)
    print("done", r, flush=True)


if __name__ == "__main__":
    main()
