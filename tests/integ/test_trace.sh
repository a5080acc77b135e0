#!/bin/bash
# sluice-proxy -d: each connection's state transitions and passed deadlines,
# one line each on stderr, by the state names of proxy/state.c's table
# (what the state waits for, what its deadline means). Without -d nothing is
# traced.
source "$(dirname "$0")/lab.sh"
lab_up
LAB_PROXY_ARGS=-d lab_start_proxy "allow good.test" "allow good.test:9001" "head-timeout 1" \
	"response-timeout 1"

# trace_of CONN: the trace lines of one connection, "FROM -> TO" or "STATE: deadline"
trace_of() {
	sed -n "s/^sluice-proxy: trace: conn $1: \([a-z-]*\) -> \([a-z-]*\): .*/\1 -> \2/p;
		s/^sluice-proxy: trace: conn $1: \([a-z-]*\): deadline passed: .*/\1 deadline/p" \
		"$LAB_DIR/proxy.err" | paste -sd, -
}

code=$(pcurl -o /dev/null -w '%{http_code}' http://good.test/t1)
expect_eq "a plain request is served" 200 "$code"
wait_log 3 path=/t1
c=$(logq path=/t1 --field conn)
expect_eq "... and its connection's trace is head, resolve, connect, http, then head again" \
	"head -> resolve,resolve -> connect,connect -> http,http -> head" "$(trace_of "$c")"
expect_re "... each line says what the state waits for" \
	"conn $c: connect -> http: waits for request and response bytes" "$(cat "$LAB_DIR/proxy.err")"

code=$(pcurl -o /dev/null -w '%{http_code}' http://good.test:9001/silent)
expect_eq "an origin that never answers: 504" 504 "$code"
wait_log 3 port=9001
c=$(logq port=9001 --field conn)
expect_re "... the trace shows the http state's deadline passing, then the drain" \
	"connect -> http,http deadline,http -> drain" "$(trace_of "$c")"
expect_re "... saying what that deadline meant" \
	"conn $c: http: deadline passed: 504 upstream-timeout before a response" "$(cat "$LAB_DIR/proxy.err")"

# a head that never completes: the head state's deadline, a 408, the drain
out=$(raw 'GET http://good.test/part HTTP/1.1\r\nHost: good' --timeout 4 2>&1)
expect_re "half a head: 408 after head-timeout" "408" "$out"
wait_log 3 reason=head-timeout
c=$(logq reason=head-timeout --field conn)
expect_eq "... and its trace: the head deadline passed, then drain" "head deadline,head -> drain" \
	"$(trace_of "$c")"

# sluice-forward --trace: its connections' states likewise
lab_stop_proxy
LAB_PROXY_ARGS=-d lab_start_stamped_proxy "allow good.test"
ip netns exec "$HNS" "$SLUICE_BUILD/sluice-forward" --trace --key "$STATE/stamp.key" --net lab \
	"127.0.0.1:3129=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward.err" 2>&1 &
LAB_PIDS+=($!)
wait_until 5 hx bash -c "</dev/tcp/127.0.0.1/3129" ||
	lab_bail "sluice-forward did not start" "$(cat "$LAB_DIR/forward.err")"
code=$(hx curl -sS --max-time 10 -x http://127.0.0.1:3129 -o /dev/null -w '%{http_code}' http://good.test/f1)
expect_eq "a request through sluice-forward --trace is served" 200 "$code"
expect_re "... and the forwarder traced its connection from head straight to relay" \
	"sluice-forward: trace: 127.0.0.1: head -> relay: waits for bytes either way" \
	"$(cat "$LAB_DIR/forward.err")"

lab_stop_proxy
lab_start_proxy "allow good.test"
pcurl -o /dev/null http://good.test/t2
wait_log 3 path=/t2
expect_eq "without -d nothing is traced" 0 "$(grep -c 'trace:' "$LAB_DIR/proxy.err")"
lab_done
