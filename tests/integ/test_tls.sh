#!/bin/bash
# TLS interception: a CONNECT to a host not on the passthrough list is
# decrypted with a leaf from sluice's CA; each request inside is judged and
# logged on its own; the upstream is verified (here against the lab's test
# CA, named by upstream-ca); a client that does not trust sluice's CA fails
# its handshake and the log says why; the server name must be the CONNECT
# host and each Host too; ALPN never offers h2; passthrough hosts see the
# client's own handshake.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
lab_write_conf "intercept on" "allow tls.test:8443" "allow pass.test:8443" "allow badcert.test:8443" \
	"passthrough pass.test" "upstream-ca tls.test $LAB_DIR/tls/ca.crt" \
	"upstream-ca badcert.test $LAB_DIR/tls/ca.crt"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
CA=$STATE/ca.crt
tcurl() { hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$CA" "$@"; }

out=$(tcurl -w ' %{http_code} %{http_version}' https://tls.test:8443/ 2>&1)
expect_eq "curl through an intercepted CONNECT, trusting sluice's CA: 200" "tls ok 200 1.1" "$(echo $out)"
expect_eq "... the tunnel's row says intercepted" "tunnel 200 allow" \
	"$(logq kind=tunnel host=tls.test --field kind) $(logq kind=tunnel host=tls.test --field status) $(logq kind=tunnel host=tls.test --field decision)"
expect_re "... with the TLS version" "intercepted: TLSv1" "$(logq kind=tunnel host=tls.test --field detail)"
expect_eq "... and the request inside has its own row: https GET / 200" "https GET / 200" \
	"$(logq kind=https host=tls.test --field kind) $(logq kind=https host=tls.test --field method) $(logq kind=https host=tls.test --field path) $(logq kind=https host=tls.test --field status)"
expect_eq "... naming the address dialed" "203.0.113.13:8443" "$(logq kind=https host=tls.test --field dialed)"
issuer=$(hx bash -c "openssl s_client -proxy $PROXY_ADDR:$PROXY_PORT -connect tls.test:8443 -servername tls.test </dev/null 2>/dev/null | openssl x509 -noout -issuer")
expect_re "the client sees a leaf issued by sluice's CA" "sluice CA" "$issuer"

# real clients, each trusting sluice's CA the way `sluice ca show` says
out=$(hx env REQUESTS_CA_BUNDLE="$CA" "$PY" -c '
import requests, sys
r = requests.get("https://tls.test:8443/", proxies={"https": sys.argv[1]}, timeout=10)
print(r.status_code, r.text.strip())' "$PROXY_URL" 2>&1)
expect_eq "python requests through interception" "200 tls ok" "$out"
out=$(hx env NODE_EXTRA_CA_CERTS="$CA" node -e '
const http = require("http"), tls = require("tls");
const [ph, pp] = process.argv[1].split(":");
http.request({host: ph, port: pp, method: "CONNECT", path: "tls.test:8443",
              headers: {Host: "tls.test:8443"}}).on("connect", (res, sock) => {
  const t = tls.connect({socket: sock, servername: "tls.test"}, () => {
    t.write("GET /node HTTP/1.1\r\nHost: tls.test:8443\r\nConnection: close\r\n\r\n");
  });
  let b = ""; t.on("data", d => b += d); t.on("end", () => console.log(b.split("\r\n")[0]));
  t.on("error", e => console.log("error", e.code));
}).end();' "$PROXY_ADDR:$PROXY_PORT" 2>&1)
expect_eq "node tls through interception" "HTTP/1.1 404 Not Found" "$out"
out=$(hx env https_proxy="$PROXY_URL" wget -q -O - --ca-certificate="$CA" https://tls.test:8443/ 2>&1)
expect_eq "wget through interception" "tls ok" "$out"
repo=$LAB_DIR/tls/www/repo.git
git init -q --bare -b main "$repo" && git -C "$LAB_DIR" init -q src &&
	git -C "$LAB_DIR/src" -c user.email=t@t -c user.name=t commit -q --allow-empty -m lab &&
	git -C "$LAB_DIR/src" push -q "$repo" HEAD:refs/heads/main 2>/dev/null &&
	git -C "$repo" update-server-info || not_ok "a test repository"
out=$(hx git -c http.proxy="$PROXY_URL" -c http.sslCAInfo="$CA" clone -q \
	https://tls.test:8443/repo.git "$LAB_DIR/clone" 2>&1 && git -C "$LAB_DIR/clone" log --format=%s)
expect_eq "git clone https through interception" "lab" "$out"
expect_ge "... every one of git's requests has a row" 3 "$(logq kind=https 'path~/repo.git/')"

# the upstream session is resumed on the next connection to the same host and port
tcurl -o /dev/null https://tls.test:8443/resume1 && tcurl -o /dev/null https://tls.test:8443/resume2
expect_eq "a second connection to the same upstream resumes its TLS session" "reused=r" \
	"$(grep '/resume2' "$LAB_DIR/tls/access.log" | grep -o 'reused=.*')"

# keep-alive inside one tunnel: three requests, three rows, one upstream connection
out=$(tcurl -o /dev/null -o /dev/null -o /dev/null -w '%{http_code} ' https://tls.test:8443/echo?k1 https://tls.test:8443/echo?k2 \
	https://tls.test:8443/echo?k3 2>&1)
expect_eq "three requests on one intercepted connection: 200 200 200" "200 200 200" "$(echo $out)"
expect_eq "... three https rows on one connection" 3 "$(logq kind=https 'path~/echo?k' conn=$(logq path=/echo?k1 --field conn))"

# no stamp header reaches the origin from inside a tunnel either
out=$(tcurl -H 'Sluice-Stamp: forged' https://tls.test:8443/echo?st 2>&1)
expect_eq "a stamp header sent inside the tunnel does not reach the origin" "host=tls.test auth= stamp=" "$out"

# a client that does not trust sluice's CA
rows=$(logq kind=tunnel)
code=$(hx curl -s -o /dev/null -w '%{exitcode}' --max-time 10 -x "$PROXY_URL" https://tls.test:8443/untrusted 2>&1; true)
expect_eq "a client without sluice's CA fails its handshake (curl exit 60)" 60 "$code"
wait_log 3 kind=tunnel reason=client-tls-failed
expect_re "... and the log says the client's handshake failed" "client TLS handshake failed: .*unknown ca" \
	"$(logq kind=tunnel reason=client-tls-failed --field detail)"
expect_eq "... the origin saw nothing" 0 "$(grep -c untrusted "$LAB_DIR/tls/access.log")"
lab_control "... the origin saw nothing" tlsnginx

# the server name must be the CONNECT host
out=$(hx bash -c "openssl s_client -proxy $PROXY_ADDR:$PROXY_PORT -connect tls.test:8443 -servername other.test </dev/null 2>&1"; true)
expect_re "a TLS server name other than the CONNECT host fails the handshake" "alert unrecognized name|unrecognized name" "$out"
wait_log 3 reason=sni-mismatch
expect_eq "... logged as sni-mismatch naming it" "refuse other.test" \
	"$(logq reason=sni-mismatch --field decision) $(logq reason=sni-mismatch --field detail | grep -o other.test)"

# each request's Host must be the CONNECT host
out=$(tcurl -o /dev/null -w '%{http_code}' -H 'Host: other.test' https://tls.test:8443/hm 2>&1)
expect_eq "a request inside the tunnel whose Host is another host: 403" 403 "$out"
expect_eq "... host-mismatch, and the origin saw nothing" "host-mismatch 0" \
	"$(logq kind=https path=/hm --field reason) $(grep -c ' "GET /hm' "$LAB_DIR/tls/access.log")"
lab_control "... host-mismatch, and the origin saw nothing" tlsnginx

# ALPN: h2 is never offered, so an h2-capable client speaks HTTP/1.1
out=$(tcurl --http2 -o /dev/null -w '%{http_version}' https://tls.test:8443/ 2>&1)
expect_eq "curl --http2 through interception speaks HTTP/1.1" 1.1 "$out"

# an upstream whose certificate does not verify: 502 saying why, nothing sent
out=$(tcurl -w ' %{http_code}' https://badcert.test:8443/bc 2>&1)
expect_re "an upstream certificate that does not name the host: 502" " 502$" "$out"
expect_re "... the body says why" "does not verify: .*(mismatch|hostname)" "$out"
expect_eq "... logged as upstream-tls" "upstream-tls" "$(logq path=/bc --field reason)"
expect_eq "... and no request reached it" 0 "$(grep -c '/bc' "$LAB_DIR/tls/access.log")"
lab_control "... and no request reached it" tlsnginx

# passthrough: the client's own handshake reaches the origin
out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$LAB_DIR/tls/ca.crt" -w ' %{http_code}' \
	https://pass.test:8443/ 2>&1)
expect_eq "a passthrough host is tunnelled: the client verifies the origin's own certificate" "tls ok 200" "$(echo $out)"
expect_eq "... one tunnel row, no decrypted rows" "1 0" \
	"$(logq kind=tunnel host=pass.test) $(logq kind=https host=pass.test)"
expect_eq "... the row names the TLS server name the client asked for" \
	"passthrough; TLS server name pass.test" "$(logq kind=tunnel host=pass.test --field detail)"
lines=$(wc -l <"$LAB_DIR/tls/access.log")
out=$(hx bash -c "openssl s_client -proxy $PROXY_ADDR:$PROXY_PORT -connect pass.test:8443 -servername tls.test </dev/null 2>&1"; true)
wait_log 3 host=pass.test reason=sni-mismatch
expect_eq "a passthrough tunnel whose ClientHello names another host is closed: sni-mismatch" "refuse" \
	"$(logq host=pass.test reason=sni-mismatch --field decision)"
expect_eq "... and the origin saw no request" "$lines" "$(wc -l <"$LAB_DIR/tls/access.log")"
lab_control "... and the origin saw no request" tlsnginx
lab_done
