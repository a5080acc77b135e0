#!/bin/bash
# The row budgets' counts live in STATE/lograte, a file the proxy maps (so a
# kill -9 loses none: test_log_flood_kill.sh). A proxy that starts with no
# such file makes it at the first refusal that spends a budget; on a full
# disk it cannot be sized, so the counts stay in memory, the proxy says so
# and goes on (no SIGBUS, no refusal unanswered), and a clean stop still
# writes them. The disk is a 128 KiB tmpfs over the lab's state directory.
source "$(dirname "$0")/lab.sh"
lab_up
mkdir -p "$LAB_DIR/state"
mount -t tmpfs -o size=128k,mode=0700 sluice-test "$LAB_DIR/state" ||
	lab_bail "a small tmpfs for the state directory" "mount failed"
LAB_MOUNTS+=("$LAB_DIR/state")
lab_start_proxy "allow good.test"
expect_eq "STATE/lograte is there, empty: no count yet" 0 "$(stat -c %s "$STATE/lograte")"

dd if=/dev/zero of="$STATE/filler" bs=4096 >/dev/null 2>&1
expect_eq "the disk is full (a 1-byte write fails)" fails \
	"$(printf x 2>/dev/null >>"$STATE/probe" && [ -s "$STATE/probe" ] && echo fits || echo fails)"
rm -f "$STATE/probe"
expect_eq "450 refusals on the full disk: all answered" "403=450" "$(hx "$PY" "$INTEG_DIR/refuse_flood.py" 200 1 450 nf 2>&1)"
expect_re "... the proxy says the counts are in memory only" \
	'lograte: .*No space left on device.*
.*row budgets: counted in memory only' "$(cat "$LAB_DIR/proxy.err")"
expect_eq "... still running" 0 "$(kill -0 "$PROXY_PID"; echo $?)"
rm -f "$STATE/filler"
lab_stop_proxy
expect_ge "once there is room, a clean stop writes the counts (a suppression row)" 1 \
	"$(logq kind=suppressed)"
lab_done
