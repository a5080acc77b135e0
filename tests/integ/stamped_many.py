#!/usr/bin/env python3
"""N stamped requests, each on its own connection, each from its own principal.

  stamped_many.py KEYFILE NET BOOT SEQ0 N PATH_PREFIX [--addr A] [--port P] [--host H]

Request i carries a Sluice-Stamp (signed as sluice-forward signs, with the
current key of KEYFILE, as stamp.py does) naming src 10.77.X.Y (i-th such
address), net NET, boot BOOT, sequence SEQ0+i, and asks
GET http://H/PATH_PREFIXi (H default good.test). Prints one line
"STATUS COUNT" per status seen, sorted ("closed": no status line), then
"last STATUS" for request N-1.
"""
import hashlib, hmac, socket, sys


def main():
    args = sys.argv[1:]
    opts = {"--addr": "127.0.0.1", "--port": "3128", "--host": "good.test"}
    pos = []
    while args:
        a = args.pop(0)
        if a in opts:
            opts[a] = args.pop(0)
        else:
            pos.append(a)
    keyfile, net, boot, seq0, n, prefix = pos
    key, kid = None, None
    for line in open(keyfile):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if len(f) == 2:
            kid, key = int(f[0]), bytes.fromhex(f[1])
    seen, status = {}, None
    for i in range(int(n)):
        src = "10.77.%d.%d" % (i // 250, 1 + i % 250)
        signed = "v=1; kid=%d; src=%s; net=%s; boot=%s; seq=%d" % (kid, src, net, boot, int(seq0) + i)
        st = "%s; mac=%s" % (signed, hmac.new(key, signed.encode(), hashlib.sha256).hexdigest())
        host = opts["--host"]
        s = socket.create_connection((opts["--addr"], int(opts["--port"])), timeout=5)
        s.sendall(("GET http://%s%s%d HTTP/1.1\r\nHost: %s\r\nSluice-Stamp: %s\r\n"
                   "Connection: close\r\n\r\n" % (host, prefix, i, host, st)).encode())
        buf = b""
        while b"\r\n" not in buf:
            d = s.recv(4096)
            if not d:
                break
            buf += d
        s.close()
        status = buf.split(b" ", 2)[1].decode() if b"\r\n" in buf else "closed"
        seen[status] = seen.get(status, 0) + 1
    for k in sorted(seen):
        print(k, seen[k])
    print("last", status)


if __name__ == "__main__":
    main()
