"""grad_req 'add' run on the 'write' training program, when that one is compiled already.

An executor whose arguments sum their gradients into their buffers (grad_req 'add')
normally compiles its own training program, with the old gradients as inputs and the sum
inside. Where the same graph at the same shapes was already compiled with 'write' (MXNet's
tests bind one graph with 'write', 'add' and 'null' in turn; a model fine-tuned with
accumulation after a plain run), the 'write' program computes the same new gradients:
running it and adding the old gradients in one small compiled sum saves a whole XLA
compile of the training program (0.3-1 s for an RNN) for one more dispatch per step. The
sum is the same IEEE addition the fused program does (old + new, rounded once).
"""
from __future__ import annotations

import dataclasses

from ..compile._options import jit
from ..compile.cache import CACHE, CacheKey


def write_key(key: CacheKey) -> CacheKey:
    """`key` with every grad_req 'add' read as 'write'."""
    req = tuple((name, "write" if r == "add" else r) for name, r in key.grad_req)
    return dataclasses.replace(key, grad_req=req)


@jit
def _summed(olds, news):
    return tuple(o + n.astype(o.dtype) for o, n in zip(olds, news))


def over_write(write_fn, diff_idx: list, add_idx: list):
    """The 'add' training function from the compiled 'write' one: the same arguments
    (`old` holds the gradients of `add_idx`, in order), the same results."""
    pos = [diff_idx.index(k) for k in add_idx]

    def train(args, aux, key, counter, heads, old):
        outs, grads, new_aux, nxt = write_fn(args, aux, key, counter, heads, ())
        grads = list(grads)
        for p, s in zip(pos, _summed(tuple(old), tuple(grads[p] for p in pos))):
            grads[p] = s
        return outs, tuple(grads), new_aux, nxt
    return train


def on_write_program(ex, mode: str, key: CacheKey):
    """Executor `ex`'s training function of `mode` on the cached 'write' program, or None
    (no 'add' gradients, its own program cached already, or no 'write' one to use)."""
    if not ex._add_idx or mode not in ("train", "train_infer") or CACHE.has(key):
        return None
    wkey = write_key(key)
    if not CACHE.has(wkey):
        return None
    write = CACHE.get(wkey, lambda: ex._build(mode, add=(False,) * len(ex._add)))
    return over_write(write, ex._diff_idx, ex._add_idx)
