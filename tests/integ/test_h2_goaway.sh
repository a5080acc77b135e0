#!/bin/bash
# HTTP/2 streams an origin did not process (proxy/h2.c, h2_up.c,
# h2_stream.c): a request that races the origin's GOAWAY, or that the origin
# resets with REFUSED_STREAM, is reset to the client with REFUSED_STREAM (RFC
# 9113 8.7: not processed, it may be sent again), and the origin's GOAWAY is
# passed on when it arrives, its last-stream-id leaving out the streams
# sluice resets as refused. A stream that never went up (its token awaited)
# is refused the same way when the origin goes; one that went up and was cut
# off is 502. Clients that retry: curl --http2 (several URLs on
# one connection) and h2_client.py's retry mode; origin: h2_evil_origin.py.
source "$(dirname "$0")/lab.sh"
"$PY" -c 'import h2' 2>/dev/null || lab_bail "python3-h2 is installed (deps/debian-packages)"
lab_up
lab_tls_origin
T=$LAB_DIR/tls
lab_bg "$INS" "$PY" "$(dirname "$0")/h2_evil_origin.py" "$T/srv.crt" "$T/srv.key" 203.0.113.13 8555
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8555' || lab_bail "evil origin did not start"
# a token command that takes its time: a stream waits for it, unsent
printf '#!/bin/sh\nsleep 0.5\necho "%s"\necho 60\n' "$LAB_TOKEN" >"$LAB_DIR/mint.sh"
chmod 700 "$LAB_DIR/mint.sh"
lab_write_conf "intercept on" "allow tls.test:8555" "upstream-ca tls.test $T/ca.crt" \
	"inject gtok host=tls.test:8555 path=/ta header=x-tok command=$LAB_DIR/mint.sh unattributed=yes" \
	"inject gtok2 host=tls.test:8555 path=/tb header=x-tok command=$LAB_DIR/mint.sh unattributed=yes"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
CA=$STATE/ca.crt
h2py() { hx "$PY" "$INTEG_DIR/h2_client.py" "$PROXY_ADDR" "$PROXY_PORT" "$@" 2>&1; }
U=https://tls.test:8555

case ${CASE:-all} in all|par)
# two streams at once: the origin sends GOAWAY(last-stream-id 1) on the
# first and leaves the second, in flight, unprocessed, then answers the first
out=$(h2py tls.test 8555 "$CA" retry par /goaway-slow /x)
echo "$out" | sed 's/^/# /'
expect_re "a stream in flight past the origin's GOAWAY: the client retries it on a new connection and gets its answer" \
	"^/x 200 ok tries=2$" "$out"
expect_re "... the stream the GOAWAY covered is answered on the first" "^/goaway-slow 200 slow tries=1$" "$out"
c1=$(echo "$out" | grep '^conn 1:')
expect_re "... the client was told it was not processed (RST_STREAM REFUSED_STREAM)" "/x reset 7" "$c1"
expect_re "... the origin's GOAWAY is passed on when it arrives (before the response it left to finish), its last-stream-id 1: not the refused stream 3" \
	"goaway 1 0 .*/goaway-slow 200" "$c1"
wait_log 3 path=/x reason=upstream-refused
expect_re "... the refused stream's row: upstream-refused, GOAWAY named" "GOAWAY" \
	"$(logq path=/x reason=upstream-refused --field detail)"
expect_eq "... and the retried one's: granted, 200" 1 "$(logq path=/x reason=granted status=200)"
;; esac

case ${CASE:-all} in all|seq)
# one stream after another: the origin's GOAWAY comes as the second is in flight
out=$(h2py tls.test 8555 "$CA" retry seq /goaway-next /y)
echo "$out" | sed 's/^/# /'
expect_re "the next request races the origin's GOAWAY: the client retries it and gets its answer" \
	"^/y 200 ok tries=2$" "$out"
expect_re "... told REFUSED_STREAM, and a GOAWAY whose last-stream-id is the stream before" \
	"^conn 1: /goaway-next 200 \| (/y reset 7 \| goaway 1 0|goaway 1 0 \| /y reset 7)$" "$out"
# a client that does not answer our PING still gets the GOAWAY, later
t0=$(now)
out=$(H2_NO_PING_ACK=1 h2py tls.test 8555 "$CA" retry seq /goaway-next /w)
took=$(elapsed "$t0")
echo "$out" | sed 's/^/# /'
expect_re "a client that does not acknowledge the PING after the reset: still retries and gets its answer" \
	"^/w 200 ok tries=2$" "$out"
expect_re "... and the GOAWAY still comes (${took} s)" "^conn 1: /goaway-next 200 \| /w reset 7 \| ping \| goaway 1 0$" "$out"
out=$(h2py tls.test 8555 "$CA" retry seq /refuse-next /z)
echo "$out" | sed 's/^/# /'
expect_re "the origin resets a stream with REFUSED_STREAM: the client retries it and gets its answer" \
	"^/z 200 ok tries=2$" "$out"
expect_re "... told REFUSED_STREAM, no GOAWAY (the origin goes on with its connection)" \
	"^conn 1: /refuse-next 200 \| /z reset 7$" "$out"
wait_log 3 path=/z reason=upstream-refused
expect_re "... its row says so" "REFUSED_STREAM" "$(logq path=/z reason=upstream-refused --field detail)"
;; esac

case ${CASE:-all} in all|token)
# a stream still waiting for its token (not sent) when the origin's GOAWAY
# comes, then when the origin's connection just ends (no GOAWAY): it never
# went up, so it is refused, not answered 502; the stream that did go up
# and was cut off (/die) may have been processed: 502, not retried
out=$(h2py tls.test 8555 "$CA" retry par /goaway-slow /ta)
echo "$out" | sed 's/^/# /'
expect_re "a stream waiting for its token when the origin's GOAWAY comes: retried, answered" \
	"^/ta 200 ok tries=2$" "$out"
expect_re "... reset REFUSED_STREAM before the GOAWAY (last-stream-id 1)" \
	"^conn 1: /ta reset 7 \| goaway 1 0 \| /goaway-slow 200$" "$out"
wait_log 3 path=/ta reason=upstream-refused
expect_re "... its row" "GOAWAY \(last stream 1\) before it took this stream" \
	"$(logq path=/ta reason=upstream-refused --field detail)"
# (another rule: the first one's token is cached now)
out=$(h2py tls.test 8555 "$CA" retry par /die /tb)
echo "$out" | sed 's/^/# /'
expect_re "a stream waiting for its token when the origin's connection ends: retried, answered" \
	"^/tb 200 ok tries=2$" "$out"
expect_re "... the one that went up and was cut off: 502, not retried" "^/die 502 .* tries=1$" "$out"
expect_re "... the GOAWAY's last-stream-id is the 502's stream, not the refused one" \
	"^conn 1: (/die 502 \| /tb reset 7|/tb reset 7 \| /die 502) \| goaway 1 0$" "$out"
;; esac

case ${CASE:-all} in all|curl)
# curl --http2, two URLs: the second goes on the first's connection and races
# the GOAWAY (or is refused); curl retries a REFUSED_STREAM on a fresh
# connection. Three times each: curl 7.88 gives up on a refused stream whose
# GOAWAY comes too soon after the reset ("partial file"), a race.
for i in 1 2 3; do
for first in goaway-next refuse-next; do
	second=after-$first-$i
	out=$(pcurl --http2 --cacert "$CA" -v -w '%{url_effective} %{http_code} %{num_connects}\n' \
		-o /dev/null "$U/$first" -o /dev/null "$U/$second" 2>"$LAB_DIR/curl-$second.err")
	echo "$out" | sed 's/^/# /'
	grep -i "veived goaway\|refused\|retry\|Connection #\|curl: (" "$LAB_DIR/curl-$second.err" | sed "s/^/# curl: /"
	expect_re "curl, /$first then a second URL on its connection: the second gets its answer ($i)" \
		"^$U/$second 200 1$" "$out"
	expect_re "... curl retried it on a fresh connection (REFUSED_STREAM)" \
		"retrying a fresh connect" "$(cat "$LAB_DIR/curl-$second.err")"
	wait_log 3 path=/$second status=200
	expect_eq "... its rows: the refused try (upstream-refused), then the answered one (granted, 200)" \
		"1 1" "$(logq path=/$second reason=upstream-refused) $(logq path=/$second reason=granted status=200)"
done
done
;; esac

proxy_alive && ok "the proxy is alive" || not_ok "the proxy is alive" "$(tail -30 "$LAB_DIR/proxy.err")"
grep -q 'ERROR: AddressSanitizer\|runtime error' "$LAB_DIR/proxy.err" && not_ok "no sanitizer report" "$(grep -A30 'ERROR\|runtime error' "$LAB_DIR/proxy.err" | head -40)" || ok "no sanitizer report"
lab_done
