#!/usr/bin/env python3
"""Two origins for test_reload_dial.sh (runs inside the lab's inet namespace).

  reload_origin.py LOG FIRST_ADDR:PORT SECOND_ADDR:PORT

FIRST answers one request on one connection (keep-alive), stops listening,
then reads the next request on that connection, records it and closes
without an answer: the proxy's kept upstream dies under a request, and a
reconnect to FIRST is refused. SECOND answers every request with "second".
Every accept and request head is appended to LOG as a JSON line.
"""
import json, socket, sys, threading, time

log_lock = threading.Lock()


def record(path, **ev):
    ev["t"] = time.time()
    with log_lock, open(path, "a") as f:
        f.write(json.dumps(ev) + "\n")


def listen(spec):
    addr, port = spec.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((addr, int(port)))
    s.listen(16)
    return s


def read_head(c):
    buf = b""
    c.settimeout(30)
    while b"\r\n\r\n" not in buf and len(buf) < 65536:
        d = c.recv(4096)
        if not d:
            return None
        buf += d
    return buf.split(b"\r\n")[0].decode("latin-1")


def first(path, ls, name):
    c, _ = ls.accept()
    record(path, ev="accept", origin=name)
    line = read_head(c)
    record(path, ev="req", origin=name, line=line)
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst")
    ls.close()
    line = read_head(c)
    record(path, ev="req-dropped", origin=name, line=line)
    c.close()


def second_conn(path, c, name):
    while True:
        line = read_head(c)
        if line is None:
            break
        record(path, ev="req", origin=name, line=line)
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
    c.close()


def second(path, ls, name):
    while True:
        c, _ = ls.accept()
        record(path, ev="accept", origin=name)
        threading.Thread(target=second_conn, args=(path, c, name), daemon=True).start()


def main():
    path = sys.argv[1]
    a, b = listen(sys.argv[2]), listen(sys.argv[3])
    threading.Thread(target=first, args=(path, a, "first"), daemon=True).start()
    threading.Thread(target=second, args=(path, b, "second"), daemon=True).start()
    time.sleep(120)


if __name__ == "__main__":
    main()
