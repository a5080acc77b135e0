#!/usr/bin/env python3
"""Two bodiless GETs on one client connection through the proxy.

  keepalive2.py TARGET [GO_FILE]

Asks GET http://TARGET/one, prints "one: STATUS-LINE BODY", waits (at most
10 s) for GO_FILE to exist when one is given, asks /two the same way on the
same connection and prints "two: ..." ("closed" when the proxy closed
first). For test_reload_dial.sh and test_replay_fallback.sh.
"""
import os, socket, sys, time

target = sys.argv[1]
go = sys.argv[2] if len(sys.argv) > 2 else None
s = socket.create_connection(("127.0.0.1", 3128), timeout=10)


def ask(path):
    s.sendall(("GET http://%s/%s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, path, target)).encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            return "closed"
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    n = 0
    for l in head.split(b"\r\n")[1:]:
        k, _, v = l.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    while len(body) < n:
        d = s.recv(4096)
        if not d:
            break
        body += d
    return head.split(b"\r\n")[0].decode() + " " + body[:n].decode("latin-1").replace("\n", " ")


print("one:", ask("one"), flush=True)
for _ in range(100 if go else 0):
    if os.path.exists(go):
        break
    time.sleep(0.1)
print("two:", ask("two"), flush=True)
