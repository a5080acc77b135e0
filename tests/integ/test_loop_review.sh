#!/bin/bash
# What the hostile review of issue 14 found, each now holding against the
# real proxy and origins: a build token removed while a keep-alive
# connection it named stays open no longer serves that connection (it is
# closed, its row build-token); approving a build's refusal grants the
# build, not every connection; eight tunnels opened at once under one
# --max-up 1k get about 1 KiB to the origin between them, not 8 KiB. The
# second review: tunnels to a stalling origin spend what they take, not what
# has reached it; observe mode cuts nothing behind a CONNECT head.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy
url=$(sl build-token new --name t1 --proxy "$PROXY_ADDR:$PROXY_PORT" 2>/dev/null)
secret=${url#http://sluice-build:}
secret=${secret%@*}
auth="Basic $(printf 'sluice-build:%s' "$secret" | base64 -w0)"
sl allow add good.test --for build:t1 >/dev/null
# lens FILE: the bytes origin.py's halfclose records in FILE say it read, summed
lens() { "$PY" -c 'import json,sys; print(sum(json.loads(l).get("len",0) for l in open(sys.argv[1]) if "\"halfclose\"" in l))' "$1"; }
warm() { [ "$(hx curl -s -o /dev/null -w '%{http_code}' -x "$url" http://good.test/warm)" = 200 ]; }
wait_until 3 warm || not_ok "the proxy knows the token and grant within 3 s"
expect_eq "a fresh connection with the token: 200 (the control)" 200 \
	"$(hx curl -s -o /dev/null -w '%{http_code}' -x "$url" http://good.test/fresh)"

# a keep-alive connection across `build-token rm`
hx "$PY" "$INTEG_DIR/ka_steps.py" "$PROXY_ADDR" "$PROXY_PORT" "$auth" get:http://good.test/ka-1 \
	"wait:$LAB_DIR/removed" sleep:2.5 get:http://good.test/ka-2-after-rm >"$LAB_DIR/ka.out" 2>&1 &
kp=$!
sleep 1
sl build-token rm t1 >/dev/null
touch "$LAB_DIR/removed"
wait "$kp"
sed 's/^/# ka: /' "$LAB_DIR/ka.out"
expect_re "the keep-alive connection's first request, with the live token: 200" \
	"ka-1 -> HTTP/1.1 200" "$(cat "$LAB_DIR/ka.out")"
expect_not_re "... after build-token rm, the same connection gets no 200" \
	"after-rm -> HTTP/1.1 200" "$(cat "$LAB_DIR/ka.out")"
expect_none "... and its request never reached the origin" inet 'line~/ka-2-after-rm '
expect_eq "a fresh connection after rm: 407" 407 \
	"$(hx curl -s -o /dev/null -w '%{http_code}' -x "$url" http://good.test/fresh-after-rm)"

# approving a build's refusal grants that build
url2=$(sl build-token new --name t2 --proxy "$PROXY_ADDR:$PROXY_PORT" 2>/dev/null)
known() { [ "$(hx curl -s -o /dev/null -w '%{http_code}' -x "$url2" http://other.test/known)" != 407 ]; }
wait_until 3 known || not_ok "the proxy knows t2 within 3 s"
expect_eq "build t2 is refused other.test" 403 \
	"$(hx curl -s -o /dev/null -w '%{http_code}' -x "$url2" http://other.test/b2)"
id=$(logq path=/b2 --field refusal)
out=$(sl allow approve "$id" --yes 2>&1)
expect_re "approving its refusal grants other.test for build:t2" "added other\\.test for build:t2 once" "$out"
served() { [ "$(hx curl -s -o /dev/null -w '%{http_code}' -x "$url2" http://other.test/b3)" = 200 ]; }
if wait_until 3 served; then ok "... the build is served"; else not_ok "... the build is served"; fi
expect_eq "... an unattributed client still is not" 403 "$(pcode http://other.test/u-after)"

# eight tunnels at once under one max-up
sl allow add good.test:9000 --max-up 1k >/dev/null || not_ok "allow add good.test:9000 --max-up 1k"
tun_ok() { [ "$(hx curl -s -o /dev/null -w '%{http_code}' -p -x "$PROXY_URL" http://good.test:9000/ 2>/dev/null)" != 403 ]; }
wait_until 3 tun_ok
sl allow add good.test:9000 --max-up 1k >/dev/null # its counts start again
sleep 1.2
hx "$PY" "$INTEG_DIR/tunnels_at_once.py" "$PROXY_ADDR" "$PROXY_PORT" good.test:9000 8 1000 2>&1 | sed 's/^/# tun: /'
sleep 1
tot=$(lens "$LAB_DIR/halfclose.jsonl")
expect_ge "the origin recorded what the tunnels sent (the measurement works)" 1 "$tot"
expect_lt "8 tunnels at once under --max-up 1k: at most about 1 KiB reached the origin ($tot)" 1100 "$tot"
# twenty at once, each with 4000 bytes in the same write as its CONNECT head
sl allow add good.test:9000 --max-up 1k >/dev/null # its counts start again
sleep 1.2
: >"$LAB_DIR/halfclose.jsonl"
hx "$PY" "$INTEG_DIR/tunnels_at_once.py" "$PROXY_ADDR" "$PROXY_PORT" good.test:9000 20 4000 early 2>&1 |
	sed 's/^/# tun: /'
sleep 1
tot=$(lens "$LAB_DIR/halfclose.jsonl")
expect_ge "the origin was dialed and recorded the tunnel it got (the measurement works)" 1 \
	"$(grep -c '"halfclose"' "$LAB_DIR/halfclose.jsonl")"
expect_lt "20 tunnels, 4000 bytes behind each head, under --max-up 1k: at most about 1 KiB reached the origin ($tot)" \
	1100 "$tot"

# The second review. A stalled origin: the bytes a tunnel took from its
# client count as it takes them, not as they reach the origin, so what sits
# in its pipe is spent and the principal's other tunnels see it
lab_bg "$INS" "$PY" "$INTEG_DIR/origin.py" --mode stall --log "$LAB_DIR/stall.jsonl" 0.0.0.0:9004
wait_until 10 ix bash -c '</dev/tcp/203.0.113.10/9004' || lab_bail "the stalling origin listens"
sl allow add good.test:9004 >/dev/null || not_ok "allow add good.test:9004"
sleep 1.2
hx "$PY" "$INTEG_DIR/tunnels_at_once.py" "$PROXY_ADDR" "$PROXY_PORT" good.test:9004 2 100000 2>&1 |
	sed 's/^/# stall: /'
wait_until 8 bash -c "[ \"\$(grep -c '\"len\": 100000' '$LAB_DIR/stall.jsonl')\" -ge 2 ]"
expect_eq "without a budget, two tunnels to the stalling origin deliver 100000 bytes each (it records them)" \
	200000 "$(lens "$LAB_DIR/stall.jsonl")"
sl allow add good.test:9004 --max-up 256k >/dev/null || not_ok "allow add good.test:9004 --max-up 256k"
sleep 1.2
: >"$LAB_DIR/stall.jsonl"
hx "$PY" "$INTEG_DIR/tunnels_at_once.py" "$PROXY_ADDR" "$PROXY_PORT" good.test:9004 16 1000000 2>&1 |
	sed 's/^/# stall: /' | sort | uniq -c | sed 's/^ */# /'
sleep 4
tot=$(lens "$LAB_DIR/stall.jsonl")
expect_ge "16 tunnels at once to a stalling origin under --max-up 256k: it got bytes (the measurement works)" 1 "$tot"
expect_lt "... and no more than the budget, and a byte for each tunnel ($tot)" $((262144 + 16 + 1)) "$tot"
expect_ge "... each tunnel's row says budget" 16 "$(logq port=9004 reason=budget)"

# observe refuses nothing, and cuts nothing: bytes behind a CONNECT head past the budget go whole
n=$(reloads)
sl allow enforce off >/dev/null || not_ok "allow enforce off"
sl allow add good.test:9000 --max-up 1k >/dev/null # its counts start again
wait_until 10 reloaded_past $((n + 1))
sleep 1.2
: >"$LAB_DIR/halfclose.jsonl"
hx "$PY" "$INTEG_DIR/tunnels_at_once.py" "$PROXY_ADDR" "$PROXY_PORT" good.test:9000 1 4000 early 2>&1 |
	sed 's/^/# observe: /'
wait_until 5 bash -c "grep -q '\"halfclose\"' '$LAB_DIR/halfclose.jsonl'"
expect_eq "under observe, 4000 bytes behind a CONNECT head under --max-up 1k reach the origin whole" 4000 \
	"$(jq_ "$LAB_DIR/halfclose.jsonl" ev=halfclose --field len)"
wait_log 5 port=9000 decision=observe reason=budget
expect_re "... its row: observe, budget, would be refused" 'would be refused: budget max-up 1024' \
	"$(logq port=9000 decision=observe reason=budget --json | tail -1)"
sl allow enforce on >/dev/null || not_ok "allow enforce on"
lab_done
