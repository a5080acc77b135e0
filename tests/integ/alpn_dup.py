#!/usr/bin/python3
"""alpn_dup.py PROXY_HOST PROXY_PORT HOST PORT CAFILE N [PROTO]: a CONNECT, then a TLS
ClientHello whose ALPN list is PROTO (default h2) N times over. Prints the handshake's end."""
import socket
import ssl
import sys

phost, pport, host, port, cafile, n = sys.argv[1:7]
proto = sys.argv[7] if len(sys.argv) > 7 else "h2"
s = socket.create_connection((phost, int(pport)), timeout=10)
s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
head = b""
while b"\r\n\r\n" not in head:
    b = s.recv(1)
    if not b:
        raise SystemExit("proxy closed during CONNECT")
    head += b
ctx = ssl.create_default_context(cafile=cafile)
ctx.set_alpn_protocols([proto] * int(n))
try:
    t = ctx.wrap_socket(s, server_hostname=host)
    print("handshake done, ALPN", t.selected_alpn_protocol())
except (ssl.SSLError, OSError) as e:
    print("handshake failed:", e)
