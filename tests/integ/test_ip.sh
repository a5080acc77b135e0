#!/bin/bash
# Destination IPs: literal spellings canonicalised, zone ids refused, every
# denied range refused after resolution (and the origin there sees nothing),
# allow-private exceptions, DNS failure.
source "$(dirname "$0")/lab.sh"
lab_up

DENIED_NAMES="evil10 evil192 evil100 meta evil172 evil198 evil192z mcast classe zero loop loop9 own loop6 evil6 ll6 mapped compat nat64 sixto4 teredo mixed"
grants=("allow 127.0.0.1" "allow [::1]" "allow 10.20.0.5" "allow 169.254.169.254" "allow 203.0.113.10"
	"allow [2001:db8::10]" "allow 0.0.0.0" "allow good.test" "allow nosuch.test" "allow evil10b.test"
	"allow 127.9.9.9" "allow 192.168.7.7" "allow 100.64.1.1" "allow 172.16.3.3" "allow 198.18.0.9"
	"allow 192.0.0.170" "allow [fd00::5]" "allow 127.0.0.1:3128" "allow own.test:3128")
for n in $DENIED_NAMES; do grants+=("allow $n.test"); done
lab_start_proxy "${grants[@]}"

# lit SPELLING PATH: a GET whose target and Host both use SPELLING.
lit() { raw "GET http://$1/$2 HTTP/1.1\\r\\nHost: $1\\r\\n\\r\\n" --timeout 5; }

LOOP_SPELLINGS="127.1 0x7f.1 2130706433 017700000001 0177.0.0.1 0x7f000001 127.0.1 127.000.000.001 [::1] [0:0:0:0:0:0:0:1] [::ffff:127.0.0.1] [::ffff:7f00:1] 127.9.9.9 0 0.0.0.0"
INET_SPELLINGS="10.20.0.5 0xa.0x14.0.5 10.20.5 169082885 012.024.0.05 0xa140005 [::ffff:10.20.0.5] [::ffff:a14:5] 0251.0376.0251.0376 2852039166 192.168.7.7 100.64.1.1 172.16.3.3 198.18.0.9 192.0.0.170 [fd00::5] [FD00:0::5]"

spellings_round() {
	local mode=$1 i=0 sp out
	for sp in $LOOP_SPELLINGS; do
		i=$((i + 1))
		out=$(lit "$sp" "lit-$mode-$i")
		expect_refusal "$mode: IP literal $sp refused" "$out" 403 'denied-ip|own-address'
	done
	for sp in $INET_SPELLINGS; do
		i=$((i + 1))
		out=$(lit "$sp" "lit-$mode-$i")
		expect_refusal "$mode: IP literal $sp refused" "$out" 403 denied-ip
	done
	expect_none "$mode: no literal spelling reached an origin in inet" inet "line~/lit-$mode-"
	expect_none "$mode: no literal spelling reached a listener in the proxy's namespace" local ev=accept
}
spellings_round enforce
wait_log 2 'path~/lit-enforce-1'
expect_re "denied literal logged with canonical host and reason denied-ip/own-address, nothing dialed" '^127\.0\.0\.1 (denied-ip|own-address) null$' \
	"$(logq path=/lit-enforce-1 --field host) $(logq path=/lit-enforce-1 --field reason) $(logq path=/lit-enforce-1 --field dialed)"

# --- allowed literals in unusual spellings
out=$(lit 0xcb.0.0x71.0xa litok1)
expect_eq "hex spelling of a granted documentation address allowed" 200 "$(meta_status "$out")"
expect_re "... and it reached 203.0.113.10" 'hello from 203\.0\.113\.10:80' "$out"
wait_log 2 path=/litok1
expect_eq "log row names the canonical host and the dialed address" "203.0.113.10 203.0.113.10:80" \
	"$(logq path=/litok1 --field host) $(logq path=/litok1 --field dialed)"
out=$(lit '[2001:DB8:0::10]' litok2)
expect_eq "non-canonical IPv6 literal of a granted address allowed" 200 "$(meta_status "$out")"
expect_re "... and it reached [2001:db8::10]" 'hello from \[2001:db8::10\]:80' "$out"

# --- zone ids
out=$(raw 'GET http://[fe80::1%25eth0]/zone1 HTTP/1.1\r\nHost: [fe80::1%25eth0]\r\n\r\n')
expect_refusal "IPv6 zone id (%25eth0) in target refused" "$out" 400 ""
out=$(raw 'GET http://[fe80::1%eth0]/zone2 HTTP/1.1\r\nHost: [fe80::1%eth0]\r\n\r\n')
expect_refusal "IPv6 zone id (raw %eth0) in target refused" "$out" 400 ""
out=$(raw 'CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\nHost: [fe80::1%25eth0]:443\r\n\r\n')
expect_refusal "IPv6 zone id in CONNECT refused" "$out" 400 ""

# --- requests aimed at the proxy itself
out=$(raw 'GET http://127.0.0.1:3128/self1 HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n' --timeout 5)
expect_refusal "GET to the proxy's own listen address refused" "$out" 403 'own-address|denied-ip'
out=$(raw 'CONNECT 127.0.0.1:3128 HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n' --timeout 5)
expect_refusal "CONNECT to the proxy's own listen address refused" "$out" 403 'own-address|denied-ip'
out=$(raw 'CONNECT own.test:3128 HTTP/1.1\r\nHost: own.test:3128\r\n\r\n' --timeout 5)
expect_refusal "CONNECT to a name for the proxy's own veth address refused" "$out" 403 'own-address|denied-ip'

# --- names resolving into denied ranges
for n in $DENIED_NAMES; do
	out=$(raw "GET http://$n.test/dn-$n HTTP/1.1\\r\\nHost: $n.test\\r\\n\\r\\n" --timeout 5)
	if [ "$n" = own ]; then
		expect_refusal "name resolving to the proxy's own address 192.0.2.1 ($n.test) refused" "$out" 403 'own-address|denied-ip'
	elif [[ $n == loop* || $n == zero ]]; then
		expect_refusal "name resolving to loopback/this host ($n.test) refused" "$out" 403 'own-address|denied-ip'
	else
		expect_refusal "name resolving into a denied range ($n.test) refused" "$out" 403 denied-ip
	fi
done
out=$(raw 'CONNECT meta.test:443 HTTP/1.1\r\nHost: meta.test:443\r\n\r\n')
expect_refusal "CONNECT to a name resolving to 169.254.169.254 refused" "$out" 403 denied-ip
expect_none "denied names: no request reached any inet origin" inet 'line~/dn-'
for a in 10.20.0.5 192.168.7.7 100.64.1.1 169.254.169.254 172.16.3.3 198.18.0.9 192.0.0.170 '[fd00::5]' 203.0.113.20; do
	expect_none "origin at $a never saw a connection" inet ev=accept "local~$a:"
done
expect_none "nothing connected to the proxy's own namespace (loopback, own address)" local ev=accept
wait_log 2 path=/dn-meta
expect_eq "denied-ip row: status 403, decision refuse, dialed null" "403 refuse null" \
	"$(logq path=/dn-meta --field status) $(logq path=/dn-meta --field decision) $(logq path=/dn-meta --field dialed)"

# --- DNS failure: refuse, fast, explained
t0=$(now)
out=$(raw 'GET http://nosuch.test/dns1 HTTP/1.1\r\nHost: nosuch.test\r\n\r\n' --timeout 8)
expect_refusal "unresolvable name refused" "$out" 502 dns-failed
expect_lt "DNS failure answered within 3 s" 3 "$(elapsed "$t0")"
wait_log 2 path=/dns1
expect_eq "DNS failure logged with reason dns-failed" "dns-failed" "$(logq path=/dns1 --field reason)"

# --- the good name still goes through, and its resolved address is dialed
expect_eq "a granted name resolving to a documentation address allowed" 200 "$(pcode http://good.test/ok1)"

# --- allow-private: an exception names a host and a range
lab_stop_proxy
lab_start_proxy "${grants[@]}" "allow-private evil10.test 10.20.0.0/16" "allow-private evil192.test 10.0.0.0/8"
out=$(raw 'GET http://evil10.test/ap1 HTTP/1.1\r\nHost: evil10.test\r\n\r\n')
expect_eq "allow-private evil10.test 10.20.0.0/16 lets evil10.test through" 200 "$(meta_status "$out")"
expect_re "... to the origin at 10.20.0.5" 'hello from 10\.20\.0\.5:80' "$out"
wait_log 2 path=/ap1
expect_eq "... and the log shows dialed 10.20.0.5:80" "10.20.0.5:80" "$(logq path=/ap1 --field dialed)"
out=$(raw 'GET http://evil10b.test/ap2 HTTP/1.1\r\nHost: evil10b.test\r\n\r\n')
expect_refusal "the exception does not cover another name with the same address" "$out" 403 denied-ip
out=$(lit 10.20.0.5 ap3)
expect_refusal "the exception does not cover the IP literal" "$out" 403 denied-ip
out=$(raw 'GET http://evil192.test/ap4 HTTP/1.1\r\nHost: evil192.test\r\n\r\n')
expect_refusal "an exception for the wrong range does not help" "$out" 403 denied-ip
expect_eq "only the excepted request reached a private origin" "1 0 0 0" \
	"$(inetq 'line~/ap1') $(inetq 'line~/ap2') $(inetq 'line~/ap3') $(inetq 'line~/ap4')"

# --- observe mode: the IP checks stay enforced, for every spelling
lab_stop_proxy
: >"$LAB_DIR/local.jsonl"
lab_start_proxy "mode observe"
spellings_round observe
for n in evil10 meta evil6 mapped mixed; do
	out=$(raw "GET http://$n.test/obsdn-$n HTTP/1.1\\r\\nHost: $n.test\\r\\n\\r\\n" --timeout 5)
	expect_refusal "observe: ungranted name resolving into a denied range ($n.test) refused" "$out" 403 denied-ip
done
expect_none "observe: denied names reached no origin in inet" inet 'line~/obsdn-'
expect_none "... nor a listener in the proxy's namespace" local ev=accept

lab_done
