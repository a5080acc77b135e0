#!/usr/bin/env python3
# tunnels_at_once.py ADDR PORT TARGET N BYTES [early]: N CONNECT tunnels to TARGET
# opened at once; once all are established each sends BYTES bytes and shuts its
# write side (early: each sends them in the same write as its CONNECT head).
import socket, sys, time
addr, port, target, n, nb = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
early = sys.argv[6:] == ["early"]
ss = []
for i in range(n):
    s = socket.create_connection((addr, port), timeout=10)
    s.sendall(('CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (target, target)).encode() +
              (b'x' * nb if early else b''))
    ss.append(s)
ok = 0
for s in ss:
    r = b''
    while b'\r\n\r\n' not in r:
        c = s.recv(4096)
        if not c: break
        r += c
    if r.startswith(b'HTTP/1.1 200'): ok += 1
print('established', ok, flush=True)
for s in ss:
    try:
        if not early:
            s.sendall(b'x' * nb)
        s.shutdown(socket.SHUT_WR)
    except OSError as e: print('send', e)
time.sleep(1.5)
for s in ss: s.close()
