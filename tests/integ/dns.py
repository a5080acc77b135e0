#!/usr/bin/env python3
"""A tiny authoritative DNS server for the lab (UDP only).

  dns.py --log FILE ADDR PORT

Answers from the ZONE below; every query is appended to FILE as JSON
({"name":..., "type":...}). rebind.test answers 203.0.113.10 to its first A
query and 10.20.0.5 (TTL 0) to every later one. many.test has 10 A records
(203.0.113.30-39, more than the proxy dials); manyevil.test has the same
count with one of them 10.20.0.5.
"""
import json, socket, struct, sys, threading, time

ZONE = {
    ("dnsgood.test", 1): ["203.0.113.10"],
    ("dnsevil.test", 1): ["10.20.0.5"],
    ("dnsmixed.test", 1): ["203.0.113.10", "10.20.0.5"],
    ("dnsmeta.test", 1): ["169.254.169.254"],
    ("dnsv6evil.test", 28): ["fd00::5"],
    ("dnsv6good.test", 28): ["2001:db8::10"],
    ("dnsmixed6.test", 1): ["203.0.113.10"],
    ("dnsmixed6.test", 28): ["fd00::5"],
    ("dnsmapped.test", 28): ["::ffff:10.20.0.5"],
    ("many.test", 1): ["203.0.113.%d" % i for i in range(30, 40)],
    ("manyevil.test", 1): ["203.0.113.%d" % i for i in range(30, 39)] + ["10.20.0.5"],
}
SERVFAIL = {"servfail.test"}
REBIND = {"n": 0}


def rdata(t, a):
    if t == 1:
        return socket.inet_pton(socket.AF_INET, a)
    return socket.inet_pton(socket.AF_INET6, a)


def main():
    log, addr, port = sys.argv[2], sys.argv[3], int(sys.argv[4])
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((addr, port))
    print("ready", flush=True)
    end = time.time() + 3600
    s.settimeout(5)
    while time.time() < end:
        try:
            q, peer = s.recvfrom(4096)
        except socket.timeout:
            continue
        if len(q) < 12:
            continue
        qid, flags, qd = struct.unpack("!HHH", q[:6])
        p, labels = 12, []
        while p < len(q) and q[p] != 0:
            n = q[p]
            labels.append(q[p + 1:p + 1 + n].decode("latin-1"))
            p += 1 + n
        p += 1
        qtype, qclass = struct.unpack("!HH", q[p:p + 4])
        question = q[12:p + 4]
        name = ".".join(labels).lower()
        with open(log, "a") as f:
            f.write(json.dumps({"name": name, "type": qtype, "t": time.time()}) + "\n")
        rcode, answers, ttl = 0, [], 60
        if name in SERVFAIL:
            rcode = 2
        elif name == "rebind.test":
            if qtype == 1:
                REBIND["n"] += 1
                answers = ["203.0.113.10"] if REBIND["n"] == 1 else ["10.20.0.5"]
            ttl = 0
        elif (name, qtype) in ZONE:
            answers = ZONE[(name, qtype)]
        elif not any(k[0] == name for k in ZONE):
            rcode = 3  # NXDOMAIN
        out = struct.pack("!HHHHHH", qid, 0x8400 | 0x0100 | (flags & 0x0100) | rcode, 1,
                          len(answers), 0, 0) + question
        for a in answers:
            rd = rdata(qtype, a)
            out += struct.pack("!HHHIH", 0xC00C, qtype, 1, ttl, len(rd)) + rd
        s.sendto(out, peer)


if __name__ == "__main__":
    main()
