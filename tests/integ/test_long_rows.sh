#!/bin/bash
# Long exchanges are seen while they last: a WebSocket (node's http
# module), a passthrough CONNECT tunnel (openssl s_client) and an HTTP/2
# stream that streams slowly (python3-h2, a gRPC server-streaming call)
# each get a row of kind "open" once they have lasted log-open-after
# seconds, then a "progress" row every log-progress seconds, with the
# same identity as their final row (conn, req, who, host, port, "of" the
# final row's kind) and the bytes so far; the final row is written as
# before. `sluice log -f` and `sluice watch` show the open row while the
# exchange is still open; `sluice log --by-host`, `sluice allow learn` and
# the proxy's metrics count each exchange once.
source "$(dirname "$0")/lab.sh"
"$PY" -c 'import h2, grpc' 2>/dev/null || lab_bail "python3-h2 and python3-grpcio are installed (deps/debian-packages)"
/usr/bin/python3 -c 'import websockets' 2>/dev/null || lab_bail "python3-websockets is installed (deps/debian-packages)"
command -v tmux >/dev/null || lab_bail "tmux is installed (deps/debian-packages)"
lab_up
lab_tls_origin
T=$LAB_DIR/tls
TM=sluice-long-$$
tmx() { tmux -L "$TM" "$@"; }
trap 'rc=$?; tmux -L "$TM" kill-server 2>/dev/null; (exit $rc); lab_teardown' EXIT
lab_bg "$INS" /usr/bin/python3 "$INTEG_DIR/ws_origin.py" --log "$LAB_DIR/ws.jsonl" 0.0.0.0:9010
lab_bg "$INS" "$PY" "$INTEG_DIR/grpc_origin.py" "$T/srv.crt" "$T/srv.key" 203.0.113.13:50051
wait_until 10 ix bash -c '</dev/tcp/192.0.2.2/9010' || lab_bail "the ws origin did not start"
wait_until 15 ix bash -c '</dev/tcp/203.0.113.13/50051' || lab_bail "the gRPC origin did not start"

MP=$((PROXY_PORT + 61))
lab_write_conf "intercept on" "passthrough pass.test" "allow pass.test:8443" "allow good.test:9010" "allow good.test" \
	"allow tls.test:50051" "upstream-ca tls.test $T/ca.crt" "metrics-listen $MP" \
	"log-open-after 2" "log-progress 2" "idle-timeout 30"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
CA=$STATE/ca.crt

expect_eq "sluice check takes log-open-after and log-progress" \
	"log-open-after 2 log-progress 2" "$(sl check 2>/dev/null | grep -E '^log-(open-after|progress) ' | paste -sd' ')"
printf 'log-open-after 2x\n' >"$LAB_DIR/bad.conf"
expect_re "a bad log-open-after is an error naming file:line" "bad.conf:1: log-open-after" \
	"$(hx "$SLUICE_BUILD/sluice" -c "$LAB_DIR/bad.conf" check 2>&1)"

scrape() { hx curl -s --max-time 5 -o "$1" -w '%{http_code}' "http://127.0.0.1:$MP/metrics"; }
S=$LAB_DIR/scrape
[ "$(scrape $S.0)" = 200 ] || lab_bail "the proxy serves its metrics"
L0=$(wc -l <"$NETLOG")

# sluice log -f, following, and sluice watch on a terminal
hx "$SLUICE_BUILD/sluice" -c "$CONF" log -f --json >"$LAB_DIR/follow.out" 2>&1 &
follow=$!
cat >"$LAB_DIR/w.sh" <<EOF
#!/bin/bash
exec ip netns exec "$HNS" "$SLUICE_BUILD/sluice" -c "$CONF" watch
EOF
chmod +x "$LAB_DIR/w.sh"
tmx new-session -d -s w -x 200 -y 40 "$LAB_DIR/w.sh"
cap() { tmx capture-pane -p -t w; }
alive() { kill -0 "$1" 2>/dev/null; }
followed() { grep -c "$1" "$LAB_DIR/follow.out"; }

# --- a WebSocket held open 12 s
hx node "$INTEG_DIR/ws_client.js" "$PROXY_ADDR:$PROXY_PORT" ws://good.test:9010/held "" 12 >"$LAB_DIR/ws.out" 2>&1 &
ws=$!
wait_until 5 grep -q '^101 hello' "$LAB_DIR/ws.out" || lab_bail "the WebSocket opened" "$(cat "$LAB_DIR/ws.out")"
wait_log 5 kind=open path=/held
still=$(alive $ws && echo open || echo ended)
expect_eq "a WebSocket open for 2 s gets its open row while it is still open" "1 open" \
	"$(logq kind=open path=/held --count) $still"
expect_eq "... of ws, its identity (method, host, port, status, decision, reason) as the final row will have" \
	"ws GET good.test 9010 101 allow granted" \
	"$(for f in of method host port status decision reason; do printf '%s ' "$(logq kind=open path=/held --field $f)"; done | sed 's/ $//')"
expect_eq "... and the bytes so far (11 up: one masked frame; 7 down)" "11 7" \
	"$(logq kind=open path=/held --field up) $(logq kind=open path=/held --field down)"
wait_until 5 bash -c "grep -q '\"kind\":\"open\".*\"/held\"' '$LAB_DIR/follow.out'"
expect_eq "... sluice log -f shows it while it is open" "1 open" \
	"$(followed '"kind":"open".*"/held"') $(alive $ws && echo open || echo ended)"
wait_until 5 bash -c "tmux -L '$TM' capture-pane -p -t w | grep -q 'open .*good.test:9010 */held'"
expect_eq "... sluice watch shows it while it is open" "1 open" \
	"$(cap | grep -c 'open .*good.test:9010 */held') $(alive $ws && echo open || echo ended)"
wait_log 5 kind=progress path=/held
expect_eq "... then progress rows (log-progress 2), while still open" "ws open" \
	"$(logq kind=progress path=/held --field of) $(alive $ws && echo open || echo ended)"
wait "$ws"
wait_log 5 kind=ws path=/held
ws_conn=$(logq kind=ws path=/held --field conn)
expect_eq "the final row is the ws row as before, its conn and req those of the open row" \
	"ws 101 $ws_conn $(logq kind=ws path=/held --field req)" \
	"$(logq kind=ws path=/held --field kind) $(logq kind=ws path=/held --field status) $(logq kind=open path=/held --field conn) $(logq kind=open path=/held --field req)"
np=$(logq kind=progress path=/held --count)
expect_ge "... progress rows came about every 2 s (at least 3 in 12 s)" 3 "$np"
expect_lt "... and no faster (at most 5 in 12 s)" 6 "$np"
expect_eq "... no open or progress row after the final one" "" \
	"$(awk -v c="$ws_conn" 'index($0, "\"conn\":" c ",") { print }' "$NETLOG" | tail -1 | grep -o '"kind":"[a-z]*"' | grep -v '"kind":"ws"')"

# --- a passthrough CONNECT tunnel held 6 s (openssl s_client until its stdin ends)
(sleep 6 | hx openssl s_client -proxy "$PROXY_ADDR:$PROXY_PORT" -connect pass.test:8443 \
	-servername pass.test -CAfile "$T/ca.crt" >"$LAB_DIR/tun.out" 2>&1) &
tun=$!
wait_log 5 kind=open of=tunnel host=pass.test
expect_eq "a passthrough tunnel open for 2 s gets its open row while it is open" "1 open" \
	"$(logq kind=open of=tunnel host=pass.test --count) $(alive $tun && echo open || echo ended)"
expect_eq "... CONNECT pass.test 8443 200 allow, path null" "CONNECT pass.test 8443 200 allow null" \
	"$(for f in method host port status decision path; do printf '%s ' "$(logq kind=open of=tunnel --field $f)"; done | sed 's/ $//')"
up=$(logq kind=open of=tunnel --field up)
down=$(logq kind=open of=tunnel --field down)
expect_ge "... with the handshake's bytes so far (up: the ClientHello)" 100 "$up"
expect_ge "... (down: the server's flight)" 100 "$down"
wait "$tun"
expect_re "... the TLS session through it was verified" "Verify return code: 0" "$(cat "$LAB_DIR/tun.out")"
wait_log 5 kind=tunnel host=pass.test
expect_eq "the final tunnel row as before" "tunnel 200 granted" \
	"$(logq kind=tunnel host=pass.test --field kind) $(logq kind=tunnel host=pass.test --field status) $(logq kind=tunnel host=pass.test --field reason)"
expect_ge "... its bytes at least the open row's" "$up" "$(logq kind=tunnel host=pass.test --field up)"

# --- an HTTP/2 stream that streams for 6 s (a gRPC call: 30 messages 200 ms apart)
hx "$PY" "$INTEG_DIR/h2_client.py" "$PROXY_ADDR" "$PROXY_PORT" tls.test 50051 "$CA" grpcslow 30 200 12 /t.T/Echo \
	>"$LAB_DIR/slow.out" 2>&1 &
slow=$!
wait_until 5 grep -q '^data' "$LAB_DIR/slow.out" || lab_bail "the slow gRPC stream began" "$(cat "$LAB_DIR/slow.out")"
wait_log 5 kind=open path=/t.T/Count
expect_eq "an HTTP/2 stream open for 2 s gets its open row while it streams" "1 open" \
	"$(logq kind=open path=/t.T/Count --count) $(alive $slow && echo open || echo ended)"
expect_eq "... of https, h2, POST tls.test 50051 200" "https h2 POST tls.test 50051 200" \
	"$(for f in of proto method host port status; do printf '%s ' "$(logq kind=open path=/t.T/Count --field $f)"; done | sed 's/ $//')"
expect_ge "... with the response bytes so far" 1 "$(logq kind=open path=/t.T/Count --field down)"
wait "$slow"
expect_eq "... the call ended whole" "ended 200" "$(grep -E '^(reset|ended|open)' "$LAB_DIR/slow.out")"
wait_log 5 kind=https path=/t.T/Count
expect_eq "the final stream row as before, the open row's conn and req" \
	"$(logq kind=https path=/t.T/Count --field conn) $(logq kind=https path=/t.T/Count --field req)" \
	"$(logq kind=open path=/t.T/Count --field conn) $(logq kind=open path=/t.T/Count --field req)"
expect_eq "a short stream gets no open row" 0 "$(logq kind=open path=/t.T/Echo --count)"

# --- counted once: metrics, --by-host
sleep 0.3
[ "$(scrape $S.1)" = 200 ] || lab_bail "the proxy serves its metrics"
rows=$(tail -n +$((L0 + 1)) "$NETLOG" | "$PY" -c '
import json, sys, collections
c = collections.Counter(); up = down = 0
for line in sys.stdin:
    r = json.loads(line)
    if r["kind"] in ("http", "https", "ws", "wss", "tunnel"):
        c[(r["kind"], r["decision"], r["reason"])] += 1; up += r["up"]; down += r["down"]
for k, n in sorted(c.items()):
    print("sluice_proxy_requests_total{kind=\"%s\",decision=\"%s\",reason=\"%s\"} %d" % (k + (n,)))
print("up", up, "down", down)')
moved=$("$PY" - "$S.0" "$S.1" <<'PY'
import sys
def read(p):
    d = {}
    for line in open(p):
        if line.startswith(("sluice_proxy_requests_total{", "sluice_proxy_bytes_total{")):
            k, v = line.rsplit(" ", 1)
            d[k] = int(float(v))
    return d
a, b = read(sys.argv[1]), read(sys.argv[2])
for k in sorted(b):
    if k.startswith("sluice_proxy_requests_total") and b[k] != a.get(k, 0):
        print(k, b[k] - a.get(k, 0))
u = 'sluice_proxy_bytes_total{direction="up"}'
d = 'sluice_proxy_bytes_total{direction="down"}'
print("up", b[u] - a.get(u, 0), "down", b[d] - a.get(d, 0))
PY
)
expect_re "the open and progress rows were written" "[1-9]" "$(tail -n +$((L0 + 1)) "$NETLOG" | grep -c '"kind":"\(open\|progress\)"')"
expect_eq "metrics count each exchange once, and its bytes once (the exchange rows, nothing of open or progress)" \
	"$(printf '%s\n' "$rows" | sort)" "$(printf '%s\n' "$moved" | sort)"
expect_eq "... no requests_total series of kind open or progress" 0 \
	"$(grep -c 'sluice_proxy_requests_total{kind="\(open\|progress\)"' "$S.1")"
out=$(sl log --by-host --host good.test)
expect_re "log --by-host: the WebSocket counted once" "^good\.test +unattributed +1 +0 +0 " \
	"$(printf '%s\n' "$out" | grep '^good.test')"
out=$(sl log --by-host --host pass.test)
expect_re "... the tunnel once" "^pass\.test +unattributed +1 +0 +0 " "$(printf '%s\n' "$out" | grep '^pass.test')"
out=$(sl log --by-host --host tls.test)
expect_re "... tls.test: its CONNECT, the slow stream and the short one: 3" "^tls\.test +unattributed +3 +0 +0 " \
	"$(printf '%s\n' "$out" | grep '^tls.test')"

# --- an HTTP/1.1 request waiting 4 s for its response (the origin's /slow)
hx curl -s --max-time 10 -x "$PROXY_URL" -o "$LAB_DIR/slow1.out" "http://good.test/slow?s=4" &
h1=$!
wait_log 5 kind=open of=http path~/slow
expect_eq "an HTTP/1.1 request waiting on its response gets its open row while it waits (status 0 so far)" \
	"1 open 0 allow" \
	"$(logq kind=open path~/slow --count) $(alive $h1 && echo open || echo ended) $(logq kind=open path~/slow --field status) $(logq kind=open path~/slow --field decision)"
wait "$h1"
wait_log 5 kind=http path~/slow
expect_eq "... its final row as before (200), the open row's conn and req" \
	"200 $(logq kind=http path~/slow --field conn) $(logq kind=http path~/slow --field req)" \
	"$(logq kind=http path~/slow --field status) $(logq kind=open path~/slow --field conn) $(logq kind=open path~/slow --field req)"
expect_re "... sluice log's table says what it is" "http open for [0-9.]+ s: [0-9]+ bytes up, 0 down so far" \
	"$(sl log --host good.test | grep '/slow')"

# --- learn: a would-be refusal that lasts is one would-be refusal
sl allow enforce learn --for 1h >/dev/null 2>&1 || lab_bail "sluice allow enforce learn"
wait_until 5 bash -c "[ \$(grep -c 'policy reloaded' '$LAB_DIR/proxy.err') -gt 0 ]"
sleep 1.2
hx node "$INTEG_DIR/ws_client.js" "$PROXY_ADDR:$PROXY_PORT" ws://other.test:9010/learn "" 5 >"$LAB_DIR/ws2.out" 2>&1 &
ws2=$!
wait_log 6 kind=open path=/learn
expect_eq "learn: an ungranted WebSocket, observed, gets its open row (observe, not-granted)" "observe not-granted" \
	"$(logq kind=open path=/learn --field decision) $(logq kind=open path=/learn --field reason)"
wait "$ws2"
wait_log 5 kind=ws path=/learn
expect_ge "... and progress rows" 1 "$(logq kind=progress path=/learn --count)"
sl allow enforce on >/dev/null 2>&1 || lab_bail "sluice allow enforce on"
out=$(sl allow learn </dev/null)
printf '%s\n' "$out" | sed 's/^/# learn: /'
expect_re "allow learn counts it once" "^# other\.test:9010: 1 would-be refusal," "$out"

kill "$follow" 2>/dev/null
wait "$follow" 2>/dev/null
lab_done
