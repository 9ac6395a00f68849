"""The embedded Worker talks only to the memworker it started, even when another server takes its port."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from locomo_kit.worker import embedded
from locomo_kit.worker.client import WorkerClient
from locomo_kit.worker.embedded import EmbeddedWorker


class _OtherWorker(BaseHTTPRequestHandler):
    """A Worker that is not ours (another test's claude-mem, say): ready, healthy, another pid."""

    def do_GET(self) -> None:
        body = {"status": "ready"} if self.path.startswith("/api/readiness") else \
            {"status": "ok", "name": "claude-mem", "version": "13.25.3", "pid": 1}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_a_port_taken_by_another_server_is_left_for_a_new_one(tmp_path, monkeypatch):
    other = ThreadingHTTPServer(("127.0.0.1", 0), _OtherWorker)
    threading.Thread(target=other.serve_forever, daemon=True).start()
    taken = other.server_address[1]
    real_free_port = embedded.free_port
    ports = iter([taken])
    monkeypatch.setattr(embedded, "free_port", lambda: next(ports, None) or real_free_port())
    try:
        with EmbeddedWorker(tmp_path / "mw.db", embedder="hashing") as url, WorkerClient(url, token="") as client:
            assert not url.endswith(f":{taken}")
            health = client.health()
            assert health["name"] == "memworker"
    finally:
        other.shutdown()
        other.server_close()
