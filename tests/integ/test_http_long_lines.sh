#!/bin/bash
# Issue 27 item 9: an HTTP/1.1 header line may be as long as its head's
# ceiling (a request head 32 KiB, a response head 64 KiB), not 8 KiB: a
# 12 KiB request header is served, a 60 KiB Set-Cookie (or Link, or
# Content-Security-Policy) response line is relayed intact; a head past its
# ceiling is refused naming it too large (431 head-too-large for a
# request, 502 upstream-head-too-large for a response), not malformed.
# The real proxy, curl and origin.py.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "allow good.test"
xs() { head -c "$1" /dev/zero | tr '\0' x; }
# hval FILE NAME: the length of header NAME's value in the response head FILE (curl -D)
hlen() { tr -d '\r' <"$1" | awk -v n="$2" 'BEGIN{n=tolower(n)} {i=index($0,":"); if (i && tolower(substr($0,1,i-1))==n) {v=substr($0,i+1); sub(/^ /,"",v); print length(v); exit}}'; }

# --- a 12 KiB request header line: served, and the origin got it whole
out=$(pcurl -o /dev/null -w '%{http_code}' -H "X-Long: $(xs 12288)" 'http://good.test/echo?long-req' 2>&1)
expect_eq "a request with a 12 KiB header line: served" 200 "$out"
got=$(inetq ev=req 'line~/echo?long-req' --json | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
print(",".join(str(len(v)) for k, v in r["headers"] if k.lower() == "x-long"))' 2>/dev/null)
expect_eq "... the origin got that line whole (12288 bytes of value)" 12288 "$got"
expect_eq "... its row: allow, 200" "allow 200" \
	"$(logq 'path=/echo?long-req' --field decision) $(logq 'path=/echo?long-req' --field status)"

# --- a request head past its 32 KiB ceiling: 431 naming the head too large, nothing sent
out=$(raw "GET http://good.test/echo?huge-req HTTP/1.1\r\nHost: good.test\r\nX-Long: $(xs 40960)\r\n\r\n" --timeout 5)
expect_refusal "a request head of 40 KiB: refused as too large" "$out" 431 head-too-large \
	'request head over 32768 bytes'
expect_none "... nothing of it reached the origin" inet 'line~/echo?huge-req'

# --- a 60 KiB response header line: relayed intact (Set-Cookie, Link, Content-Security-Policy)
for name in Set-Cookie Link Content-Security-Policy; do
	rm -f "$LAB_DIR/h" "$LAB_DIR/b"
	code=$(pcurl -D "$LAB_DIR/h" -o "$LAB_DIR/b" -w '%{http_code}' \
		"http://good.test/longhead?n=61440&name=$name" 2>&1)
	expect_eq "an origin's 60 KiB $name line: the client gets 200, the line and the body" \
		"200 61440 long head ok" "$code $(hlen "$LAB_DIR/h" "$name") $(cat "$LAB_DIR/b" 2>/dev/null)"
done
expect_eq "... the Set-Cookie value byte for byte" \
	"$(printf 'sid=%s' "$(head -c 61436 /dev/zero | tr '\0' c)" | sha256sum | cut -d' ' -f1)" \
	"$(pcurl -D - -o /dev/null 'http://good.test/longhead?n=61440' 2>/dev/null | tr -d '\r' |
		sed -n 's/^Set-Cookie: //p' | tr -d '\n' | sha256sum | cut -d' ' -f1)"

# --- a response head past its 64 KiB ceiling: 502 naming it too large, not malformed
out=$(raw "GET http://good.test/longhead?n=71680 HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n" --timeout 5)
expect_refusal "a 70 KiB response header line: 502 upstream-head-too-large" "$out" 502 upstream-head-too-large \
	'good\.test sent a response head over 65536 bytes'
wait_log 3 'path=/longhead?n=71680'
expect_eq "... its row says so" "refuse upstream-head-too-large 502" \
	"$(logq 'path=/longhead?n=71680' --field decision) $(logq 'path=/longhead?n=71680' --field reason) $(logq 'path=/longhead?n=71680' --field status)"
expect_eq "... and none of it reached the client" 0 "$(printf '%s' "$out" | grep -c 'sid=ccc')"
proxy_alive && ok "the proxy is still running" || not_ok "the proxy is still running" "$(tail -5 "$LAB_DIR/proxy.err")"
lab_done
