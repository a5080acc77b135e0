#!/usr/bin/env python3
"""One UDP datagram on a connected socket, for the wall tests.

  udp.py ADDR PORT dns|quic|TEXT [SPORT]

dns sends a real query (dnsgood.test A), quic the start of a QUIC long
header, anything else its own bytes; SPORT binds that source port first
(SO_REUSEADDR). Prints "answered" (any reply within a second), "timeout"
or "refused ERRNO". Read from stdin (python3 - ARGS <udp.py) so that any
user can run it, whoever owns the tree.
"""
import socket, sys

addr, port, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
if kind == "dns":
    payload = b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07dnsgood\x04test\x00\x00\x01\x00\x01"
elif kind == "quic":
    payload = b"\xc3\x00\x00\x00\x01\x08sluicetst\x00\x00"
else:
    payload = kind.encode()
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
if len(sys.argv) > 4:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(sys.argv[4])))
s.settimeout(1)
try:
    s.connect((addr, port))
    s.send(payload)
    s.recv(512)
    print("answered")
except socket.timeout:
    print("timeout")
except OSError as e:
    print("refused", e.errno)
