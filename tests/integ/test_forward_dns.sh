#!/bin/bash
# integ: alone (floods sluice-forward (1000+ flows, RSS bound); a 1 s timeout is checked within 1.8 s)
# sluice-forward --dns LISTEN=UPSTREAM: the DNS relay for a sandbox namespace
# with no route out. The forwarder runs in the lab's host namespace ($HNS)
# with --netns pointing at a namespace that has only loopback ($SNS); its UDP
# socket and TCP listener live inside $SNS, its upstream sockets leave from
# $HNS to Debian's unbound (tests/integ/unbound.sh, in inet at 192.0.2.2,
# reachable from $HNS only). The control: before the relay starts nothing
# answers on 127.0.0.1:53 in $SNS, and $SNS cannot reach unbound itself.
#
# Shown: dig over UDP and TCP, glibc's getaddrinfo through the namespace's
# resolv.conf (UDP, and TCP with use-vc), 50 concurrent clients each getting
# their own answer (UDP, and TCP with two queries pipelined on a
# connection), a wildcard LISTEN answering from the address asked for an
# address added after the start (IPv4 and dual-stack IPv6), a flood of 8000
# client ports kept to the flow cap (descriptors, RSS; TCP still served
# during it, UDP after), idle flows closed after 10 s, an upstream that
# refuses or is silent (the client times out or is reset promptly, the
# forwarder stays up), the namespace re-created (the relay follows, the old
# socket's flows closed at once), --dns in its own namespace without
# --netns (with --mark on its flows, and allowed 256 descriptors: 128 flows
# at most, TCP served through a flood), the capabilities each keeps, and the
# arguments: --dns alone takes no --key or --net.
source "$(dirname "$0")/lab.sh"
source "$(dirname "$0")/unbound.sh"
lab_up

FWD=$SLUICE_BUILD/sluice-forward
SNS=sld${HNS#slh}
SPATH=/run/netns/$SNS
# the sandbox's resolv.conf (ip netns exec binds it over /etc/resolv.conf), removed at the end
trap 'rc=$?; rm -rf "/etc/netns/$SNS"; (exit $rc); lab_teardown' EXIT
sbx() { ip netns exec "$SNS" "$@"; }
# sdig ARGS...: dig inside the sandbox, one try; prints its whole output
sdig() { sbx dig +time=2 +tries=1 "$@" 2>&1; true; }
fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
# flows: the relay's UDP sockets connected to unbound, in the host namespace
flows() { hx ss -Hun dst "$UNBOUND_ADDR:53" 2>/dev/null | wc -l; }
rss_kb() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null; }
# fwd_start ERR NETNS_PATH ADDR:PORT CMD...: start a forwarder (CMD execs it), stderr to ERR;
# its pid in FWD_PID once a TCP socket listens on ADDR:PORT in NETNS_PATH
fwd_start() {
	local err=$1 ns=$2 addr=$3
	shift 3
	"$@" >>"$err" 2>&1 &
	FWD_PID=$!
	LAB_PIDS+=("$FWD_PID")
	"$FWD" --wait "$ns" "$addr" --timeout 5 </dev/null ||
		lab_bail "sluice-forward listens on $addr in $ns" "$(cat "$err")"
}

data=('local-data: "fwd.test. 300 IN A 203.0.113.10"')
for i in $(seq 0 49); do
	data+=("local-data: \"c$i.fwd.test. 300 IN A 198.51.100.$i\"")
done
lab_unbound "${data[@]}"

ip netns add "$SNS" || lab_bail "ip netns add $SNS"
LAB_EXTRA_NS+=("$SNS")
ip -n "$SNS" link set lo up
mkdir -p "/etc/netns/$SNS"
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/$SNS/resolv.conf"

# the clients, in python: concurrent ones checking their own answers, and the flood
cat >"$LAB_DIR/clients.py" <<'PYEOF'
import os, random, select, socket, struct, sys, time

def query(qid, name):
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for l in name.split("."):
        q += bytes([len(l)]) + l.encode()
    return q + b"\0" + struct.pack("!HH", 1, 1)

def parse(m):
    """(id, question name, first A) of an answer."""
    qid, flags, qd, an = struct.unpack("!HHHH", m[:8])
    p, labels = 12, []
    while m[p]:
        labels.append(m[p + 1:p + 1 + m[p]].decode())
        p += 1 + m[p]
    p += 5
    addr = None
    for _ in range(an):
        if m[p] & 0xC0 == 0xC0:
            p += 2
        else:
            while m[p]:
                p += 1 + m[p]
            p += 1
        t, c, ttl, rdlen = struct.unpack("!HHIH", m[p:p + 10])
        p += 10
        if t == 1 and addr is None:
            addr = socket.inet_ntoa(m[p:p + 4])
        p += rdlen
    return qid, ".".join(labels), addr

def expect(i):
    return "c%d.fwd.test" % i, "198.51.100.%d" % i

def udp(port, n):
    """n sockets at once, each its own id and name; every answer checked against its asker"""
    ids = random.sample(range(1, 65536), n)
    socks = []
    for i in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.connect(("127.0.0.1", port))
        socks.append(s)
    for i, s in enumerate(socks):
        s.send(query(ids[i], expect(i)[0]))
    good = bad = 0
    left = dict((s.fileno(), i) for i, s in enumerate(socks))
    end = time.monotonic() + 5
    while left and time.monotonic() < end:
        r, _, _ = select.select([socks[i] for i in left.values()], [], [], 0.5)
        for s in r:
            i = left.pop(s.fileno())
            qid, name, addr = parse(s.recv(65535))
            if (qid, name, addr) == (ids[i],) + expect(i):
                good += 1
            else:
                bad += 1
    print("good=%d bad=%d missing=%d" % (good, bad, len(left)))

def recv_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b

def tcp(port, n):
    """n connections at once, two queries pipelined on each (its own name, then the next's)"""
    socks, asked = [], []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        socks.append(s)
    for i, s in enumerate(socks):
        pair = [(random.randrange(1, 65536), i), (random.randrange(1, 65536), (i + 1) % n)]
        asked.append(pair)
        out = b""
        for qid, j in pair:
            q = query(qid, expect(j)[0])
            out += struct.pack("!H", len(q)) + q
        s.sendall(out)
    good = bad = 0
    for i, s in enumerate(socks):
        try:
            for qid, j in asked[i]:
                m = recv_exact(s, struct.unpack("!H", recv_exact(s, 2))[0])
                if parse(m) == (qid,) + expect(j):
                    good += 1
                else:
                    bad += 1
        except (OSError, EOFError):
            bad += 1
        s.close()
    print("good=%d bad=%d" % (good, bad))

def flood(port, n, seconds):
    """n client ports held open, each sending a query, round after round for seconds"""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(n)]
    for s in socks:
        s.setblocking(False)
        s.bind(("127.0.0.1", 0))
    q = query(4242, "fwd.test")
    sent, end = 0, time.monotonic() + seconds
    ports = len(set(s.getsockname()[1] for s in socks))
    while True:
        for s in socks:
            try:
                s.sendto(q, ("127.0.0.1", port))
                sent += 1
            except OSError:
                pass
        if time.monotonic() >= end:
            break
    print("ports=%d sent=%d" % (ports, sent))

mode = sys.argv[1]
if mode == "udp":
    udp(int(sys.argv[2]), int(sys.argv[3]))
elif mode == "tcp":
    tcp(int(sys.argv[2]), int(sys.argv[3]))
else:
    flood(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
PYEOF
clients() { sbx "$PY" "$LAB_DIR/clients.py" "$@" 2>&1; }

# ------------------------------------------------------------------ controls
out=$(hx dig +time=2 +tries=1 @"$UNBOUND_ADDR" fwd.test A +short 2>&1)
expect_eq "control: unbound answers fwd.test from the host namespace" 203.0.113.10 "$out"
out=$(sdig @127.0.0.1 fwd.test A)
expect_re "control: without the relay nothing answers on 127.0.0.1:53 in the sandbox (UDP)" \
	"connection refused|timed out|no servers could be reached" "$out"
expect_not_re "... (no answer in it)" "203\.0\.113\.10" "$out"
out=$(sdig +tcp @127.0.0.1 fwd.test A)
expect_re "... nor over TCP" "connection refused|timed out|no servers could be reached" "$out"
out=$(sdig @"$UNBOUND_ADDR" fwd.test A)
expect_re "control: the sandbox cannot reach unbound itself (no route)" \
	"unreachable|timed out|no servers could be reached" "$out"
expect_eq "... (so unbound has seen fwd.test only from the host namespace's control)" 1 \
	"$(unbound_seen fwd.test A)"

# ------------------------------------------------------------------ arguments
"$FWD" --dns 127.0.0.1:5399=127.0.0.1:53 127.0.0.1:3129=127.0.0.1:3128 >/dev/null 2>&1
expect_eq "a stamping pair without --key and --net is a usage error (2), --dns or not" 2 "$?"
"$FWD" --dns 127.0.0.1:5399=unix:/tmp/x.sock >/dev/null 2>&1
expect_eq "--dns refuses a unix:PATH upstream (2)" 2 "$?"
"$FWD" --dns 127.0.0.1:5399 >/dev/null 2>&1
expect_eq "--dns refuses a LISTEN without =UPSTREAM (2)" 2 "$?"
many=()
for p in 1 2 3 4 5; do many+=(--dns "127.0.0.1:539$p=127.0.0.1:53"); done
err=$("$FWD" "${many[@]}" 2>&1)
expect_eq "five --dns are one too many (2)" "2" "$?"
expect_re "... saying how many may be given" "at most 4 --dns" "$err"
expect_re "the usage text documents --dns" "--dns LISTEN=UPSTREAM" "$("$FWD" --help 2>&1)"

# ------------------------------------------------------------------ the relay
# in the real mount namespace (not ip netns exec's private one), as it runs for real;
# --dns alone: no --key, no --net
fwd_start "$LAB_DIR/forward.err" "$SPATH" 127.0.0.1:53 \
	nsenter --net="/run/netns/$HNS" "$FWD" --netns "$SPATH" --trace \
	--dns "127.0.0.1:53=$UNBOUND_ADDR:53" --dns "0.0.0.0:54=$UNBOUND_ADDR:53" \
	--dns "[::]:55=$UNBOUND_ADDR:53"
FPID=$FWD_PID
expect_re "--dns alone starts without --key or --net, and says so" \
	"running: no stamping listener, 3 dns relays" "$(cat "$LAB_DIR/forward.err")"
expect_eq "it keeps CAP_SYS_ADMIN (setns) and CAP_NET_BIND_SERVICE (port 53), nothing else" \
	0000000000200400 "$(awk '$1 == "CapEff:" { print $2 }' "/proc/$FPID/status")"
seen="udp $(sbx ss -Hunl 'sport = :53' | wc -l) tcp $(sbx ss -Htnl 'sport = :53' | wc -l)"
seen+=" host $(hx ss -Htunl 'sport = :53' | wc -l)"
expect_eq "the UDP socket and the TCP listener are in the sandbox, not in the host namespace" \
	"udp 1 tcp 1 host 0" "$seen"

out=$(sdig @127.0.0.1 fwd.test A +short)
expect_eq "dig over UDP in the sandbox gets unbound's answer through the relay" 203.0.113.10 "$out"
expect_eq "... the query reached unbound from the host namespace (192.0.2.1, as the control did)" 2 \
	"$(awk '$3 == "query:" && $4 == "192.0.2.1" && $5 == "fwd.test." { c++ }
		END { print c + 0 }' "$UNBOUND_LOG")"
out=$(sdig +tcp @127.0.0.1 fwd.test A +short)
expect_eq "dig +tcp in the sandbox gets the answer too" 203.0.113.10 "$out"
out=$(sdig @127.0.0.1 nope.fwd.test A)
expect_re "an NXDOMAIN comes through as it is" "status: NXDOMAIN" "$out"
expect_re "TCP connections start raw: no head read, dialled at once (--trace)" \
	"trace: 127\.0\.0\.1: raw -> (dial|relay)" "$(cat "$LAB_DIR/forward.err")"
expect_not_re "... never in the head state" "trace: 127\.0\.0\.1: head ->" "$(cat "$LAB_DIR/forward.err")"

out=$(sbx "$PY" -c 'import socket
ais = socket.getaddrinfo("fwd.test", 80, proto=socket.IPPROTO_TCP)
print(" ".join(sorted({a[4][0] for a in ais})))' 2>&1)
expect_eq "getaddrinfo in the sandbox resolves through resolv.conf (nameserver 127.0.0.1)" \
	203.0.113.10 "$out"
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1 use-vc\n' >"/etc/netns/$SNS/resolv.conf"
n0=$(grep -c 'raw -> ' "$LAB_DIR/forward.err")
out=$(sbx "$PY" -c 'import socket
print(socket.gethostbyname("c7.fwd.test"))' 2>&1)
expect_eq "... and over TCP (options use-vc)" 198.51.100.7 "$out"
expect_ge "... (which went through the TCP relay)" $((n0 + 1)) "$(grep -c 'raw -> ' "$LAB_DIR/forward.err")"
printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/$SNS/resolv.conf"

expect_eq "50 concurrent UDP clients each get their own answer (id, question, address)" \
	"good=50 bad=0 missing=0" "$(clients udp 53 50)"
expect_eq "50 concurrent TCP clients, two queries pipelined on each, each get their own" \
	"good=100 bad=0" "$(clients tcp 53 50)"

# a wildcard LISTEN: an address added after the start (a bridge appearing), answered from it
sbx ip addr add 10.99.0.1/32 dev lo
sbx ip -6 addr add fd99::1/128 dev lo nodad
out=$(sdig -b 127.0.0.1 @10.99.0.1 -p 54 c3.fwd.test A +short)
expect_eq "0.0.0.0:54 answers for an address added later, from that address (dig -b 127.0.0.1)" \
	198.51.100.3 "$out"
out=$(sdig +tcp @10.99.0.1 -p 54 c4.fwd.test A +short)
expect_eq "... and over TCP" 198.51.100.4 "$out"
out=$(sdig -b ::1 @fd99::1 -p 55 c5.fwd.test A +short)
expect_eq "[::]:55 answers over IPv6 from the address asked" 198.51.100.5 "$out"
out=$(sdig -b 127.0.0.1 @10.99.0.1 -p 55 c6.fwd.test A +short)
expect_eq "... and an IPv4 client of that dual-stack socket from its IPv4 address" 198.51.100.6 "$out"

# ------------------------------------------------------------------ bounds
wait_until 12 bash -c "[ \$(ip netns exec $HNS ss -Hun dst $UNBOUND_ADDR:53 | wc -l) = 0 ]"
expect_eq "the earlier clients' flows are gone once idle" 0 "$(flows)"
base_fd=$(fd_count "$FPID")
base_rss=$(rss_kb "$FPID")
: >"$LAB_DIR/fds"
: >"$LAB_DIR/flows"
(while kill -0 "$FPID" 2>/dev/null && [ ! -e "$LAB_DIR/fds.stop" ]; do
	fd_count "$FPID" >>"$LAB_DIR/fds"
	flows >>"$LAB_DIR/flows"
	sleep 0.05
done) &
SAMPLER=$!
clients flood 53 8000 4 >"$LAB_DIR/flood.out" &
FLOOD=$!
sleep 1
t0=$(now)
out=$(sdig +tcp +time=3 @127.0.0.1 c9.fwd.test A +short)
el=$(elapsed "$t0")
expect_eq "during a flood from 8000 client ports, a TCP client is still served" 198.51.100.9 "$out"
expect_lt "... promptly (${el} s)" 2 "$el"
wait "$FLOOD"
touch "$LAB_DIR/fds.stop"
wait "$SAMPLER"
expect_re "the flood ran: 8000 ports, many datagrams" "^ports=8000 sent=[0-9]{5,}" \
	"$(cat "$LAB_DIR/flood.out")"
max_flows=$(sort -n "$LAB_DIR/flows" | tail -1)
max_fd=$(sort -n "$LAB_DIR/fds" | tail -1)
# ss's dumps race the churn (a socket can be listed twice); the descriptors are exact
expect_ge "the flood filled the flow table (ss saw up to $max_flows flows)" 1000 "$max_flows"
expect_lt "... and no more: descriptors peaked at $max_fd, $base_fd before (1024 flows and a TCP relay's 2)" \
	$((base_fd + 1024 + 2 + 1)) "$max_fd"
expect_eq "the forwarder said once that the least recently used flow gives way" 1 \
	"$(grep -c '1024 clients at once: the least recently used gives way' "$LAB_DIR/forward.err")"
rss=$(rss_kb "$FPID")
expect_lt "its RSS grew by less than 8 MB (${base_rss} -> ${rss} kB)" $((base_rss + 8192)) "$rss"
out=$(sdig @127.0.0.1 c1.fwd.test A +short)
expect_eq "after the flood a UDP client is answered" 198.51.100.1 "$out"
sleep 5
n=$(flows)
expect_ge "5 s after the flood its flows are still open ($n)" 1000 "$n"
wait_until 8 bash -c "[ \$(ip netns exec $HNS ss -Hun dst $UNBOUND_ADDR:53 | wc -l) = 0 ]"
expect_eq "... and closed once idle 10 s" 0 "$(flows)"
expect_lt "... their descriptors with them ($(fd_count "$FPID"), $base_fd before the flood)" \
	$((base_fd + 1)) "$(fd_count "$FPID")"

# ------------------------------------------------------------------ the namespace re-created
expect_eq "10 clients from their own ports are answered" "good=10 bad=0 missing=0" "$(clients udp 53 10)"
expect_eq "... and hold a flow each" 10 "$(flows)"
ip netns del "$SNS"
ip netns add "$SNS" || lab_bail "ip netns add $SNS again"
ip -n "$SNS" link set lo up
wait_until 3 grep -q "following $SPATH: listening in new namespace" "$LAB_DIR/forward.err"
expect_eq "with the sandbox re-created, the forwarder listens in the new namespace" 1 \
	"$(grep -c "following $SPATH: listening in new namespace" "$LAB_DIR/forward.err")"
expect_eq "... and has closed the old socket's flows at once" 0 "$(flows)"
out=$(sdig @127.0.0.1 fwd.test A +short)
expect_eq "... where dig over UDP is answered" 203.0.113.10 "$out"
out=$(sdig +tcp @127.0.0.1 fwd.test A +short)
expect_eq "... and over TCP" 203.0.113.10 "$out"
out=$(sbx "$PY" -c 'import socket; print(socket.gethostbyname("c2.fwd.test"))' 2>&1)
expect_eq "... and getaddrinfo" 198.51.100.2 "$out"

# ------------------------------------------------------------------ upstreams down, own namespace
# without --netns: the relays in the forwarder's own namespace ($HNS), with --mark, allowed
# 256 descriptors: at most 128 flows then, the other half left for TCP
fwd_start "$LAB_DIR/forward2.err" "/run/netns/$HNS" 127.0.0.1:5303 \
	ip netns exec "$HNS" prlimit --nofile=256:256 "$FWD" --mark 0x77 \
	--dns "127.0.0.1:5301=$UNBOUND_ADDR:53" --dns "127.0.0.1:5302=$UNBOUND_REFUSED:53" \
	--dns "127.0.0.1:5303=$UNBOUND_SILENT:53"
F2=$FWD_PID
expect_eq "without --netns the relay listens in its own namespace and answers" 203.0.113.10 \
	"$(hx dig +time=2 +tries=1 @127.0.0.1 -p 5301 fwd.test A +short 2>&1)"
expect_eq "... over TCP too" 203.0.113.10 \
	"$(hx dig +tcp +time=2 +tries=1 @127.0.0.1 -p 5301 fwd.test A +short 2>&1)"
expect_eq "... its flows carry --mark's SO_MARK" 1 \
	"$(hx ss -Hune dst "$UNBOUND_ADDR:53" | grep -c 'fwmark:0x77')"
expect_eq "... and it keeps only CAP_NET_ADMIN (for SO_MARK; nothing to re-enter, port bound)" \
	0000000000001000 "$(awk '$1 == "CapEff:" { print $2 }' "/proc/$F2/status")"
expect_re "allowed 256 descriptors, it takes at most 128 UDP clients at once, and says so" \
	"at most 128 UDP clients at once" "$(cat "$LAB_DIR/forward2.err")"
# the digs above may have left a flow open (idle ones close after 10 s): it is
# one of the 128, so the base is the descriptors less the flows held now
base_flows=$(hx ss -Hune dst "$UNBOUND_ADDR:53" | grep -c 'fwmark:0x77')
base_fd=$(($(fd_count "$F2") - base_flows))
: >"$LAB_DIR/fds2"
(while kill -0 "$F2" 2>/dev/null && [ ! -e "$LAB_DIR/fds2.stop" ]; do
	fd_count "$F2" >>"$LAB_DIR/fds2"
	sleep 0.05
done) &
SAMPLER=$!
hx "$PY" "$LAB_DIR/clients.py" flood 5301 1000 3 >"$LAB_DIR/flood2.out" 2>&1 &
FLOOD=$!
sleep 1
tcp_ok=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	out=$(hx dig +tcp +time=2 +tries=1 @127.0.0.1 -p 5301 "c$i.fwd.test" A +short 2>&1)
	[ "$out" = "198.51.100.$i" ] && tcp_ok=$((tcp_ok + 1))
done
wait "$FLOOD"
touch "$LAB_DIR/fds2.stop"
wait "$SAMPLER"
max_fd=$(sort -n "$LAB_DIR/fds2" | tail -1)
expect_eq "during a flood from 1000 ports, 10 TCP clients one after another are served" 10 "$tcp_ok"
expect_ge "... while the flows took their 128 descriptors (peak $max_fd, $base_fd before without its $base_flows flows)" \
	$((base_fd + 128)) "$max_fd"
expect_lt "... and no more" $((base_fd + 128 + 2 + 1)) "$max_fd"

# tdig PORT DIG_ARGS...: dig fwd.test at 127.0.0.1:PORT from $HNS, one try; output in out, seconds in el
tdig() {
	local t0
	t0=$(now)
	out=$(hx dig +tries=1 @127.0.0.1 -p "$1" "${@:2}" fwd.test A 2>&1)
	el=$(elapsed "$t0")
}
tdig 5302 +time=1
expect_re "an upstream that refuses (port unreachable): the UDP client times out" \
	"timed out|no servers could be reached" "$out"
expect_lt "... in its own 1 s (${el} s)" 1.8 "$el"
tdig 5302 +tcp +time=3
expect_re "... a TCP client is refused (reset or closed)" "reset|end of file|refused|closed" "$out"
expect_not_re "... with no answer" "status:" "$out"
expect_lt "... at once (${el} s)" 1 "$el"
tdig 5303 +time=1
expect_re "an upstream that is silent: the UDP client times out" \
	"timed out|no servers could be reached" "$out"
expect_lt "... in its own 1 s (${el} s)" 1.8 "$el"
tdig 5303 +tcp +time=2
expect_re "... and a TCP client too (the dial is still being retried)" \
	"timed out|no servers could be reached" "$out"
expect_lt "... in its own 2 s (${el} s)" 2.8 "$el"
expect_eq "both forwarders are still running" "0 0" \
	"$(kill -0 "$FPID" 2>/dev/null; echo -n "$? "; kill -0 "$F2" 2>/dev/null; echo $?)"
seen="$(hx dig +time=2 +tries=1 @127.0.0.1 -p 5301 fwd.test A +short 2>&1)"
seen+=" $(sdig @127.0.0.1 fwd.test A +short)"
expect_eq "... and still relay" "203.0.113.10 203.0.113.10" "$seen"
expect_not_re "neither printed a sanitizer report" "ERROR: AddressSanitizer|runtime error" \
	"$(cat "$LAB_DIR/forward.err" "$LAB_DIR/forward2.err")"
lab_done
