#!/bin/bash
# integ: alone (floods the proxy from 40 addresses; rows written per second are bounded)
# An unattributed client's refusal rows spend the budget of a coarse unit of
# addresses, not of its one address: all of loopback (127.0.0.0/8 and ::1)
# is one, else an IPv4 /24 or an IPv6 /64. Keyed by address, a client on
# loopback that sent from 40 addresses (150 refusals each, under the burst
# of 200) had every row written, and rotation (1 MiB, one file kept) deleted
# the rows before the flood. Now: the marker written before the flood is on
# disk after it; the flood's rows written plus those its suppression rows
# count are the 6000 it was refused; a client in another unit (the host's
# 192.0.2.1, a /24 of its own) is refused during the flood and all its rows
# are written.
source "$(dirname "$0")/lab.sh"
lab_up
lab_write_conf "log-rotate-bytes 1048576" "log-keep 1" "log-chain on"
lab_run_proxy
ondisk() { cat "$NETLOG.1" "$NETLOG" 2>/dev/null | grep -c "$1"; }


expect_eq "the marker request is refused (not granted)" 403 "$(pcode http://other.test/marker-before-flood)"
wait_log 3 path=/marker-before-flood || lab_bail "the marker row is written"
code=$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 192.0.2.1 -x "$PROXY_URL" \
	http://other.test/other-control)
expect_eq "control: a client from 192.0.2.1 reaches the proxy and is refused" 403 "$code"

hx "$PY" "$INTEG_DIR/refuse_flood.py" 10 40 6000 many >"$LAB_DIR/flood.out" 2>&1 &
fpid=$!
n2=0
t0=$(now)
while kill -0 "$fpid" 2>/dev/null && [ $n2 -lt 100 ]; do
	code=$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 5 --interface 192.0.2.1 \
		-x "$PROXY_URL" "http://other.test/other-$n2")
	[ "$code" = 403 ] || not_ok "the other unit's request $n2 is refused" "$code"
	n2=$((n2 + 1))
done
wait "$fpid"
echo "# flood: $(cat "$LAB_DIR/flood.out") from 40 addresses in $(elapsed "$t0") s; $n2 other requests"
expect_eq "6000 refusals from 127.0.0.10 .. 127.0.0.49" "403=6000" "$(cat "$LAB_DIR/flood.out")"
wait_log 5 kind=suppressed client=127.0.0.0/8 || not_ok "a suppression row for loopback within 5 s"
sleep 1.5 # a last window's row, if any
expect_eq "the marker row written before the flood is still on disk" 1 "$(ondisk /marker-before-flood)"
counts=$("$PY" - "$NETLOG.1" "$NETLOG" <<'PYEOF'
import json, os, sys
written = supp = bad = 0
for p in sys.argv[1:]:
    if not os.path.exists(p):
        continue
    for line in open(p):
        r = json.loads(line)
        if r.get("kind") == "suppressed" and r.get("client") == "127.0.0.0/8":
            supp += r["reasons"].get("not-granted", 0)
            bad += r["rows"] != sum(r["reasons"].values())
        elif (r.get("path") or "").startswith("/many-"):
            written += 1
print(written, supp, bad)
PYEOF
)
set -- $counts
echo "# rows of the flood written: $1, counted in suppression rows: $2"
expect_lt "... few of the flood's rows were written (one budget for all 40 addresses)" 1500 "$1"
expect_eq "written + suppressed = the 6000 refusals" 6000 "$(($1 + $2))"
expect_eq "... each suppression row's rows are the sum of its reasons" 0 "$3"
expect_eq "the suppression rows name this run" "$(logq path=/marker-before-flood --field run)" \
	"$(logq kind=suppressed --field run)"
expect_ge "the other unit was refused during the flood" 1 "$n2"
expect_eq "the other unit's $n2 refusals are all written" "$n2" "$(ondisk '"path":"/other-[0-9]')"
expect_eq "... none of them counted in a suppression row" 0 "$(ondisk '"kind":"suppressed".*"client":"192.0.2')"
files=("$NETLOG")
[ -e "$NETLOG.1" ] && files=("$NETLOG.1" "$NETLOG")
out=$(sl log verify "${files[@]}" 2>&1)
expect_eq "the chain holds across the flood (sluice log verify)" 0 "$?"
lab_done
