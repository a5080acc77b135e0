#!/bin/bash
# sluice-dns's edges: an upstream that misbehaves (garbage, a wrong id,
# another question, SERVFAIL, a cut record) changes nothing and is logged;
# what goes upstream (lower case, sluice-dns's own EDNS record, no client
# options); coalescing; negative caching; the cache's cap; observe mode;
# a kept, pipelined TLS connection; the drop to `user`; rotation.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"' \
	'local-data: "a.test. 300 IN A 203.0.113.11"' 'local-data: "b.test. 300 IN A 203.0.113.12"' \
	'local-data: "c.test. 300 IN A 203.0.113.13"'
EVIL=$LAB_DIR/evil.jsonl
lab_bg "$INS" "$PY" "$INTEG_DIR/dns_evil.py" --log "$EVIL" 192.0.2.2 5353
wait_until 10 ix bash -c "ss -uln | grep -q ':5353 '" || lab_bail "dns_evil.py listens"
DNSLOG=$LAB_DIR/state/dns.log
status_of() { sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$1"; }
dnsq() { jq_ "$DNSLOG" "$@"; }
evilq() { jq_ "$EVIL" "$@"; }
names="garbage wrongid otherq servfail nx short slow plain mixed"
grants=()
for n in $names; do grants+=("allow $n.test"); done
lab_write_conf "${grants[@]}" "allow *.evil.test" "dns-listen 127.0.0.1:53" "dns-upstream 192.0.2.2:5353" \
	"dns-timeout 1" "dns-negative-ttl 20"
lab_run_dns "$CONF"
dq() { hx dig +tries=1 +time=4 @127.0.0.1 "$@"; }

out=$(dq plain.test A +short)
expect_eq "the misbehaving upstream answers a plain name" "203.0.113.10" "$out"
expect_eq "... it saw one query for it" 1 "$(evilq name=plain.test --count)"
for n in otherq short garbage; do
	out=$(dq "$n.test" A)
	expect_eq "an upstream answer that is $n: SERVFAIL to the client" SERVFAIL "$(status_of "$out")"
	expect_eq "... a row: error upstream-malformed" "error upstream-malformed" \
		"$(dnsq name=$n.test --field decision) $(dnsq name=$n.test --field reason)"
done
out=$(dq wrongid.test A)
expect_eq "an answer under another id is not taken: SERVFAIL after dns-timeout" SERVFAIL "$(status_of "$out")"
expect_eq "... a row: upstream-timeout" "upstream-timeout" "$(dnsq name=wrongid.test --field reason)"
sleep 1.2 # the upstream is marked down for a second after a timeout
out=$(dq servfail.test A)
expect_eq "an upstream SERVFAIL: SERVFAIL" SERVFAIL "$(status_of "$out")"
expect_eq "... a row: upstream-failed" "upstream-failed" "$(dnsq name=servfail.test --field reason)"
out=$(dq plain.test A +short)
expect_eq "... and after all of them, answers still come (from the cache)" "203.0.113.10" "$out"
kill -0 "$DNS_PID" && ok "sluice-dns is still running" || not_ok "sluice-dns is still running"

out=$(dq MiXeD.TeSt A +nsid +cookie=0102030405060708)
expect_eq "a query with client EDNS options (NSID, a cookie) is answered" NOERROR "$(status_of "$out")"
expect_eq "... it went upstream lower-cased" "mixed.test" "$(evilq name~ixed --field name)"
expect_eq "... with sluice-dns's own OPT record: no options, UDP size 1232" "0 1232" \
	"$(evilq name~ixed --field optlen) $(evilq name~ixed --field udp)"

out=$(dq nx.test A)
expect_eq "upstream NXDOMAIN for a granted name is passed on" NXDOMAIN "$(status_of "$out")"
out=$(dq nx.test A)
expect_eq "... and cached: asked upstream once for two queries" 1 "$(evilq name=nx.test --count)"

out=$(hx "$PY" - <<'PY'
import socket, struct, select, time
socks = []
for i in range(20):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    q = struct.pack(">HHHHHH", i + 1, 0x0100, 1, 0, 0, 0) + b"\x04slow\x04test\x00" + struct.pack(">HH", 1, 1)
    s.sendto(q, ("127.0.0.1", 53)); socks.append(s)
got, end = 0, time.time() + 5
while got < 20 and time.time() < end:
    r, _, _ = select.select(socks, [], [], 0.5)
    for s in r:
        d = s.recv(4096); got += d[7] == 1; socks.remove(s)
print(got)
PY
)
expect_eq "20 clients ask one uncached name at once: all answered" 20 "$out"
expect_eq "... from one upstream query (coalesced)" 1 "$(evilq name=slow.test --count)"

# --- what a hostile review found (each failed before its fix) ---------------
# a client over TCP: tcpq MODE ARGS (tests/integ/dns_tcp.py)
tcpq() { hx "$PY" "$INTEG_DIR/dns_tcp.py" "$@"; }
hx bash -c 'for i in $(seq 10); do dig +tries=1 +time=2 @127.0.0.1 fresh$i.evil.test A +short; sleep 0.15; done' \
	>"$LAB_DIR/fresh.out" 2>&1 &
jobs_=($!)
for i in 1 2 3 4 5 6; do
	hx dig +tries=1 +time=3 @127.0.0.1 "hang$i.evil.test" A >/dev/null &
	jobs_+=($!)
done
wait "${jobs_[@]}"
expect_eq "six names the upstream never answers, with other names answered meanwhile: those others all answered" \
	10 "$(grep -c '^203.0.113.10$' "$LAB_DIR/fresh.out")"
out=$(dq after.evil.test A +short)
expect_eq "... and the upstream is not taken for down afterwards (one slow name is not a dead server)" "203.0.113.10" "$out"

res=""
for i in 1 2 3; do res="$res $(status_of "$(dq "tc$i.evil.test" A)")"; done
sleep 1.2 # a silent upstream is marked down for a second
for i in 4 5; do res="$res $(status_of "$(dq "tc$i.evil.test" A)")"; done
expect_eq "a kept TCP connection that stops answering is replaced (answered, answered, timed out, then a fresh connection)" \
	" NOERROR NOERROR SERVFAIL NOERROR NOERROR" "$res"
expect_eq "... over two upstream connections" 2 "$(evilq name~tc5.evil.test --field conn)"

expect_eq "control: the upstream answers (the queries below wait on it, none fail at once)" \
	"203.0.113.10" "$(dq ctl.evil.test A +short)"
out=$(tcpq pipeline 100 slow2.evil.test)
expect_eq "100 queries pipelined on one TCP connection for a name being looked up: 100 answers" 100 "$out"

out=$(tcpq halfclose 3 slow2.evil.test)
expect_eq "a client that half-closes after 3 queries gets 3 answers, then a FIN (not a reset)" "3 fin" "$out"

t0=$(awk '{print $14 + $15}' "/proc/$DNS_PID/stat")
tcpq reset 64 hang7.evil.test
sleep 1.5
t1=$(awk '{print $14 + $15}' "/proc/$DNS_PID/stat")
expect_lt "a client that pipelines 64 queries for a hanging name, then resets: no spin (CPU ticks in 1.5 s)" 40 "$((t1 - t0))"

sleep 1.2 # hang7 timed out with nothing else answered: a silent upstream is down a second
out=$(dq huge1.evil.test A +tcp | grep -c 'IN[[:space:]]A[[:space:]]')
expect_eq "an answer that writes out past 8 KiB is given whole (over TCP)" 120 "$out"
dq huge1.evil.test A +tcp >/dev/null
expect_eq "... but not kept: asked upstream again (over TCP, twice)" 2 "$(evilq name=huge1.evil.test tcp=true --count)"

out=$(tcpq many 33)
expect_eq "one address holds at most 32 TCP connections: the 33rd is reset" "32 open, the last reset" "$out"
out=$(tcpq drip 14)
expect_re "a TCP client that drips a byte every 2 s is closed at the idle deadline (~10 s), not kept alive" '^closed after 1[0-2]\.' "$out"
lab_stop_dns

# the cache's cap, observe mode, rotation
lab_write_conf "allow a.test" "allow b.test" "allow c.test" "dns-listen 127.0.0.1:53" \
	"dns-upstream $UNBOUND_ADDR" "dns-cache-entries 2" "mode observe" "log-rotate-bytes 4096"
lab_run_dns "$CONF"
for n in a b c a; do dq "$n.test" A +short >/dev/null; done
expect_eq "dns-cache-entries 2: a third name pushes out the least recent (a.test asked again)" 2 "$(unbound_seen a.test A)"
expect_eq "... the other two asked once each" "1 1" "$(unbound_seen b.test A) $(unbound_seen c.test A)"
out=$(dq good.test A +short)
expect_eq "observe mode: an ungranted name is looked up and answered" "203.0.113.10" "$out"
expect_eq "... its row says observe, not-granted" "observe not-granted" \
	"$(dnsq name=good.test --field decision) $(dnsq name=good.test --field reason)"
out=$(dq good.test TXT)
expect_eq "... types are still checked in observe mode (TXT: NODATA)" "NOERROR" "$(status_of "$out")"
unbound_expect_none "... TXT not asked upstream" good.test TXT
for i in $(seq 40); do dq good.test A +short >/dev/null; done
[ -s "$DNSLOG.1" ] && ok "the DNS log rotates past log-rotate-bytes (dns.log.1)" ||
	not_ok "the DNS log rotates past log-rotate-bytes (dns.log.1)" "$(ls -la "$LAB_DIR/state")"
expect_ge "... and rows go on in the new file" 1 "$(dnsq name=good.test --count)"
lab_stop_dns

# out of descriptors: answers fail (SERVFAIL, not the upstream's fault), the
# stored grants stay (the store unreadable for want of an fd is not damaged)
sl allow add stored.test >/dev/null
lab_write_conf "allow *.evil.test" "dns-listen 127.0.0.1:53" "dns-upstream 192.0.2.2:5353" "dns-timeout 3"
DNS_ERR=$LAB_DIR/fds.dns.err
ip netns exec "$HNS" prlimit --nofile=40:40 "$SLUICE_BUILD/sluice-dns" -c "$CONF" 2>"$DNS_ERR" &
DNS_PID=$!
LAB_PIDS+=("$DNS_PID")
wait_until 10 grep -q "sluice-dns: running" "$DNS_ERR" || lab_bail "sluice-dns starts under prlimit" "$(tail -3 "$DNS_ERR")"
expect_eq "a stored grant answered" "203.0.113.10" "$(dq stored.test A +short)"
jobs_=()
for i in $(seq 40); do
	hx dig +tries=1 +time=4 @127.0.0.1 "hang-fd$i.evil.test" A >/dev/null &
	jobs_+=($!)
done
sleep 1
sl allow add during.test >/dev/null # a store change while no descriptor is free: a reload
sleep 1.5
expect_eq "with every descriptor held by lookups, the stored grant still answers (from the cache)" \
	"203.0.113.10" "$(dq stored.test A +short)"
expect_re "... the reload said it kept the policy" 'keeping the running policy' "$(cat "$DNS_ERR")"
expect_not_re "... and never took the store for damaged" 'grant store .* unreadable' "$(cat "$DNS_ERR")"
wait "${jobs_[@]}"
expect_ge "... the lookups that found no descriptor failed as local errors (rows say so)" 1 \
	"$(dnsq reason=local-error --count)"
sleep 1.2 # the hanging lookups' own timeouts mark the upstream down a second
expect_eq "... and once they end, a new name is answered" "203.0.113.10" \
	"$(dq after-fd.evil.test A +short)"
lab_stop_dns

# a kept, pipelined TLS connection; the drop to user
mkdir -p "$LAB_DIR/dnslog" && chown nobody "$LAB_DIR/dnslog"
chmod 755 "$LAB_DIR/state"
lab_write_conf "allow a.test" "allow b.test" "allow c.test" "allow good.test" \
	"dns-listen 127.0.0.1:53" "dns-upstream $UNBOUND_ADDR tls=dns.test ca=$UNBOUND_CA" \
	"dns-log $LAB_DIR/dnslog/dns.log" "user nobody"
chmod 644 "$UNBOUND_CA"
lab_run_dns "$CONF"
DNSLOG=$LAB_DIR/dnslog/dns.log
expect_eq "sluice-dns dropped to nobody after binding port 53" "65534" "$(awk '/^Uid:/{print $3}' "/proc/$DNS_PID/status")"
expect_eq "... with no capability" "0000000000000000" "$(awk '/^CapEff:/{print $2}' "/proc/$DNS_PID/status")"
out=$(hx "$PY" - <<'PY'
import socket, struct, select, time
socks, names = [], ["a", "b", "c", "good"]
for i, n in enumerate(names):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    q = struct.pack(">HHHHHH", i + 1, 0x0100, 1, 0, 0, 0) + bytes([len(n)]) + n.encode() + b"\x04test\x00" + struct.pack(">HH", 1, 1)
    s.sendto(q, ("127.0.0.1", 53)); socks.append(s)
got, end = 0, time.time() + 5
while socks and time.time() < end:
    r, _, _ = select.select(socks, [], [], 0.5)
    for s in r:
        d = s.recv(4096); got += d[7] == 1; socks.remove(s)
print(got)
PY
)
expect_eq "... four names at once over DNS over TLS, each answered" 4 "$out"
expect_eq "... over one kept TLS connection to unbound" 1 \
	"$(ix ss -tn state established "( sport = :853 )" | tail -n +2 | wc -l)"
expect_ge "... unbound counted them over TLS" 4 "$(unbound_stat num.query.tls)"
out=$(hx dig +tries=1 +time=3 @127.0.0.1 good.test A +short)
expect_eq "... answered from the cache" "203.0.113.10" "$out"
expect_re "... and its log, written as nobody" 'good\.test' "$(cat "$DNSLOG")"
lab_stop_dns
lab_write_conf "allow a.test" "dns-listen 127.0.0.1:53" "dns-upstream $UNBOUND_ADDR" "user nobody" \
	"dns-log $LAB_DIR/dnslog/dns2.log"
chmod 777 "$LAB_DIR/state"
hx "$SLUICE_BUILD/sluice-dns" -c "$CONF" 2>"$LAB_DIR/dns3.err"
rc=$?
chmod 755 "$LAB_DIR/state"
expect_eq "user that can write STATE: sluice-dns refuses to start" 1 "$rc"
expect_re "... saying why" 'can write the state directory' "$(cat "$LAB_DIR/dns3.err")"

lab_done
