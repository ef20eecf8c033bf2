"""Name -> function registries (objectives, advantages, anchors): a duplicate name is an
error, and an unknown name lists the known ones."""

from __future__ import annotations

from collections.abc import Callable


class Registry(dict):
    def __init__(self, kind: str):
        super().__init__()
        self.kind = kind

    def register(self, name: str) -> Callable:
        def deco(fn):
            if name in self:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self[name] = fn
            return fn

        return deco

    def lookup(self, name: str) -> Callable:
        try:
            return self[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {sorted(self)}") from None
