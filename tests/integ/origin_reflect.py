#!/usr/bin/env python3
"""A TLS origin that reflects credentials back in encoded forms (test_scrub_forms.sh).

  origin_reflect.py --log FILE --tls CERT KEY LISTEN

Routes, chosen by the last path segment (so a rule's path prefix can sit in
front); ?h=NAME names the credential header (default authorization):
  echo-url   302 with Location: https://back.test/r?to=<the target as received>,
             and a body with the target as received, with its %XX in lower
             case, percent-decoded, and percent-encoded once more
  echo-b64   the header's value V and V without its first word (the scheme):
             standard base64 of both, of "x"+V' and "xy"+V' (other alignments
             inside a larger blob), urlsafe base64 of V'; for "Basic ..." also
             the decoded user:pass and the password alone
  echo-json  the request's headers as JSON, as Python writes it and with
             every '/' escaped too (as PHP's json_encode does)
  gzip       the header's value in a body sent with Content-Encoding: gzip
             (?enc=deflate: zlib; any other name: gzip bytes under it)
             whatever Accept-Encoding said; ?times=N repeats the text,
             ?zeros=M adds M MiB of zero bytes (a "zip bomb"), ?trunc cuts
             the compressed stream short, ?members=N sends it N times over
             (gzip members one after the other), ?frame=chunked|eof frames it so
  last       the value raw and percent-encoded
  echo-quote the value as Python's urllib.parse.quote ('/' raw), quote_plus
             (a space as '+') and urlencode write it, of the whole value and
             of it without its first word (the scheme)
  range      "you sent <V>" (V the header's value), honouring a Range header
             of bytes=A-B / A- / -N ranges: one range 206 with Content-Range,
             several 206 multipart/byteranges, none 200 with the whole body;
             ?force=A-B answers 206 with that range whatever was asked
             (an origin that sends a range nobody asked for)
A request without the header uses the last value of it seen for this Host
(any path) whose scheme (first word, lower case; "" for none) is ?s= (of
the header ?of=, default the same): an origin that shows a stored
credential to a request that carried none.
A HEAD request gets the head alone. Every request is recorded as {"ev": "req", "line", "host", "sent"}: "sent" is
the response exactly as written (latin-1), the control that the origin did
reflect what the client must not see.
"""
import base64, gzip, json, socket, ssl, sys, threading, time, urllib.parse, zlib

LOCK = threading.Lock()
LOGF = None
LAST = {}


def rec(obj):
    obj["t"] = round(time.time(), 3)
    with LOCK:
        with open(LOGF, "a") as f:
            f.write(json.dumps(obj) + "\n")


def lower_hex(t):
    out, i = "", 0
    while i < len(t):
        if t[i] == "%" and i + 3 <= len(t):
            out += "%" + t[i + 1:i + 3].lower()
            i += 3
        else:
            out += t[i]
            i += 1
    return out


def b64(b):
    return base64.b64encode(b).decode()


def respond(target, host, hmap):
    path, _, query = target.partition("?")
    q = urllib.parse.parse_qs(query)
    name = q.get("h", ["authorization"])[0].lower()
    val = hmap.get(name, "")
    seg = path.rsplit("/", 1)[-1]
    status, headers, body = 200, [], b""
    if val:
        with LOCK:
            LAST[(host, name, val.split(" ", 1)[0].lower() if " " in val else "")] = val
    else:
        with LOCK:
            val = LAST.get((host, q.get("of", [name])[0], q.get("s", [""])[0]), "")
    if seg == "echo-url":
        status = 302
        headers.append(("Location", "https://back.test/r?to=" + target))
        body = ("sent: %s\nlower: %s\ndecoded: %s\ndouble: %s\n" %
                (target, lower_hex(target), urllib.parse.unquote(target),
                 urllib.parse.quote(target, safe=""))).encode("latin-1")
    elif seg == "echo-b64":
        v = val.encode("latin-1")
        bare = v.split(b" ", 1)[1] if b" " in v else v
        lines = ["whole: " + b64(v), "bare: " + b64(bare), "x: " + b64(b"x" + bare),
                 "xy: " + b64(b"xy" + bare), "url: " + base64.urlsafe_b64encode(bare).decode()]
        if v[:6].lower() == b"basic ":
            try:
                up = base64.b64decode(bare, validate=True).decode("latin-1")
                lines += ["userpass: " + up, "password: " + up.split(":", 1)[-1]]
            except ValueError:
                pass
        body = ("\n".join(lines) + "\n").encode("latin-1")
    elif seg == "echo-json":
        py = json.dumps({"headers": hmap})
        body = (py + "\n" + py.replace("/", "\\/") + "\n").encode("latin-1")
    elif seg == "gzip":
        raw = ("you sent <%s>\n" % val).encode("latin-1") * int(q.get("times", ["1"])[0])
        raw += b"\0" * (int(q.get("zeros", ["0"])[0]) << 20)
        enc = q.get("enc", ["gzip"])[0]
        body = zlib.compress(raw) if enc == "deflate" else gzip.compress(raw)
        body *= int(q.get("members", ["1"])[0])
        if "trunc" in q:
            body = body[:len(body) - 12]
        headers.append(("Content-Encoding", enc))
        frame = q.get("frame", ["cl"])[0]
        if frame != "cl":
            return head_and_body(status, headers, body, frame)
    elif seg == "echo-quote":
        bare = val.split(" ", 1)[1] if val.lower().startswith(("bearer ", "basic ")) else val
        body = ("quote: %s\nplus: %s\nform: %s\nbare-quote: %s\nbare-plus: %s\n" %
                (urllib.parse.quote(val), urllib.parse.quote_plus(val),
                 urllib.parse.urlencode({"v": val}), urllib.parse.quote(bare),
                 urllib.parse.quote_plus(bare))).encode("latin-1")
    elif seg == "range":
        body = ("you sent <%s>\n" % val).encode("latin-1")
        spec = q["force"][0] if "force" in q else None
        if spec is None and hmap.get("range", "").startswith("bytes="):
            spec = hmap["range"][len("bytes="):]
        if spec is not None:
            return ranged(body, spec)
    elif seg == "last":
        body = ("last: %s\npct: %s\n" % (val, urllib.parse.quote(val, safe=""))).encode("latin-1")
    else:
        body = b"reflect origin\n"
    headers.append(("Content-Length", str(len(body))))
    return head_and_body(status, headers, body, "cl")


def ranged(body, spec):
    """A 206 of body for the byte ranges in spec ("0-9,10-", "-5"); one range plain, more multipart."""
    parts = []
    for r in spec.split(","):
        a, _, b = r.strip().partition("-")
        if a == "":
            first, last = max(0, len(body) - int(b)), len(body) - 1
        else:
            first, last = int(a), min(int(b), len(body) - 1) if b else len(body) - 1
        parts.append((first, last))
    total = len(body)
    if len(parts) == 1:
        first, last = parts[0]
        piece = body[first:last + 1]
        headers = [("Content-Range", "bytes %d-%d/%d" % (first, last, total)),
                   ("Content-Length", str(len(piece)))]
        return head_and_body(206, headers, piece, "cl")
    out = b""
    for first, last in parts:
        out += (b"--SEP\r\nContent-Type: text/plain\r\nContent-Range: bytes %d-%d/%d\r\n\r\n" %
                (first, last, total)) + body[first:last + 1] + b"\r\n"
    out += b"--SEP--\r\n"
    headers = [("Content-Type", "multipart/byteranges; boundary=SEP"),
               ("Content-Length", str(len(out)))]
    return head_and_body(206, headers, out, "cl")


def head_and_body(status, headers, body, frame):
    """The response; frame chunked: the body in 5-byte chunks; eof: no length (then close)."""
    if frame == "chunked":
        headers.append(("Transfer-Encoding", "chunked"))
        body = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 5]), body[i:i + 5])
                        for i in range(0, len(body), 5)) + b"0\r\n\r\n"
    elif frame == "eof":
        headers.append(("Connection", "close"))
    reasons = {200: "OK", 206: "Partial Content", 302: "Found"}
    head = "HTTP/1.1 %d %s\r\n" % (status, reasons[status])
    head += "".join("%s: %s\r\n" % kv for kv in headers) + "\r\n"
    return head.encode("latin-1") + body


def serve(c, ctx):
    try:
        c.settimeout(10)
        s = ctx.wrap_socket(c, server_side=True)
    except (OSError, ValueError):
        c.close()
        return
    buf = b""
    try:
        while True:
            while b"\r\n\r\n" not in buf:
                d = s.recv(65536)
                if not d or len(buf) > 1 << 16:
                    return
                buf += d
            h, buf = buf.split(b"\r\n\r\n", 1)
            lines = h.decode("latin-1").split("\r\n")
            hmap = {}
            for l in lines[1:]:
                k, _, v = l.partition(":")
                hmap[k.strip().lower()] = v.strip()
            target = lines[0].split(" ")[1]
            host = hmap.get("host", "").split(":")[0]
            out = respond(target, host, hmap)
            if lines[0].startswith("HEAD "):
                out = out.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
            rec({"ev": "req", "line": lines[0], "host": host, "headers": hmap,
                 "sent": out.decode("latin-1")})
            s.sendall(out)
            if b"\r\nConnection: close\r\n" in out.split(b"\r\n\r\n", 1)[0] + b"\r\n":
                return
    except OSError:
        pass
    finally:
        s.close()


def main():
    global LOGF
    args = sys.argv[1:]
    LOGF = args[args.index("--log") + 1]
    i = args.index("--tls")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args[i + 1], args[i + 2])
    h, _, p = args[-1].rpartition(":")
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((h, int(p)))
    ls.listen(64)
    open(LOGF, "a").close()
    end = time.time() + 3600  # a lab never lasts an hour
    ls.settimeout(1)
    while time.time() < end:
        try:
            c, _ = ls.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(c, ctx), daemon=True).start()


if __name__ == "__main__":
    main()
