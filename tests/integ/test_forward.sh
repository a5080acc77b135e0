#!/bin/bash
# integ: alone (a re-dial must land between 4.4 and 6.5 s, against a background sleep 4.5)
# sluice-forward in front of sluice-proxy (same namespace for now; the vm
# namespace lab with containers is issue 3's): it stamps every connection
# with the client's address, strips every stamp a client wrote, refuses a
# non-canonical first head, resets the client when the origin closed first,
# and when it is dead clients are refused at once, never sent unstamped.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_stamped_proxy "allow good.test" "allow good.test:9002"
FWD_PORT=3129
FWD_URL=http://127.0.0.1:$FWD_PORT
ip netns exec "$HNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net lab \
	"127.0.0.1:$FWD_PORT=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward.err" 2>&1 &
FPID=$!
LAB_PIDS+=($FPID)
wait_until 5 hx bash -c "</dev/tcp/127.0.0.1/$FWD_PORT" || lab_bail "sluice-forward did not start" "$(cat "$LAB_DIR/forward.err")"

fcurl() { hx curl -sS --max-time 10 -x "$FWD_URL" "$@"; }

out=$(fcurl -o /dev/null -w '%{http_code}' http://good.test/f1 2>&1)
expect_eq "a request through the forwarder is served" 200 "$out"
expect_eq "... and its row is attributed to the client's address and the forwarder's net" \
	"127.0.0.1@lab 127.0.0.1 lab" \
	"$(logq path=/f1 --field who) $(logq path=/f1 --field src) $(logq path=/f1 --field net)"
fcurl -o /dev/null http://good.test/f2
expect_eq "each connection gets the next sequence number" \
	"$(( $(logq path=/f1 --field seq) + 1 ))" "$(logq path=/f2 --field seq)"

# client-written stamps: several, odd case, one even well formed
fake="v=1; kid=1; src=10.9.9.9; net=evil; boot=0000000000000000; seq=1; mac=$(printf '0%.0s' $(seq 64))"
out=$(fcurl -H "Sluice-Stamp: $fake" -H "sluice-stamp: x" -H "SLUICE-STAMP: y" http://good.test/echo?f3)
expect_eq "forged stamps (three, odd case) do not reach the origin" 0 \
	"$(printf '%s' "$out" | grep -ci 'sluice-stamp')"
expect_eq "... and the row carries the forwarder's stamp, not a forged one" 127.0.0.1@lab \
	"$(logq 'path~f3' --field who)"

# a tunnel through the forwarder
out=$(fcurl -p -o /dev/null -w '%{http_code}' http://good.test:9002/ 2>&1; true)
wait_log 3 kind=tunnel port=9002
expect_eq "a CONNECT through the forwarder is attributed" 127.0.0.1@lab \
	"$(logq kind=tunnel port=9002 --field who)"

# a non-canonical first head never reaches the proxy
rows=$(logq)
out=$(hx "$PY" "$INTEG_DIR/raw.py" --addr 127.0.0.1 --port $FWD_PORT --meta \
	'get http://good.test/f4 HTTP/1.1\r\nHost: good.test\r\n\r\n')
expect_eq "a lower-case method is refused by the forwarder (400)" 400 "$(meta_status "$out")"
out=$(hx "$PY" "$INTEG_DIR/raw.py" --addr 127.0.0.1 --port $FWD_PORT --meta \
	'GET http://good.test/f5 HTTP/1.1\nHost: good.test\n\n')
expect_eq "bare LF line ends are refused by the forwarder (400)" 400 "$(meta_status "$out")"
out=$(hx "$PY" "$INTEG_DIR/raw.py" --addr 127.0.0.1 --port $FWD_PORT --meta \
	'GET http://good.test/f6 HTTP/1.1\r\nHost: good.test\r\nX-A: 1\r\n  folded\r\n\r\n')
expect_eq "obs-fold is refused by the forwarder (400)" 400 "$(meta_status "$out")"
sleep 0.3
expect_eq "... none of them reached the proxy (no new row)" "$rows" "$(logq)"
lab_proxy_control "... none of them reached the proxy (no new row)"

# the origin closes first: the client sees an RST, not a FIN
out=$(hx "$PY" "$INTEG_DIR/tunnel_end.py" 127.0.0.1 $FWD_PORT good.test:9002 2>&1)
expect_eq "origin closed first (it sent a banner and shut): the client got the banner, then an RST" \
	"rst True" "$out"

# an unanswered connect is re-dialled every 2 s: SYNs to the proxy dropped for
# 4.5 s (a rule in this test's own namespace). A fresh socket dialled at 4 s
# gets through by its own retransmission at about 5 s; one socket left to the
# kernel's SYN retransmissions (1, 3, 7 s) would need about 7 s.
hx nft -f - <<'NFT'
table inet slfwdtest {
	chain in {
		type filter hook input priority 0;
		tcp dport 3128 tcp flags & (syn | ack) == syn drop
	}
}
NFT
( sleep 4.5; hx nft delete table inet slfwdtest ) &
dropper=$!
t0=$(date +%s.%N)
code=$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 15 -x "$FWD_URL" http://good.test/redial 2>&1; true)
el=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')
wait "$dropper"
expect_eq "with the proxy's first SYNs dropped, the forwarder re-dials and the request is served" 200 "$code"
expect_ge "... not before the SYNs were let through (${el} s)" 4.4 "$el"
expect_lt "... sooner than the first socket's own retransmissions could (${el} s)" 6.5 "$el"
expect_eq "... attributed as usual" 127.0.0.1@lab "$(logq path=/redial --field who)"

# --netns: listening inside another namespace (a container's), dialling from its own
CNS=slctr$$
ip netns add "$CNS"
LAB_EXTRA_NS+=("$CNS")
ip -n "$CNS" link set lo up
ip -n "$CNS" addr add 10.88.0.1/32 dev lo
ip -n "$CNS" addr add 10.88.0.5/32 dev lo
ip netns exec "$HNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net podman \
	--netns "/run/netns/$CNS" "10.88.0.1:3128=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward2.err" 2>&1 &
LAB_PIDS+=($!)
wait_until 5 ip netns exec "$CNS" bash -c '</dev/tcp/10.88.0.1/3128' ||
	not_ok "sluice-forward listens inside --netns" "$(cat "$LAB_DIR/forward2.err")"
code=$(ip netns exec "$CNS" curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
	--interface 10.88.0.5 -x http://10.88.0.1:3128 http://good.test/ctr 2>&1; true)
expect_eq "a client in another namespace, through --netns, is served" 200 "$code"
expect_eq "... and attributed to its own address and the forwarder's net" "10.88.0.5@podman" \
	"$(logq path=/ctr --field who)"

# a dead forwarder: refused at once, nothing goes out unstamped
rows=$(logq)
kill "$FPID"
wait "$FPID" 2>/dev/null
t0=$(date +%s.%N)
code=$(hx curl -s -o /dev/null -w '%{http_code} %{exitcode}' --max-time 5 -x "$FWD_URL" http://good.test/f7 2>&1; true)
el=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')
expect_eq "with the forwarder dead the client is refused (connection refused)" "000 7" "$code"
expect_lt "... at once" 1.0 "$el"
expect_eq "... and nothing reached the proxy" "$rows" "$(logq)"
lab_proxy_control "... and nothing reached the proxy"
lab_done
