"""XLA compile options for jbind's programs.

On the CPU (jaxlib 0.10.2) XLA's newer fusion emitters cost much compile time on the
programs jbind makes: with its older loop emitters (`xla_cpu_use_fusion_emitters=False`)
squeezenet1.1's first training step compiles in 4.1 s of CPU instead of 7.3, its batch-1
inference in 1.1 s instead of 1.9, resnet18's batched optimizer update in 1.7 s instead
of 2.7; the programs ran as fast or faster (squeezenet inference 15 ms against 20, the
update 33 ms against 90; the training steps within the machine's noise). Set
`JBIND_XLA_FUSION_EMITTERS=1` before the first compile to keep XLA's default.
"""
from __future__ import annotations

import os

import jax


def compile_options() -> dict | None:
    """The `compiler_options` for `jax.jit(...)` / `Lowered.compile(...)`; None keeps XLA's."""
    if os.environ.get("JBIND_XLA_FUSION_EMITTERS", "").strip() in ("1", "true", "yes"):
        return None
    return {"xla_cpu_use_fusion_emitters": False} if jax.default_backend() == "cpu" else None
