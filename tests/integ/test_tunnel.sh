#!/bin/bash
# CONNECT tunnels: half-close both ways, bytes in the log, and live policy
# changes: narrowing closes exactly the tunnels the new policy refuses
# (log reason revoked), through the store, SIGHUP, and an edited config.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_proxy "allow good.test:9000" "allow good.test:9002" "allow other.test:80" "allow third.test:80"

# --- client half-close: the reply still comes back
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import hashlib, socket, sys
import os, sys; sys.path.insert(0, os.environ["INTEG_DIR"]); from raw import tunnel
s, head, status = tunnel(sys.argv[1], sys.argv[2], "good.test:9000", timeout=10)
if status != 200:
    print("connect-failed", head[:100]); sys.exit()
data = bytes(range(256)) * 400  # 102400 bytes
s.sendall(data)
s.shutdown(socket.SHUT_WR)
reply = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    reply += d
want = b"got %d bytes sha256=%s\n" % (len(data), hashlib.sha256(data).hexdigest().encode())
print("ok" if reply == want else "bad reply %r" % reply[:200])
PYEOF
)
expect_eq "tunnel: client shuts its write side, still receives the origin's reply" ok "$out"
wait_log 3 kind=tunnel host=good.test port=9000
row=$(logq kind=tunnel host=good.test port=9000 --json)
expect_eq "tunnel row: up counts the 102400 payload bytes" 102400 "$(logq kind=tunnel host=good.test port=9000 --field up)"
expect_eq "tunnel row: down counts the reply bytes" 89 "$(logq kind=tunnel host=good.test port=9000 --field down)"
expect_eq "tunnel row: method CONNECT, path null, status 200, dialed 203.0.113.10:9000" "CONNECT null 200 203.0.113.10:9000" \
	"$(logq kind=tunnel host=good.test port=9000 --field method) $(logq kind=tunnel host=good.test port=9000 --field path) $(logq kind=tunnel host=good.test port=9000 --field status) $(logq kind=tunnel host=good.test port=9000 --field dialed)"

# --- origin half-close: the client sees EOF and can still send (20 tries: the
# origin's FIN right behind its first bytes has raced with tunnel setup)
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import socket, sys
import os, sys; sys.path.insert(0, os.environ["INTEG_DIR"]); from raw import tunnel
res = []
for i in range(20):
    s, head, status = tunnel(sys.argv[1], sys.argv[2], "good.test:9002", timeout=2)
    if status != 200:
        res.append("connect-failed %r" % head[:60]); break
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except OSError:
        res.append("try %d: no EOF after the origin's FIN (got %r)" % (i + 1, got)); s.close(); continue
    if got != b"banner\n":
        res.append("try %d: bad banner %r" % (i + 1, got)); s.close(); continue
    s.sendall(b"late data after the origin's FIN %d\n" % i)
    s.shutdown(socket.SHUT_WR)
    try:
        rest = s.recv(100)
    except OSError as e:
        rest = repr(e).encode()
    if rest != b"":
        res.append("try %d: unexpected %r" % (i + 1, rest))
    s.close()
print("ok" if not res else "; ".join(res[:3]) + " (%d of 20 failed)" % len(res))
PYEOF
)
expect_eq "tunnel: origin shuts its write side, client gets EOF and keeps sending (20 tries)" ok "$out"
wait_until 3 bash -c "grep -q 'late data' '$LAB_DIR/halfclose2.jsonl'"
expect_ge "origin received the client's data sent after its own FIN" 1 "$(jq_ "$LAB_DIR/halfclose2.jsonl" 'data~late data after')"

# --- bytes sent right behind the CONNECT head are forwarded once the tunnel is up
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(b"CONNECT good.test:9000 HTTP/1.1\r\nHost: good.test:9000\r\n\r\nEARLYDATA")
s.shutdown(socket.SHUT_WR)
buf = b""
while True:
    d = s.recv(65536)
    if not d:
        break
    buf += d
head, _, body = buf.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode(), "|", body[:14].decode())
PYEOF
)
expect_re "data pipelined behind CONNECT reaches the origin" ' 200 .*\| got 9 bytes' "$out"
out=$(raw 'CONNECT third.test:9000 HTTP/1.1\r\nHost: third.test:9000\r\n\r\nEARLYREFUSED' --timeout 5)
expect_eq "data pipelined behind a refused CONNECT: 403" 403 "$(meta_status "$out")"
expect_none "... and it never reaches an origin" halfclose len=12

# --- revocation
sl allow add good.test:80 >"$LAB_DIR/cli.out" 2>&1
wait_until 3 bash -c "[ \"\$(ip netns exec $HNS curl -s -m 3 -p -x $PROXY_URL http://good.test/conn)\" != '' ]"

cat >"$LAB_DIR/revoke.py" <<'PYEOF'
import os, signal, socket, subprocess, sys, time
sys.path.insert(0, os.environ["INTEG_DIR"])
import raw
PA, PP, CLI, CONF, PID = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])

def tunnel(host, port):
    s, head, status = raw.tunnel(PA, PP, "%s:%d" % (host, port))
    if status != 200:
        raise SystemExit("tunnel to %s refused: %r" % (host, head[:80]))
    return s

def alive(s, host):
    try:
        s.settimeout(3)
        s.sendall(("GET /conn HTTP/1.1\r\nHost: %s\r\n\r\n" % host).encode())
        buf = b""
        while not (b"\r\n\r\n" in buf and buf.endswith(b"\n") and b"conn=" in buf):
            d = s.recv(4096)
            if not d:
                return False
            buf += d
        return True
    except OSError:
        return False

def closed_within(s, secs):
    t0 = time.monotonic()
    s.settimeout(0.1)
    while time.monotonic() - t0 < secs:
        try:
            if s.recv(4096) == b"":
                return True, time.monotonic() - t0
        except socket.timeout:
            continue
        except OSError:
            return True, time.monotonic() - t0
    return False, secs

def rewrite_conf(drop):
    lines = [l for l in open(CONF) if l.strip() != drop]
    open(CONF + ".new", "w").writelines(lines)
    os.replace(CONF + ".new", CONF)

t1 = tunnel("good.test", 80)    # store grant
t2 = tunnel("other.test", 80)   # config grant
t3 = tunnel("third.test", 80)   # config grant
print("setup", int(alive(t1, "good.test")), int(alive(t2, "other.test")), int(alive(t3, "third.test")))
# widening cuts nothing
subprocess.run([CLI, "-c", CONF, "allow", "add", "wild.test"], capture_output=True)
time.sleep(1.5)
print("widen", int(alive(t1, "good.test")), int(alive(t2, "other.test")), int(alive(t3, "third.test")))
# A: the store narrows
subprocess.run([CLI, "-c", CONF, "allow", "rm", "good.test:80"], capture_output=True)
c, el = closed_within(t1, 4)
print("A_closed %d %.2f" % (c, el))
print("A_others", int(alive(t2, "other.test")), int(alive(t3, "third.test")))
# B: the config narrows, then SIGHUP
rewrite_conf("allow other.test:80")
os.kill(PID, signal.SIGHUP)
c, el = closed_within(t2, 4)
print("B_closed %d %.2f" % (c, el))
print("B_others", int(alive(t3, "third.test")))
# C: the config narrows, no signal
rewrite_conf("allow third.test:80")
c, el = closed_within(t3, 5)
print("C_closed %d %.2f" % (c, el))
PYEOF
out=$(hx "$PY" "$LAB_DIR/revoke.py" "$PROXY_ADDR" "$PROXY_PORT" "$SLUICE_BUILD/sluice" "$CONF" "$PROXY_PID" 2>&1)
echo "$out" | sed 's/^/# revoke: /'
expect_eq "three tunnels open and usable" "setup 1 1 1" "$(echo "$out" | grep '^setup' || echo "$out" | tail -1)"
expect_eq "widening the policy cuts no tunnel" "widen 1 1 1" "$(echo "$out" | grep '^widen')"
expect_re "sluice allow rm closes the tunnel it covered within 3 s" '^A_closed 1 ([0-2]\.|3\.0)' "$(echo "$out" | grep '^A_closed')"
expect_eq "... and leaves the other tunnels up" "A_others 1 1" "$(echo "$out" | grep '^A_others')"
expect_re "config edit + SIGHUP closes the tunnel it covered within 3 s" '^B_closed 1 ([0-2]\.|3\.0)' "$(echo "$out" | grep '^B_closed')"
expect_eq "... and leaves the other tunnel up" "B_others 1" "$(echo "$out" | grep '^B_others')"
expect_re "config edit without a signal closes the tunnel it covered" '^C_closed 1 ' "$(echo "$out" | grep '^C_closed')"
wait_log 2 kind=tunnel host=good.test port=80 reason=revoked
expect_eq "revoked tunnel logged with reason revoked (store)" 1 "$(logq kind=tunnel host=good.test port=80 reason=revoked)"
expect_eq "revoked tunnel logged with reason revoked (SIGHUP)" 1 "$(logq kind=tunnel host=other.test port=80 reason=revoked)"
expect_eq "revoked rows: decision refuse" "refuse" "$(logq reason=revoked host=good.test --field decision)"
expect_eq "proxy survived the reloads" yes "$(proxy_alive && echo yes || echo no)"
expect_eq "after the reloads other.test:80 is refused" 403 "$(hx curl -s -o /dev/null -w '%{http_connect}' -m 5 -p -x "$PROXY_URL" http://other.test/)"
lab_done
