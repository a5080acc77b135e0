#!/bin/bash
# integ: alone (floods the proxy with thousands of refused h2 streams; rows written per second are bounded)
# Issue 27, item 5: one connection must not wipe the log's history. An
# HTTP/2 client that opens streams past the cap before it acknowledged our
# SETTINGS gets a too-many-streams refusal per stream; each was a row, so a
# few thousand streams rotated away every row written before them. Now each
# principal's refusal rows pass at most a budget per second (log-row-rate,
# burst log-row-burst); past it they are counted, not written, and one
# "suppressed" row per principal and window says how many, so: a row written
# before the flood is still on disk after it; the flood's rows written plus
# those the suppression rows count are exactly the streams the client saw
# refused; another principal's rows during the flood are all written; the
# chain holds across it; the suppression row comes out when the flood
# stops, without a further row of that principal to carry it.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
T=$LAB_DIR/tls
d=$LAB_DIR/h2
mkdir -p "$d/www" "$d/tmp"
{ lab_nginx_head "$d"; cat; } >"$d/nginx.conf" <<NGX
http {
	default_type text/plain;
	access_log off;
$(lab_nginx_temps "$d")
	server {
		listen 203.0.113.13:8444 ssl http2;
		ssl_certificate $T/srv.crt;
		ssl_certificate_key $T/srv.key;
		location = /early { return 200 "early\n"; }
	}
}
NGX
lab_bg "$INS" nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8444' || lab_bail "h2 nginx did not start"
# 1 MiB per file, one rotated file kept: 2 MiB of history. The flood below
# makes about 6000 rows of about 700 bytes: 4 MiB, twice what is kept.
lab_write_conf "intercept on" "allow tls.test:8444" "upstream-ca tls.test $T/ca.crt" \
	"log-rotate-bytes 1048576" "log-keep 1" "log-chain on"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
CA=$STATE/ca.crt

# the marker: a row written before the flood
expect_eq "the marker request is refused (the control: not granted)" 403 "$(pcode http://other.test/marker-before-flood)"
wait_log 3 path=/marker-before-flood || lab_bail "the marker row is written"
ondisk() { cat "$NETLOG.1" "$NETLOG" 2>/dev/null | grep -c "$1"; }
expect_eq "... its row is on disk" 1 "$(ondisk /marker-before-flood)"

# the flood, from 127.0.0.1 (unattributed: its principal is its unit of
# addresses, all of loopback); meanwhile another principal (the host's
# 192.0.2.1: unattributed too, of another unit) is refused now and then
hx "$PY" "$INTEG_DIR/h2_client.py" "$PROXY_ADDR" "$PROXY_PORT" tls.test 8444 "$CA" \
	manystreams 6000 /early early >"$LAB_DIR/flood.out" 2>&1 &
fpid=$!
n2=0
t0=$(now)
while kill -0 "$fpid" 2>/dev/null && [ $n2 -lt 200 ]; do
	code=$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 192.0.2.1 \
		-x "$PROXY_URL" "http://other.test/other-$n2")
	[ "$code" = 403 ] || not_ok "the other principal's request $n2 is refused" "$code"
	n2=$((n2 + 1))
done
wait "$fpid"
flood=$(cat "$LAB_DIR/flood.out")
echo "# flood: $flood (${n2} other requests, $(elapsed "$t0") s)"
refused=$(printf '%s' "$flood" | sed -n 's/.*refused=\([0-9]*\).*/\1/p')
okd=$(printf '%s' "$flood" | sed -n 's/^ok=\([0-9]*\).*/\1/p')
expect_re "the client opened 6000 streams: most refused (REFUSED_STREAM), at most 100 answered" \
	'^ok=([0-9]|[1-9][0-9]|100) refused=[0-9]+ other=0' "$flood"
expect_ge "... thousands refused" 5000 "${refused:-0}"

# the suppression row comes when the window ends, with no further row to carry it
wait_log 5 kind=suppressed who=unattributed client=127.0.0.0/8 || not_ok "a suppression row is written within 5 s of the flood's end"
sleep 1.5 # a second window's row, if any, written too
expect_eq "the marker row written before the flood is still on disk" 1 "$(ondisk /marker-before-flood)"
counts=$("$PY" - "$NETLOG.1" "$NETLOG" <<'PYEOF'
import json, os, sys
written = supp = 0
other = 0
for p in sys.argv[1:]:
    if not os.path.exists(p):
        continue
    for line in open(p):
        r = json.loads(line)
        if r.get("kind") == "suppressed" and r.get("client") == "127.0.0.0/8":
            supp += r["reasons"].get("too-many-streams", 0)
        elif r.get("reason") == "too-many-streams":
            written += 1
print(written, supp)
PYEOF
)
set -- $counts
echo "# too-many-streams rows written: $1, counted in suppression rows: $2, refused: $refused"
expect_lt "... few of the flood's rows were written (the budget)" 1000 "$1"
expect_ge "... the rest counted in suppression rows" 1 "$2"
expect_eq "written + suppressed = the streams the client saw refused" "$refused" "$(($1 + $2))"
expect_eq "... each suppression row's rows are the sum of its reasons" 0 \
	"$(cat "$NETLOG.1" "$NETLOG" 2>/dev/null | "$PY" -c '
import json, sys
bad = 0
for l in sys.stdin:
    r = json.loads(l)
    if r.get("kind") == "suppressed" and r["rows"] != sum(r["reasons"].values()):
        bad += 1
print(bad)')"
expect_eq "the answered streams' rows are all written (allowed rows are never suppressed)" "$okd" \
	"$(cat "$NETLOG.1" "$NETLOG" 2>/dev/null | grep -c '"path":"/early".*"decision":"allow"')"
expect_eq "the other principal's $n2 refusals during the flood are all written" "$n2" \
	"$(cat "$NETLOG.1" "$NETLOG" 2>/dev/null | grep -c '"path":"/other-')"
expect_eq "... none of them suppressed" 0 \
	"$(cat "$NETLOG.1" "$NETLOG" 2>/dev/null | grep -c '"kind":"suppressed".*"client":"192.0.2')"
files=("$NETLOG")
[ -e "$NETLOG.1" ] && files=("$NETLOG.1" "$NETLOG")
out=$(sl log verify "${files[@]}" 2>&1)
expect_eq "the chain holds across the flood and its suppression rows (sluice log verify)" 0 "$?"
echo "$out" | sed 's/^/# verify: /'
out=$(sl log --decision refuse 2>&1 | grep -m1 suppressed)
expect_re "sluice log shows a suppression row: how many rows, and why" \
	'unattributed +refuse .*[0-9]+ rows suppressed .*suppressed +too-many-streams [0-9]+' "$out"
out=$(sl log --by-who --json 2>&1 | grep '"host":"-"')
echo "$out" | sed 's/^/# by-who: /'
live=$("$PY" -c 'import json,sys; print(sum(json.loads(l).get("rows", 0) for l in open(sys.argv[1]) if "\"suppressed\"" in l))' "$NETLOG")
expect_re "sluice log --by-who (the live file) counts its suppression rows as the $live refusals they stand for (host -)" \
	"\"refused\":$live," "$out"
lab_done
