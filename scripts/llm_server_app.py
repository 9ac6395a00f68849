"""llama.cpp's own OpenAI-compatible server (``server.cpp``, as the prebuilt ``xllamacpp`` wheel embeds it) on
loopback, with one option of its own: ``--max-tokens N`` caps what the server generates for each call, whatever
the call asks (llama.cpp's own ``n_predict``, ``llama-server -n``, is only the default for a call that asks
none: a call asking more gets more, checked with this wheel). Run by ``scripts/llm-server start`` with the server venv's Python; the cap
lets a test give a client that hard-codes a large ``max_tokens`` (claude-mem asks 4,096 for every compressor
call) the reply a small looping model writes, without minutes of generation.

    python llm_server_app.py --model GGUF --alias NAME --port P [--n-ctx N] [--threads T] [--max-tokens N]

Without a cap llama.cpp's server listens on the port itself. With one, it listens on another loopback port and
a small front (:class:`CapFront`) on the port relays every request to it, the body of each POST to a
``…/completions`` path capped (:func:`capped_body`); a client that leaves before its reply closes the relayed
call, so llama.cpp cancels it (its log: ``cancel task``) as it does for a client of its own.
"""

from __future__ import annotations

import argparse
import http.client
import json
import select
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# headers that describe one connection, not the message (RFC 9110 7.6.1), the two the front sets itself, and
# Expect (the front has answered a client's "100-continue" itself)
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
                        "upgrade", "content-length", "host", "expect"})


CLIENT_LEFT = "the client left before its reply"


def capped_body(body: bytes, cap: int) -> bytes:
    """``body`` (a completion request's JSON) with ``max_tokens`` at most ``cap``; a missing, null or
    non-positive one (llama.cpp: until the context is full) becomes ``cap``. Anything not a JSON
    object goes through unchanged, for the server to refuse as before."""
    try:
        data = json.loads(body)
    except ValueError:
        return body
    if not isinstance(data, dict):
        return body
    asked = data.get("max_tokens")
    if isinstance(asked, int) and not isinstance(asked, bool) and 0 < asked <= cap:
        return body
    data["max_tokens"] = cap
    return json.dumps(data).encode()


def capped_path(method: str, path: str) -> bool:
    """Whether a request is a completion call (chat or text) whose body the front caps."""
    return method == "POST" and path.split("?", 1)[0].rstrip("/").endswith("/completions")


class CapFront(BaseHTTPRequestHandler):
    """One client connection of the front: each request relayed to ``server.upstream`` (host, port) on a
    connection of its own, a completion call's body capped at ``server.cap``; the reply relayed as it comes
    (a streamed one chunk by chunk). Logs one access line a request to stderr."""

    protocol_version = "HTTP/1.1"
    server: "FrontServer"

    def relay(self) -> None:
        body = self.read_body()
        if capped_path(self.command, self.path):
            body = capped_body(body, self.server.cap)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        upstream = http.client.HTTPConnection(*self.server.upstream)
        try:
            try:
                upstream.request(self.command, self.path, body=body, headers=headers)
                if not self.client_waits(upstream.sock):
                    self.client_left()
                    return
                reply = upstream.getresponse()
            except OSError as exc:
                self.send_error(502, f"llama.cpp's server did not answer: {exc}")
                return
            try:
                self.send_reply(reply)
            except (BrokenPipeError, ConnectionResetError):
                self.client_left()
        finally:
            upstream.close()  # the call's own connection: closed early, llama.cpp cancels the call

    def send_reply(self, reply: http.client.HTTPResponse) -> None:
        """The server's reply to the client as it comes: status, headers, then the body (re-chunked where the
        server chunked it, as it does a streamed reply)."""
        self.log_request(reply.status)
        self.send_response_only(reply.status, reply.reason)  # the server's own Server and Date headers follow
        for key, value in reply.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        if self.command == "HEAD":
            self.send_header("Content-Length", reply.getheader("Content-Length", "0"))
            self.end_headers()
            return
        chunked = reply.length is None
        self.send_header(*(("Transfer-Encoding", "chunked") if chunked else ("Content-Length", str(reply.length))))
        self.end_headers()
        while piece := reply.read1(65536):
            self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            self.wfile.write(b"0\r\n\r\n")

    def client_left(self) -> None:
        self.close_connection = True
        self.log_message('"%s" %s: the call is closed upstream', self.requestline, CLIENT_LEFT)

    def read_body(self) -> bytes:
        """The request's body, by its Content-Length or chunked."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while size := int(self.rfile.readline().split(b";", 1)[0], 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return b"".join(parts)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def client_waits(self, upstream: socket.socket) -> bool:
        """Wait for the server's reply; False as soon as the client has closed its connection instead."""
        while True:
            ready, _, _ = select.select([self.connection, upstream], [], [], 1.0)
            if upstream in ready:
                return True
            if self.connection in ready:
                try:
                    if not self.connection.recv(1, socket.MSG_PEEK):
                        return False
                except OSError:
                    return False
                return True  # the client sent more (a next request): the reply comes first

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = do_HEAD = relay


class FrontServer(ThreadingHTTPServer):
    """The front: a thread per client connection, relaying to ``upstream`` with ``cap``."""

    daemon_threads = True
    request_queue_size = 64

    def __init__(self, address: tuple[str, int], upstream: tuple[str, int], cap: int) -> None:
        super().__init__(address, CapFront)
        self.upstream, self.cap = upstream, cap

    def handle_error(self, request, client_address) -> None:
        """A client that drops its kept-alive connection between requests is no error worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="the GGUF file")
    p.add_argument("--alias", required=True, help="the model's name in /v1/models and in replies")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--n-ctx", type=int, default=4096)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--max-tokens", type=int, default=0, help="the most tokens one call generates (0: no cap)")
    args = p.parse_args(argv)
    if args.max_tokens < 0:
        p.error(f"--max-tokens must be 0 (no cap) or more, not {args.max_tokens}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import xllamacpp

    front = FrontServer((args.host, args.port), (args.host, free_port(args.host)), args.max_tokens) \
        if args.max_tokens else None  # bound first: a port in use fails here, before the model loads
    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.model_alias = {args.alias}
    params.hostnames = [args.host]
    params.port = front.upstream[1] if front else args.port
    params.n_ctx = args.n_ctx
    params.n_parallel = 1  # one call at a time, the whole context for it
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = args.threads
    # a call that names no repeat_penalty gets 1.1, as on llama-cpp-python's server, which the kit's local-model
    # figures were measured with (llama.cpp's own default is 1.0)
    params.sampling.penalty_repeat = 1.1
    print(f"llm_server_app: xllamacpp {xllamacpp.__version__}, {xllamacpp.get_system_info().strip()}", file=sys.stderr,
          flush=True)
    try:
        server = xllamacpp.Server(params)  # loads the model, then serves on threads of its own
    except RuntimeError as exc:
        sys.exit(f"llm_server_app: llama.cpp's server did not start ({exc}); its log is above")
    if front:
        print(f"llm_server_app: {server.listening_address} behind http://{args.host}:{args.port}, each call "
              f"capped at {args.max_tokens} tokens", file=sys.stderr, flush=True)
        front.serve_forever()
    else:
        threading.Event().wait()  # until SIGTERM


if __name__ == "__main__":
    main()
