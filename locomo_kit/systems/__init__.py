"""Memory systems as named, swappable parts: the interface (:mod:`.base`) and the registry (:mod:`.registry`)."""

from locomo_kit.systems.base import (Health, Identity, Memory, MemorySystem, MemorySystemError, MissingDependency,
                                     SearchResult, SessionIngest, SystemUnavailable)
from locomo_kit.systems.registry import DEFAULT_SYSTEM, SystemSpec, create, names, register, resolve

__all__ = ["Health", "Identity", "Memory", "MemorySystem", "MemorySystemError", "MissingDependency", "SearchResult",
           "SessionIngest", "SystemUnavailable", "DEFAULT_SYSTEM", "SystemSpec", "create", "names", "register",
           "resolve"]
