#!/bin/bash
# Issue 27 item 14: `intercept` changed in the config takes effect at the
# reload, for the next CONNECT: off, a new CONNECT is tunnelled (the client
# gets the origin's certificate); on again, it meets sluice's leaf; a proxy
# started with intercept off turns it on at a reload, reading the CA then,
# and one whose CA cannot be read refuses that config, naming the
# directive, and keeps tunnelling. A tunnel open across the reload stays
# as it began. Which certificate a client got is proven by curl trusting
# only one CA: sluice's (STATE/ca.crt) or the origin's test CA.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
O=$LAB_DIR/tls/ca.crt
conf() { lab_write_conf "intercept $1" "allow tls.test:8443" "upstream-ca tls.test $O"; }
# via CAFILE PATH: the status of GET https://tls.test:8443PATH through the
# proxy, trusting only CAFILE: 000 when the certificate it got did not verify
via() { hx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$PROXY_URL" --cacert "$1" "https://tls.test:8443$2"; }
# issuer CAFILE PATH: the CN of the issuer of the certificate curl got
issuer() { hx curl -sv -o /dev/null --max-time 10 -x "$PROXY_URL" --cacert "$1" "https://tls.test:8443$2" 2>&1 | sed -n 's/^\*  *issuer: .*CN *= *//p' | head -1; }
# reload_to on|off: write the config, SIGHUP, wait for the reload
reload_to() {
	local n
	n=$(reloads)
	conf "$1"
	kill -HUP "$PROXY_PID"
	wait_until 5 reloaded_past "$n" || not_ok "the proxy reloaded (intercept $1)" "$(tail -3 "$LAB_DIR/proxy.err")"
}

conf on
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
lab_run_proxy
CA=$STATE/ca.crt
SLUICE_ISSUER=$(openssl x509 -in "$CA" -noout -subject | sed 's/.*CN *= *//')
ORIGIN_ISSUER=$(openssl x509 -in "$O" -noout -subject | sed 's/.*CN *= *//')

# --- started with intercept on: sluice's leaf
expect_eq "intercept on: a client trusting sluice's CA is served, one trusting only the origin's is not" \
	"200 000" "$(via "$CA" /?on1) $(via "$O" /?on1b)"
expect_eq "... the certificate's issuer is sluice's CA" "$SLUICE_ISSUER" "$(issuer "$CA" /?on1c)"

# a tunnel intercepted now, its second request sent after the reload
hx "$PY" - "$PROXY_ADDR" "$PROXY_PORT" "$CA" "$LAB_DIR/go" >"$LAB_DIR/open.out" 2>&1 <<'PYEOF' &
import http.client, os, ssl, sys, time
ctx = ssl.create_default_context(cafile=sys.argv[3])
c = http.client.HTTPSConnection(sys.argv[1], int(sys.argv[2]), timeout=10, context=ctx)
c.set_tunnel("tls.test", 8443)
for i, p in enumerate(["/?open1", "/?open2"]):
    if i == 1:
        t = time.time()
        while not os.path.exists(sys.argv[4]) and time.time() - t < 15:
            time.sleep(0.05)
    c.request("GET", p)
    r = c.getresponse()
    print(p, r.status, r.read().decode().strip(), c.sock.getpeercert()["issuer"][-1][0][1], flush=True)
PYEOF
cpid=$!
wait_until 5 grep -q '^/?open1 ' "$LAB_DIR/open.out" || not_ok "the open tunnel's first request" "$(cat "$LAB_DIR/open.out")"

# --- reloaded with intercept off: the next CONNECT is tunnelled
reload_to off
expect_re "the reload says intercept is off for new CONNECTs" \
	'reload: intercept off: new CONNECTs are tunnelled; open tunnels stay as they began' "$(cat "$LAB_DIR/proxy.err")"
expect_eq "intercept off by a reload: a client trusting only the origin's CA is served, one trusting sluice's is not" \
	"200 000" "$(via "$O" /?off1) $(via "$CA" /?off1b)"
expect_eq "... the certificate's issuer is the origin's CA" "$ORIGIN_ISSUER" "$(issuer "$O" /?off1c)"
wait_log 3 method=CONNECT kind=tunnel
expect_ge "... its rows: tunnels, no https row for /?off1" 1 "$(logq method=CONNECT kind=tunnel)"
expect_eq "... (no https row for it)" 0 "$(logq kind=https 'path=/?off1')"
touch "$LAB_DIR/go"
wait "$cpid"
expect_eq "the tunnel intercepted before the reload stays intercepted: its second request served through sluice's leaf" \
	"/?open2 200 tls ok" "$(grep '^/?open2 ' "$LAB_DIR/open.out" | cut -d' ' -f1-4)"
expect_eq "... its rows: https for both requests" "1 1" "$(logq kind=https 'path=/?open1') $(logq kind=https 'path=/?open2')"

# --- on again: the next CONNECT meets sluice's leaf
reload_to on
expect_eq "intercept on again by a reload: sluice's leaf again" "200 000" "$(via "$CA" /?on2) $(via "$O" /?on2b)"

# --- started with intercept off, turned on by a reload: the CA is read then
lab_stop_proxy
conf off
lab_run_proxy
expect_eq "started with intercept off: tunnelled (the origin's certificate)" "200 000" "$(via "$O" /?s-off) $(via "$CA" /?s-offb)"
reload_to on
expect_eq "... a reload turning intercept on: the next CONNECT meets sluice's leaf" "200 000" \
	"$(via "$CA" /?s-on) $(via "$O" /?s-onb)"
expect_eq "... its row: https" 1 "$(logq kind=https 'path=/?s-on')"

# --- turned on by a reload when the CA cannot be read: that config is refused, naming intercept
lab_stop_proxy
conf off
mv "$STATE/ca.key" "$LAB_DIR/ca.key.away"
lab_run_proxy
reload_to on
expect_re "a reload turning intercept on without a usable CA is refused, naming the directive" \
	'intercept is on but the CA in .* cannot be used.*reload \(.*\): intercept on cannot take effect \(above\); keeping the running config' \
	"$(tr '\n' ' ' <"$LAB_DIR/proxy.err")"
expect_eq "... and the running config stands: tunnelled" "200 000" "$(via "$O" /?refused) $(via "$CA" /?refusedb)"
mv "$LAB_DIR/ca.key.away" "$STATE/ca.key"
n=$(reloads)
kill -HUP "$PROXY_PID"
wait_until 5 reloaded_past "$n" || not_ok "the proxy reloaded" "$(tail -3 "$LAB_DIR/proxy.err")"
expect_eq "... the CA back, the same config reloaded: intercepted" "200 000" "$(via "$CA" /?back) $(via "$O" /?backb)"
proxy_alive && ok "the proxy is still running" || not_ok "the proxy is still running" "$(tail -5 "$LAB_DIR/proxy.err")"
lab_done
