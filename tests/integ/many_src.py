#!/usr/bin/env python3
"""From inside a run: N requests through its proxy, each on its own connection
from its own loopback source address (127.0.A.B, each a new one).

  many_src.py N PATH_PREFIX [HOST]

The proxy is $http_proxy (http://127.0.0.1:PORT). Request i is
GET http://HOST/PATH_PREFIXi (HOST default good.test), Connection: close.
Prints one line "STATUS COUNT" per status seen (sorted), "closed" for a
connection closed before a status line, "error" for one that could not be
made.
"""
import os, socket, sys


def main():
    n, prefix = int(sys.argv[1]), sys.argv[2]
    host = sys.argv[3] if len(sys.argv) > 3 else "good.test"
    proxy = os.environ["http_proxy"].split("//", 1)[1].rstrip("/")
    paddr, pport = proxy.rsplit(":", 1)
    seen = {}
    for i in range(n):
        src = "127.0.%d.%d" % (1 + i // 250, 2 + i % 250)
        status = "error"
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(5)
            s.bind((src, 0))
            s.connect((paddr, int(pport)))
            s.sendall(("GET http://%s%s%d HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
                       % (host, prefix, i, host)).encode())
            buf = b""
            while b"\r\n" not in buf:
                d = s.recv(4096)
                if not d:
                    break
                buf += d
            status = buf.split(b" ", 2)[1].decode() if b"\r\n" in buf else "closed"
            s.close()
        except OSError:
            pass
        seen[status] = seen.get(status, 0) + 1
    for k in sorted(seen):
        print(k, seen[k], flush=True)


if __name__ == "__main__":
    main()
