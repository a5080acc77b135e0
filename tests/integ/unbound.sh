# unbound.sh: Debian's real unbound as the lab's upstream DNS resolver (sourced after lab.sh).
#
#   source tests/integ/lab.sh
#   source tests/integ/unbound.sh
#   lab_up
#   lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"'
#   hx dig @$UNBOUND_ADDR good.test A            # or +tcp, or kdig +tls (below)
#   unbound_data 'flip.test. 0 IN A 10.20.0.5'    # live, no restart
#   expect_eq "the query reached unbound" 1 "$(unbound_seen good.test A)"
#
# unbound runs in inet ($INS) on 192.0.2.2 and 2001:db8:ffff::2: port 53 plain
# (UDP and TCP) and port 853 DNS over TLS, its certificate for dns.test only
# (SAN DNS:dns.test, no IP) signed by a test CA at $UNBOUND_CA that no system
# trusts:
#   hx kdig @$UNBOUND_ADDR +tls +tls-ca=$UNBOUND_CA +tls-hostname=dns.test NAME
# It answers only from local data and never recurses: "." is a static local
# zone (a name without data gets NXDOMAIN, another type of a name with data
# NODATA; no SOA in either, so no negative TTL; "." itself is NXDOMAIN too),
# as are unbound's own default zones (test., onion., invalid., the private
# reverse zones; local data for x.test lands in "test."; localhost. answers
# 127.0.0.1 and ::1; version.bind CH TXT the version). The iterator may
# query no address (do-not-query-address 0.0.0.0/0 and ::/0): a class other
# than IN, the one thing that reaches it, gets REFUSED, no packet leaving.
# There is no DNSSEC validation. Local data is served as written: its TTL as
# given (0 and 1 included; nothing cached in between), its records in the
# order given (rrset-roundrobin off). UDP answers go up to the size the client
# offers, at most 4096 (pass "max-udp-size: 1232" to cap them); what does not
# fit comes back empty with TC set, and whole over TCP.
# Every query it receives is logged to $UNBOUND_LOG ("query: FROM NAME. TYPE
# CLASS", written before the answer is sent: once a dig returns, unbound_seen
# counts it), and so are its replies ("reply: FROM NAME. TYPE CLASS RCODE ...")
# and the local-zone action taken ("info: ZONE. static FROM@PORT NAME. ...").
#
# Other upstreams, no function needed (both in inet, lab_up routes them there):
#   $UNBOUND_SILENT  203.0.113.99 port 53 (any port): routed to inet, which does
#                    not hold it nor forward; UDP and TCP packets vanish, no ICMP.
#   $UNBOUND_REFUSED 203.0.113.10 port 53 (inet holds it, unbound does not
#                    listen there; 2001:db8::10 the same for IPv6, or port 5300
#                    on 192.0.2.2): UDP gets ICMP port unreachable, TCP a RST.
#                    lab_unbound turns inet's ICMP rate limit off, so every
#                    datagram is refused, not only the first few.
#
# lab_unbound [LINE...]     write unbound.conf (LINEs appended inside server:,
#                           say 'local-data: "x.test. 0 IN A 203.0.113.10"'),
#                           start unbound with lab_bg, wait until it answers,
#                           empty its log; bails out with its log when it fails
# unbound_ctl ARGS...       unbound-control on the lab's unbound
# unbound_data RR...        live: each NAME given ("NAME TTL IN TYPE VALUE")
#                           gets exactly the RRs given (its old data of every
#                           type is removed first: a query landing between the
#                           two control calls can see NXDOMAIN)
# unbound_data_add RR...    live: add RRs to what the names already have
#                           (they answer first; each keeps its own TTL; an RR
#                           already there is left as it was, TTL included)
# unbound_data_remove NAME...  live: remove all data of each NAME (NXDOMAIN after)
# unbound_many NAME COUNT [TTL]  print COUNT RRs "NAME TTL IN A 203.0.113.(100+i)"
#                           (COUNT <= 150; an A answer for big.test with EDNS
#                           is 37 + 16 * COUNT bytes: 75 pass 1232, 80 make
#                           1317; feed them to unbound_data, or wrap them in
#                           local-data: "..." for lab_unbound)
# unbound_seen NAME [TYPE]  how many queries for NAME (any case, with or
#                           without the final dot) and TYPE (A, AAAA, ...; any
#                           when absent) the log holds; prints nothing and
#                           fails when unbound is not running or has no log
# unbound_wait_seen SECONDS COUNT NAME [TYPE]  wait until unbound_seen >= COUNT
# unbound_recording         0 when unbound is up and logs: a fresh canary name
#                           (canary-N.unbound.test) queried from $HNS is logged
# unbound_control DESC      ok/not_ok "DESC: control: unbound is up and recording"
# unbound_expect_none DESC NAME [TYPE]  no query for NAME was logged, and the
#                           control after it shows unbound was recording
# unbound_stat KEY          one counter of unbound-control stats_noreset
#                           (total.num.queries, num.answer.rcode.NXDOMAIN, ...)
#
# Variables after lab_unbound: UNBOUND_ADDR (192.0.2.2), UNBOUND_ADDR6
# (2001:db8:ffff::2), UNBOUND_TLS_NAME (dns.test), UNBOUND_CA, UNBOUND_LOG,
# UNBOUND_CONF, UNBOUND_DIR ($LAB_DIR/unbound), UNBOUND_PID (also in
# LAB_PIDS, so lab_teardown stops it).

UNBOUND_ADDR=192.0.2.2
UNBOUND_ADDR6=2001:db8:ffff::2
UNBOUND_TLS_NAME=dns.test
UNBOUND_SILENT=203.0.113.99
UNBOUND_REFUSED=203.0.113.10
UNBOUND_DIR=
UNBOUND_CA=
UNBOUND_LOG=
UNBOUND_CONF=
UNBOUND_PID=
UNBOUND_CANARY_N=0
export UNBOUND_ADDR UNBOUND_ADDR6 UNBOUND_TLS_NAME UNBOUND_SILENT UNBOUND_REFUSED

# _unbound_cert DIR: a test CA (DIR/ca.crt) and a server key and certificate for dns.test.
_unbound_cert() {
	local d=$1 key=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
	openssl req -x509 "${key[@]}" -days 2 -subj "/CN=sluice lab unbound test CA" \
		-keyout "$d/ca.key" -out "$d/ca.crt" -addext "basicConstraints=critical,CA:TRUE" \
		>/dev/null 2>&1 || lab_bail "unbound test CA"
	openssl req "${key[@]}" -subj "/CN=$UNBOUND_TLS_NAME" \
		-keyout "$d/srv.key" -out "$d/srv.csr" >/dev/null 2>&1 ||
		lab_bail "unbound server key"
	printf 'subjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$UNBOUND_TLS_NAME" >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
		-days 2 -extfile "$d/ext" -out "$d/srv.crt" >/dev/null 2>&1 ||
		lab_bail "unbound server cert"
}

# _unbound_conf DIR LINE...: the config on stdout.
_unbound_conf() {
	local d=$1 a l
	shift
	cat <<CONF
# written by tests/integ/unbound.sh
server:
	verbosity: 1
	num-threads: 1
	do-daemonize: no
	username: ""
	chroot: ""
	directory: "$d"
	pidfile: "$d/unbound.pid"
	use-syslog: no
	logfile: "$d/unbound.log"
	log-queries: yes
	log-replies: yes
	log-tag-queryreply: yes
	log-local-actions: yes
	log-servfail: yes
	extended-statistics: yes
	do-ip4: yes
	do-ip6: yes
	do-udp: yes
	do-tcp: yes
	so-reuseport: no
	tls-port: 853
	tls-service-key: "$d/srv.key"
	tls-service-pem: "$d/srv.crt"
	access-control: 0.0.0.0/0 allow
	access-control: ::/0 allow
	# no validator, no trust anchor
	module-config: "iterator"
	trust-anchor-signaling: no
	root-key-sentinel: no
	# never recurse: every IN name is local, and the iterator may query nobody
	local-zone: "." static
	do-not-query-localhost: yes
	do-not-query-address: 0.0.0.0/0
	do-not-query-address: ::/0
	# local data answers in the order written
	rrset-roundrobin: no
	minimal-responses: yes
CONF
	for a in "$UNBOUND_ADDR" "$UNBOUND_ADDR6"; do
		printf '\tinterface: %s@53\n\tinterface: %s@853\n' "$a" "$a"
	done
	for l in "$@"; do
		printf '\t%s\n' "$l"
	done
	cat <<CONF
remote-control:
	control-enable: yes
	control-interface: "$d/control.sock"
	control-use-cert: no
CONF
}

# _unbound_answers ADDR: unbound answers a plain UDP query (any rcode) from $HNS.
_unbound_answers() {
	hx dig +time=1 +tries=1 @"$1" ready.unbound.test A 2>/dev/null | grep -q 'status: '
}

# _unbound_bail DESC: stop the test with unbound's log and its stderr (errors before it
# opened the log, such as a failed bind, are only there: lab_bg sends it to bg.log).
_unbound_bail() {
	local err
	err=$(grep 'unbound\[' "$LAB_DIR/bg.log" 2>/dev/null | tail -5)
	[ -s "$UNBOUND_LOG" ] && tail -20 "$UNBOUND_LOG" | sed 's/^/# unbound.log: /'
	[ -n "$err" ] && printf '%s\n' "$err" | sed 's/^/# unbound stderr: /'
	lab_bail "$1" "$(tail -3 "$UNBOUND_LOG" 2>/dev/null) $err"
}

lab_unbound() {
	UNBOUND_DIR=$LAB_DIR/unbound
	UNBOUND_CA=$UNBOUND_DIR/ca.crt
	UNBOUND_LOG=$UNBOUND_DIR/unbound.log
	UNBOUND_CONF=$UNBOUND_DIR/unbound.conf
	export UNBOUND_DIR UNBOUND_CA UNBOUND_LOG UNBOUND_CONF
	mkdir -p "$UNBOUND_DIR"
	_unbound_cert "$UNBOUND_DIR"
	_unbound_conf "$UNBOUND_DIR" "$@" >"$UNBOUND_CONF"
	local out
	out=$(unbound-checkconf "$UNBOUND_CONF" 2>&1) || lab_bail "unbound.conf is valid" "$out"
	# the refused upstream answers every datagram with port unreachable, not a few a second
	ix sysctl -qw net.ipv4.icmp_ratelimit=0 net.ipv6.icmp.ratelimit=0 ||
		lab_bail "ICMP rate limit off in $INS"
	lab_bg "$INS" unbound -d -c "$UNBOUND_CONF"
	UNBOUND_PID=${LAB_PIDS[-1]}
	export UNBOUND_PID
	local i
	for ((i = 0; i < 100; i++)); do
		kill -0 "$UNBOUND_PID" 2>/dev/null || _unbound_bail "unbound starts (it exited)"
		_unbound_answers "$UNBOUND_ADDR" && break
		sleep 0.1
	done
	[ $i -lt 100 ] || _unbound_bail "unbound answers on $UNBOUND_ADDR:53 within 10 s"
	# over IPv6 too, which also resolves the veth's neighbours: else the first
	# datagram to the refused IPv6 upstream gets no port unreachable back
	wait_until 5 _unbound_answers "$UNBOUND_ADDR6" ||
		_unbound_bail "unbound answers on [$UNBOUND_ADDR6]:53"
	wait_until 5 hx bash -c "</dev/tcp/$UNBOUND_ADDR/853" ||
		_unbound_bail "unbound listens on $UNBOUND_ADDR:853"
	# the log starts empty: readiness probes are not queries (unbound appends)
	: >"$UNBOUND_LOG"
}

unbound_ctl() { ix unbound-control -c "$UNBOUND_CONF" "$@"; }

# _unbound_ctl_ok ARGS...: unbound_ctl, reading stdin; its output goes to stderr only on
# failure (it exits 1 when the daemon says an input line was wrong, the others applied).
_unbound_ctl_ok() {
	local out
	out=$(unbound_ctl "$@" 2>&1) && return 0
	printf 'unbound-control %s: %s\n' "$1" "$out" >&2
	return 1
}

unbound_data_remove() { printf '%s\n' "$@" | _unbound_ctl_ok local_datas_remove; }
unbound_data_add() { printf '%s\n' "$@" | _unbound_ctl_ok local_datas; }
unbound_data() {
	local rr names=()
	for rr in "$@"; do names+=("${rr%%[[:space:]]*}"); done
	unbound_data_remove "${names[@]}" || return 1
	# each RR added live goes first in its RRset: fed last to first, they answer as given
	printf '%s\n' "$@" | tac | _unbound_ctl_ok local_datas
}

unbound_many() {
	local name=$1 count=$2 ttl=${3-300} i
	for ((i = 0; i < count; i++)); do
		printf '%s %s IN A 203.0.113.%d\n' "$name" "$ttl" $((100 + i))
	done
}

unbound_seen() {
	[ -n "$UNBOUND_PID" ] && kill -0 "$UNBOUND_PID" 2>/dev/null || return 1
	[ -f "$UNBOUND_LOG" ] || return 1
	local name type
	name=$(printf '%s' "${1%.}." | tr '[:upper:]' '[:lower:]')
	type=$(printf '%s' "${2-}" | tr '[:lower:]' '[:upper:]')
	# "[TIME] unbound[PID:TID] query: FROM NAME. TYPE CLASS"
	awk -v n="$name" -v t="$type" '
		$3 == "query:" && NF >= 7 && tolower($5) == n && (t == "" || $6 == t) { c++ }
		END { print c + 0 }' "$UNBOUND_LOG"
}

# _unbound_seen_ge COUNT NAME [TYPE]
_unbound_seen_ge() {
	local n
	n=$(unbound_seen "${@:2}") && [ "$n" -ge "$1" ]
}

unbound_wait_seen() { wait_until "$1" _unbound_seen_ge "$2" "${@:3}"; }

unbound_recording() {
	UNBOUND_CANARY_N=$((UNBOUND_CANARY_N + 1))
	local name=canary-$UNBOUND_CANARY_N.unbound.test
	hx dig +time=2 +tries=1 @"$UNBOUND_ADDR" "$name" A >/dev/null 2>&1
	unbound_wait_seen 3 1 "$name" A
}

unbound_control() {
	if unbound_recording; then
		ok "$1: control: unbound is up and recording"
	else
		not_ok "$1: control: unbound is up and recording" \
			"canary-$UNBOUND_CANARY_N.unbound.test not logged"
	fi
}

unbound_expect_none() {
	local desc=$1 n
	n=$(unbound_seen "${@:2}")
	if ! unbound_recording; then
		not_ok "$desc" "control failed: unbound logged no canary query (count seen '$n')"
		return 1
	fi
	expect_eq "$desc" 0 "$n"
}

unbound_stat() { unbound_ctl stats_noreset | awk -F= -v k="$1" '$1 == k { print $2 }'; }
