#!/bin/sh
# lima-provision.sh: rendered by `sluice install` for project "demo" (ports 41000-41199).
# Render it again rather than edit it; `sluice install` prints how it installs.
#
# The boot script of the project's Lima VM: Lima runs it as root at every boot
# (provision mode: system). Its SHA-256 is the provision id it records; editing it
# changes the id, which `sluice doctor` then reports.
#
# In order, stopping at the first step that fails, so sluice-forward runs only once
# both walls hold: check the binaries and the stamp key; forget the last record and
# stop the forwarder; apply the sandbox and guard walls; write the proxy
# environment, the CA into the trust store and the containers drop-in; point the
# guest's resolver at sluice-dns; start
# sluice-forward and wait until it listens; then record what it applied in
# $STATE/provision (0644), last. A missing record means: not applied.
set -eu

# Where it writes and what it runs: the guest's real paths, unless a test points
# SLUICE_ROOT at a scratch root, SLUICE_BIN at a build, and SLUICE_LAUNCH at direct
# (auto: systemd-run when systemd runs the guest, else a child of this script).
ROOT=${SLUICE_ROOT-}
BIN=${SLUICE_BIN:-/usr/local/bin}
LAUNCH=${SLUICE_LAUNCH:-auto}
ETC=$ROOT/etc
STATE=$ROOT/run/sluice/state
CA_DIR=$ROOT/usr/local/share/ca-certificates
CA_BUNDLE=$ETC/ssl/certs/ca-certificates.crt
KEY=$ETC/sluice/stamp.key
SANDBOX_USER=${LIMA_CIDATA_USER:-}

# What it applies: the host's band, proxy and CA when `sluice install` ran.
PROJECT='demo'
PORT_BASE=41000
GATEWAY=192.168.5.2        # the host, as Lima's network shows it
RESOLVER=$GATEWAY          # sluice-dns, on the host's 127.0.0.1:53
PROXY_PORT=41000
OWN_LISTEN=127.0.0.1:41000   # the guest's own processes, stamped by cgroup
BRIDGE_LISTEN=10.88.0.1:41000 # podman's bridge, stamped by address
MARK=0x5300a028             # SO_MARK of the forwarder's upstream sockets
SANDBOX_TABLE=sluice_sandbox_41000
GUARD_TABLE=sluice_guard_41000

say() { echo "sluice-provision: $*" >&2; }
fail() {
	say "$*"
	say "stopped: nothing after this step was applied, and no forwarder runs"
	exit 1
}
sl() { "$BIN/sluice" -c "$STATE/sluice.conf" "$@"; }
# root's, and none of the bits in $2 (octal) set
root_only() {
	[ "$(stat -Lc %u "$1")" = 0 ] && [ $((0$(stat -Lc %a "$1") & $2)) = 0 ]
}
use_systemd() {
	[ "$LAUNCH" = systemd ] || { [ "$LAUNCH" = auto ] && [ -d /run/systemd/system ]; }
}
# the forwarder this script started at an earlier boot or run, if it still runs
stop_forwarder() {
	if use_systemd; then
		systemctl stop sluice-forward.service 2>/dev/null || :
		systemctl reset-failed sluice-forward.service 2>/dev/null || :
	fi
	[ -f "$STATE/forward.pid" ] || return 0
	pid=$(cat "$STATE/forward.pid")
	rm -f "$STATE/forward.pid"
	# that pid may be another program's by now
	[ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$BIN/sluice-forward")" ] ||
		return 0
	kill "$pid" 2>/dev/null || return 0
	for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || :
}
forwarder_runs() {
	if use_systemd; then
		systemctl is-active --quiet sluice-forward.service
	else
		kill -0 "$(cat "$STATE/forward.pid")" 2>/dev/null
	fi
}
# NAME=VALUE lines: the proxy in both cases, then the CA variables `sluice ca show`
# prints, naming the guest's own bundle (which update-ca-certificates makes)
env_lines() {
	echo "HTTP_PROXY=$PROXY"
	echo "http_proxy=$PROXY"
	echo "HTTPS_PROXY=$PROXY"
	echo "https_proxy=$PROXY"
	echo "NO_PROXY=$NO"
	echo "no_proxy=$NO"
	echo "SSL_CERT_FILE=$CA_BUNDLE"
	echo "REQUESTS_CA_BUNDLE=$CA_BUNDLE"
	echo "NODE_EXTRA_CA_CERTS=$CA_FILE"
	echo "GIT_SSL_CAINFO=$CA_BUNDLE"
	echo "CURL_CA_BUNDLE=$CA_BUNDLE"
	echo "NPM_CONFIG_CAFILE=$CA_BUNDLE"
	echo "PIP_CERT=$CA_BUNDLE"
	echo "CARGO_HTTP_CAINFO=$CA_BUNDLE"
	echo "AWS_CA_BUNDLE=$CA_BUNDLE"
	echo "DENO_CERT=$CA_BUNDLE"
}
# every container: the forwarder at the host's name in podman, the bundle mounted
containers_conf() {
	echo "# written by the sluice boot script: containers reach the proxy through the forwarder"
	echo "[containers]"
	echo "http_proxy = false"
	echo "env = ["
	echo "  \"HTTP_PROXY=http://host.containers.internal:$PROXY_PORT\","
	echo "  \"http_proxy=http://host.containers.internal:$PROXY_PORT\","
	echo "  \"HTTPS_PROXY=http://host.containers.internal:$PROXY_PORT\","
	echo "  \"https_proxy=http://host.containers.internal:$PROXY_PORT\","
	echo "  \"NO_PROXY=localhost,127.0.0.1,::1\","
	echo "  \"no_proxy=localhost,127.0.0.1,::1\","
	echo "  \"SSL_CERT_FILE=/etc/sluice/ca-bundle.crt\","
	echo "  \"REQUESTS_CA_BUNDLE=/etc/sluice/ca-bundle.crt\","
	echo "  \"NODE_EXTRA_CA_CERTS=/etc/sluice/ca.crt\","
	echo "  \"GIT_SSL_CAINFO=/etc/sluice/ca-bundle.crt\","
	echo "  \"CURL_CA_BUNDLE=/etc/sluice/ca-bundle.crt\","
	echo "  \"NPM_CONFIG_CAFILE=/etc/sluice/ca-bundle.crt\","
	echo "  \"PIP_CERT=/etc/sluice/ca-bundle.crt\","
	echo "  \"CARGO_HTTP_CAINFO=/etc/sluice/ca-bundle.crt\","
	echo "  \"AWS_CA_BUNDLE=/etc/sluice/ca-bundle.crt\","
	echo "  \"DENO_CERT=/etc/sluice/ca-bundle.crt\","
	echo "]"
	echo "volumes = ["
	echo "  \"$CA_BUNDLE:/etc/sluice/ca-bundle.crt:ro\","
	echo "  \"$CA_FILE:/etc/sluice/ca.crt:ro\","
	echo "]"
}

case $ROOT$BIN in *[!A-Za-z0-9/._-]*) fail "SLUICE_ROOT or SLUICE_BIN holds a byte outside [A-Za-z0-9/._-]" ;; esac
[ -n "$SANDBOX_USER" ] || fail "no sandbox user (Lima sets LIMA_CIDATA_USER)"
id -u "$SANDBOX_USER" >/dev/null 2>&1 || fail "sandbox user $SANDBOX_USER: no such user"
for b in sluice sluice-forward; do
	[ -x "$BIN/$b" ] || fail "$BIN/$b is missing: install sluice in the guest"
	root_only "$BIN/$b" 022 || fail "$BIN/$b: not root's, or others may write it"
done
{ [ -f "$KEY" ] && root_only "$KEY" 077; } ||
	fail "$KEY: missing, not root's, or others may read it: copy the host's STATE/stamp.key there (0600)"
ID=$(sha256sum <"$0") || fail "cannot read this script ($0) to hash it"
ID=${ID%% *}

umask 022
mkdir -p "$STATE"
chmod 0755 "$STATE"
# no record of this boot until everything below held
rm -f "$STATE/provision"
stop_forwarder
printf '# written by the sluice boot script: where `sluice wall` records\nstate %s\n' "$STATE" >"$STATE/sluice.conf"

sl wall apply sandbox --user "$SANDBOX_USER" --subuid "$ETC/subuid" --gateway "$GATEWAY" \
	--resolver "$RESOLVER" --forwarder "$BRIDGE_LISTEN" --port-base "$PORT_BASE" \
	--i-mean-this-host || fail "the sandbox wall did not apply"
sl wall apply guard --gateway "$GATEWAY" --mark "$MARK" --port-base "$PORT_BASE" \
	--i-mean-this-host || fail "the guard wall did not apply"

PROXY=http://$OWN_LISTEN
NO=localhost,127.0.0.1,::1,$GATEWAY
CA_FILE=$CA_DIR/sluice-ca.crt
mkdir -p "$ETC/environment.d" "$ETC/profile.d"
env_lines >"$ETC/environment.d/90-sluice-proxy.conf"
env_lines | sed 's/^/export /' >"$ETC/profile.d/90-sluice-proxy.sh"

# one fixed name, so a new CA replaces the old one in the trust store
mkdir -p "$CA_DIR" "$ETC/ssl/certs"
cat >"$CA_FILE" <<'SLUICE_CA'
-----BEGIN CERTIFICATE-----
MIIBwTCCAWegAwIBAgIRALOdlXd8B+9AJ7x7n0804iMwCgYIKoZIzj0EAwIwLjEP
MA0GA1UECgwGc2x1aWNlMRswGQYDVQQDDBJzbHVpY2UgQ0EgODY4MTg0MjgwHhcN
MjYxMjAxMTkxNDQwWhcNMzYxMTMwMjAxNDQwWjAuMQ8wDQYDVQQKDAZzbHVpY2Ux
GzAZBgNVBAMMEnNsdWljZSBDQSA4NjgxODQyODBZMBMGByqGSM49AgEGCCqGSM49
AwEHA0IABJYzDQZWPvQB4nSr2sBnYQz3umEom6WtbSAiatQr5MJ+tKq5G0kbh34S
qSbPatDyO3zeLDlV0cT5sWtGGOt3+T+jZjBkMBIGA1UdEwEB/wQIMAYBAf8CAQAw
DgYDVR0PAQH/BAQDAgEGMB0GA1UdDgQWBBRmdlZvuwU8jBxe6iCrO+lGA7kovzAf
BgNVHSMEGDAWgBRmdlZvuwU8jBxe6iCrO+lGA7kovzAKBggqhkjOPQQDAgNIADBF
AiBQCxOu8aiAKpUy2C7ofyP65fO3layHqcpu/VMC+yyhvgIhAK3+mxPuq8cFP1Zk
2/a+QJAmzKCKZKXWgntwosrBwT99
-----END CERTIFICATE-----
SLUICE_CA
update-ca-certificates --localcertsdir "$CA_DIR" --etccertsdir "$ETC/ssl/certs" \
	--certsconf "$ETC/ca-certificates.conf" --hooksdir "$ETC/ca-certificates/update.d" \
	>/dev/null || fail "update-ca-certificates failed"
grep -qF "$(sed -n 2p "$CA_FILE")" "$CA_BUNDLE" || fail "$CA_BUNDLE lacks the sluice CA"

mkdir -p "$ETC/containers/containers.conf.d"
containers_conf >"$ETC/containers/containers.conf.d/90-sluice-proxy.conf"

# every name the guest looks up goes to sluice-dns: systemd-resolved's only upstream
# when it runs (its stub and nss-resolve ask it), else resolv.conf's nameserver
mkdir -p "$ETC/systemd/resolved.conf.d"
printf '# written by the sluice boot script: names only through sluice-dns\n[Resolve]\nDNS=%s\nDomains=~.\nLLMNR=no\nMulticastDNS=no\n' "$RESOLVER" \
	>"$ETC/systemd/resolved.conf.d/90-sluice.conf"
if use_systemd && systemctl -q is-active systemd-resolved.service 2>/dev/null; then
	systemctl restart systemd-resolved.service || fail "systemd-resolved did not restart"
	DNS_VIA=systemd-resolved
else
	# a link into resolved's files, which nothing updates while it is stopped
	rm -f "$ETC/resolv.conf"
	printf '# written by the sluice boot script\nnameserver %s\n' "$RESOLVER" >"$ETC/resolv.conf"
	DNS_VIA=resolv.conf
fi

# --wait below would take another program's listener for the forwarder's
"$BIN/sluice-forward" --wait /proc/self/ns/net "$OWN_LISTEN" --timeout 0.05 2>/dev/null &&
	fail "another program listens on $OWN_LISTEN, where the forwarder would"
set -- --key "$KEY" --net podman --mark "$MARK" \
	--own "$OWN_LISTEN=$GATEWAY:$PROXY_PORT" "$BRIDGE_LISTEN=$GATEWAY:$PROXY_PORT"
if use_systemd; then
	systemd-run --quiet --unit=sluice-forward --property=Restart=on-failure \
		"$BIN/sluice-forward" "$@" || fail "systemd-run sluice-forward failed"
	FORWARDER="unit sluice-forward.service"
else
	"$BIN/sluice-forward" "$@" </dev/null >>"$STATE/forward.log" 2>&1 &
	echo $! >"$STATE/forward.pid"
	FORWARDER="pid $!"
fi
{ "$BIN/sluice-forward" --wait /proc/self/ns/net "$OWN_LISTEN" --timeout 10 && forwarder_runs; } || {
	stop_forwarder
	fail "sluice-forward is not listening on $OWN_LISTEN"
}

{
	echo "sluice-provision 1"
	echo "id $ID"
	echo "port-base $PORT_BASE"
	echo "gateway $GATEWAY"
	echo "wall $SANDBOX_TABLE"
	echo "wall $GUARD_TABLE"
	echo "forwarder $OWN_LISTEN $BRIDGE_LISTEN"
	echo "dns $RESOLVER $DNS_VIA"
	echo "$FORWARDER"
	echo "sandbox-user $SANDBOX_USER"
	echo "applied $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "project $PROJECT"
} >"$STATE/provision.tmp"
chmod 0644 "$STATE/provision.tmp"
mv -f "$STATE/provision.tmp" "$STATE/provision"
say "applied, provision id $ID"
