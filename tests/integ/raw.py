#!/usr/bin/env python3
"""Raw HTTP client for the integration tests: sends exact bytes, prints exact bytes.

  raw.py [--addr 127.0.0.1] [--port 3128] [--timeout S] [--responses N]
         [--shut] [--trickle SECS] [--meta] DATA

DATA uses Python escapes (\\r \\n \\x00). The bytes received are written to
stdout until N final responses (default 1) are complete, the peer closes, or
the timeout passes. --shut shuts the write side after sending. --trickle sends
one byte every SECS seconds (and stops sending once anything is received).
--meta adds a last line "#meta statuses=... closed=0|1 elapsed=S" to stdout.

Imported (sys.path.insert(0, os.environ["INTEG_DIR"]); from raw import
tunnel), tunnel() opens a CONNECT tunnel for a test's own script:

  s, head, status = tunnel(proxy_addr, proxy_port, "good.test:9000")

It reads the response head byte by byte, so no byte of the tunnel behind the
head is consumed; status is the int status (None when no head came).
"""
import codecs, select, socket, sys, time


def parse_responses(buf, want):
    """Count complete final responses in buf; returns (count, statuses)."""
    pos, done, statuses = 0, 0, []
    while done < want:
        i = buf.find(b"\r\n\r\n", pos)
        if i < 0:
            break
        head = buf[pos:i].split(b"\r\n")
        try:
            code = int(head[0].split(b" ")[1])
        except (IndexError, ValueError):
            break
        hdr = {}
        for l in head[1:]:
            k, _, v = l.partition(b":")
            hdr[k.strip().lower()] = v.strip().lower()
        body = i + 4
        if 100 <= code < 200:
            pos = body
            continue
        if code in (204, 304):
            end = body
        elif b"content-length" in hdr:
            end = body + int(hdr[b"content-length"])
            if len(buf) < end:
                break
        elif b"chunked" in hdr.get(b"transfer-encoding", b""):
            p = body
            end = None
            while True:
                j = buf.find(b"\r\n", p)
                if j < 0:
                    break
                n = int(buf[p:j].split(b";")[0] or b"0", 16)
                if n == 0:
                    k = buf.find(b"\r\n\r\n", j)
                    if k >= 0:
                        end = k + 4
                    break
                p = j + 2 + n + 2
                if p > len(buf):
                    break
            if end is None:
                break
        else:
            break  # body until close
        statuses.append(code)
        done += 1
        pos = end
    return done, statuses


def tunnel(addr, port, target, timeout=5.0, extra=b""):
    """CONNECT target ("host:port") through the proxy at addr:port, then
    read the response head one byte at a time. extra is sent right behind
    the CONNECT head. Returns (socket, head, status)."""
    s = socket.create_connection((addr, int(port)), timeout=timeout)
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode() + extra)
    head = b""
    while b"\r\n\r\n" not in head:
        try:
            d = s.recv(1)
        except OSError:
            break
        if not d:
            break
        head += d
    status = None
    if head.startswith(b"HTTP/"):
        try:
            status = int(head.split(b"\r\n")[0].split(b" ")[1])
        except (IndexError, ValueError):
            pass
    return s, head, status


def read_line(s, wait):
    """What s sends up to its first newline, its end, or wait seconds of
    silence (a banner the server speaks first); the bytes read."""
    s.settimeout(wait)
    got = b""
    try:
        while b"\n" not in got:
            d = s.recv(100)
            if not d:
                break
            got += d
    except socket.timeout:
        pass
    return got

def main():
    addr, port, timeout, want, shut, trickle, meta = "127.0.0.1", 3128, 5.0, 1, False, 0.0, False
    args = sys.argv[1:]
    data = None
    while args:
        a = args.pop(0)
        if a == "--addr":
            addr = args.pop(0)
        elif a == "--port":
            port = int(args.pop(0))
        elif a == "--timeout":
            timeout = float(args.pop(0))
        elif a == "--responses":
            want = int(args.pop(0))
        elif a == "--shut":
            shut = True
        elif a == "--trickle":
            trickle = float(args.pop(0))
        elif a == "--meta":
            meta = True
        else:
            data = codecs.escape_decode(a.encode("utf-8"))[0]
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(timeout)
    t0 = time.monotonic()
    s.connect((addr, port))
    buf = b""
    closed = False
    if trickle > 0:
        for i in range(len(data)):
            try:
                s.sendall(data[i:i + 1])
            except OSError:
                break
            r, _, _ = select.select([s], [], [], trickle)
            if r:
                break
            if time.monotonic() - t0 > timeout:
                break
    else:
        try:
            s.sendall(data)
        except OSError:
            pass  # the proxy may answer and close before all of it went: read what it said
    if shut:
        s.shutdown(socket.SHUT_WR)
    while time.monotonic() - t0 < timeout:
        n, _ = parse_responses(buf, want)
        if n >= want:
            break
        r, _, _ = select.select([s], [], [], max(0.01, timeout - (time.monotonic() - t0)))
        if not r:
            break
        try:
            d = s.recv(65536)
        except OSError:
            closed = True
            break
        if not d:
            closed = True
            break
        buf += d
    if not closed and meta:
        # was the connection closed right after? (a refusal should close)
        r, _, _ = select.select([s], [], [], 0.3)
        if r:
            try:
                d = s.recv(65536)
                if not d:
                    closed = True
                else:
                    buf += d
            except OSError:
                closed = True
    el = time.monotonic() - t0
    sys.stdout.write(buf.decode("latin-1"))
    if meta:
        _, st = parse_responses(buf, 1000)
        sys.stdout.write("\n#meta statuses=%s closed=%d elapsed=%.3f\n" %
                         (",".join(map(str, st)) or "none", int(closed), el))


if __name__ == "__main__":
    main()
