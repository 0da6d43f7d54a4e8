"""`mx.image.image`: MXNet's module path of the image functions (`mx.img.image.imread`);
the same objects as `mx.image`."""
from . import *  # noqa: F401,F403
from . import __all__  # noqa: F401
