#!/bin/bash
# The forwarder adds one header line (its stamp) to the first head, and the
# proxy takes at most HEADERS_MAX (100) lines. A forwarder that accepted 100
# client lines passed a 101-line head the proxy refused (431) before it read
# the stamp: an unattributed refusal keyed by the forwarder's own address, so
# a sandbox flooding such heads spent the row budget of every host client on
# that address and their not-granted rows (and refusal ids) were counted, not
# written. Now the forwarder takes at most HEADERS_MAX - 1 client lines and
# answers more itself with 431 (too many headers), never reaching the proxy;
# a 99-line head (Host + 98) is still served, stamped.
source "$(dirname "$0")/lab.sh"
lab_up
# a small row budget, so the flood below spends it for sure
lab_start_stamped_proxy "allow good.test" "log-row-rate 1" "log-row-burst 20"
FWD_PORT=3129
ip netns exec "$HNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net lab \
	"127.0.0.1:$FWD_PORT=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward.err" 2>&1 &
LAB_PIDS+=($!)
wait_until 5 hx bash -c "</dev/tcp/127.0.0.1/$FWD_PORT" ||
	lab_bail "sluice-forward did not start" "$(cat "$LAB_DIR/forward.err")"

# N header lines: Host (curl's) plus N-1 of ours; curl's Accept, User-Agent
# and Proxy-Connection suppressed
hdrs() { local i; for ((i = 1; i < $1; i++)); do printf -- '-H\nX-H%d: v\n' "$i"; done; }
fwd() {
	local n=$1 path=$2 a
	mapfile -t a < <(hdrs "$n")
	hx curl -s -o "$LAB_DIR/body" -w '%{http_code}' --max-time 10 -x "http://127.0.0.1:$FWD_PORT" \
		-H 'Accept:' -H 'User-Agent:' -H 'Proxy-Connection:' "${a[@]}" "http://good.test$path"
}
expect_eq "99 header lines (Host + 98) through the forwarder: served" 200 "$(fwd 99 /h99)"
expect_eq "... its row is the stamped principal's" 127.0.0.1@lab "$(logq path=/h99 --field who)"
expect_eq "100 header lines through the forwarder: 431 (too many headers)" 431 "$(fwd 100 /h100)"
expect_re "... answered by the forwarder, saying why" 'sluice-forward: .*header lines' "$(cat "$LAB_DIR/body")"
expect_eq "101 header lines: 431 too" 431 "$(fwd 101 /h101)"
big=$(head -c 20000 /dev/zero | tr '\0' a)
expect_eq "a head over the forwarder's size limit: 431 too (too large, as the proxy says it)" 431 \
	"$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://127.0.0.1:$FWD_PORT" \
		-H "X-Big: $big" http://good.test/h-big)"
expect_eq "... neither reached the proxy (no row, no too-many-headers row)" "0 0" \
	"$(logq 'path~/h10' | tr -d '\n') $(logq reason=too-many-headers)"

# a sandbox floods 100-line heads through the forwarder; meanwhile a host
# client on 127.0.0.1 (the forwarder's address) is refused: all its rows,
# with their refusal ids, are written
cat >"$LAB_DIR/flood.py" <<'PYEOF'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
head = "GET http://good.test/flood HTTP/1.1\r\nHost: good.test\r\n" + \
    "".join("X-H%d: v\r\n" % i for i in range(99)) + "\r\n"
codes = {}
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(head.encode())
    b = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            b += d
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    c = b[9:12].decode() if b.startswith(b"HTTP/1.") else "none"
    codes[c] = codes.get(c, 0) + 1
print(" ".join("%s=%d" % kv for kv in sorted(codes.items())))
PYEOF
hx "$PY" "$LAB_DIR/flood.py" "$FWD_PORT" 2000 >"$LAB_DIR/flood.out" 2>&1 &
fpid=$!
n=0
while kill -0 "$fpid" 2>/dev/null && [ $n -lt 50 ]; do
	n=$((n + 1))
	code=$(pcode "http://denied.test/host-client-$n")
	[ "$code" = 403 ] || not_ok "the host client's request $n is refused (not granted)" "$code"
done
wait "$fpid"
expect_eq "2000 heads of 100 lines through the forwarder: all 431" "431=2000" "$(cat "$LAB_DIR/flood.out")"
expect_ge "the host client was refused during the flood" 1 "$n"
wait_log 3 path=/host-client-$n || true
expect_eq "the host client's $n not-granted rows are all written" "$n" "$(logq 'path~/host-client-')"
expect_eq "... each with its refusal id" "$n" \
	"$(grep '"path":"/host-client-' "$NETLOG" | grep -cE '"refusal":"[0-9a-f]{16}"')"
sleep 1.2 # a suppression row is written a second after the first row it counts
expect_eq "no suppression row (nothing of anyone's was counted, not written)" 0 "$(logq kind=suppressed)"
lab_done
