#!/usr/bin/env python3
"""An upstream that misbehaves on purpose, for sluice-dns's tests (UDP and TCP).

  dns_evil.py --log FILE ADDR PORT

Every query is appended to FILE as JSON: the name exactly as it came (case
kept), its type, the OPT record's data length (-1 without one: options a
client sent would show here) and its UDP size. Answers by name:
  garbage.test   its id, then bytes that are no DNS message
  wrongid.test   a well-formed answer under another id (and never the right one)
  otherq.test    an answer to another question (other.test)
  servfail.test  SERVFAIL
  nx.test        NXDOMAIN with an SOA whose MINIMUM is 30
  short.test     an answer cut inside its record
  slow*          answered after 0.3 s (coalescing: many askers, one query)
  hang*          never answered
  tc*            over UDP an empty answer with TC; over TCP A 203.0.113.10, but
                 each TCP connection answers only its first two queries, then
                 stays open and silent
  huge*          over UDP TC; over TCP eight CNAMEs of 250-byte names, then 120
                 A records: about 4 KB compressed, 35 KB written out
  anything else  A 203.0.113.10, TTL 300
TCP queries are logged too, with "tcp": true and "conn", the connection's number.
"""
import json, socket, struct, sys, threading, time


def parse(q):
    qid, flags, qd, an, ns, ar = struct.unpack("!HHHHHH", q[:12])
    p, labels = 12, []
    while q[p] != 0:
        labels.append(q[p + 1:p + 1 + q[p]].decode("latin-1"))
        p += 1 + q[p]
    p += 1
    qtype, qclass = struct.unpack("!HH", q[p:p + 4])
    question = q[12:p + 4]
    p += 4
    optlen, udp = -1, None
    if ar == 1 and q[p] == 0:
        t, udp, ttl, optlen = struct.unpack("!HHIH", q[p + 1:p + 11])
    return qid, flags, ".".join(labels), qtype, question, optlen, udp


def answer(qid, flags, name, qtype, question):
    hdr = lambda rcode, an, ns, i=qid: struct.pack("!HHHHHH", i, 0x8180 | rcode, 1, an, ns, 0)
    a = struct.pack("!HHHIH", 0xC00C, 1, 1, 300, 4) + socket.inet_aton("203.0.113.10")
    low = name.lower()
    if low == "garbage.test":
        return struct.pack("!H", qid) + b"\x81\x80\x00\x01garbage\xff\xffgarbage"
    if low == "wrongid.test":
        return hdr(0, 1, 0, (qid + 1) & 0xFFFF) + question + a
    if low == "otherq.test":
        other = b"\x05other\x04test\x00" + struct.pack("!HH", qtype, 1)
        return hdr(0, 1, 0) + other + a
    if low == "servfail.test":
        return hdr(2, 0, 0) + question
    if low == "nx.test":
        soa = (b"\xc0\x0c" + struct.pack("!HHIH", 6, 1, 3600, 22) + b"\x00\x00" +
               struct.pack("!IIIII", 1, 2, 3, 4, 30))
        return hdr(3, 0, 1) + question + soa
    if low == "short.test":
        return hdr(0, 1, 0) + question + a[:8]
    if qtype != 1:
        return hdr(0, 0, 0) + question
    return hdr(0, 1, 0) + question + a


def wname(n):
    return b"".join(bytes([len(l)]) + l.encode() for l in n.split(".")) + b"\x00"


def huge(qid, question):
    body, owner, pos = b"", 0xC00C, 12 + len(question)
    for i in range(8):
        target = ".".join([("x%d" % i) + "a" * 58, "b" * 62, "c" * 62, "d" * 60])
        rd = wname(target)
        body += struct.pack("!HHHIH", owner, 5, 1, 300, len(rd)) + rd
        owner = 0xC000 | (pos + 12)  # the target just written, compressed to
        pos += 12 + len(rd)
    for i in range(120):
        body += struct.pack("!HHHIH", owner, 1, 1, 300, 4) + bytes([203, 0, 113, i + 1])
    return struct.pack("!HHHHHH", qid, 0x8180, 1, 128, 0, 0) + question + body


LOCK = threading.Lock()


def record(log, entry):
    with LOCK, open(log, "a") as f:
        f.write(json.dumps(entry) + "\n")


def serve_tcp(conn, n, log):
    answered, buf = 0, b""
    conn.settimeout(60)
    try:
        while True:
            d = conn.recv(65536)
            if not d:
                return
            buf += d
            while len(buf) >= 2 and len(buf) >= 2 + struct.unpack("!H", buf[:2])[0]:
                m, buf = buf[2:2 + struct.unpack("!H", buf[:2])[0]], buf[2 + struct.unpack("!H", buf[:2])[0]:]
                qid, flags, name, qtype, question, optlen, udp = parse(m)
                record(log, {"name": name, "type": qtype, "tcp": True, "conn": n, "t": time.time()})
                low = name.lower()
                if low.startswith("hang") or (low.startswith("tc") and answered >= 2):
                    continue
                out = huge(qid, question) if low.startswith("huge") else answer(qid, flags, name, qtype, question)
                answered += 1
                conn.sendall(struct.pack("!H", len(out)) + out)
    except (OSError, IndexError, struct.error):
        return
    finally:
        conn.close()


def tcp_main(log, addr, port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(64)
    n = 0
    while True:
        c, _ = ls.accept()
        n += 1
        threading.Thread(target=serve_tcp, args=(c, n, log), daemon=True).start()


def main():
    log, addr, port = sys.argv[2], sys.argv[3], int(sys.argv[4])
    threading.Thread(target=tcp_main, args=(log, addr, port), daemon=True).start()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    s.settimeout(5)
    end = time.time() + 3600
    while time.time() < end:
        try:
            q, peer = s.recvfrom(4096)
        except socket.timeout:
            continue
        try:
            qid, flags, name, qtype, question, optlen, udp = parse(q)
        except (IndexError, struct.error):
            continue
        record(log, {"name": name, "type": qtype, "optlen": optlen, "udp": udp, "t": time.time()})
        low = name.lower()
        if low.startswith("hang"):
            continue
        if low.startswith("tc") or low.startswith("huge"):
            s.sendto(struct.pack("!HHHHHH", qid, 0x8380, 1, 0, 0, 0) + question, peer)
            continue
        out = answer(qid, flags, name, qtype, question)
        if name.lower().startswith("slow"):
            threading.Timer(0.3, s.sendto, (out, peer)).start()
        else:
            s.sendto(out, peer)


if __name__ == "__main__":
    main()
