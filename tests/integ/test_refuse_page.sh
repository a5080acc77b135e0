#!/bin/bash
# A CONNECT refused by policy, when sluice can intercept the name, is
# answered 200 and its TLS completed with a leaf for the name; the request
# inside is answered with the refusal (403, Proxy-Status, a body naming
# what was refused, why, its id and the command that grants it), so the
# client shows it: curl, curl --http2 (answered over HTTP/1.1), python
# requests, pip, node, git. The log keeps one refusal row, whose id the
# page gives. No page for a denied IP literal, a passthrough name, or with
# `refuse-page off` (the plain 403 at CONNECT, as before).
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
O=$LAB_DIR/tls/ca.crt
lab_write_conf "intercept on" "allow tls.test:9443" "upstream-ca tls.test $O" "passthrough third.test"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
CA=$STATE/ca.crt
icurl() { hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$CA" "$@"; }

out=$(icurl https://tls.test:9443/ 2>&1)
expect_re "control: an allowed host is intercepted and served" '^hello from 203\.0\.113\.13:9443' "$out"

# curl: the refusal's page, in the client's own TLS
out=$(icurl -D "$LAB_DIR/h1" -w '\n%{http_code} %{http_version}' https://other.test/some/path?q=1 2>&1)
echo "# curl printed: $(echo "$out" | head -3 | tr '\n' '|')"
expect_re "curl: a refused name's request is answered 403 inside its TLS" '^403 1.1$' "$(echo "$out" | tail -1)"
expect_re "... the body says what was refused" 'refused GET https://other\.test/some/path\?q=1' "$out"
expect_re "... why, and the command that grants it" \
	'other\.test is not granted; to grant it run: sluice allow approve [0-9a-f]{16} \(or: sluice allow add other\.test\)' "$out"
id=$(echo "$out" | sed -n 's/^refusal id: \([0-9a-f]\{16\}\)$/\1/p')
expect_re "... and the refusal's id on a line of its own" '^[0-9a-f]{16}$' "$id"
ps=$(tr -d '\r' <"$LAB_DIR/h1" | sed -n 's/^Proxy-Status: //p')
expect_re "... Proxy-Status names sluice, the reason and the id" \
	"^sluice; error=http_request_denied; details=\"not-granted id=$id: " "$(printf '%s' "$ps" | tail -1)"
wait_log 3 host=other.test
expect_eq "... one refusal row, at the CONNECT" "1 tunnel 403 refuse not-granted $id" \
	"$(logq host=other.test --count) $(logq host=other.test --field kind) $(logq host=other.test --field status) $(logq host=other.test --field decision) $(logq host=other.test --field reason) $(logq host=other.test --field refusal)"

out=$(icurl --http2 -w '\n%{http_code} %{http_version}' https://other.test/h2 2>&1)
expect_re "curl --http2: the same page, over HTTP/1.1" '^403 1.1$' "$(echo "$out" | tail -1)"
expect_re "... its body" 'refused GET https://other\.test/h2' "$out"

# python requests
out=$(hx env REQUESTS_CA_BUNDLE="$CA" "$PY" -c '
import requests, sys
r = requests.get("https://other.test/pkg", proxies={"https": sys.argv[1]}, timeout=10)
print(r.status_code, r.text.splitlines()[1] if len(r.text.splitlines()) > 1 else r.text)' "$PROXY_URL" 2>&1)
echo "# python requests printed: $(echo "$out" | tail -1)"
expect_re "python requests: status 403 and the page" '^403 sluice: other\.test is not granted; to grant it run: sluice allow approve [0-9a-f]{16}' "$out"

# pip, against an index on the refused name: it logs an index's HTTP errors only at -vv
out=$(hx env -u PIP_CERT -u PIP_FIND_LINKS "$PY" -m pip download -vv --no-deps --retries 0 --timeout 5 \
	--no-cache-dir -d "$LAB_DIR/pip" --index-url https://other.test/simple/ --proxy "$PROXY_URL" \
	--cert "$CA" nosuchpkg 2>&1)
echo "$out" | grep -E '^(Could not fetch|ERROR|WARNING)' | sed 's/^/# pip -vv printed: /'
expect_re "pip: an HTTP 403 for the index's URL (not a proxy error)" \
	'Could not fetch URL https://other\.test/simple/nosuchpkg/: 403 Client Error: Forbidden for url: https://other\.test/simple/nosuchpkg/' "$out"

# node: a proxy agent's CONNECT, then its request through the tunnel
out=$(hx node "$INTEG_DIR/refuse_node.js" "$PROXY_ADDR:$PROXY_PORT" https://other.test/npm "$CA" 2>&1)
echo "# node printed: $out"
expect_re "node: the request inside the tunnel gets 403 and the page" '^403 sluice: refused GET https://other\.test/npm' "$out"

# git over HTTPS: git prints a text/plain error body as remote: lines
out=$(hx git -c http.proxy="$PROXY_URL" -c http.sslCAInfo="$CA" clone -q https://other.test/repo.git "$LAB_DIR/g1" 2>&1)
echo "$out" | sed 's/^/# git printed: /'
expect_re "git clone: it shows sluice's reason and the command" 'remote: sluice: other\.test is not granted; to grant it run: sluice allow approve' "$out"

rows=$(logq host=other.test --count)
expect_eq "every client's refusal is one row (curl, curl --http2, requests, pip, node, git)" 6 "$rows"

# no page where sluice must not or cannot complete the client's TLS
out=$(icurl https://10.20.0.5/ 2>&1)
expect_re "a denied IP literal: the plain 403 at CONNECT" 'CONNECT tunnel failed, response 403' "$out"
out=$(icurl https://third.test/ 2>&1)
expect_re "a passthrough name not granted: the plain 403 at CONNECT" 'CONNECT tunnel failed, response 403' "$out"

# a client that says nothing inside the tunnel: still one row, closed by head-timeout
n0=$(logq host=other.test --count)
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$CA" <<'PY' 2>&1
import socket, ssl, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=15)
s.sendall(b"CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
ctx = ssl.create_default_context(cafile=sys.argv[3])
t = ctx.wrap_socket(s, server_hostname="other.test")
t0 = time.time()
try:
    d = t.recv(100)
except Exception as e:
    d = repr(e).encode()
print(head.split(b"\r\n")[0].decode(), "closed after %.0f s" % (time.time() - t0), d[:40])
PY
)
expect_re "a silent client inside the page's tunnel is closed by head-timeout" '^HTTP/1.1 200 Connection established closed after [4-7] s' "$out"
expect_eq "... and its refusal is still one row" $((n0 + 1)) "$(logq host=other.test --count)"

# a client that waits for the server to speak first (SSH, a banner): closed soon after the 200
out=$(hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" <<'PY' 2>&1
import socket, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=15)
s.sendall(b"CONNECT other.test:22 HTTP/1.1\r\nHost: other.test:22\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
t0 = time.time()
d = s.recv(100)
print(head.split(b"\r\n")[0].decode(), "closed after %.0f s" % (time.time() - t0), d[:40])
PY
)
expect_re "a client silent before its handshake is closed 2 s after the page's 200 (not head-timeout)" \
	"^HTTP/1.1 200 Connection established closed after [23] s b''$" "$out"

# past its refusal-row budget a client gets the plain 403, not a handshake per try
before=$(reloads)
lab_write_conf "intercept on" "allow tls.test:9443" "upstream-ca tls.test $O" "passthrough third.test" \
	"log-row-rate 1" "log-row-burst 2"
wait_until 10 reloaded_past "$before" || not_ok "the proxy reloads the config" "$(tail -3 "$LAB_DIR/proxy.err")"
pages=0 plain=0
for i in 1 2 3 4 5 6; do
	out=$(icurl https://other.test/flood$i 2>&1)
	case $out in
	*"sluice: refused GET"*) pages=$((pages + 1)) ;;
	*"CONNECT tunnel failed, response 403"*) plain=$((plain + 1)) ;;
	esac
done
expect_eq "six refusals in a burst, log-row-burst 2: each a page or the plain 403" 6 "$((pages + plain))"
expect_ge "... the first ones the page" 1 "$pages"
expect_ge "... those past the budget (rows counted, not written) the plain 403" 3 "$plain"

# refuse-page off: the plain 403 at CONNECT, as before
before=$(reloads)
lab_write_conf "intercept on" "allow tls.test:9443" "upstream-ca tls.test $O" "passthrough third.test" "refuse-page off"
out=$(sl check 2>&1)
expect_eq "sluice check accepts refuse-page off" 0 "$?"
wait_until 10 reloaded_past "$before" || not_ok "the proxy reloads the config" "$(tail -3 "$LAB_DIR/proxy.err")"
out=$(icurl https://other.test/ 2>&1)
expect_re "refuse-page off: curl sees the CONNECT's 403, as before" 'CONNECT tunnel failed, response 403' "$out"
lab_write_conf "intercept on" "refuse-page maybe"
out=$(sl check 2>&1)
expect_re "sluice check refuses a bad value, naming file and line" 'sluice\.conf:[0-9]+: refuse-page: expected on or off, got "maybe"' "$out"

lab_done
