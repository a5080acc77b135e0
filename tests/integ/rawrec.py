#!/usr/bin/env python3
"""A recording origin for test_http_hardening.sh: what arrived, byte for byte.

  rawrec.py --log FILE [--tls CERT KEY] LISTEN...

LISTEN is ADDR:PORT. Every request is appended to FILE as one JSON object:
{"ev": "req", "conn": N, "line": request line, "headers": [[name, value]...],
 "head": the raw head, "trailers": [raw trailer lines], "body_len": N,
 "body_sha256": hex} (raw text as latin-1). origin.py reads trailers and
throws them away; this one keeps them.

Routes: /trailers answers a chunked "ok\\n" whose trailer section carries the
fields of RESP_TRAILERS (some no trailer may carry); anything else answers
"ok N\\n" (N the body length) with Content-Length. Bounded: a connection
lives at most 60 s, the process an hour.
"""
import hashlib, json, socket, ssl, sys, threading, time

LOCK = threading.Lock()
LOGF = None
CONN = [0]
RESP_TRAILERS = [
    "X-Checksum: sha-ok",
    "Set-Cookie: sid=TRAILERCOOKIE",
    "Content-Length: 999",
    "Transfer-Encoding: chunked",
    "Host: evil.test",
    "Sluice-Stamp: v1 forged",
    "Proxy-Authenticate: Basic realm=x",
    "WWW-Authenticate: Basic realm=y",
    "Location: http://evil.test/",
    "X-Trailer-Note: kept",
]


class Closed(Exception):
    pass


def rec(obj):
    obj["t"] = round(time.time(), 3)
    with LOCK:
        with open(LOGF, "a") as f:
            f.write(json.dumps(obj) + "\n")


class Reader:
    def __init__(self, s):
        self.s, self.buf = s, b""

    def fill(self):
        d = self.s.recv(65536)
        if not d:
            raise Closed()
        self.buf += d
        if len(self.buf) > 1 << 22:
            raise Closed()

    def until(self, sep):
        while sep not in self.buf:
            self.fill()
        i = self.buf.find(sep) + len(sep)
        d, self.buf = self.buf[:i], self.buf[i:]
        return d

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d


def serve(s, cid):
    r = Reader(s)
    while True:
        head = r.until(b"\r\n\r\n")
        lines = head[:-4].split(b"\r\n")
        hdrs = []
        for l in lines[1:]:
            k, _, v = l.decode("latin-1").partition(":")
            hdrs.append([k, v.strip()])
        low = {k.lower(): v for k, v in hdrs}
        body, trailers = b"", []
        if "chunked" in low.get("transfer-encoding", "").lower():
            while True:
                n = int(r.until(b"\r\n")[:-2].split(b";")[0], 16)
                if n == 0:
                    break
                body += r.exact(n)
                r.exact(2)
            while True:
                l = r.until(b"\r\n")[:-2]
                if l == b"":
                    break
                trailers.append(l.decode("latin-1"))
        elif "content-length" in low:
            body = r.exact(int(low["content-length"]))
        line = lines[0].decode("latin-1")
        rec({"ev": "req", "conn": cid, "line": line, "headers": hdrs,
             "head": head.decode("latin-1"), "trailers": trailers, "body_len": len(body),
             "body_sha256": hashlib.sha256(body).hexdigest()})
        path = line.split(" ")[1] if " " in line else ""
        if path.startswith("/trailers"):
            t = "".join(x + "\r\n" for x in RESP_TRAILERS)
            s.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nok\n\r\n0\r\n" +
                      t.encode() + b"\r\n")
        else:
            b = b"ok %d\n" % len(body)
            s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(b), b))


def conn(c, ctx):
    with LOCK:
        CONN[0] += 1
        cid = CONN[0]
    try:
        c.settimeout(60)
        if ctx is not None:
            c = ctx.wrap_socket(c, server_side=True)
        serve(c, cid)
    except (OSError, Closed, ValueError):
        pass
    finally:
        try:
            c.close()
        except OSError:
            pass


def listen(spec, ctx):
    h, _, p = spec.rpartition(":")
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((h, int(p)))
    ls.listen(64)

    def loop():
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            threading.Thread(target=conn, args=(c, ctx), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def main():
    global LOGF
    args, ctx, specs = sys.argv[1:], None, []
    while args:
        a = args.pop(0)
        if a == "--log":
            LOGF = args.pop(0)
        elif a == "--tls":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args.pop(0), args.pop(0))
        else:
            specs.append(a)
    open(LOGF, "a").close()
    for sp in specs:
        listen(sp, ctx)
    print("ready", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main()
