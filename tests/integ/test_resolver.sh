#!/bin/bash
# integ: alone (a 1 s dns-timeout is checked within 1.6 s, a SERVFAIL at once under 0.5 s)
# sluice-dns against real unbound (plain and DNS over TLS) with real clients
# (dig, kdig, python's getaddrinfo, curl through sluice-proxy): only names
# the policy could allow are answered, HTTPS/TXT get NODATA without asking
# upstream, denied addresses are removed, the wildcard budget holds, TLS is
# verified and never falls back to plain, failover and SERVFAIL are
# bounded, big answers go over TCP, malformed queries change nothing, and
# the proxy and the agent see one view of a name across a rebinding upstream.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up
big=$(unbound_many big.test 80 | sed 's/.*/local-data: "&"/')
mapfile -t biglines <<<"$big"
lab_unbound 'max-udp-size: 1232' \
	'local-data: "good.test. 300 IN A 203.0.113.10"' \
	'local-data: "good.test. 300 IN AAAA 2001:db8::10"' \
	'local-data: "good.test. 300 IN TXT \"exfil\""' \
	'local-data: "good.test. 300 IN HTTPS 1 . alpn=h2"' \
	'local-data: "evil.test. 300 IN A 10.20.0.5"' \
	'local-data: "mixed.test. 300 IN A 10.20.0.5"' \
	'local-data: "mixed.test. 300 IN A 203.0.113.11"' \
	'local-data: "nope.test. 300 IN A 203.0.113.12"' \
	'local-data: "txt.test. 300 IN TXT \"allowed\""' \
	'local-data: "tls.test. 300 IN A 203.0.113.13"' \
	'local-data: "sess.test. 300 IN A 203.0.113.12"' \
	"${biglines[@]}"
for i in 1 2 3 4 5; do unbound_data_add "n$i.wild.test. 300 IN A 203.0.113.20" >/dev/null; done

DNSLOG=$LAB_DIR/state/dns.log
lab_write_conf "allow good.test" "allow evil.test" "allow mixed.test:8443" "allow big.test" \
	"allow *.wild.test" "allow flip.test" "allow tls.test" "allow txt.test" \
	"dns-listen 127.0.0.1:53" "dns-listen [::1]:53" "dns-upstream $UNBOUND_ADDR" \
	"dns-allow-type txt.test TXT" "dns-wildcard-budget 3 600" "dns-timeout 1" \
	"nameserver 127.0.0.1"
lab_run_dns "$CONF"
dq() { hx dig +tries=1 +time=3 @127.0.0.1 "$@"; }
dnsq() { jq_ "$DNSLOG" "$@"; }
status_of() { sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$1"; }
answers() { awk '/^;; ANSWER SECTION/{a=1;next} /^$/{a=0} a && !/^;/{print $NF}' <<<"$1" | sort | tr '\n' ' '; }

unbound_control "unbound is up and recording its queries"

out=$(dq good.test A)
expect_eq "a granted name is answered" "NOERROR" "$(status_of "$out")"
expect_eq "... with the upstream's address" "203.0.113.10 " "$(answers "$out")"
expect_eq "... which unbound was asked for" 1 "$(unbound_seen good.test A)"
expect_eq "... and a row: allow, granted, by the grant, not cached" "allow granted good.test NOERROR false 192.0.2.2:53" \
	"$(dnsq name=good.test type=A --field decision) $(dnsq name=good.test type=A --field reason) $(dnsq name=good.test type=A --field grant) $(dnsq name=good.test type=A --field rcode) $(dnsq name=good.test type=A --field cache) $(dnsq name=good.test type=A --field upstream)"
out=$(dq good.test AAAA)
expect_eq "AAAA of a granted name answered" "2001:db8::10 " "$(answers "$out")"
out=$(dq good.test A)
expect_eq "asked again: answered from the cache" "203.0.113.10 " "$(answers "$out")"
expect_eq "... unbound not asked again" 1 "$(unbound_seen good.test A)"
expect_eq "... the row says cache" "true" "$(dnsq name=good.test type=A --field cache)"

out=$(dq nope.test A)
expect_eq "an ungranted name gets NXDOMAIN (not REFUSED: musl waits on that)" "NXDOMAIN" "$(status_of "$out")"
expect_re "... with EDE 15 Blocked naming the grant command" 'EDE: 15 \(Blocked\).*sluice allow add nope.test' "$out"
expect_eq "... and a refuse row" "refuse not-granted" "$(dnsq name=nope.test --field decision) $(dnsq name=nope.test --field reason)"
unbound_expect_none "... and nothing of it reached the upstream" nope.test

out=$(dq nope.test A +noedns)
expect_eq "a client without EDNS gets NXDOMAIN too" "NXDOMAIN" "$(status_of "$out")"

t0=$(now)
sl allow add nope.test >/dev/null || not_ok "sluice allow add nope.test"
live=
for _ in $(seq 30); do
	out=$(dq nope.test A)
	if [ "$(status_of "$out")" = NOERROR ]; then live=$(elapsed "$t0"); break; fi
	sleep 0.1
done
expect_lt "a grant added live is answered within a second and a half" 1.5 "$live"
expect_eq "... with its address" "203.0.113.12 " "$(answers "$(dq nope.test A)")"

for t in TXT HTTPS SVCB MX; do
	out=$(dq good.test "$t")
	expect_eq "$t for a granted name: NODATA" "NOERROR/0" "$(status_of "$out")/$(grep -c "IN[[:space:]]*$t[[:space:]]" <<<"$(answers "$out")")"
done
expect_re "... with EDE naming why (HTTPS)" 'EDE: 15.*HTTPS is not answered for good.test' "$(dq good.test HTTPS)"
expect_eq "... a row with reason type" "refuse type" "$(dnsq name=good.test type=HTTPS --field decision) $(dnsq name=good.test type=HTTPS --field reason)"
unbound_expect_none "... and neither TXT nor HTTPS reached the upstream (TXT)" good.test TXT
unbound_expect_none "... (HTTPS)" good.test HTTPS
out=$(hx dig +short +tries=1 @127.0.0.1 txt.test TXT)
expect_eq "dns-allow-type txt.test TXT answers TXT for it, as the upstream has it" \
	"$(hx dig +short +tries=1 @"$UNBOUND_ADDR" txt.test TXT)" "$out"
expect_re "... (its text)" 'allowed' "$out"

out=$(dq mixed.test A)
expect_eq "a grant scoped to a port still allows the name; a private answer is removed" "203.0.113.11 " "$(answers "$out")"
expect_eq "... the row counts kept and removed" "1 1" "$(dnsq name=mixed.test --field kept) $(dnsq name=mixed.test --field removed)"
out=$(dq evil.test A)
expect_eq "only private answers: NXDOMAIN" "NXDOMAIN" "$(status_of "$out")"
expect_re "... with EDE" 'EDE: 15' "$out"
expect_eq "... row denied-ip" "refuse denied-ip" "$(dnsq name=evil.test --field decision) $(dnsq name=evil.test --field reason)"

for i in 1 2 3; do
	out=$(dq "n$i.wild.test" A)
	expect_eq "wildcard name $i of a budget of 3 answered" "203.0.113.20 " "$(answers "$out")"
done
out=$(dq n4.wild.test A)
expect_eq "the 4th distinct name under *.wild.test: NXDOMAIN" "NXDOMAIN" "$(status_of "$out")"
expect_eq "... row wildcard-budget" "refuse wildcard-budget" "$(dnsq name=n4.wild.test --field decision) $(dnsq name=n4.wild.test --field reason)"
unbound_expect_none "... not asked upstream" n4.wild.test
out=$(dq n2.wild.test A)
expect_eq "a name already seen under the suffix is still answered" "203.0.113.20 " "$(answers "$out")"

out=$(dq BiG.TeSt A +ignore)
expect_ge "control: the mixed-case query reached unbound (as big.test: UDP, then TCP)" 1 "$(unbound_seen big.test A)"
expect_eq "mixed case goes upstream lower-cased" 0 "$(grep -c 'BiG' "$UNBOUND_LOG")"
expect_re "... and the answer echoes the client's question as written" 'BiG\.TeSt\.' "$out"
expect_re "big answer over UDP: TC set, nothing in it" 'flags: qr tc' "$out"
expect_eq "... (no records)" "" "$(answers "$out")"
out=$(hx dig +tcp +tries=1 @127.0.0.1 big.test A)
expect_eq "... over TCP all 80 records come" 80 "$(awk '/^;; ANSWER SECTION/{a=1;next} /^$/{a=0} a' <<<"$out" | grep -c 'IN')"
out=$(hx kdig +tcp @127.0.0.1 good.test A)
expect_re "kdig over TCP answered" '203\.0\.113\.10' "$out"
out=$(hx dig +tries=1 @::1 good.test A +short)
expect_eq "the IPv6 listener answers" "203.0.113.10" "$out"

out=$(sl log --dns --host nope.test --decision refuse)
expect_re "sluice log --dns shows sluice-dns's own rows (the refusal of nope.test)" 'nope\.test.*refuse.*not-granted.*NXDOMAIN' "$out"

out=$(hx "$PY" - <<'PY'
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
def q(qid, name, extra=b"", ar=0):
    hdr = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, ar)
    qn = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0"
    return hdr + qn + struct.pack(">HH", 1, 1) + extra
res = []
for m in [b"\x00", b"\x12\x34\x81\x00" + b"\0" * 8, q(7, "good.test", b"\xc0\x0c", 0),
          q(8, "good.test") + b"junk", b"\x00\x09\x01\x00\x00\x02\x00\x00\x00\x00\x00\x00"]:
    s.sendto(m, ("127.0.0.1", 53))
    try:
        d = s.recv(4096); res.append("rcode%d" % (d[3] & 15))
    except socket.timeout:
        res.append("none")
print(" ".join(res))
PY
)
expect_eq "malformed queries: FORMERR when a query's header came, else nothing" "none none rcode1 rcode1 rcode1" "$out"
expect_ge "... each logged as error/malformed" 4 "$(dnsq reason=malformed --count)"
out=$(dq good.test A +short)
expect_eq "... and the daemon still answers" "203.0.113.10" "$out"

out=$(hx "$PY" -c 'import socket; print(sorted({a[4][0] for a in socket.getaddrinfo("big.test", 80, socket.AF_INET)})[0])' 2>&1)
expect_eq "python getaddrinfo through resolv.conf -> sluice-dns" "203.0.113.100" "$out"
out=$(hx "$PY" -c 'import socket; socket.getaddrinfo("nope2.test", 80)' 2>&1 | tail -1)
expect_re "... an ungranted name fails at once (no timeout)" 'Name or service not known|No address associated' "$out"

# one view: the agent resolves, the upstream rebinds, the proxy dials what the agent was given
unbound_data 'flip.test. 0 IN A 203.0.113.10' >/dev/null
lab_run_proxy
out=$(hx "$PY" -c 'import socket; print(socket.getaddrinfo("flip.test", 80, socket.AF_INET)[0][4][0])')
expect_eq "the agent resolves flip.test (upstream TTL 0)" "203.0.113.10" "$out"
unbound_data 'flip.test. 0 IN A 203.0.113.11' >/dev/null
expect_eq "... unbound now answers another address" "203.0.113.11" "$(hx dig +short @"$UNBOUND_ADDR" flip.test A)"
code=$(pcode http://flip.test/one)
expect_eq "the proxy (nameserver: sluice-dns) serves flip.test" 200 "$code"
wait_log 1 path=/one
expect_eq "... dialed the address the agent was given (one cache, dns-min-ttl 60)" "203.0.113.10:80" "$(logq path=/one --field dialed)"
sl allow add sess.test --level session >/dev/null || not_ok "sluice allow add sess.test --level session"
wait_until 3 bash -c "[ \"\$(ip netns exec $HNS dig +short +tries=1 @127.0.0.1 sess.test A)\" = 203.0.113.12 ]" &&
	ok "a session grant is answered while its proxy runs" ||
	not_ok "a session grant is answered while its proxy runs" "$(dq sess.test A | grep status)"
lab_stop_proxy
wait_until 3 bash -c "ip netns exec $HNS dig +tries=1 @127.0.0.1 sess.test A | grep -q NXDOMAIN" &&
	ok "... and refused once that proxy stopped (its run id no longer locked)" ||
	not_ok "... and refused once that proxy stopped (its run id no longer locked)" "$(dq sess.test A | grep status)"

# DNS over TLS: verified name, never plain; failover; SERVFAIL bounded. Each a
# sluice-dns of its own: dns_variant NAME PORT UPSTREAM-LINE... writes
# $LAB_DIR/NAME.conf (the main config, its proxy on 3129, listening on PORT,
# logging to $LAB_DIR/NAME.log) and starts it.
dns_variant() {
	local name=$1 port=$2 l
	shift 2
	{
		sed -e '/^dns-listen/d' -e '/^dns-upstream/d' -e '/^dns-log/d' -e '/^listen /d' "$CONF"
		echo "listen 127.0.0.1:3129"
		echo "dns-listen 127.0.0.1:$port"
		echo "dns-log $LAB_DIR/$name.log"
		for l in "$@"; do echo "dns-upstream $l"; done
	} >"$LAB_DIR/$name.conf"
	lab_run_dns "$LAB_DIR/$name.conf"
}
dns_variant dot 5301 "$UNBOUND_ADDR tls=dns.test ca=$UNBOUND_CA"
out=$(hx kdig @"$UNBOUND_ADDR" +tls +tls-ca="$UNBOUND_CA" +tls-hostname=dns.test tls.test A +short)
expect_eq "control: kdig +tls reaches the lab's DoT upstream with the test CA" "203.0.113.13" "$out"
tls0=$(unbound_stat num.query.tls)
out=$(hx dig +tries=1 +time=3 -p 5301 @127.0.0.1 tls.test A +short)
expect_eq "DoT upstream (tls=dns.test, the test CA) answers" "203.0.113.13" "$out"
expect_ge "... and unbound counted a query over TLS" $((tls0 + 1)) "$(unbound_stat num.query.tls)"
out=$(hx kdig -p 5301 @127.0.0.1 +tcp good.test A +short)
expect_eq "... again on the kept connection, kdig over TCP to sluice-dns" "203.0.113.10" "$out"

dns_variant wrong 5302 "$UNBOUND_ADDR tls=wrong.test ca=$UNBOUND_CA"
out=$(hx dig +tries=1 +time=4 -p 5302 @127.0.0.1 n5.wild.test A)
expect_eq "DoT upstream with the wrong certificate name: SERVFAIL" "SERVFAIL" "$(status_of "$out")"
expect_re "... the reason logged" 'TLS handshake for wrong.test failed' "$(cat "$DNS_ERR")"
unbound_expect_none "... and the query never went plain" n5.wild.test

dns_variant failover 5303 "$UNBOUND_SILENT" "$UNBOUND_ADDR"
t0=$(now)
out=$(hx dig +tries=1 +time=5 -p 5303 @127.0.0.1 good.test A +short)
t=$(elapsed "$t0")
expect_eq "first upstream silent: the second answers" "203.0.113.10" "$out"
expect_lt "... after at most dns-timeout (1 s) and a little" 1.6 "$t"
dns_variant down 5304 "$UNBOUND_SILENT" "$UNBOUND_REFUSED:53"
t0=$(now)
out=$(hx dig +tries=1 +time=5 -p 5304 @127.0.0.1 good.test A)
t=$(elapsed "$t0")
expect_eq "every upstream down: SERVFAIL" "SERVFAIL" "$(status_of "$out")"
expect_lt "... within dns-timeout and a little" 1.6 "$t"
t0=$(now)
out=$(hx dig +tries=1 +time=5 -p 5304 @127.0.0.1 evil.test A)
t=$(elapsed "$t0")
expect_eq "... while they are marked down, SERVFAIL at once" "SERVFAIL" "$(status_of "$out")"
expect_lt "... (well under dns-timeout)" 0.5 "$t"
expect_re "... row: error, upstream reason" 'upstream-(timeout|down)' "$(jq_ "$LAB_DIR/down.log" name=evil.test --field reason)"

lab_done
