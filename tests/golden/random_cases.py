"""Seeded initializer draws, shared by make_random_golden.py (MXNet) and test_mxrandom.py.

Each stream seeds `mx.random.seed(seed)` once and then runs its initializers in order on
fresh zero arrays, so later draws check that every engine continues where it stopped.
Shapes cover one engine (< 64 numbers), a few, and the 1024-engine cap with a short and
an unused tail of chunks.
"""

STREAMS = {
    "seed1": (1, [("uniform", (20, 3)), ("xavier_in", (300, 220)), ("normal", (37, 11)),
                  ("xavier_gauss", (64, 16, 3, 3)), ("uniform", (7, 9)), ("msra", (100, 50)),
                  ("xavier_in", (50, 40))]),
    "seed5": (5, [("xavier_in", (130, 70)), ("normal", (5, 5)), ("orthogonal_u", (30, 40)),
                  ("uniform", (1, 1))]),
    "seed0": (0, [("uniform", (10,)), ("normal", (70,))]),
    "negative": (-3, [("uniform", (4, 4))]),
}


def initializer(mx, kind):
    return {"uniform": lambda: mx.init.Uniform(0.07),
            "normal": lambda: mx.init.Normal(0.5),
            "xavier_in": lambda: mx.init.Xavier(factor_type="in", magnitude=2.34),
            "xavier_gauss": lambda: mx.init.Xavier(rnd_type="gaussian", factor_type="avg", magnitude=3),
            "msra": lambda: mx.init.MSRAPrelu(),
            "orthogonal_u": lambda: mx.init.Orthogonal(scale=1.5, rand_type="uniform")}[kind]()


def run(mx, stream):
    """The arrays of one stream, as numpy, keyed '<stream>/<k>_<kind>'."""
    seed, steps = STREAMS[stream]
    mx.random.seed(seed)
    out = {}
    for k, (kind, shape) in enumerate(steps):
        arr = mx.nd.zeros(shape)
        initializer(mx, kind)(mx.init.InitDesc("p%d_weight" % k), arr)
        out["%s/%d_%s" % (stream, k, kind)] = arr.asnumpy()
    return out
