#!/bin/bash
# integ: alone (three requests (a python each) must fit in a 2 s budget window)
# Budgets on grants (issue 14, "Budgets"): an exfiltration brake. A grant
# with --max-requests N lets each principal it serves make N requests
# through it (the next is refused 403 budget, with the command that raises
# it, and never reaches the origin); --per resets the count each window;
# --max-up caps the bytes a principal sends up through it: request heads
# and bodies (a head and declared body that would pass it are refused
# before a byte goes), and a chunked body, an open tunnel or a WebSocket
# that passes it is closed with its row, read no further than a byte past
# it; bytes sent behind a CONNECT head or with a WebSocket's handshake are
# taken with it, and past the budget none of them goes. Counts are per
# principal and survive a policy reload. The real proxy, real origins.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_stamped_proxy "allow third.test"
KEY=$STATE/stamp.key
BOOT1=00112233445566b1
BOOT2=00112233445566b2

# stamped_get P SEQ PATH: GET PATH as principal 1 (10.88.0.7@podman) or 2
# (10.88.0.8@podman), its stamp's sequence SEQ (each used once): raw's output
stamped_get() {
	local st
	if [ "$1" = 1 ]; then
		st=$("$PY" "$INTEG_DIR/stamp.py" "$KEY" 10.88.0.7 podman "$BOOT1" "$2")
	else
		st=$("$PY" "$INTEG_DIR/stamp.py" "$KEY" 10.88.0.8 podman "$BOOT2" "$2")
	fi
	raw "GET http://good.test$3 HTTP/1.1\r\nHost: good.test\r\nSluice-Stamp: $st\r\nConnection: close\r\n\r\n" --timeout 5
}
plain_get() {
	raw "GET http://good.test$1 HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n" --timeout 5
}

# --- the CLI: flags, store, list
out=$(sl allow add good.test --max-requests 3 2>&1)
expect_re "allow add --max-requests 3 says the budget" 'budget for each principal: max-requests=3 over the grant' "$out"
expect_re "the store line carries max-requests=3" '^good\.test permanent [0-9]+ max-requests=3$' "$(grep '^good.test ' "$STATE/grants")"
expect_re "allow list shows it" 'good\.test +permanent .* max-requests=3 +-$' "$(sl allow list)"
expect_re "allow list --json shows it" '"max_requests": 3' "$(sl allow list --json)"
out=$(sl allow add other.test --per 2s 2>&1)
expect_re "--per alone is refused" '--per needs --max-up or --max-requests' "$out"
out=$(sl allow add other.test --max-up 10X 2>&1)
expect_re "a bad --max-up is refused, naming the units" 'bad --max-up "10X".*powers of 1024' "$out"
out=$(sl allow add other.test --max-requests 0 2>&1)
expect_re "--max-requests 0 is refused" 'bad --max-requests "0"' "$out"
expect_eq "... and none of them changed the store" 0 "$(grep -c '^other.test' "$STATE/grants")"
printf 'allow good.test max-requests=3 max-requests=4\n' >"$LAB_DIR/bad.conf"
expect_re "the config's allow refuses a budget word twice" 'allow good.test: max-requests=4: max-requests twice' \
	"$(sl check "$LAB_DIR/bad.conf" 2>&1)"
printf 'allow good.test max-up=64k per=1h for=10.88.0.7@podman\n' >"$LAB_DIR/good.conf"
expect_re "the config's allow takes max-up=64k per=1h (normalised to bytes and seconds)" \
	'^allow good\.test for=10\.88\.0\.7@podman max-up=65536 per=3600$' \
	"$(sl check "$LAB_DIR/good.conf" 2>&1 | grep '^allow good')"
wait_until 10 reloaded_past 0 || not_ok "the proxy reloaded the store" "$(tail -3 "$LAB_DIR/proxy.err")"

# --- max-requests 3, unattributed: three pass, the fourth is refused and never reaches the origin
for i in 1 2 3; do
	expect_eq "unattributed request $i of 3 passes" 200 "$(meta_status "$(plain_get /budget-u$i)")"
done
expect_eq "the origin saw exactly those three" 3 "$(inetq ev=req 'line~/budget-u')"
out=$(plain_get /budget-u4)
expect_refusal "the fourth is refused" "$out" 403 'budget' \
	'max-requests 3 for unattributed is spent; to raise it run: sluice allow add good\.test --max-requests N'
expect_none "... and never reached the origin" inet 'line~/budget-u4'
wait_log 3 path=/budget-u4
expect_re "its row: refuse, reason budget, the grant named" \
	'"decision": "refuse".*"reason": "budget"' "$(logq path=/budget-u4 --json)"

# --- each principal has its own count
for i in 1 2 3; do
	expect_eq "principal 10.88.0.7@podman: request $i passes" 200 "$(meta_status "$(stamped_get 1 $i /budget-p1-$i)")"
done
out=$(stamped_get 1 4 /budget-p1-4)
expect_refusal "... its fourth is refused, naming it" "$out" 403 budget 'max-requests 3 for 10\.88\.0\.7@podman is spent'
expect_eq "principal 10.88.0.8@podman still has its three" "200 200 200" \
	"$(for i in 1 2 3; do printf '%s ' "$(meta_status "$(stamped_get 2 $i /budget-p2-$i)")"; done | sed 's/ $//')"
expect_eq "the origin saw the six stamped requests that passed, not the refused one" "6 0" \
	"$(inetq ev=req 'line~/budget-p') $(inetq ev=req 'line~/budget-p1-4')"

# --- a reload (another grant added) does not reset the counts
n=$(reloads)
sl allow add blackhole.test >/dev/null 2>&1
wait_until 10 reloaded_past "$n" || not_ok "the proxy reloaded after allow add blackhole.test" "$(tail -3 "$LAB_DIR/proxy.err")"
expect_ge "the proxy reloaded its policy" "$((n + 1))" "$(reloads)"
expect_refusal "after the reload the unattributed count holds: still refused" "$(plain_get /budget-u5)" 403 budget
expect_refusal "... and principal 1's" "$(stamped_get 1 5 /budget-p1-5)" 403 budget
expect_none "neither reached the origin" inet 'line~/budget-u5'

# --- re-adding replaces the grant, budget included; --per 2s resets each window
out=$(sl allow add good.test --max-requests 2 --per 2s 2>&1)
expect_re "re-adding good.test replaces it" '^replaced good\.test permanent' "$out"
expect_eq "one good.test grant in the store, its budget the new one" "1 max-requests=2 per=2" \
	"$(grep -c '^good.test ' "$STATE/grants") $(grep '^good.test ' "$STATE/grants" | grep -o 'max-requests=.*')"
expect_re "allow list shows the window" 'max-requests=2 per=2s +-$' "$(sl allow list)"
wait_until 10 reloaded_past "$((n + 1))" ||
	not_ok "the proxy reloaded the replaced grant" "$(tail -3 "$LAB_DIR/proxy.err")"
t0=$(now)
expect_eq "window 1: two requests pass" "200 200" \
	"$(for i in 1 2; do printf '%s ' "$(meta_status "$(plain_get /budget-w1-$i)")"; done | sed 's/ $//')"
out=$(plain_get /budget-w1-3)
expect_refusal "window 1: the third is refused, saying when the window ends and keeping --per in the hint" \
	"$out" 403 budget 'in this window \(it ends in [12]s\).*--max-requests N --per 2s'
expect_lt "... all within the first window" 2.0 "$(elapsed "$t0")"
sleep 2.2
expect_eq "window 2: requests pass again" "200 200" \
	"$(for i in 1 2; do printf '%s ' "$(meta_status "$(plain_get /budget-w2-$i)")"; done | sed 's/ $//')"
expect_refusal "window 2: the third is refused again" "$(plain_get /budget-w2-3)" 403 budget
expect_eq "the origin saw the four that passed, not the two refused" "4 0 0" \
	"$(inetq ev=req 'line~/budget-w') $(inetq ev=req 'line~/budget-w1-3') $(inetq ev=req 'line~/budget-w2-3')"

# --- max-up over plain-http heads and bodies. A head counts as it goes
# upstream: the request line in origin form, Host, each header that forwards
# (hop-by-hop ones and the stamp never leave, so Connection: close does not).
sl allow add other.test --max-up 10k >"$LAB_DIR/cli.out" 2>&1
expect_re "allow add --max-up 10k stores 10240 bytes" '^other\.test permanent [0-9]+ max-up=10240$' \
	"$(grep '^other.test ' "$STATE/grants")"
wait_until 10 reloaded_past "$((n + 2))"
# upost PATH LEN: a raw POST of LEN bytes to other.test; uhead PATH LEN: the bytes its head counts
upost() {
	raw "POST http://other.test$1 HTTP/1.1\r\nHost: other.test\r\nContent-Length: $2\r\nConnection: close\r\n\r\n$(head -c "$2" /dev/zero | tr '\0' x)" --timeout 5
}
uhead() { printf 'POST %s HTTP/1.1\r\nHost: other.test\r\nContent-Length: %s\r\n\r\n' "$1" "$2" | wc -c; }
sent=$(($(uhead /echo-up1 4096) + 4096))
expect_eq "POST 4096 bytes ($sent with its head): passes" 200 "$(meta_status "$(upost /echo-up1 4096)")"
sent=$((sent + $(uhead /echo-up2 4096) + 4096))
expect_eq "POST 4096 more ($sent of 10240 with both heads): passes" 200 "$(meta_status "$(upost /echo-up2 4096)")"
out=$(upost /echo-up3 4096)
expect_re "POST 4096 more would pass the budget: 403 budget before a byte goes" \
	"^HTTP/1.1 403.*budget max-up 10240 bytes for unattributed is spent \\($sent sent\\); to raise it run: sluice allow add other\\.test --max-up BYTES" \
	"$(printf '%s' "$out" | tr -d '\r' | tr '\n' ' ')"
expect_re "... with a Proxy-Status naming budget" '^Proxy-Status: sluice; error=http_request_denied; details="budget' \
	"$(printf '%s' "$out" | tr -d '\r' | grep -i '^Proxy-Status')"
expect_none "... and that request never reached the origin" inet 'line~/echo-up3'
last=$((10240 - sent - $(uhead /echo-up4 0000)))
expect_eq "POST $last, its head and body exactly what is left: passes" 200 "$(meta_status "$(upost /echo-up4 "$last")")"
expect_eq "the origin got the three bodies that passed: 4096, 4096, $last" "2 1" \
	"$(inetq ev=body 'local~203.0.113.11' len=4096) $(inetq ev=body 'local~203.0.113.11' len="$last")"
out=$(raw "GET http://other.test/after HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n" --timeout 5)
expect_refusal "the budget spent, a new request (even bodiless) is refused" "$out" 403 budget '\(10240 sent\)'
expect_none "... never reaching the origin" inet 'line~/after'

# --- bytes carried in headers count: a bodiless GET whose header would pass max-up is refused
sl allow add a.wild.test --max-up 4k >/dev/null 2>&1
wait_until 10 reloaded_past "$((n + 3))"
pad=$(head -c 3000 /dev/zero | tr '\0' y)
hget() { raw "GET http://a.wild.test/$1 HTTP/1.1\r\nHost: a.wild.test\r\nX-Pad: $pad\r\nConnection: close\r\n\r\n" --timeout 5; }
expect_eq "a GET with a 3000-byte header under max-up 4096: passes" 200 "$(meta_status "$(hget hdr-1)")"
hsent=$(printf 'GET /hdr-1 HTTP/1.1\r\nHost: a.wild.test\r\nX-Pad: %s\r\n\r\n' "$pad" | wc -c)
expect_refusal "the same GET again would pass it: refused, its head counted ($hsent sent)" "$(hget hdr-2)" \
	403 budget "max-up 4096 bytes for unattributed is spent \\($hsent sent\\)"
expect_none "... and it never reached the origin" inet 'line~/hdr-2'
expect_eq "... while the first did" 1 "$(inetq ev=req 'line~/hdr-1')"

# --- a chunked body that passes max-up on the way is cut off, with its row
sl allow add notwild.test --max-up 5000 >/dev/null 2>&1
wait_until 10 reloaded_past "$((n + 4))"
out=$(raw "POST http://notwild.test/chunked-up HTTP/1.1\r\nHost: notwild.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n4000\r\n$(head -c 16384 /dev/zero | tr '\0' z)\r\n0\r\n\r\n" --timeout 5)
expect_re "a chunked POST of 16 KiB through max-up 5000 is refused 403 budget mid-body" \
	'^HTTP/1.1 403.*budget max-up 5000 bytes.*the request was cut off' "$(printf '%s' "$out" | tr -d '\r' | tr '\n' ' ')"
wait_log 3 path=/chunked-up reason=budget
up=$(logq path=/chunked-up --field up)
# the head goes up without Connection (hop-by-hop); its chunked framing goes up as it came
chead=$(printf 'POST /chunked-up HTTP/1.1\r\nHost: notwild.test\r\nTransfer-Encoding: chunked\r\n\r\n' | wc -c)
expect_ge "its row counts the body that went up: with the head ($chead), past 5000" "$((5001 - chead))" "$up"
expect_lt "... but not far past it (reads stop a byte past what is left)" "$((5100 - chead))" "$up"

# --- a CONNECT tunnel that passes max-up is closed, its row reason budget, up at the budget
sl allow add good.test:9000 --max-up 64k >/dev/null 2>&1
wait_until 10 reloaded_past "$((n + 5))"
# the CONNECT head counts first: what the tunnel may carry is the rest
chead=$(printf 'CONNECT good.test:9000 HTTP/1.1\r\nHost: good.test:9000\r\n\r\n' | wc -c)
room=$((65536 - chead))
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PYEOF' 2>&1
import os, socket, sys, time
sys.path.insert(0, os.environ.get("INTEG_DIR", "tests/integ"))
from raw import tunnel
s, head, status = tunnel(sys.argv[1], int(sys.argv[2]), "good.test:9000")
print("status", status)
sent, chunk, t0 = 0, b"x" * 16384, time.time()
s.settimeout(5)
try:
    while sent < (4 << 20) and time.time() - t0 < 10:
        sent += s.send(chunk)
except OSError as e:
    print("send stopped:", type(e).__name__)
closed = False
try:
    while time.time() - t0 < 10:
        if not s.recv(65536):
            closed = True
            break
except OSError:
    closed = True
print("sent", sent, "closed", closed)
PYEOF
)
expect_re "the tunnel opened (200)" 'status 200' "$out"
expect_re "the proxy closed it once the client sent past 64 KiB" 'closed True' "$out"
wait_log 5 method=CONNECT port=9000 reason=budget
row=$(logq method=CONNECT port=9000 reason=budget --json)
expect_re "its row: refuse, reason budget, naming max-up 65536" \
	'"decision": "refuse".*"reason": "budget".*max-up 65536 bytes for unattributed is spent.*the tunnel was closed' "$row"
up=$(logq method=CONNECT port=9000 reason=budget --field up)
expect_ge "its up is the budget less the CONNECT head ($chead) passed by a byte: at least $((room + 1))" \
	"$((room + 1))" "$up"
expect_lt "... and not far past it" "$((room + 64))" "$up"
wait_until 5 bash -c "grep -q '\"halfclose\"' '$LAB_DIR/halfclose.jsonl'"
got=$(jq_ "$LAB_DIR/halfclose.jsonl" ev=halfclose --field len)
expect_ge "the origin received at least what the budget left the tunnel" "$room" "$got"
expect_lt "... and no more than a byte past it" "$((room + 2))" "$got"
out=$(raw 'CONNECT good.test:9000 HTTP/1.1\r\nHost: good.test:9000\r\n\r\n' --timeout 5)
expect_refusal "a new CONNECT through the spent grant is refused" "$out" 403 budget 'max-up 65536 bytes for unattributed is spent'
# bytes sent behind the CONNECT head, in the same write, are taken with it: past the budget, none goes
sl allow add good.test:9000 --max-up 1k >/dev/null 2>&1 # its counts start again
wait_until 10 reloaded_past "$((n + 6))"
: >"$LAB_DIR/halfclose.jsonl"
out=$(raw "CONNECT good.test:9000 HTTP/1.1\r\nHost: good.test:9000\r\n\r\n$(head -c 60000 /dev/zero | tr '\0' q)" --timeout 5)
expect_refusal "a CONNECT with 60000 bytes behind its head under max-up 1024: refused" "$out" 403 budget \
	'max-up 1024 bytes for unattributed is spent.*behind the CONNECT head; none went up'
wait_log 5 method=CONNECT port=9000 reason=budget 'detail~max-up 1024'
expect_eq "... its row's up: 0" 0 "$(logq method=CONNECT port=9000 'detail~max-up 1024' --field up)"
wait_until 5 bash -c "grep -q '\"halfclose\"' '$LAB_DIR/halfclose.jsonl'"
expect_eq "... the origin, dialed (it recorded the connection), received none of them" 0 \
	"$(jq_ "$LAB_DIR/halfclose.jsonl" ev=halfclose --field len)"
# --- a plain WebSocket (spliced) that passes max-up is closed; the origin got no more than it left
lab_bg "$INS" /usr/bin/python3 "$INTEG_DIR/ws_origin.py" --log "$LAB_DIR/ws.jsonl" 0.0.0.0:9010
wait_until 10 ix bash -c '</dev/tcp/127.0.0.1/9010' || lab_bail "the WebSocket origin listens"
sl allow add good.test:9010 --max-up 8k >/dev/null 2>&1
wait_until 10 reloaded_past "$((n + 7))"
# ws EARLY PATH: a WebSocket to good.test:9010/PATH whose first EARLY frames
# (binary, 1024 bytes, a zero mask) come in the same write as its handshake,
# then one at a time up to 64
ws() {
	hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$1" "$2" <<'PYEOF' 2>&1
import os, select, socket, sys, time
frame = b"\x82\xfe\x04\x00" + b"\x00" * 4 + b"w" * 1024
early, path = int(sys.argv[3]), sys.argv[4]
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(b"GET http://good.test:9010" + path.encode() + b" HTTP/1.1\r\nHost: good.test:9010\r\n"
          b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
          b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" +
          frame * early)
head = b""
while b"\r\n\r\n" not in head:
    b = s.recv(1)
    if not b:
        break
    head += b
print("status", head.split(b" ")[1].decode() if head else "none")
sent, echoed, closed, t0 = early, 0, False, time.time()
s.setblocking(False)
while not closed and time.time() - t0 < 10:
    if sent < 64:
        try:
            s.send(frame)
            sent += 1
        except BlockingIOError:
            pass
        except OSError:
            closed = True
    r, _, _ = select.select([s], [], [], 0.05)
    if r:
        try:
            d = s.recv(65536)
        except OSError:
            d = b""
        if not d:
            closed = True
        echoed += d.count(b"w")
print("sent", sent, "echoed", echoed, "closed", closed)
PYEOF
}
# its head goes up as GET PATH, Host and the two Sec-WebSocket-* lines
whead=$(printf 'GET /ws-budget HTTP/1.1\r\nHost: good.test:9010\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n' | wc -c)
out=$(ws 4 /ws-budget)
expect_re "a WebSocket through good.test:9010 (max-up 8192) opened: 101" 'status 101' "$out"
expect_re "... the proxy closed it as the client sent past the budget" 'closed True' "$out"
wait_log 5 kind=ws port=9010 reason=budget
row=$(logq kind=ws port=9010 reason=budget --json)
expect_re "... its row: ws, refuse, budget, naming max-up 8192" \
	'"decision": "refuse".*"reason": "budget".*max-up 8192 bytes' "$row"
expect_eq "... its up is what the budget left after the head ($whead), and one byte" \
	$((8192 - whead + 1)) "$(logq kind=ws port=9010 reason=budget --field up)"
wait_until 5 grep -q '"ended": "/ws-budget"' "$LAB_DIR/ws.jsonl"
wsgot=$(jq_ "$LAB_DIR/ws.jsonl" ended=/ws-budget --field got)
expect_ge "... the origin got whole messages of it (the measurement works)" 1024 "$wsgot"
expect_lt "... and no more than that up, frame heads aside ($wsgot)" $((8192 - whead + 1 - 8 * (wsgot / 1024))) "$wsgot"
# a frame with the handshake, past what the budget leaves: taken with it, none goes
sl allow add good.test:9010 --max-up 1k >/dev/null 2>&1
wait_until 10 reloaded_past "$((n + 8))"
out=$(ws 1 /ws-early)
expect_re "a WebSocket whose first frame (1032 bytes) came with its handshake, under max-up 1024: closed" \
	'closed True' "$out"
wait_log 5 kind=ws port=9010 reason=budget path=/ws-early
expect_eq "... its row: refuse, budget, up 0" "refuse budget 0" \
	"$(logq kind=ws path=/ws-early --field decision) $(logq kind=ws path=/ws-early --field reason) $(logq kind=ws path=/ws-early --field up)"
expect_re "... naming max-up 1024" 'max-up 1024 bytes' "$(logq kind=ws path=/ws-early --field detail)"
wait_until 5 grep -q '"ended": "/ws-early"' "$LAB_DIR/ws.jsonl"
expect_eq "... the origin had the handshake (it recorded it) and got no message" 0 \
	"$(jq_ "$LAB_DIR/ws.jsonl" ended=/ws-early --field got)"

# --- the config's unbudgeted `allow third.test` comes first; a budgeted grant still brakes it
sl allow add third.test --max-requests 1 >/dev/null 2>&1
wait_until 10 reloaded_past "$((n + 9))"
tget() { raw "GET http://third.test/$1 HTTP/1.1\r\nHost: third.test\r\nConnection: close\r\n\r\n" --timeout 5; }
expect_eq "third.test, its config grant first and a store grant with --max-requests 1: the first passes" \
	200 "$(meta_status "$(tget brake-1)")"
expect_re "... its row names the budgeted grant" '"grant": "third\.test \(permanent\)"' \
	"$(logq path=/brake-1 --json)"
expect_refusal "... the second is refused: the budget brakes whichever grant came first" \
	"$(tget brake-2)" 403 budget 'max-requests 1 for unattributed is spent'
expect_none "... and never reached the origin" inet 'line~/brake-2'

# --- observe refuses nothing: a spent budget lets the request through, its row says so
n=$(reloads)
sl allow enforce off >/dev/null 2>&1
wait_until 10 reloaded_past "$n" || not_ok "the proxy reloaded the mode" "$(tail -3 "$LAB_DIR/proxy.err")"
out=$(raw "GET http://other.test/observed HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n" --timeout 5)
expect_eq "under observe the spent max-up of other.test refuses nothing" 200 "$(meta_status "$out")"
wait_log 3 path=/observed
expect_re "... its row: observe, reason budget, would be refused" \
	'"decision": "observe".*"reason": "budget".*would be refused: budget max-up 10240' "$(logq path=/observed --json)"
expect_eq "... and the origin got it" 1 "$(inetq ev=req 'line~/observed')"
n=$(reloads)
sl allow enforce on >/dev/null 2>&1
wait_until 10 reloaded_past "$n" || not_ok "the proxy reloaded the mode" "$(tail -3 "$LAB_DIR/proxy.err")"
expect_refusal "enforcing again, it is refused again" \
	"$(raw "GET http://other.test/enforced HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n" --timeout 5)" 403 budget
# --- a restart keeps the counts (STATE/budgets, mapped), even after kill -9;
# inside an intercepted CONNECT the CONNECT and each decrypted request count,
# and each HTTP/2 stream
lab_tls_origin
T=$LAB_DIR/tls
d=$LAB_DIR/h2
mkdir -p "$d/www" "$d/tmp"
{ lab_nginx_head "$d"; cat; } >"$d/nginx.conf" <<NGX
http {
	default_type text/plain;
	log_format lab '\$server_protocol "\$request" \$status';
	access_log $d/access.log lab;
$(lab_nginx_temps "$d")
	server {
		listen 203.0.113.13:8444 ssl http2;
		ssl_certificate $T/srv.crt;
		ssl_certificate_key $T/srv.key;
		location / { return 200 "h2 ok\n"; }
	}
}
NGX
lab_bg "$INS" nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8444' || lab_bail "h2 nginx did not start" "$(cat "$d/error.log" 2>/dev/null)"
proxy_alive && ok "the proxy is still running" || not_ok "the proxy is still running" "$(tail -5 "$LAB_DIR/proxy.err")"
lab_stop_proxy
lab_write_conf "allow third.test" "intercept on" "upstream-ca tls.test $T/ca.crt"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
oget() { raw "GET http://other.test/$1 HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n" --timeout 5; }
expect_refusal "after a restart other.test's spent max-up is still spent" "$(oget restarted)" 403 budget \
	'max-up 10240 bytes for unattributed is spent \(10240 sent\)'
expect_re "... the proxy says it kept the counts" 'budgets: [0-9]+ counts kept from before' \
	"$(cat "$LAB_DIR/proxy.err")"
kill -9 "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null
PROXY_PID=
lab_run_proxy
expect_refusal "after kill -9 and a start, still spent" "$(oget killed)" 403 budget '\(10240 sent\)'
expect_none "... neither reached the origin" inet 'line~/restarted'
sl allow add other.test --max-up 10k >/dev/null 2>&1
readd() { [ "$(meta_status "$(oget readded)")" = 200 ]; }
if wait_until 5 readd; then ok "the grant added again (a new added time): its count starts again"; else
	not_ok "the grant added again (a new added time): its count starts again" "$(oget readded)"; fi
lab_stop_proxy
head -c 4096 /dev/urandom >"$STATE/budgets"
lab_run_proxy
expect_re "a damaged budget file: the proxy says so and starts an empty one" \
	'budgets: not a budget file of this version \(4096 bytes\); starting with an empty one' \
	"$(cat "$LAB_DIR/proxy.err")"
sl allow add tls.test:8443 --max-requests 3 >/dev/null 2>&1
sl allow add tls.test:8444 --max-requests 3 >/dev/null 2>&1
wait_until 10 bash -c "grep -q '^tls.test:8444 ' '$STATE/grants'"
wait_until 10 reloaded_past 0
: >"$T/access.log"
: >"$d/access.log"
out=$(pcurl --http1.1 --cacert "$STATE/ca.crt" -o /dev/null -o /dev/null -o /dev/null \
	-w '%{http_code} ' 'https://tls.test:8443/?i1' 'https://tls.test:8443/?i2' 'https://tls.test:8443/?i3' 2>&1)
expect_eq "intercepted HTTP/1.1, max-requests 3: the CONNECT and two requests pass, the third request is refused" \
	"200 200 403" "$(printf '%s' "$out" | sed 's/ $//')"
expect_eq "the origin saw /i1 and /i2, not /i3" "1 1 0" \
	"$(grep -c '"GET /?i1 ' "$T/access.log") $(grep -c '"GET /?i2 ' "$T/access.log") $(grep -c '"GET /?i3 ' "$T/access.log")"
wait_log 3 path=/?i3 reason=budget
expect_re "... its row: https, refuse, budget" '"kind": "https".*"decision": "refuse".*"reason": "budget"' \
	"$(logq path=/?i3 --json)"
out=$(pcurl --http2 --cacert "$STATE/ca.crt" -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' \
	https://tls.test:8444/s1 https://tls.test:8444/s2 https://tls.test:8444/s3 2>&1)
expect_eq "HTTP/2, max-requests 3: the CONNECT and two streams pass, the third stream is refused" \
	"200 200 403" "$(printf '%s' "$out" | sed 's/ $//')"
expect_eq "the h2 origin saw /s1 and /s2 over HTTP/2, not /s3" "1 1 0" \
	"$(grep -c '^HTTP/2.0 "GET /s1 ' "$d/access.log") $(grep -c '^HTTP/2.0 "GET /s2 ' "$d/access.log") $(grep -c '"GET /s3 ' "$d/access.log")"
wait_log 3 path=/s3 reason=budget
expect_re "... its row: h2, refuse, budget" '"proto": "h2".*"decision": "refuse".*"reason": "budget"' \
	"$(logq path=/s3 --json)"
# HTTP/2 request trailers go up too: they count against max-up
lab_bg "$INS" "$PY" "$INTEG_DIR/h2_evil_origin.py" "$T/srv.crt" "$T/srv.key" 203.0.113.13 8555
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8555' || lab_bail "the h2 origin at :8555 listens"
sl allow add tls.test:8555 --max-up 4k >/dev/null 2>&1
wait_until 10 bash -c "grep -q '^tls.test:8555 ' '$STATE/grants'"
sleep 1.5 # the proxy loads the store within a second
h2tr() { hx "$PY" "$INTEG_DIR/h2_client.py" "$PROXY_ADDR" "$PROXY_PORT" tls.test 8555 "$STATE/ca.crt" trailers "$@" 2>&1; }
expect_eq "an h2 POST of 100 bytes and a 200-byte trailer under max-up 4096: the origin got both" \
	"/sink 200 got 100 trailers 203" "$(h2tr /sink 100 200)"
expect_eq "... one whose 6000-byte trailer would pass what is left: refused" \
	"/sink 403 sluice: budget max-up 4096 bytes for unattributed is spent" \
	"$(h2tr /sink 10 6000 | sed 's/ (.*//')"
wait_log 3 port=8555 reason=budget
expect_re "... its row: h2, refuse, budget" '"proto": "h2".*"decision": "refuse".*"reason": "budget"' \
	"$(logq port=8555 reason=budget --json)"
# a stream refused for its body: the trailers that follow it are not refused again
sleep 1.1
sl allow add tls.test:8555 --max-up 4k >/dev/null 2>&1 # a new added time: its counts start again
sleep 1.5
expect_eq "an h2 POST whose 6000-byte body passes max-up 4096, then its trailer: refused" \
	"/sink-body 403 sluice: budget max-up 4096 bytes for unattributed is spent" \
	"$(h2tr /sink-body 6000 10 | sed 's/ (.*//')"
wait_log 3 path=/sink-body reason=budget
sleep 0.5
expect_eq "... one row for it, not another for its trailer" 1 "$(logq path=/sink-body)"
proxy_alive && ok "the proxy is still running" || not_ok "the proxy is still running" "$(tail -5 "$LAB_DIR/proxy.err")"
lab_done
