#!/bin/bash
# integ: alone (--wait at once is < 0.5 s; its 1 s timeout must end within 1.5 s)
# sluice-forward following its --netns: the sandbox namespace is deleted and
# re-created (a sandbox restarted) and the forwarder, still running, listens
# in the new one; a connection accepted in the old one keeps working.
# `sluice-forward --wait` says when a listener is up, without connecting.
#
# The sandbox namespace is joined to nothing: its clients reach the proxy
# only through the forwarder, which accepts inside it and dials from $HNS.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_stamped_proxy "allow good.test"

FWD=$SLUICE_BUILD/sluice-forward
SNS=slb${HNS#slh}
SPATH=/run/netns/$SNS
FWD_ADDR=127.0.0.1:3129
sbx() { ip netns exec "$SNS" "$@"; }
# scurl PATH: through the forwarder from inside the sandbox; prints the status
scurl() { sbx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$FWD_ADDR" "http://good.test$1" 2>&1; true; }
fwait() { "$FWD" --wait "$SPATH" "$@" </dev/null; }

ip netns add "$SNS" || lab_bail "ip netns add $SNS"
LAB_EXTRA_NS+=("$SNS")
ip -n "$SNS" link set lo up
# in the real mount namespace (not ip netns exec's private one), as it runs for real
nsenter --net="/run/netns/$HNS" "$FWD" --key "$STATE/stamp.key" --net sandbox --netns "$SPATH" \
	"$FWD_ADDR=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward.err" 2>&1 &
FPID=$!
LAB_PIDS+=($FPID)
fwait "$FWD_ADDR" --timeout 5 || lab_bail "sluice-forward listens in $SNS" "$(cat "$LAB_DIR/forward.err")"

# --wait on its own
t0=$(now)
fwait "$FWD_ADDR" --timeout 5
rc=$?
el=$(elapsed "$t0")
expect_eq "--wait exits 0 for an address something listens on" 0 "$rc"
expect_lt "... at once (${el} s)" 0.5 "$el"
t0=$(now)
err=$(fwait 127.0.0.1:3999 --timeout 1 2>&1)
rc=$?
el=$(elapsed "$t0")
expect_eq "--wait exits 1 when nothing listens there until its timeout" 1 "$rc"
expect_ge "... after the timeout (${el} s)" 1.0 "$el"
expect_lt "... not much later (${el} s)" 1.5 "$el"
expect_eq "... with one line on stderr" 1 "$(printf '%s\n' "$err" | grep -c .)"
expect_re "... naming the address and the namespace" "3999.*$SPATH|$SPATH.*3999" "$err"
expect_eq "--wait finds a wildcard listener on the port" 0 \
	"$(sbx "$PY" -c 'import socket, subprocess, sys
s = socket.socket(); s.bind(("0.0.0.0", 3998)); s.listen(1)
print(subprocess.call(sys.argv[1:]))' "$FWD" --wait "$SPATH" 127.0.0.1:3998 --timeout 2 </dev/null)"
expect_eq "--wait does not take a socket in another state (bound, not listening)" 1 \
	"$(sbx "$PY" -c 'import socket, subprocess, sys
s = socket.socket(); s.bind(("127.0.0.1", 3997))
print(subprocess.call(sys.argv[1:], stderr=subprocess.DEVNULL))' "$FWD" --wait "$SPATH" 127.0.0.1:3997 --timeout 0.3 </dev/null)"
fwait "$FWD_ADDR" --timeout 0 2>/dev/null
expect_eq "--wait refuses a timeout of 0 (usage, 2)" 2 "$?"
fwait "$FWD_ADDR" --timeout 121 2>/dev/null
expect_eq "--wait refuses a timeout over 120 s (usage, 2)" 2 "$?"
fwait 127.0.0.1 2>/dev/null
expect_eq "--wait refuses an address without a port (usage, 2)" 2 "$?"
"$FWD" --wait "$SPATH" 2>/dev/null
expect_eq "--wait without ADDR:PORT is a usage error (2)" 2 "$?"
expect_eq "--wait ignores the OCI state on stdin (a pipe left open)" 0 \
	"$( (echo '{"ociVersion":"1.0.2","id":"x","status":"creating","pid":1,"bundle":"/"}'; sleep 1) |
		timeout 2 "$FWD" --wait "$SPATH" "$FWD_ADDR" --timeout 1; echo $?)"
"$FWD" --help 2>&1 | grep -q -- '--wait NETNS_PATH ADDR:PORT'
expect_eq "the usage text documents --wait" 0 "$?"

# served through the sandbox's listener, stamped
expect_eq "a client in the sandbox is served through the forwarder" 200 "$(scurl /ns1)"
expect_eq "... its row is stamped: who, src, net, as" "127.0.0.1@sandbox 127.0.0.1 sandbox null" \
	"$(for f in who src net as; do logq path=/ns1 --field $f; done | paste -sd' ')"
code=$(sbx curl -s -o /dev/null -w '%{http_code}' --max-time 3 -x "$PROXY_URL" http://good.test/direct 2>&1; true)
expect_eq "... while the sandbox cannot reach the proxy itself" 000 "$code"

# a connection accepted before the namespace goes away keeps working
sbx "$PY" - "$LAB_DIR/go" >"$LAB_DIR/held.out" 2>&1 <<'PYEOF' &
import os, socket, sys, time
def get(s, path):
    s.sendall(("GET http://good.test%s HTTP/1.1\r\nHost: good.test\r\n\r\n" % path).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        d = s.recv(4096)
        if not d:
            return "eof"
        data += d
    head, body = data.split(b"\r\n\r\n", 1)
    n = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            n = int(line.split(b":")[1])
    while len(body) < n:
        d = s.recv(4096)
        if not d:
            break
        body += d
    return head.split(b" ")[1].decode()
s = socket.create_connection(("127.0.0.1", 3129), timeout=10)
a = get(s, "/held1")
print("first", a, flush=True)
t0 = time.monotonic()
while not os.path.exists(sys.argv[1]) and time.monotonic() - t0 < 20:
    time.sleep(0.05)
print("second", get(s, "/held2"), flush=True)
PYEOF
HELD=$!
LAB_PIDS+=($HELD)
wait_until 5 grep -q first "$LAB_DIR/held.out"

# the sandbox goes away: the forwarder stays, its listener with it
ip netns del "$SNS"
sleep 0.5
kill -0 "$FPID" 2>/dev/null
expect_eq "with the sandbox namespace deleted, the forwarder is still running" 0 "$?"
err=$(fwait "$FWD_ADDR" --timeout 0.3 2>&1)
expect_eq "... and --wait does not report a listener in a namespace that is gone" 1 "$?"
expect_re "... (saying there is none)" "no network namespace" "$err"

# re-created: 12 clients one after another, each after --wait
ip netns add "$SNS" || lab_bail "ip netns add $SNS again"
ip -n "$SNS" link set lo up
served=0 waited=0
for i in $(seq 1 12); do
	fwait "$FWD_ADDR" --timeout 5 && waited=$((waited + 1))
	[ "$(scurl "/again$i")" = 200 ] && served=$((served + 1))
done
expect_eq "in the re-created namespace --wait saw the listener before each of 12 clients" 12 "$waited"
expect_eq "... and all 12 clients were served" 12 "$served"
expect_eq "... 12 rows, all stamped for the sandbox" 12 "$(logq 'path~/again' who=127.0.0.1@sandbox)"
expect_eq "the forwarder said once that it moved" 1 \
	"$(grep -c "following $SPATH: listening in new namespace (inode [0-9]*)" "$LAB_DIR/forward.err")"

touch "$LAB_DIR/go"
wait "$HELD"
expect_eq "a connection accepted in the old namespace kept working after the move" \
	"first 200 second 200" "$(paste -sd' ' "$LAB_DIR/held.out")"
expect_eq "... both of its requests logged on one connection" 1 \
	"$(for p in /held1 /held2; do logq path=$p --field conn; done | sort -u | wc -l)"

# re-created while --wait is already waiting (it starts before the namespace exists)
ip netns del "$SNS"
fwait "$FWD_ADDR" --timeout 5 >"$LAB_DIR/wait.out" 2>&1 &
W=$!
sleep 0.3
ip netns add "$SNS"
ip -n "$SNS" link set lo up
wait "$W"
expect_eq "--wait started before the namespace existed sees the forwarder's new listener" 0 "$?"
expect_eq "... and that client is served" 200 "$(scurl /late)"
expect_eq "the forwarder moved twice in all, and is still running" "2 0" \
	"$(grep -c 'listening in new namespace' "$LAB_DIR/forward.err") $(kill -0 "$FPID" 2>/dev/null; echo $?)"

# re-created with lo still down: 127.0.0.1 does not exist there yet, the
# listener binds it anyway (IP_FREEBIND) and is served once lo is up
ip netns del "$SNS"
ip netns add "$SNS"
wait_until 3 bash -c "[ \$(grep -c 'listening in new namespace' '$LAB_DIR/forward.err') = 3 ]"
expect_eq "the forwarder moved into a namespace whose lo is down" 3 \
	"$(grep -c 'listening in new namespace' "$LAB_DIR/forward.err")"
expect_eq "... (127.0.0.1 is not configured there yet)" "" "$(ip -n "$SNS" -4 addr show dev lo 2>&1)"
fwait "$FWD_ADDR" --timeout 1
expect_eq "... --wait sees its listener" 0 "$?"
ip -n "$SNS" link set lo up
expect_eq "... and once lo is up a client is served" 200 "$(scurl /freebind)"

# the port is taken in the new namespace: one line, retried every tick, moved once free
ip netns del "$SNS"
unshare --net sh -c 'ip link set lo up; exec "$0" -c "
import socket, time
s = socket.socket(); s.bind((\"127.0.0.1\", 3129)); s.listen(1)
time.sleep(1.5); s.close(); time.sleep(30)"' "$PY" &
HOLDER=$!
LAB_PIDS+=($HOLDER)
"$FWD" --wait "/proc/$HOLDER/ns/net" 127.0.0.1:3129 --timeout 5 </dev/null ||
	not_ok "the port holder listens" "$(cat "$LAB_DIR/bg.log" 2>/dev/null | tail -3)"
ip netns attach "$SNS" "$HOLDER" || not_ok "ip netns attach $SNS"
sleep 0.6
expect_eq "with its port taken in the new namespace the forwarder says so once" 1 \
	"$(grep -c "following $SPATH: listen in new namespace (inode [0-9]*): .*; retrying" "$LAB_DIR/forward.err")"
wait_until 5 bash -c "[ \$(grep -c 'listening in new namespace' '$LAB_DIR/forward.err') = 4 ]"
expect_eq "... and moves in once the port is free" 4 \
	"$(grep -c 'listening in new namespace' "$LAB_DIR/forward.err")"
expect_eq "... where a client is served" 200 "$(scurl /retried)"
expect_eq "... still one line about the failure" 1 "$(grep -c 'retrying' "$LAB_DIR/forward.err")"
kill "$HOLDER" 2>/dev/null
lab_done
