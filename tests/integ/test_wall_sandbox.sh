#!/bin/bash
# The sandbox uid wall with real rules, in the lab's host namespace only
# (--netns): uid nobody and its subuids cannot reach an origin directly (TCP
# reset at once, UDP 443 and DNS refused) while root still can, and nobody
# still reaches the proxy on 192.0.2.1:3128 (inside the wall's port band
# 3000-3199). Then `sluice verify`, run as nobody, proves it: 0 with the
# wall, 1 naming the direct TCP leak without it, 1 "timeout" for a target
# whose packets vanish, 2 with the proxy stopped.
source "$(dirname "$0")/lab.sh"
lab_up
command -v setpriv >/dev/null || lab_bail "setpriv (util-linux) is installed"
lab_start_proxy "allow good.test" "listen 192.0.2.1:3128"
wait_until 10 hx bash -c '</dev/tcp/192.0.2.1/3128' || lab_bail "sluice-proxy listens on 192.0.2.1:3128"

# The runner's snapshot dir is mode 0700: give nobody a copy it can execute.
mkdir -p "$LAB_DIR/bin"
cp "$SLUICE_BUILD/sluice" "$LAB_DIR/bin/sluice" || lab_bail "copy sluice for nobody"
chmod 755 "$LAB_DIR/bin" "$LAB_DIR/bin/sluice"
V=$LAB_DIR/bin/sluice
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
SUBUID=(setpriv --reuid=100005 --regid=100005 --clear-groups)
hx "${NOBODY[@]}" "$V" -h >/dev/null 2>&1 || lab_bail "nobody can execute $V"

printf 'nobody:100000:65536\n' >"$LAB_DIR/subuid"
chmod 644 "$LAB_DIR/subuid"
WALL=(sandbox --user nobody --subuid "$LAB_DIR/subuid" --gateway 127.0.0.1 --gateway 192.0.2.1
	--resolver 10.53.0.2 --port-base 3000 --log-group 9 --netns "/run/netns/$HNS")
# resolvers: the pinned one (10.53.0.2, in inet) and a public-looking one
ix ip addr add 10.53.0.2/32 dev lo && hx ip route add 10.53.0.2/32 via 192.0.2.2 ||
	lab_bail "the pinned resolver's address"
lab_bg "$INS" "$PY" "$INTEG_DIR/dns.py" --log "$LAB_DIR/dns-pinned.jsonl" 10.53.0.2 53
lab_bg "$INS" "$PY" "$INTEG_DIR/dns.py" --log "$LAB_DIR/dns-out.jsonl" 203.0.113.10 53
S="$SLUICE_BUILD/sluice -c $CONF"

# direct WHO...: curl http://203.0.113.10/ without the proxy; prints "EXIT SECONDS CODE"
direct() {
	local t0 code rc
	t0=$(now)
	code=$(hx "$@" curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://203.0.113.10/)
	rc=$?
	echo "$rc $(elapsed "$t0") $code"
}

# control before the wall: nobody goes straight out
set -- $(direct "${NOBODY[@]}")
expect_eq "without the wall nobody reaches the origin directly" "0 200" "$1 $3"

$S wall apply "${WALL[@]}" >"$LAB_DIR/wall.out" 2>&1 ||
	lab_bail "sluice wall apply sandbox --netns" "$(cat "$LAB_DIR/wall.out")"
expect_re "the sandbox table is in the host namespace" 'table inet sluice_sandbox_3000' \
	"$(hx nft list tables)"
lab_denied_start "$HNS" 9

set -- $(direct "${NOBODY[@]}")
expect_eq "nobody: direct curl is refused (curl exit 7)" 7 "$1"
expect_lt "... at once" 1 "$2"
set -- $(direct)
expect_eq "root (not walled) still reaches the origin" "0 200" "$1 $3"
set -- $(direct "${SUBUID[@]}")
expect_eq "subuid 100005: direct curl is refused (curl exit 7)" 7 "$1"
expect_lt "... at once" 1 "$2"

code=$(hx "${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
	-x http://192.0.2.1:3128 http://good.test/)
expect_eq "nobody: through the proxy on 192.0.2.1:3128, good.test answers 200" 200 "$code"
code=$(hx "${SUBUID[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
	-x http://192.0.2.1:3128 http://good.test/)
expect_eq "subuid 100005: through the proxy too" 200 "$code"

expect_re "nobody: UDP 443 is refused" '^refused ' "$(udp_probe hx "${NOBODY[@]}" -- 203.0.113.10 443 quic)"
expect_re "nobody: DNS over UDP to 203.0.113.10:53 is refused" '^refused ' \
	"$(udp_probe hx "${NOBODY[@]}" -- 203.0.113.10 53 dns)"
expect_eq "... which answers root (control)" answered \
	"$(udp_probe hx -- 203.0.113.10 53 dns)"
expect_eq "nobody: DNS to the pinned resolver 10.53.0.2 is answered" answered \
	"$(udp_probe hx "${NOBODY[@]}" -- 10.53.0.2 53 dns)"
t0=$(now)
hx "${NOBODY[@]}" timeout 3 bash -c '</dev/tcp/203.0.113.10/53' 2>/dev/null
rc=$?
expect_eq "nobody: DNS over TCP to 203.0.113.10:53 is refused" 1 "$rc"
expect_lt "... at once" 1 "$(elapsed "$t0")"

# conntrack does not know whose socket sent a packet: a flow root opened
# (and got a reply on) must not carry nobody's datagrams from the same port
lab_bg "$INS" "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("203.0.113.10", 9999))
with open(sys.argv[1], "ab", buffering=0) as log:
    while True:
        d, a = s.recvfrom(512)
        log.write(d + b"\n")
        s.sendto(d, a)
' "$LAB_DIR/udp-echo.log"
wait_until 5 test -e "$LAB_DIR/udp-echo.log" || sleep 0.5
expect_eq "root's UDP flow from port 5555 to the echo is answered (control)" answered \
	"$(udp_probe hx -- 203.0.113.10 9999 ROOT 5555)"
expect_re "nobody reusing that flow's port and peer is refused" '^refused ' \
	"$(udp_probe hx "${NOBODY[@]}" -- 203.0.113.10 9999 LEAK 5555)"
expect_eq "... and the echo never saw its datagram" "ROOT" "$(tr '\n' ' ' <"$LAB_DIR/udp-echo.log" | sed 's/ $//')"

d=$(lab_denied_stop)
expect_re "the refusal of nobody's direct curl is logged, with its uid" \
	'"profile":"sandbox","reason":"egress","uid":65534,"proto":"tcp",.*"dst":"203.0.113.10","dport":80' "$d"
expect_re "... and of subuid 100005's" '"reason":"egress","uid":100005,"proto":"tcp",.*"dport":80' "$d"
expect_re "... and of UDP 443" '"reason":"quic","uid":65534,"proto":"udp",.*"dport":443' "$d"
expect_re "... and of DNS to a public-looking address" '"reason":"dns","uid":65534,"proto":"udp",.*"dport":53' "$d"
expect_not_re "... and none of root's" '"uid":0,' "$d"

# sluice verify, as nobody, with the wall
out=$(hx "${NOBODY[@]}" "$V" verify --proxy 192.0.2.1:3128 --target 203.0.113.10 --target6 2001:db8::10 \
	--json 2>"$LAB_DIR/verify.err")
rc=$?
expect_eq "verify as nobody with the wall exits 0" 0 "$rc"
expect_re "... verdict pass" '"verdict":"pass"' "$out"
expect_re "... the control answered" '"name":"proxy","target":"192.0.2.1:3128","result":"answered"' "$out"
expect_not_re "... every probe refused" '"result":"(open|timeout|error)"' "$out"
expect_re "... including IPv6" '"name":"tcp6","target":"\[2001:db8::10\]:443","result":"refused"' "$out"
expect_eq "... and nothing on stderr" "" "$(cat "$LAB_DIR/verify.err")"
out=$(hx "${SUBUID[@]}" "$V" verify --proxy 192.0.2.1:3128 --target 203.0.113.10 2>&1)
expect_eq "verify as subuid 100005 exits 0" 0 "$?"
hx "${NOBODY[@]}" "$V" verify --proxy 192.0.2.1:3128 --target 203.0.113.10 \
	--proxy-direct 192.0.2.1:3128 >/dev/null 2>"$LAB_DIR/verify.err"
rc=$?
expect_eq "verify --proxy-direct on a port the wall opens exits 1" 1 "$rc"
expect_re "... naming it" 'leak: proxy-direct 192.0.2.1:3128: open' "$(cat "$LAB_DIR/verify.err")"
out=$(hx "$V" verify --proxy 192.0.2.1:3128 --target 203.0.113.10 2>&1)
expect_eq "verify as root (outside the wall) exits 1" 1 "$?"

$S wall remove sandbox --port-base 3000 --netns "/run/netns/$HNS" >"$LAB_DIR/wall.out" 2>&1 ||
	not_ok "sluice wall remove sandbox --netns" "$(cat "$LAB_DIR/wall.out")"
expect_not_re "the sandbox table is gone" 'sluice_sandbox_3000' "$(hx nft list tables)"
out=$(hx "${NOBODY[@]}" "$V" verify --proxy 192.0.2.1:3128 --target 203.0.113.10 --json 2>"$LAB_DIR/verify.err")
rc=$?
expect_eq "verify as nobody after wall remove exits 1" 1 "$rc"
expect_re "... naming the direct TCP leak on stderr" 'leak: tcp443 203\.0\.113\.10:443: open' \
	"$(cat "$LAB_DIR/verify.err")"
expect_re "... and port 80" 'leak: tcp80 203\.0\.113\.10:80: open' "$(cat "$LAB_DIR/verify.err")"
expect_re "... and in JSON" '"verdict":"leak".*"name":"tcp443","target":"203.0.113.10:443","result":"open"' "$out"

# a target whose packets vanish: probes time out, "blocked silently", not "refused"
out=$(hx "${NOBODY[@]}" "$V" verify --proxy 192.0.2.1:3128 --target 203.0.113.99 --timeout-ms 300 \
	--json 2>"$LAB_DIR/verify.err")
rc=$?
expect_eq "verify against a black hole exits 1" 1 "$rc"
expect_re "... tcp443 is a timeout, not refused" '"name":"tcp443","target":"203.0.113.99:443","result":"timeout"' "$out"
expect_re "... and says blocked silently" 'tcp443 203\.0\.113\.99:443: blocked silently' "$(cat "$LAB_DIR/verify.err")"

$S wall apply "${WALL[@]}" >"$LAB_DIR/wall.out" 2>&1 || not_ok "wall apply again" "$(cat "$LAB_DIR/wall.out")"
lab_stop_proxy
out=$(hx "${NOBODY[@]}" "$V" verify --proxy 192.0.2.1:3128 --target 203.0.113.10 --json 2>"$LAB_DIR/verify.err")
rc=$?
expect_eq "verify with the proxy stopped exits 2" 2 "$rc"
expect_re "... verdict unproven" '"verdict":"unproven"' "$out"
expect_re "... and says why" 'unproven: proxy 192\.0\.2\.1:3128 did not answer' "$(cat "$LAB_DIR/verify.err")"
out=$(hx "${NOBODY[@]}" "$V" verify --proxy 192.0.2.1:3128 --target not-an-ip 2>&1)
expect_eq "verify with a bad --target is a usage error" 2 "$?"
lab_done
