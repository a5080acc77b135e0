#!/bin/bash
# Issue 10, holes 4 and 5: what sluice-proxy passes on from a request it
# judged. A chunked body's trailer section reaches the origin without the
# fields no trailer may carry (RFC 9110 6.5.1: framing, routing,
# authentication, Proxy-*, the stamp) and the row names what was dropped;
# a response's trailers reach the client the same way. The Host the origin
# reads is the canonical name the policy judged (lower-case A-labels, no
# trailing dot), not the client's spelling. On plain HTTP and inside an
# intercepted CONNECT. Origins: tests/integ/rawrec.py (records raw trailers)
# and the lab's origin.py (records heads).
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
O=$LAB_DIR/tls
REC=$LAB_DIR/rec.jsonl
RECS=$LAB_DIR/rec_tls.jsonl
lab_bg "$INS" "$PY" "$INTEG_DIR/rawrec.py" --log "$REC" 0.0.0.0:8181
lab_bg "$INS" "$PY" "$INTEG_DIR/rawrec.py" --log "$RECS" --tls "$O/srv.crt" "$O/srv.key" 203.0.113.13:8543
wait_until 10 ix bash -c '</dev/tcp/203.0.113.10/8181' || lab_bail "rawrec origin did not start"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8543' || lab_bail "rawrec TLS origin did not start"
lab_write_conf "intercept on" "allow good.test" "allow good.test:8181" "allow tls.test:8543" \
	"allow tls.test:9443" "upstream-ca tls.test $O/ca.crt" "allow 203.0.113.10:8181" \
	"allow api.test:8543" "upstream-ca api.test $O/ca.crt" \
	"allow [2001:db8::10]" \
	"inject key host=tls.test:8543 path=/inj header=X-Api-Key env=SLUICE_LAB_TOKEN unattributed=yes"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_run_proxy
unset SLUICE_LAB_TOKEN
CA=$STATE/ca.crt
recq() { jq_ "$REC" "$@"; }
recsq() { jq_ "$RECS" "$@"; }
tlsq() { jq_ "$LAB_DIR/tls9443.jsonl" "$@"; }

# tls_raw HOST PORT DATA: CONNECT HOST:PORT through the proxy, TLS trusting
# sluice's CA, exact bytes (Python escapes) in, one response's bytes out.
tls_raw() {
	hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$CA" "$@" <<'PYEOF'
import codecs, os, socket, ssl, sys, time
paddr, pport, ca, host, port, data = sys.argv[1:7]
sys.path.insert(0, os.environ["INTEG_DIR"])
from raw import parse_responses
data = codecs.escape_decode(data.encode("utf-8"))[0]
s = socket.create_connection((paddr, int(pport)), timeout=10)
s.sendall(("CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n" % (host, port, host, port)).encode())
b = b""
while b"\r\n\r\n" not in b:
    d = s.recv(4096)
    if not d:
        sys.exit("proxy closed: %r" % b)
    b += d
if not b.startswith(b"HTTP/1.1 200"):
    sys.exit("CONNECT refused: %r" % b[:200])
ctx = ssl.create_default_context(cafile=ca)
t = ctx.wrap_socket(s, server_hostname=host)
t.sendall(data)
buf, t0 = b"", time.monotonic()
while parse_responses(buf, 1)[0] < 1 and time.monotonic() - t0 < 10:
    try:
        d = t.recv(65536)
    except (OSError, ssl.SSLError):
        break
    if not d:
        break
    buf += d
sys.stdout.write(buf.decode("latin-1"))
PYEOF
}
export INTEG_DIR

# forbidden_in JSON: the names of the forbidden fields among a record's trailers.
FORBIDDEN='host content-length content_length transfer-encoding authorization proxy-authorization proxy-foo sluice-stamp cookie te trailer'
forbidden_in() {
	"$PY" -c '
import json, sys
r = json.loads(sys.stdin.read() or "{}")
bad = sys.argv[1].split()
print(" ".join(l.split(":")[0] for l in r.get("trailers", []) if l.split(":")[0].lower() in bad))' "$FORBIDDEN"
}
# resp_trailers OUT: the trailer section of raw's chunked response (after the "0" line).
resp_trailers() { printf '%s' "$1" | tr -d '\r' | sed -n '/^0$/,/^$/p' | sed '1d'; }
trailers_of() { "$PY" -c 'import json,sys; print("|".join(json.loads(sys.stdin.read() or "{}").get("trailers", ["<no record>"])))'; }

# the trailer section a client writes: every kind of field no trailer may carry, and two harmless
TR='Host: evil.test\r\nContent-Length: 5\r\nContent_Length: 7\r\nTransfer-Encoding: chunked\r\n'
TR+='Authorization: Basic ZXZpbDpldmls\r\nProxy-Authorization: Basic eDp5\r\nProxy-Foo: bar\r\n'
TR+='Sluice-Stamp: v1 forged\r\nCookie: sid=evil\r\nTE: trailers\r\nTrailer: X-Checksum\r\n'
TR+='X-Checksum: abc123\r\nX-Note:  kept  \r\n'
BODY='5\r\nhello\r\n0\r\n'

# --- hole 4, plain HTTP: the recording origin is up and records trailers
out=$(raw 'POST http://good.test:8181/t0 HTTP/1.1\r\nHost: good.test:8181\r\nTransfer-Encoding: chunked\r\n\r\n'"$BODY"'X-Control: 1\r\n\r\n')
expect_eq "control: a chunked POST with a harmless trailer is answered" 200 "$(meta_status "$out")"
expect_eq "control: the origin recorded it, trailer and body" "X-Control: 1 5" \
	"$(recq 'line~/t0 ' --json | trailers_of) $(recq 'line~/t0 ' --field body_len)"

out=$(raw 'POST http://good.test:8181/t1 HTTP/1.1\r\nHost: good.test:8181\r\nTransfer-Encoding: chunked\r\n\r\n'"$BODY$TR"'\r\n')
expect_eq "a chunked POST with forbidden trailers is answered (they are dropped, not refused)" 200 "$(meta_status "$out")"
expect_eq "the origin recorded the request, its body intact" "1 5" "$(recq 'line~/t1 ') $(recq 'line~/t1 ' --field body_len)"
expect_eq "no forbidden trailer field reached the origin" "" "$(recq 'line~/t1 ' --json | forbidden_in)"
expect_eq "... the harmless trailers did (whitespace around a value trimmed)" "X-Checksum: abc123|X-Note: kept" \
	"$(recq 'line~/t1 ' --json | trailers_of)"
expect_re "the row names the dropped fields" \
	'^request trailers dropped: Host, Content-Length, Content_Length, Transfer-Encoding, Authorization, Proxy-Authorization, Proxy-Foo, Sluice-Stamp, Cookie, TE, Trailer$' \
	"$(logq path=/t1 --field detail)"
expect_eq "a request with only forbidden trailers: none arrives, the body does" "<none> 5" \
	"$(raw 'POST http://good.test:8181/t2 HTTP/1.1\r\nHost: good.test:8181\r\nTransfer-Encoding: chunked\r\n\r\n'"$BODY"'Host: evil.test\r\n\r\n' >/dev/null
	r=$(recq 'line~/t2 ' --json | trailers_of); echo "${r:-<none>} $(recq 'line~/t2 ' --field body_len)")"
out=$(raw 'POST http://good.test:8181/t3 HTTP/1.1\r\nHost: good.test:8181\r\nTransfer-Encoding: chunked\r\n\r\n'"$BODY"'Host : evil.test\r\n\r\n')
expect_eq "a malformed trailer line (space before the colon) is refused" "400 0" \
	"$(meta_status "$out") $(recq 'line~/t3 ' --field body_len | grep -c 5)"
# the trailer in pieces, one byte every 10 ms: held until whole, then filtered
out=$(raw 'POST http://good.test:8181/t4 HTTP/1.1\r\nHost: good.test:8181\r\nTransfer-Encoding: chunked\r\n\r\n'"$BODY"'X-A: 1\r\nHost: evil.test\r\n\r\n' --trickle 0.01 --timeout 10)
expect_eq "a trailer section trickled byte by byte: answered, filtered" "200 X-A: 1" \
	"$(meta_status "$out") $(recq 'line~/t4 ' --json | trailers_of)"

# --- hole 4, response trailers: the client gets the harmless ones only
out=$(raw 'GET http://good.test:8181/trailers HTTP/1.1\r\nHost: good.test:8181\r\n\r\n')
expect_eq "control: the origin's chunked response with trailers arrives" "200 1" \
	"$(meta_status "$out") $(resp_trailers "$out" | grep -c '^X-Checksum: sha-ok')"
expect_eq "... its harmless trailer too" 1 "$(resp_trailers "$out" | grep -c '^X-Trailer-Note: kept')"
expect_eq "... none of the forbidden ones" "" \
	"$(resp_trailers "$out" | grep -E '^(Set-Cookie|Content-Length|Transfer-Encoding|Host|Sluice-Stamp|Proxy-Authenticate|WWW-Authenticate|Location):' | tr '\n' ' ')"
expect_re "the row names the dropped response trailers" \
	'response trailers dropped: Set-Cookie, Content-Length, Transfer-Encoding, Host, Sluice-Stamp, Proxy-Authenticate, WWW-Authenticate, Location' \
	"$(logq path=/trailers --field detail)"

# --- hole 4, inside an intercepted CONNECT
out=$(tls_raw tls.test 8543 'POST /s0 HTTP/1.1\r\nHost: tls.test:8543\r\nTransfer-Encoding: chunked\r\n\r\n'"$BODY"'X-Control: 1\r\n\r\n' 2>&1)
expect_re "control (https): a chunked POST with a harmless trailer is answered" '^HTTP/1.1 200' "$out"
expect_eq "control (https): the origin recorded its trailer" "X-Control: 1" "$(recsq 'line~/s0 ' --json | trailers_of)"
out=$(tls_raw tls.test 8543 'POST /s1 HTTP/1.1\r\nHost: tls.test:8543\r\nTransfer-Encoding: chunked\r\n\r\n'"$BODY$TR"'\r\n' 2>&1)
expect_re "https: a chunked POST with forbidden trailers is answered" '^HTTP/1.1 200' "$out"
expect_eq "https: the origin recorded it, body intact" "1 5" "$(recsq 'line~/s1 ') $(recsq 'line~/s1 ' --field body_len)"
expect_eq "https: no forbidden trailer field reached the origin" "" "$(recsq 'line~/s1 ' --json | forbidden_in)"
expect_eq "https: ... the harmless ones did" "X-Checksum: abc123|X-Note: kept" "$(recsq 'line~/s1 ' --json | trailers_of)"
expect_re "https: the row names the dropped fields" '^request trailers dropped: Host, ' \
	"$(logq kind=https path=/s1 --field detail)"
# (from a host no inject rule names: a scrubbed response loses every trailer)
out=$(tls_raw api.test 8543 'GET /trailers HTTP/1.1\r\nHost: api.test:8543\r\n\r\n' 2>&1)
expect_eq "https: response trailers: the harmless ones arrive, no forbidden one" "2 0" \
	"$(resp_trailers "$out" | grep -Ec '^(X-Checksum: sha-ok|X-Trailer-Note: kept)') $(resp_trailers "$out" | grep -Ec '^(Set-Cookie|Transfer-Encoding|Host|Sluice-Stamp|Location):')"

# a header rule's credential goes in one place: a trailer of its name is dropped too
out=$(tls_raw tls.test 8543 'POST /inj HTTP/1.1\r\nHost: tls.test:8543\r\nTransfer-Encoding: chunked\r\n\r\n'"$BODY"'X-Api-Key: client-forged\r\nX-Checksum: 1\r\n\r\n' 2>&1)
expect_eq "https, injected: the origin got the rule's credential in the head" "1 $LAB_TOKEN" \
	"$(printf '%s' "$out" | grep -c '^HTTP/1.1 200') $(recsq 'line~/inj ' --json | "$PY" -c 'import json,sys; r=json.loads(sys.stdin.read() or "{}"); print(",".join(v for k,v in r.get("headers",[]) if k.lower()=="x-api-key"))')"
expect_eq "https, injected: a trailer named like the rule's field does not reach the origin" "X-Checksum: 1" \
	"$(recsq 'line~/inj ' --json | trailers_of)"
expect_re "https, injected: the row names it" 'request trailers dropped: X-Api-Key' \
	"$(logq kind=https path=/inj --field detail)"

# --- hole 5: the origin reads the Host the policy judged, in its canonical spelling
hosts_of() { "$PY" -c 'import json,sys; r=json.loads(sys.stdin.read() or "{}"); print(",".join(v for k,v in r.get("headers",[]) if k.lower()=="host") or "<no record>")'; }
out=$(raw 'GET http://good.test/h0 HTTP/1.1\r\nHost: good.test\r\n\r\n')
expect_eq "control: the origin records a request's Host" "200 good.test" "$(meta_status "$out") $(inetq 'line~/h0 ' --json | hosts_of)"
out=$(raw 'GET http://good.test/h1 HTTP/1.1\r\nHost: GOOD.TEST.\r\n\r\n')
expect_eq "Host: GOOD.TEST. is allowed and reaches the origin as good.test" "200 good.test" \
	"$(meta_status "$out") $(inetq 'line~/h1 ' --json | hosts_of)"
out=$(raw 'GET http://good.test/h2 HTTP/1.1\r\nHost: \xef\xbc\xa7\xef\xbd\x8f\xef\xbd\x8f\xef\xbd\x84.test\r\n\r\n')
expect_eq "full-width Host (UTF-8) is allowed and reaches the origin as good.test" "200 good.test" \
	"$(meta_status "$out") $(inetq 'line~/h2 ' --json | hosts_of)"
out=$(raw 'GET http://good.test/h3 HTTP/1.1\r\nHost: Good.Test:80\r\n\r\n')
expect_eq "Host with the default port written reaches the origin as good.test" "200 good.test" \
	"$(meta_status "$out") $(inetq 'line~/h3 ' --json | hosts_of)"
out=$(raw 'GET http://GOOD.test.:8181/h4 HTTP/1.1\r\nHost: GOOD.TEST.:8181\r\n\r\n')
expect_eq "another port: the origin reads good.test:8181" "200 good.test:8181" \
	"$(meta_status "$out") $(recq 'line~/h4 ' --json | hosts_of)"
out=$(raw 'GET http://GOOD.TEST./h5 HTTP/1.0\r\n\r\n')
expect_eq "an absolute-form target without Host: the origin reads good.test" "200 good.test" \
	"$(meta_status "$out") $(inetq 'line~/h5 ' --json | hosts_of)"
out=$(raw 'GET http://0xcb.0.113.10:8181/h9 HTTP/1.1\r\nHost: 203.0.0161.10:8181\r\n\r\n')
expect_eq "an IPv4 literal in other spellings: the origin reads the dotted quad" "200 203.0.113.10:8181" \
	"$(meta_status "$out") $(recq 'line~/h9 ' --json | hosts_of)"
out=$(raw 'GET http://[2001:db8::10]/h10 HTTP/1.1\r\nHost: [2001:DB8:0:0::10]\r\n\r\n')
expect_eq "an IPv6 literal: the origin reads its RFC 5952 text, bracketed" "200 [2001:db8::10]" \
	"$(meta_status "$out") $(inetq 'line~/h10 ' --json | hosts_of)"
out=$(raw 'GET http://good.test/h6 HTTP/1.1\r\nHost: evil.test\r\n\r\n')
expect_eq "control: a Host naming another host is still refused, nothing sent" "403 0" \
	"$(meta_status "$out") $(inetq 'line~/h6 ')"
out=$(tls_raw tls.test 9443 'GET /h7 HTTP/1.1\r\nHost: TLS.TEST.:9443\r\n\r\n' 2>&1)
expect_eq "https: Host: TLS.TEST.:9443 reaches the origin as tls.test:9443" "1 tls.test:9443" \
	"$(printf '%s' "$out" | grep -c '^HTTP/1.1 200') $(tlsq 'line~/h7 ' --json | hosts_of)"
out=$(tls_raw tls.test 9443 'GET /h8 HTTP/1.1\r\nHost: \xef\xbd\x94\xef\xbd\x8c\xef\xbd\x93.test:9443\r\n\r\n' 2>&1)
expect_eq "https: full-width Host reaches the origin as tls.test:9443" "1 tls.test:9443" \
	"$(printf '%s' "$out" | grep -c '^HTTP/1.1 200') $(tlsq 'line~/h8 ' --json | hosts_of)"

proxy_alive && ok "the proxy is still running" || not_ok "the proxy is still running"
lab_done
