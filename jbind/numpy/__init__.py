"""`mx.numpy` / `mx.np`: MXNet 1.9's NumPy-compatible array API, which jbind does not provide.

The module imports, so a script or test module that imports it at the top (as many of
MXNet's do) loads and its other parts run; reading any name from it raises an
AttributeError that says jbind has no `mx.np` arrays (the same stance as
`mx.test_utils.use_np`, whose functions raise when called). Use `mx.nd` arrays.
"""


def __getattr__(name):
    if name.startswith("__") and name.endswith("__"):
        raise AttributeError(name)
    raise AttributeError(f"mx.np.{name}: jbind has no mx.np (MXNet's NumPy-compatible arrays); "
                         "use mx.nd arrays and operators")
