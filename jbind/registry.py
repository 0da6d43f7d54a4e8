"""Name registries for serializable objects (initializers, metrics), as `mxnet.registry`.

`create` accepts an instance (returned as is), a registered name (case-insensitive), a
dict of keyword arguments with the name under the nickname key, or the JSON forms
'["name", {kwargs}]' and '{"nickname": "name", ...}' that `dumps()` produces.
"""
from __future__ import annotations

import json
import warnings

from .base import MXNetError

_REGISTRY: dict = {}


class UnknownNameError(MXNetError, ValueError):
    """`create` was given a name nothing is registered under."""


def get_registry(base_class) -> dict:
    """A copy of the name -> class table of `base_class`."""
    return dict(_REGISTRY.setdefault(base_class, {}))


def get_register_func(base_class, nickname: str):
    registry = _REGISTRY.setdefault(base_class, {})

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise TypeError(f"can only register subclasses of {base_class.__name__}, got {klass!r}")
        name = (name or klass.__name__).lower()
        if name in registry and registry[name] is not klass:
            warnings.warn(f"new {nickname} {klass.__module__}.{klass.__name__} registered with name {name} "
                          f"is overriding existing {nickname} {registry[name].__module__}."
                          f"{registry[name].__name__}", UserWarning, stacklevel=2)
        registry[name] = klass
        return klass

    register.__doc__ = f"Register a {nickname} class under its lower-cased class name."
    return register


def get_alias_func(base_class, nickname: str):
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def reg(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return reg

    return alias


def get_create_func(base_class, nickname: str):
    registry = _REGISTRY.setdefault(base_class, {})

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        else:
            name = kwargs.pop(nickname)
        if isinstance(name, base_class):
            if args or kwargs:
                raise ValueError(f"{nickname} is already an instance; additional arguments are invalid")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise TypeError(f"{nickname} must be a name, a JSON string or an instance, got {name!r}")
        if name.startswith("["):
            if args or kwargs:
                raise ValueError(f"{nickname} {name!r}: JSON form takes no further arguments")
            name, kwargs = json.loads(name)
            return create(name, **kwargs)
        if name.startswith("{"):
            if args or kwargs:
                raise ValueError(f"{nickname} {name!r}: JSON form takes no further arguments")
            return create(**json.loads(name))
        key = name.lower()
        if key not in registry:
            raise UnknownNameError(f"{nickname} {name!r} is not registered; known: {sorted(registry)}. "
                             f"Register it with {nickname}.register first")
        return registry[key](*args, **kwargs)

    create.__doc__ = f"Create a {nickname} from a name, a JSON config string or an instance."
    return create
