"""`mx.gluon.model_zoo.vision`: every model of MXNet 1.9.1's vision zoo, with its parameter
names (so parameter files saved by MXNet load), and `get_model(name, **kwargs)`.

`pretrained=True` reads MXNet's pretrained file from a local `root` (default
~/.mxnet/models, see `model_store`); jbind never downloads.
"""
from ....base import MXNetError
from .alexnet import *  # noqa: F401,F403
from .densenet import *  # noqa: F401,F403
from .inception import *  # noqa: F401,F403
from .mobilenet import *  # noqa: F401,F403
from .resnet import *  # noqa: F401,F403
from .squeezenet import *  # noqa: F401,F403
from .vgg import *  # noqa: F401,F403

_MODELS = {
    **{f"resnet{d}_v{v}": globals()[f"resnet{d}_v{v}"] for v in (1, 2) for d in (18, 34, 50, 101, 152)},
    **{f"vgg{d}{bn}": globals()[f"vgg{d}{bn}"] for bn in ("", "_bn") for d in (11, 13, 16, 19)},
    "alexnet": alexnet,  # noqa: F405
    **{f"densenet{d}": globals()[f"densenet{d}"] for d in (121, 161, 169, 201)},
    "squeezenet1.0": squeezenet1_0, "squeezenet1.1": squeezenet1_1,  # noqa: F405
    "inceptionv3": inception_v3,  # noqa: F405
    **{f"mobilenet{m}": globals()[f"mobilenet{m.replace('.', '_')}"] for m in ("1.0", "0.75", "0.5", "0.25")},
    **{f"mobilenetv2_{m}": globals()[f"mobilenet_v2_{m.replace('.', '_')}"] for m in ("1.0", "0.75", "0.5", "0.25")},
}


class UnknownModelError(MXNetError, ValueError):
    """`get_model` of a name the zoo does not have (a ValueError, as in MXNet)."""


def get_model(name, **kwargs):
    """The zoo model called `name` (case-insensitive), e.g. 'resnet18_v1', 'mobilenet0.25'.

    Keyword arguments go to the model: `classes`, `pretrained`, `ctx`, `root`, `prefix`, ...
    """
    key = name.lower()
    if key not in _MODELS:
        raise UnknownModelError(f"Model {name} is not supported. Available options are\n\t"
                                + "\n\t".join(sorted(_MODELS)))
    return _MODELS[key](**kwargs)
