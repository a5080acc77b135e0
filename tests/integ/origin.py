#!/usr/bin/env python3
"""Test origins for the sluice integration lab (runs inside a test namespace).

  origin.py --log FILE [--mode http|halfclose|halfclose2|silent|drip|halfbig|oneshot|stall]
            [--tls CERT KEY] LISTEN...

With --tls every listener speaks TLS (the certificate and key given).

LISTEN is ADDR:PORT or [V6]:PORT. Every accepted connection and every request
head is appended to FILE as one JSON object per line, so a test can prove an
origin saw a request, or saw nothing at all.

http mode routes (any method; HEAD gets headers only):
  /echo      JSON: request line, headers, body length and sha256, conn id
  /conn      the connection id (keep-alive reuse checks)
  /big?n=N   N bytes (default 4 MiB) with Content-Length
  /chunked   a chunked response
  /reflect   the request's Authorization value reflected: in an X-Reflect
             header and in the body, the body as ?mode=cl (Content-Length,
             written in 3-byte pieces), chunked (3-byte chunks) or eof
             (no length, closed at the end)
  /204 /304  bodiless responses
  /hop       a response carrying hop-by-hop headers
  /setcookie a response with Set-Cookie
  /longhead?n=N&name=H  a 200 with one header H (default Set-Cookie) whose
             value is N bytes ("sid=" then 'c's), body "long head ok"
  /close     answers with Connection: close
  /truncate  promises 1000 bytes, sends 100, closes
  /dupcl     a response with two different Content-Lengths
  /garbage   a response that is not HTTP
  /stray?delay=S  "ok" (Content-Length 2) and then, at once or S seconds
             later, a second unrequested response "EVIL!" on the same
             connection, which stays open and answers later requests
  /slow?s=S  sleeps S seconds (at most 10), then answers like the default
  /hang      reads the whole request body, records it, never answers
             (holds the connection until the peer closes)
  anything else: a short text naming the origin address
halfclose:  read to EOF, then answer "got N bytes sha256=...\\n" and close.
halfclose2: send "banner\\n", shut write, read to EOF, record what was read.
silent:     accept, read and discard, never answer (closes after 120 s).
drip:       send "0123456789" one byte every 0.5 s, shut write, read to EOF, close.
stall:      read nothing for 3 s (a small receive buffer: the sender's bytes back
            up), then as halfclose: read to EOF, record its length.
halfbig:    read to EOF, then send BIG_N (8 MiB) bytes of big_data() and close.
oneshot:    answer the first request on a connection ("one <path>", keep-alive),
            then read the second request and close without answering (a
            kept-alive connection that the origin closes as a request arrives).
"""
import hashlib, json, os, socket, sys, threading, time, urllib.parse

BIG_N = 8 << 20


def big_data(n=BIG_N):
    """A non-repeating pattern: sha256 of each block number, concatenated."""
    return b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(n // 32))


LOCK = threading.Lock()
CONN_ID = [0]
LOGF = None
MODE = "http"
DEADLINE = 120.0


def rec(obj):
    obj["t"] = round(time.time(), 3)
    line = json.dumps(obj) + "\n"
    with LOCK:
        with open(LOGF, "a") as f:
            f.write(line)
            f.flush()


def next_conn():
    with LOCK:
        CONN_ID[0] += 1
        return CONN_ID[0]


class Closed(Exception):
    pass


class Reader:
    def __init__(self, s):
        self.s = s
        self.buf = b""

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise Closed()
        self.buf += d

    def head(self):
        while True:
            i = self.buf.find(b"\r\n\r\n")
            if i >= 0:
                h, self.buf = self.buf[:i + 4], self.buf[i + 4:]
                return h
            if len(self.buf) > 1 << 20:
                raise Closed()
            self.fill()

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        i = self.buf.find(b"\r\n")
        l, self.buf = self.buf[:i], self.buf[i + 2:]
        return l

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d


def send_resp(s, status, headers, body, head_only=False):
    reason = {200: "OK", 204: "No Content", 304: "Not Modified", 100: "Continue",
              400: "Bad Request"}.get(status, "X")
    out = ["HTTP/1.1 %d %s" % (status, reason)]
    for k, v in headers:
        out.append("%s: %s" % (k, v))
    data = ("\r\n".join(out) + "\r\n\r\n").encode("latin-1")
    if not head_only and body:
        data += body
    s.sendall(data)


def handle_http(s, cid, local, peer):
    r = Reader(s)
    while True:
        try:
            head = r.head()
        except Closed:
            return
        lines = head[:-4].split(b"\r\n")
        reqline = lines[0].decode("latin-1")
        hdrs = []
        for l in lines[1:]:
            k, _, v = l.decode("latin-1").partition(":")
            hdrs.append([k, v.strip()])
        hmap = {}
        for k, v in hdrs:
            hmap.setdefault(k.lower(), []).append(v)
        parts = reqline.split(" ")
        method = parts[0] if parts else ""
        target = parts[1] if len(parts) > 1 else ""
        rec({"ev": "req", "conn": cid, "local": local, "peer": peer, "line": reqline,
             "headers": hdrs})
        if "100-continue" in ",".join(hmap.get("expect", [])).lower():
            s.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = b""
        try:
            if "chunked" in ",".join(hmap.get("transfer-encoding", [])).lower():
                while True:
                    n = int(r.line().split(b";")[0], 16)
                    if n == 0:
                        while r.line() != b"":
                            pass
                        break
                    body += r.exact(n)
                    r.exact(2)
            elif "content-length" in hmap:
                body = r.exact(int(hmap["content-length"][0]))
        except Closed:
            return
        except ValueError:
            send_resp(s, 400, [("Content-Length", "0"), ("Connection", "close")], b"")
            return
        rec({"ev": "body", "conn": cid, "local": local, "len": len(body),
             "sha256": hashlib.sha256(body).hexdigest()})
        u = urllib.parse.urlsplit(target)
        path = u.path
        q = urllib.parse.parse_qs(u.query)
        head_only = method == "HEAD"
        close = "close" in ",".join(hmap.get("connection", [])).lower()
        if path == "/echo":
            b = json.dumps({"line": reqline, "headers": hdrs, "body_len": len(body),
                            "body_sha256": hashlib.sha256(body).hexdigest(),
                            "conn": cid, "local": local}).encode() + b"\n"
            send_resp(s, 200, [("Content-Type", "application/json"),
                               ("Content-Length", str(len(b)))], b, head_only)
        elif path == "/conn":
            b = ("conn=%d\n" % cid).encode()
            send_resp(s, 200, [("Content-Length", str(len(b)))], b, head_only)
        elif path == "/big":
            n = int(q.get("n", [str(4 << 20)])[0])
            send_resp(s, 200, [("Content-Type", "application/octet-stream"),
                               ("Content-Length", str(n))], b"", True)
            if not head_only:
                block = (b"0123456789abcdef" * 4096)
                left = n
                while left > 0:
                    k = min(left, len(block))
                    s.sendall(block[:k])
                    left -= k
        elif path == "/chunked":
            send_resp(s, 200, [("Content-Type", "text/plain"),
                               ("Transfer-Encoding", "chunked")], b"", True)
            if not head_only:
                for i in range(5):
                    c = ("chunk-%d\n" % i).encode() * (i + 1)
                    s.sendall(b"%x\r\n%s\r\n" % (len(c), c))
                    time.sleep(0.02)
                s.sendall(b"0\r\n\r\n")
        elif path == "/reflect":
            auth = (hmap.get("authorization", [""])[0]).encode("latin-1")
            b = b"you sent <" + auth + b"> and again:" + auth + b"\n"
            mode = q.get("mode", ["cl"])[0]
            if mode == "chunked":
                send_resp(s, 200, [("X-Reflect", auth.decode("latin-1")),
                                   ("Transfer-Encoding", "chunked")], b"", True)
                for i in range(0, len(b), 3):
                    c = b[i:i + 3]
                    s.sendall(b"%x\r\n%s\r\n" % (len(c), c))
                s.sendall(b"0\r\n\r\n")
            elif mode == "eof":
                send_resp(s, 200, [("X-Reflect", auth.decode("latin-1")),
                                   ("Connection", "close")], b"", True)
                for i in range(0, len(b), 3):
                    s.sendall(b[i:i + 3])
                    time.sleep(0.001)
                return
            else:
                send_resp(s, 200, [("X-Reflect", auth.decode("latin-1")),
                                   ("Content-Length", str(len(b)))], b"", True)
                for i in range(0, len(b), 3):
                    s.sendall(b[i:i + 3])
                    time.sleep(0.001)
        elif path == "/api":
            auth = hmap.get("authorization", [""])[0]
            ok = auth == "Bearer " + os.environ.get("ORIGIN_TOKEN", "\0")
            b = (b"api ok\n" if ok else b"unauthorized\n")
            send_resp(s, 200 if ok else 401, [("Content-Length", str(len(b)))], b, head_only)
        elif path == "/204":
            send_resp(s, 204, [("X-Origin", "204")], b"", True)
        elif path == "/304":
            send_resp(s, 304, [("ETag", '"abc"')], b"", True)
        elif path == "/hop":
            b = b"hop\n"
            send_resp(s, 200, [("Content-Length", str(len(b))), ("Connection", "X-Resp-Hop"),
                               ("X-Resp-Hop", "secret-hop"), ("Keep-Alive", "timeout=5"),
                               ("X-Resp-Keep", "kept")], b, head_only)
        elif path == "/setcookie":
            b = b"cookie set\n"
            send_resp(s, 200, [("Content-Length", str(len(b))),
                               ("Set-Cookie", "sid=SETCOOKIESECRET777; Path=/")], b, head_only)
        elif path == "/longhead":
            n = int(q.get("n", ["61440"])[0])
            name = q.get("name", ["Set-Cookie"])[0]
            b = b"long head ok\n"
            send_resp(s, 200, [("Content-Length", str(len(b))),
                               (name, "sid=" + "c" * max(n - 4, 0))], b, head_only)
        elif path == "/truncate":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + b"x" * 100)
            return
        elif path == "/dupcl":
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\nhello!!")
            return
        elif path == "/garbage":
            s.sendall(b"this is not http\r\n\r\n")
            return
        elif path == "/stray":
            delay = float(q.get("delay", ["0"])[0])
            ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
            evil = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!"
            if delay > 0:
                s.sendall(ok)
                time.sleep(min(delay, 5.0))
                s.sendall(evil)
            else:
                s.sendall(ok + evil)
            rec({"ev": "stray", "conn": cid, "local": local, "delay": delay})
        elif path == "/slow":
            time.sleep(min(float(q.get("s", ["1"])[0]), 10.0))
            b = ("hello from %s\n" % local).encode()
            send_resp(s, 200, [("Content-Type", "text/plain"),
                               ("Content-Length", str(len(b)))], b, head_only)
        elif path == "/hang":
            rec({"ev": "hang", "conn": cid, "local": local, "len": len(body)})
            while s.recv(65536):
                pass
            return
        elif path == "/close":
            b = b"closing\n"
            send_resp(s, 200, [("Content-Length", str(len(b))), ("Connection", "close")],
                      b, head_only)
            return
        else:
            b = ("hello from %s\n" % local).encode()
            send_resp(s, 200, [("Content-Type", "text/plain"),
                               ("Content-Length", str(len(b)))], b, head_only)
        if close:
            return


def handle_halfclose(s, cid, local, peer):
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    rec({"ev": "halfclose", "conn": cid, "local": local, "len": len(data)})
    s.sendall(b"got %d bytes sha256=%s\n" % (len(data), hashlib.sha256(data).hexdigest().encode()))


def handle_stall(s, cid, local, peer):
    time.sleep(3)
    handle_halfclose(s, cid, local, peer)


def handle_halfclose2(s, cid, local, peer):
    s.sendall(b"banner\n")
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    rec({"ev": "halfclose2", "conn": cid, "local": local, "data": data.decode("latin-1")})


def handle_silent(s, cid, local, peer):
    while True:
        d = s.recv(65536)
        if not d:
            return


def handle_drip(s, cid, local, peer):
    for c in b"0123456789":
        s.sendall(bytes([c]))
        time.sleep(0.5)
    s.shutdown(socket.SHUT_WR)
    rec({"ev": "drip", "conn": cid, "local": local, "sent": 10})
    s.settimeout(10)
    while s.recv(65536):
        pass


def handle_halfbig(s, cid, local, peer):
    data = b""
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
    big = big_data()
    rec({"ev": "halfbig", "conn": cid, "local": local, "len": len(data),
         "data": data[:100].decode("latin-1")})
    s.sendall(big)
    rec({"ev": "halfbig-sent", "conn": cid, "local": local, "sent": len(big)})


def handle_oneshot(s, cid, local, peer):
    r = Reader(s)
    for n in (1, 2):
        head = r.head()
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        hdrs = head.lower()
        clen = 0
        for h in hdrs.split(b"\r\n")[1:]:
            if h.startswith(b"content-length:"):
                clen = int(h.split(b":", 1)[1])
        if clen:
            r.exact(clen)
        rec({"ev": "req" if n == 1 else "dropped", "conn": cid, "local": local, "line": line})
        if n == 2:
            return
        body = ("one %s\n" % line.split(" ")[1]).encode()
        send_resp(s, 200, [("Content-Length", str(len(body)))], body)


TLS_CTX = None


def serve_conn(s, local, peer):
    cid = next_conn()
    if TLS_CTX is not None:
        try:
            s.settimeout(10)
            s = TLS_CTX.wrap_socket(s, server_side=True)
        except (OSError, ValueError):
            s.close()
            return
    rec({"ev": "accept", "conn": cid, "local": local, "peer": peer})
    s.settimeout(DEADLINE)
    try:
        {"http": handle_http, "halfclose": handle_halfclose, "halfclose2": handle_halfclose2,
         "silent": handle_silent, "drip": handle_drip,
         "halfbig": handle_halfbig, "oneshot": handle_oneshot, "stall": handle_stall}[MODE](
            s, cid, local, peer)
    except (OSError, Closed):
        pass
    finally:
        try:
            s.close()
        except OSError:
            pass


def fmt(addr):
    h, p = addr[0], addr[1]
    return ("[%s]:%d" % (h, p)) if ":" in h else ("%s:%d" % (h, p))


def listen(spec):
    if spec.startswith("["):
        h, _, p = spec[1:].partition("]:")
        ls = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        ls.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    else:
        h, _, p = spec.rpartition(":")
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if MODE == "stall":
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096) # accepted ones inherit it
    ls.bind((h, int(p)))
    ls.listen(512)

    def loop():
        while True:
            try:
                c, a = ls.accept()
            except OSError:
                return
            local = fmt(c.getsockname())
            threading.Thread(target=serve_conn, args=(c, local, fmt(a)), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def main():
    global LOGF, MODE, TLS_CTX
    args = sys.argv[1:]
    specs = []
    while args:
        a = args.pop(0)
        if a == "--log":
            LOGF = args.pop(0)
        elif a == "--mode":
            MODE = args.pop(0)
        elif a == "--tls":
            import ssl
            TLS_CTX = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            TLS_CTX.load_cert_chain(args.pop(0), args.pop(0))
        else:
            specs.append(a)
    open(LOGF, "a").close()
    for sp in specs:
        listen(sp)
    print("ready", flush=True)
    # Bounded life: a lab never lasts an hour.
    time.sleep(3600)


if __name__ == "__main__":
    main()
