"""64-bit dtypes: JAX's x64 mode, on at `import jbind` as MXNet keeps float64 and int64.

MXNet stores float64 / int64 arrays as such (`mx.nd.array(np.float64 array)`, `dtype='int64'`,
float64 parameters in a `.params` file). JAX narrows them to 32 bits unless its x64 mode is
on, so jbind turns it on before any array is made. Float32 programs stay float32: jbind's
ops pass dtypes explicitly, and tests check that compiled float32 models hold no f64 op.

`JBIND_X64=0` leaves JAX's setting as it is (then `JAX_ENABLE_X64` decides, off by
default, and 64-bit arrays are stored as 32-bit ones).
"""
from __future__ import annotations

import os

import jax


def enable() -> bool:
    """Turn JAX's x64 mode on unless JBIND_X64=0; return whether it is on."""
    if os.environ.get("JBIND_X64", "1").strip().lower() not in ("0", "false", "no", "off"):
        jax.config.update("jax_enable_x64", True)
    return bool(jax.config.jax_enable_x64)
