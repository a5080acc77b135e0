#!/usr/bin/env python3
"""TCP clients of sluice-dns (127.0.0.1:53) that the tests need, each printing what it saw.

  dns_tcp.py pipeline N NAME   N queries for NAME in one write: prints how many answers came
  dns_tcp.py halfclose N NAME  N queries, then shutdown(WR): "COUNT fin" or "COUNT reset"
  dns_tcp.py reset N NAME      N queries, then close with a reset (SO_LINGER 0)
  dns_tcp.py many N            N connections at once: "N-1 open, the last reset" or "all N open"
  dns_tcp.py drip SECONDS      one byte of a query every 2 s: "closed after S s" or "open after S s"
"""
import socket, struct, sys, time

ADDR = ("127.0.0.1", 53)


def query(i, name):
    q = struct.pack(">HHHHHH", i & 0xFFFF, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    return struct.pack(">H", len(q)) + q


def answers(s, want, timeout):
    buf, got, end = b"", 0, time.time() + timeout
    while got < want and time.time() < end:
        s.settimeout(max(0.1, end - time.time()))
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        if not d:
            break
        buf += d
        while len(buf) >= 2 and len(buf) >= 2 + struct.unpack(">H", buf[:2])[0]:
            buf = buf[2 + struct.unpack(">H", buf[:2])[0]:]
            got += 1
    return got


def main():
    mode = sys.argv[1]
    if mode in ("pipeline", "halfclose", "reset"):
        n, name = int(sys.argv[2]), sys.argv[3]
        s = socket.create_connection(ADDR, timeout=5)
        s.sendall(b"".join(query(i + 1, name) for i in range(n)))
        if mode == "pipeline":
            print(answers(s, n, 8))
        elif mode == "halfclose":
            s.shutdown(socket.SHUT_WR)
            got = answers(s, n, 8)
            try:
                end = "fin" if s.recv(1) == b"" else "more"
            except ConnectionResetError:
                end = "reset"
            except socket.timeout:
                end = "open"
            print(got, end)
        else:
            time.sleep(0.3)  # read by then: the queries wait, the reset comes after
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
    elif mode == "many":
        n, socks = int(sys.argv[2]), []
        for i in range(n):
            socks.append(socket.create_connection(ADDR, timeout=5))
        time.sleep(0.3)
        last = socks[-1]
        last.settimeout(2)
        try:
            last.sendall(query(1, "x.test"))
            gone = last.recv(1) == b""
        except (ConnectionResetError, BrokenPipeError):
            gone = True
        except socket.timeout:
            gone = False
        print("%d open, the last reset" % (n - 1) if gone else "all %d open" % n)
    elif mode == "drip":
        limit, q = float(sys.argv[2]), query(1, "drip.test")
        s = socket.create_connection(ADDR, timeout=5)
        t0, i = time.time(), 0
        while time.time() - t0 < limit:
            try:
                s.send(q[i % len(q):i % len(q) + 1])
                s.settimeout(2)
                if s.recv(1) == b"":
                    raise ConnectionResetError
            except socket.timeout:
                pass
            except (ConnectionResetError, BrokenPipeError):
                print("closed after %.1f s" % (time.time() - t0))
                return
            i += 1
        print("open after %.1f s" % (time.time() - t0))


if __name__ == "__main__":
    main()
