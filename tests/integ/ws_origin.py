"""ws_origin.py [--tls CERT KEY] [--mode echo|badaccept|badproto|eager] [--log FILE] ADDR:PORT

A WebSocket origin for the lab (Debian's python3-websockets, run by
/usr/bin/python3). echo: every message comes back as it was sent, but
"reflect" is answered with the handshake's Authorization value (an origin
that reflects a credential), "reflect-big" with it inside 140 KB, and
"reflect-split" with it split across two fragments of one message. badaccept: a raw server that answers the
handshake with a 101 whose Sec-WebSocket-Accept is wrong, then "hello".
badproto: a 101 with the right accept but a subprotocol nobody offered.
eager: a right 101 with a text frame "early" in the same write (a client
must get it, though it came with the head). badframe: a right 101, then a
masked frame (which no server may send). splitpong: a right 101, then the
handshake's Authorization value split between the two fragments of one text
message with an empty pong between them.
--log FILE appends one JSON line per handshake: path and headers; and in
echo mode one as the connection ends: {"ended": path, "got": the message
bytes it received}.
"""
import argparse
import asyncio
import base64
import hashlib
import json
import ssl
import sys

import websockets

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def log(path, line):
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(line) + "\n")


async def echo(ws, path=None):
    log(args.log, {"path": ws.path, "headers": dict(ws.request_headers.raw_items())})
    auth = ws.request_headers.get("Authorization", "")
    got = 0
    try:
        async for msg in ws:
            got += len(msg)
            await answer(ws, msg, auth)
    except websockets.ConnectionClosed:
        pass
    log(args.log, {"ended": ws.path, "got": got})


async def answer(ws, msg, auth):
    if msg == "reflect":
        await ws.send("token=" + auth)
    elif msg == "reflect-big":
        await ws.send("x" * 70000 + auth + "y" * 70000)
    elif msg == "reflect-split":
        half = len(auth) // 2
        await ws.send(iter(["first:" + auth[:half], auth[half:] + ":last"]))
    else:
        await ws.send(msg)


async def raw(reader, writer):
    head = b""
    while b"\r\n\r\n" not in head:
        d = await reader.read(4096)
        if not d:
            writer.close()
            return
        head += d
    lines = head.split(b"\r\n")
    hdrs = {}
    for l in lines[1:]:
        if b":" in l:
            k, v = l.split(b":", 1)
            hdrs[k.strip().lower()] = v.strip()
    log(args.log, {"path": lines[0].decode(), "headers": {k.decode(): v.decode() for k, v in hdrs.items()}})
    key = hdrs.get(b"sec-websocket-key", b"")
    good = base64.b64encode(hashlib.sha1(key + GUID).digest())
    accept = base64.b64encode(b"x" * 20) if args.mode == "badaccept" else good
    extra = b"Sec-WebSocket-Protocol: nobody-offered\r\n" if args.mode == "badproto" else b""
    auth = hdrs.get(b"authorization", b"")
    half = len(auth) // 2
    part1, part2 = b"first:" + auth[:half], auth[half:] + b":last"
    first = {
        "eager": b"\x81\x05early",
        "badframe": b"\x81\x85abcd" + bytes(c ^ ord("abcd"[i % 4]) for i, c in enumerate(b"hello")),
        # the credential split between two fragments with an empty pong between them
        "splitpong": bytes([0x01, len(part1)]) + part1 + b"\x8a\x00" + bytes([0x80, len(part2)]) + part2,
    }.get(args.mode, b"\x81\x05hello")
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Accept: " + accept + b"\r\n" + extra + b"\r\n" + first)
    await writer.drain()
    await asyncio.sleep(2)
    writer.close()


async def main():
    host, port = args.addr.rsplit(":", 1)
    ctx = None
    if args.tls:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.tls[0], args.tls[1])
    if args.mode == "echo":
        async with websockets.serve(echo, host, int(port), ssl=ctx):
            await asyncio.Future()
    else:
        server = await asyncio.start_server(raw, host, int(port), ssl=ctx)
        async with server:
            await server.serve_forever()


p = argparse.ArgumentParser()
p.add_argument("--tls", nargs=2)
p.add_argument("--mode", default="echo", choices=["echo", "badaccept", "badproto", "eager", "badframe", "splitpong"])
p.add_argument("--log")
p.add_argument("addr")
args = p.parse_args()
try:
    asyncio.run(main())
except KeyboardInterrupt:
    sys.exit(0)
