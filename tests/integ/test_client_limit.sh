#!/bin/bash
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

# --- the directive is checked
printf 'max-connections-per-client 0\n' >"$LAB_DIR/bad.conf"
out=$(sl check "$LAB_DIR/bad.conf" 2>&1)
expect_re "max-connections-per-client 0 is refused by sluice check" 'max-connections-per-client: 0 out of range' "$out"
lab_done
