#!/bin/bash
# Issue 27, item 8: a refusal's id is 64 random bits (16 hex digits), so a
# sandbox that sees its own refusal's id cannot guess its neighbours'; and
# `sluice allow approve ID` shows what it grants (host, port, scope, level)
# and asks on a terminal, grants without asking only with --yes, and with
# neither a terminal nor --yes refuses (exit 2) granting nothing.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy

# rid PATH: refuse one request for good.test/PATH and print its id (Proxy-Status)
rid() { header_of "$(pcurl -si "http://good.test$1")" Proxy-Status | sed -n 's/.*id=\([0-9a-f]*\):.*/\1/p'; }
ids=()
for i in 1 2 3 4 5 6 7 8; do ids+=("$(rid "/r$i")"); done
printf '# ids: %s\n' "${ids[*]}"
expect_re "a refusal's id is 16 lower-case hex digits (64 bits)" '^[0-9a-f]{16}$' "${ids[0]}"
expect_eq "... each of the eight is" 8 "$(printf '%s\n' "${ids[@]}" | grep -cE '^[0-9a-f]{16}$')"
expect_eq "... the same id in the row" "${ids[0]}" "$(logq path=/r1 --field refusal)"
# two refusals in a row: their ids as numbers are far apart, not a count on
out=$("$PY" -c '
import sys
v = [int(x, 16) for x in sys.argv[1:]]
near = [(a, b) for a, b in zip(v, v[1:]) if abs(a - b) < 1 << 32]
print("distinct %d, near %d" % (len(set(v)), len(near)))' "${ids[@]}")
expect_eq "ids in a row are not sequential: all distinct, no two consecutive within 2^32" \
	"distinct 8, near 0" "$out"

# approve without a terminal and without --yes: refused, nothing granted
: >"$STATE/grants"
code=$(sl allow approve "${ids[0]}" </dev/null >"$LAB_DIR/ap.out" 2>"$LAB_DIR/ap.err"; echo $?)
expect_eq "approve with no terminal and no --yes: exit 2" 2 "$code"
expect_re "... saying why and what to pass" "allow: approve asks on a terminal before it grants; to grant without asking pass --yes" \
	"$(cat "$LAB_DIR/ap.err")"
expect_eq "... and nothing was granted" "" "$(cat "$STATE/grants")"

# on a terminal: it shows the host, port, scope and level, and asks
ap_pty() {
	local o
	o=$("$PY" "$INTEG_DIR/onpty.py" --answer 'grant it? ' "$1" \
		ip netns exec "$HNS" "$SLUICE_BUILD/sluice" -c "$CONF" allow approve "${@:2}" 2>&1)
	printf '%s\n' "$o" | sed 's/^/# pty: /' >&2
	printf '%s\n' "$o"
}
out=$(ap_pty n "${ids[1]}" --level session)
expect_re "on a terminal it names the host" "host +good\\.test" "$out"
expect_re "... the port" "port +80" "$out"
expect_re "... the scope (no stamp: every connection)" "scope +every connection" "$out"
expect_re "... the level" "level +session" "$out"
expect_re "... and asks" "grant it\\? \\[y/N\\]" "$out"
expect_eq "... answered n: exit 1" "exit 1" "$(printf '%s\n' "$out" | tail -1)"
expect_eq "... and nothing was granted" "" "$(cat "$STATE/grants")"
expect_eq "... good.test still refused" 403 "$(pcode http://good.test/after-n)"
out=$(ap_pty y "${ids[2]}")
expect_re "answered y: granted once" "added good\\.test once, expires in 15m0s" "$out"
expect_eq "... exit 0" "exit 0" "$(printf '%s\n' "$out" | tail -1)"
served() { [ "$(pcode http://good.test/after-y)" = 200 ]; }
if wait_until 3 served; then ok "... good.test is served"; else not_ok "... good.test is served"; fi

# --yes: no question, as scripts need
: >"$STATE/grants"
out=$(sl allow approve "${ids[3]}" --yes </dev/null 2>&1)
expect_re "--yes grants without a terminal" "added good\\.test once, expires in 15m0s" "$out"
expect_not_re "... without asking" "grant it\\?" "$out"
expect_eq "an id that is neither 16 nor 12 hex digits is a usage error" 2 \
	"$(sl allow approve 0123456789abcdef0 --yes >/dev/null 2>&1; echo $?)"
lab_done
