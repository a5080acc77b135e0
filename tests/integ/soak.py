#!/usr/bin/env python3
"""Mixed traffic for test_soak.sh: bounded client loops, each request marked.

  soak.py OUT SECONDS PROXY_ADDR PROXY_PORT CA_FILE KIND[xN]...
  soak.py --ready T0 PROXY_ADDR PROXY_PORT PATH

KIND is plain (GET http://good.test/soak-p-...), refuse (GET to ungranted
other.test, a 403), tunnel (CONNECT pass.test:8443, passed through: TLS
to the origin inside, trusting $SOAK_ORIGIN_CA, a GET with Connection:
close, read to EOF), https (CONNECT tls.test:8443 intercepted,
trusting CA_FILE) or fwd (plain GET to PROXY_ADDR:PROXY_PORT, the
forwarder's listener). KINDx2 runs two loops of it. Paths are
/soak-TAG-KIND-N, TAG the name of OUT without its extension. Each request is one
JSON line in OUT: kind, marker (the unique path), answered (a complete
response came back), status, client (the local address:port), t0, el
(seconds), err. Every loop stops at SECONDS; every request times out at 5 s.

--ready tries GET http://good.test/PATH-N every 20 ms until one is answered
200 and prints the seconds since T0 (a time.time() value), or "none" after 5 s.
"""
import json, os, socket, ssl, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from raw import parse_responses, tunnel  # noqa: E402


def ready():
    t0, pa, pp, path = float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
    for i in range(250):
        try:
            s = socket.create_connection((pa, pp), timeout=2)
            s.sendall(("GET http://good.test%s-%d HTTP/1.1\r\nHost: good.test\r\n"
                       "Connection: close\r\n\r\n" % (path, i)).encode())
            st, done = read_response(s, False)
            s.close()
            if done and st == 200:
                print("%.3f" % (time.time() - t0))
                return
        except OSError:
            pass
        if time.time() - t0 > 5:
            break
        time.sleep(0.02)
    print("none")


if sys.argv[1] == "--ready":
    OUT, SECS, PA, PP, CA = "ready", 0.0, None, None, None
else:
    OUT, SECS, PA, PP, CA = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4]), sys.argv[5]
LOCK = threading.Lock()
RES = []
T_END = time.monotonic() + SECS
TAG = os.path.basename(OUT).split(".")[0]
PAUSE = 0.01  # between one loop's requests: bounded load


def read_response(s, want_eof):
    """Read one complete response (to EOF when want_eof). Returns (status, complete)."""
    buf = b""
    while True:
        n, st = parse_responses(buf, 1)
        if n >= 1 and not want_eof:
            return st[0], True
        try:
            d = s.recv(65536)
        except (OSError, ssl.SSLError):
            d = None
        if not d:
            n, st = parse_responses(buf, 1)
            if n >= 1:
                return st[0], d is not None or not want_eof
            # a response without length, ended by EOF
            if d is not None and buf.startswith(b"HTTP/1.") and b"\r\n\r\n" in buf:
                try:
                    return int(buf.split(b" ")[1]), True
                except (IndexError, ValueError):
                    pass
            return None, False
        buf += d


def one(kind, marker):
    s = None
    client = None
    status, answered, err = None, False, None
    try:
        if kind in ("plain", "refuse", "fwd"):
            host = "other.test" if kind == "refuse" else "good.test"
            s = socket.create_connection((PA, PP), timeout=5)
            client = "%s:%d" % s.getsockname()[:2]
            s.sendall(("GET http://%s%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                       % (host, marker, host)).encode())
            status, answered = read_response(s, False)
        elif kind == "tunnel":
            raw_s, head, st = tunnel(PA, PP, "pass.test:8443")
            s = raw_s
            client = "%s:%d" % raw_s.getsockname()[:2]
            if st == 200:
                ctx = ssl.create_default_context(cafile=os.environ["SOAK_ORIGIN_CA"])
                s = ctx.wrap_socket(raw_s, server_hostname="pass.test")
                s.sendall(("GET %s HTTP/1.1\r\nHost: pass.test:8443\r\nConnection: close\r\n\r\n"
                           % marker).encode())
                status, answered = read_response(s, True)
            else:
                status = st
        elif kind == "https":
            raw_s, head, st = tunnel(PA, PP, "tls.test:8443")
            s = raw_s
            client = "%s:%d" % raw_s.getsockname()[:2]
            if st == 200:
                ctx = ssl.create_default_context(cafile=CA)
                s = ctx.wrap_socket(raw_s, server_hostname="tls.test")
                s.sendall(("GET %s HTTP/1.1\r\nHost: tls.test:8443\r\nConnection: close\r\n\r\n"
                           % marker).encode())
                status, answered = read_response(s, False)
            else:
                status = st
    except (OSError, ssl.SSLError) as e:
        err = e.__class__.__name__
    finally:
        if s is not None:
            try:
                s.close()
            except OSError:
                pass
    return client, status, answered, err


def loop(kind, idx):
    n = 0
    while time.monotonic() < T_END and n < 20000:
        n += 1
        marker = "/soak-%s-%s%d-%d" % (TAG, kind, idx, n)
        t0 = time.monotonic()
        client, status, answered, err = one(kind, marker)
        el = time.monotonic() - t0
        with LOCK:
            RES.append({"kind": kind, "marker": marker, "answered": answered, "status": status,
                        "client": client, "t0": round(time.time() - el, 3), "el": round(el, 3),
                        "err": err})
        time.sleep(PAUSE if answered else 0.02)


def main():
    threads = []
    for spec in sys.argv[6:]:
        kind, _, cnt = spec.partition("x")
        for i in range(int(cnt or 1)):
            t = threading.Thread(target=loop, args=(kind, i), daemon=True)
            t.start()
            threads.append(t)
    for t in threads:
        t.join(SECS + 15)
    with open(OUT, "w") as f:
        for r in RES:
            f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--ready":
        ready()
    else:
        main()
