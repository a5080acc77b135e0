#!/bin/bash
# What the hostile review of issue 14 found, each now holding against the
# real proxy and origins: a build token removed while a keep-alive
# connection it named stays open no longer serves that connection (it is
# closed, its row build-token); approving a build's refusal grants the
# build, not every connection; eight tunnels opened at once under one
# --max-up 1k get about 1 KiB to the origin between them, not 8 KiB.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy
url=$(sl build-token new --name t1 --proxy "$PROXY_ADDR:$PROXY_PORT" 2>/dev/null)
secret=${url#http://sluice-build:}
secret=${secret%@*}
auth="Basic $(printf 'sluice-build:%s' "$secret" | base64 -w0)"
sl allow add good.test --for build:t1 >/dev/null
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
out=$(sl allow approve "$id" 2>&1)
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
tot=$("$PY" -c 'import json,sys; print(sum(json.loads(l).get("len",0) for l in open(sys.argv[1]) if "\"halfclose\"" in l))' "$LAB_DIR/halfclose.jsonl")
expect_ge "the origin recorded what the tunnels sent (the measurement works)" 1 "$tot"
expect_lt "8 tunnels at once under --max-up 1k: at most about 1 KiB reached the origin ($tot)" 1100 "$tot"
# twenty at once, each with 4000 bytes in the same write as its CONNECT head
sl allow add good.test:9000 --max-up 1k >/dev/null # its counts start again
sleep 1.2
: >"$LAB_DIR/halfclose.jsonl"
hx "$PY" "$INTEG_DIR/tunnels_at_once.py" "$PROXY_ADDR" "$PROXY_PORT" good.test:9000 20 4000 early 2>&1 |
	sed 's/^/# tun: /'
sleep 1
tot=$("$PY" -c 'import json,sys; print(sum(json.loads(l).get("len",0) for l in open(sys.argv[1]) if "\"halfclose\"" in l))' "$LAB_DIR/halfclose.jsonl")
expect_ge "the origin recorded what those tunnels sent (the measurement works)" 1 "$tot"
expect_lt "20 tunnels, 4000 bytes behind each head, under --max-up 1k: at most about 1 KiB reached the origin ($tot)" \
	1100 "$tot"
lab_done
