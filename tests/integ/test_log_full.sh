#!/bin/bash
# A full disk under a chained log (log-chain on): the row whose write fails
# part way is left cut short in the file; once there is room again the
# proxy's next row starts on a line of its own with prev the hash of the cut
# part, and `sluice log verify` accepts the cut row (exit 0), naming it, as
# the failed write it was, not as tampering. The disk is a 128 KiB tmpfs
# mounted over the lab's state directory (unmounted at teardown).
source "$(dirname "$0")/lab.sh"
lab_up
mkdir -p "$LAB_DIR/state"
mount -t tmpfs -o size=128k,mode=0700 sluice-test "$LAB_DIR/state" ||
	lab_bail "a small tmpfs for the state directory" "mount failed"
LAB_MOUNTS+=("$LAB_DIR/state")
lab_start_proxy "allow good.test" "log-chain on"

for i in 1 2 3; do pcurl -o /dev/null "http://good.test/before$i"; done
wait_log 3 path=/before3 || lab_bail "the first rows are written" "$(tail -3 "$LAB_DIR/proxy.err")"

# fill the disk, then write rows until one is cut (it crosses into a page
# the disk no longer has); each request is still answered
dd if=/dev/zero of="$STATE/filler" bs=4096 >/dev/null 2>&1
expect_eq "the disk is full (a 1-byte write fails)" fails \
	"$(printf x 2>/dev/null >>"$STATE/probe" && [ -s "$STATE/probe" ] && echo fits || echo fails)"
rm -f "$STATE/probe"
served=0
for i in $(seq 1 40); do
	code=$(pcurl -o /dev/null -w '%{http_code}' "http://good.test/full$i")
	[ "$code" = 200 ] && served=$((served + 1))
	[ -n "$(tail -c 1 "$NETLOG")" ] && break # the file ends inside a row: cut
done
expect_eq "requests made while the disk is full are answered" "$i" "$served"
expect_re "the proxy says its log write failed" "netlog: write .*(No space left|short write)" \
	"$(cat "$LAB_DIR/proxy.err")"
cut_line=$(wc -l <"$NETLOG")
cut_line=$((cut_line + 1))
expect_eq "a row was cut short by the full disk (the file ends inside it)" cut \
	"$([ -n "$(tail -c 1 "$NETLOG")" ] && echo cut || echo whole)"

rm -f "$STATE/filler"
pcurl -o /dev/null http://good.test/after
wait_log 3 path=/after || lab_bail "a row is written once there is room" "$(tail -3 "$LAB_DIR/proxy.err")"
out=$("$PY" - "$NETLOG" "$cut_line" <<'PYEOF'
import hashlib, json, sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
cut = lines[int(sys.argv[2]) - 1]
try:
    json.loads(cut)
    print("the cut line is a whole row")
    sys.exit(0)
except ValueError:
    pass
nxt = json.loads(lines[int(sys.argv[2])])
print("ok" if nxt["prev"] == hashlib.sha256(cut).hexdigest() else "prev does not hash the cut line")
PYEOF
)
expect_eq "the next row, on a line of its own, has prev the SHA-256 of the cut part (hashlib)" ok "$out"
out=$(sl log verify 2>&1)
rc=$?
expect_eq "sluice log verify exits 0: a failed write is not tampering" 0 "$rc"
expect_re "... saying the chain holds and naming the cut row" \
	"chain holds.*cut short by a failed write: 1 \\(the first [^ ]*network\\.log:$cut_line\\)" "$out"

# a budget's first count on a full disk: STATE/budgets cannot be sized, so
# the counts stay in memory (said so), and the budget still brakes
sl allow add other.test --max-requests 1 >/dev/null 2>&1 || not_ok "allow add other.test --max-requests 1"
sleep 1.5 # the proxy loads the store within a second
expect_eq "STATE/budgets is there, empty: no count yet" 0 "$(stat -c %s "$STATE/budgets")"
dd if=/dev/zero of="$STATE/filler" bs=4096 >/dev/null 2>&1
ocode() { pcurl -o /dev/null -w '%{http_code}' "http://other.test/$1"; }
expect_eq "the disk full again, other.test's first request passes" 200 "$(ocode budget-1)"
expect_eq "... the second is refused: the budget holds" 403 "$(ocode budget-2)"
expect_re "... the proxy says the counts are in memory only" \
	'budgets: .*No space left on device.*
.*budgets: counted in memory only: a restart starts them again' "$(cat "$LAB_DIR/proxy.err")"
expect_eq "... still running" 0 "$(kill -0 "$PROXY_PID"; echo $?)"
rm -f "$STATE/filler"
lab_done
