#!/bin/bash
# Resolution through a real DNS server: every answer checked, one lookup per
# request (no rebinding window), NXDOMAIN/SERVFAIL refused, resolv.conf of
# the namespace or the nameserver directive.
source "$(dirname "$0")/lab.sh"
lab_up
DNSLOG=$LAB_DIR/dns.jsonl
lab_bg "$HNS" "$PY" "$INTEG_DIR/dns.py" --log "$DNSLOG" 127.0.0.53 53
sleep 0.3
: >"$DNSLOG"
names="dnsgood dnsevil dnsmixed dnsmeta dnsv6evil dnsv6good dnsmixed6 dnsmapped rebind nosuch servfail"
grants=()
for n in $names; do grants+=("allow $n.test"); done
lab_start_proxy "nameserver 127.0.0.53" "${grants[@]}"

get() { raw "GET http://$1/$2 HTTP/1.1\\r\\nHost: $1\\r\\n\\r\\n" --timeout 10; }

out=$(get dnsgood.test d1)
expect_eq "name answered by the DNS server (nameserver directive) allowed" 200 "$(meta_status "$out")"
wait_log 2 path=/d1
expect_eq "... dialed the answered address" "203.0.113.10:80" "$(logq path=/d1 --field dialed)"
expect_re "... dns_ms logged" '^[0-9.]+$' "$(logq path=/d1 --field dns_ms)"
expect_ge "the proxy asked the configured nameserver" 1 "$(jq_ "$DNSLOG" name=dnsgood.test)"
out=$(get dnsv6good.test d2)
expect_eq "AAAA-only name in a documentation range allowed" 200 "$(meta_status "$out")"
wait_log 2 path=/d2
expect_eq "... dialed the AAAA address" "[2001:db8::10]:80" "$(logq path=/d2 --field dialed)"

for n in dnsevil dnsmixed dnsmeta dnsv6evil dnsmixed6 dnsmapped; do
	out=$(get "$n.test" "dd-$n")
	expect_refusal "DNS answer in a denied range ($n.test) refused" "$out" 403 denied-ip
done
expect_none "no denied DNS answer reached an origin" inet 'line~/dd-'
expect_none "... no connection to 10.20.0.5" inet ev=accept 'local~10.20.0.5'
expect_none "... nor to 169.254.169.254" inet ev=accept 'local~169.254'

out=$(get nosuch.test nx)
expect_refusal "NXDOMAIN refused" "$out" 502 dns-failed
out=$(get servfail.test sf)
expect_refusal "SERVFAIL refused" "$out" 502 dns-failed

# --- rebinding: first answer good, every later one private, TTL 0
out=$(get rebind.test rb1)
expect_eq "rebinding name: first request uses its first (good) answer" 200 "$(meta_status "$out")"
expect_eq "... one A lookup for that request" 1 "$(jq_ "$DNSLOG" name=rebind.test type=1)"
wait_log 2 path=/rb1
expect_eq "... dialed the checked address" "203.0.113.10:80" "$(logq path=/rb1 --field dialed)"
out=$(get rebind.test rb2)
expect_re "rebinding name: a later request is refused or still dials a checked address" '^(403|200)$' "$(meta_status "$out")"
expect_none "the rebinding target 10.20.0.5 never saw a connection" inet ev=accept 'local~10.20.0.5'
wait_log 2 path=/rb2
expect_re "... and the log shows no private address dialed" '^(null|203\.0\.113\.10:80)$' "$(logq path=/rb2 --field dialed)"

# --- without the nameserver directive: the namespace's resolv.conf
lab_stop_proxy
printf 'nameserver 127.0.0.53\n' >"/etc/netns/$HNS/resolv.conf"
lab_start_proxy "${grants[@]}"
out=$(get dnsgood.test rc1)
expect_eq "without a nameserver directive the namespace's resolv.conf is used" 200 "$(meta_status "$out")"
out=$(get dnsevil.test rc2)
expect_refusal "... and its answers are checked" "$out" 403 denied-ip
lab_done
