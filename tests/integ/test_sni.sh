#!/bin/bash
# Passthrough tunnels and the ClientHello: nothing the client sends goes
# upstream until its whole first handshake message is read (across TCP
# segments and TLS records, within head-timeout) and names the CONNECT host.
# A grant for pass.test must not reach tls.test, which the same origin
# address serves: a ClientHello naming it, written in pieces or across two
# records, is refused (sni-mismatch) and the origin sees no TLS connection;
# no server name, bytes that are not a ClientHello and silence are refused
# (sni-unreadable). Real ClientHellos, from Python's ssl (tests/integ/sni.py).
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
lab_write_conf "intercept on" "head-timeout 2" "allow pass.test:9443" "passthrough pass.test" \
	"allow 203.0.113.13:9443" "passthrough 203.0.113.13" "allow pass.test:9445" \
	"passthrough good.test" "allow good.test:9001"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
LABCA=$LAB_DIR/tls/ca.crt
ORIG=$LAB_DIR/tls9443.jsonl

# sni ARGS...: tests/integ/sni.py through the proxy to pass.test:9443, trusting the lab's CA
sni() {
	hx "$PY" "$INTEG_DIR/sni.py" --proxy "$PROXY_ADDR:$PROXY_PORT" --connect pass.test:9443 \
		--ca "$LABCA" "$@" 2>&1
}
origq() { jq_ "$ORIG" "$@"; }
tunnels() { logq kind=tunnel host=pass.test; }
# row N FIELD: FIELD of the Nth tunnel row to pass.test (1 is the first), waiting for it
row() {
	wait_until 8 _rows_at_least "$1"
	"$PY" - "$NETLOG" "$1" "$2" <<'PY'
import json, sys
rows = []
for l in open(sys.argv[1]):
    try:
        r = json.loads(l)
    except ValueError:
        continue
    if r.get("kind") == "tunnel" and r.get("host") == "pass.test":
        rows.append(r)
n = int(sys.argv[2])
print(json.dumps(rows[n - 1].get(sys.argv[3])).strip('"') if len(rows) >= n else "no-row")
PY
}
_rows_at_least() { [ "$(tunnels)" -ge "$1" ]; }

# (a) a real client to the granted name
out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$LABCA" https://pass.test:9443/sni-a 2>&1)
expect_re "curl to the passthrough host is tunnelled and served by the origin" "^hello from" "$out"
expect_eq "... its row: allow, granted, the server name read" "allow granted passthrough; TLS server name pass.test" \
	"$(row 1 decision) $(row 1 reason) $(row 1 detail)"
expect_eq "... and the origin recorded its TLS connection and request (the control: it is up and recording)" "1 1" \
	"$(origq ev=accept) $(origq ev=req 'line~/sni-a')"

# (b) 3 bytes, a pause, the rest: first for the granted name (control), then another
out=$(sni --split 3 --pause 0.5 --path /sni-b-ok)
expect_re "a ClientHello for pass.test written as 3 bytes, a pause, the rest: served" "^served HTTP/1.1 200" "$out"
expect_eq "... allowed, and the origin saw it" "allow 2 1" "$(row 2 decision) $(origq ev=accept) $(origq ev=req 'line~/sni-b-ok')"
out=$(sni --split 3 --pause 0.5 --sni tls.test --path /sni-b-other)
expect_re "the same, naming tls.test (not granted, same address): refused with an unrecognized_name alert" \
	"^alert TLSV1_UNRECOGNIZED_NAME" "$out"
expect_eq "... logged: refuse, sni-mismatch, nothing sent up" "refuse sni-mismatch 0" \
	"$(row 3 decision) $(row 3 reason) $(row 3 up)"
expect_re "... the row names the server name" "tls.test" "$(row 3 detail)"
expect_eq "... and the origin saw no TLS connection and no request" "2 0" \
	"$(origq ev=accept) $(origq ev=req 'line~/sni-b-other')"

# (c) one ClientHello across two TLS records: reassembled
out=$(sni --split records --path /sni-c-ok)
expect_re "a ClientHello across two TLS records naming pass.test: served" "^served HTTP/1.1 200" "$out"
expect_eq "... allowed, naming it" "allow passthrough; TLS server name pass.test 3" \
	"$(row 4 decision) $(row 4 detail) $(origq ev=accept)"
out=$(sni --split records --pause 0.5 --path /sni-c-ok2)
expect_re "... the two records written apart (a pause between): served" "^served HTTP/1.1 200" "$out"
expect_eq "... allowed" "allow 4" "$(row 5 decision) $(origq ev=accept)"
out=$(sni --split records --sni tls.test --path /sni-c-other)
expect_re "the same two records naming tls.test: refused (unrecognized_name)" "^alert TLSV1_UNRECOGNIZED_NAME" "$out"
expect_eq "... refuse, sni-mismatch, nothing sent up, the origin saw nothing" "refuse sni-mismatch 0 4 0" \
	"$(row 6 decision) $(row 6 reason) $(row 6 up) $(origq ev=accept) $(origq ev=req 'line~/sni-c-other')"

# (d) no server name
out=$(sni --no-sni --path /sni-d)
expect_re "a ClientHello without a server name: refused (handshake_failure)" "^alert .*HANDSHAKE_FAILURE" "$out"
expect_eq "... refuse, sni-unreadable, nothing sent up, the origin saw nothing" "refuse sni-unreadable 0 4 0" \
	"$(row 7 decision) $(row 7 reason) $(row 7 up) $(origq ev=accept) $(origq ev=req 'line~/sni-d')"
expect_re "... the row says there was no server name" "has no server name" "$(row 7 detail)"

# (e) first bytes that are not a ClientHello
out=$(sni --send garbage)
expect_re "plain HTTP written into a passthrough tunnel: closed" "^(closed|reset)" "$out"
expect_eq "... refuse, sni-unreadable, nothing sent up" "refuse sni-unreadable 0" \
	"$(row 8 decision) $(row 8 reason) $(row 8 up)"

# (f) a client that sends nothing: closed by the deadline (head-timeout 2)
out=$(sni --send nothing --timeout 8)
expect_re "a tunnel whose client sends nothing is closed" "^(closed|reset)" "$out"
el=$(printf '%s' "$out" | sed -n 's/.*elapsed=\([0-9.]*\).*/\1/p')
expect_ge "... not before head-timeout (2 s)" 1.9 "$el"
expect_lt "... but soon after it" 4 "$el"
expect_eq "... with a row: refuse, sni-unreadable" "refuse sni-unreadable" "$(row 9 decision) $(row 9 reason)"

# three bytes and then silence: the deadline counts from the 200, not from the last byte
out=$(sni --split 3 --pause 6 --timeout 8)
expect_re "a ClientHello that stops after 3 bytes is not served" "^(closed|reset)" "$out"
expect_eq "... refuse, sni-unreadable, nothing sent up" "refuse sni-unreadable 0" \
	"$(row 10 decision) $(row 10 reason) $(row 10 up)"
expect_re "... the row says the deadline passed with 3 bytes read" "within 2 s \(3 bytes\)" "$(row 10 detail)"

# a ClientHello written with the CONNECT, before the 200: the same checks
out=$(sni --pipeline --path /sni-p-ok)
expect_re "a ClientHello for pass.test in the same write as the CONNECT: served" "^served HTTP/1.1 200" "$out"
expect_eq "... allowed" "allow passthrough; TLS server name pass.test" "$(row 11 decision) $(row 11 detail)"
out=$(sni --pipeline --sni tls.test --path /sni-p-other)
expect_re "... naming tls.test: refused" "^alert TLSV1_UNRECOGNIZED_NAME" "$out"
expect_eq "... sni-mismatch, nothing sent up, the origin saw no request" "refuse sni-mismatch 0 0" \
	"$(row 12 decision) $(row 12 reason) $(row 12 up) $(origq ev=req 'line~/sni-p-other')"

# an IP-literal CONNECT host: clients send no server name for an address, and none is needed
IPT=203.0.113.13:9443
out=$(sni --connect $IPT --no-sni --path /sni-g)
expect_re "a passthrough address: a ClientHello without a server name is served" "^served HTTP/1.1 200" "$out"
wait_log 5 kind=tunnel host=203.0.113.13
expect_eq "... allowed, the row says why no name was needed" "allow passthrough; no TLS server name (an address)" \
	"$(logq kind=tunnel host=203.0.113.13 --field decision) $(logq kind=tunnel host=203.0.113.13 --field detail)"
out=$(sni --connect $IPT --sni tls.test --path /sni-g-other)
expect_re "... but one naming a host is refused" "^alert TLSV1_UNRECOGNIZED_NAME" "$out"
wait_log 5 kind=tunnel host=203.0.113.13 reason=sni-mismatch
expect_eq "... sni-mismatch, and the origin saw no request" "refuse 0" \
	"$(logq kind=tunnel host=203.0.113.13 reason=sni-mismatch --field decision) $(origq ev=req 'line~/sni-g-other')"

# a HelloRetryRequest: the client then sends a second ClientHello in clear, which an
# OpenSSL server reads the name from; it must name the CONNECT host too. The origin:
# openssl s_server wanting a P-256 key share (clients offer X25519 first), tracing
# every handshake message it receives.
TRACE=$LAB_DIR/hrr.trace
lab_bg "$INS" openssl s_server -accept 203.0.113.13:9445 -cert "$LAB_DIR/tls/srv.crt" \
	-key "$LAB_DIR/tls/srv.key" -groups P-256 -www -trace -msgfile "$TRACE"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/9445' || lab_bail "openssl s_server did not start"
names() { grep -A1 'extension_type=server_name' "$TRACE" 2>/dev/null | grep -c "$1"; }
out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$LABCA" https://pass.test:9445/ 2>&1)
expect_re "curl to a passthrough origin that answers with a HelloRetryRequest: served" "<HTML>" "$out"
expect_eq "... the origin read both ClientHellos, naming pass.test (the control: it records names)" 2 \
	"$(names pass.test)"
wait_log 5 kind=tunnel host=pass.test port=9445
expect_eq "... allowed, the row saying the second ClientHello was read too" \
	"allow passthrough; TLS server name pass.test, again after a HelloRetryRequest" \
	"$(logq kind=tunnel host=pass.test port=9445 --field decision) $(logq kind=tunnel host=pass.test port=9445 --field detail)"
out=$(sni --connect pass.test:9445 --retry-sni tls.test)
expect_eq "a second ClientHello naming tls.test after the HelloRetryRequest: refused (unrecognized_name)" \
	"alert 112" "${out% elapsed=*}"
wait_log 5 kind=tunnel host=pass.test port=9445 reason=sni-mismatch
expect_re "... sni-mismatch, the row naming the second ClientHello" "second ClientHello .*names tls.test" \
	"$(logq kind=tunnel host=pass.test port=9445 reason=sni-mismatch --field detail)"
expect_eq "... the origin read the first ClientHello (pass.test) and never the name tls.test" "3 0" \
	"$(names pass.test) $(names tls.test)"

# a server that never answers the ClientHello (origin.py silent): closed by response-timeout (5 s)
out=$(sni --connect good.test:9001 --timeout 9)
expect_re "a passthrough server that never answers the ClientHello: the tunnel is closed" "^(closed|reset)" "$out"
el=$(printf '%s' "$out" | sed -n 's/.*elapsed=\([0-9.]*\).*/\1/p')
expect_ge "... not before response-timeout (5 s)" 4.9 "$el"
wait_log 5 kind=tunnel host=good.test
expect_eq "... refuse, upstream-timeout, the ClientHello was sent" "refuse upstream-timeout 1" \
	"$(logq kind=tunnel host=good.test --field decision) $(logq kind=tunnel host=good.test --field reason) $(logq kind=tunnel host=good.test 'up!=0')"

# after all that, the granted name still works
out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$LABCA" https://pass.test:9443/sni-z 2>&1)
expect_re "curl to the passthrough host still works" "^hello from" "$out"
proxy_alive && ok "sluice-proxy is still running" || not_ok "sluice-proxy is still running"
lab_done
