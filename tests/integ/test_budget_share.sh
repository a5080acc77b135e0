#!/bin/bash
# One forwarder cannot fill the budget table (issue 27, item 3). A grant's
# budget counts each principal it serves for the grant's life, in a table
# of 8192 counts; one network (a forwarder's --net, a run's sluice-ID)
# holds at most a sixteenth of them (512). Past that its new principals are
# refused 403 budget (nothing sent), while its principals already counted
# and another network's new ones are still served. The real proxy, a real
# origin; stamps signed with the project's key as sluice-forward signs.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_stamped_proxy "max-connections 4096"
KEY=$STATE/stamp.key
many() { hx "$PY" "$INTEG_DIR/stamped_many.py" "$KEY" "$@"; }
stamped_get() { # SRC NET BOOT SEQ PATH: raw's output
	local st
	st=$("$PY" "$INTEG_DIR/stamp.py" "$KEY" "$1" "$2" "$3" "$4")
	raw "GET http://good.test$5 HTTP/1.1\r\nHost: good.test\r\nSluice-Stamp: $st\r\nConnection: close\r\n\r\n" --timeout 5
}
out=$(sl allow add good.test --max-requests 3 2>&1) || not_ok "allow add good.test --max-requests 3" "$out"
wait_until 10 reloaded_past 0 || not_ok "the proxy reloaded the store" "$(tail -3 "$LAB_DIR/proxy.err")"

out=$(many sluice-aaaaaaaaaaaa 00000000000000a1 1 512 /share-a-)
expect_eq "network sluice-aaaaaaaaaaaa: 512 principals, one request each, all served" "200 512 last 200" \
	"$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
expect_eq "... the origin saw the 512" 512 "$(inetq ev=req 'line~/share-a-')"
out=$(stamped_get 10.77.9.9 sluice-aaaaaaaaaaaa 00000000000000a1 1000 /share-a-513)
expect_refusal "its 513th principal is refused: its network holds its share" "$out" 403 budget \
	'budget counts cannot be kept for 10\.77\.9\.9@sluice-aaaaaaaaaaaa: network sluice-aaaaaaaaaaaa holds its share \(512 of 8192'
expect_none "... and never reached the origin" inet 'line~/share-a-513'
out=$(stamped_get 10.77.0.1 sluice-aaaaaaaaaaaa 00000000000000a1 1001 /share-a-again)
expect_eq "a principal of that network already counted is still served" 200 "$(meta_status "$out")"
out=$(stamped_get 10.77.9.9 sluice-bbbbbbbbbbbb 00000000000000b1 1 /share-b-1)
expect_eq "another network's new principal is served (the table is not full)" 200 "$(meta_status "$out")"
out=$(raw "GET http://good.test/share-u HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n" --timeout 5)
expect_eq "... and so is an unattributed client" 200 "$(meta_status "$out")"

# the counts and their networks outlive a restart
lab_stop_proxy
lab_run_proxy
out=$(stamped_get 10.77.9.8 sluice-aaaaaaaaaaaa 00000000000000a2 1 /share-a-restart)
expect_refusal "after a restart the network still holds its share" "$out" 403 budget 'holds its share'
out=$(stamped_get 10.77.9.8 sluice-cccccccccccc 00000000000000c1 1 /share-c-1)
expect_eq "... another network is still served" 200 "$(meta_status "$out")"

# a budget file from before networks were kept (v1) is carried over, its counts kept
for i in 1 2 3; do stamped_get 10.77.9.7 sluice-dddddddddddd 00000000000000d1 $i /share-d-$i >/dev/null; done
lab_stop_proxy
"$PY" - "$STATE/budgets" <<'PY'
import struct, sys
p = sys.argv[1]
b = open(p, "rb").read()
head, slots = 40, b[40:]
assert len(slots) == 8192 * 112, len(b)
v1 = b"".join(slots[i * 112:i * 112 + 96] for i in range(8192))
hd = b"sluice budgets v1".ljust(32, b"\0") + struct.pack("<Q", 40 + len(v1))
open(p, "wb").write(hd + v1)
PY
expect_eq "(the file is written back as v1: $((40 + 8192 * 96)) bytes)" $((40 + 8192 * 96)) "$(stat -c %s "$STATE/budgets")"
lab_run_proxy
out=$(stamped_get 10.77.9.7 sluice-dddddddddddd 00000000000000d2 1 /share-d-4)
expect_refusal "a v1 budget file's counts are carried over: that principal's 4th request is refused" "$out" 403 budget \
	'max-requests 3 for 10\.77\.9\.7@sluice-dddddddddddd is spent'
expect_re "... and the proxy says it carried them over" "carried over from the file before networks" "$(cat "$LAB_DIR/proxy.err")"
lab_done
