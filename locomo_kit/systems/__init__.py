"""Memory systems as named, swappable parts: the interface (:mod:`.base`) and the registry (:mod:`.registry`)."""

from locomo_kit.systems.base import (
           Health,
           Identity,
           Memory,
           MemorySystem,
           MemorySystemError,
           MissingDependency,
           SearchResult,
           SessionIngest,
           SystemUnavailable,
)
from locomo_kit.systems.registry import (
           DEFAULT_SYSTEM,
           WORKER_SYSTEMS,
           SystemSpec,
           create,
           is_worker,
           names,
           register,
           resolve,
           system_name,
)

__all__ = ["DEFAULT_SYSTEM", "Health", "Identity", "Memory", "MemorySystem", "MemorySystemError", "MissingDependency",
           "SearchResult", "SessionIngest", "SystemSpec", "SystemUnavailable", "WORKER_SYSTEMS", "create", "is_worker",
           "names", "register", "resolve", "system_name"]
