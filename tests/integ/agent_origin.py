#!/usr/bin/env python3
"""Fake model APIs for the real agent CLIs (tests/integ/test_agents.sh).

  agent_origin.py --log FILE --tls CERT KEY [--deltas N] [--delay S] [--first-delay F] LISTEN...

One TLS origin (HTTP/1.1) that answers by the request's Host, the way the
real APIs answer the calls the CLIs make:

  api.anthropic.com   POST /v1/messages: with "stream": true an SSE stream
                      (message_start, content_block_start, N text deltas
                      S seconds apart, ...stop); otherwise one message;
                      /v1/messages/count_tokens a count
  api.openai.com      POST /v1/responses: an SSE stream of response.* events
                      with N output_text deltas S seconds apart; a WebSocket
                      upgrade is answered 426 (use HTTPS)
  generativelanguage.googleapis.com  POST ...:streamGenerateContent: SSE,
                      N chunks S seconds apart; :generateContent one answer;
                      :countTokens a count
  anything else       200 {}

The first delta comes F seconds (default 1) after the stream's start: a CLI
works on the stream's start for a while (Claude Code, with no proxy between,
showed its first delta 0.18-0.35 s after it was sent when it came 0.3 s
after message_start, the next ones within 0.05 s), and that is the CLI's
time, not the path's. Each delta's text is "tick-R-I " (R the stream's number, I the delta's),
and FILE gets one JSON line per request ({"ev":"req", host, method, path,
the credential headers}) and per delta, written just before the delta is
sent ({"ev":"delta", "tag":"tick-R-I", "t": wall-clock seconds}), so a
test can measure how long each took to reach the client.
"""
import argparse
import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STREAMS = [0]
ARGS = None


def record(obj):
    with LOCK:
        with open(ARGS.log, "a") as f:
            f.write(json.dumps(obj) + "\n")


def next_stream():
    with LOCK:
        STREAMS[0] += 1
        return STREAMS[0]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n > 0 else b""
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            return {}

    def rec(self):
        h = self.headers
        record({"ev": "req", "t": time.time(), "host": (h.get("Host") or "").split(":")[0],
                "method": self.command, "path": self.path,
                "x-api-key": h.get("x-api-key"), "authorization": h.get("Authorization"),
                "x-goog-api-key": h.get("x-goog-api-key"), "upgrade": h.get("Upgrade")})

    def send_json(self, code, obj):
        data = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sse_start(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def chunk(self, text):
        data = text.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def event(self, name, obj):
        self.chunk(("event: %s\n" % name if name else "") + "data: " + json.dumps(obj) + "\n\n")

    def deltas(self, send):
        r = next_stream()
        for i in range(1, ARGS.deltas + 1):
            time.sleep(ARGS.first_delay if i == 1 else ARGS.delay)
            tag = "tick-%d-%d" % (r, i)
            record({"ev": "delta", "tag": tag, "t": time.time()})
            send(tag + " ")

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    # ------------------------------------------------------------ Anthropic
    def anthropic(self):
        b = self.body()
        if self.path.startswith("/v1/messages/count_tokens"):
            return self.send_json(200, {"input_tokens": 12})
        if not self.path.startswith("/v1/messages"):
            return self.send_json(200, {})
        model = b.get("model", "claude-test")
        msg = {"id": "msg_test", "type": "message", "role": "assistant", "model": model,
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 12, "output_tokens": 1}}
        if not b.get("stream"):
            msg["content"] = [{"type": "text", "text": "ok"}]
            msg["stop_reason"] = "end_turn"
            return self.send_json(200, msg)
        self.sse_start()
        self.event("message_start", {"type": "message_start", "message": msg})
        self.event("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}})
        self.deltas(lambda t: self.event("content_block_delta", {
            "type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}}))
        self.event("content_block_stop", {"type": "content_block_stop", "index": 0})
        self.event("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                     "usage": {"output_tokens": ARGS.deltas}})
        self.event("message_stop", {"type": "message_stop"})
        self.end_chunks()

    # ------------------------------------------------------------ OpenAI
    def openai(self):
        if (self.headers.get("Upgrade") or "").lower() == "websocket":
            return self.send_json(426, {"error": {"message": "use https"}})
        b = self.body()
        if not self.path.startswith("/v1/responses"):
            return self.send_json(200, {"object": "list", "data": []})
        model = b.get("model", "gpt-test")
        rid = "resp_test%d" % STREAMS[0]
        base = {"id": rid, "object": "response", "created_at": int(time.time()), "model": model,
                "status": "in_progress", "output": []}
        self.sse_start()
        seq = [0]

        def ev(obj):
            seq[0] += 1
            obj["sequence_number"] = seq[0]
            self.event(obj["type"], obj)
        ev({"type": "response.created", "response": base})
        ev({"type": "response.in_progress", "response": base})
        item = {"id": "msg_test", "type": "message", "status": "in_progress", "role": "assistant",
                "content": []}
        ev({"type": "response.output_item.added", "output_index": 0, "item": item})
        ev({"type": "response.content_part.added", "item_id": "msg_test", "output_index": 0,
            "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
        text = []

        def send(t):
            text.append(t)
            ev({"type": "response.output_text.delta", "item_id": "msg_test", "output_index": 0,
                "content_index": 0, "delta": t})
        self.deltas(send)
        full = "".join(text)
        ev({"type": "response.output_text.done", "item_id": "msg_test", "output_index": 0,
            "content_index": 0, "text": full})
        part = {"type": "output_text", "text": full, "annotations": []}
        ev({"type": "response.content_part.done", "item_id": "msg_test", "output_index": 0,
            "content_index": 0, "part": part})
        done = dict(item, status="completed", content=[part])
        ev({"type": "response.output_item.done", "output_index": 0, "item": done})
        fin = dict(base, status="completed", output=[done],
                   usage={"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": ARGS.deltas,
                          "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": 12 + ARGS.deltas})
        ev({"type": "response.completed", "response": fin})
        self.end_chunks()

    # ------------------------------------------------------------ Gemini
    def gemini(self):
        self.body()
        usage = {"promptTokenCount": 12, "candidatesTokenCount": 1, "totalTokenCount": 13}
        if ":countTokens" in self.path:
            return self.send_json(200, {"totalTokens": 12})
        if ":generateContent" in self.path:
            return self.send_json(200, {"candidates": [{
                "content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP",
                "index": 0}], "usageMetadata": usage})
        if ":streamGenerateContent" not in self.path:
            return self.send_json(200, {})
        self.sse_start()
        self.deltas(lambda t: self.chunk("data: " + json.dumps({"candidates": [{
            "content": {"role": "model", "parts": [{"text": t}]}, "index": 0}],
            "usageMetadata": usage}) + "\r\n\r\n"))
        self.chunk("data: " + json.dumps({"candidates": [{
            "content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP",
            "index": 0}], "usageMetadata": usage}) + "\r\n\r\n")
        self.end_chunks()

    def route(self):
        self.rec()
        host = (self.headers.get("Host") or "").split(":")[0]
        try:
            if host == "api.anthropic.com":
                self.anthropic()
            elif host == "api.openai.com":
                self.openai()
            elif host == "generativelanguage.googleapis.com":
                self.gemini()
            else:
                self.body()
                self.send_json(200, {})
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = route


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--tls", nargs=2, required=True)
    ap.add_argument("--deltas", type=int, default=5)
    ap.add_argument("--delay", type=float, default=0.3)
    ap.add_argument("--first-delay", type=float, default=1.0)
    ap.add_argument("listen", nargs="+")
    ARGS = ap.parse_args()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(*ARGS.tls)
    ctx.set_alpn_protocols(["http/1.1"])
    servers = []
    for l in ARGS.listen:
        addr, port = l.rsplit(":", 1)
        s = Server((addr.strip("[]"), int(port)), Handler)
        s.socket = ctx.wrap_socket(s.socket, server_side=True)
        servers.append(s)
    for s in servers[1:]:
        threading.Thread(target=s.serve_forever, daemon=True).start()
    servers[0].serve_forever()


if __name__ == "__main__":
    main()
