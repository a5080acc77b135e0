#!/bin/bash
# test_ca.sh: `sluice ca init|show` end to end, checked with the openssl
# command line, then real clients (curl, python's ssl) talking TLS to an
# `openssl s_server` that presents leaves minted by lib/leaf.c.
#
# The leaves come from a helper compiled here from lib/ca.c, lib/leaf.c and
# lib/file.c (the proxy that will mint them in production is not written
# yet). No namespaces: files live in a temporary directory, the servers
# listen on free ports of 127.0.0.1. Prints "ok - name" / "not ok - name"
# per check and exits 1 if any failed.
set -u

SYSROOTS=/etc/ssl/certs/ca-certificates.crt

T=$(mktemp -d "${TMPDIR:-/tmp}/sluice-ca.XXXXXX")
server_pid=
stop_server() {
	if [ -n "$server_pid" ]; then
		kill "$server_pid" 2>/dev/null
		wait "$server_pid" 2>/dev/null
		server_pid=
	fi
}
cleanup() {
	stop_server
	rm -rf "$T"
}
trap cleanup EXIT

source "$(dirname "$0")/clitest.sh"

cd "$T" || exit 1
# a relative state dir: show must still print absolute paths
printf 'state state\n' >sluice.conf
C="$S -c $T/sluice.conf"
ST=$T/state

# --- usage -----------------------------------------------------------------

t "ca without a subcommand is a usage error" run 2 $C ca
t "an unknown subcommand is a usage error" run 2 $C ca frob
t "show with an unknown option is a usage error" run 2 $C ca show --yaml
t "ca -h prints the synopsis" eval 'run 0 $C ca -h && has "ca show \[--json\]" "$T/out"'
t "the verb list names ca" eval 'run 0 $C -h && has "^  ca " "$T/out"'

# --- init ------------------------------------------------------------------

t "show before init: exit 1, says to run init" eval 'run 1 $C ca show && has "no CA.*run sluice ca init" "$T/err"'
t "ca init succeeds (under umask 077)" eval '(umask 077; run 0 $C ca init)'
expect_eq "init prints the fingerprint and the paths" "yes" \
	"$(grep -q "^  SHA-256      [0-9A-F:]\{95\}$" "$T/out" && grep -q "certificate  $ST/ca.crt" "$T/out" &&
		grep -q "bundle       $ST/ca-bundle.crt" "$T/out" && echo yes)"
expect_eq "STATE is created 0700" 700 "$(stat -c %a "$ST")"
expect_eq "ca.key 0600, ca.crt 0644, ca-bundle.crt 0644" "600 644 644" \
	"$(stat -c %a "$ST/ca.key" "$ST/ca.crt" "$ST/ca-bundle.crt" | tr '\n' ' ' | sed 's/ $//')"
keysum=$(sha256sum <"$ST/ca.key")
t "a second init is refused (exit 1, says a CA exists)" eval 'run 1 $C ca init && has "a CA exists" "$T/err"'
expect_eq "... and the key is untouched" "$keysum" "$(sha256sum <"$ST/ca.key")"

# --- the certificate, read by openssl ---------------------------------------

openssl x509 -in "$ST/ca.crt" -noout -text >cert.txt 2>&1
t "openssl: CA:TRUE, pathlen 0, critical" eval 'grep -A1 "Basic Constraints: critical" cert.txt | grep -q "CA:TRUE, pathlen:0"'
t "openssl: key usage critical, certificate and CRL signing only" eval \
	'grep -A1 "Key Usage: critical" cert.txt | grep -q "^ *Certificate Sign, CRL Sign$"'
t "openssl: an ECDSA P-256 key, signed with SHA-256" eval \
	'has "NIST CURVE: P-256" cert.txt && has "Signature Algorithm: ecdsa-with-SHA256" cert.txt'
t "openssl: subject O=sluice, CN \"sluice CA <8 hex>\", self-issued" eval \
	'has "Subject: O = sluice, CN = sluice CA [0-9a-f]\{8\}$" cert.txt &&
	[ "$(openssl x509 -in "$ST/ca.crt" -noout -subject | cut -d= -f2-)" = "$(openssl x509 -in "$ST/ca.crt" -noout -issuer | cut -d= -f2-)" ]'
t "openssl: subject and authority key identifiers" eval \
	'has "Subject Key Identifier" cert.txt && has "Authority Key Identifier" cert.txt'
t "openssl verify -CAfile ca.crt ca.crt" eval 'openssl verify -CAfile "$ST/ca.crt" "$ST/ca.crt" >/dev/null 2>&1'
t "ca.key is PKCS#8 and matches ca.crt" eval \
	'head -1 "$ST/ca.key" | grep -qx -- "-----BEGIN PRIVATE KEY-----" &&
	[ "$(openssl pkey -in "$ST/ca.key" -pubout 2>/dev/null)" = "$(openssl x509 -in "$ST/ca.crt" -noout -pubkey)" ]'
t "valid for ten years from about an hour ago" eval \
	'openssl x509 -in "$ST/ca.crt" -noout -checkend $((3650 * 86400)) >/dev/null &&
	! openssl x509 -in "$ST/ca.crt" -noout -checkend $((3653 * 86400)) >/dev/null'
if [ -r "$SYSROOTS" ]; then
	sys=$(grep -c -- "-----BEGIN CERTIFICATE-----" "$SYSROOTS")
else
	sys=0
fi
expect_eq "ca-bundle.crt holds the system roots and the CA" "$((sys + 1))" \
	"$(grep -c -- "-----BEGIN CERTIFICATE-----" "$ST/ca-bundle.crt")"
t "... the CA last" eval '[ "$(tail -n "$(wc -l <"$ST/ca.crt")" "$ST/ca-bundle.crt")" = "$(cat "$ST/ca.crt")" ]'

# --- show ------------------------------------------------------------------

fp=$(openssl x509 -in "$ST/ca.crt" -noout -fingerprint -sha256 | cut -d= -f2)
t "ca show succeeds" run 0 $C ca show
cp "$T/out" show.txt
expect_eq "show: the fingerprint is openssl's SHA-256 fingerprint" "# SHA-256 $fp" "$(grep '^# SHA-256 ' show.txt)"
expect_eq "show: the certificate path" "# certificate $ST/ca.crt" "$(grep '^# certificate ' show.txt)"
expect_eq "show: the bundle path" "# bundle $ST/ca-bundle.crt" "$(grep '^# bundle ' show.txt)"
expect_eq "show: the ten variables, bundle or certificate" \
	"export SSL_CERT_FILE=$ST/ca-bundle.crt
export REQUESTS_CA_BUNDLE=$ST/ca-bundle.crt
export NODE_EXTRA_CA_CERTS=$ST/ca.crt
export GIT_SSL_CAINFO=$ST/ca-bundle.crt
export CURL_CA_BUNDLE=$ST/ca-bundle.crt
export NPM_CONFIG_CAFILE=$ST/ca-bundle.crt
export PIP_CERT=$ST/ca-bundle.crt
export CARGO_HTTP_CAINFO=$ST/ca-bundle.crt
export AWS_CA_BUNDLE=$ST/ca-bundle.crt
export DENO_CERT=$ST/ca-bundle.crt" "$(grep -v '^#' show.txt)"
expect_eq "show: eval sets and exports them" \
	"$ST/ca-bundle.crt $ST/ca-bundle.crt $ST/ca.crt $ST/ca-bundle.crt $ST/ca-bundle.crt" \
	"$(eval "$(cat show.txt)" && sh -c 'echo "$SSL_CERT_FILE $REQUESTS_CA_BUNDLE $NODE_EXTRA_CA_CERTS $GIT_SSL_CAINFO $CURL_CA_BUNDLE"')"
t "show --json parses" eval 'run 0 $C ca show --json && python3 -c "import json,sys; json.load(sys.stdin)" <"$T/out"'
expect_eq "show --json: the same fingerprint, paths and variables" \
	"$fp $ST/ca.crt $ST/ca-bundle.crt $ST/ca-bundle.crt $ST/ca.crt 10" \
	"$(python3 -c 'import json,sys; o=json.load(sys.stdin); e=o["env"]; print(o["sha256"], o["certificate"], o["bundle"], e["SSL_CERT_FILE"], e["NODE_EXTRA_CA_CERTS"], len(e))' <"$T/out")"
chmod 0644 "$ST/ca.key"
t "show needs only the certificate (works whatever the key's mode)" run 0 $C ca show
chmod 0600 "$ST/ca.key"

# a path that needs quoting is quoted (the config allows no blanks in a path)
printf 'state %s\n' "$T/st'a\$te(1)" >odd.conf
$S -c "$T/odd.conf" ca init >/dev/null 2>&1
expect_eq "show quotes a path with shell metacharacters" "$T/st'a\$te(1)/ca-bundle.crt" \
	"$(eval "$($S -c "$T/odd.conf" ca show)" && printf '%s' "$SSL_CERT_FILE")"

# --- real clients against leaves minted by lib/leaf.c ----------------------

cat >mint.c <<'EOF'
/* mint DIR HOST CERT KEY: a leaf for HOST from the CA in DIR, as PEM files. */
#include <stdio.h>
#include <openssl/pem.h>
#include "ca.h"
#include "leaf.h"

int main(int argc, char **argv)
{
	const char *err = NULL;
	struct ca *ca;
	struct leaf_cache *lc;
	X509 *x;
	EVP_PKEY *k;
	bool minted;
	FILE *fc, *fk;

	if (argc != 5)
		return 2;
	ca = ca_load(argv[1], &err);
	if (ca == NULL || (lc = leaf_cache_new(ca, 4, &err)) == NULL) {
		fprintf(stderr, "mint: %s\n", err);
		return 1;
	}
	if (leaf_get(lc, argv[2], &x, &k, &minted) == -1 || !minted) {
		fprintf(stderr, "mint: leaf_get %s failed\n", argv[2]);
		return 1;
	}
	fc = fopen(argv[3], "w");
	fk = fopen(argv[4], "w");
	if (fc == NULL || fk == NULL || PEM_write_X509(fc, x) != 1 ||
	    PEM_write_PrivateKey(fk, k, NULL, NULL, 0, NULL, NULL) != 1)
		return 1;
	fclose(fc);
	fclose(fk);
	leaf_cache_free(lc);
	ca_free(ca);
	return 0;
}
EOF
if ! cc -std=c11 -D_GNU_SOURCE -I"$here/lib" -o mint mint.c "$here/lib/ca.c" "$here/lib/leaf.c" "$here/lib/hmap.c" \
	"$here/lib/file.c" $(pkg-config --cflags --libs libcrypto) 2>cc.err; then
	not_ok "the leaf-minting helper compiles" "$(head -3 cc.err)"
	exit 1
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# serve HOST: mint a leaf for HOST and start s_server with it on $port
serve() {
	stop_server
	./mint "$ST" "$1" leaf.crt leaf.key || return 1
	port=$(free_port)
	openssl s_server -quiet -www -accept "127.0.0.1:$port" -cert leaf.crt -key leaf.key \
		</dev/null >server.log 2>&1 &
	server_pid=$!
	for _ in $(seq 50); do
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}
# get NAME [CURL ARGS...]: curl https://NAME:$port/ (NAME resolved to 127.0.0.1)
get() {
	local name=$1
	shift
	curl -sS -o /dev/null -w '%{http_code}' --max-time 5 \
		--resolve "$name:$port:127.0.0.1" "$@" "https://$name:$port/" 2>>curl.err
}
# py NAME: python's default context (SSL_CERT_FILE) handshakes with NAME as SNI and check
py() {
	python3 - "$1" "$port" <<'EOF' 2>>py.err
import socket, ssl, sys
ctx = ssl.create_default_context()
with socket.create_connection(("127.0.0.1", int(sys.argv[2])), timeout=5) as s:
    with ctx.wrap_socket(s, server_hostname=sys.argv[1]) as t:
        print("verified", t.version())
EOF
}

if serve good.test; then
	ok "s_server presents a leaf for good.test"
	expect_eq "curl --cacert ca-bundle.crt trusts it" 200 "$(get good.test --cacert "$ST/ca-bundle.crt")"
	expect_eq "curl --cacert ca.crt trusts it" 200 "$(get good.test --cacert "$ST/ca.crt")"
	expect_eq "curl with the system roots alone refuses it" 000 "$(get good.test --cacert "$SYSROOTS")"
	expect_eq "curl refuses it for another name" 000 "$(get other.test --cacert "$ST/ca-bundle.crt")"
	expect_eq "curl with only the environment from sluice ca show trusts it" 200 \
		"$(eval "$(cat show.txt)" && get good.test)"
	expect_eq "python's ssl with only that environment verifies it" "verified" \
		"$(eval "$(cat show.txt)" && py good.test | cut -d' ' -f1)"
	expect_eq "python's ssl refuses it for another name" "" \
		"$(eval "$(cat show.txt)" && py other.test)"
else
	not_ok "s_server presents a leaf for good.test" "$(tail -3 server.log)"
fi
if serve 127.0.0.1; then
	expect_eq "curl trusts a leaf for the IP literal 127.0.0.1" 200 \
		"$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$ST/ca-bundle.crt" \
			"https://127.0.0.1:$port/" 2>>curl.err)"
	expect_eq "... and refuses it by name" 000 "$(get good.test --cacert "$ST/ca-bundle.crt")"
else
	not_ok "s_server presents a leaf for 127.0.0.1" "$(tail -3 server.log)"
fi
if serve ::1; then
	expect_eq "curl trusts a leaf for the IP literal ::1" 200 \
		"$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$ST/ca-bundle.crt" \
			--connect-to "[::1]:$port:127.0.0.1:$port" \
			"https://[::1]:$port/" 2>>curl.err)"
else
	not_ok "s_server presents a leaf for ::1" "$(tail -3 server.log)"
fi
stop_server
t "curl's refusals were certificate errors" eval \
	'grep -q "unable to get local issuer certificate" curl.err &&
	grep -q "no alternative certificate subject name matches" curl.err'

lab_done
