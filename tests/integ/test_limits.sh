#!/bin/bash
# integ: alone (six requests beside a trickler each answered under 1 s)
# Timeouts and limits: a trickling head gets 408 while others are served,
# silent upstream 504, refused upstream 502, unanswered connect 504, a
# thousand idle clients, max-connections 503.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "head-timeout 2" "response-timeout 2" "connect-timeout 2" \
	"allow good.test" "allow good.test:9001" "allow good.test:9999" "allow blackhole.test"

# --- a trickler does not hold up anyone, and gets 408
hx "$PY" "$INTEG_DIR/raw.py" --addr "$PROXY_ADDR" --port "$PROXY_PORT" --meta --trickle 1.0 --timeout 10 \
	'GET http://good.test/trickle HTTP/1.1\r\nHost: good.test\r\nUser-Agent: trickler\r\n\r\n' >"$LAB_DIR/trickle.out" 2>&1 &
tpid=$!
sleep 0.3
slow=0
worst=0
for i in 1 2 3 4 5 6; do
	t=$(hx curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 -x "$PROXY_URL" "http://good.test/while-trickle-$i")
	[ "${t%% *}" = 200 ] || slow=$((slow + 1))
	worst=$(awk -v a="$worst" -v b="${t#* }" 'BEGIN{print (b>a)?b:a}')
	sleep 0.2
done
expect_eq "six requests while a client trickles its head: all 200" 0 "$slow"
expect_lt "... each answered well before the trickler's head-timeout" 1.0 "$worst"
wait "$tpid"
out=$(cat "$LAB_DIR/trickle.out")
expect_refusal "head trickled one byte per second" "$out" 408 ""
el=$(meta_elapsed "$out")
expect_ge "408 not before the head-timeout (2 s)" 1.8 "$el"
expect_lt "408 soon after the head-timeout" 4.5 "$el"
expect_none "the trickled request never reached the origin" inet 'line~/trickle'
wait_log 2 reason=head-timeout
expect_eq "head timeout logged: status 408, reason head-timeout" 408 "$(logq reason=head-timeout --field status)"

# --- upstream problems
out=$(raw 'GET http://good.test:9001/silent HTTP/1.1\r\nHost: good.test:9001\r\n\r\n' --timeout 10)
expect_refusal "upstream accepts but never answers" "$out" 504 ""
el=$(meta_elapsed "$out")
expect_ge "504 not before the response-timeout (2 s)" 1.8 "$el"
expect_lt "504 soon after the response-timeout" 4.5 "$el"
wait_log 2 path=/silent
expect_eq "silent upstream logged with reason upstream-timeout" "upstream-timeout 504" "$(logq path=/silent --field reason) $(logq path=/silent --field status)"

out=$(raw 'GET http://good.test:9999/refused HTTP/1.1\r\nHost: good.test:9999\r\n\r\n' --timeout 10)
expect_refusal "upstream port with nothing listening" "$out" 502 ""
expect_lt "502 for a refused connect is immediate" 1.0 "$(meta_elapsed "$out")"
wait_log 2 path=/refused
expect_eq "refused connect logged with reason connect-failed" "connect-failed" "$(logq path=/refused --field reason)"
out=$(raw 'CONNECT good.test:9999 HTTP/1.1\r\nHost: good.test:9999\r\n\r\n' --timeout 10)
expect_refusal "CONNECT to a port with nothing listening" "$out" 502 ""

out=$(raw 'GET http://blackhole.test/ctimeout HTTP/1.1\r\nHost: blackhole.test\r\n\r\n' --timeout 10)
expect_refusal "upstream connect never answered" "$out" 504 ""
el=$(meta_elapsed "$out")
expect_ge "504 not before the connect-timeout (2 s)" 1.8 "$el"
expect_lt "504 soon after the connect-timeout" 4.5 "$el"
wait_log 2 path=/ctimeout
expect_eq "unanswered connect logged with reason connect-timeout" "connect-timeout" "$(logq path=/ctimeout --field reason)"
out=$(raw 'CONNECT blackhole.test:443 HTTP/1.1\r\nHost: blackhole.test:443\r\n\r\n' --timeout 10)
expect_refusal "CONNECT whose upstream connect is never answered" "$out" 504 ""

# --- a thousand idle connections (one client here, so its own cap is lifted)
lab_stop_proxy
lab_start_proxy "head-timeout 30" "max-connections-per-client 4096" "allow good.test"
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import resource, select, socket, sys, time
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
a, p = sys.argv[1], int(sys.argv[2])
socks = []
for i in range(1000):
    s = socket.create_connection((a, p), timeout=5)
    socks.append(s)
    if i % 2:
        s.sendall(b"GET http://good.test/ HTTP/1.1\r\n")  # half a head
time.sleep(0.5)
t0 = time.monotonic()
c = socket.create_connection((a, p), timeout=5)
c.sendall(b"GET http://good.test/idle HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n")
buf = b""
try:
    while True:
        d = c.recv(65536)
        if not d:
            break
        buf += d
except OSError:
    pass
el = time.monotonic() - t0
r, _, _ = select.select(socks, [], [], 0)
print("status=%s elapsed=%.3f closed_idle=%d" % (buf.split(b" ")[1].decode() if buf else "none", el, len(r)))
for s in socks:
    s.close()
PYEOF
)
expect_re "with 1000 idle client connections a normal request is answered" 'status=200 ' "$out"
expect_lt "... promptly" 1.0 "$(echo "$out" | sed -n 's/.*elapsed=\([0-9.]*\).*/\1/p')"
expect_re "... and the idle connections were left open" 'closed_idle=0$' "$out"
expect_eq "proxy alive after 1000 connections came and went" yes "$(proxy_alive && echo yes || echo no)"
expect_eq "proxy serves after 1000 connections came and went" 200 "$(pcode http://good.test/)"

# --- max-connections
lab_stop_proxy
lab_start_proxy "max-connections 5" "max-connections-per-client 5" "head-timeout 30" "allow good.test"
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import socket, sys, time
a, p = sys.argv[1], int(sys.argv[2])
def get(path):
    c = socket.create_connection((a, p), timeout=5)
    t0 = time.monotonic()
    c.sendall(b"GET http://good.test/%s HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n" % path)
    buf = b""
    try:
        while True:
            d = c.recv(65536)
            if not d:
                break
            buf += d
    except OSError:
        pass
    c.close()
    st = buf.split(b" ")[1].decode() if buf.startswith(b"HTTP/") else "none"
    ps = b"proxy-status:" in buf.lower()
    return "%s%s %.2f" % (st, "+ps" if ps else "", time.monotonic() - t0)
held = [socket.create_connection((a, p), timeout=5) for _ in range(5)]
time.sleep(0.5)
print("sixth", get(b"max6"))
held.pop().close()
time.sleep(0.5)
print("after", get(b"max7"))
PYEOF
)
expect_re "max-connections 5: the 6th connection gets 503 with Proxy-Status at once" '^sixth 503\+ps 0\.' "$(echo "$out" | grep '^sixth' || echo "$out")"
expect_re "max-connections 5: a slot freed is usable again" '^after 200' "$(echo "$out" | grep '^after' || echo "$out")"
wait_log 2 reason=busy
expect_eq "503 logged with reason busy" 503 "$(logq reason=busy --field status)"
# --- idle-timeout: idle tunnels and idle keep-alive connections are closed
lab_stop_proxy
lab_start_proxy "idle-timeout 2" "allow good.test" "allow good.test:9001"
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import socket, sys, time
import os, sys; sys.path.insert(0, os.environ["INTEG_DIR"]); from raw import tunnel
a, p = sys.argv[1], int(sys.argv[2])
def wait_close(s, limit=8):
    t0 = time.monotonic(); s.settimeout(limit)
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    return time.monotonic() - t0
t, h, _ = tunnel(a, p, "good.test:9001")
k = socket.create_connection((a, p), timeout=5)
k.sendall(b"GET http://good.test/idle-ka HTTP/1.1\r\nHost: good.test\r\n\r\n")
r = b""
while not r.endswith(b"\n") or b"hello" not in r:
    d = k.recv(4096)
    if not d: break
    r += d
print("tunnel %s %.2f" % (h.split(b" ")[1].decode() if h else "none", wait_close(t)))
print("keepalive %s %.2f" % (r.split(b" ")[1].decode() if r else "none", wait_close(k)))
PYEOF
)
tl=$(echo "$out" | grep '^tunnel' || echo "$out")
kl=$(echo "$out" | grep '^keepalive' || echo "$out")
expect_re "idle tunnel established" '^tunnel 200 ' "$tl"
expect_re "idle tunnel closed after idle-timeout 2 (1.5-4.5 s)" '^tunnel 200 (1\.[5-9]|[23]\.|4\.[0-4])' "$tl"
expect_re "idle keep-alive client connection closed after idle-timeout (within 4.5 s)" '^keepalive 200 ([0-3]\.|4\.[0-4])' "$kl"
wait_log 2 kind=tunnel port=9001 reason=granted "detail=idle timeout"
expect_eq "idle tunnel logged as granted, detail idle timeout" 1 "$(logq kind=tunnel port=9001 reason=granted "detail=idle timeout")"
lab_done
