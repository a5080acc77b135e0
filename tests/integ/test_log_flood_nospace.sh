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

cat >"$LAB_DIR/flood.py" <<'PYEOF'
import socket, sys
n = int(sys.argv[1])
codes = {}
for i in range(n):
    s = socket.socket()
    s.settimeout(5)
    s.bind(("127.0.0.200", 0))
    s.connect(("127.0.0.1", 3128))
    s.sendall(("GET http://other.test/nf-%d HTTP/1.1\r\nHost: other.test\r\n\r\n" % i).encode())
    buf = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except socket.timeout:
        pass
    s.close()
    c = buf[9:12].decode() if buf.startswith(b"HTTP/1.") else "none"
    codes[c] = codes.get(c, 0) + 1
print(" ".join("%s=%d" % kv for kv in sorted(codes.items())))
PYEOF
dd if=/dev/zero of="$STATE/filler" bs=4096 >/dev/null 2>&1
expect_eq "the disk is full (a 1-byte write fails)" fails \
	"$(printf x 2>/dev/null >>"$STATE/probe" && [ -s "$STATE/probe" ] && echo fits || echo fails)"
rm -f "$STATE/probe"
expect_eq "450 refusals on the full disk: all answered" "403=450" "$(hx "$PY" "$LAB_DIR/flood.py" 450 2>&1)"
expect_re "... the proxy says the counts are in memory only" \
	'lograte: .*No space left on device.*
.*row budgets: counted in memory only' "$(cat "$LAB_DIR/proxy.err")"
expect_eq "... still running" 0 "$(kill -0 "$PROXY_PID"; echo $?)"
rm -f "$STATE/filler"
lab_stop_proxy
expect_ge "once there is room, a clean stop writes the counts (a suppression row)" 1 \
	"$(logq kind=suppressed)"
lab_done
