#!/usr/bin/env python3
"""DNS clients for test_dns_asker.sh, against 127.0.0.1:53 of the namespace they run in.

  dns_asker.py hold N NAME SECONDS OUT   N TCP connections, each answered one query for NAME;
                                         then one more asks: "N answered, extra reset|answered"
                                         written to OUT; all held open SECONDS, then closed
  dns_asker.py tagged NAME NET KEYFILE MODE
                                         one UDP query for NAME carrying an asker tag (the
                                         EDNS option of lib/dnstag.h) naming NET; MODE: good
                                         (signed with KEYFILE's current key), badmac (random
                                         MAC), copied (signed for another question): prints
                                         the answer's rcode name, or "timeout"
  dns_asker.py tcp NAME                  one TCP query: the rcode name, or "reset"/"closed"
  dns_asker.py tcp2 NAME1 NAME2 NET KEYFILE
                                         one TCP connection: NAME1 plainly, then NAME2 with
                                         a tag naming NET signed with KEYFILE's current key:
                                         both rcode names
  dns_asker.py garbage                   a UDP datagram with a query's header and no
                                         question: the rcode name of the answer, or "timeout"
  dns_asker.py tcpgarbage                the same as a TCP connection's first message: the
                                         rcode name, then "fin" or "reset" or "open"
  dns_asker.py big udp|tcp SIZE NAME     one query for NAME padded (EDNS padding) to SIZE
                                         bytes, over UDP or as a TCP connection's first
                                         message: the rcode name, or "timeout"/"reset"/"closed"
  dns_asker.py runs KEYFILE N            sluice-dns outliving many runs (wildcard budget 3,
                                         names n1..n4.wild.test): run "sluice-busy" spends its
                                         budget; N runs "sluice-0000".. ask n1 once each (busy
                                         asks n1 again every 100 of them); a fresh run asks
                                         n1; busy asks n4 again. One "what: rcodes" line each

The tag is written here from its documented format (lib/dnstag.h), not with
sluice's code, so a format change the two sides disagree on shows.
"""
import hashlib, hmac, os, socket, struct, sys, time

ADDR = ("127.0.0.1", 53)
TAG_OPTION = 65312
RCODES = {0: "NOERROR", 1: "FORMERR", 2: "SERVFAIL", 3: "NXDOMAIN", 4: "NOTIMP", 5: "REFUSED"}


def question(name):
    return b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)


def query(qid, name, opt=None):
    q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 1 if opt is not None else 0) + question(name)
    if opt is not None:
        q += b"\0" + struct.pack(">HHIH", 41, 1232, 0, len(opt)) + opt
    return q


def current_key(path):
    for line in open(path):
        f = line.split()
        if not f or f[0].startswith("#"):
            continue
        if len(f) == 2:
            return int(f[0]), bytes.fromhex(f[1])
    raise SystemExit("no current key in " + path)


def tag(kid, key, net, qid, qname, src="127.0.0.1", when=None):
    data = struct.pack(">BBIQ", 1, 0, kid, int(time.time() if when is None else when))
    data += bytes([4]) + socket.inet_aton(src) + bytes([len(net)]) + net.encode()
    mac = hmac.new(key, b"sluice-dns-tag-1" + data + struct.pack(">H", qid) + question(qname),
                   hashlib.sha256).digest()
    body = data + mac
    return struct.pack(">HH", TAG_OPTION, len(body)) + body


def rcode(m):
    return RCODES.get(struct.unpack(">H", m[2:4])[0] & 0xF, "?")


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b


def tcp_ask(s, qid, name, opt=None):
    q = query(qid, name, opt)
    s.sendall(struct.pack(">H", len(q)) + q)
    return recv_exact(s, struct.unpack(">H", recv_exact(s, 2))[0])


def padded(qid, name, size):
    """A query for name with an EDNS padding option making it size bytes."""
    pad = size - 12 - len(question(name)) - 11 - 4
    return query(qid, name, struct.pack(">HH", 12, pad) + b"\0" * pad)


def udp_ask(q, timeout=4):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(q, ADDR)
        return rcode(s.recv(65535))
    except socket.timeout:
        return "timeout"
    finally:
        s.close()


def one_tcp(name, qid):
    try:
        s = socket.create_connection(ADDR, timeout=4)
        return s, rcode(tcp_ask(s, qid, name))
    except (ConnectionResetError, BrokenPipeError):
        return None, "reset"
    except EOFError:
        return None, "closed"
    except socket.timeout:
        return None, "timeout"


def main():
    mode = sys.argv[1]
    if mode == "hold":
        n, name, secs, out = int(sys.argv[2]), sys.argv[3], float(sys.argv[4]), sys.argv[5]
        held, good = [], 0
        for i in range(n):
            s, r = one_tcp(name, i + 1)
            if s is not None:
                held.append(s)
            good += r == "NOERROR"
        _, extra = one_tcp(name, n + 1)
        with open(out + ".tmp", "w") as f:
            f.write("%d answered, extra %s\n" % (good, "answered" if extra == "NOERROR" else extra))
        os.rename(out + ".tmp", out)
        time.sleep(secs)
        for s in held:
            s.close()
    elif mode == "tagged":
        name, net, keyfile, how = sys.argv[2:6]
        kid, key = current_key(keyfile)
        qid = int.from_bytes(os.urandom(2), "big")
        if how == "good":
            opt = tag(kid, key, net, qid, name)
        elif how == "copied":
            opt = tag(kid, key, net, qid, "other." + name)
        else:
            opt = tag(kid, key, net, qid, name)
            opt = opt[:-32] + os.urandom(32)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(4)
        s.sendto(query(qid, name, opt), ADDR)
        try:
            print(rcode(s.recv(65535)))
        except socket.timeout:
            print("timeout")
    elif mode == "tcp":
        _, r = one_tcp(sys.argv[2], 7)
        print(r)
    elif mode == "tcp2":
        n1, n2, net, keyfile = sys.argv[2:6]
        kid, key = current_key(keyfile)
        s, r1 = one_tcp(n1, 8)
        r2 = "none"
        if s is not None:
            try:
                r2 = rcode(tcp_ask(s, 9, n2, tag(kid, key, net, 9, n2)))
            except (ConnectionResetError, BrokenPipeError):
                r2 = "reset"
            except EOFError:
                r2 = "closed"
        print(r1, r2)
    elif mode == "garbage":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(4)
        s.sendto(struct.pack(">HHHHHH", 4242, 0x0100, 2, 0, 0, 0), ADDR)
        try:
            print(rcode(s.recv(65535)))
        except socket.timeout:
            print("timeout")
    elif mode == "tcpgarbage":
        s = socket.create_connection(ADDR, timeout=4)
        m = struct.pack(">HHHHHH", 4242, 0x0100, 2, 0, 0, 0)
        s.sendall(struct.pack(">H", len(m)) + m)
        try:
            r = rcode(recv_exact(s, struct.unpack(">H", recv_exact(s, 2))[0]))
            end = "fin" if s.recv(1) == b"" else "more"
        except (ConnectionResetError, BrokenPipeError):
            r, end = "none", "reset"
        except EOFError:
            r, end = "none", "fin"
        except socket.timeout:
            r, end = "none", "open"
        print(r, end)
    elif mode == "big":
        how, size, name = sys.argv[2], int(sys.argv[3]), sys.argv[4]
        q = padded(0x4242, name, size)
        if how == "udp":
            print(udp_ask(q))
        else:
            try:
                s = socket.create_connection(ADDR, timeout=4)
                s.sendall(struct.pack(">H", len(q)) + q)
                print(rcode(recv_exact(s, struct.unpack(">H", recv_exact(s, 2))[0])))
            except (ConnectionResetError, BrokenPipeError):
                print("reset")
            except EOFError:
                print("closed")
            except socket.timeout:
                print("timeout")
    elif mode == "runs":
        kid, key = current_key(sys.argv[2])
        n = int(sys.argv[3])
        qid = [0]

        def ask(net, name):
            qid[0] = (qid[0] + 1) & 0xFFFF
            return udp_ask(query(qid[0], name, tag(kid, key, net, qid[0], name)))

        print("busy spends its budget:", *(ask("sluice-busy", "n%d.wild.test" % i) for i in (1, 2, 3, 4)))
        seen, again = {}, {}
        for i in range(n):
            r = ask("sluice-%04d" % i, "n1.wild.test")
            seen[r] = seen.get(r, 0) + 1
            if i % 100 == 99:
                r = ask("sluice-busy", "n1.wild.test")
                again[r] = again.get(r, 0) + 1
        print("others:", " ".join("%s=%d" % kv for kv in sorted(seen.items())))
        print("busy again:", " ".join("%s=%d" % kv for kv in sorted(again.items())))
        print("fresh:", ask("sluice-zzzz", "n1.wild.test"))
        print("busy over:", ask("sluice-busy", "n4.wild.test"))
    else:
        raise SystemExit("usage: dns_asker.py hold|tagged|tcp|tcp2|garbage|tcpgarbage|big|runs ...")


if __name__ == "__main__":
    main()
