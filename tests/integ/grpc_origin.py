#!/usr/bin/python3
"""A gRPC server over TLS with generic handlers (no generated stubs), for
tests/integ/test_h2.sh. Messages are raw bytes.

grpc_origin.py CERT KEY ADDR:PORT

  /t.T/Echo   unary: answers b"echo:" + the request + b" key=" + "ok" when
              the x-api-key metadata it got is $ORIGIN_TOKEN, else what it
              got ("-" without one)
  /t.T/Reflect unary: answers b"key=" + the x-api-key it got, as it is
  /t.T/Count  server streaming: the request is b"N MS": N messages
              b"n=I", one every MS milliseconds
  /t.T/Fail   unary: fails with NOT_FOUND "no such thing" (in trailers)
  /t.T/Sleep  unary: the request is b"MS": answers b"slept" after MS
              milliseconds (its response head goes with the answer)
"""
import os
import sys
import time
from concurrent import futures

import grpc


def md(ctx, name):
    for k, v in ctx.invocation_metadata():
        if k == name:
            return v
    return "-"


def echo(req, ctx):
    key = md(ctx, "x-api-key")
    return b"echo:" + req[:64] + b" key=" + (b"ok" if key == os.environ.get("ORIGIN_TOKEN") else key.encode())


def reflect(req, ctx):
    return b"key=" + md(ctx, "x-api-key").encode()


def count(req, ctx):
    n, ms = (int(x) for x in req.split())
    for i in range(n):
        if not ctx.is_active():
            return
        yield b"n=%d" % i
        time.sleep(ms / 1000)


def sleep(req, ctx):
    time.sleep(int(req) / 1000)
    return b"slept"


def fail(req, ctx):
    ctx.abort(grpc.StatusCode.NOT_FOUND, "no such thing")


ident = lambda b: b  # noqa: E731
handlers = grpc.method_handlers_generic_handler("t.T", {
    "Echo": grpc.unary_unary_rpc_method_handler(echo, ident, ident),
    "Count": grpc.unary_stream_rpc_method_handler(count, ident, ident),
    "Fail": grpc.unary_unary_rpc_method_handler(fail, ident, ident),
    "Reflect": grpc.unary_unary_rpc_method_handler(reflect, ident, ident),
    "Sleep": grpc.unary_unary_rpc_method_handler(sleep, ident, ident),
})
cert, key, addr = sys.argv[1:4]
server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
server.add_generic_rpc_handlers((handlers,))
creds = grpc.ssl_server_credentials([(open(key, "rb").read(), open(cert, "rb").read())])
server.add_secure_port(addr, creds)
server.start()
server.wait_for_termination()
