#!/usr/bin/python3
"""An HTTP/2 client through sluice-proxy's CONNECT, written with python3-h2
so that it can also send what a well-behaved client never would.

h2_client.py PROXY_HOST PROXY_PORT HOST PORT CAFILE MODE [ARGS...]

Modes (one line out per stream, in the order the streams were opened):
  get PATH...        one GET per path, all open at once on one connection:
                     "PATH STATUS BODY" (BODY's first line; "reset CODE" when
                     the stream was reset)
  authority AUTH PATH  one GET whose :authority is AUTH
  hostdiff HOST PATH   :authority is HOST:PORT's own, a host header HOST
  post PATH BYTES [LENGTH]  a POST of BYTES bytes, declaring content-length
                     LENGTH if given: "PATH STATUS BODY"
  badheader PATH     a GET with CR LF inside a header value, then a good
                     GET on the same connection
  rapidreset N PATH  N streams opened and reset at once, then a GET:
                     "goaway CODE" if the server ended the connection, else
                     the GET's line
  flood KIND N       N PING (KIND ping) or SETTINGS (KIND settings) frames
                     sent without reading a byte, then read: "goaway CODE"
                     or "closed" or "alive"
  grpcslow N MS SECONDS PATH  a gRPC server-streaming call to /t.T/Count
                     (grpc_origin.py) for N messages MS apart: "data BYTES"
                     as each arrives, then its line ("reset CODE" if it
                     was reset) within SECONDS, then a GET of PATH on the
                     same connection and its line
"""
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings


def tunnel(phost, pport, host, port, cafile):
    s = socket.create_connection((phost, int(pport)), timeout=10)
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            raise SystemExit("proxy closed during CONNECT")
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        raise SystemExit("CONNECT refused: " + head.split(b"\r\n")[0].decode())
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.set_alpn_protocols(["h2"])
    t = ctx.wrap_socket(s, server_hostname=host)
    if t.selected_alpn_protocol() != "h2":
        raise SystemExit(f"ALPN chose {t.selected_alpn_protocol()}, not h2")
    return t


def raw_goaway(raw):
    """The error code of the first GOAWAY in the server's frames raw, or None."""
    i = 0
    while i + 9 <= len(raw):
        n = int.from_bytes(raw[i:i + 3], "big")
        if raw[i + 3] == 7 and i + 9 + 8 <= len(raw):
            return int.from_bytes(raw[i + 13:i + 17], "big")
        i += 9 + n
    return None


class Client:
    def __init__(self, sock, host, port, validate=True):
        self.sock = sock
        self.authority = host if int(port) == 443 else f"{host}:{port}"
        cfg = h2.config.H2Configuration(client_side=True, header_encoding="utf-8",
                                        validate_outbound_headers=validate,
                                        normalize_outbound_headers=validate,
                                        validate_inbound_headers=False)
        self.c = h2.connection.H2Connection(config=cfg)
        self.c.initiate_connection()
        self.flush()
        self.streams = {}
        self.goaway = None
        self.closed = False
        self.raw = b""

    def flush(self):
        data = self.c.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError:
                self.closed = True

    def request(self, path, method="GET", authority=None, extra=(), body=None):
        sid = self.c.get_next_available_stream_id()
        headers = [(":method", method), (":scheme", "https"),
                   (":authority", authority or self.authority), (":path", path),
                   ("user-agent", "h2_client.py")] + list(extra)
        self.c.send_headers(sid, headers, end_stream=body is None)
        self.streams[sid] = {"path": path, "status": None, "body": b"", "done": False,
                             "reset": None}
        if body is not None:
            self.send_body(sid, body)
        self.flush()
        return sid

    def send_body(self, sid, body):
        while body:
            window = self.c.local_flow_control_window(sid)
            n = min(len(body), window, self.c.max_outbound_frame_size)
            if n == 0:
                self.flush()
                self.read_once()
                continue
            self.c.send_data(sid, body[:n])
            body = body[n:]
            self.flush()
        self.c.end_stream(sid)

    def read_once(self, timeout=10):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except (ConnectionResetError, ssl.SSLError, OSError):
            data = b""
        if not data:
            self.closed = True
            return False
        self.raw += data
        try:
            events = self.c.receive_data(data)
        except h2.exceptions.ProtocolError:
            # frames after the server's GOAWAY (python3-h2 refuses them): read it ourselves
            self.goaway = raw_goaway(self.raw)
            self.closed = True
            return False
        for e in events:
            st = self.streams.get(getattr(e, "stream_id", None))
            if isinstance(e, h2.events.ResponseReceived) and st is not None:
                st["status"] = dict(e.headers).get(":status")
            elif isinstance(e, h2.events.DataReceived):
                self.c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                if st is not None:
                    st["body"] += e.data
            elif isinstance(e, h2.events.StreamEnded) and st is not None:
                st["done"] = True
            elif isinstance(e, h2.events.StreamReset) and st is not None:
                st["reset"] = e.error_code
                st["done"] = True
            elif isinstance(e, h2.events.ConnectionTerminated):
                self.goaway = e.error_code
        self.flush()
        return True

    def wait(self, sids, deadline=10):
        end = time.time() + deadline
        while time.time() < end and not all(self.streams[s]["done"] for s in sids):
            if self.goaway is not None or self.closed or not self.read_once(end - time.time()):
                break

    def line(self, sid):
        st = self.streams[sid]
        if st["reset"] is not None:
            return f"{st['path']} reset {int(st['reset'])}"
        first = st["body"].split(b"\n")[0].decode(errors="replace")
        first = "".join(ch for ch in first if ch.isprintable())[:200]
        return f"{st['path']} {st['status']} {first}"


def main():
    phost, pport, host, port, cafile, mode = sys.argv[1:7]
    args = sys.argv[7:]
    sock = tunnel(phost, pport, host, port, cafile)
    if mode == "get":
        c = Client(sock, host, port)
        sids = [c.request(p) for p in args]
        c.wait(sids)
        for s in sids:
            print(c.line(s))
    elif mode == "authority":
        c = Client(sock, host, port)
        s = c.request(args[1], authority=args[0])
        c.wait([s])
        print(c.line(s))
    elif mode == "hostdiff":
        c = Client(sock, host, port, validate=False)
        s = c.request(args[1], extra=[("host", args[0])])
        c.wait([s])
        print(c.line(s))
    elif mode == "post":
        c = Client(sock, host, port)
        extra = [("content-type", "application/octet-stream")]
        if len(args) > 2:
            extra.append(("content-length", args[2]))
        s = c.request(args[0], method="POST", body=b"x" * int(args[1]), extra=extra)
        c.wait([s])
        print(c.line(s))
    elif mode == "badheader":
        c = Client(sock, host, port, validate=False)
        bad = c.request(args[0], extra=[("x-evil", "a\r\nInjected: yes")])
        good = c.request(args[0])
        c.wait([bad, good])
        print(c.line(bad))
        print(c.line(good))
    elif mode == "rapidreset":
        c = Client(sock, host, port)
        for _ in range(int(args[0])):
            sid = c.c.get_next_available_stream_id()
            c.c.send_headers(sid, [(":method", "GET"), (":scheme", "https"),
                                   (":authority", c.authority), (":path", args[1])])
            c.c.reset_stream(sid)
        try:
            c.flush()
            s = c.request(args[1])
            c.wait([s])
        except (OSError, h2.exceptions.ProtocolError):
            c.closed = True
        if c.goaway is not None:
            print(f"goaway {int(c.goaway)}")
        elif c.closed:
            print("closed")
        else:
            print(c.line(s))
    elif mode == "flood":
        c = Client(sock, host, port)
        try:
            for i in range(int(args[1])):
                if args[0] == "ping":
                    c.c.ping(i.to_bytes(8, "big"))
                else:
                    # a SETTINGS frame (empty) written by hand: python3-h2 would wait for each ACK
                    c.sock.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
                c.flush()
                if c.closed:
                    break
        except OSError:
            pass
        end = time.time() + 5
        while time.time() < end and c.goaway is None and not c.closed:
            if not c.read_once(end - time.time()):
                break
        print(f"goaway {int(c.goaway)}" if c.goaway is not None else
              "closed" if c.closed else "alive")
    elif mode == "grpcslow":
        c = Client(sock, host, port)
        msg = f"{args[0]} {args[1]}".encode()
        s = c.request("/t.T/Count", method="POST",
                      extra=[("content-type", "application/grpc"), ("te", "trailers")],
                      body=b"\x00" + len(msg).to_bytes(4, "big") + msg)
        end = time.time() + float(args[2])
        seen = 0
        while time.time() < end and not c.streams[s]["done"]:
            if not c.read_once(end - time.time()):
                break
            if len(c.streams[s]["body"]) != seen:
                seen = len(c.streams[s]["body"])
                print("data", seen, flush=True)
        st = c.streams[s]
        print(f"reset {int(st['reset'])}" if st["reset"] is not None else
              f"ended {st['status']}" if st["done"] else "open", flush=True)
        s2 = c.request(args[3])
        c.wait([s2], 5)
        print(c.line(s2), flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")


main()
