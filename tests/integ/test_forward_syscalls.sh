#!/bin/bash
# What one short connection costs sluice-forward in syscalls (issue 10 item
# 14), counted by strace -c -f over 40 sequential requests, each on its own
# connection: at most one read that only says EAGAIN, the head's tried as
# the connection is accepted (otherwise a direction is pumped only when its
# socket said something; curl's head comes after the accept, a fast
# client's is there already), at most 3 epoll_ctl (add the client, add the
# upstream, switch the finished client off: the client keeps EPOLLIN while
# the upstream is dialled, and the upstream is added for EPOLLIN once the
# stamped head's write proves the connect done), and at most 26 syscalls in
# all: 24 before each forwarder dialled a loopback proxy from a loopback
# address of its own (so the proxy tells runs apart from accept), which
# costs two more, a setsockopt (IP_BIND_ADDRESS_NO_PORT: the port is still
# chosen at connect) and a bind. A count, not a stopwatch: the bench (`make
# bench`) has the CPU.
source "$(dirname "$0")/lab.sh"
command -v strace >/dev/null || lab_bail "strace is not installed"
lab_up
lab_start_stamped_proxy "allow good.test"
FWD_PORT=3129
N=40
ip netns exec "$HNS" strace -f -c -o "$LAB_DIR/forward.strace" "$SLUICE_BUILD/sluice-forward" \
	--key "$STATE/stamp.key" --net lab "127.0.0.1:$FWD_PORT=$PROXY_ADDR:$PROXY_PORT" \
	>>"$LAB_DIR/forward.err" 2>&1 &
SPID=$!
LAB_PIDS+=($SPID)
wait_until 10 hx bash -c "</dev/tcp/127.0.0.1/$FWD_PORT" ||
	lab_bail "sluice-forward did not start" "$(cat "$LAB_DIR/forward.err")"
FPID=$(cat "/proc/$SPID/task/$SPID/children" 2>/dev/null)
[ -n "$FPID" ] || lab_bail "no sluice-forward under strace"

# the probe above was one connection too: counted below
served=0
for i in $(seq $N); do
	code=$(hx curl -sS --max-time 10 -x "http://127.0.0.1:$FWD_PORT" -o /dev/null \
		-w '%{http_code}' "http://good.test/s$i" 2>/dev/null)
	[ "$code" = 200 ] && served=$((served + 1))
done
expect_eq "$N requests through the forwarder under strace, each on its own connection, are served" \
	"$N" "$served"
kill "$FPID"
wait "$SPID" 2>/dev/null
conns=$((N + 1))
# strace -c: "% time seconds usecs/call calls [errors] syscall"
count() {
	awk -v sc="$1" -v col="$2" '$NF == sc { print (col == "errors" ? (NF == 6 ? $5 : 0) : $4); f = 1 }
		END { if (!f) print 0 }' "$LAB_DIR/forward.strace"
}
total=$(awk '$NF == "total" { print $4 }' "$LAB_DIR/forward.strace")
[ -n "$total" ] || lab_bail "no strace summary" "$(tail -5 "$LAB_DIR/forward.strace")"
# what start-up and shutdown cost (mmap, openat, ...) is not a connection's:
# only the syscalls a connection makes are summed
per=$(awk -v n="$conns" '
	$NF ~ /^(accept4|read|write|close|socket|setsockopt|bind|connect|epoll_ctl|epoll_wait|shutdown|pipe2|fcntl|splice|ioctl|getsockopt)$/ {
		s += $4 } END { printf "%.1f", s / n }' "$LAB_DIR/forward.strace")
echo "# per connection: $per syscalls; read errors $(count read errors), epoll_ctl $(count epoll_ctl calls), over $conns connections"
expect_le() { if awk -v a="$2" -v b="$3" 'BEGIN { exit !(b <= a) }'; then ok "$1"; else not_ok "$1" "expected <= $2, seen $3"; fi; }
expect_le "at most one read per connection says EAGAIN (the head's, at accept)" 1 \
	"$(awk -v c="$(count read errors)" -v n="$conns" 'BEGIN { printf "%.2f", c / n }')"
expect_le "at most 3 epoll_ctl per connection" 3 \
	"$(awk -v c="$(count epoll_ctl calls)" -v n="$conns" 'BEGIN { printf "%.2f", c / n }')"
expect_le "at most 26 syscalls per connection" 26 "$per"
expect_eq "... one bind per connection: the forwarder's own loopback source" 1.0 \
	"$(awk -v c="$(count bind calls)" -v n="$conns" 'BEGIN { printf "%.1f", c / n }')"
lab_done
