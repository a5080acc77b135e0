#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# test_run_trust.sh: inside `sluice run` every common tool trusts sluice's
# CA by its own defaults, with no flag (issue 28, item 6). The run's
# system trust store holds the machine's roots and sluice's CA (the
# combined bundle bound over the distribution's bundle paths, a Java
# cacerts over the JRE's), and the environment names the bundle for the
# tools that read a variable. Each tool fetches from an HTTPS origin whose
# certificate only the proxy trusts (a lab CA), through the intercepting
# proxy: curl, wget (GnuTLS: reads the system file only), git, python
# urllib and requests, pip (Debian's: the system bundle), node https and
# fetch, npm with a system `cafile` (it then ignores NODE_EXTRA_CA_CERTS),
# a JVM (java.net.http: its cacerts only) and openssl s_client. Control:
# the same command outside the run, through the same proxy, fails on trust.
# The same in an --image container, whose own bundle the CA joins.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up
lab_tls_origin
lab_unbound 'local-data: "tls.test. 300 IN A 203.0.113.13"'

# the origin: the lab's TLS certificate (its CA only the proxy trusts) on
# 203.0.113.13:8444, with the content types pip and npm want
O=$LAB_DIR/trust
mkdir -p "$O/www/simple/thing" "$O/www/npm" "$O/tmp"
echo "trust ok" >"$O/www/ok"
echo '<html><body><a href="thing-1.0.tar.gz">thing-1.0.tar.gz</a></body></html>' >"$O/www/simple/thing/index.html"
echo '{"name":"thing","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"thing","version":"1.0.0","dist":{"tarball":"https://tls.test:8444/npm/thing-1.0.0.tgz","shasum":"0000000000000000000000000000000000000000"}}},"time":{"1.0.0":"2026-01-01T00:00:00.000Z"}}' >"$O/www/npm/thing"
git init -q -b main "$O/src" && git -C "$O/src" -c user.name=t -c user.email=t@t commit -q --allow-empty -m one &&
	git clone -q --bare "$O/src" "$O/www/repo.git" && git -C "$O/www/repo.git" update-server-info ||
	lab_bail "the origin's git repository"
{ lab_nginx_head "$O"; cat; } >"$O/nginx.conf" <<NGX
http {
	types { text/html html; }
	default_type application/json;
	access_log $O/access.log;
$(lab_nginx_temps "$O")
	server {
		listen 203.0.113.13:8444 ssl;
		ssl_certificate $LAB_DIR/tls/srv.crt;
		ssl_certificate_key $LAB_DIR/tls/srv.key;
		root $O/www;
		location = /ok { default_type text/plain; }
	}
}
NGX
lab_bg "$INS" nginx -p "$O" -c "$O/nginx.conf" -e "$O/error.log"
wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8444' || lab_bail "the trust origin did not start" "$(cat "$O/error.log")"

lab_write_conf "intercept on" "allow tls.test:8444" "upstream-ca tls.test $LAB_DIR/tls/ca.crt" \
	"nameserver 127.0.0.1" "dns-listen 127.0.0.1:53" "dns-upstream $UNBOUND_ADDR" "dns-timeout 1"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
out=$(sl key init 2>&1) || lab_bail "sluice key init" "$out"
lab_run_proxy
lab_run_dns "$CONF"
SRUN=(nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=43700 "$SLUICE_BUILD/sluice" -c "$CONF" run)
srun() { "${SRUN[@]}" "$@"; }
cd "$LAB_DIR" || lab_bail "cd $LAB_DIR"
chmod 755 "$LAB_DIR"

U=https://tls.test:8444
# what each tool runs, in the run and outside it; the proxy is $HTTPS_PROXY in both
cat >"$LAB_DIR/Trust.java" <<'JAVA'
import java.net.InetSocketAddress;
import java.net.ProxySelector;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

public class Trust {
	public static void main(String[] a) throws Exception {
		URI p = URI.create(System.getenv("HTTPS_PROXY"));
		HttpClient c = HttpClient.newBuilder()
			.proxy(ProxySelector.of(new InetSocketAddress(p.getHost(), p.getPort())))
			.connectTimeout(Duration.ofSeconds(10)).build();
		HttpResponse<String> r = c.send(HttpRequest.newBuilder(URI.create(a[0])).build(),
			HttpResponse.BodyHandlers.ofString());
		System.out.println(r.statusCode() + " " + r.body().trim());
	}
}
JAVA
# node's https and fetch do not read HTTPS_PROXY: https through a CONNECT of
# its own, fetch through undici's ProxyAgent (npm's copy); the TLS is node's
# own, with its default roots either way
cat >"$LAB_DIR/node_https.js" <<'JS'
const http = require('http'), https = require('https'), tls = require('tls');
const p = new URL(process.env.HTTPS_PROXY), u = new URL(process.argv[2]);
class Tunnel extends https.Agent {
	createConnection(o, cb) {
		http.request({ host: p.hostname, port: p.port, method: 'CONNECT', path: u.host, headers: { Host: u.host } })
			.on('connect', (res, sock) => res.statusCode === 200 ?
				cb(null, tls.connect({ socket: sock, servername: u.hostname })) :
				cb(new Error('CONNECT ' + res.statusCode)))
			.on('error', cb).end();
	}
}
https.get(u, { agent: new Tunnel() }, (res) => {
	let b = '';
	res.on('data', (d) => (b += d)).on('end', () => console.log(res.statusCode, b.trim()));
}).on('error', (e) => { console.log('error', e.code, e.message); process.exit(1); });
JS
cat >"$LAB_DIR/node_fetch.js" <<'JS'
const { ProxyAgent } = require(process.argv[3]);
fetch(process.argv[2], { dispatcher: new ProxyAgent(process.env.HTTPS_PROXY) })
	.then(async (r) => console.log(r.status, (await r.text()).trim()))
	.catch((e) => { console.log('error', e.cause ? e.cause.code + ' ' + e.cause.message : e.message); process.exit(1); });
JS
# the JRE's own path: an image has no /etc/alternatives
JAVA=$(readlink -f "$(command -v java)")
UNDICI=$(node -e 'console.log(require.resolve("undici", { paths: ["/usr/lib/node_modules/npm", "/usr/share/nodejs"] }))' 2>/dev/null)
# npm's global config names the machine's bundle, as Debian's /etc/npmrc does
printf 'cafile=/etc/ssl/certs/ca-certificates.crt\nregistry=%s/npm/\nupdate-notifier=false\naudit=false\nfund=false\nfetch-retries=0\nfetch-timeout=20000\n' \
	"$U" >"$LAB_DIR/npmrc"
chmod 644 "$LAB_DIR"/Trust.java "$LAB_DIR"/node_*.js "$LAB_DIR/npmrc"

# cmd_of TOOL: the shell command (run by sh -c) and what its success prints
cmd_of() {
	case $1 in
	curl) echo "curl -sS --max-time 10 $U/ok" ;;
	wget) echo "wget -nv -t 1 -T 10 -O - $U/ok" ;;
	git) echo "git ls-remote $U/repo.git" ;;
	urllib) echo "/usr/bin/python3 -c 'import urllib.request; print(urllib.request.urlopen(\"$U/ok\", timeout=10).read().decode().strip())'" ;;
	requests) echo "/usr/bin/python3 -c 'import requests; print(requests.get(\"$U/ok\", timeout=10).text.strip())'" ;;
	pip) echo "/usr/bin/python3 -m pip index versions --no-cache-dir --disable-pip-version-check --timeout 10 --retries 0 --index-url $U/simple/ thing" ;;
	node-https) echo "node $LAB_DIR/node_https.js $U/ok" ;;
	node-fetch) echo "node $LAB_DIR/node_fetch.js $U/ok $UNDICI" ;;
	npm) echo "NPM_CONFIG_GLOBALCONFIG=$LAB_DIR/npmrc NPM_CONFIG_CACHE=\$(mktemp -d) npm view thing version" ;;
	java) echo "$JAVA $LAB_DIR/Trust.java $U/ok" ;;
	openssl) echo "openssl s_client -brief -verify_return_error -proxy \${HTTPS_PROXY#http://} -connect tls.test:8444 -servername tls.test </dev/null" ;;
	esac
}
want_of() {
	case $1 in
	git) echo "refs/heads/main" ;;
	pip) echo "thing \(1\.0\)" ;;
	npm) echo "^1\.0\.0$" ;;
	openssl) echo "Verification: OK" ;;
	*) echo "trust ok" ;;
	esac
}
TOOLS="curl wget git urllib requests pip node-https node-fetch npm java openssl"
[ -n "$UNDICI" ] || { echo "# skip - node fetch: no undici to reach a proxy with"; TOOLS=${TOOLS/node-fetch/}; }

CTL_HOME=$LAB_DIR/ctl-home
mkdir -p "$CTL_HOME"
for t in $TOOLS; do
	cmd=$(cmd_of "$t")
	want=$(want_of "$t")
	# control: the same command through the same proxy, with the machine's trust alone
	out=$(hx env HOME="$CTL_HOME" HTTPS_PROXY="$PROXY_URL" https_proxy="$PROXY_URL" \
		timeout 60 sh -c "$cmd" 2>&1)
	if ! grep -Eq "$want" <<<"$out" && grep -Eqi 'certif|PKIX|self.signed|verif|issuer' <<<"$out"; then
		ok "$t outside the run, through the proxy: refused on trust (control)"
	else
		not_ok "$t outside the run, through the proxy: refused on trust (control)" "$out"
	fi
	out=$(srun -- timeout 60 sh -c "$cmd" 2>&1)
	expect_re "$t in the run, no flag: trusts sluice's CA" "$want" "$out"
done

# the store itself, not only the variables: with none of them set, the
# tools that would read one still trust the CA
vars="SSL_CERT_FILE NODE_EXTRA_CA_CERTS NPM_CONFIG_CAFILE REQUESTS_CA_BUNDLE PIP_CERT GIT_SSL_CAINFO CURL_CA_BUNDLE CARGO_HTTP_CAINFO AWS_CA_BUNDLE DENO_CERT"
unset_all=$(printf -- '-u %s ' $vars)
for t in curl git requests npm; do
	out=$(srun -- env $unset_all timeout 60 sh -c "$(cmd_of "$t")" 2>&1)
	expect_re "$t in the run with no CA variable: the system store holds the CA" "$(want_of "$t")" "$out"
done
out=$(srun -- sh -c "env | cut -d= -f1 | sort | tr '\n' ' '" 2>&1)
for v in $vars; do
	expect_re "the run sets $v" " $v " " $out"
done
out=$(srun -- sh -c 'grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt; grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE"' 2>&1)
expect_eq "the run's system bundle is the machine's roots and sluice's CA, the one the variables name" \
	"$(($(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt) + 1)) $(($(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt) + 1))" \
	"$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
expect_eq "... and outside the run the machine's bundle does not hold it" 0 \
	"$(grep -cF "$(sed -n 2p "$STATE/ca.crt")" /etc/ssl/certs/ca-certificates.crt)"

# --image: the container's own store, the image's bundle (here five roots
# of the machine's: not the machine's whole bundle) and sluice's CA, bound
# over the image's path and a Java keystore over Debian's; the tools are
# the machine's (/usr mounted), each with no flag
if ! podman --version >/dev/null 2>&1; then
	echo "# skip - --image: no podman"
else
	IMG=localhost/sluice-trust-$$
	r=$(mktemp -d /tmp/sluice-trust-root.XXXXXX)
	mkdir -p "$r/usr" "$r/etc/ssl/certs" "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/root" "$r/run"
	for l in bin sbin lib lib64; do ln -s "usr/$l" "$r/$l"; done
	chmod 1777 "$r/tmp"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
	echo 'root:x:0:' >"$r/etc/group"
	awk '/BEGIN CERT/ { n++ } n <= 5' /etc/ssl/certs/ca-certificates.crt >"$r/etc/ssl/certs/ca-certificates.crt"
	tar -C "$r" -cf "$r.tar" . && podman import -q "$r.tar" "$IMG" >/dev/null || lab_bail "podman import $IMG"
	rm -rf "$r" "$r.tar"
	IMG_OPTS=(--podman "podman --runtime runc" --image "$IMG" --ulimit nofile=1024:1024
		--ulimit nproc=1024:1024 -v /usr:/usr:ro -v "$LAB_DIR:$LAB_DIR:ro")
	# the JRE's configuration, which Debian keeps in /etc (not its trust: that is the run's)
	jconf=$(readlink -f "$(dirname "$(dirname "$JAVA")")/conf/security/java.security")
	jconf=$(dirname "$(dirname "$jconf")")
	case $jconf in /etc/?*) IMG_OPTS+=(-v "$jconf:$jconf:ro") ;; esac
	out=$(srun "${IMG_OPTS[@]}" -- sh -c 'grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt' 2>&1)
	expect_eq "--image: the container's bundle is the image's own five roots and sluice's CA" 6 \
		"$(grep -x '[0-9]*' <<<"$out" | head -1)"
	for t in $TOOLS; do
		out=$(srun "${IMG_OPTS[@]}" -- timeout 60 sh -c "$(cmd_of "$t")" 2>&1)
		expect_re "--image: $t in the container, no flag: trusts sluice's CA" "$(want_of "$t")" "$out"
	done
	# an image whose bundle is cut short (a block begun, never ended): the CA still counts
	r=$(mktemp -d /tmp/sluice-trust-root.XXXXXX)
	mkdir -p "$r/etc/ssl/certs" "$r/tmp"
	chmod 1777 "$r/tmp"
	for l in bin sbin lib lib64; do ln -s "usr/$l" "$r/$l"; done
	{ awk '/BEGIN CERT/ { n++ } n <= 2' /etc/ssl/certs/ca-certificates.crt; printf -- '-----BEGIN CERTIFICATE-----\nMIIB\n'; } \
		>"$r/etc/ssl/certs/ca-certificates.crt"
	tar -C "$r" -cf "$r.tar" . && podman import -q "$r.tar" "$IMG-cut" >/dev/null || lab_bail "podman import $IMG-cut"
	rm -rf "$r" "$r.tar"
	IMG_OPTS[3]=$IMG-cut
	for t in curl java; do
		out=$(srun "${IMG_OPTS[@]}" -- timeout 60 sh -c "$(cmd_of "$t")" 2>&1)
		expect_re "--image whose bundle is cut short: $t still trusts sluice's CA" "$(want_of "$t")" "$out"
	done
	podman rmi -f "$IMG" "$IMG-cut" >/dev/null 2>&1
	expect_eq "... and the test's images are removed" "" "$(podman images -q "$IMG" 2>/dev/null)$(podman images -q "$IMG-cut" 2>/dev/null)"
fi

lab_done
