#!/bin/bash
# integ: alone (a 2 MB 100-continue POST through the sanitized proxy must take under 1 s)
# Plain HTTP forwarding: real clients, origin-form, framing, keep-alive,
# pipelining, hop-by-hop headers, Expect: 100-continue, HEAD/204/304.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "allow good.test" "allow good.test:8080" "allow other.test" "allow v6.test"

# --- real clients
out=$(pcurl http://good.test/ 2>&1)
expect_eq "curl GET through the proxy" "hello from 203.0.113.10:80" "$out"
out=$(hx wget -q -O - -T 10 -t 1 -e use_proxy=yes -e http_proxy="$PROXY_URL" http://good.test/ 2>&1)
expect_eq "wget GET through the proxy" "hello from 203.0.113.10:80" "$out"
out=$(hx env http_proxy="$PROXY_URL" "$PY" -c '
import urllib.request
print(urllib.request.urlopen("http://other.test/", timeout=10).read().decode(), end="")' 2>&1)
expect_eq "python urllib GET through the proxy" "hello from 203.0.113.11:80" "$out"
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import http.client, sys
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=10)
c.set_tunnel("good.test", 443)
c.request("GET", "/via-tunnel")
r = c.getresponse()
print(r.status, r.read().decode().strip())
PYEOF
)
expect_eq "python http.client CONNECT tunnel (set_tunnel) to good.test:443" "200 hello from 203.0.113.10:443" "$out"
out=$(pcurl http://v6.test/ 2>&1)
expect_eq "GET to a name with an IPv6 (documentation range) address" "hello from [2001:db8::10]:80" "$out"
out=$(pcurl -0 http://good.test/ 2>&1)
expect_eq "HTTP/1.0 client" "hello from 203.0.113.10:80" "$out"

# --- origin-form and query string reach the origin unchanged
pcurl -o /dev/null 'http://good.test/echo?a=1&b=%20x&c' 2>/dev/null
line=$(inetq ev=req 'line~/echo?a=1' --field line)
expect_eq "origin receives origin-form with the query intact" "GET /echo?a=1&b=%20x&c HTTP/1.1" "$line"
hosth=$(inetq ev=req 'line~/echo?a=1' --json | "$PY" -c 'import json,sys; r=json.load(sys.stdin); print(",".join(v for k,v in r["headers"] if k.lower()=="host"))')
expect_eq "origin receives exactly one Host header naming the target" "good.test" "$hosth"

# --- large responses, byte for byte
want=$(sha256sum "$LAB_DIR/nginx/www/big.bin" | cut -d' ' -f1)
got=$(pcurl http://good.test:8080/big.bin 2>/dev/null | sha256sum | cut -d' ' -f1)
expect_eq "3 MiB file from nginx through the proxy is byte-identical" "$want" "$got"
want=$(ix curl -s http://203.0.113.10/big | sha256sum | cut -d' ' -f1)
got=$(pcurl http://good.test/big 2>/dev/null | sha256sum | cut -d' ' -f1)
expect_eq "4 MiB Content-Length response byte-identical" "$want" "$got"

# --- chunked response and chunked request body
want=$(ix curl -s http://203.0.113.10/chunked | sha256sum | cut -d' ' -f1)
got=$(pcurl http://good.test/chunked 2>/dev/null | sha256sum | cut -d' ' -f1)
expect_eq "chunked response passes intact" "$want" "$got"
head -c 300000 /dev/urandom >"$LAB_DIR/body300k"
want=$(sha256sum "$LAB_DIR/body300k" | cut -d' ' -f1)
out=$(pcurl -H 'Transfer-Encoding: chunked' -H 'Expect:' --data-binary @"$LAB_DIR/body300k" http://good.test/echo 2>&1)
got=$(printf '%s' "$out" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); print(r["body_len"], r["body_sha256"])' 2>&1)
expect_eq "chunked request body (300 kB) reaches the origin intact" "300000 $want" "$got"
out=$(pcurl -H 'Expect:' --data-binary @"$LAB_DIR/body300k" http://good.test/echo 2>&1)
got=$(printf '%s' "$out" | "$PY" -c 'import json,sys; r=json.load(sys.stdin); print(r["body_len"], r["body_sha256"])' 2>&1)
expect_eq "Content-Length request body (300 kB) reaches the origin intact" "300000 $want" "$got"

# --- Expect: 100-continue with a 2 MB POST
head -c 2097152 /dev/urandom >"$LAB_DIR/body2m"
want=$(sha256sum "$LAB_DIR/body2m" | cut -d' ' -f1)
t0=$(now)
hx curl -sS -v --max-time 20 -x "$PROXY_URL" -H 'Expect: 100-continue' \
	--data-binary @"$LAB_DIR/body2m" http://good.test/echo >"$LAB_DIR/e100.out" 2>"$LAB_DIR/e100.err"
el=$(elapsed "$t0")
got=$("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["body_len"], r["body_sha256"])' "$LAB_DIR/e100.out" 2>&1)
expect_eq "Expect: 100-continue POST of 2 MB arrives intact" "2097152 $want" "$got"
expect_re "client receives 100 Continue before sending the body" '< HTTP/1.1 100' "$(grep '^< HTTP' "$LAB_DIR/e100.err")"
expect_lt "100-continue POST does not wait for curl's 1 s expect timeout" 1.0 "$el"

# --- keep-alive: one client connection, one upstream connection
before=$(inetq ev=accept local=203.0.113.10:80)
out=$(pcurl http://good.test/conn http://good.test/conn http://good.test/conn 2>&1 | tr '\n' ' ')
after=$(inetq ev=accept local=203.0.113.10:80)
expect_re "three keep-alive requests share one upstream connection" '^conn=([0-9]+) conn=\1 conn=\1 $' "$out"
expect_eq "three keep-alive requests opened exactly one upstream connection" 1 $((after - before))
out=$(pcurl http://good.test:8080/conn http://good.test:8080/conn 2>&1 | tr '\n' ' ')
expect_re "nginx sees one \$connection for two keep-alive requests" '^conn=([0-9]+) conn=\1 $' "$out"
out=$(pcurl -w '%{num_connects}\n' http://good.test/conn http://other.test/conn 2>&1 | tr '\n' ' ')
expect_re "one client connection serves two different hosts" '^conn=[0-9]+ 1 conn=[0-9]+ 0 $' "$out"

# --- HEAD, 204, 304 keep the client connection usable
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import http.client, sys
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=10)
seq = [("HEAD", "/big"), ("GET", "/conn"), ("GET", "/204"), ("GET", "/conn"),
       ("GET", "/304"), ("GET", "/conn"), ("HEAD", "/chunked"), ("GET", "/conn")]
out, sock, same = [], None, True
for m, p in seq:
    c.request(m, "http://good.test" + p)
    r = c.getresponse()
    b = r.read()
    if sock is None:
        sock = c.sock
    elif c.sock is not sock:
        same = False
    out.append("%d:%s" % (r.status, b.decode().strip() if m == "GET" and p == "/conn" else len(b)))
print(" ".join(out), "same" if same else "reconnected")
PYEOF
)
expect_re "HEAD, 204, 304 answered and the connection stays usable" '^200:0 200:conn=([0-9]+) 204:0 200:conn=\1 304:0 200:conn=\1 200:0 200:conn=\1 same$' "$out"
out=$(raw 'HEAD http://good.test/big HTTP/1.1\r\nHost: good.test\r\n\r\n' --timeout 1.5)
expect_eq "HEAD response carries the origin's Content-Length and no body" "4194304" "$(header_of "$out" Content-Length)"

# --- pipelining: each request judged on its own
out=$(raw 'GET http://good.test/pipe1 HTTP/1.1\r\nHost: good.test\r\n\r\nGET http://third.test/pipe2 HTTP/1.1\r\nHost: third.test\r\n\r\n' --responses 2 --timeout 5)
expect_eq "pipelined granted + ungranted request: 200 then 403" "200,403" "$(meta_statuses "$out")"
expect_none "the ungranted pipelined request never reaches an origin" inet ev=req 'line~/pipe2'
out=$(raw 'GET http://good.test/pipe3 HTTP/1.1\r\nHost: good.test\r\n\r\nGET http://other.test/pipe4 HTTP/1.1\r\nHost: other.test\r\n\r\nGET http://good.test/conn HTTP/1.1\r\nHost: good.test\r\n\r\n' --responses 3 --timeout 5)
expect_eq "three pipelined granted requests to two hosts: 200,200,200" "200,200,200" "$(meta_statuses "$out")"
expect_eq "pipelined responses come back in order" "hello from 203.0.113.10:80|hello from 203.0.113.11:80" \
	"$(printf '%s' "$out" | tr -d '\r' | grep '^hello from' | paste -sd'|')"
out=$(raw 'GET http://third.test/pipe5 HTTP/1.1\r\nHost: third.test\r\n\r\nGET http://good.test/pipe6 HTTP/1.1\r\nHost: good.test\r\n\r\n' --responses 2 --timeout 5)
# A refusal may close the connection (Connection: close); then the second is never read.
if [ "$(meta_statuses "$out")" = "403" ] && [ "$(meta_closed "$out")" = 1 ]; then
	ok "pipelined ungranted + granted request: 403, then the connection is closed"
	expect_none "... and the unanswered request never reaches the origin" inet 'line~/pipe6'
else
	expect_eq "pipelined ungranted + granted request: 403 then 200" "403,200" "$(meta_statuses "$out")"
fi

# --- hop-by-hop headers
out=$(pcurl -H 'Connection: X-Drop-Me, close' -H 'X-Drop-Me: dropped' -H 'Keep-Alive: timeout=9' \
	-H 'Proxy-Connection: keep-alive' -H 'Proxy-Authorization: Basic cHJveHk6c2VjcmV0' \
	-H 'X-Keep: kept' -H 'Authorization: Bearer e2e-token' http://good.test/echo 2>&1)
hdrs=$(printf '%s' "$out" | "$PY" -c 'import json,sys; print(" ".join(k.lower() for k,v in json.load(sys.stdin)["headers"]))' 2>&1)
expect_not_re "Connection-listed, Keep-Alive, Proxy-* headers removed before the origin" '(^| )(x-drop-me|keep-alive|proxy-connection|proxy-authorization)( |$)' "$hdrs"
expect_re "end-to-end headers (X-Keep, Authorization) forwarded" 'x-keep.*authorization|authorization.*x-keep' "$hdrs"
out=$(pcurl -D - -o /dev/null http://good.test/hop 2>&1 | tr -d '\r')
expect_not_re "response hop-by-hop header named by Connection removed" '^X-Resp-Hop:' "$out"
expect_re "response end-to-end header kept" '^X-Resp-Keep: kept' "$out"
out=$(pcurl -D - -o /dev/null http://good.test/close http://good.test/conn 2>&1 | tr -d '\r' | grep -c '^HTTP/1.1 200')
expect_eq "origin closing after a response does not break the client connection" 2 "$out"

# --- HTTP/1.0 without Host: the origin still gets a Host
out=$(raw 'GET http://good.test/h10 HTTP/1.0\r\n\r\n' --timeout 5)
expect_eq "HTTP/1.0 request without Host allowed" 200 "$(meta_status "$out")"
expect_re "... and the origin receives Host: good.test" '\["Host", "good\.test"\]' "$(inetq 'line~/h10' --json)"

# --- chunked POST then GET on the same connection
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import http.client, json, sys
c = http.client.HTTPConnection(sys.argv[1], int(sys.argv[2]), timeout=10)
c.request("POST", "http://good.test/echo", body=iter([b"a" * 1000, b"b" * 70000, b"c"]), encode_chunked=True)
r = c.getresponse(); b = json.loads(r.read())
s0 = c.sock
c.request("GET", "http://good.test/conn"); r2 = c.getresponse(); b2 = r2.read().decode().strip()
print(r.status, b["body_len"], r2.status, b2.startswith("conn="), c.sock is s0)
PYEOF
)
expect_eq "chunked POST (71001 bytes) then GET on one client connection" "200 71001 200 True True" "$out"

# --- broken upstreams
out=$(raw 'GET http://good.test/truncate HTTP/1.1\r\nHost: good.test\r\n\r\n' --timeout 5)
expect_eq "upstream closing mid-body: the client connection is closed too" 1 "$(meta_closed "$out")"
expect_lt "... at once, not after a timeout" 2 "$(meta_elapsed "$out")"
out=$(raw 'GET http://good.test/dupcl HTTP/1.1\r\nHost: good.test\r\n\r\n' --timeout 5)
expect_refusal "upstream response with two Content-Lengths" "$out" 502 upstream-malformed
out=$(raw 'GET http://good.test/garbage HTTP/1.1\r\nHost: good.test\r\n\r\n' --timeout 5)
expect_refusal "upstream response that is not HTTP" "$out" 502 upstream-malformed

# --- a client that goes away mid-download does not hurt the proxy
hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' >/dev/null 2>&1
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(b"GET http://good.test/big?n=20000000&gone HTTP/1.1\r\nHost: good.test\r\n\r\n")
s.recv(1000)
s.close()
PYEOF
expect_eq "proxy serves after a client vanished mid-download" 200 "$(pcode http://good.test/)"
wait_log 3 'path~gone'
expect_eq "the abandoned download is logged" 1 "$(logq 'path~gone')"

lab_done
