#!/bin/bash
# test_run_transparent.sh: what a client that ignores the proxy variables
# finds inside `sluice run`. /etc/hosts in the run holds only the localhost
# lines, so no host entry of the machine's sidesteps sluice-dns: a name the
# machine's hosts file maps (here a bind-mounted one, in a mount namespace
# of the test's own) does not resolve in the run unless granted, and then
# through sluice-dns. A granted name resolves to an address of the run's own
# (240.0.0.0/20), which leads to the forwarder and on to the proxy as that
# name: node's fetch (HTTPS, intercepted, the same row as a proxied
# request), curl --noproxy '*' over plain HTTP, and raw TCP where the server
# speaks first, which works only under `allow HOST:PORT tunnel` and is
# refused with a row without one.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up
lab_tls_origin
lab_unbound 'local-data: "tls.test. 300 IN A 203.0.113.13"' \
	'local-data: "good.test. 300 IN A 203.0.113.10"' \
	'local-data: "other.test. 300 IN A 203.0.113.11"' \
	'local-data: "third.test. 300 IN A 203.0.113.12"'

RUN_BASE=41400
DNSLOG=$LAB_DIR/state/dns.log
lab_write_conf "intercept on" "upstream-ca tls.test $LAB_DIR/tls/ca.crt" \
	'inject ech host=tls.test:8443 path=/echo header=Authorization prefix="Bearer " env=SLUICE_LAB_TOKEN' \
	"allow tls.test:8443" "allow good.test" "allow good.test:9002 tunnel" "allow other.test:9002" "allow third.test" \
	"nameserver 127.0.0.1" "dns-listen 127.0.0.1:53" "dns-upstream $UNBOUND_ADDR" \
	"dns-timeout 1"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
out=$(sl key init 2>&1) || lab_bail "sluice key init" "$out"
dnsq() { jq_ "$DNSLOG" "$@"; }
export SLUICE_LAB_TOKEN=$LAB_TOKEN # the proxy the run starts injects it

# The machine's hosts file, as the run would find it: a mount namespace of
# the test's own (slave: nothing mounted in it reaches the machine) with a
# hosts file naming lab hosts bind-mounted over /etc/hosts.
MACHINE_HOSTS=$LAB_DIR/machine-hosts
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost\n203.0.113.10 sneaky.test\n203.0.113.13 tls.test\n' >"$MACHINE_HOSTS"
SRUN=(unshare -m --propagation slave sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$MACHINE_HOSTS"
	nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=$RUN_BASE "$SLUICE_BUILD/sluice" -c "$CONF" run)
srun() { "${SRUN[@]}" "$@"; }

out=$("${SRUN[@]:0:8}" cat /etc/hosts 2>&1)
expect_re "control: the run's parent sees the machine's hosts file with its lab names" "sneaky.test" "$out"
expect_eq "control: the machine's own /etc/hosts is untouched" "" "$(grep -l sneaky.test /etc/hosts)"

cat >"$LAB_DIR/names.sh" <<EOF
cat /etc/hosts
echo ---
getent hosts sneaky.test || echo "sneaky: none"
$PY -c 'import socket; print(socket.getaddrinfo("tls.test", 443, socket.AF_INET)[0][4][0], "tls.test")'
EOF

out=$(srun -- sh -c "$(cat "$LAB_DIR/names.sh")" 2>"$LAB_DIR/run.err")
expect_eq "in the run /etc/hosts holds only the localhost lines" \
	"127.0.0.1 localhost|::1 localhost ip6-localhost ip6-loopback" "$(sed -n '1,/^---$/p' <<<"$out" | grep -v '^---$' | paste -sd'|')"
expect_re "... so a name only the machine's hosts file maps does not resolve" "sneaky: none" "$out"
expect_re "... and a granted one resolves through sluice-dns (to an address of the run's own)" "^240\.0\.[0-9]+\.[0-9]+ tls.test$" "$(sed -n '/^---$/,$p' <<<"$out" | tail -1)"
expect_re "... which logged it" "allow" "$(dnsq name=tls.test type=A --field decision)"
expect_eq "... sneaky.test was asked of sluice-dns, and refused" "refuse" "$(dnsq name=sneaky.test type=A --field decision)"

# ---------------------------------------------------------------- clients that ignore the proxy
cat >"$LAB_DIR/direct.sh" <<EOF
unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy
$PY -c 'import socket; print("addr", socket.getaddrinfo("tls.test", 443, socket.AF_INET)[0][4][0])'
node -e 'fetch("https://tls.test:8443/").then(r => r.text().then(t => console.log("node", r.status, t.trim()))).catch(e => console.log("node failed", e.cause ? e.cause.code || e.cause.message : e.message))'
node -e 'fetch("https://tls.test:8443/echo").then(r => r.text().then(t => console.log("inject", r.status, (t.match(/auth=[^=]*(?= stamp=)/) || ["none"])[0]))).catch(e => console.log("inject failed", e.message))'
curl -sS --noproxy '*' --max-time 10 -o /dev/null -w 'curl %{http_code}\n' http://good.test/ 2>&1
$PY - <<'PY'
import socket
def banner(host, port):
    try:
        s = socket.create_connection((host, port), timeout=5)
    except OSError as e:
        return "connect failed %s" % e
    s.settimeout(3)
    got = b""
    try:
        while b"\n" not in got:
            d = s.recv(100)
            if not d:
                break
            got += d
    except OSError:
        pass
    return repr(got)
print("tunnel", banner("good.test", 9002))
print("plain", banner("other.test", 9002))
print("ungranted-port", banner("third.test", 9002))
# an address of the range no answer gave: the forwarder has no name for it
try:
    s = socket.create_connection(("240.0.9.9", 443), timeout=5)
    s.settimeout(3)
    print("unmapped", repr(s.recv(100)))
except OSError as e:
    print("unmapped", type(e).__name__)
try:
    socket.getaddrinfo("nope.test", 80, socket.AF_INET)
    print("nope resolved")
except socket.gaierror:
    print("nope none")
PY
EOF
out=$(srun -- sh -c "$(cat "$LAB_DIR/direct.sh")" 2>"$LAB_DIR/run.err")
expect_re "a granted name resolves to an address of the run's own (240.0.0.0/20)" "^addr 240\.0\.([0-9]|1[0-5])\.[0-9]+$" "$(grep '^addr' <<<"$out")"
expect_eq "node's fetch, no proxy variables: HTTPS to the granted name works" "node 200 tls ok" "$(grep '^node' <<<"$out")"
wait_log 10 kind=https host=tls.test ua=node path=/
expect_eq "... judged and logged as a proxied request is: an https row, its own sandbox's" \
	"https GET / 200 allow" "$(logq kind=https host=tls.test ua=node path=/ --field kind) $(logq kind=https host=tls.test ua=node path=/ --field method) $(logq kind=https host=tls.test ua=node path=/ --field path) $(logq kind=https host=tls.test ua=node path=/ --field status) $(logq kind=https host=tls.test ua=node path=/ --field decision)"
expect_re "... the row names the run" '^sluice-[0-9a-f]{12}$' "$(logq kind=https host=tls.test ua=node --field net)"
# the origin echoes the header it got: the injected secret, masked on the way back as in any proxied response
expect_eq "... and the inject rule for the name is applied as to a proxied request (the echo scrubbed)" \
	"inject 200 auth=Bearer $(printf '%*s' ${#LAB_TOKEN} '' | tr ' ' '*')" "$(grep '^inject' <<<"$out")"
wait_log 10 kind=https host=tls.test path=/echo
expect_eq "... its row names the rule" "ech" "$(logq kind=https host=tls.test path=/echo --field inject)"
expect_eq "curl --noproxy '*' over plain HTTP to the granted name" "curl 200" "$(grep '^curl' <<<"$out")"
expect_eq "... an http row for good.test, allowed" "allow" "$(logq kind=http host=good.test ua~curl --field decision)"
expect_eq "raw TCP under a tunnel grant: the server's banner reaches a client that sent nothing" "tunnel b'banner\\n'" "$(grep '^tunnel' <<<"$out")"
expect_eq "raw TCP where only a plain grant names the port: no banner (the proxy expects TLS)" "plain b''" "$(grep '^plain' <<<"$out")"
expect_eq "raw TCP to a port no grant names: refused" "ungranted-port b''" "$(grep '^ungranted-port' <<<"$out")"
wait_log 10 host=third.test port=9002
expect_eq "... with a refusal row" "refuse" "$(logq host=third.test port=9002 --field decision)"
expect_eq "an ungranted name still does not resolve" "nope none" "$(grep '^nope' <<<"$out")"
expect_re "an address of the range that names nothing: reset by the forwarder" "^unmapped (ConnectionResetError|b'')$" "$(grep '^unmapped' <<<"$out")"
lab_done
