"""The request loop of a system host: JSON lines over stdin/stdout (stdlib only).

A host runs inside a third-party system's own environment, so it imports nothing of the kit. Each
request is one line ``{"id": n, "op": name, "args": {...}}``; each answer one line
``{"id": n, "ok": true, "result": ...}`` or ``{"id": n, "ok": false, "error": "...", "traceback": "..."}``.
The first line a host writes is ``{"ready": true, "info": {...}}`` once its system is imported and opened
(or ``{"ready": false, "error": ...}``). Anything the system prints goes to stderr, never into the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, Callable


def serve(open_system: Callable[[dict], tuple[dict, dict[str, Callable[..., Any]]]]) -> None:
    """Read the host's settings (first line), open the system, then answer requests until stdin closes."""
    protocol = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # native code that prints to fd 1 too
    sys.stdout = sys.stderr

    def send(message: dict) -> None:
        protocol.write(json.dumps(message, ensure_ascii=False) + "\n")
        protocol.flush()

    try:
        settings = json.loads(sys.stdin.readline() or "{}")
        info, handlers = open_system(settings)
    except BaseException as exc:
        send({"ready": False, "error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()})
        return
    send({"ready": True, "info": info, "ops": sorted(handlers)})
    for line in sys.stdin:
        if not line.strip():
            continue
        request: dict = {}
        try:
            request = json.loads(line)
            op = request["op"]
            if op not in handlers:
                raise ValueError(f"unknown operation {op!r} (this host has {', '.join(sorted(handlers))})")
            result = handlers[op](**request.get("args", {}))
            send({"id": request.get("id"), "ok": True, "result": result})
        except Exception as exc:
            send({"id": request.get("id"), "ok": False, "error": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc()})
