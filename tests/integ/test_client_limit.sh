#!/bin/bash
# integ: alone (30 refusals and another client's request each answered under 1 s)
# One client cannot starve the others (issue 10, hole 15): connections are
# capped per client (max-connections-per-client, default a sixteenth of
# max-connections), counted by the peer address until a stamp names the
# principal, then by the principal. Past the cap that client's new
# connection gets 503 client-limit and a row; other clients are served.
source "$(dirname "$0")/lab.sh"
lab_up
CONNECT_HEAD='CONNECT good.test:80 HTTP/1.1\r\nHost: good.test:80\r\n\r\n'
hold() { hx "$PY" "$INTEG_DIR/hold.py" "$@"; }
held() { wait_until 20 grep -q '^holding' "$1"; }
idle_rows_at_least() { [ "$(logq reason=client-limit-idle)" -ge "$1" ]; }

# --- the default cap: max-connections 32, so 2 per client
lab_start_proxy "max-connections 32" "head-timeout 30" "allow good.test" "allow good.test:80"
hold --until "$LAB_DIR/release1" --max 40 32 "$CONNECT_HEAD" >"$LAB_DIR/hold1.out" 2>&1 &
hpid=$!
held "$LAB_DIR/hold1.out" || not_ok "hold.py opened its connections" "$(cat "$LAB_DIR/hold1.out")"
expect_eq "one client's first two CONNECTs are tunnelled (a sixteenth of max-connections 32)" 2 \
	"$(grep -c '^[0-9]* 200 ' "$LAB_DIR/hold1.out")"
expect_eq "its other 30 get 503 at once" 30 "$(grep -Ec '^[0-9]+ 503 0\.' "$LAB_DIR/hold1.out")"
t0=$(now)
body=$(hx curl -sS --max-time 5 --interface 127.0.0.2 -x "$PROXY_URL" http://good.test/other 2>&1)
el=$(elapsed "$t0")
expect_eq "another client (127.0.0.2) is served while the first holds its cap" "hello from 203.0.113.10:80" "$body"
expect_lt "and at once ($el s)" 1.0 "$el"
out=$(raw "$CONNECT_HEAD" --timeout 5)
expect_refusal "the first client's next connection is refused" "$out" 503 client-limit 'max-connections-per-client 2'
wait_log 2 reason=client-limit
expect_re "the refusal's row: status 503, reason client-limit, the client's address" \
	'"client": "127\.0\.0\.1:[0-9]+".*"status": 503.*"decision": "refuse".*"reason": "client-limit"' \
	"$(logq reason=client-limit --json)"
touch "$LAB_DIR/release1"
wait "$hpid"
if wait_until 3 test "$(pcode http://good.test/freed)" = 200; then ok "its slots are usable again once it lets go"; else not_ok "its slots are usable again once it lets go" "$(pcode http://good.test/freed)"; fi
lab_stop_proxy

# --- by principal once stamped: two principals behind one address
lab_start_stamped_proxy "max-connections 64" "max-connections-per-client 3" "head-timeout 30" "allow good.test" "allow good.test:80"
P1="$STATE/stamp.key 10.88.0.7 podman 00112233445566a1"
hold --until "$LAB_DIR/release2" --max 40 --stamp $P1 1 - 4 "$CONNECT_HEAD" >"$LAB_DIR/hold2.out" 2>&1 &
hpid=$!
held "$LAB_DIR/hold2.out" || not_ok "hold.py opened its stamped connections" "$(cat "$LAB_DIR/hold2.out")"
expect_eq "principal 10.88.0.7@podman: three stamped CONNECTs tunnelled, the fourth 503" "200 200 200 503" \
	"$(awk '/^[0-9]/{printf "%s%s", s, $2; s=" "}' "$LAB_DIR/hold2.out")"
wait_log 2 reason=client-limit who=10.88.0.7@podman
expect_eq "the fourth's row names the principal and client-limit" 1 "$(logq reason=client-limit who=10.88.0.7@podman)"
st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" 10.88.0.8 podman 00112233445566a2 1)
out=$(raw 'GET http://good.test/p2 HTTP/1.1\r\nHost: good.test\r\nSluice-Stamp: '"$st"'\r\n\r\n' --timeout 5)
expect_eq "principal 10.88.0.8@podman from the same address is served" 200 "$(meta_status "$out")"
out=$(raw 'GET http://good.test/unstamped HTTP/1.1\r\nHost: good.test\r\n\r\n' --timeout 5)
expect_eq "an unstamped connection from that address is served: stamped ones no longer count against it" 200 "$(meta_status "$out")"
touch "$LAB_DIR/release2"
wait "$hpid"

# --- idle connections make room: 1000 that sent nothing do not lock their client out
lab_stop_proxy
refused_before=$(logq reason=client-limit)
lab_start_proxy "max-connections 4096" "max-connections-per-client 100" "head-timeout 60" \
	"idle-timeout 60" "allow good.test"
hold --idle --until "$LAB_DIR/release3" --max 90 1000 "" >"$LAB_DIR/hold3.out" 2>&1 &
hpid=$!
held "$LAB_DIR/hold3.out" || not_ok "hold.py opened its 1000 idle connections" "$(tail -3 "$LAB_DIR/hold3.out")"
t0=$(now)
code=$(pcode http://good.test/after-idle)
el=$(elapsed "$t0")
expect_eq "a client holding 1000 idle connections (cap 100) is served its next real request" 200 "$code"
expect_lt "... at once ($el s)" 1.0 "$el"
expect_eq "... the origin saw it (and was up, recording)" 1 "$(inetq ev=req 'line~/after-idle')"
wait_until 5 idle_rows_at_least 901
expect_eq "each connection past the cap closed that client's oldest idle one, with a row: 901" 901 \
	"$(logq reason=client-limit-idle)"
expect_re "... its row: refuse, client-limit-idle, the client, why" \
	'"client": "127\.0\.0\.1:[0-9]+".*"decision": "refuse".*"reason": "client-limit-idle".*"detail": "closed while idle' \
	"$(logq reason=client-limit-idle --json)"
expect_eq "... and none was refused" 0 "$(($(logq reason=client-limit) - refused_before))"
touch "$LAB_DIR/release3"
wait "$hpid"
expect_eq "the client kept its newest 99 (the request took the 100th slot), the older 901 were closed" \
	"open 99 closed 901" "$(grep '^open' "$LAB_DIR/hold3.out")"

# --- a connection part-way through a head is not idle: at the cap, the next one is refused
lab_stop_proxy
lab_start_proxy "max-connections 4096" "max-connections-per-client 2" "head-timeout 30" "allow good.test"
idle_before=$(logq reason=client-limit-idle)
hold --src 127.0.0.3 --until "$LAB_DIR/release5" --max 40 2 'GET http://good.test/half HTTP/1.1\r\nHost: goo' \
	>"$LAB_DIR/hold5.out" 2>&1 &
hpid=$!
held "$LAB_DIR/hold5.out" || not_ok "hold.py sent two half heads" "$(cat "$LAB_DIR/hold5.out")"
out=$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 127.0.0.3 -x "$PROXY_URL" http://good.test/busy)
expect_eq "a client whose 2 connections (its cap) are each part-way through a head: its next is refused 503" 503 "$out"
expect_eq "... and neither of those was closed for it" 0 "$(($(logq reason=client-limit-idle) - idle_before))"
touch "$LAB_DIR/release5"
wait "$hpid"
expect_eq "... both still open when it let go" "open 2 closed 0" "$(grep '^open' "$LAB_DIR/hold5.out")"

# --- two runs' forwarders and the host's own client: none closes another's idle connections
FA=$((PROXY_PORT + 7)) FB=$((PROXY_PORT + 8))
for n in a b; do
	p=$FA
	[ $n = b ] && p=$FB
	hx "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net "run-$n" "127.0.0.1:$p=127.0.0.1:$PROXY_PORT" \
		2>"$LAB_DIR/forward-$n.err" &
	LAB_PIDS+=($!)
	wait_until 5 hx bash -c "</dev/tcp/127.0.0.1/$p" || lab_bail "sluice-forward run-$n listens" "$(cat "$LAB_DIR/forward-$n.err")"
done
lab_stop_proxy
lab_start_proxy "max-connections 4096" "max-connections-per-client 4" "head-timeout 60" \
	"idle-timeout 60" "allow good.test"
KA='GET http://good.test/ka HTTP/1.1\r\nHost: good.test\r\n\r\n'
base_idle=$(logq reason=client-limit-idle) base_refused=$(logq reason=client-limit)
hold --idle --until "$LAB_DIR/release4" --max 60 4 "" >"$LAB_DIR/hold-host.out" 2>&1 &
p1=$!
held "$LAB_DIR/hold-host.out" || not_ok "the host's client holds its 4 idle connections" "$(cat "$LAB_DIR/hold-host.out")"
hold --port "$FB" --until "$LAB_DIR/release4" --max 60 2 "$KA" >"$LAB_DIR/hold-b.out" 2>&1 &
p2=$!
held "$LAB_DIR/hold-b.out" || not_ok "run B holds 2 kept-alive idle connections" "$(cat "$LAB_DIR/hold-b.out")"
hold --port "$FA" --until "$LAB_DIR/release4" --max 60 6 "$KA" >"$LAB_DIR/hold-a.out" 2>&1 &
p3=$!
held "$LAB_DIR/hold-a.out" || not_ok "run A opens 6 kept-alive connections" "$(cat "$LAB_DIR/hold-a.out")"
expect_eq "run A (cap 4): all 6 requests served, each past the cap closing A's oldest idle one" \
	"200 200 200 200 200 200" "$(awk '/^[0-9]/{printf "%s%s", s, $2; s=" "}' "$LAB_DIR/hold-a.out")"
expect_eq "run B's first two were served" "200 200" "$(awk '/^[0-9]/{printf "%s%s", s, $2; s=" "}' "$LAB_DIR/hold-b.out")"
wait_until 5 idle_rows_at_least $((base_idle + 2))
expect_eq "two idle connections were closed, both run A's" "2 2" \
	"$(($(logq reason=client-limit-idle) - base_idle)) $(logq reason=client-limit-idle who=127.0.0.1@run-a)"
touch "$LAB_DIR/release4"
wait "$p1" "$p2" "$p3"
expect_eq "the host's own client kept its 4 idle connections" "open 4 closed 0" "$(grep '^open' "$LAB_DIR/hold-host.out")"
expect_eq "run B kept both of its own" "open 2 closed 0" "$(grep '^open' "$LAB_DIR/hold-b.out")"
expect_eq "run A kept its newest 4" "open 4 closed 2" "$(grep '^open' "$LAB_DIR/hold-a.out")"
expect_eq "no one was refused" 0 "$(($(logq reason=client-limit) - base_refused))"
from_a=$(sed -n 's/.*a loopback upstream dialled from \([0-9.]*\)$/\1/p' "$LAB_DIR/forward-a.err")
from_b=$(sed -n 's/.*a loopback upstream dialled from \([0-9.]*\)$/\1/p' "$LAB_DIR/forward-b.err")
expect_re "each forwarder dials the proxy from a loopback address of its own, not 127.0.x.x" \
	'^127\.[1-9][0-9]*\.[0-9]+\.[0-9]+ 127\.[1-9][0-9]*\.[0-9]+\.[0-9]+$' "$from_a $from_b"
expect_eq "... and run A's rows name its address as the client" "$from_a" \
	"$(logq who=127.0.0.1@run-a --field client | sed 's/:[0-9]*$//')"

# --- the directive is checked
printf 'max-connections-per-client 0\n' >"$LAB_DIR/bad.conf"
out=$(sl check "$LAB_DIR/bad.conf" 2>&1)
expect_re "max-connections-per-client 0 is refused by sluice check" 'max-connections-per-client: 0 out of range' "$out"
lab_done
