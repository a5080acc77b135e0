#!/bin/bash
# Regressions from review (each was a bug): a busy tunnel is not idled out; a
# hung-up origin's data still reaches a slow reader; no reuse of an upstream
# that sent stray bytes; upload time is not response wait; names with more
# answers than are dialed are judged, not failed; dialed is per request;
# head-timeout applies on kept-alive connections; a refused large upload
# still gets its whole 403.
source "$(dirname "$0")/lab.sh"
lab_up

# extra origins: drip (one byte every 0.5 s) and halfbig (read to EOF, 8 MiB back)
lab_bg "$INS" "$PY" "$INTEG_DIR/origin.py" --mode drip --log "$LAB_DIR/drip.jsonl" 0.0.0.0:9003
lab_bg "$INS" "$PY" "$INTEG_DIR/origin.py" --mode halfbig --log "$LAB_DIR/halfbig.jsonl" 0.0.0.0:9004
# a DNS server in the host ns, and ten more origin addresses for many.test
DNSLOG=$LAB_DIR/dns.jsonl
lab_bg "$HNS" "$PY" "$INTEG_DIR/dns.py" --log "$DNSLOG" 127.0.0.53 53
for i in $(seq 30 39); do
	ix ip addr add "203.0.113.$i/32" dev lo
	hx ip route add "203.0.113.$i/32" via 192.0.2.2
done
wait_until 10 ix bash -c '</dev/tcp/203.0.113.10/9003' || lab_bail "drip origin did not start"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.10/9004' || lab_bail "halfbig origin did not start"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.39/80' || lab_bail "origin on the added addresses"
sleep 0.2
: >"$LAB_DIR/drip.jsonl"
: >"$LAB_DIR/halfbig.jsonl"
: >"$LAB_DIR/inet.jsonl"
: >"$DNSLOG"

# ======================================================= 1. busy tunnel, idle-timeout 2
lab_start_proxy "idle-timeout 2" "allow good.test:9003"
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import socket, sys, time
import os, sys; sys.path.insert(0, os.environ["INTEG_DIR"]); from raw import tunnel
s, head, status = tunnel(sys.argv[1], sys.argv[2], "good.test:9003")
st = str(status) if status else "none"
t0 = time.monotonic()
got, end = b"", "timeout"
s.settimeout(1)
while time.monotonic() - t0 < 12:
    try:
        d = s.recv(4096)
    except socket.timeout:
        continue
    except OSError as e:
        end = "error:%s" % e.__class__.__name__
        break
    if not d:
        end = "eof"
        break
    got += d
print("%s %s %s %.2f" % (st, got.decode("latin-1") or "-", end, time.monotonic() - t0))
s.close()
PYEOF
)
echo "# drip: $out"
expect_re "busy tunnel (a byte every 0.5 s for 5 s, idle-timeout 2): all 10 bytes then EOF" '^200 0123456789 eof ' "$out"
expect_ge "... the tunnel lasted the origin's 5 s, not the idle-timeout" 4.5 "$(echo "$out" | awk '{print $4}')"
wait_log 3 kind=tunnel port=9003
expect_eq "busy tunnel logged: detail closed (not idle timeout), down 10" "closed 10" \
	"$(logq kind=tunnel port=9003 --field detail) $(logq kind=tunnel port=9003 --field down)"
lab_stop_proxy

# ======================================================= the rest: one proxy
lab_start_proxy "nameserver 127.0.0.53" "head-timeout 2" "idle-timeout 60" "response-timeout 2" \
	"allow good.test" "allow good.test:9004" "allow many.test" "allow manyevil.test" "allow nosuch.test"

# ------------------------------------------------------- 2. half-close, slow reader
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$INTEG_DIR" <<'PYEOF' 2>&1
import hashlib, socket, sys, time
sys.path.insert(0, sys.argv[3])
from origin import big_data, BIG_N
want = hashlib.sha256(big_data()).hexdigest()
from raw import tunnel
s, head, status = tunnel(sys.argv[1], sys.argv[2], "good.test:9004")
if status != 200:
    print("connect-failed %r" % head[:80]); sys.exit()
s.sendall(b"hi")
s.shutdown(socket.SHUT_WR)
time.sleep(2)  # a slow reader: everything the origin sends piles up meanwhile
h, n, end = hashlib.sha256(), 0, "timeout"
t0 = time.monotonic()
s.settimeout(1)
while time.monotonic() - t0 < 20:
    try:
        d = s.recv(1 << 16)
    except socket.timeout:
        continue
    except OSError as e:
        end = "error:%s" % e.__class__.__name__
        break
    if not d:
        end = "eof"
        break
    h.update(d)
    n += len(d)
print("%d %s %s" % (n, "sha-match" if h.hexdigest() == want else "sha-differs", end))
PYEOF
)
expect_eq "half-closed tunnel, reader 2 s late: all 8388608 bytes (sha256 equal), then EOF" \
	"8388608 sha-match eof" "$out"
expect_eq "... the origin read the client's 2 bytes to EOF first" 1 "$(jq_ "$LAB_DIR/halfbig.jsonl" ev=halfbig len=2 data=hi)"
wait_log 3 kind=tunnel port=9004
expect_eq "... logged: down 8388608, up 2, detail closed" "8388608 2 closed" \
	"$(logq kind=tunnel port=9004 --field down) $(logq kind=tunnel port=9004 --field up) $(logq kind=tunnel port=9004 --field detail)"

# ------------------------------------------------------- 3. stray bytes after a response
cat >"$LAB_DIR/stray.py" <<'PYEOF'
import socket, sys, time
a, p, first, second = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.create_connection((a, p), timeout=5)

def response():
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            return "none", buf
        buf += d
    head, _, body = buf.partition(b"\r\n\r\n")
    cl = 0
    for l in head.split(b"\r\n")[1:]:
        k, _, v = l.partition(b":")
        if k.strip().lower() == b"content-length":
            cl = int(v)
    while len(body) < cl:
        d = s.recv(4096)
        if not d:
            break
        body += d
    return head.split(b" ")[1].decode(), body

try:
    s.sendall(b"GET http://good.test%s HTTP/1.1\r\nHost: good.test\r\n\r\n" % first.encode())
    st1, b1 = response()
    time.sleep(0.8)  # the stray bytes have surely arrived at the proxy
    s.sendall(b"GET http://good.test%s HTTP/1.1\r\nHost: good.test\r\n\r\n" % second.encode())
    st2, b2 = response()
    print("%s %r | %s %r" % (st1, b1, st2, b2))
except OSError as e:
    print("error %r" % e)
PYEOF
out=$(hx "$PY" "$LAB_DIR/stray.py" "$PROXY_ADDR" "$PROXY_PORT" /stray /after-stray 2>&1)
expect_eq "origin sends a second, unrequested response right behind the first: the next request gets the origin's real answer" \
	"200 b'ok' | 200 b'hello from 203.0.113.10:80\\n'" "$out"
expect_eq "... which the origin did receive" 1 "$(inetq ev=req 'line~/after-stray')"
out=$(hx "$PY" "$LAB_DIR/stray.py" "$PROXY_ADDR" "$PROXY_PORT" "/stray?delay=0.3" /after-late-stray 2>&1)
expect_eq "same, the unrequested response 0.3 s after the first (upstream idle): the real answer" \
	"200 b'ok' | 200 b'hello from 203.0.113.10:80\\n'" "$out"

# ------------------------------------------------------- 4. slow upload vs response-timeout 2
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import json, select, socket, sys, threading, time
a, p = sys.argv[1], int(sys.argv[2])
res = {}

def upload(name, path):
    s = socket.create_connection((a, p), timeout=5)
    t0 = time.monotonic()
    s.sendall(b"POST http://good.test%s HTTP/1.1\r\nHost: good.test\r\nContent-Length: 10\r\n\r\n" % path)
    sent, t_done = 0, None
    for i in range(10):
        r, _, _ = select.select([s], [], [], 0.5)
        if r:
            break  # answered (or closed) before the body was sent
        try:
            s.sendall(b"%d" % i)
        except OSError:
            break
        sent += 1
    if sent == 10:
        t_done = time.monotonic()
    buf, cl = b"", None
    s.settimeout(1)
    while time.monotonic() - t0 < 11:
        try:
            d = s.recv(65536)
        except socket.timeout:
            continue
        except OSError:
            break
        if not d:
            break
        buf += d
        if b"\r\n\r\n" in buf:
            head, _, body = buf.partition(b"\r\n\r\n")
            for l in head.split(b"\r\n")[1:]:
                k, _, v = l.partition(b":")
                if k.strip().lower() == b"content-length":
                    cl = int(v)
            if cl is not None and len(body) >= cl:
                break
    t_end = time.monotonic()
    st = buf.split(b" ")[1].decode() if buf.startswith(b"HTTP/") else "none"
    body = buf.partition(b"\r\n\r\n")[2]
    blen = "-"
    if st == "200":
        try:
            blen = json.loads(body)["body_len"]
        except ValueError:
            blen = "unparsed"
    res[name] = "%s status=%s sent=%d body_len=%s after_body=%s total=%.2f" % (
        name, st, sent, blen, "%.2f" % (t_end - t_done) if t_done else "-", t_end - t0)

ts = [threading.Thread(target=upload, args=("echo", b"/echo")),
      threading.Thread(target=upload, args=("hang", b"/hang"))]
for t in ts:
    t.start()
for t in ts:
    t.join(20)
print(res.get("echo", "echo none"))
print(res.get("hang", "hang none"))
PYEOF
)
echo "$out" | sed 's/^/# upload: /'
l=$(echo "$out" | grep '^echo' || echo "$out")
expect_re "upload trickled over 5 s (response-timeout 2): 200, the origin got all 10 bytes" \
	'^echo status=200 sent=10 body_len=10 ' "$l"
l=$(echo "$out" | grep '^hang' || echo "$out")
expect_re "origin reads the whole slow upload and never answers: 504 only after the body" '^hang status=504 sent=10 ' "$l"
ab=$(echo "$l" | sed -n 's/.*after_body=\([0-9.]*\).*/\1/p')
expect_ge "... not before the response-timeout counted from the body's end (2 s)" 1.8 "${ab:-0}"
expect_lt "... soon after it" 4.5 "${ab:-99}"
wait_log 3 path=/hang
expect_eq "... logged upstream-timeout 504, up 10" "upstream-timeout 504 10" \
	"$(logq path=/hang --field reason) $(logq path=/hang --field status) $(logq path=/hang --field up)"

# ------------------------------------------------------- 5. ten A records
get() { raw "GET http://$1/$2 HTTP/1.1\\r\\nHost: $1\\r\\n\\r\\n" --timeout 10; }
out=$(get many.test m1)
expect_eq "name with 10 A records (all public) allowed" 200 "$(meta_status "$out")"
wait_log 2 path=/m1
expect_re "... dialed one of them" '^203\.0\.113\.3[0-9]:80$' "$(logq path=/m1 --field dialed)"
expect_eq "... the DNS server was asked" 1 "$(jq_ "$DNSLOG" name=many.test type=1)"
out=$(get manyevil.test m2)
expect_refusal "name with 10 A records, one of them 10.20.0.5" "$out" 403 denied-ip
expect_none "... nothing reached an origin" inet 'line~/m2'
expect_none "... and nothing connected to 10.20.0.5" inet ev=accept 'local~10.20.0.5'

# ------------------------------------------------------- 6. dialed is per request
out=$(raw 'GET http://good.test/r6a HTTP/1.1\r\nHost: good.test\r\n\r\nGET http://other.test/r6b HTTP/1.1\r\nHost: other.test\r\n\r\n' --responses 2 --timeout 10)
expect_eq "keep-alive: allowed request then an ungranted host on the same connection" "200,403" "$(meta_statuses "$out")"
wait_log 2 path=/r6b
expect_eq "... the refused row: same connection, req 2, not-granted, dialed null" \
	"$(logq path=/r6a --field conn) 2 not-granted null" \
	"$(logq path=/r6b --field conn) $(logq path=/r6b --field req) $(logq path=/r6b --field reason) $(logq path=/r6b --field dialed)"
out=$(raw 'GET http://good.test/r6c HTTP/1.1\r\nHost: good.test\r\n\r\nGET http://nosuch.test/r6d HTTP/1.1\r\nHost: nosuch.test\r\n\r\n' --responses 2 --timeout 10)
expect_eq "keep-alive: allowed request then a granted name that does not resolve" "200,502" "$(meta_statuses "$out")"
wait_log 2 path=/r6d
expect_eq "... the dns-failed row: same connection, req 2, dialed null" \
	"$(logq path=/r6c --field conn) 2 dns-failed null" \
	"$(logq path=/r6d --field conn) $(logq path=/r6d --field req) $(logq path=/r6d --field reason) $(logq path=/r6d --field dialed)"

# ------------------------------------------------------- 8. refused 4 MiB upload
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import socket, sys, threading, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
n = 4 << 20
data = b"POST http://other.test/upload HTTP/1.1\r\nHost: other.test\r\nContent-Length: %d\r\n\r\n" % n + b"u" * n
res = {"sent": "stuck"}

def send():
    try:
        s.sendall(data)
        res["sent"] = "all"
    except OSError as e:
        res["sent"] = "error:%s" % e.__class__.__name__

t = threading.Thread(target=send, daemon=True)
t.start()
t.join(15)  # the whole body first, then read
buf, end = b"", "timeout"
s.settimeout(1)
t0 = time.monotonic()
while time.monotonic() - t0 < 8:
    try:
        d = s.recv(65536)
    except socket.timeout:
        continue
    except OSError as e:
        end = "error:%s" % e.__class__.__name__
        break
    if not d:
        end = "eof"
        break
    buf += d
head, sep, body = buf.partition(b"\r\n\r\n")
cl = None
ps = False
for l in head.split(b"\r\n")[1:]:
    k, _, v = l.partition(b":")
    if k.strip().lower() == b"content-length":
        cl = int(v)
    if k.strip().lower() == b"proxy-status":
        ps = True
st = head.split(b" ")[1].decode() if head.startswith(b"HTTP/") else "none"
complete = bool(sep) and cl is not None and len(body) == cl
print("status=%s complete=%d proxy_status=%d end=%s sent=%s got=%d" % (
    st, complete, ps, end, res["sent"], len(buf)))
PYEOF
)
echo "# refused upload: $out"
expect_re "refused POST with a 4 MiB body, client sends it all then reads: the complete 403" \
	'^status=403 complete=1 proxy_status=1 ' "$out"
expect_re "... the proxy read the whole body (the client's send did not fail) and closed cleanly" ' end=eof sent=all ' "$out"
wait_log 2 path=/upload
expect_eq "... logged not-granted 403" "not-granted 403" "$(logq path=/upload --field reason) $(logq path=/upload --field status)"
expect_none "... and nothing reached an origin" inet 'line~/upload'

# ======================================================= 7. head-timeout on a kept-alive connection
# Its own proxy: connect- and response-timeout far above head-timeout, and a
# first request answered only after 2.5 s (longer than head-timeout), so no
# timer armed at accept or for an earlier phase can stand in for the
# head-timeout of the second head.
lab_stop_proxy
lab_start_proxy "head-timeout 2" "idle-timeout 60" "response-timeout 30" "connect-timeout 10" "allow good.test"
cat >"$LAB_DIR/ka408.py" <<'PYEOF'
import select, socket, sys, time
a, p, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection((a, p), timeout=10)
first = b"GET http://good.test/slow?s=2.5&r7a-%s HTTP/1.1\r\nHost: good.test\r\n\r\n" % mode.encode()
second = b"GET http://good.test/r7b-%s HTTP/1.1\r\nHost: good.test\r\n\r\n" % mode.encode()
half = len(second) // 3
# after: the second head starts once the first response is in, then stalls
# pipelined: its start is sent with the first request, the rest trickles
# stalled: its start is sent with the first request, then nothing
s.sendall(first + (second[:half] if mode != "after" else b""))
buf = b""
while not (b"\r\n\r\n" in buf and buf.endswith(b"\n")):
    d = s.recv(4096)
    if not d:
        break
    buf += d
st1 = buf.split(b" ")[1].decode() if buf.startswith(b"HTTP/") else "none"
t0 = time.monotonic()
if mode == "after":
    s.sendall(second[:half])
rest, resp, end = second[half:], b"", "timeout"
while time.monotonic() - t0 < 8:
    r, _, _ = select.select([s], [], [], 0.5)
    if not r:
        if mode == "pipelined" and rest:
            s.sendall(rest[:1])
            rest = rest[1:]
        continue
    try:
        d = s.recv(4096)
    except OSError:
        end = "reset"
        break
    if not d:
        end = "eof"
        break
    resp += d
    if b"\r\n\r\n" in resp:
        end = "answered"
        break
st2 = resp.split(b" ")[1].decode() if resp.startswith(b"HTTP/") else "none"
print("%s %s %s %.2f" % (st1, st2, end, time.monotonic() - t0))
PYEOF
# the three run side by side (each about 5 s)
kpids=()
for m in after pipelined stalled; do
	hx "$PY" "$LAB_DIR/ka408.py" "$PROXY_ADDR" "$PROXY_PORT" "$m" >"$LAB_DIR/ka408.$m" 2>&1 &
	kpids+=($!)
done
for p in "${kpids[@]}"; do wait "$p"; done
out=$(cat "$LAB_DIR/ka408.after")
echo "# ka408 after: $out"
expect_re "kept-alive connection, next head stalls after a third (head-timeout 2, idle-timeout 60): 408" '^200 408 ' "$out"
el=$(echo "$out" | awk '{print $4}')
expect_ge "... not before the head-timeout" 1.8 "${el:-0}"
expect_lt "... soon after it, not at the idle-timeout" 4.5 "${el:-99}"
out=$(cat "$LAB_DIR/ka408.pipelined")
echo "# ka408 pipelined: $out"
expect_re "pipelined second head trickling a byte every 0.5 s after the first response: 408" '^200 408 ' "$out"
expect_lt "... within about the head-timeout" 4.5 "$(echo "$out" | awk '{print $4}')"
out=$(cat "$LAB_DIR/ka408.stalled")
echo "# ka408 stalled: $out"
expect_re "pipelined second head, a third of it sent with the first request, then nothing: 408 within about the head-timeout" \
	'^200 408 answered ([01]\.|2\.|3\.|4\.[0-4])' "$out"
wait_log 2 reason=head-timeout
expect_none "the stalled heads never reached the origin" inet 'line~/r7b'

expect_eq "proxy alive at the end" yes "$(proxy_alive && echo yes || echo no)"
lab_done
