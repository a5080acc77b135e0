#!/bin/bash
# log-chain on: every row of the network log carries "prev", the SHA-256 (hex)
# of the exact bytes of the row before it (its newline not included); the
# first row of a file hashes the last row of the file it rotated from, and
# the first row after a restart the last row the file holds. `sluice log
# verify [FILE...]` checks the chain across rotated files: exit 0 when it
# holds, 1 naming the first row where it breaks. The hashes are checked here
# with python's hashlib too, not only by the CLI that shares the writer's code.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "allow good.test" "log-chain on" "log-rotate-bytes 4096" "log-keep 5"

# chain_py FILE...: check the chain with hashlib, oldest file first; prints
# "ok ROWS" or "broken FILE:LINE" (the first row whose prev is wrong)
chain_py() {
	"$PY" - "$@" <<'PYEOF'
import hashlib, json, sys
prev = None
rows = 0
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for i, line in enumerate(lines, 1):
        row = json.loads(line)
        want = hashlib.sha256(prev).hexdigest() if prev is not None else None
        if list(row)[-1] != "prev" or row["prev"] != want:
            print("broken %s:%d" % (path, i))
            sys.exit(0)
        prev = line
        rows += 1
print("ok", rows)
PYEOF
}
vlog() { sl log verify "$@" 2>&1; }

# rows until the log has rotated twice (and no further: nothing rotated away)
for i in $(seq 1 40); do
	pcurl -o /dev/null "http://good.test/c$i"
	[ -e "$NETLOG.2" ] && break
done
pcurl -o /dev/null "http://good.test/c-last"
wait_log 3 path=/c-last || lab_bail "the rows are written" "$(tail -3 "$LAB_DIR/proxy.err")"
expect_eq "the rows rotated into network.log.1 and .2 (log-rotate-bytes 4096)" "yes yes" \
	"$([ -s "$NETLOG.1" ] && echo yes || echo no) $([ -s "$NETLOG.2" ] && echo yes || echo no)"
out=$(chain_py "$NETLOG.2" "$NETLOG.1" "$NETLOG")
expect_re "every row's prev is the SHA-256 of the row before it, across both rotations (hashlib)" \
	'^ok [0-9]+$' "$out"
expect_eq "... and the very first row's prev is null" null \
	"$(head -1 "$NETLOG.2" | "$PY" -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read())["prev"]))')"
out=$(vlog)
rc=$?
expect_eq "sluice log verify (the config's log and its rotated files) exits 0" 0 "$rc"
expect_re "... saying the chain holds, from the log's first row" 'chain holds.*network\.log\.2:1 .*first row' "$out"
head=$(printf '%s' "$out" | sed -n "s/.*last row's hash \([0-9a-f]*\).*/\1/p")
expect_eq "... and giving the last row's hash (an anchor to keep elsewhere)" \
	"$(tail -1 "$NETLOG" | tr -d '\n' | sha256sum | cut -d' ' -f1)" "$head"
out=$(vlog "$NETLOG" "$NETLOG.1" "$NETLOG.2")
expect_eq "verify FILE... takes rotated files in rotation order, whatever the order given" 0 $?

# a restart: the first row hashes the last row the file already holds
last_before=$(tail -1 "$NETLOG")
lab_stop_proxy
lab_run_proxy
pcurl -o /dev/null http://good.test/after-restart
wait_log 3 path=/after-restart
want=$(printf '%s' "$last_before" | sha256sum | cut -d' ' -f1)
row=$(grep -n '"path":"/after-restart"' "$NETLOG" | head -1)
if [ "${row%%:*}" = 1 ]; then # the row rotated the file: its predecessor ends network.log.1
	prevline=$(tail -1 "$NETLOG.1")
else
	prevline=$(awk -v n="${row%%:*}" 'NR == n - 1' "$NETLOG")
fi
expect_eq "after a restart the first row's prev hashes the last row written before it" \
	"$want" "$(logq path=/after-restart --field prev)"
expect_eq "... which is still the row just before it in the file" "$last_before" "$prevline"
out=$(vlog)
expect_eq "... and verify still exits 0" "0" "$?"
out=$(vlog --anchor "$head")
rc=$?
expect_eq "verify --anchor (the hash printed before the restart) exits 0" 0 "$rc"
expect_re "... the anchor is in the chain" 'the anchor is in it' "$out"
sl log verify --anchor abc >/dev/null 2>&1
expect_eq "a malformed --anchor is a usage error (2)" 2 $?

# tampering, each on a copy of the three files
lab_stop_proxy
copy() {
	local d=$LAB_DIR/$1
	rm -rf "$d"
	mkdir -p "$d"
	cp "$NETLOG" "$NETLOG.1" "$NETLOG.2" "$d/"
	echo "$d"
}
n1=$(wc -l <"$NETLOG.1")
[ "$n1" -ge 3 ] || lab_bail "network.log.1 holds at least three rows" "$n1"

d=$(copy del)
sed -i 2d "$d/network.log.1"
out=$(vlog "$d"/network.log*)
rc=$?
expect_eq "a middle row deleted: verify exits 1" 1 "$rc"
expect_re "... naming the row after the gap" "network\\.log\\.1:2: " "$out"

d=$(copy edit)
sed -i '2s/"status":200/"status":201/' "$d/network.log.2"
cmp -s "$d/network.log.2" "$NETLOG.2" && lab_bail "the edit changed the copy"
out=$(vlog "$d"/network.log*)
rc=$?
expect_eq "a field edited (status 200 to 201): verify exits 1" 1 "$rc"
expect_re "... naming the row after the edited one" "network\\.log\\.2:3: " "$out"
expect_eq "... hashlib agrees" "broken $d/network.log.2:3" "$(chain_py "$d/network.log.2" "$d/network.log.1" "$d/network.log")"

d=$(copy first)
sed -i 1d "$d/network.log.1"
out=$(vlog "$d"/network.log*)
rc=$?
expect_eq "the first row of a rotated file deleted: verify exits 1" 1 "$rc"
expect_re "... naming that file's new first row" "network\\.log\\.1:1: " "$out"

d=$(copy lastrot)
sed -i '$d' "$d/network.log.2"
out=$(vlog "$d"/network.log*)
rc=$?
expect_eq "the last row of a rotated file deleted: verify exits 1" 1 "$rc"
expect_re "... naming the first row of the next file" "network\\.log\\.1:1: " "$out"

d=$(copy trunc)
n=$(wc -l <"$d/network.log")
truncate -s -20 "$d/network.log"
out=$(vlog "$d"/network.log*)
rc=$?
expect_eq "the last row cut short (a failed write looks so, and nothing follows to tell): verify exits 0" 0 "$rc"
expect_re "... naming it as a cut last line nothing vouches for" \
	"the last line, [^ ]*network\\.log:$n, is a row cut short.*nothing after it vouches" "$out"

d=$(copy midcut)
# a row in the middle cut short, its newline kept: the row after it does not hash it
"$PY" - "$d/network.log.1" <<'PYEOF'
import sys
lines = open(sys.argv[1], "rb").read().split(b"\n")
lines[1] = lines[1][:40]
open(sys.argv[1], "wb").write(b"\n".join(lines))
PYEOF
out=$(vlog "$d"/network.log*)
rc=$?
expect_eq "a row in the middle cut short by hand: verify exits 1" 1 "$rc"
expect_re "... naming the row after it, whose prev does not hash the cut line" \
	"network\\.log\\.1:3: .*the line before it is cut short" "$out"

d=$(copy rewrite)
# a rewrite: one row edited and every prev after it computed again
"$PY" - "$d/network.log.2" "$d/network.log.1" "$d/network.log" <<'PYEOF'
import hashlib, sys
prev = None
for n, path in enumerate(sys.argv[1:]):
    out = []
    for i, line in enumerate(open(path, "rb").read().split(b"\n")[:-1]):
        if n == 1 and i == 1:
            line = line.replace(b'"status":200', b'"status":299')
        if prev is not None:
            line = line[: line.rindex(b',"prev":')] + b',"prev":"' + hashlib.sha256(prev).hexdigest().encode() + b'"}'
        out.append(line)
        prev = line
    open(path, "wb").write(b"".join(l + b"\n" for l in out))
PYEOF
grep -q '"status":299' "$d/network.log.1" || lab_bail "the rewrite changed a row"
out=$(vlog "$d"/network.log*)
expect_eq "a row edited and every later prev recomputed: the chain alone holds (exit 0)" 0 $?
out=$(vlog --anchor "$head" "$d"/network.log*)
rc=$?
expect_eq "... but verify --anchor (the hash kept from before) exits 1" 1 "$rc"
expect_re "... saying no row hashes to it" 'no row hashes to the anchor' "$out"

d=$(copy tail)
sed -i '$d' "$d/network.log"
out=$(vlog "$d"/network.log*)
expect_eq "(a whole last row removed leaves a chain that holds: nothing follows it to tell)" 0 $?

d=$(copy gap)
rm "$d/network.log.1"
out=$(vlog "$d/network.log.2" "$d/network.log")
rc=$?
expect_eq "a whole rotated file missing between two others: verify exits 1" 1 "$rc"
expect_re "... naming the first row after the gap" "network\\.log:1: " "$out"

# the writer continues after a cut row: its next row, on a line of its own,
# hashes the cut line (test_log_full.sh makes the cut with a full disk)
truncate -s -20 "$NETLOG"
lab_run_proxy
pcurl -o /dev/null http://good.test/after-cut
wait_log 3 path=/after-cut
expect_eq "after a cut last row the proxy's next row starts on a line of its own" \
	/after-cut "$(tail -1 "$NETLOG" | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read())["path"])')"
out=$(vlog)
rc=$?
expect_eq "... and verify exits 0: that row vouches for the cut one" 0 "$rc"
n=$(($(wc -l <"$NETLOG") - 1))
expect_re "... naming the cut row, and what cannot be shown" \
	"cut short by a failed write: 1 \\(the first [^ ]*network\\.log:$n\\).*cannot be shown" "$out"
lab_stop_proxy

# log-chain off (the default): plain rows, which nothing can verify
rm -f "$NETLOG" "$NETLOG".*
lab_start_proxy "allow good.test"
pcurl -o /dev/null http://good.test/plain
wait_log 3 path=/plain
expect_eq "log-chain off: rows carry no prev" absent \
	"$(logq path=/plain --json | "$PY" -c 'import json,sys; print("present" if "prev" in json.loads(sys.stdin.read()) else "absent")')"
out=$(vlog)
rc=$?
expect_eq "... and verify exits 1" 1 "$rc"
expect_re "... saying the log is not chained" "no row carries prev" "$out"
out=$(sl log verify /nonexistent/network.log 2>&1)
expect_eq "verify of a file that is not there exits 1" 1 $?
lab_done
