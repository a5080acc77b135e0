#!/usr/bin/env python3
# tunnels_at_once.py ADDR PORT TARGET N BYTES [early|hello]: N CONNECT tunnels
# to TARGET opened at once; once all are established each sends BYTES bytes
# and shuts its write side, all at once (early: each sends them in the same
# write as its CONNECT head; hello: they are one TLS ClientHello naming
# TARGET's host, padded to BYTES, as a passthrough tunnel reads it whole
# before anything goes up).
import os, socket, struct, sys, threading, time
addr, port, target, n, nb = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
mode = sys.argv[6] if len(sys.argv) > 6 else ""


def client_hello(name, total):
    """A ClientHello record of total bytes: server_name, then a padding extension."""
    sni = name.encode()
    sn = struct.pack("!HHHBH", 0, len(sni) + 5, len(sni) + 3, 0, len(sni)) + sni
    fixed = b"\x03\x03" + os.urandom(32) + b"\x00" + b"\x00\x02\x13\x01" + b"\x01\x00"
    pad = total - (5 + 4 + len(fixed) + 2 + len(sn) + 4)
    exts = sn + struct.pack("!HH", 21, pad) + b"\x00" * pad
    body = fixed + struct.pack("!H", len(exts)) + exts
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack("!H", len(hs)) + hs


payload = client_hello(target.rsplit(":", 1)[0], nb) if mode == "hello" else b"x" * nb
ss = []
for i in range(n):
    s = socket.create_connection((addr, port), timeout=10)
    s.sendall(('CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n' % (target, target)).encode() +
              (payload if mode == "early" else b''))
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


def send(s):
    try:
        if mode != "early":
            s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
    except OSError as e:
        print('send', e, flush=True)


# all at once: a tunnel that stops reading must not hold the others back
ts = [threading.Thread(target=send, args=(s,)) for s in ss]
for t in ts: t.start()
for t in ts: t.join(15)
time.sleep(1.5)
for s in ss: s.close()
