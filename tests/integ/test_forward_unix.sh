#!/bin/bash
# sluice-forward to a sluice-proxy on the same host over a unix socket
# (`listen unix:PATH`, UPSTREAM unix:PATH): no TCP hop between them. The
# socket file is 0600 and root's, so only root (sluice-forward) may connect;
# stamps, tunnels, the RST when the origin closes first and the immediate
# refusal when the proxy is gone work as over TCP; a socket left by a killed
# proxy is replaced at start, anything else at the path is left alone and the
# proxy does not start.
source "$(dirname "$0")/lab.sh"
lab_up
SOCK=$LAB_DIR/state/proxy.sock
lab_start_stamped_proxy "listen unix:$SOCK" "allow good.test" "allow good.test:9002"
FWD_PORT=3129
FWD_URL=http://127.0.0.1:$FWD_PORT

expect_eq "the proxy's unix socket is a socket of root's, mode 0600" "socket 0:0 600" \
	"$(stat -c '%F %u:%g %a' "$SOCK" 2>&1)"
expect_re "... and it says it listens there" "listening on unix:$SOCK" "$(cat "$LAB_DIR/proxy.err")"

ip netns exec "$HNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net lab \
	"127.0.0.1:$FWD_PORT=unix:$SOCK" >>"$LAB_DIR/forward.err" 2>&1 &
FPID=$!
LAB_PIDS+=($FPID)
wait_until 5 hx bash -c "</dev/tcp/127.0.0.1/$FWD_PORT" ||
	lab_bail "sluice-forward did not start" "$(cat "$LAB_DIR/forward.err")"
fcurl() { hx curl -sS --max-time 10 -x "$FWD_URL" "$@"; }

out=$(fcurl -o /dev/null -w '%{http_code}' http://good.test/u1 2>&1)
expect_eq "a request through the forwarder over the unix socket is served" 200 "$out"
expect_eq "... its row is attributed by the stamp, and names the unix socket as the client" \
	"127.0.0.1@lab 127.0.0.1 lab unix" \
	"$(logq path=/u1 --field who) $(logq path=/u1 --field src) $(logq path=/u1 --field net) $(logq path=/u1 --field client)"
fake="v=1; kid=1; src=10.9.9.9; net=evil; boot=0000000000000000; seq=1; mac=$(printf '0%.0s' $(seq 64))"
out=$(fcurl -H "Sluice-Stamp: $fake" http://good.test/echo?u2)
expect_eq "a client's forged stamp does not reach the origin" 0 "$(printf '%s' "$out" | grep -ci 'sluice-stamp')"
expect_eq "... and the row carries the forwarder's stamp" 127.0.0.1@lab "$(logq 'path~u2' --field who)"

fcurl -p -o /dev/null http://good.test:9002/ 2>/dev/null
wait_log 3 kind=tunnel port=9002
expect_eq "a CONNECT through the forwarder over the unix socket is attributed" 127.0.0.1@lab \
	"$(logq kind=tunnel port=9002 --field who)"

# the origin closes first: the client sees an RST (the forwarder waits for
# the client's acks as over TCP)
out=$(hx "$PY" "$INTEG_DIR/tunnel_end.py" 127.0.0.1 $FWD_PORT good.test:9002 2>&1)
expect_eq "the origin closed first: the client got the banner, then an RST" "rst True" "$out"

# straight to the socket: root may (an unstamped client is unattributed),
# another user may not connect at all
direct() {
	"$PY" - "$SOCK" <<'PYEOF' 2>&1
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("connect:", e.strerror)
    sys.exit(0)
s.settimeout(5)
s.sendall(b"GET http://good.test/u3 HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n")
print(s.recv(64).split(b"\r\n")[0].decode())
PYEOF
}
expect_eq "root on the unix socket without a stamp is served" "HTTP/1.1 200 OK" "$(hx bash -c "$(declare -f direct); PY=$PY SOCK=$SOCK direct")"
wait_log 3 path=/u3
expect_eq "... as unattributed, from client unix" "unattributed unix" \
	"$(logq path=/u3 --field who) $(logq path=/u3 --field client)"
expect_eq "another user cannot connect to it" "connect: Permission denied" \
	"$(hx runuser -u nobody -- bash -c "$(declare -f direct); PY=$PY SOCK=$SOCK direct")"

# the proxy gone: the forwarder's clients are refused at once
lab_stop_proxy
expect_eq "a proxy that stops removes its socket file" absent "$([ -e "$SOCK" ] && echo present || echo absent)"
t0=$(date +%s%N)
out=$(fcurl -o /dev/null -w '%{http_code}' http://good.test/u4 2>&1)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
expect_re "with the proxy gone the forwarder's client fails (no answer)" '000' "$out"
expect_lt "... at once (ms)" 2000 "$ms"

# killed with SIGKILL it leaves the socket file: the next start replaces it
lab_run_proxy
kill -9 "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null
PROXY_PID=
expect_eq "a proxy killed with SIGKILL leaves its socket file" socket "$(stat -c %F "$SOCK" 2>&1)"
lab_run_proxy
out=$(fcurl -o /dev/null -w '%{http_code}' http://good.test/u5 2>&1)
expect_eq "... the next one replaces it and is served through the forwarder" 200 "$out"
lab_stop_proxy

# a regular file at the path is not ours to remove
echo keep >"$SOCK"
hx "$SLUICE_BUILD/sluice-proxy" -c "$CONF" >/dev/null 2>"$LAB_DIR/file.err" &
p=$!
wait_until 5 bash -c "! kill -0 $p 2>/dev/null"
wait "$p" 2>/dev/null
expect_eq "a regular file at the socket's path: the proxy does not start (exit 1)" 1 $?
expect_re "... and says why" "listen unix:$SOCK: File exists" "$(cat "$LAB_DIR/file.err")"
expect_eq "... and the file is untouched" keep "$(cat "$SOCK")"
rm -f "$SOCK"

# the config's unix:PATH must be absolute and fit a socket address
for bad in "unix:relative.sock" "unix:/$(printf 'x%.0s' $(seq 120))"; do
	sed "s|^listen unix:.*|listen $bad|" "$CONF" >"$LAB_DIR/bad.conf"
	out=$(hx "$SLUICE_BUILD/sluice-proxy" -t -c "$LAB_DIR/bad.conf" 2>&1)
	rc=$?
	expect_eq "listen ${bad:0:24}...: the config is refused (exit 1)" 1 "$rc"
	expect_re "... saying what a unix:PATH needs" 'unix:PATH needs an absolute path' "$out"
done
out=$(hx "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net lab \
	"127.0.0.1:3130=unix:relative.sock" 2>&1)
expect_eq "sluice-forward refuses a relative unix: upstream (exit 2)" 2 $?
lab_done
