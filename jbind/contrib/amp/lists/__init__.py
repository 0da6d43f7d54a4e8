"""MXNet 1.9.1's AMP op lists, one module per target dtype."""
from . import symbol_bf16, symbol_fp16  # noqa: F401
