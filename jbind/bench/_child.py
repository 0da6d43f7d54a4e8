"""Subprocess entry of jbind-bench: `python -m jbind.bench._child KIND ARGS_JSON OUT_PATH`.

Runs one measurement that needs a fresh process (several CPU devices, which must be
requested before JAX starts; a restart through the persistent cache) and writes its
result as JSON to OUT_PATH.
"""
from __future__ import annotations

import json
import sys


def main(argv=None) -> None:
    kind, args, out = (argv if argv is not None else sys.argv[1:])
    args = json.loads(args)
    from ..io_util import atomic_write_text
    from ._setup import Config
    cfg, extra = Config.from_json(args["config"]), args["extra"]
    if kind == "bind":
        from ._bind import measure
        result = {f.name: f.to_json() for f in measure(cfg, cfg.contexts)}
    elif kind == "restart":
        from ._compile import restart_child
        result = restart_child(cfg, extra)
    else:
        raise SystemExit(f"unknown benchmark subprocess kind {kind!r}")
    atomic_write_text(out, json.dumps(result))


if __name__ == "__main__":
    main()
