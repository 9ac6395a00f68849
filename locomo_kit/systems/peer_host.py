"""What the subprocess-hosted adapters (MemPalace, Mem0) share: their environment, their host, their errors."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locomo_kit.systems.base import Identity, MemorySystemError, SystemUnavailable
from locomo_kit.systems.environments import EnvironmentBuildError, EnvironmentSpec, ensure_environment, env_python
from locomo_kit.systems.host_process import SystemHost, SystemHostError

# Nothing in a host may reach a model hub or phone home
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
               "ANONYMIZED_TELEMETRY": "False", "MEM0_TELEMETRY": "False", "TOKENIZERS_PARALLELISM": "false"}


# One math thread unless the caller sets its own: on a shared 2-core machine torch's MiniLM embedded one
# sentence in 0.76 s with 2 threads and 0.11 s with 1 (load average 10). It changes speed, not results.
THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def host_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A small environment for a host: its own HOME, the offline switches, the caller's thread limits."""
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "LANG": os.environ.get("LANG", "C.UTF-8"), **OFFLINE_ENV}
    for key in THREADS:
        env[key] = os.environ.get(key, "1")
    if "TMPDIR" in os.environ:
        env["TMPDIR"] = os.environ["TMPDIR"]
    env.update(extra or {})
    return env


def start_host(spec: EnvironmentSpec, script: str, settings: dict, home: Path,
               extra_env: dict[str, str] | None = None) -> tuple[Path, SystemHost]:
    """Build (once) the system's environment and start its host; failures are :class:`SystemUnavailable`."""
    try:
        env = ensure_environment(spec)
    except EnvironmentBuildError as exc:
        raise SystemUnavailable(f"{spec.system}: its environment could not be built: {exc}") from exc
    home.mkdir(parents=True, exist_ok=True)
    try:
        host = SystemHost(spec.system, env_python(env), script, settings, env=host_env(home, extra_env),
                          cwd=home)
    except SystemHostError as exc:
        raise SystemUnavailable(str(exc)) from exc
    return env, host


def call(host: SystemHost | None, system: str, op: str, **args: Any) -> Any:
    """``op`` in the host: an error inside the system is :class:`MemorySystemError`; a dead host
    :class:`SystemUnavailable`."""
    if host is None:
        raise SystemUnavailable(f"{system}: not open (use the system as a context manager, or call open())")
    try:
        return host.call(op, **args)
    except SystemHostError as exc:
        if not host.alive():
            raise SystemUnavailable(str(exc)) from exc
        raise MemorySystemError(str(exc)) from exc


@dataclass(frozen=True)
class LabelledIdentity(Identity):
    """An identity whose label also says what was switched off or substituted (``settings["label"]``):
    ``mem0 2.2.1 (Mem0 without LLM extraction)``, as every table and figure built from a manifest says it."""

    @property
    def label(self) -> str:
        own = self.settings.get("label")
        return f"{super().label} ({own})" if own else super().label
