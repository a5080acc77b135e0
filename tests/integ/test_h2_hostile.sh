#!/bin/bash
# HTTP/2 against hostile peers (proxy/h2.c, h2_stream.c), each case once a
# finding of a hostile review: an origin (h2_evil_origin.py) that reflects the
# credential in interim responses, header names, trailer names and its
# content-encoding, answers with a 206, answers before the request body is
# in, floods interim responses at a client that does not read, or splits a
# reflected secret across DATA frames; and a client whose ClientHello
# repeats h2 in its ALPN list thousands of times.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
T=$LAB_DIR/tls
d=$LAB_DIR/h2
mkdir -p "$d/www" "$d/tmp"
head -c $((1024 * 1024)) /dev/urandom >"$d/www/big.bin"
{ lab_nginx_head "$d"; cat; } >"$d/nginx.conf" <<NGX
http {
	default_type text/plain;
	access_log $d/access.log;
$(lab_nginx_temps "$d")
	server {
		listen 203.0.113.13:8444 ssl http2;
		ssl_certificate $T/srv.crt;
		ssl_certificate_key $T/srv.key;
		root $d/www;
		client_max_body_size 100m;
		location = /early { return 200 "early\n"; }
	}
}
NGX
lab_bg "$INS" nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
lab_bg "$INS" "$PY" "$(dirname "$0")/h2_evil_origin.py" "$T/srv.crt" "$T/srv.key" 203.0.113.13 8555
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8444' || lab_bail "h2 nginx did not start"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8555' || lab_bail "evil origin did not start"
export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_write_conf "intercept on" "allow tls.test:8444" "allow api.test:8555" "allow tls.test:8555" \
	"upstream-ca tls.test $T/ca.crt" "upstream-ca api.test $T/ca.crt" \
	"inject ev host=api.test:8555 header=Authorization prefix=\"Bearer \" env=SLUICE_LAB_TOKEN unattributed=yes" \
	"response-timeout ${RT:-5}"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
CA=$STATE/ca.crt
h2py() { hx env H2_RCVBUF=${H2_RCVBUF-} "$PY" "$INTEG_DIR/h2_client.py" "$PROXY_ADDR" "$PROXY_PORT" "$@" 2>&1; }
rss() { awk '/VmRSS/{print $2}' /proc/$PROXY_PID/status; }

case ${CASE:-all} in all|interim)
out=$(h2py api.test 8555 "$CA" heads /interim)
echo "$out" | sed 's/^/# /'
expect_not_re "a 103's values are scrubbed" "$LAB_TOKEN" "$(echo "$out" | grep 'status=103')"
expect_not_re "response header names are scrubbed" "$LAB_TOKEN" "$(echo "$out" | grep 'status=200')"
expect_not_re "trailer names are scrubbed" "$LAB_TOKEN" "$(echo "$out" | grep -v status=)"
;; esac

case ${CASE:-all} in all|enc)
out=$(h2py api.test 8555 "$CA" heads /enc)
echo "$out" | sed 's/^/# /'
expect_not_re "a reflected credential as the content-encoding: not in our 502 (body, Proxy-Status)" "$LAB_TOKEN" "$out"
wait_log 3 path=/enc
expect_not_re "... nor in the row" "$LAB_TOKEN" "$(grep '/enc' "$NETLOG")"
;; esac

case ${CASE:-all} in all|range)
out=$(h2py api.test 8555 "$CA" get /range)
echo "$out" | sed 's/^/# /'
expect_re "a 206 from a scrubbed host is refused as over HTTP/1.1 (502 range-response)" "^/range 502" "$out"
;; esac

case ${CASE:-all} in all|early)
# an origin that answers and resets (NO_ERROR) before the request body is in,
# and nginx answering a POST with `return 200` before reading it: the client
# gets the 200, then RST_STREAM(NO_ERROR) (RFC 9113 8.1), at once, not at its
# own 8 s deadline
for origin in "evil tls.test 8555" "nginx tls.test 8444"; do
	set -- $origin
	t0=$(now)
	out=$(h2py "$2" "$3" "$CA" upload /early 2000000 8)
	took=$(elapsed "$t0")
	expect_re "$1: an upload the origin answered early: the client gets the 200, then is told to stop without error" \
		"status 200 reset 0$" "$out"
	expect_lt "... at once (${took} s; the client would wait 8 s)" 4 "$took"
done
;; esac

case ${CASE:-all} in all|early2)
# the bytes of uploads the origin answered early are handed back: the 1 MiB
# connection window is not used up by them
out=$(h2py tls.test 8555 "$CA" uploads 4 /early /sink 600000 8)
expect_re "after four uploads the origin answered early, a fifth of 600 kB on the connection goes whole" \
	"/sink:600000 " "$out"
;; esac

case ${CASE:-all} in all|limits)
out=$(h2py tls.test 8444 "$CA" bighead /early 40000)
expect_eq "a 40 kB header (HEADERS and two CONTINUATION frames): that stream is reset, the next answered" \
	"/early reset 2|/early 200 early" "$(printf '%s\n' "$out" | paste -sd'|')"
wait_log 3 reason=head-too-large
expect_re "... its row: head-too-large" "32 KiB" "$(logq reason=head-too-large --field detail)"
out=$(h2py tls.test 8444 "$CA" bighead /early 200000)
expect_re "a 200 kB header block (13 CONTINUATION frames, past the cap of 8): the connection is ended" \
	"^(goaway [0-9]+|closed)$" "$out"
out=$(h2py tls.test 8444 "$CA" manystreams 150 /early early)
expect_re "150 streams at once, before our SETTINGS (MAX_CONCURRENT_STREAMS 100) were acknowledged: those past 100 refused (REFUSED_STREAM)" \
	"^ok=[0-9]+ refused=[1-9][0-9]* other=0$" "$out"
expect_re "... and at most 100 of them answered" "^ok=(100|[1-9]?[0-9]) " "$out"
wait_log 3 reason=too-many-streams
expect_re "... each refused one has its row" "SETTINGS_MAX_CONCURRENT_STREAMS" "$(logq reason=too-many-streams --field detail)"
out=$(h2py tls.test 8444 "$CA" manystreams 150 /early)
expect_re "150 at once after they were acknowledged: nghttp2 ends the connection (GOAWAY PROTOCOL_ERROR)" \
	"goaway 1$" "$out"
;; esac

# these two end the sanitizer build's proxy: last
case ${CASE:-all} in all|split)
out=$(h2py api.test 8555 "$CA" get /split)
echo "# split: $out"
expect_re "a reflected secret whose first byte comes alone in a DATA frame: masked" '^/split 200 \*+$' "$out"
proxy_alive && ok "... the proxy is alive after it" || not_ok "... the proxy is alive after it" "$(grep -m1 'runtime error' "$LAB_DIR/proxy.err")"
;; esac

case ${CASE:-all} in all|alpn)
out=$(hx "$PY" "$INTEG_DIR/alpn_dup.py" "$PROXY_ADDR" "$PROXY_PORT" tls.test 8444 "$CA" ${ALPN_N:-5000} 2>&1)
echo "# alpn x${ALPN_N:-5000}: $out"
proxy_alive && ok "a ClientHello offering h2 ${ALPN_N:-5000} times: the proxy is alive" ||
	not_ok "a ClientHello offering h2 ${ALPN_N:-5000} times: the proxy is alive" "$(grep -m3 'ERROR: AddressSanitizer\|WRITE of size\|#[0-3] ' "$LAB_DIR/proxy.err")"
;; esac

# FLOOD=400000 NOREAD_S=40 RT=60 grew the proxy by gigabytes before interim responses were capped
case ${CASE:-all} in all|noread)
H2_RCVBUF=4096 h2py api.test 8555 "$CA" noread "/flood?${FLOOD:-20000}" ${NOREAD_S:-6} >"$LAB_DIR/noread.out" &
np=$!
r0=$(rss)
for i in $(seq $((${NOREAD_S:-6} - 1))); do sleep 1; echo "# noread: after ${i} s proxy RSS $(rss) kB"; done
hx ss -tnm | grep -A1 ':3128' | sed 's/^/# hns: /' | head -12
ix ss -tnm | grep -A1 ':8555' | sed 's/^/# ins: /' | head -6
r1=$(rss)
wait $np
echo "# noread: $(cat "$LAB_DIR/noread.out")"
expect_lt "${FLOOD:-20000} interim responses to a client that does not read: the proxy grows by under 50 MB" 51200 $((r1 - r0))
;; esac

proxy_alive && ok "the proxy is alive" || not_ok "the proxy is alive" "$(tail -30 "$LAB_DIR/proxy.err")"
grep -q 'ERROR: AddressSanitizer\|runtime error' "$LAB_DIR/proxy.err" && not_ok "no sanitizer report" "$(grep -A30 'ERROR\|runtime error' "$LAB_DIR/proxy.err" | head -40)" || ok "no sanitizer report"
cp "$NETLOG" /tmp/h2review.netlog 2>/dev/null; cp "$LAB_DIR/proxy.err" /tmp/h2review.proxy.err
lab_done
