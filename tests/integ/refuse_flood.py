#!/usr/bin/python3
"""refuse_flood.py FIRST NADDR N TAG: N requests for http://other.test/TAG-I
(never granted in the flood tests), one connection each, to the lab's proxy
at 127.0.0.1:3128, from 127.0.0.FIRST .. FIRST+NADDR-1 in turn; prints the
count of each status ("403=450"; "none" for no HTTP answer)."""
import socket
import sys

first, naddr, n, tag = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
codes = {}
for i in range(n):
    s = socket.socket()
    s.settimeout(5)
    s.bind(("127.0.0.%d" % (first + i % naddr), 0))
    s.connect(("127.0.0.1", 3128))
    s.sendall(("GET http://other.test/%s-%d HTTP/1.1\r\nHost: other.test\r\n\r\n" % (tag, i)).encode())
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except socket.timeout:
        pass
    s.close()
    c = buf[9:12].decode() if buf.startswith(b"HTTP/1.") else "none"
    codes[c] = codes.get(c, 0) + 1
print(" ".join("%s=%d" % kv for kv in sorted(codes.items())))
