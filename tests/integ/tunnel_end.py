"""tunnel_end.py ADDR PORT TARGET [WORD]: how a CONNECT tunnel ends.

Sends CONNECT TARGET through the proxy (or forwarder) at ADDR:PORT, reads
until the connection ends, and prints how it ended, "rst", "fin" or
"timeout" (5 s), then whether WORD (default "banner") was among the bytes
read: "rst True" is an origin that sent its banner and closed first, seen
through a hop that resets the client after it.
"""
import socket
import sys
import time

addr, port, target = sys.argv[1], int(sys.argv[2]), sys.argv[3]
word = (sys.argv[4] if len(sys.argv) > 4 else "banner").encode()
s = socket.create_connection((addr, port), timeout=5)
s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()))
got, end, t0 = b"", "timeout", time.monotonic()
while time.monotonic() - t0 < 5:
    try:
        d = s.recv(4096)
    except ConnectionResetError:
        end = "rst"
        break
    except socket.timeout:
        break
    if not d:
        end = "fin"
        break
    got += d
print(end, word in got)
