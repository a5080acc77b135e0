#!/bin/bash
# Metrics (metrics-listen, dns-metrics-listen): the real sluice-proxy and
# sluice-dns scraped with curl before and after a known number of requests
# and queries. Each counter moves by exactly what was done, and by exactly
# the rows the logs gained (kind, decision, reason; bytes up and down);
# the gauges count a tunnel held open and drop when it closes; TLS
# handshakes, leaf-cache hits and misses and token runs move with what was
# sent; a reload counts; another path is 404, another method 405, a bad
# head 400, an oversized one 431, a silent one is closed, and the proxy
# keeps serving; promtool (Debian's prometheus package) accepts the text;
# and no scraped line holds a host, a path, a client address or the token.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up
lab_tls_origin
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"'
O=$LAB_DIR/tls/ca.crt
# an HTTP/2 origin (nginx with http2), for the streams gauge
d=$LAB_DIR/h2
mkdir -p "$d/www" "$d/tmp"
{ lab_nginx_head "$d"; cat; } >"$d/nginx.conf" <<NGX
http {
	default_type text/plain;
	access_log $d/access.log;
$(lab_nginx_temps "$d")
	server {
		listen 203.0.113.13:8444 ssl http2;
		ssl_certificate $LAB_DIR/tls/srv.crt;
		ssl_certificate_key $LAB_DIR/tls/srv.key;
		root $d/www;
		# proxied: nginx reads the whole body before it answers, so the stream stays open
		location = /post { proxy_pass http://127.0.0.1:8446; }
	}
	server {
		listen 127.0.0.1:8446;
		location / { return 200 "len=\$content_length\n"; }
	}
}
NGX
lab_bg "$INS" nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8444' ||
	lab_bail "h2 nginx did not start" "$(cat "$d/error.log" 2>/dev/null)"
MP=9190
DP=9191
lab_write_conf "intercept on" "allow good.test" "allow tls.test:8444" "upstream-ca tls.test $O" \
	"allow pass.test:9443" "passthrough pass.test" \
	"allow api.test:9443" "upstream-ca api.test $O" "allow tok.test:9443" "allow tokfail.test:9443" \
	"upstream-ca tok.test $O" "upstream-ca tokfail.test $O" \
	'inject gh host=api.test:9443 path=/api header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN unattributed=yes' \
	"inject tok host=tok.test:9443 header=Authorization prefix=\"Bearer \" command=$LAB_DIR/mint.sh unattributed=yes" \
	"inject tokfail host=tokfail.test:9443 header=Authorization command=$LAB_DIR/fail.sh unattributed=yes" \
	"metrics-listen $MP" "dns-listen 127.0.0.1:53" "dns-upstream $UNBOUND_ADDR" \
	"dns-metrics-listen 127.0.0.1:$DP"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
printf '#!/bin/sh\necho "%s"\necho 60\n' "$LAB_TOKEN" >"$LAB_DIR/mint.sh"
printf '#!/bin/sh\necho oops >&2\nexit 3\n' >"$LAB_DIR/fail.sh"
chmod 700 "$LAB_DIR/mint.sh" "$LAB_DIR/fail.sh"
export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_run_proxy
unset SLUICE_LAB_TOKEN
lab_run_dns "$CONF"
CA=$STATE/ca.crt
DNSLOG=$STATE/dns.log
icurl() { hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$CA" "$@"; }
dq() { hx dig +tries=1 +time=3 @127.0.0.1 "$@"; }

# scrape PORT FILE: GET /metrics into FILE; its status printed
scrape() { hx curl -s --max-time 5 -o "$2" -w '%{http_code}' "http://127.0.0.1:$1/metrics"; }
# mval FILE SERIES: the value of one series as written (name{labels}); 0 when absent
mval() { awk -v k="$2" '$1 == k { v = $2 } END { print v == "" ? 0 : v }' "$1"; }
# mdelta A B SERIES: how much SERIES moved from scrape A to scrape B
mdelta() { echo $(($(mval "$2" "$3") - $(mval "$1" "$3"))); }
# rows_by FROM: the network log's rows after line FROM, as "kind decision reason" counts
rows_by() {
	tail -n +$(($1 + 1)) "$NETLOG" | "$PY" -c '
import json, sys, collections
c = collections.Counter()
for line in sys.stdin:
    r = json.loads(line)
    c[(r.get("kind") or "none", r.get("decision") or "none", r.get("reason") or "none")] += 1
for (k, d, why), n in sorted(c.items()):
    print("sluice_proxy_requests_total{kind=\"%s\",decision=\"%s\",reason=\"%s\"} %d" % (k, d, why, n))'
}
# rows_sum FROM FIELD: the sum of FIELD (up, down) over the rows after line FROM
rows_sum() { tail -n +$(($1 + 1)) "$NETLOG" | "$PY" -c '
import json, sys
print(sum(json.loads(l).get(sys.argv[1]) or 0 for l in sys.stdin))' "$2"; }
# metrics_moved A B: every requests_total series that moved, "SERIES DELTA", sorted
metrics_moved() {
	"$PY" - "$1" "$2" <<'PY'
import sys
def read(p):
    d = {}
    for line in open(p):
        if line.startswith("sluice_proxy_requests_total{"):
            k, v = line.rsplit(" ", 1)
            d[k] = int(v)
    return d
a, b = read(sys.argv[1]), read(sys.argv[2])
for k in sorted(b):
    if b[k] != a.get(k, 0):
        print(k, b[k] - a.get(k, 0))
PY
}

S=$LAB_DIR/scrape
expect_eq "the proxy serves GET /metrics on 127.0.0.1:$MP (a bare port is loopback)" 200 "$(scrape $MP $S.0)"
expect_re "... Prometheus text with HELP and TYPE" '^# HELP sluice_' "$(head -1 $S.0)"
expect_re "... its listener is loopback only" "metrics on http://127.0.0.1:$MP/metrics" "$(cat "$LAB_DIR/proxy.err")"
expect_eq "sluice-dns serves its own on 127.0.0.1:$DP" 200 "$(scrape $DP $S.d0)"
L0=$(wc -l <"$NETLOG")

# --- a known number of requests: 3 allowed POSTs with bodies, 2 refused, 1 tunnel
head -c 4000 /dev/urandom | base64 -w0 | head -c 4000 >"$LAB_DIR/body"
for i in 1 2 3; do
	code=$(pcode "http://good.test/mpost$i" --data-binary "@$LAB_DIR/body")
	expect_eq "allowed POST $i with a 4000-byte body: 200" 200 "$code"
done
for i in 1 2; do
	expect_eq "refused GET $i (other.test not granted): 403" 403 "$(pcode "http://other.test/mref$i")"
done
# a tunnel held open: CONNECT pass.test (passthrough), then scrape while it is up
hold=$LAB_DIR/hold.go
hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$hold" >"$LAB_DIR/hold.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5)
s.sendall(b"CONNECT pass.test:9443 HTTP/1.1\r\nHost: pass.test:9443\r\n\r\n")
r = b""
while b"\r\n\r\n" not in r:
    b = s.recv(4096)
    if not b:
        break
    r += b
print(r.split(b"\r\n")[0].decode(), flush=True)
end = time.time() + 20
while not os.path.exists(sys.argv[3]) and time.time() < end:
    time.sleep(0.05)
# the client's own TLS through the tunnel (passthrough), one request of 1000 bytes
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
t = ctx.wrap_socket(s, server_hostname="pass.test")
t.sendall(b"GET /tun HTTP/1.1\r\nHost: pass.test\r\nX-Pad: " + b"p" * 950 + b"\r\n\r\n")
print("answer", t.recv(4096).split(b"\r\n")[0].decode(), flush=True)
t.close()
PY
HOLD_PID=$!
LAB_PIDS+=("$HOLD_PID")
tunnel_up() { grep -q '200' "$LAB_DIR/hold.out"; }
wait_until 10 tunnel_up
expect_re "a CONNECT tunnel to pass.test is open" '^HTTP/1.1 200' "$(cat "$LAB_DIR/hold.out")"
scrape $MP $S.1 >/dev/null
expect_eq "while it is held: 1 open connection" 1 "$(mval $S.1 sluice_proxy_connections)"
expect_eq "... and 1 open tunnel" 1 "$(mval $S.1 sluice_proxy_tunnels)"
expect_eq "... no HTTP/2 stream" 0 "$(mval $S.1 sluice_proxy_h2_streams)"
touch "$hold"
wait "$HOLD_PID" 2>/dev/null
expect_re "... the client's own TLS went through it and was answered" '^answer HTTP/1.1 ' \
	"$(tail -1 "$LAB_DIR/hold.out")"
gauges_down() { scrape $MP $S.2 >/dev/null && [ "$(mval $S.2 sluice_proxy_connections)" = 0 ]; }
wait_until 10 gauges_down
expect_eq "after it closed: 0 open connections" 0 "$(mval $S.2 sluice_proxy_connections)"
expect_eq "... and 0 tunnels" 0 "$(mval $S.2 sluice_proxy_tunnels)"
rows_ge() { [ "$(wc -l <"$NETLOG")" -ge "$1" ]; }
wait_until 10 rows_ge $((L0 + 6))
L1=$(wc -l <"$NETLOG")
expect_eq "the log gained 6 rows" 6 $((L1 - L0))

R='sluice_proxy_requests_total'
expect_eq "requests{http,allow,granted} moved by exactly 3" 3 \
	"$(mdelta $S.0 $S.2 "$R{kind=\"http\",decision=\"allow\",reason=\"granted\"}")"
expect_eq "requests{http,refuse,not-granted} moved by exactly 2" 2 \
	"$(mdelta $S.0 $S.2 "$R{kind=\"http\",decision=\"refuse\",reason=\"not-granted\"}")"
expect_eq "requests{tunnel,allow,granted} moved by exactly 1" 1 \
	"$(mdelta $S.0 $S.2 "$R{kind=\"tunnel\",decision=\"allow\",reason=\"granted\"}")"
expect_eq "every series moved by exactly the log's rows of its kind, decision and reason" \
	"$(rows_by "$L0")" "$(metrics_moved $S.0 $S.2)"
up=$(mdelta $S.0 $S.2 'sluice_proxy_bytes_total{direction="up"}')
down=$(mdelta $S.0 $S.2 'sluice_proxy_bytes_total{direction="down"}')
expect_ge "bytes up grew by at least the 3 bodies and the tunnel's 1000-byte request" 13000 "$up"
expect_eq "... exactly the rows' up" "$(rows_sum "$L0" up)" "$up"
expect_ge "bytes down grew (3 answers)" 1 "$down"
expect_eq "... exactly the rows' down" "$(rows_sum "$L0" down)" "$down"

# --- intercepted TLS: handshakes, leaf cache, token runs
H='sluice_proxy_tls_handshakes_total'
out=$(icurl -s -o /dev/null -w '%{http_code}' https://api.test:9443/api)
expect_eq "an intercepted request with an injected credential: 200" 200 "$out"
expect_eq "... the origin saw the token (it was used)" 1 "$(grep -c "Bearer $LAB_TOKEN" "$LAB_DIR/tls9443.jsonl")"
out=$(icurl -s -o /dev/null -w '%{http_code}' https://api.test:9443/api2)
expect_eq "a second one to the same host: 200" 200 "$out"
expect_eq "a token command mints: 200" 200 "$(icurl -s -o /dev/null -w '%{http_code}' https://tok.test:9443/t)"
code=$(icurl -s -o /dev/null -w '%{http_code}' https://tokfail.test:9443/t)
expect_re "a failing token command refuses the request" '^5[0-9][0-9]$' "$code"
hx curl -s -o /dev/null --max-time 10 -x "$PROXY_URL" https://api.test:9443/untrusted
expect_eq "a client that does not trust the CA fails its handshake" 1 \
	"$(logq reason=client-tls-failed --count)"
scrape $MP $S.3 >/dev/null
expect_eq "client handshakes ok moved by exactly 4" 4 \
	"$(mdelta $S.2 $S.3 "$H{side=\"client\",result=\"ok\"}")"
expect_eq "client handshakes failed moved by exactly 1" 1 \
	"$(mdelta $S.2 $S.3 "$H{side=\"client\",result=\"failed\"}")"
# each intercepted CONNECT dials while its client's handshake waits (ALPN), the
# untrusting client's too: five
expect_eq "upstream handshakes ok moved by exactly 5" 5 \
	"$(mdelta $S.2 $S.3 "$H{side=\"upstream\",result=\"ok\"}")"
expect_eq "leaf cache: 3 misses (api, tok, tokfail)" 3 \
	"$(mdelta $S.2 $S.3 'sluice_proxy_leaf_cache_total{result="miss"}')"
expect_eq "... and 2 hits (api again, the untrusting client)" 2 \
	"$(mdelta $S.2 $S.3 'sluice_proxy_leaf_cache_total{result="hit"}')"
expect_eq "token runs: 1 minted" 1 "$(mdelta $S.2 $S.3 'sluice_proxy_token_runs_total{result="minted"}')"
expect_eq "token runs: 1 failed" 1 "$(mdelta $S.2 $S.3 'sluice_proxy_token_runs_total{result="failed"}')"
expect_eq "log write errors: none" 0 "$(mval $S.3 sluice_log_write_errors_total)"

# --- an HTTP/2 stream held open: a POST whose body waits
hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$CA" "$hold.h2" >"$LAB_DIR/h2.out" 2>&1 <<'PY' &
import os, socket, ssl, sys, time
import h2.config, h2.connection, h2.events
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
s.sendall(b"CONNECT tls.test:8444 HTTP/1.1\r\nHost: tls.test:8444\r\n\r\n")
r = b""
while b"\r\n\r\n" not in r:
    r += s.recv(4096)
ctx = ssl.create_default_context(cafile=sys.argv[3])
ctx.set_alpn_protocols(["h2"])
t = ctx.wrap_socket(s, server_hostname="tls.test")
c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
c.initiate_connection()
t.sendall(c.data_to_send())
# the proxy's SETTINGS first: the request then comes in a flight of its own
for ev in c.receive_data(t.recv(65536)):
    pass
c.send_headers(1, [(":method", "POST"), (":scheme", "https"), (":authority", "tls.test:8444"),
                   (":path", "/post"), ("content-length", "10")])
t.sendall(c.data_to_send())
print("open", t.selected_alpn_protocol(), flush=True)
end = time.time() + 20
while not os.path.exists(sys.argv[4]) and time.time() < end:
    time.sleep(0.05)
c.send_data(1, b"0123456789", end_stream=True)
t.sendall(c.data_to_send())
status, done = None, False
while not done and time.time() < end:
    data = t.recv(65536)
    if not data:
        break
    for ev in c.receive_data(data):
        if isinstance(ev, h2.events.ResponseReceived):
            status = dict(ev.headers).get(b":status", b"").decode()
        if isinstance(ev, h2.events.StreamEnded):
            done = True
    t.sendall(c.data_to_send())
print("status", status, flush=True)
t.close()
PY
H2_PID=$!
LAB_PIDS+=("$H2_PID")
h2_open() { grep -q '^open' "$LAB_DIR/h2.out"; }
wait_until 10 h2_open
expect_eq "an HTTP/2 connection through the proxy" "open h2" \
	"$(head -1 "$LAB_DIR/h2.out")"
streams_up() { scrape $MP $S.h2open >/dev/null && [ "$(mval $S.h2open sluice_proxy_h2_streams)" = 1 ]; }
wait_until 5 streams_up
expect_eq "while its body waits: 1 HTTP/2 stream open" 1 "$(mval $S.h2open sluice_proxy_h2_streams)"
expect_eq "... on 1 connection" 1 "$(mval $S.h2open sluice_proxy_connections)"
touch "$hold.h2"
wait "$H2_PID" 2>/dev/null
expect_eq "... the body sent, the stream answered" "status 200" "$(tail -1 "$LAB_DIR/h2.out")"
streams_down() { scrape $MP $S.h2 >/dev/null && [ "$(mval $S.h2 sluice_proxy_h2_streams)" = 0 ]; }
wait_until 10 streams_down
expect_eq "after it: 0 HTTP/2 streams" 0 "$(mval $S.h2 sluice_proxy_h2_streams)"
expect_eq "... the CONNECT's row and the stream's row counted, once each" \
	"$(logq host=tls.test port=8444 decision=allow reason=granted --count)" \
	"$(($(mdelta $S.3 $S.h2 "$R{kind=\"https\",decision=\"allow\",reason=\"granted\"}") +
		$(mdelta $S.3 $S.h2 "$R{kind=\"tunnel\",decision=\"allow\",reason=\"granted\"}")))"

# --- a reload: SIGHUP
kill -HUP "$PROXY_PID"
reloaded() { scrape $MP $S.4 >/dev/null && [ "$(mval $S.4 'sluice_proxy_reloads_total{result="ok"}')" -ge 1 ]; }
wait_until 10 reloaded
expect_eq "SIGHUP: reloads{ok} moved by exactly 1" 1 \
	"$(mdelta $S.3 $S.4 'sluice_proxy_reloads_total{result="ok"}')"

# --- DNS queries by decision
dq good.test A >/dev/null
dq good.test A >/dev/null
for i in 1 2 3; do dq "nope$i.test" A >/dev/null; done
dnsrows() { [ "$(jq_ "$DNSLOG" --count)" -ge 5 ]; }
wait_until 10 dnsrows
scrape $DP $S.d1 >/dev/null
Q='sluice_dns_queries_total'
expect_eq "dns queries{allow,granted} moved by exactly 2" 2 \
	"$(mdelta $S.d0 $S.d1 "$Q{decision=\"allow\",reason=\"granted\"}")"
expect_eq "dns queries{refuse,not-granted} moved by exactly 3" 3 \
	"$(mdelta $S.d0 $S.d1 "$Q{decision=\"refuse\",reason=\"not-granted\"}")"
expect_eq "... as many as the dns-log's rows" "$(jq_ "$DNSLOG" --count)" \
	"$(awk '/^sluice_dns_queries_total/ { n += $2 } END { print n + 0 }' $S.d1)"

# --- what else the listener answers
mcode() { hx curl -s -o /dev/null --max-time 5 -w '%{http_code}' "$@"; }
expect_eq "another path: 404" 404 "$(mcode "http://127.0.0.1:$MP/metricsx")"
expect_eq "a query on the path: 404" 404 "$(mcode "http://127.0.0.1:$MP/metrics?x=1")"
expect_eq "POST: 405" 405 "$(mcode -X POST "http://127.0.0.1:$MP/metrics")"
expect_eq "HEAD: 405" 405 "$(mcode -I "http://127.0.0.1:$MP/metrics")"
expect_eq "sluice-dns: another path 404 too" 404 "$(mcode "http://127.0.0.1:$DP/")"
# rawm HEAD [IDLE]: HEAD sent to the metrics listener, after IDLE connections
# that send nothing were opened and accepted; its answer's first line and
# seconds, then (with IDLE) how many of those the listener closed
rawm() {
	hx "$PY" - "$MP" "$1" "${2:-0}" <<'PY'
import codecs, socket, sys, time
port = int(sys.argv[1])
idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(int(sys.argv[3]))]
if idle:
    time.sleep(0.3)  # every one accepted: 8 in the slots, each after them closed the oldest
s = socket.create_connection(("127.0.0.1", port), timeout=10)
t = time.time()
if sys.argv[2] != "-":
    s.sendall(codecs.decode(sys.argv[2], "unicode_escape").encode("latin-1"))
r = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        r += b
except Exception as e:
    r += b" error " + str(e).encode()
closed = 0
for c in idle:
    c.settimeout(0.5)
    try:
        closed += c.recv(1) == b""
    except socket.timeout:
        pass
    except OSError:
        closed += 1
print((r.split(b"\r\n")[0].decode("latin-1") or "closed") + " %.1f" % (time.time() - t) +
      (" idle closed %d" % closed if idle else ""))
PY
}
expect_re "a malformed head: 400" '^HTTP/1.1 400 ' "$(rawm 'GARBAGE\r\n\r\n')"
expect_re "a bare LF head: 400" '^HTTP/1.1 400 ' "$(rawm 'GET /metrics HTTP/1.1\nHost: x\n\n')"
big=$(printf 'X-Pad: %05000d\\r\\n' 0)
expect_re "a head past 4096 bytes: 431" '^HTTP/1.1 431 ' "$(rawm "GET /metrics HTTP/1.1\\r\\n$big\\r\\n")"
out=$(rawm 'GET /metrics HTTP/1.1\r\nHost: x\r\n')
expect_re "a head that never ends is closed after the 5 s timeout" '^closed [4-7]\.[0-9]$' "$out"
out=$(rawm 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' 12)
expect_re "12 idle connections hold no scrape out: the scrape is answered" '^HTTP/1.1 200 ' "$out"
expect_re "... the oldest idle ones gave way: 4 for the idle after them, 1 for the scrape" \
	'idle closed 5$' "$out"
expect_eq "the proxy still serves metrics" 200 "$(scrape $MP $S.5)"
expect_eq "... and requests" 200 "$(pcode http://good.test/after)"
expect_eq "... still running" 0 "$(proxy_alive; echo $?)"

# --- the text: promtool, and nothing that names what was asked
for f in $S.3 $S.5 $S.d1; do
	out=$(promtool check metrics <"$f" 2>&1)
	rc=$?
	expect_eq "promtool check metrics accepts $(basename "$f") (no lint either)" "0 " "$rc $out"
done
expect_ge "the scrapes hold series to look at" 30 "$(cat $S.* | grep -vc '^#')"
names='good\.test|other\.test|pass\.test|api\.test|tok\.test|tokfail|tls\.test|nope'
paths='mpost|mref|/api|/post|/tun|/untrusted'
addrs='203\.0\.113|192\.0\.2|127\.0\.0'
expect_ge "the pattern finds the hosts, paths and addresses in the network log" 10 \
	"$(grep -E -c -i "$names|$paths|$addrs" "$NETLOG")"
leak=$(cat $S.* | grep -E -i "$names|$paths|$addrs|$LAB_TOKEN" || true)
expect_eq "no scraped line holds a host, a path, an address or the token" "" "$leak"
lab_done
