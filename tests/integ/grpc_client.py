#!/usr/bin/python3
"""A gRPC client for tests/integ/test_h2.sh: through sluice-proxy when
https_proxy is set (gRPC's own CONNECT), trusting
GRPC_DEFAULT_SSL_ROOTS_FILE_PATH.

grpc_client.py HOST:PORT echo TEXT | echobig BYTES | reflect | sleep MS | count N MS | fail

Prints one line: echo's answer, count's messages joined by ",", or
"STATUS details" for an error.
"""
import sys

import grpc

target, mode = sys.argv[1], sys.argv[2]
ident = lambda b: b  # noqa: E731
ch = grpc.secure_channel(target, grpc.ssl_channel_credentials())
try:
    if mode == "echo":
        f = ch.unary_unary("/t.T/Echo", request_serializer=ident, response_deserializer=ident)
        print(f(sys.argv[3].encode(), timeout=10).decode())
    elif mode == "sleep":
        f = ch.unary_unary("/t.T/Sleep", request_serializer=ident, response_deserializer=ident)
        print(f(sys.argv[3].encode(), timeout=20).decode())
    elif mode in ("echobig", "reflect"):
        name = "/t.T/Echo" if mode == "echobig" else "/t.T/Reflect"
        f = ch.unary_unary(name, request_serializer=ident, response_deserializer=ident)
        arg = b"x" * int(sys.argv[3]) if mode == "echobig" else b""
        print(f(arg, timeout=10).decode())
    elif mode == "count":
        f = ch.unary_stream("/t.T/Count", request_serializer=ident, response_deserializer=ident)
        print(",".join(m.decode() for m in f(f"{sys.argv[3]} {sys.argv[4]}".encode(), timeout=20)))
    elif mode == "fail":
        f = ch.unary_unary("/t.T/Fail", request_serializer=ident, response_deserializer=ident)
        f(b"x", timeout=10)
        print("OK")
except grpc.RpcError as e:
    print(e.code().name, e.details())
