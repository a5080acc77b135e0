#!/bin/bash
# Refusal rows past a principal's budget are counted, not written, and the
# suppression row that tells them comes up to a second later. The counts
# were only in the proxy's memory, so a kill -9 in that second lost them:
# 450 answered refusals, kill -9 at once, 203 on record. Now the counts are
# in a mapped file in STATE (as the stamp replay window and the budgets
# are), and the proxy started again writes them as suppression rows before
# it serves: every answered refusal is written or counted, across a kill -9.
source "$(dirname "$0")/lab.sh"
lab_up
lab_write_conf "log-chain on"
lab_run_proxy

# on record: rows written with path /TAG- plus the not-granted counts of suppression rows
onrecord() {
	"$PY" - "$NETLOG" "$1" <<'PYEOF'
import json, sys
w = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("kind") == "suppressed":
        s += r["reasons"].get("not-granted", 0)
    elif (r.get("path") or "").startswith("/%s-" % sys.argv[2]):
        w += 1
print(w, s)
PYEOF
}

out=$(hx "$PY" "$INTEG_DIR/refuse_flood.py" 200 1 450 k9 2>&1)
kill -9 "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null
PROXY_PID=
expect_eq "450 refusals answered" "403=450" "$out"
set -- $(onrecord k9)
echo "# at the kill: $1 rows written, $2 counted in suppression rows"
expect_lt "control: the flood outran the budget (fewer than 450 rows written before the kill)" 450 "$1"
lab_run_proxy
wait_log 5 kind=suppressed || not_ok "the proxy started again writes a suppression row"
set -- $(onrecord k9)
echo "# after the start: $1 rows written, $2 counted in suppression rows"
expect_eq "all 450 answered refusals are on record across the kill -9 (written + counted)" 450 "$(($1 + $2))"
expect_eq "... in one suppression row, of the principal that made them" \
	"1 unattributed 127.0.0.0/8" \
	"$(logq kind=suppressed) $(logq kind=suppressed --field who) $(logq kind=suppressed --field client)"
expect_eq "... of the run that counted them (the killed proxy's)" \
	"$(logq path=/k9-0 --field run)" "$(logq kind=suppressed --field run)"
expect_re "... saying it was told at the start after the proxy stopped unclean" \
	'start' "$(logq kind=suppressed --field detail)"
# a clean stop and start: nothing is told twice
lab_stop_proxy
lab_run_proxy
expect_eq "control: the proxy serves after the start (refuses as before)" 403 "$(pcode http://other.test/after)"
wait_log 3 path=/after || true
set -- $(onrecord k9)
expect_eq "a second start tells nothing again" "1 450" "$(logq kind=suppressed) $(($1 + $2))"
out=$(sl log verify "$NETLOG" 2>&1)
expect_eq "the chain holds across the kill -9 and its suppression row (sluice log verify)" 0 "$?"
echo "$out" | sed 's/^/# verify: /'
lab_done
