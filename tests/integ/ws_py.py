"""ws_py.py PROXY_ADDR PROXY_PORT URL [CA_FILE] [MESSAGE...]

python3-websockets through sluice: the CONNECT is opened by hand (the
library speaks no HTTP proxy) and the socket passed as sock=; wss:// also
trusts CA_FILE (sluice's CA, for an intercepted CONNECT). Sends each
MESSAGE (default "hello") and prints what came back for each, one line
"ok A|B|...", or "refused STATUS" when the CONNECT or the handshake was not
accepted, or "error TEXT".
"""
import asyncio
import socket
import ssl
import sys
from urllib.parse import urlsplit

import websockets


async def main():
    addr, port, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    ca = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] != "-" else None
    messages = sys.argv[5:] or ["hello"]
    u = urlsplit(url)
    target = "%s:%d" % (u.hostname, u.port or (443 if u.scheme == "wss" else 80))
    s = socket.create_connection((addr, port), timeout=10)
    s.sendall(b"CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target.encode(), target.encode()))
    head = b""
    while b"\r\n\r\n" not in head:
        d = s.recv(1)
        if not d:
            print("error the proxy closed")
            return
        head += d
    status = head.split(b" ", 2)[1].decode()
    if status != "200":
        print("refused", status)
        return
    ctx = None
    if u.scheme == "wss":
        ctx = ssl.create_default_context(cafile=ca)
    s.setblocking(False)
    try:
        async with websockets.connect(url, sock=s, ssl=ctx, server_hostname=u.hostname if ctx else None,
                                      open_timeout=10) as ws:
            got = []
            for m in messages:
                await ws.send(m)
                got.append(await asyncio.wait_for(ws.recv(), 10))
            # a long answer is shown by its length and what it holds between the padding
            print("ok " + "|".join(g if len(g) < 200 else "%d:%s" % (len(g), g.strip("xy")) for g in got))
    except websockets.exceptions.InvalidStatusCode as e:
        print("refused", e.status_code)
    except Exception as e:  # noqa: BLE001 (the test reads the line)
        print("error", type(e).__name__, e)


asyncio.run(main())
