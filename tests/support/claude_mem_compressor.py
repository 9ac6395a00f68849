"""An offline OpenAI-compatible stand-in for claude-mem's observation compressor.

claude-mem's ``openrouter`` provider POSTs ``{model, messages, temperature, max_tokens}`` to
``<base>/chat/completions`` (resending the whole history) and parses the reply's XML. This server
answers the newest user message as claude-mem's parser expects:

- an observer prompt (``<observed_from_primary_session>`` … ``<outcome>`` …): one
  ``<observation>`` per transcript line ``[D1:3] Speaker: text`` found in the outcome (the tool
  response arrives JSON-encoded, possibly twice); ``<skip_summary reason="noise"/>`` when the
  outcome holds no such line;
- a summary prompt (it contains "PROGRESS SUMMARY"): one ``<summary>`` block;
- anything else (claude-mem's init prompt): ``<skip_summary reason="init"/>``.

It echoes text: it measures the pipeline, not claude-mem's compression. ``stopped = True`` makes
it answer 503 to every call (an unreachable or failing provider). Run it alone with
``python tests/support/claude_mem_compressor.py --port PORT``.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TURN_LINE = re.compile(r"^\[(D\d+:\d+)\]\s+([^:\n]{1,60}):\s+(.+)$", re.MULTILINE)
OUTCOME = re.compile(r"<outcome>(.*?)</outcome>", re.DOTALL)
SESSION_HEADER = re.compile(r"\[Session (\d+) — ([^\]]+)\]")


def _decode(text: str) -> str:
    """Undo claude-mem's JSON encoding of the tool response (once or twice)."""
    for _ in range(3):
        try:
            value: Any = json.loads(text)
        except ValueError:
            return text
        if not isinstance(value, str):
            return json.dumps(value)
        text = value
    return text


def observation_xml(dia_id: str, speaker: str, text: str, session_date: str | None) -> str:
    words = text.split()
    title = f"{speaker}: {' '.join(words[:8])}" + ("…" if len(words) > 8 else "")
    when = f" (session of {session_date})" if session_date else ""
    return ("<observation>\n  <type>discovery</type>\n"
            f"  <title>{escape(title, quote=False)}</title>\n"
            f"  <subtitle>{escape(f'Turn {dia_id}{when}', quote=False)}</subtitle>\n"
            f"  <facts>\n    <fact>{escape(f'{speaker} said: {text}', quote=False)}</fact>\n  </facts>\n"
            f"  <narrative>{escape(f'[{dia_id}] {speaker}: {text}', quote=False)}</narrative>\n"
            f"  <concepts>\n    <concept>what-changed</concept>\n  </concepts>\n"
            "  <files_read></files_read>\n  <files_modified></files_modified>\n</observation>")


def summary_xml() -> str:
    return ("<summary>\n  <request>Ingest one conversation session</request>\n"
            "  <investigated>The session transcript</investigated>\n"
            "  <learned>Each turn was recorded as one observation</learned>\n"
            "  <completed>Session recorded</completed>\n  <next_steps>None</next_steps>\n"
            "  <notes>Offline compressor stand-in</notes>\n</summary>")


def reply_for(prompt: str) -> tuple[str, str]:
    """(kind, reply text) for one prompt: kind is observation, skip, summary or init."""
    if "PROGRESS SUMMARY" in prompt:
        return "summary", summary_xml()
    match = OUTCOME.search(prompt)
    if "<observed_from_primary_session>" in prompt and match:
        outcome = _decode(match.group(1).strip())
        header = SESSION_HEADER.search(outcome)
        date = header.group(2) if header else None
        blocks = [observation_xml(m.group(1), m.group(2).strip(), m.group(3).strip(), date)
                  for m in TURN_LINE.finditer(outcome)]
        if blocks:
            return "observation", "\n".join(blocks)
        return "skip", '<skip_summary reason="noise" />'
    return "init", '<skip_summary reason="init" />'


class CompressorStandin:
    """The stand-in on a loopback port (``port=0``: a free one), served from a thread."""

    def __init__(self, port: int = 0, delay: float = 0.0) -> None:
        self.calls: list[dict] = []  # kind, model, messages (count), max_tokens, chars
        self.stopped = False
        self.delay = delay  # seconds before each answer (a slow provider)
        self.skip_all = False  # answer every observer prompt with <skip_summary/> (stores nothing)
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if standin.stopped:
                    with standin._lock:
                        standin.calls.append({"kind": "refused"})
                    return self._send(503, {"error": {"message": "compressor stand-in stopped"}})
                try:
                    body = json.loads(raw)
                    users = [m for m in body["messages"] if m.get("role") == "user"]
                    prompt = users[-1]["content"] if users else ""
                    if isinstance(prompt, list):  # content parts
                        prompt = "".join(p.get("text", "") for p in prompt if isinstance(p, dict))
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    return self._send(400, {"error": {"message": f"bad request: {exc}"}})
                kind, text = reply_for(str(prompt))
                if standin.skip_all and kind == "observation":
                    kind, text = "skip", '<skip_summary reason="noise" />'
                if standin.delay:
                    time.sleep(standin.delay)
                with standin._lock:
                    standin.calls.append({"kind": kind, "model": body.get("model"), "messages": len(body["messages"]),
                                          "max_tokens": body.get("max_tokens"), "chars": len(str(prompt)),
                                          "auth": self.headers.get("authorization", "")[:7]})
                self._send(200, {"id": f"cmpl-{len(standin.calls)}", "object": "chat.completion", "created": 0,
                                 "model": body.get("model") or "standin",
                                 "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                              "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": len(str(prompt)) // 4,
                                           "completion_tokens": len(text) // 4,
                                           "total_tokens": (len(str(prompt)) + len(text)) // 4}})

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def kinds(self) -> dict[str, int]:
        with self._lock:
            out: dict[str, int] = {}
            for c in self.calls:
                out[c["kind"]] = out.get(c["kind"], 0) + 1
            return out

    def __enter__(self) -> "CompressorStandin":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with CompressorStandin(args.port) as standin:
        print(standin.base_url, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
