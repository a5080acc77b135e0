#!/bin/bash
# A reload re-judges every address a connection could still dial, not only
# the one in use (issue 10, hole 6). multi.test resolves to a public-looking
# address (first) and a private one (second) that an allow-private exception
# covers. A keep-alive client is served by first; the exception is removed
# by a reload; first then drops the kept upstream under the next request and
# stops listening. Without the re-judgement the proxy's replay falls back to
# the private address, which the new policy denies.
source "$(dirname "$0")/lab.sh"
lab_up
lab_multi_origin

lab_start_proxy "allow multi.test:8181" "allow-private multi.test 10.20.0.0/16"

# one client connection, two requests; the second waits for $LAB_DIR/go
hx "$PY" "$INTEG_DIR/keepalive2.py" multi.test:8181 "$LAB_DIR/go" >"$LAB_DIR/client.out" 2>&1 &
cpid=$!
wait_until 5 grep -q '^one:' "$LAB_DIR/client.out"
expect_re "the first request is served by the first address" '^one: HTTP/1.1 200 .* first$' "$(grep '^one:' "$LAB_DIR/client.out")"
expect_eq "the first origin recorded it" 1 "$(recq ev=req origin=first 'line~/one')"

# narrow: drop the exception, reload, then let the client send its second request
sed -i '/^allow-private /d' "$CONF"
kill -HUP "$PROXY_PID"
if wait_until 5 grep -q 'reload' "$LAB_DIR/proxy.err"; then ok "the proxy reloaded"; else not_ok "the proxy reloaded" "$(tail -3 "$LAB_DIR/proxy.err")"; fi
touch "$LAB_DIR/go"
wait "$cpid"
two=$(grep '^two:' "$LAB_DIR/client.out")
expect_re "the second request is refused (the kept upstream was dropped at the reload, the new resolution judged)" "^two: HTTP/1.1 403 " "$two"
expect_eq "the private address the new policy denies was never dialed" 0 "$(recq ev=accept origin=second)"
out=$(raw 'GET http://multi.test:8181/three HTTP/1.1\r\nHost: multi.test:8181\r\n\r\n' --timeout 5)
expect_refusal "a new request is refused: one answer is in a denied range" "$out" 403 denied-ip
lab_done
