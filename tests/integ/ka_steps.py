#!/usr/bin/env python3
# ka_steps.py ADDR PORT AUTH STEPS...: one keep-alive connection to the proxy;
# each STEP is "get:URL" (an absolute-form GET, Proxy-Authorization AUTH on the
# first request only) or "sleep:S" or "wait:FILE" (until FILE exists, at most 20 s).
# Prints each response's status line.
import base64, os, socket, sys, time
addr, port, auth = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((addr, port), timeout=10)
f = s.makefile('rb')
first = True
for st in sys.argv[4:]:
    k, v = st.split(':', 1)
    if k == 'sleep':
        time.sleep(float(v)); continue
    if k == 'wait':
        t0 = time.time()
        while not os.path.exists(v) and time.time() - t0 < 20:
            time.sleep(0.1)
        continue
    host = v.split('/')[2]
    h = 'GET %s HTTP/1.1\r\nHost: %s\r\n' % (v, host)
    if first and auth:
        h += 'Proxy-Authorization: %s\r\n' % auth
    first = False
    s.sendall((h + '\r\n').encode())
    line = f.readline().decode().strip()
    n = 0
    while True:
        l = f.readline()
        if l in (b'\r\n', b''): break
        if l.lower().startswith(b'content-length:'): n = int(l.split(b':')[1])
    f.read(n)
    print(st, '->', line, flush=True)
