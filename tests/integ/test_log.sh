#!/bin/bash
# The network log: keys and values, bytes, written before the next request,
# no credentials, rotation, survives kill -9.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "allow good.test" "allow good.test:9000"

KEYS="ts conn req run who src net as sandbox boot seq kid build client kind proto method host port path status decision reason grant refusal inject scrubbed dialed up down ms dns_ms connect_ms ua detail"

pcurl -o /dev/null -A 'sluice-test-agent/1.0' 'http://good.test/big?n=100000' 2>/dev/null
wait_log 3 'path=/big?n=100000'
row=$(logq 'path=/big?n=100000' --json)
keys=$(printf '%s' "$row" | "$PY" -c 'import json,sys; print(" ".join(json.load(sys.stdin).keys()))' 2>&1)
expect_eq "row has every documented key, in order" "$KEYS" "$keys"
expect_eq "row values: kind method host port status decision reason" "http GET good.test 80 200 allow granted" \
	"$(for k in kind method host port status decision reason; do logq 'path=/big?n=100000' --field $k; done | paste -sd' ')"
expect_eq "dialed is the address actually connected to" "203.0.113.10:80" "$(logq 'path=/big?n=100000' --field dialed)"
expect_re "grant names the grant that allowed it" '^good\.test \(' "$(logq 'path=/big?n=100000' --field grant)"
down=$(logq 'path=/big?n=100000' --field down)
expect_ge "down counts the 100000 body bytes" 100000 "$down"
expect_lt "down is not wildly more than the body" 101500 "$down"
expect_eq "up is 0 for a GET" 0 "$(logq 'path=/big?n=100000' --field up)"
expect_eq "ua is the client's User-Agent" "sluice-test-agent/1.0" "$(logq 'path=/big?n=100000' --field ua)"
expect_eq "who is unattributed" unattributed "$(logq 'path=/big?n=100000' --field who)"
expect_re "ts is UTC with milliseconds" '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$' "$(logq 'path=/big?n=100000' --field ts)"
expect_re "run is 16 hex" '^[0-9a-f]{16}$' "$(logq 'path=/big?n=100000' --field run)"
expect_re "client is the client's addr:port" '^127\.0\.0\.1:[0-9]+$' "$(logq 'path=/big?n=100000' --field client)"
expect_re "ms, dns_ms, connect_ms are numbers" '^[0-9.]+ [0-9.]+ [0-9.]+$' \
	"$(logq 'path=/big?n=100000' --field ms) $(logq 'path=/big?n=100000' --field dns_ms) $(logq 'path=/big?n=100000' --field connect_ms)"

head -c 5000 /dev/urandom >"$LAB_DIR/b5k"
pcurl -o /dev/null -H 'Expect:' --data-binary @"$LAB_DIR/b5k" http://good.test/echo?post5k 2>/dev/null
wait_log 3 'path=/echo?post5k'
up=$(logq 'path=/echo?post5k' --field up)
expect_ge "up counts the 5000 body bytes of a POST" 5000 "$up"
expect_lt "up is not wildly more than the body" 6500 "$up"

# --- conn and req numbering on keep-alive; a row is there before the next request
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$NETLOG" <<'PYEOF' 2>&1
import http.client, sys, time
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=10)
res = []
for p in ("/ka1", "/ka2", "/ka3"):
    c.request("GET", "http://good.test" + p)
    c.getresponse().read()
    t0 = time.monotonic()
    seen = False
    while time.monotonic() - t0 < 1.0:
        if ('"' + p + '"') in open(sys.argv[3]).read():
            seen = True
            break
        time.sleep(0.02)
    res.append("%s:%s" % (p, "row" if seen else "norow"))
print(" ".join(res))
PYEOF
)
expect_eq "each keep-alive request's row is written before the next request is sent" "/ka1:row /ka2:row /ka3:row" "$out"
c1=$(logq path=/ka1 --field conn)
expect_eq "keep-alive rows share conn, req counts 1 2 3" "$c1 $c1 $c1 1 2 3" \
	"$(logq path=/ka1 --field conn) $(logq path=/ka2 --field conn) $(logq path=/ka3 --field conn) $(logq path=/ka1 --field req) $(logq path=/ka2 --field req) $(logq path=/ka3 --field req)"
pcurl -o /dev/null http://good.test/otherconn 2>/dev/null
wait_log 2 path=/otherconn
expect_eq "a new client connection gets a new conn id" no "$([ "$(logq path=/otherconn --field conn)" = "$c1" ] && echo yes || echo no)"

# --- refusal rows
raw 'GET http://third.test/refrow HTTP/1.1\r\nHost: third.test\r\n\r\n' >/dev/null
wait_log 2 path=/refrow
expect_eq "refusal row: status 403, decision refuse, grant null, dialed null" "403 refuse null null" \
	"$(logq path=/refrow --field status) $(logq path=/refrow --field decision) $(logq path=/refrow --field grant) $(logq path=/refrow --field dialed)"

# --- caps and escaping
long=$(printf 'p%.0s' $(seq 400))
pcurl -o /dev/null -A "$(printf 'U%.0s' $(seq 300))" "http://good.test/cap-$long" 2>/dev/null
wait_log 2 'path~/cap-ppp'
expect_le_len() { local v; v=$(logq 'path~/cap-ppp' --field "$1"); [ "${#v}" -le "$2" ] && [ "${#v}" -ge 50 ] && ok "$1 capped at $2 bytes (${#v})" || not_ok "$1 capped at $2 bytes" "length ${#v}"; }
expect_le_len path 200
expect_le_len ua 120
raw 'GET http://good.test/esc HTTP/1.1\r\nHost: good.test\r\nUser-Agent: a\xffc"d\\e\xc3\xa9\r\n\r\n' >/dev/null
wait_log 2 path=/esc
expect_eq "invalid UTF-8, quote and backslash in ua: the row stays JSON" 1 "$(logq path=/esc)"
expect_re "... invalid byte written as \\u00XX" '\\u00ff' "$(grep '"/esc"' "$NETLOG")"
expect_eq "... quote, backslash and valid UTF-8 round-trip" 'aÿc"d\eé' "$(logq path=/esc --field ua)"
bad=$("$PY" -c '
import json, sys
n = 0
for l in open(sys.argv[1], "rb"):
    try:
        json.loads(l.decode("utf-8"))
    except Exception:
        n += 1
print(n)' "$NETLOG")
expect_eq "every log line is valid UTF-8 JSON" 0 "$bad"

# --- credentials never logged
pcurl -o /dev/null -H 'Authorization: Bearer AUTHSECRET111' -H 'Cookie: sid=COOKIESECRET333' \
	-H 'Proxy-Authorization: Basic PROXYSECRET222' http://good.test/setcookie 2>/dev/null
raw 'GET http://third.test/credref HTTP/1.1\r\nHost: third.test\r\nAuthorization: Bearer AUTHSECRET111\r\nCookie: COOKIESECRET333\r\nProxy-Authorization: Basic PROXYSECRET222\r\n\r\n' >/dev/null
raw 'GET http://good.test/credbad HTTP/1.1\r\nHost: good.test\r\nAuthorization: Bearer AUTHSECRET111\r\nCookie: COOKIESECRET333\r\nX-A: a\r\n b\r\n\r\n' >/dev/null
wait_log 2 path=/setcookie
wait_log 2 path=/credref
sleep 0.3
found=$(grep -l -E 'AUTHSECRET111|COOKIESECRET333|PROXYSECRET222|SETCOOKIESECRET777' "$NETLOG"* "$LAB_DIR/proxy.err" "$LAB_DIR/proxy.out" 2>/dev/null)
expect_eq "no Authorization, Proxy-Authorization, Cookie or Set-Cookie value in the log or proxy output" "" "$found"
expect_eq "... (control: the log holds the rows of the requests that carried them)" "1 1" \
	"$(logq path=/setcookie --count) $(logq path=/credref --count)"
expect_eq "Proxy-Authorization never reaches the origin" 0 "$(grep -c PROXYSECRET222 "$LAB_DIR/inet.jsonl")"
lab_control "Proxy-Authorization never reaches the origin" inet

# --- kill -9 right after a response: the row is there
k=k9-$RANDOM$RANDOM
code=$(pcode "http://good.test/$k")
{ kill -9 "$PROXY_PID"; wait "$PROXY_PID"; } 2>/dev/null
PROXY_PID=
expect_eq "request answered before kill -9" 200 "$code"
expect_eq "its row is in the log after kill -9" 1 "$(logq "path=/$k")"
expect_eq "the log is still valid JSON lines after kill -9" "$(grep -c . "$NETLOG")" "$(logq)"

# --- rotation
rm -f "$NETLOG"*
lab_start_proxy "allow good.test" "log-rotate-bytes 4096" "log-keep 2"
for i in $(seq 60); do
	pcurl -o /dev/null "http://good.test/rot-$i" 2>/dev/null
done
wait_log 2 path=/rot-60
expect_eq "rotation leaves network.log.1" yes "$([ -s "$NETLOG.1" ] && echo yes || echo no)"
expect_eq "log-keep 2 keeps network.log.2" yes "$([ -s "$NETLOG.2" ] && echo yes || echo no)"
expect_eq "log-keep 2 keeps no network.log.3" no "$([ -e "$NETLOG.3" ] && echo yes || echo no)"
big=0
for f in "$NETLOG" "$NETLOG.1" "$NETLOG.2"; do
	[ -e "$f" ] && [ "$(stat -c %s "$f")" -gt 4096 ] && big=$((big + 1))
done
expect_eq "no log file grows past log-rotate-bytes" 0 "$big"
expect_eq "the newest row is in the current file" 1 "$(logq path=/rot-60)"
expect_eq "rotated files hold whole rows" "$(cat "$NETLOG.2" "$NETLOG.1" "$NETLOG" | grep -c .)" \
	"$(cat "$NETLOG.2" "$NETLOG.1" "$NETLOG" >"$LAB_DIR/all.log"; jq_ "$LAB_DIR/all.log")"
# in order: read oldest (.2) to newest, the requests are /rot-K ... /rot-60 with
# none missing or repeated, and their timestamps never go back
order=$("$PY" - "$NETLOG.2" "$NETLOG.1" "$NETLOG" <<'PYEOF'
import json, sys
rows = [json.loads(l) for f in sys.argv[1:] for l in open(f) if l.strip()]
n = [int(r["path"][5:]) for r in rows if str(r.get("path", "")).startswith("/rot-")]
ts = [r["ts"] for r in rows]
if not n:
    print("no /rot- rows")
elif n != list(range(n[0], 61)):
    print("rows out of order or missing: %s" % n)
elif ts != sorted(ts):
    print("timestamps go back: %s" % ts)
else:
    print("in order %d..60" % n[0])
PYEOF
)
expect_re "rotated files hold the rows in order, oldest file first, none missing" '^in order [0-9]+\.\.60$' "$order"
lab_done
