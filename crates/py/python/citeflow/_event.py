"""``Event``: any event the engine emits (a leaf, imported by the package's modules)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Union

from ._citeflow import (
    AnchorEvent,
    CitationEvent,
    DoneEvent,
    NumberNeededEvent,
    SourceEvent,
    TextEvent,
    UnresolvedEvent,
)

__all__ = ["Event", "field"]

#: Any event a ``Rewriter`` emits; narrow it on ``.type``.
Event = Union[
    SourceEvent,
    TextEvent,
    CitationEvent,
    UnresolvedEvent,
    NumberNeededEvent,
    AnchorEvent,
    DoneEvent,
]


def field(obj: Any, name: str) -> Any:
    """``obj[name]`` of a mapping, else the attribute ``name`` (None when missing): SDK objects
    and the plain dicts of their JSON read alike."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)
