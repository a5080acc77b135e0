#!/bin/bash
# Issue 27 item 4: a budgeted request that waits for its token command is
# charged once. Inside an intercepted CONNECT the CONNECT counts one and
# each decrypted request one (test_budget.sh), so under --max-requests 3
# one tunnel carries the CONNECT and two requests, and its third request is
# refused. The token commands sleep ~1 s, so the first request waits for its
# token (SS_TOKEN) and is then resumed at its credential step, not judged
# (and charged) again; likewise a request re-issued after a 401 with a new
# token; and an HTTP/2 stream that waits. The real proxy, real origins.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
O=$LAB_DIR/tls/ca.crt
T=$LAB_DIR/tls
lab_bg "$INS" "$PY" "$INTEG_DIR/h2_evil_origin.py" "$T/srv.crt" "$T/srv.key" 203.0.113.13 8555
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8555' || lab_bail "the h2 origin at :8555 listens"

# slow.sh NAME: sleeps ~1 s, counts its runs in NAME.count, prints a token (TTL 60 s)
# stale.sh: the same, but its first token is one the origin's /api refuses
for n in slow slowh2; do
	cat >"$LAB_DIR/$n.sh" <<SH
#!/bin/sh
n=\$(cat "$LAB_DIR/$n.count" 2>/dev/null || echo 0)
echo \$((n + 1)) >"$LAB_DIR/$n.count"
sleep 1
echo any-token-will-do
echo 60
SH
done
cat >"$LAB_DIR/stale.sh" <<SH
#!/bin/sh
n=\$(cat "$LAB_DIR/stale.count" 2>/dev/null || echo 0)
echo \$((n + 1)) >"$LAB_DIR/stale.count"
sleep 1.2
if [ "\$n" = 0 ]; then echo stale-token-value; else echo "$LAB_TOKEN"; fi
echo 60
SH
chmod 700 "$LAB_DIR/slow.sh" "$LAB_DIR/slowh2.sh" "$LAB_DIR/stale.sh"

lab_write_conf "intercept on" "token-min-interval 1" "upstream-ca tok.test $O" "upstream-ca api.test $O" \
	"inject slow host=tok.test:9443 header=Authorization prefix=\"Bearer \" command=$LAB_DIR/slow.sh unattributed=yes" \
	"inject slowh2 host=tok.test:8555 header=Authorization prefix=\"Bearer \" command=$LAB_DIR/slowh2.sh unattributed=yes" \
	"inject stale host=api.test:9443 path=/api header=Authorization prefix=\"Bearer \" command=$LAB_DIR/stale.sh unattributed=yes"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
for g in tok.test:9443 tok.test:8555 api.test:9443; do
	out=$(sl allow add "$g" --max-requests 3 2>&1) || lab_bail "sluice allow add $g --max-requests 3" "$out"
done
lab_run_proxy
CA=$STATE/ca.crt
oq() { jq_ "$LAB_DIR/tls9443.jsonl" "$@"; }
codes() { printf '%s' "$1" | sed 's/ $//'; }

# --- HTTP/1.1: the first request waits ~1 s for its token, then is served; so is the second
out=$(pcurl --http1.1 --cacert "$CA" -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' \
	'https://tok.test:9443/echo?b1' 'https://tok.test:9443/echo?b2' 'https://tok.test:9443/echo?b3' 2>&1)
expect_eq "max-requests 3, a token command of ~1 s: the CONNECT and two requests pass, the third is refused" \
	"200 200 403" "$(codes "$out")"
expect_eq "... the token command ran once" 1 "$(cat "$LAB_DIR/slow.count" 2>/dev/null)"
expect_eq "... the origin saw /echo?b1 and /echo?b2 (each once), not /echo?b3" "1 1 0" \
	"$(oq 'line~/echo?b1') $(oq 'line~/echo?b2') $(oq 'line~/echo?b3')"
lab_control "... the origin saw /echo?b1 and /echo?b2 (each once), not /echo?b3" tls9443
expect_eq "... one row for the request that waited, served with the rule's credential" "1 200 slow" \
	"$(logq 'path=/echo?b1') $(logq 'path=/echo?b1' --field status) $(logq 'path=/echo?b1' --field inject)"
wait_log 3 'path=/echo?b3' reason=budget
expect_re "... the third's row: refuse, budget, max-requests 3 spent" \
	'"decision": "refuse".*"reason": "budget".*max-requests 3 for unattributed is spent' \
	"$(logq 'path=/echo?b3' --json)"

# --- a 401 to the first token: minted again (another ~1 s) and re-issued once, charged once
out=$(pcurl --http1.1 --cacert "$CA" -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' \
	'https://api.test:9443/api?r1' 'https://api.test:9443/api?r2' 'https://api.test:9443/api?r3' 2>&1)
expect_eq "max-requests 3, a request re-issued after a 401 with a new token: 200 200 403" \
	"200 200 403" "$(codes "$out")"
expect_eq "... the token command ran twice" 2 "$(cat "$LAB_DIR/stale.count" 2>/dev/null)"
expect_eq "... the origin saw /api?r1 twice (401, then 200), /api?r2 once, not /api?r3" "2 1 0" \
	"$(oq 'line~/api?r1') $(oq 'line~/api?r2') $(oq 'line~/api?r3')"
expect_eq "... one row for /api?r1, naming the re-issue" "1 200 re-issued once with a new token after a 401" \
	"$(logq 'path=/api?r1') $(logq 'path=/api?r1' --field status) $(logq 'path=/api?r1' --field detail)"

# --- HTTP/2: a stream that waits for its token is resumed at its credential too
out=$(pcurl --http2 --cacert "$CA" -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' \
	https://tok.test:8555/s1 https://tok.test:8555/s2 https://tok.test:8555/s3 2>&1)
expect_eq "HTTP/2, max-requests 3, a token command of ~1 s: the CONNECT and two streams pass, the third is refused" \
	"200 200 403" "$(codes "$out")"
expect_eq "... the token command ran once; the streams' rows: h2 200 slowh2, h2 200 slowh2" \
	"1 h2 200 slowh2 h2 200 slowh2" \
	"$(cat "$LAB_DIR/slowh2.count" 2>/dev/null) $(for p in /s1 /s2; do printf '%s %s %s ' "$(logq path=$p port=8555 --field proto)" "$(logq path=$p port=8555 --field status)" "$(logq path=$p port=8555 --field inject)"; done | sed 's/ $//')"
proxy_alive && ok "the proxy is still running" || not_ok "the proxy is still running" "$(tail -5 "$LAB_DIR/proxy.err")"
lab_done
