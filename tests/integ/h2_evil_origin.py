#!/usr/bin/python3
"""A hostile HTTP/2 origin over TLS (python3-h2), for tests/integ/test_h2review.sh.

h2_evil_origin.py CERT KEY ADDR PORT

By :path:
  /interim      a 103 whose values and a header name carry the request's
                authorization, then a 200 whose header name carries it too,
                and trailers whose name carries it
  /early        a 200 with END_STREAM as soon as the head came, then
                RST_STREAM(NO_ERROR) (as nginx does when it answers before
                the request body is in)
  /flood?N      N 103 responses, each with 30 fields of a 2000-byte value
                (HPACK-indexed once: a few bytes each on the wire), then a 200
  /range        a 206 whose body carries the authorization
  /sink         reads the whole request body, then a 200 "got N" ("got N
                trailers M" when a trailer section of M bytes, names and
                values, came)
  /goaway-next  a 200 "ok"; the connection's next request is not processed:
                GOAWAY(NO_ERROR, last-stream-id the one before it) instead,
                then the connection is closed (a server going away just as
                a request raced it)
  /refuse-next  a 200 "ok"; the connection's next request is reset with
                RST_STREAM(REFUSED_STREAM), the connection goes on
  /goaway-slow  GOAWAY(NO_ERROR, last-stream-id this stream) at once, then,
                0.5 s later, a 200 "slow"; the streams after it are not
                processed; then the connection is closed (a graceful
                shutdown with a request in flight)
  /die          the connection is closed at once, no GOAWAY, nothing answered
After its GOAWAY the origin answers no stream past its last-stream-id.
  anything else 200 "ok"
"""
import socket
import ssl
import struct
import sys
import threading
import time

import h2.config
import h2.connection
import h2.events
import h2.errors


def goaway(c, conn, last):
    """A GOAWAY(NO_ERROR) written by hand: python3-h2's own would end the
    connection for the streams up to last as well."""
    conn.sendall(c.data_to_send() + struct.pack(">I", 8)[1:] + b"\x07\x00" +
                 struct.pack(">III", 0, last, 0))


def serve(conn):
    try:
        serve1(conn)
    finally:
        # what the peer sent last is read before the close, which would otherwise be a
        # reset that can throw away what we wrote (the GOAWAY) before the peer read it
        try:
            conn.settimeout(1)
            socket.socket.shutdown(conn, socket.SHUT_WR)
            end = time.time() + 1
            while time.time() < end and conn.recv(65536):
                pass
        except (OSError, ValueError, ssl.SSLError):
            pass
        try:
            conn.close()
        except OSError:
            pass


def serve1(conn):
    cfg = h2.config.H2Configuration(client_side=False, header_encoding="utf-8",
                                    validate_inbound_headers=False,
                                    validate_outbound_headers=False,
                                    normalize_outbound_headers=False)
    c = h2.connection.H2Connection(config=cfg)
    c.initiate_connection()
    conn.sendall(c.data_to_send())
    heads = {}
    got = {}
    tr = {}
    armed = None   # what the connection's next request gets: "goaway" or "refuse"
    last = None    # the last-stream-id of our GOAWAY
    while True:
        try:
            data = conn.recv(65536)
        except OSError:
            return
        if not data:
            return
        try:
            events = c.receive_data(data)
        except Exception:
            return
        for e in events:
            if isinstance(e, h2.events.RequestReceived):
                heads[e.stream_id] = dict(e.headers)
                path = heads[e.stream_id].get(":path")
                if last is not None and e.stream_id > last:
                    continue  # past our GOAWAY: not processed
                if armed == "goaway":
                    last = e.stream_id - 2
                    goaway(c, conn, last)
                    return
                if armed == "refuse":
                    armed = None
                    c.reset_stream(e.stream_id, h2.errors.ErrorCodes.REFUSED_STREAM)
                    continue
                if path == "/die":
                    return
                if path in ("/goaway-next", "/refuse-next"):
                    armed = path[1:-5]
                elif path == "/goaway-slow":
                    last = e.stream_id
                    goaway(c, conn, last)
                    time.sleep(0.5)
                    c.send_headers(e.stream_id, [(":status", "200")])
                    c.send_data(e.stream_id, b"slow\n", end_stream=True)
                    conn.sendall(c.data_to_send())
                    return
                answer(c, e.stream_id, heads[e.stream_id], conn)
            elif isinstance(e, h2.events.DataReceived):
                c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                got[e.stream_id] = got.get(e.stream_id, 0) + len(e.data)
            elif isinstance(e, h2.events.TrailersReceived):
                tr[e.stream_id] = sum(len(k) + len(v) for k, v in e.headers)
            elif isinstance(e, h2.events.StreamEnded) and \
                    heads.get(e.stream_id, {}).get(":path") == "/sink":
                c.send_headers(e.stream_id, [(":status", "200")])
                line = b"got %d" % got.get(e.stream_id, 0)
                if e.stream_id in tr:
                    line += b" trailers %d" % tr[e.stream_id]
                c.send_data(e.stream_id, line + b"\n", end_stream=True)
        out = c.data_to_send()
        if out:
            try:
                conn.sendall(out)
            except OSError:
                return


def answer(c, sid, h, conn):
    path = h.get(":path", "/")
    auth = h.get("authorization", "-")
    tok = auth.split()[-1].lower()
    if path == "/interim":
        c.send_headers(sid, [(":status", "103"), ("x-interim-echo", auth),
                             ("x-" + tok, "name-carries-it")])
        c.send_headers(sid, [(":status", "200"), ("x-final-echo", auth),
                             ("x-" + tok, "name-carries-it")])
        c.send_data(sid, b"body\n")
        c.send_headers(sid, [("x-trailer-" + tok, "1")], end_stream=True)
    elif path == "/early":
        c.send_headers(sid, [(":status", "200"), ("content-length", "6")])
        c.send_data(sid, b"early\n", end_stream=True)
        c.reset_stream(sid, h2.errors.ErrorCodes.NO_ERROR)
    elif path.startswith("/flood"):
        n = int(path.split("?")[1])
        big = "v" * 2000
        fields = [(":status", "103")] + [("x-f", big)] * 30
        c.send_headers(sid, fields)
        conn.sendall(c.data_to_send())
        # the same head again is all indexed references: its frame can be repeated as it is
        c.send_headers(sid, fields)
        frame = c.data_to_send()
        try:
            for i in range(0, n, 1000):
                conn.sendall(frame * min(1000, n - i))
        except OSError:
            return
        c.send_headers(sid, [(":status", "200")])
        c.send_data(sid, b"flooded\n", end_stream=True)
    elif path.startswith("/burst"):
        # N bytes at once, within the stream's window: the origin then goes quiet
        n = int(path.split("?")[1])
        c.send_headers(sid, [(":status", "200"), ("content-length", str(n))])
        left = n
        while left > 0:
            k = min(left, c.max_outbound_frame_size, c.local_flow_control_window(sid))
            if k <= 0:
                break
            c.send_data(sid, b"b" * k, end_stream=(k == left))
            left -= k
    elif path == "/split":
        # the reflected credential's first byte alone in a DATA frame (a scrubber holds it back)
        tok = auth.split()[-1]
        c.send_headers(sid, [(":status", "200")])
        c.send_data(sid, tok[:1].encode())
        conn.sendall(c.data_to_send())
        c.send_data(sid, (tok[1:] + "\n").encode(), end_stream=True)
    elif path == "/enc":
        # the reflected credential as a content-encoding: sluice refuses it, naming it
        c.send_headers(sid, [(":status", "200"), ("content-encoding", auth.split()[-1])])
        c.send_data(sid, b"x\n", end_stream=True)
    elif path == "/sink":
        pass  # answered once the body is in
    elif path == "/range":
        body = ("part:" + auth + "\n").encode()
        c.send_headers(sid, [(":status", "206"), ("content-range", "bytes 0-%d/100" % (len(body) - 1)),
                             ("content-length", str(len(body)))])
        c.send_data(sid, body, end_stream=True)
    else:
        c.send_headers(sid, [(":status", "200")])
        c.send_data(sid, b"ok\n", end_stream=True)


def main():
    cert, key, addr, port = sys.argv[1:5]
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["h2"])
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, int(port)))
    ls.listen(64)
    while True:
        s, _ = ls.accept()
        try:
            t = ctx.wrap_socket(s, server_side=True)
        except (ssl.SSLError, OSError):
            s.close()
            continue
        threading.Thread(target=serve, args=(t,), daemon=True).start()


main()
