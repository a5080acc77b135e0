#!/bin/bash
# sluice wall denied: the NFLOG listener that shows a wall's refusals. A
# hand-written table that logs to group 7 and rejects, loaded only inside a
# network namespace this test creates; nobody's TCP and UDP 443 attempts
# there must come out as lines naming profile, reason, uid and destination.
# No traffic leaves that namespace (a veth pair with both ends inside it,
# no route out).
cd "$(dirname "$0")/../.." || exit 2
source tests/integ/lab.sh
NS=slwd$$
T=$(mktemp -d /tmp/sluice-wall-denied.XXXXXX)
trap 'kill "$lpid" 2>/dev/null; ip netns del "$NS" 2>/dev/null; rm -rf "$T"' EXIT
ip netns add "$NS" || lab_bail "ip netns add $NS"
S="$SLUICE_BUILD/sluice"
NETNS=/run/netns/$NS
DST=203.0.113.9
PY=/usr/bin/python3 # nobody may not reach root's own (pyenv) python
[ -x "$PY" ] || PY=python3
# not_ok_err NAME: not ok, with what the last command wrote to stderr
not_ok_err() { not_ok "$1" "stderr: $(cat "$T/err" 2>/dev/null)"; }
nsx() { ip netns exec "$NS" "$@"; }
nobody() { nsx setpriv --reuid 65534 --regid 65534 --clear-groups "$@"; }

nsx ip link set lo up &&
	nsx ip link add d0 type veth peer name d1 &&
	nsx ip addr add 203.0.113.1/24 dev d0 &&
	nsx ip link set d0 up &&
	nsx ip link set d1 up || lab_bail "set up $NS"
nsx nft -f - <<'EOF' || lab_bail "load the test table in $NS"
table inet sluice_test {
	chain output {
		type filter hook output priority filter;
		meta skuid 65534 meta l4proto tcp log group 7 prefix "sluice sandbox egress: " reject with tcp reset
		meta skuid 65534 udp dport 443 log group 7 prefix "sluice sandbox quic: " reject
	}
}
EOF

# listen ARGS...: start the listener in the background (stdout $T/out, stderr
# $T/err, pid $lpid) and wait up to 5 s for its "listening" line
listen() {
	: >"$T/out"
	: >"$T/err"
	$S wall denied "$@" >"$T/out" 2>"$T/err" &
	lpid=$!
	for _ in $(seq 50); do
		grep -q '^listening on nflog group' "$T/err" && return 0
		kill -0 "$lpid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
# reap: wait up to 12 s for the listener; its exit status in $lrc (124: killed)
reap() {
	for _ in $(seq 120); do
		kill -0 "$lpid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$lpid" 2>/dev/null; then
		kill "$lpid"
		wait "$lpid"
		lrc=124
	else
		wait "$lpid"
		lrc=$?
	fi
	lpid=
}
udp443() {
	nobody "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
try:
    s.sendto(b"x", (sys.argv[1], 443))
except OSError:
    pass
' "$DST"
}

# --- JSON: one TCP and one UDP refusal -------------------------------------
if listen --group 7 --netns "$NETNS" --count 2 --timeout 10 --json; then
	ok "the listener says it is listening"
else
	not_ok_err "the listener says it is listening"
fi
t0=$(date +%s%N)
nobody curl -s --max-time 3 "http://$DST:443/" >/dev/null
crc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$crc" = 7 ] && [ "$ms" -lt 2000 ] && ok "curl as nobody is refused at once (exit 7, $ms ms)" ||
	not_ok_err "curl as nobody is refused at once (exit $crc, $ms ms)"
udp443
reap
[ "$lrc" = 0 ] && ok "--count 2 exits 0" || not_ok_err "--count 2 exits 0 (exit $lrc)"
sed 's/^/# /' "$T/out"
check_json() {
	python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
assert len(rows) == 2, rows
tcp, udp = rows
for r in rows:
    assert r["profile"] == "sandbox" and r["uid"] == 65534, r
    assert r["dst"] == sys.argv[2] and r["dport"] == 443, r
    assert r["src"] == "203.0.113.1" and r["sport"] > 0, r
    assert r["time"].endswith("Z") and len(r["time"]) == 24, r
assert tcp["reason"] == "egress" and tcp["proto"] == "tcp", tcp
assert udp["reason"] == "quic" and udp["proto"] == "udp", udp
' "$T/out" "$DST"
}
check_json 2>"$T/err" && ok "two JSON lines: sandbox egress tcp and sandbox quic udp, uid 65534, $DST:443" ||
	not_ok_err "two JSON lines: sandbox egress tcp and sandbox quic udp, uid 65534, $DST:443"

# --- text, --count 1 -----------------------------------------------------------
if listen --group 7 --netns "$NETNS" --count 1 --timeout 10; then
	nobody curl -s --max-time 3 "http://$DST:443/" >/dev/null
	reap
else
	lrc=listen-failed
fi
line=$(cat "$T/out")
echo "# $line"
re='^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z sandbox egress uid=65534 tcp 203\.0\.113\.1:[0-9]+ -> 203\.0\.113\.9:443$'
[ "$lrc" = 0 ] && [[ $line =~ $re ]] && ok "text mode: one line, timestamp, profile, uid, addresses" ||
	not_ok_err "text mode: one line (exit $lrc): $line"

# --- SIGTERM, no traffic, bad options, a missing namespace --------------------
if listen --group 7 --netns "$NETNS"; then
	kill -TERM "$lpid"
	reap
else
	lrc=listen-failed
fi
[ "$lrc" = 0 ] && ok "SIGTERM exits 0" || not_ok_err "SIGTERM exits 0 ($lrc)"

if listen --group 7 --netns "$NETNS" --timeout 1; then
	reap
else
	lrc=listen-failed
fi
[ "$lrc" = 1 ] && ok "--timeout 1 with no traffic exits 1" || not_ok_err "--timeout 1 with no traffic exits 1 ($lrc)"

$S wall denied --group 70000 --netns "$NETNS" >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && grep -q 'bad --group' "$T/err" && ok "--group 70000 exits 2" ||
	not_ok_err "--group 70000 exits 2 (exit $rc)"
$S wall denied --netns "$NETNS" --timeout 1 >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 2 ] && ok "no --group exits 2" || not_ok_err "no --group exits 2 (exit $rc)"
timeout 5 $S wall denied --group 7 --netns "$T/nope" --timeout 1 >"$T/out" 2>"$T/err"
rc=$?
[ "$rc" = 3 ] && grep -q "wall: --netns $T/nope: no such file" "$T/err" &&
	ok "a --netns that does not exist fails (exit 3, says why)" ||
	not_ok_err "a --netns that does not exist fails (exit $rc)"
lab_done
