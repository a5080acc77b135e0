#!/usr/bin/env python3
"""Open N connections to the proxy, send one head on each, and hold them.

  hold.py [--addr 127.0.0.1] [--port 3128] [--src ADDR] [--until FILE]
          [--max S] [--stamp KEYFILE SRC NET BOOT SEQ0 AS] [--idle] N DATA

DATA uses Python escapes. With --stamp, connection i's head gets a
Sluice-Stamp header (stamp.py, sequence SEQ0+i, as=AS unless AS is "-")
after its request line. For each connection one line "i STATUS SECONDS"
(STATUS is the response's status, "none" when the proxy sent nothing
within 3 s but kept the connection, "closed" when it closed). Then prints
"holding", keeps every connection open until FILE exists or --max seconds
(default 30) pass, and closes them. Before it closes them it prints
"open K closed M": how many the other end still keeps open, and how many it
closed (end of stream or reset; what it had sent is read away first).
--idle: send nothing on them, wait for nothing (each line "i open").
"""
import codecs, os, socket, subprocess, sys, time


def still_open(s):
    """Whether the other end keeps s open (its unread bytes are read away)."""
    s.setblocking(False)
    try:
        while True:
            if not s.recv(65536):
                return False
    except BlockingIOError:
        return True
    except OSError:
        return False

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    args = sys.argv[1:]
    addr, port, src, until, mx, stamp, idle = "127.0.0.1", 3128, None, None, 30.0, None, False
    while args and args[0].startswith("--"):
        a = args.pop(0)
        if a == "--addr":
            addr = args.pop(0)
        elif a == "--port":
            port = int(args.pop(0))
        elif a == "--src":
            src = args.pop(0)
        elif a == "--until":
            until = args.pop(0)
        elif a == "--max":
            mx = float(args.pop(0))
        elif a == "--idle":
            idle = True
        elif a == "--stamp":
            stamp, args = args[:6], args[6:]
    n, data = int(args[0]), codecs.decode(args[1], "unicode_escape").encode("latin-1")
    conns = []
    for i in range(n):
        head = data
        if stamp:
            key, ssrc, net, boot, seq0, who = stamp
            cmd = [sys.executable, os.path.join(HERE, "stamp.py"), key, ssrc, net, boot,
                   str(int(seq0) + i)]
            if who != "-":
                cmd += ["--as", who]
            v = subprocess.run(cmd, capture_output=True, check=True).stdout.strip()
            line, _, rest = head.partition(b"\r\n")
            head = line + b"\r\nSluice-Stamp: " + v + b"\r\n" + rest
        t0 = time.time()
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if src:
            s.bind((src, 0))
        s.settimeout(3)
        s.connect((addr, port))
        if idle:
            print(i, "open", flush=True)
            conns.append(s)
            continue
        s.sendall(head)
        buf, status = b"", "none"
        try:
            while b"\r\n" not in buf:
                d = s.recv(4096)
                if not d:
                    status = "closed"
                    break
                buf += d
        except socket.timeout:
            pass
        if b"\r\n" in buf:
            status = buf.split(b" ", 2)[1].decode()
        print(i, status, "%.3f" % (time.time() - t0), flush=True)
        conns.append(s)
    print("holding", flush=True)
    end = time.time() + mx
    while time.time() < end and not (until and os.path.exists(until)):
        time.sleep(0.05)
    n_open = sum(1 for s in conns if still_open(s))
    print("open", n_open, "closed", len(conns) - n_open, flush=True)
    for s in conns:
        s.close()


if __name__ == "__main__":
    main()
