#!/usr/bin/env python3
"""A TLS client that writes its ClientHello the way a test asks, through a
CONNECT tunnel (for tests/integ/test_sni.sh).

  sni.py --proxy ADDR:PORT --connect HOST:PORT [--sni NAME | --no-sni]
         [--ca FILE] [--split whole|3|records] [--pause S]
         [--send hello|garbage|nothing] [--path /P] [--timeout S]
         [--retry-sni NAME] [--pipeline]

The ClientHello is real: Python's ssl module writes it into a MemoryBIO, and
this script puts its bytes on the socket itself:
  whole    one write
  3        a 3-byte write, --pause seconds, then the rest
  records  the handshake message cut in two TLS records (a record header
           each), written at once, or with --pause between them when given
Then the handshake is driven to its end (verifying the server against --ca
for the name sent) and GET --path is sent inside. --send garbage writes a
plain HTTP request instead of a ClientHello; --send nothing writes nothing
and waits to be closed. --pipeline writes the ClientHello in the same
write as the CONNECT, before the 200 is read. --retry-sni NAME: once the server answers the
ClientHello (a HelloRetryRequest, from a server that wants another key
share), a second ClientHello naming NAME is sent instead of the real one,
after a change_cipher_spec record as real clients send it; what comes back
is reported as "alert N" (a TLS alert's description number), "closed",
"reset" or "open".

Prints one line: "served STATUS-LINE", "alert REASON", "closed", "reset",
"open" (still open at --timeout), or "connect STATUS" when the CONNECT
itself was not answered 200; then " elapsed=S".
"""
import socket
import ssl
import sys
import time


def arg_parse(argv):
    o = {"pipeline": False, "retry_sni": None, "sni": None, "no_sni": False, "ca": None, "split": "whole", "pause": None,
         "send": "hello", "path": "/", "timeout": 10.0}
    a = list(argv)
    while a:
        k = a.pop(0)
        if k == "--no-sni":
            o["no_sni"] = True
        elif k == "--pipeline":
            o["pipeline"] = True
        elif k in ("--proxy", "--connect", "--sni", "--ca", "--split", "--send", "--path",
                   "--retry-sni"):
            o[k[2:].replace("-", "_")] = a.pop(0)
        elif k in ("--pause", "--timeout"):
            o[k[2:]] = float(a.pop(0))
        else:
            sys.exit("sni.py: unknown argument %s" % k)
    return o


def connect(o, early=b""):
    ph, _, pp = o["proxy"].rpartition(":")
    s = socket.create_connection((ph, int(pp)), timeout=o["timeout"])
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t = o["connect"]
    s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (t, t)).encode() + early)
    head = b""
    while b"\r\n\r\n" not in head and len(head) < 8192:
        d = s.recv(1)  # byte by byte: nothing past the 200 is taken
        if not d:
            break
        head += d
    status = head.split(b"\r\n", 1)[0].decode("latin-1")
    return s, status


def hello_bytes(o, name=False):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if o["ca"]:
        ctx.load_verify_locations(o["ca"])
    if name is False:
        name = None if o["no_sni"] else (o["sni"] or o["connect"].rpartition(":")[0])
    if name is None:
        ctx.check_hostname = False
    inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inb, outb, server_hostname=name)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return obj, inb, outb, outb.read()


def write_hello(s, o, hello):
    pause = o["pause"]
    if o["split"] == "3":
        s.sendall(hello[:3])
        time.sleep(pause if pause is not None else 0.3)
        s.sendall(hello[3:])
        return
    if o["split"] == "records":
        assert hello[0] == 22, "the ClientHello is one handshake record"
        n = int.from_bytes(hello[3:5], "big")
        body, rest = hello[5:5 + n], hello[5 + n:]
        k = len(body) // 2
        r1 = hello[:3] + k.to_bytes(2, "big") + body[:k]
        r2 = hello[:3] + (len(body) - k).to_bytes(2, "big") + body[k:] + rest
        if pause is None:
            s.sendall(r1 + r2)
        else:
            s.sendall(r1)
            time.sleep(pause)
            s.sendall(r2)
        return
    s.sendall(hello)


def recv(s):
    try:
        return s.recv(65536)
    except ConnectionResetError:
        return None


def read_record(s, deadline):
    """One TLS record off the socket: (type, body), or a string saying why not."""
    got = b""
    while len(got) < 5 or len(got) < 5 + int.from_bytes(got[3:5], "big"):
        if time.time() >= deadline:
            return "open"
        s.settimeout(max(0.05, deadline - time.time()))
        try:
            d = recv(s)
        except socket.timeout:
            return "open"
        if d is None:
            return "reset"
        if not d:
            return "closed"
        got += d
    return got[0], got[5:5 + int.from_bytes(got[3:5], "big")]


def retry_attack(s, o, deadline):
    _, _, _, hello = hello_bytes(o)
    s.sendall(hello)
    r = read_record(s, deadline)
    if isinstance(r, str):
        return "no answer to the first ClientHello: " + r
    _, _, _, second = hello_bytes(o, o["retry_sni"])
    s.sendall(bytes([20, 3, 3, 0, 1, 1]) + second)
    r = read_record(s, deadline)
    if isinstance(r, str):
        return r
    if r[0] == 21:
        return "alert %d" % r[1][1]
    return "answered record type %d" % r[0]


def run(o):
    t0 = time.time()
    if o["pipeline"]:
        obj, inb, outb, hello = hello_bytes(o)
        s, status = connect(o, hello)
    else:
        s, status = connect(o)
    if " 200 " not in status + " ":
        return "connect %s" % (status.split(" ")[1] if " " in status else "none")
    deadline = t0 + o["timeout"]
    if o["send"] == "nothing" or o["send"] == "garbage":
        if o["send"] == "garbage":
            s.sendall(b"GET / HTTP/1.1\r\nHost: pass.test\r\n\r\n")
        while time.time() < deadline:
            s.settimeout(max(0.05, deadline - time.time()))
            try:
                d = recv(s)
            except socket.timeout:
                return "open"
            if d is None:
                return "reset"
            if not d:
                return "closed"
        return "open"
    if o["retry_sni"]:
        return retry_attack(s, o, deadline)
    if not o["pipeline"]:
        obj, inb, outb, hello = hello_bytes(o)
        write_hello(s, o, hello)
    done = False
    while not done:
        if time.time() >= deadline:
            return "open"
        s.settimeout(max(0.05, deadline - time.time()))
        try:
            d = recv(s)
        except socket.timeout:
            return "open"
        if d is None:
            return "reset"
        if not d:
            return "closed"
        inb.write(d)
        try:
            obj.do_handshake()
            done = True
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError as e:
            return "alert %s" % (e.reason or e)
        out = outb.read()
        if out:
            s.sendall(out)
    obj.write(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n"
               % (o["path"], o["connect"])).encode())
    s.sendall(outb.read())
    resp = b""
    while b"\r\n" not in resp and time.time() < deadline:
        try:
            resp += obj.read(4096)
            continue
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError as e:
            return "alert %s" % (e.reason or e)
        d = recv(s)
        if not d:
            break
        inb.write(d)
    return "served %s" % resp.split(b"\r\n", 1)[0].decode("latin-1")


def main():
    o = arg_parse(sys.argv[1:])
    t0 = time.time()
    try:
        r = run(o)
    except socket.timeout:
        r = "open"
    except (BrokenPipeError, ConnectionResetError):
        r = "reset"
    print("%s elapsed=%.3f" % (r, time.time() - t0))


if __name__ == "__main__":
    main()
