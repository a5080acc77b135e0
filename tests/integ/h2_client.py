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
  trailers PATH BYTES TBYTES  a POST of BYTES bytes, then a trailer section
                     of one field x-t of TBYTES bytes: "PATH STATUS BODY"
  badheader PATH     a GET with CR LF inside a header value, then a good
                     GET on the same connection
  rapidreset N PATH  N streams opened and reset at once, then a GET:
                     "goaway CODE" if the server ended the connection, else
                     the GET's line
  flood KIND N       N PING (KIND ping) or SETTINGS (KIND settings) frames
                     sent without reading a byte, then read: "goaway CODE"
                     or "closed" or "alive"
  bighead PATH BYTES a GET with a header of BYTES bytes (HEADERS, then as many
                     CONTINUATION frames as it takes), then a good GET on
                     the same connection: both lines, or "goaway CODE" /
                     "closed" when the connection ended
  manystreams N PATH [early]  N GETs at once (early: before the server's
                     SETTINGS were read and acknowledged), past the server's
                     SETTINGS_MAX_CONCURRENT_STREAMS (the client's own check
                     switched off): "ok=K refused=R other=O", refused the
                     streams reset with REFUSED_STREAM; "goaway CODE" added
                     when the connection ended
  retry par|seq PATH...  one GET per path, on one connection, all at once
                     (par: the heads in one write) or each once the one
                     before it ended (seq); a
                     stream the server says it did not process (reset
                     with REFUSED_STREAM, or past the last-stream-id of its
                     GOAWAY) is sent again, as RFC 9113 8.7 allows, on a
                     new connection (as curl does), at most 3 times. At the
                     end each connection is read until it closes or sends
                     GOAWAY (4 s at most). H2_NO_PING_ACK=1: the server's
                     PINGs are not acknowledged ("ping"). Out: one line per
                     connection, "conn K: EVENT | EVENT ..." (what came, in
                     order: "goaway LAST CODE", "PATH STATUS", "PATH reset
                     CODE", "PATH not processed"), then "PATH STATUS BODY
                     tries=N" for each path
  grpcslow N MS SECONDS PATH  a gRPC server-streaming call to /t.T/Count
                     (grpc_origin.py) for N messages MS apart: "data BYTES"
                     as each arrives, then its line ("reset CODE" if it
                     was reset) within SECONDS, then a GET of PATH on the
                     same connection and its line
"""
import os
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
    import os
    if os.environ.get("H2_RCVBUF"):
        # a small receive buffer: what the client does not read stays in the proxy
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, int(os.environ["H2_RCVBUF"]))
        s.settimeout(10)
        s.connect((phost, int(pport)))
    else:
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
        self.keep_goaway = False  # GOAWAY read here, python3-h2 shown the rest (retry)
        self.goaway_last = None
        self.frames = b""
        self.trace = []

    def flush(self):
        data = self.c.data_to_send()
        if data:
            try:
                self.sock.sendall(data)
            except OSError:
                self.closed = True

    def request(self, path, method="GET", authority=None, extra=(), body=None, flush=True):
        sid = self.c.get_next_available_stream_id()
        headers = [(":method", method), (":scheme", "https"),
                   (":authority", authority or self.authority), (":path", path),
                   ("user-agent", "h2_client.py")] + list(extra)
        self.c.send_headers(sid, headers, end_stream=body is None)
        self.streams[sid] = {"path": path, "status": None, "body": b"", "done": False,
                             "reset": None}
        if body is not None:
            self.send_body(sid, body)
        if flush:
            self.flush()
        return sid

    def send_body(self, sid, body):
        """Send body on sid as its window allows, for 10 s at most; a stream the
        server answered and told to stop (RST_STREAM) sends no more."""
        end = time.time() + 10
        try:
            while body and time.time() < end:
                st = self.streams[sid]
                if st["reset"] is not None or st["done"] or self.closed:
                    return
                window = self.c.local_flow_control_window(sid)
                n = min(len(body), window, self.c.max_outbound_frame_size)
                if n == 0:
                    self.flush()
                    self.read_once(1)
                    continue
                self.c.send_data(sid, body[:n])
                body = body[n:]
                self.flush()
            if not body:
                self.c.end_stream(sid)
        except h2.exceptions.StreamClosedError:
            pass

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
        if self.keep_goaway:
            # frame by frame: a GOAWAY is noted here, in its place among the others
            for f in self.take_frames(data):
                if f[3] == 6 and not f[4] & 1 and os.environ.get("H2_NO_PING_ACK"):
                    self.trace.append("ping")  # not acknowledged: not shown to python3-h2
                elif f[3] == 7 and len(f) >= 17:
                    self.goaway_last = int.from_bytes(f[9:13], "big") & 0x7fffffff
                    self.goaway = int.from_bytes(f[13:17], "big")
                    self.trace.append(f"goaway {self.goaway_last} {self.goaway}")
                else:
                    self.handle(self.c.receive_data(f))
            self.flush()
            return True
        try:
            events = self.c.receive_data(data)
        except h2.exceptions.ProtocolError:
            # frames after the server's GOAWAY (python3-h2 refuses them): read it ourselves
            self.goaway = raw_goaway(self.raw)
            self.closed = True
            return False
        self.handle(events)
        self.flush()
        return True

    def handle(self, events):
        for e in events:
            st = self.streams.get(getattr(e, "stream_id", None))
            if isinstance(e, h2.events.InformationalResponseReceived) and st is not None:
                st.setdefault("heads", []).append(e.headers)
            elif isinstance(e, h2.events.ResponseReceived) and st is not None:
                st["status"] = dict(e.headers).get(":status")
                self.trace.append(f"{st['path']} {st['status']}")
                st.setdefault("heads", []).append(e.headers)
            elif isinstance(e, h2.events.TrailersReceived) and st is not None:
                st.setdefault("heads", []).append(e.headers)
            elif isinstance(e, h2.events.DataReceived):
                self.c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                if st is not None:
                    st["body"] += e.data
            elif isinstance(e, h2.events.StreamEnded) and st is not None:
                st["done"] = True
            elif isinstance(e, h2.events.StreamReset) and st is not None:
                st["reset"] = e.error_code
                self.trace.append(f"{st['path']} reset {int(e.error_code)}")
                st["done"] = True
            elif isinstance(e, h2.events.ConnectionTerminated):
                self.goaway = e.error_code

    def take_frames(self, data):
        """The whole frames data completes (the rest kept for the next read)."""
        self.frames += data
        out = []
        while len(self.frames) >= 9:
            n = int.from_bytes(self.frames[:3], "big")
            if len(self.frames) < 9 + n:
                break
            out.append(self.frames[:9 + n])
            self.frames = self.frames[9 + n:]
        return out

    def wait(self, sids, deadline=10):
        end = time.time() + deadline
        while time.time() < end and not all(self.streams[s]["done"] for s in sids):
            if self.goaway is not None or self.closed or not self.read_once(end - time.time()):
                break

    def line(self, sid):
        st = self.streams[sid]
        # a complete response, then RST_STREAM(NO_ERROR) (stop sending): the response is the line
        if st["reset"] is not None and not (st["reset"] == 0 and st["status"] is not None):
            return f"{st['path']} reset {int(st['reset'])}"
        first = st["body"].split(b"\n")[0].decode(errors="replace")
        first = "".join(ch for ch in first if ch.isprintable())[:200]
        return f"{st['path']} {st['status']} {first}"


def retry(phost, pport, host, port, cafile, kind, paths):
    """The retry mode: what a client that follows RFC 9113 8.7 and 6.8 does."""
    tries = {p: 0 for p in paths}
    result = {}
    conns = []

    def connect():
        c = Client(tunnel(phost, pport, host, port, cafile), host, port)
        c.keep_goaway = True
        conns.append(c)
        return c

    def settled(c, sid):
        st = c.streams[sid]
        return st["done"] or (c.goaway_last is not None and sid > c.goaway_last)

    def wait(c, sids):
        end = time.time() + 10
        while time.time() < end and not all(settled(c, s) for s in sids):
            if c.closed or not c.read_once(end - time.time()):
                break

    def judge(c, sid):
        st = c.streams[sid]
        p = st["path"]
        unprocessed = st["reset"] == 7 or (st["status"] is None and c.goaway_last is not None
                                            and sid > c.goaway_last)
        if unprocessed:
            if st["reset"] != 7:
                c.trace.append(f"{p} not processed")
            return None
        return c.line(sid)

    c = None
    refused = []  # connections that refused a stream: not used again
    todo = list(paths)
    for _ in range(3):
        if not todo:
            break
        again = []
        if kind == "par":
            c = connect()
            sids = [c.request(p, flush=False) for p in todo]
            c.flush()  # the heads in one write: they arrive together
            for p in todo:
                tries[p] += 1
            wait(c, sids)
            for sid in sids:
                line = judge(c, sid)
                if line is None:
                    again.append(c.streams[sid]["path"])
                else:
                    result[c.streams[sid]["path"]] = line
        else:
            for p in todo:
                if c is None or c.closed or c.goaway_last is not None or c in refused:
                    c = connect()
                sid = c.request(p)
                tries[p] += 1
                wait(c, [sid])
                line = judge(c, sid)
                if line is None:
                    again.append(p)
                    refused.append(c)
                else:
                    result[p] = line
        todo = again
    end = time.time() + 4
    for c in conns:
        while time.time() < end and not c.closed and c.goaway_last is None:
            if not c.read_once(end - time.time()):
                break
    for k, c in enumerate(conns, 1):
        print(f"conn {k}: " + " | ".join(c.trace))
    for p in paths:
        print(f"{result.get(p, p + ' unanswered')} tries={tries[p]}")


def main():
    phost, pport, host, port, cafile, mode = sys.argv[1:7]
    args = sys.argv[7:]
    if mode == "retry":
        retry(phost, pport, host, port, cafile, args[0], args[1:])
        return
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
    elif mode == "trailers":
        c = Client(sock, host, port)
        sid = c.c.get_next_available_stream_id()
        c.c.send_headers(sid, [(":method", "POST"), (":scheme", "https"),
                               (":authority", c.authority), (":path", args[0]),
                               ("user-agent", "h2_client.py")])
        c.streams[sid] = {"path": args[0], "status": None, "body": b"", "done": False,
                          "reset": None}
        c.c.send_data(sid, b"x" * int(args[1]))
        c.c.send_headers(sid, [("x-t", "t" * int(args[2]))], end_stream=True)
        c.flush()
        c.wait([sid])
        print(c.line(sid))
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
    elif mode == "bighead":
        c = Client(sock, host, port, validate=False)
        try:
            big = c.request(args[0], extra=[("x-big", "b" * int(args[1]))])
            good = c.request(args[0])
            c.wait([big, good])
        except (OSError, h2.exceptions.ProtocolError):
            c.closed = True
        if c.goaway is not None:
            print(f"goaway {int(c.goaway)}")
        elif c.closed:
            print("closed")
        else:
            print(c.line(big))
            print(c.line(good))
    elif mode == "manystreams":
        c = Client(sock, host, port)
        if len(args) < 3 or args[2] != "early":
            c.read_once(2)  # the server's SETTINGS (acknowledged), unless early: before them
        code = h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS
        c.c.remote_settings[code] = 10000
        c.c.remote_settings.acknowledge()
        # all the heads in one write: they arrive together, none answered yet
        sids = [c.request(args[1], flush=False) for _ in range(int(args[0]))]
        c.flush()
        c.wait(sids, 15)
        ok = sum(1 for s in sids if c.streams[s]["status"] == "200" and c.streams[s]["reset"] is None)
        refused = sum(1 for s in sids if c.streams[s]["reset"] == 7)
        print(f"ok={ok} refused={refused} other={len(sids) - ok - refused}" +
              (f" goaway {int(c.goaway)}" if c.goaway is not None else ""))
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
    elif mode == "heads":
        # every head of each stream (interim, final, trailers), one line each
        c = Client(sock, host, port)
        sids = [c.request(p) for p in args]
        c.wait(sids)
        for sid in sids:
            for hd in c.streams[sid].get("heads", []):
                print(c.streams[sid]["path"], " ".join(f"{k}={v}" for k, v in hd))
            print(c.line(sid))
    elif mode == "bigwin":
        # huge windows (as curl and browsers give): no WINDOW_UPDATE is ever needed
        c = Client(sock, host, port)
        c.c.update_settings({h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 2**31 - 1})
        c.c.increment_flow_control_window(2**31 - 1 - 65535)
        c.flush()
        c.c.acknowledge_received_data = lambda n, sid: None
        sids = [c.request(p) for p in args]
        c.wait(sids, 8)
        print(" ".join(f"{len(c.streams[s]['body'])}{'' if c.streams[s]['done'] else '(open)'}" for s in sids))
    elif mode == "noread":
        # a GET, then nothing read for SECONDS (the proxy must hold or drop what comes)
        c = Client(sock, host, port)
        sid = c.request(args[0])
        time.sleep(float(args[1]))
        c.wait([sid], 20)
        print(c.line(sid), len(c.streams[sid].get("heads", [])), "heads")
    elif mode == "uploads":
        # K uploads to PATH_A that the origin answers early, then one to PATH_B, on one connection
        c = Client(sock, host, port)
        k, pa, pb, total, secs = int(args[0]), args[1], args[2], int(args[3]), float(args[4])
        sids = []
        for p in [pa] * k + [pb]:
            sid = c.c.get_next_available_stream_id()
            c.c.send_headers(sid, [(":method", "POST"), (":scheme", "https"),
                                   (":authority", c.authority), (":path", p)])
            c.streams[sid] = {"path": p, "status": None, "body": b"", "done": False, "reset": None}
            sids.append(sid)
        c.flush()
        sent = {s: 0 for s in sids}
        end = time.time() + secs
        for sid in sids:
            while sent[sid] < total and time.time() < end and not c.closed:
                if c.streams[sid]["reset"] is not None:
                    break  # told to stop (RST_STREAM): the upload is over
                try:
                    window = c.c.local_flow_control_window(sid)
                except h2.exceptions.StreamClosedError:
                    break
                n = min(total - sent[sid], window, c.c.max_outbound_frame_size)
                if n == 0:
                    c.read_once(0.3)
                    if sid != sids[-1] and time.time() > end - secs / 2:
                        break
                    continue
                try:
                    c.c.send_data(sid, b"x" * n)
                except h2.exceptions.StreamClosedError:
                    break
                sent[sid] += n
                c.flush()
        print(" ".join(f"{c.streams[s]['path']}:{sent[s]}" for s in sids),
              "conn_window", c.c.outbound_flow_control_window)
    elif mode == "upload":
        # a POST of BYTES without END_STREAM until all went; SECONDS to get them out
        c = Client(sock, host, port)
        path, total, secs = args[0], int(args[1]), float(args[2])
        sid = c.c.get_next_available_stream_id()
        c.c.send_headers(sid, [(":method", "POST"), (":scheme", "https"),
                               (":authority", c.authority), (":path", path)])
        c.streams[sid] = {"path": path, "status": None, "body": b"", "done": False, "reset": None}
        c.flush()
        sent, end = 0, time.time() + secs
        while sent < total and time.time() < end and not c.closed:
            if c.streams[sid]["reset"] is not None:
                break  # told to stop (RST_STREAM): the upload is over
            try:
                window = c.c.local_flow_control_window(sid)
            except h2.exceptions.StreamClosedError:
                break
            n = min(total - sent, window, c.c.max_outbound_frame_size)
            if n == 0:
                c.read_once(0.5)
                continue
            try:
                c.c.send_data(sid, b"x" * n)
            except h2.exceptions.StreamClosedError:
                break
            sent += n
            c.flush()
        print(f"sent {sent} of {total} status {c.streams[sid]['status']} reset {c.streams[sid]['reset']}")
    else:
        raise SystemExit(f"unknown mode {mode}")


main()
