# lab.sh: the integration lab for sluice (sourced by tests/integ/test_*.sh).
#
#   source tests/integ/lab.sh
#   lab_up                       # namespaces, veth, names, origins (trap tears down)
#   lab_start_proxy "mode observe" "allow good.test"   # config lines, then start
#   pcurl http://good.test/      # curl through the proxy, inside the host ns
#   ok "..." / not_ok "..." "seen"
#
# Two namespaces, unique per run: "inet" (stands for the internet) and "host"
# (sluice-proxy and the clients), joined by one veth pair: host 192.0.2.1 and
# 2001:db8:ffff::1, inet 192.0.2.2 and 2001:db8:ffff::2. The host namespace
# routes only the lab's origin addresses to the veth; there is no default
# route anywhere, so nothing can leave the machine. Origins in inet:
#   :80 :443   origin.py http (records every connection and request head)
#   :8080      nginx (access log $LAB_DIR/nginx/access.log)
#   :9000      origin.py halfclose    :9002 origin.py halfclose2
#   :9001      origin.py silent (accepts, never answers)
#   :9999      nothing (connection refused)
#   203.0.113.99 routed to inet but not assigned there: SYNs vanish (connect timeout)
# In the host ns, origin.py also listens on 0.0.0.0:80 and [::]:80 so a
# request that reaches 127.0.0.1, ::1 or the proxy's own 192.0.2.1 is seen.
# Names: /etc/netns/$HNS/hosts (see LAB_HOSTS); /etc/netns/$HNS/resolv.conf
# points at 127.0.0.1 where nothing answers, so other names fail fast.

INTEG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export INTEG_DIR # the tests' own python scripts import raw.py from it
ROOT_DIR=$(cd "$INTEG_DIR/../.." && pwd)
SLUICE_BUILD=${SLUICE_BUILD:-build}
case $SLUICE_BUILD in /*) ;; *) SLUICE_BUILD=$ROOT_DIR/$SLUICE_BUILD ;; esac
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
PROXY_ADDR=127.0.0.1
PROXY_PORT=3128
PROXY_URL=http://$PROXY_ADDR:$PROXY_PORT
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
# a machine's own trust settings would decide what a test's clients trust
unset SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE REQUESTS_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO \
	NPM_CONFIG_CAFILE PIP_CERT CARGO_HTTP_CAINFO AWS_CA_BUNDLE DENO_CERT

T_PASS=0
T_FAIL=0
LAB_PIDS=()
PROXY_PID=
LAB_DIR=
HNS=
INS=

# ---------------------------------------------------------------- reporting

ok() { echo "ok - $1"; T_PASS=$((T_PASS + 1)); }
not_ok() {
	local seen=${2-}
	seen=$(printf '%s' "$seen" | tr '\r\n' '  ' | cut -c1-400)
	echo "not ok - $1${seen:+ ($seen)}"
	T_FAIL=$((T_FAIL + 1))
}
# expect_eq DESC EXPECTED SEEN
expect_eq() { if [ "$2" == "$3" ]; then ok "$1"; else not_ok "$1" "expected '$2', seen '$3'"; fi; }
# expect_re DESC ERE SEEN
expect_re() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then ok "$1"; else not_ok "$1" "expected /$2/, seen '$3'"; fi
}
expect_not_re() {
	if printf '%s' "$3" | grep -Eq -- "$2"; then not_ok "$1" "unexpected /$2/ in '$3'"; else ok "$1"; fi
}
# is_num VALUE: VALUE is a decimal number (an empty measurement is not 0).
is_num() { printf '%s' "$1" | grep -Eq '^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$'; }
# expect_lt DESC LIMIT VALUE (floats); an empty or non-numeric VALUE fails.
expect_lt() {
	if ! is_num "$3"; then
		not_ok "$1" "expected < $2, seen no number: '$3'"
	elif awk -v a="$3" -v b="$2" 'BEGIN{exit !(a+0 < b+0)}'; then ok "$1"; else not_ok "$1" "expected < $2, seen $3"; fi
}
# expect_ge DESC LIMIT VALUE (floats); an empty or non-numeric VALUE fails.
expect_ge() {
	if ! is_num "$3"; then
		not_ok "$1" "expected >= $2, seen no number: '$3'"
	elif awk -v a="$3" -v b="$2" 'BEGIN{exit !(a+0 >= b+0)}'; then ok "$1"; else not_ok "$1" "expected >= $2, seen $3"; fi
}
# Finish a test file: summary line for humans, status for the runner.
lab_done() {
	echo "# $(basename "$0"): $T_PASS passed, $T_FAIL failed"
	[ "$T_FAIL" -eq 0 ] || lab_sanitizer_said
	[ "$T_FAIL" -eq 0 ]
	exit $?
}
# After a failure: what a sanitizer said in any daemon's stderr kept in LAB_DIR (a
# crash's report would otherwise go with the lab), its first 60 lines each.
lab_sanitizer_said() {
	local f
	[ -n "${LAB_DIR-}" ] || return 0
	for f in "$LAB_DIR"/*.err; do
		[ -s "$f" ] && grep -q 'ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer' "$f" || continue
		grep -m1 -A60 'ERROR: AddressSanitizer\|runtime error:\|ERROR: LeakSanitizer' "$f" |
			sed "s|^|# $(basename "$f"): |"
	done
}
lab_bail() {
	not_ok "$1" "${2-}"
	[ -n "$LAB_DIR" ] && [ -s "$LAB_DIR/proxy.err" ] && sed 's/^/# proxy stderr: /' "$LAB_DIR/proxy.err" | tail -20
	echo "# $(basename "$0"): bailed out: $T_PASS passed, $T_FAIL failed"
	exit 1
}

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.3f", b-a}'; }

# wait_until SECONDS CMD...: poll CMD every 0.1 s; 0 when it succeeded.
wait_until() {
	local limit=$1 i n
	shift
	n=$(awk -v s="$limit" 'BEGIN{printf "%d", s*10}')
	for ((i = 0; i <= n; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	return 1
}

# ---------------------------------------------------------------- namespaces

hx() { ip netns exec "$HNS" "$@"; }
ix() { ip netns exec "$INS" "$@"; }

LAB_HOSTS='127.0.0.1 localhost
::1 localhost ip6-localhost
203.0.113.10 good.test
203.0.113.11 other.test
203.0.113.12 third.test
203.0.113.10 wild.test
203.0.113.10 a.wild.test
203.0.113.10 b.a.wild.test
203.0.113.10 notwild.test
203.0.113.10 xn--bcher-kva.test
203.0.113.99 blackhole.test
2001:db8::10 v6.test
10.20.0.5 evil10.test
10.20.0.5 evil10b.test
192.168.7.7 evil192.test
100.64.1.1 evil100.test
169.254.169.254 meta.test
172.16.3.3 evil172.test
198.18.0.9 evil198.test
192.0.0.170 evil192z.test
224.1.2.3 mcast.test
240.0.0.1 classe.test
0.0.0.0 zero.test
127.0.0.1 loop.test
127.9.9.9 loop9.test
192.0.2.1 own.test
::1 loop6.test
fd00::5 evil6.test
fe80::5 ll6.test
::ffff:203.0.113.20 mapped.test
::203.0.113.20 compat.test
64:ff9b::cb00:7114 nat64.test
2002:cb00:7114::1 sixto4.test
2001:0:cb00:7114::1 teredo.test
203.0.113.10 mixed.test
fd00::5 mixed.test
203.0.113.13 tls.test
203.0.113.13 pass.test
203.0.113.13 badcert.test
203.0.113.13 api.test
203.0.113.13 tok.test
203.0.113.13 tokfail.test
'
# Addresses inet holds (origins listen on all of them).
LAB_INET_V4="203.0.113.10 203.0.113.11 203.0.113.12 203.0.113.13 203.0.113.20 10.20.0.5 192.168.7.7 100.64.1.1 169.254.169.254 172.16.3.3 198.18.0.9 192.0.0.170"
LAB_INET_V6="2001:db8::10 fd00::5"

lab_up() {
	if [ "$(id -u)" != 0 ]; then
		echo "not ok - lab needs root (network namespaces)"
		exit 1
	fi
	local s
	s=$(printf '%x%02d' $$ $((RANDOM % 100)))
	HNS=slh$s
	INS=sli$s
	local vh=svh$s vi=svi$s
	LAB_DIR=$(mktemp -d /tmp/sluice-integ.XXXXXX)
	chmod 755 "$LAB_DIR"
	trap lab_teardown EXIT
	trap 'exit 130' INT TERM
	mkdir -p "$LAB_DIR/state" "/etc/netns/$HNS"
	printf '%s' "$LAB_HOSTS" >"/etc/netns/$HNS/hosts"
	printf 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n' >"/etc/netns/$HNS/resolv.conf"
	ip netns add "$HNS" || lab_bail "ip netns add $HNS"
	ip netns add "$INS" || lab_bail "ip netns add $INS"
	ip link add name "$vh" netns "$HNS" type veth peer name "$vi" netns "$INS" ||
		lab_bail "veth pair"
	hx ip link set lo up
	ix ip link set lo up
	hx sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 2>/dev/null
	ix sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0 2>/dev/null
	# a new namespace inherits IPv4 forwarding from the machine's own (on once
	# podman ran there): inet must not route, or 203.0.113.99 answers
	# "network unreachable" instead of swallowing SYNs
	ix sysctl -qw net.ipv4.ip_forward=0 || lab_bail "ip_forward off in $INS"
	hx ip addr add 192.0.2.1/24 dev "$vh"
	ix ip addr add 192.0.2.2/24 dev "$vi"
	hx ip -6 addr add 2001:db8:ffff::1/64 dev "$vh" nodad
	ix ip -6 addr add 2001:db8:ffff::2/64 dev "$vi" nodad
	hx ip link set "$vh" up
	ix ip link set "$vi" up
	local a
	for a in $LAB_INET_V4; do
		ix ip addr add "$a/32" dev lo
		hx ip route add "$a/32" via 192.0.2.2
	done
	hx ip route add 203.0.113.99/32 via 192.0.2.2
	for a in $LAB_INET_V6; do
		ix ip -6 addr add "$a/128" dev lo nodad
		hx ip -6 route add "$a/128" via 2001:db8:ffff::2
	done
	# origins
	lab_bg "$INS" "$PY" "$INTEG_DIR/origin.py" --log "$LAB_DIR/inet.jsonl" \
		0.0.0.0:80 [::]:80 0.0.0.0:443 [::]:443
	lab_bg "$INS" "$PY" "$INTEG_DIR/origin.py" --mode halfclose --log "$LAB_DIR/halfclose.jsonl" 0.0.0.0:9000
	lab_bg "$INS" "$PY" "$INTEG_DIR/origin.py" --mode silent --log "$LAB_DIR/silent.jsonl" 0.0.0.0:9001
	lab_bg "$INS" "$PY" "$INTEG_DIR/origin.py" --mode halfclose2 --log "$LAB_DIR/halfclose2.jsonl" 0.0.0.0:9002
	lab_bg "$HNS" "$PY" "$INTEG_DIR/origin.py" --log "$LAB_DIR/local.jsonl" 0.0.0.0:80 [::]:80
	lab_nginx
	wait_until 10 ix bash -c '</dev/tcp/203.0.113.10/80' || lab_bail "inet origin did not start"
	wait_until 10 ix bash -c '</dev/tcp/203.0.113.10/8080' || lab_bail "nginx did not start" "$(cat "$LAB_DIR/nginx/error.log" 2>/dev/null)"
	wait_until 10 hx bash -c '</dev/tcp/127.0.0.1/80' || lab_bail "host-ns recorder did not start"
	wait_until 10 ix bash -c '</dev/tcp/203.0.113.10/9002' || lab_bail "raw origins did not start"
	# the lab records start empty: readiness probes are not requests
	: >"$LAB_DIR/inet.jsonl"
	: >"$LAB_DIR/local.jsonl"
	: >"$LAB_DIR/halfclose2.jsonl"
	: >"$LAB_DIR/nginx/access.log"
}

# lab_bg NS CMD...: start a lab process in namespace NS in the background and
# remember its pid (ip netns exec execs CMD, so the pid is CMD's own).
lab_bg() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@" >>"$LAB_DIR/bg.log" 2>&1 &
	LAB_PIDS+=($!)
}

# lab_nginx_head DIR: the start of a lab nginx.conf (foreground, one worker, pid and errors in DIR).
lab_nginx_head() {
	cat <<NGX
daemon off;
master_process on;
worker_processes 1;
user root;
pid $1/nginx.pid;
error_log $1/error.log;
events { worker_connections 512; }
NGX
}

# lab_nginx_temps DIR: the temp paths inside http {}, all under DIR/tmp.
lab_nginx_temps() {
	local t
	for t in client_body proxy fastcgi uwsgi scgi; do
		printf '\t%s_temp_path %s/tmp/%s;\n' "$t" "$1" "${t#client_}"
	done
}

lab_nginx() {
	local d=$LAB_DIR/nginx
	mkdir -p "$d/www" "$d/tmp"
	echo "nginx ok" >"$d/www/index.html"
	head -c $((3 * 1024 * 1024)) /dev/urandom >"$d/www/big.bin"
	{ lab_nginx_head "$d"; cat; } >"$d/nginx.conf" <<NGX
http {
	include /etc/nginx/mime.types;
	default_type text/plain;
	log_format lab '\$connection \$connection_requests \$server_addr:\$server_port "\$request" \$status';
	access_log $d/access.log lab;
$(lab_nginx_temps "$d")
	keepalive_timeout 60;
	server {
		listen 8080;
		listen [::]:8080;
		root $d/www;
		location = /echo { return 200 "host=\$http_host xtest=\$http_x_test conn=\$connection\n"; }
		location = /conn { return 200 "conn=\$connection\n"; }
	}
}
NGX
	lab_bg "$INS" nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
}

# lab_tls_origin: an nginx with TLS on 203.0.113.13:8443 in inet, its
# certificate (tls.test, pass.test, api.test; not badcert.test) signed by a
# test CA at $LAB_DIR/tls/ca.crt that no system trusts. Routes: / "tls ok",
# /echo the request's Host, Authorization and any Sluice-Stamp, /git/ the
# repositories under $LAB_DIR/tls/git through git-http-backend (fcgiwrap),
# for "Authorization: Bearer $LAB_TOKEN" only. Also
# origin.py over TLS on 203.0.113.13:9443 (records in $LAB_DIR/tls9443.jsonl;
# /api wants "Authorization: Bearer $LAB_TOKEN", /reflect echoes it back).
LAB_TOKEN=lab-secret-0123456789abcdef
lab_tls_origin() {
	local d=$LAB_DIR/tls
	mkdir -p "$d/www" "$d/tmp"
	echo "tls ok" >"$d/www/index.html"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
		-subj "/CN=sluice lab test CA" -keyout "$d/ca.key" -out "$d/ca.crt" \
		-addext "basicConstraints=critical,CA:TRUE" >/dev/null 2>&1 || lab_bail "test CA"
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=tls.test" \
		-keyout "$d/srv.key" -out "$d/srv.csr" >/dev/null 2>&1 || lab_bail "origin key"
	printf 'subjectAltName=DNS:tls.test,DNS:pass.test,DNS:api.test,DNS:tok.test,DNS:tokfail.test\nextendedKeyUsage=serverAuth\n' >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile "$d/ext" -out "$d/srv.crt" >/dev/null 2>&1 || lab_bail "origin cert"
	{ lab_nginx_head "$d"; cat; } >"$d/nginx.conf" <<NGX
http {
	default_type text/plain;
	log_format lab '\$ssl_server_name "\$request" \$status auth="\$http_authorization" stamp="\$http_sluice_stamp" reused=\$ssl_session_reused';
	access_log $d/access.log lab;
$(lab_nginx_temps "$d")
	server {
		listen 203.0.113.13:8443 ssl;
		ssl_certificate $d/srv.crt;
		ssl_certificate_key $d/srv.key;
		root $d/www;
		location = /echo { return 200 "host=\$host auth=\$http_authorization stamp=\$http_sluice_stamp\n"; }
		location ~ ^/git(/.*) {
			if (\$http_authorization != "Bearer $LAB_TOKEN") { return 401; }
			include /etc/nginx/fastcgi_params;
			fastcgi_pass unix:$d/fcgi.sock;
			fastcgi_param SCRIPT_FILENAME /usr/lib/git-core/git-http-backend;
			fastcgi_param GIT_PROJECT_ROOT $d/git;
			fastcgi_param GIT_HTTP_EXPORT_ALL "";
			fastcgi_param PATH_INFO \$1;
		}
	}
}
NGX
	mkdir -p "$d/git"
	lab_bg "$INS" fcgiwrap -s "unix:$d/fcgi.sock"
	lab_bg "$INS" nginx -p "$d" -c "$d/nginx.conf" -e "$d/error.log"
	lab_bg "$INS" env ORIGIN_TOKEN="$LAB_TOKEN" "$PY" "$INTEG_DIR/origin.py" \
		--log "$LAB_DIR/tls9443.jsonl" --tls "$d/srv.crt" "$d/srv.key" 203.0.113.13:9443
	wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/9443' || lab_bail "TLS origin.py did not start"
	wait_until 10 ix bash -c '</dev/tcp/203.0.113.13/8443' ||
		lab_bail "TLS nginx did not start" "$(cat "$d/error.log" 2>/dev/null)"
	: >"$d/access.log"
}

# lab_multi_origin: multi.test resolving to a public-looking address
# (203.0.113.20, "first") and a private one (10.20.0.5, "second"), both
# served on 8181 by reload_origin.py, which records to $REC (recq reads it);
# checked up and recording (the control), then $REC emptied.
lab_multi_origin() {
	REC=$LAB_DIR/reload.jsonl
	: >"$REC"
	printf '203.0.113.20 multi.test\n10.20.0.5 multi.test\n' >>"/etc/netns/$HNS/hosts"
	lab_bg "$INS" "$PY" "$INTEG_DIR/reload_origin.py" "$REC" 203.0.113.20:8181 10.20.0.5:8181
	wait_until 10 ix bash -c '</dev/tcp/10.20.0.5/8181' || lab_bail "reload_origin.py listens"
	expect_eq "control: the second origin is up and recording" 1 "$(recq ev=accept origin=second)"
	: >"$REC"
}
recq() { jq_ "$REC" "$@"; }

# Extra namespaces a test adds (ip netns add) are listed here and deleted at teardown.
LAB_EXTRA_NS=()
# filesystems a test mounted inside LAB_DIR (a small tmpfs, say): unmounted at teardown
LAB_MOUNTS=()

# lab_ours PID: PID is still this test's: a child of its shell, or a process
# in one of its namespaces. A lab process that ended long ago left its pid
# free, and another file running at once (tests/integ/run -j; pid_max may be
# 32768) may hold it now: that one is not ours to kill.
lab_ours() {
	local n ns
	[ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$$" ] && return 0
	n=$(stat -L -c %i "/proc/$1/ns/net" 2>/dev/null) || return 1
	for ns in $HNS $INS "${LAB_EXTRA_NS[@]}"; do
		[ "$(stat -L -c %i "/run/netns/$ns" 2>/dev/null)" = "$n" ] && return 0
	done
	return 1
}

lab_teardown() {
	local rc=$?
	trap - EXIT
	lab_stop_proxy
	lab_ctrs_remove
	local p mine=()
	for p in "${LAB_PIDS[@]}"; do
		lab_ours "$p" && mine+=("$p")
	done
	for p in "${mine[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${mine[@]}"; do
		for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		lab_ours "$p" && kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# anything else still running inside the lab's own namespaces was started by this test
	local ns
	for ns in $HNS $INS; do
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			kill -9 "$p" 2>/dev/null
		done
	done
	[ -n "$HNS" ] && ip netns del "$HNS" 2>/dev/null
	[ -n "$INS" ] && ip netns del "$INS" 2>/dev/null
	for ns in "${LAB_EXTRA_NS[@]}"; do
		ip netns del "$ns" 2>/dev/null
	done
	[ -n "$HNS" ] && rm -rf "/etc/netns/$HNS"
	[ -n "$INS" ] && rm -rf "/etc/netns/$INS"
	for ns in "${LAB_MOUNTS[@]}"; do
		umount "$ns" 2>/dev/null || umount -l "$ns" 2>/dev/null
	done
	if [ -n "$LAB_DIR" ] && [ -d "$LAB_DIR" ]; then
		if [ -n "${SLUICE_KEEP-}" ]; then
			echo "# lab kept: $LAB_DIR"
		else
			rm -rf "$LAB_DIR"
		fi
	fi
	exit $rc
}

# udp_probe PREFIX... -- ADDR PORT dns|quic|TEXT [SPORT]: one datagram
# (tests/integ/udp.py) from a python run under PREFIX (hx, setpriv ...);
# prints "answered", "timeout" or "refused ERRNO".
udp_probe() {
	local pre=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		pre+=("$1")
		shift
	done
	shift
	"${pre[@]}" "$PY" - "$@" <"$INTEG_DIR/udp.py"
}

# lab_denied_start NS GROUP: `sluice wall denied --json` listening on NFLOG
# group GROUP in namespace NS (a wall applied with --log-group GROUP logs its
# refusals there), into $DENIED_LOG; lab_denied_stop ends it and prints the lines.
DENIED_PID=
DENIED_LOG=
lab_denied_start() {
	DENIED_LOG=$LAB_DIR/denied-$1-$2.jsonl
	"$SLUICE_BUILD/sluice" wall denied --group "$2" --netns "/run/netns/$1" --json --timeout 120 \
		>"$DENIED_LOG" 2>"$DENIED_LOG.err" &
	DENIED_PID=$!
	LAB_PIDS+=($DENIED_PID)
	wait_until 5 grep -q listening "$DENIED_LOG.err" ||
		lab_bail "sluice wall denied listens on nflog group $2 in $1" "$(cat "$DENIED_LOG.err")"
}
lab_denied_stop() {
	kill "$DENIED_PID" 2>/dev/null
	wait "$DENIED_PID" 2>/dev/null
	cat "$DENIED_LOG"
}

# ---------------------------------------------------------------- the proxy

STATE=
NETLOG=
CONF=

# lab_write_conf LINE...: the proxy config (listen, state, log, short timeouts) plus LINEs.
lab_write_conf() {
	STATE=$LAB_DIR/state
	NETLOG=$STATE/network.log
	CONF=$LAB_DIR/sluice.conf
	{
		echo "# written by tests/integ/lab.sh"
		echo "listen $PROXY_ADDR:$PROXY_PORT"
		echo "state $STATE"
		echo "log $NETLOG"
		local l have_ht=0 have_ct=0 have_rt=0
		for l in "$@"; do
			case $l in head-timeout*) have_ht=1 ;; connect-timeout*) have_ct=1 ;; response-timeout*) have_rt=1 ;; esac
		done
		# issue 2's tests tunnel CONNECTs to plain origins: interception only where asked
		printf '%s\n' "$@" | grep -q '^intercept ' || echo "intercept off"
		[ $have_ht = 1 ] || echo "head-timeout 5"
		[ $have_ct = 1 ] || echo "connect-timeout 3"
		[ $have_rt = 1 ] || echo "response-timeout 5"
		for l in "$@"; do echo "$l"; done
	} >"$CONF"
}

# lab_start_proxy LINE...: write the config and start sluice-proxy in the host ns.
lab_start_proxy() {
	lab_write_conf "$@"
	lab_run_proxy
}

# lab_start_stamped_proxy LINE...: the same, with a stamp key made first
# (STATE/stamp.key), for the tests that put sluice-forward in front.
lab_start_stamped_proxy() {
	lab_write_conf "$@"
	sl key init >/dev/null 2>&1 || lab_bail "sluice key init"
	lab_run_proxy
}

lab_run_proxy() {
	if [ ! -x "$SLUICE_BUILD/sluice-proxy" ]; then
		lab_bail "sluice-proxy is built" "no $SLUICE_BUILD/sluice-proxy"
	fi
	ulimit -n 20000 2>/dev/null || ulimit -n 4096 2>/dev/null
	: >"$LAB_DIR/proxy.err"
	# LAB_PROXY_ARGS: more arguments (say -d, the state trace)
	ip netns exec "$HNS" "$SLUICE_BUILD/sluice-proxy" ${LAB_PROXY_ARGS-} -c "$CONF" \
		>>"$LAB_DIR/proxy.out" 2>>"$LAB_DIR/proxy.err" &
	PROXY_PID=$!
	sleep 0.05
	if ! kill -0 "$PROXY_PID" 2>/dev/null; then
		lab_bail "sluice-proxy starts" "$(tail -5 "$LAB_DIR/proxy.err")"
	fi
	if ! wait_until 10 hx bash -c "</dev/tcp/$PROXY_ADDR/$PROXY_PORT"; then
		lab_bail "sluice-proxy listens on $PROXY_ADDR:$PROXY_PORT" "$(tail -5 "$LAB_DIR/proxy.err")"
	fi
}

# reloads: how often the proxy has reloaded its policy (its stderr says each time)
reloads() { grep -c 'policy reloaded' "$LAB_DIR/proxy.err"; }
# reloaded_past N: the proxy has reloaded its policy more than N times
reloaded_past() { [ "$(reloads)" -gt "$1" ]; }

lab_stop_proxy() {
	[ -n "$PROXY_PID" ] || return 0
	kill "$PROXY_PID" 2>/dev/null
	for _ in $(seq 30); do
		kill -0 "$PROXY_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$PROXY_PID" 2>/dev/null
	wait "$PROXY_PID" 2>/dev/null
	PROXY_PID=
}

# lab_run_dns CONF: start sluice-dns in the host ns on CONF (its stderr in
# DNS_ERR, $LAB_DIR/NAME.dns.err for CONF NAME.conf; its pid in DNS_PID);
# lab_stop_dns stops the last one.
DNS_PID=
DNS_ERR=
lab_run_dns() {
	DNS_ERR=$LAB_DIR/$(basename "$1" .conf).dns.err
	: >"$DNS_ERR"
	ip netns exec "$HNS" "$SLUICE_BUILD/sluice-dns" -c "$1" 2>>"$DNS_ERR" &
	DNS_PID=$!
	LAB_PIDS+=("$DNS_PID")
	wait_until 10 grep -q "sluice-dns: running" "$DNS_ERR" ||
		lab_bail "sluice-dns starts" "$(tail -5 "$DNS_ERR")"
}
lab_stop_dns() {
	[ -n "$DNS_PID" ] || return 0
	kill "$DNS_PID" 2>/dev/null
	wait "$DNS_PID" 2>/dev/null
	DNS_PID=
}

proxy_alive() { [ -n "$PROXY_PID" ] && kill -0 "$PROXY_PID" 2>/dev/null; }

# lab_second_project: a second project beside $CONF for `sluice run`'s tests:
# $CONF_B with its own state ($STATE_B, the same CA and stamp key), proxy
# listener 127.0.0.1:3129, sluice-dns on 127.0.0.1:5353 (its nameserver too)
# and other.test granted where $CONF grants good.test.
lab_second_project() {
	CONF_B=$LAB_DIR/b.conf
	STATE_B=$LAB_DIR/state-b
	sed -e "s|^listen .*|listen 127.0.0.1:3129|" -e "s|^state .*|state $STATE_B|" \
		-e "s|^log .*|log $STATE_B/network.log|" -e "s|^dns-listen .*|dns-listen 127.0.0.1:5353|" \
		-e "s|^allow good.test|allow other.test|" -e "s|^nameserver .*|nameserver 127.0.0.1:5353|" \
		"$CONF" >"$CONF_B"
	mkdir -p "$STATE_B"
	cp "$STATE/ca.key" "$STATE/ca.crt" "$STATE/ca-bundle.crt" "$STATE/stamp.key" "$STATE_B/"
}

# sl ARGS...: the sluice CLI on the lab's config.
sl() { hx "$SLUICE_BUILD/sluice" -c "$CONF" "$@"; }

# ---------------------------------------------------------------- clients

# pcurl ARGS...: curl through the proxy inside the host ns.
pcurl() { hx curl -sS --max-time 10 -x "$PROXY_URL" "$@"; }
# pcode URL [ARGS...]: the status code (000 when none).
pcode() { hx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "$PROXY_URL" "$@"; }
# raw DATA [raw.py options...]: exact bytes to the proxy, exact bytes back plus a #meta line.
raw() {
	local d=$1
	shift
	hx "$PY" "$INTEG_DIR/raw.py" --addr "$PROXY_ADDR" --port "$PROXY_PORT" --meta "$@" "$d"
}
# meta_status OUT: the first final status in raw's output ("none" if none).
meta_status() { printf '%s' "$1" | sed -n 's/^#meta statuses=\([^ ,]*\).*/\1/p'; }
meta_statuses() { printf '%s' "$1" | sed -n 's/^#meta statuses=\([^ ]*\).*/\1/p'; }
meta_closed() { printf '%s' "$1" | sed -n 's/^#meta .*closed=\([01]\).*/\1/p'; }
meta_elapsed() { printf '%s' "$1" | sed -n 's/^#meta .*elapsed=\([0-9.]*\).*/\1/p'; }
# header_of OUT NAME: the value of the first NAME header.
header_of() { printf '%s' "$1" | tr -d '\r' | awk -v n="$2" 'BEGIN{n=tolower(n)} /^$/{exit} {i=index($0,":"); if (i && tolower(substr($0,1,i-1))==n) {v=substr($0,i+1); sub(/^[ \t]+/,"",v); print v; exit}}'; }
# body_of OUT: the body of the first response (up to #meta).
body_of() { printf '%s' "$1" | tr -d '\r' | awk 'b && /^#meta /{exit} b{print} /^$/{b=1}'; }

# ---------------------------------------------------------------- records

# jq FILE COND... [--count|--field K|--json]
jq_() { "$PY" "$INTEG_DIR/jq.py" "$@" 2>/dev/null; }
# logq COND...: query the network log.
logq() { jq_ "$NETLOG" "$@"; }
# inetq COND...: query the inet origin's records (ev=accept|req|body, local=ADDR:PORT, line=...).
inetq() { jq_ "$LAB_DIR/inet.jsonl" "$@"; }
localq() { jq_ "$LAB_DIR/local.jsonl" "$@"; }
# wait_log SECONDS COND...: wait for a log row to appear.
wait_log() {
	local s=$1
	shift
	wait_until "$s" _log_has "$@"
}
_log_has() { [ "$(logq "$@")" -gt 0 ]; }

# ---------------------------------------------------------------- controls
#
# A check that nothing reached an origin proves nothing if the origin was
# dead. lab_probe connects to an origin directly (not through the proxy),
# from a source address no proxied connection uses (inet: 192.0.2.2; the
# host-ns recorder: 127.0.0.77), and succeeds once the origin recorded it.
# Probe rows carry peer 192.0.2.2:* or 127.0.0.77:* (exclude them with
# 'peer!~192.0.2.2:' when counting rows broadly) and the request line
# "GET /lab-probe-N HTTP/1.0"; the nginx origins log that request line.
LAB_PROBE_N=0
LAB_PROBE_SRC_INET=192.0.2.2
LAB_PROBE_SRC_LOCAL=127.0.0.77
# lab_probe WHICH: WHICH is inet, local, halfclose, silent, halfclose2, tls9443, nginx or tlsnginx.
lab_probe() {
	local which=$1 ns=ix addr=192.0.2.2 port src=$LAB_PROBE_SRC_INET tls=0 file
	LAB_PROBE_N=$((LAB_PROBE_N + 1))
	case $which in
	inet) port=80 file=$LAB_DIR/inet.jsonl ;;
	local) ns=hx addr=$LAB_PROBE_SRC_LOCAL port=80 src=$LAB_PROBE_SRC_LOCAL file=$LAB_DIR/local.jsonl ;;
	halfclose) port=9000 file=$LAB_DIR/halfclose.jsonl ;;
	silent) port=9001 file=$LAB_DIR/silent.jsonl ;;
	halfclose2) port=9002 file=$LAB_DIR/halfclose2.jsonl ;;
	tls9443) addr=203.0.113.13 port=9443 tls=1 file=$LAB_DIR/tls9443.jsonl ;;
	nginx) port=8080 file=$LAB_DIR/nginx/access.log ;;
	tlsnginx) addr=203.0.113.13 port=8443 tls=1 file=$LAB_DIR/tls/access.log ;;
	*) return 2 ;;
	esac
	[ -f "$file" ] || return 1
	local before
	before=$(jq_ "$file" ev=accept "peer~$src:" --count 2>/dev/null)
	"$ns" "$PY" - "$src" "$addr" "$port" "$tls" "/lab-probe-$LAB_PROBE_N" >/dev/null 2>&1 <<'PY'
import socket, ssl, sys
src, addr, port, tls, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1", sys.argv[5]
s = socket.create_connection((addr, port), timeout=3, source_address=(src, 0))
if tls:
    c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    c.check_hostname = False
    c.verify_mode = ssl.CERT_NONE
    s = c.wrap_socket(s, server_hostname="tls.test")
s.sendall(("GET %s HTTP/1.0\r\nHost: probe\r\n\r\n" % path).encode())
if not tls:
    s.shutdown(socket.SHUT_WR)
try:
    while s.recv(65536):
        pass
except OSError:
    pass
PY
	case $which in
	nginx | tlsnginx) wait_until 3 grep -q "GET /lab-probe-$LAB_PROBE_N " "$file" ;;
	*) wait_until 3 _probe_more "$file" "$src" "${before:-0}" ;;
	esac
}
# _probe_more FILE SRC BEFORE: FILE holds more accepts from SRC than BEFORE.
_probe_more() { [ "$(jq_ "$1" ev=accept "peer~$2:" --count)" -gt "$3" ] 2>/dev/null; }
# lab_control DESC WHICH: ok when origin WHICH is up and records a direct probe.
lab_control() {
	if lab_probe "$2"; then ok "$1: control: the $2 origin is up and recording"; else not_ok "$1: control: the $2 origin is up and recording" "a direct probe was not recorded in time"; fi
}
# expect_none DESC WHICH COND...: no record of origin WHICH matches COND
# (probe rows aside), and a direct probe after shows the origin was up and
# recording all along (origins are never restarted); a missing record file,
# or an origin that does not record the probe, fails.
expect_none() {
	local desc=$1 which=$2 file n
	shift 2
	case $which in
	inet) file=$LAB_DIR/inet.jsonl ;;
	local) file=$LAB_DIR/local.jsonl ;;
	*) file=$LAB_DIR/$which.jsonl ;;
	esac
	n=$(jq_ "$file" "$@" "peer!~$LAB_PROBE_SRC_INET:" "peer!~$LAB_PROBE_SRC_LOCAL:" --count)
	if ! lab_probe "$which"; then
		not_ok "$desc" "control failed: the $which origin did not record a direct probe (count seen '$n')"
		return 1
	fi
	expect_eq "$desc" 0 "$n"
}

# lab_proxy_control DESC: the proxy is up and logging (the control for "nothing
# reached the proxy"): a request sent to it directly gets its row (every
# request has one, granted or refused). Call it after the check.
LAB_PCTL_N=0
lab_proxy_control() {
	LAB_PCTL_N=$((LAB_PCTL_N + 1))
	local p=/lab-proxy-control-$LAB_PCTL_N
	raw "GET http://good.test$p HTTP/1.1\r\nHost: good.test\r\nConnection: close\r\n\r\n" --timeout 5 >/dev/null 2>&1
	if wait_log 3 path=$p; then
		ok "$1: control: the proxy is up and logging"
	else
		not_ok "$1: control: the proxy is up and logging" "no row for a direct request $p"
	fi
}

# The refusal checks every refusal gets: status, Proxy-Status, body.
# expect_refusal DESC OUT STATUS REASON_ERE [BODY_ERE]
expect_refusal() {
	local desc=$1 out=$2 st=$3 reason=$4 bre=${5-}
	local s ps
	s=$(meta_status "$out")
	ps=$(header_of "$out" Proxy-Status)
	if [ "$s" != "$st" ]; then
		not_ok "$desc: status $st" "seen $(printf '%s' "$out" | head -c 300)"
		return 1
	fi
	if ! printf '%s' "$ps" | grep -Eq '^sluice; *error=[a-z_]+'; then
		not_ok "$desc: status $st" "Proxy-Status missing or not RFC 9209 form: '$ps'"
		return 1
	fi
	if [ -n "$reason" ] && ! printf '%s' "$ps" | grep -Eq -- "$reason"; then
		not_ok "$desc: status $st" "Proxy-Status lacks reason $reason: '$ps'"
		return 1
	fi
	if [ -n "$bre" ] && ! body_of "$out" | grep -Eq -- "$bre"; then
		not_ok "$desc: status $st" "body lacks /$bre/: '$(body_of "$out" | head -c 200)'"
		return 1
	fi
	ok "$desc: status $st${reason:+ ($reason)}"
}

# ---------------------------------------------------------------- containers
#
# Real podman containers (notes: rootful podman with runc, cgroupfs, no
# image pulls). The image localhost/sluice-lab is a minimal root built here
# (passwd, group, links into /usr); containers mount the machine's /usr
# read-only, so curl, python3, git and node are the machine's own.
LAB_IMAGE=localhost/sluice-lab
LAB_CTRS=()
LAB_NETS=()

# lab_image: build $LAB_IMAGE once per machine (cheap when it exists); under
# a lock, since files running at once (tests/integ/run -j) may all want it.
lab_image() {
	podman image exists "$LAB_IMAGE" 2>/dev/null && return 0
	local r lock=${SLUICE_TEST_CACHE:-/var/cache/sluice-tests}/lab-image.lock lockfd
	mkdir -p "${lock%/*}" && exec {lockfd}>"$lock" && flock -w 120 "$lockfd" ||
		lab_bail "the lock $lock for building $LAB_IMAGE"
	if podman image exists "$LAB_IMAGE" 2>/dev/null; then
		exec {lockfd}>&-
		return 0
	fi
	r=$(mktemp -d /tmp/sluice-lab-root.XXXXXX)
	mkdir -p "$r/usr" "$r/etc" "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/root" "$r/run"
	ln -s usr/bin "$r/bin"
	ln -s usr/sbin "$r/sbin"
	ln -s usr/lib "$r/lib"
	ln -s usr/lib64 "$r/lib64"
	chmod 1777 "$r/tmp"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
	echo 'root:x:0:' >"$r/etc/group"
	tar -C "$r" -cf "$r.tar" . && podman import -q "$r.tar" "$LAB_IMAGE" >/dev/null
	local rc=$?
	rm -rf "$r" "$r.tar"
	exec {lockfd}>&-
	[ $rc -eq 0 ] || lab_bail "podman import $LAB_IMAGE"
}

# lab_podman NS ARGS...: podman with its engine inside namespace NS
# (nsenter keeps the cgroup mounts that ip netns exec would hide); the
# bridge podman0 (10.88.0.0/16, gateway 10.88.0.1) is created in NS.
lab_podman() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" podman --runtime runc "$@"
}

# lab_run_ctr NS NAME [podman run options...] -- CMD...: start a detached
# container NAME (remembered for teardown) with /usr mounted from the machine.
lab_run_ctr() {
	local ns=$1 name=$2
	shift 2
	local opts=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		opts+=("$1")
		shift
	done
	[ "${1-}" == -- ] && shift
	LAB_CTRS+=("$name")
	lab_podman "$ns" run -d --name "$name" --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
		-v /usr:/usr:ro "${opts[@]}" "$LAB_IMAGE" "$@"
}

# lab_ctr_addr NAME: the container's first IPv4 address on its networks.
lab_ctr_addr() {
	podman inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$1" | awk '{print $1}'
}

lab_ctrs_remove() {
	local c
	for c in "${LAB_CTRS[@]}"; do
		podman rm -f -t 0 "$c" >/dev/null 2>&1
	done
	LAB_CTRS=()
	# networks a test created (podman keeps their definitions machine-wide)
	for c in "${LAB_NETS[@]}"; do
		podman network rm -f "$c" >/dev/null 2>&1
	done
	LAB_NETS=()
}

# ---------------------------------------------------------------- the sandbox
#
# lab_sandbox_up, after lab_up: a "vm" namespace $VNS joined to the host
# namespace by a veth pair (vm 192.168.5.15, host 192.168.5.2), running the
# podman engine (bridge podman0, 10.88.0.0/16, gateway 10.88.0.1) and
# sluice-forward:
#   10.88.0.1:3128  containers on the bridge; stamped with their own address, net "podman"
#   127.0.0.1:3130  the vm's own processes and --network host containers;
#                   attributed by the client socket's cgroup (as=...)
# both to the proxy at 192.168.5.2:3128 (the proxy must listen there: use
# lab_write_conf "listen $SBX_PROXY" ...). The forwarder marks its upstream
# packets $SBX_MARK; lab_sandbox_wall's walls let only marked packets reach
# the proxy's port, and bridged containers reach nothing but the forwarder.
SBX_PROXY=192.168.5.2:3128
SBX_FWD=10.88.0.1:3128
SBX_OWN=127.0.0.1:3130
SBX_MARK=0x5c1
SBX_BASE=3100
SBX_LOG=6
VNS=
FWD_PID=

vx() { ip netns exec "$VNS" "$@"; }

lab_sandbox_up() {
	local s=${HNS#slh}
	VNS=slv$s
	ip netns add "$VNS" || lab_bail "ip netns add $VNS"
	LAB_EXTRA_NS+=("$VNS")
	ip link add name svv$s netns "$VNS" type veth peer name svg$s netns "$HNS" ||
		lab_bail "vm veth pair"
	vx ip link set lo up
	vx ip addr add 192.168.5.15/24 dev svv$s
	vx ip link set svv$s up
	hx ip addr add 192.168.5.2/24 dev svg$s
	hx ip link set svg$s up
	# the way back to bridged containers, so that without the table a
	# container could reach the proxy directly (the bypass test's control)
	hx ip route add 10.88.0.0/16 via 192.168.5.15
	lab_image
}

# lab_sandbox_wall: sluice's own walls in $VNS, in the port band $SBX_BASE
# (which holds the proxy's 3128): the sandbox profile (user nobody and its
# subuids default-deny; bridged containers reach only the forwarder) and the
# guard profile (only packets carrying the forwarder's mark reach the
# proxy's listeners). Refusals go to NFLOG group $SBX_LOG.
lab_sandbox_wall() {
	local s="$SLUICE_BUILD/sluice -c $CONF"
	local common=(--port-base "$SBX_BASE" --log-group "$SBX_LOG" --netns "/run/netns/$VNS")

	printf 'nobody:100000:65536\n' >"$LAB_DIR/subuid"
	chmod 644 "$LAB_DIR/subuid"
	{ $s wall apply sandbox --user nobody --subuid "$LAB_DIR/subuid" --gateway 192.168.5.2 \
		--bridge podman0 --forwarder "$SBX_FWD" "${common[@]}" &&
		$s wall apply guard --gateway 192.168.5.2 --mark "$SBX_MARK" "${common[@]}"; } \
		>"$LAB_DIR/wall.out" 2>&1 ||
		lab_bail "sluice wall apply sandbox and guard in the vm namespace" "$(cat "$LAB_DIR/wall.out")"
}

# lab_sandbox_forward: start sluice-forward in $VNS (nsenter, not ip netns
# exec: it needs the cgroup mounts to attribute by cgroup).
lab_sandbox_forward() {
	nsenter --net="/run/netns/$VNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" \
		--net podman --mark "$SBX_MARK" --own "$SBX_OWN=$SBX_PROXY" "$SBX_FWD=$SBX_PROXY" \
		>>"$LAB_DIR/forward.err" 2>&1 &
	FWD_PID=$!
	LAB_PIDS+=($FWD_PID)
	wait_until 5 vx bash -c "</dev/tcp/${SBX_OWN%:*}/${SBX_OWN#*:}" ||
		lab_bail "sluice-forward starts in the vm" "$(tail -5 "$LAB_DIR/forward.err")"
}

# sbx_ctr NAME [podman run options...] -- CMD...: a container in the vm,
# on the bridge unless the options say otherwise.
sbx_ctr() {
	local name=$1
	shift
	lab_run_ctr "$VNS" "$name" "$@"
}
# sbx_exec NAME CMD...: run CMD in the running container NAME.
sbx_exec() {
	local name=$1
	shift
	lab_podman "$VNS" exec "$name" "$@"
}
