"""JAX's own loggers stay at WARNING under a user's DEBUG logging config (issue #22 part 4),
jbind's own log lines stay, and JBIND_JAX_LOG_LEVEL changes the level."""
import logging
import subprocess
import sys

import numpy as np
import pytest

import jbind as mx
from jbind._jax_logging import quiet_jax_loggers


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def test_debug_root_logger_gets_no_jax_debug_lines_but_jbind_lines():
    root, handler = logging.getLogger(), _Records()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)  # what logging.basicConfig(level=logging.DEBUG) does
    try:
        assert logging.getLogger("jax._src.compiler").getEffectiveLevel() == logging.WARNING
        assert logging.getLogger("jbind.model").getEffectiveLevel() == logging.DEBUG
        x = mx.sym.Variable("data")
        exe = mx.sym.FullyConnected(x, num_hidden=3, name="fc_logtest").simple_bind(mx.cpu(), data=(2, 5))
        exe.forward(data=np.ones((2, 5), np.float32))
        logging.getLogger("jbind.model").info("jbind line")
    finally:
        root.removeHandler(handler)
        root.setLevel(old)
    jax_low = [r for r in handler.records if r.name.split(".")[0] in ("jax", "jaxlib") and r.levelno < logging.WARNING]
    assert jax_low == []
    assert any(r.name == "jbind.model" and r.getMessage() == "jbind line" for r in handler.records)


def test_level_set_by_the_user_is_kept_and_the_switch_sets_another():
    lg = logging.getLogger("jaxlib")
    old = lg.level
    try:
        lg.setLevel(logging.INFO)
        quiet_jax_loggers({})  # a level the user chose is left alone
        assert lg.level == logging.INFO
        lg.setLevel(logging.NOTSET)
        quiet_jax_loggers({"JBIND_JAX_LOG_LEVEL": "error"})
        assert lg.level == logging.ERROR
        lg.setLevel(logging.NOTSET)
        quiet_jax_loggers({"JBIND_JAX_LOG_LEVEL": "NOTSET"})  # leave JAX's loggers alone
        assert lg.level == logging.NOTSET
        with pytest.raises(mx.base.MXNetError, match="JBIND_JAX_LOG_LEVEL"):
            quiet_jax_loggers({"JBIND_JAX_LOG_LEVEL": "loud"})
    finally:
        lg.setLevel(old)


def test_env_switch_at_import():
    code = "import logging, jbind; print(logging.getLogger('jax').level)"
    env = {"JBIND_JAX_LOG_LEVEL": "DEBUG", "PATH": "/usr/bin:/bin", "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                         cwd=__file__.rsplit("/tests/", 1)[0])
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == str(logging.DEBUG)
