#!/bin/bash
# sluice-forward's --own listener: in its own namespace, each client is
# found by its socket (sock_diag) and named by that socket's cgroup v2:
# container:<id> (libpod-<id>.scope), build:<scope> (*buildah-*.scope) or
# user; the stamp carries it as as=, the proxy's row as "as". Those names
# count only right below an --engine-cgroup (here the test's own cgroups,
# made by root, the default --engine-uid) and, for a container, when the
# --engine-state snapshot of the forwarder's --net lists the id
# (test_forward_spoof.sh has the non-root user's side). A client whose
# socket is not in the forwarder's namespace is reset, never forwarded.
# --mark: the forwarder's upstream sockets carry a mark an nft rule admits.
#
# The forwarder runs with nsenter (ip netns exec would hide the cgroup
# mounts); the clients move themselves into test cgroups, then enter $HNS.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_stamped_proxy "allow good.test"

FWD=$SLUICE_BUILD/sluice-forward
MARK=0x5c1
CG2=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
	/proc/self/mountinfo | head -1)
[ -n "$CG2" ] && [ -d "$CG2" ] || lab_bail "a cgroup2 mount" "none in /proc/self/mountinfo"
CG=$CG2/sluice-test-$$
CTR_ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
CG_CTR=$CG/libpod-$CTR_ID.scope
CG_NESTED=$CG/machine.slice/libpod-$CTR_ID.scope/container/libpod-$(printf 'f%.0s' $(seq 64))
CG_BUILD=$CG/crun-buildah-buildah7.scope
CG_CONMON=$CG/libpod-conmon-$CTR_ID.scope
CG_OTHER=$CG/other
CG_DEEP=$CG/other/libpod-$CTR_ID.scope   # named like it, not right below an engine cgroup
UNKNOWN_ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
CG_UNKNOWN=$CG/libpod-$UNKNOWN_ID.scope  # right below, but no snapshot lists the id
ENGINE=$LAB_DIR/engine.jsonl

cg_cleanup() {
	local d
	[ -d "$CG" ] || return 0
	# deepest first; the clients have exited, so every cgroup is empty
	for d in $(find "$CG" -depth -type d 2>/dev/null); do
		rmdir "$d" 2>/dev/null
	done
}
trap 'rc=$?; cg_cleanup; (exit $rc); lab_teardown' EXIT
mkdir -p "$CG_CTR" "$CG_NESTED" "$CG_BUILD" "$CG_CONMON" "$CG_OTHER" "$CG_DEEP" "$CG_UNKNOWN" ||
	lab_bail "mkdir test cgroups under $CG2"
# the engine's snapshots: net vm has CTR_ID; another net has UNKNOWN_ID
{
	printf '{"t":"2026-12-01T00:00:00.000Z","net":"vm","containers":[]}\n'
	printf '{"t":"2026-12-01T00:00:01.000Z","net":"vm","containers":[{"id":"%s","name":"c","project":null,"netmode":"host","addrs":[]}]}\n' "$CTR_ID"
	printf '{"t":"2026-12-01T00:00:02.000Z","net":"other","containers":[{"id":"%s","name":"u","project":null,"netmode":"host","addrs":[]}]}\n' "$UNKNOWN_ID"
} >"$ENGINE"
chmod 600 "$ENGINE"

SNS=slc${HNS#slh}
ip netns add "$SNS" || lab_bail "ip netns add $SNS"
LAB_EXTRA_NS+=("$SNS")
ip -n "$SNS" link set lo up
nsenter --net="/run/netns/$HNS" "$FWD" --key "$STATE/stamp.key" --net vm --mark "$MARK" \
	--engine-cgroup "/${CG#"$CG2"/}" --engine-cgroup "/${CG#"$CG2"/}/machine.slice" --engine-state "$ENGINE" \
	--netns "/run/netns/$SNS" "127.0.0.1:3129=$PROXY_ADDR:$PROXY_PORT" \
	--own "127.0.0.1:3130=$PROXY_ADDR:$PROXY_PORT" --own "192.0.2.1:3132=$PROXY_ADDR:$PROXY_PORT" \
	>>"$LAB_DIR/forward.err" 2>&1 &
FPID=$!
LAB_PIDS+=($FPID)
"$FWD" --wait "/run/netns/$HNS" 127.0.0.1:3130 --timeout 5 </dev/null &&
	"$FWD" --wait "/run/netns/$SNS" 127.0.0.1:3129 --timeout 5 </dev/null ||
	lab_bail "sluice-forward listens" "$(cat "$LAB_DIR/forward.err")"

# cgcurl CGROUP PATH [ADDR:PORT]: curl from inside CGROUP, in $HNS, through the --own listener
cgcurl() {
	sh -c 'echo $$ >"$1/cgroup.procs" && exec nsenter --net="/run/netns/$2" \
		curl -s -o /dev/null -w "%{http_code}" --max-time 10 -x "http://$4" "http://good.test$3"' \
		sh "$1" "$HNS" "$2" "${3:-127.0.0.1:3130}" 2>&1
	true
}

expect_eq "a client in libpod-<id>.scope is served through --own" 200 "$(cgcurl "$CG_CTR" /cg-ctr)"
expect_eq "... stamped as container:<id>" "container:$CTR_ID" "$(logq path=/cg-ctr --field as)"
expect_eq "... who stays src@net" "127.0.0.1@vm" "$(logq path=/cg-ctr --field who)"
expect_eq "a client in crun-buildah-buildah7.scope is build:crun-buildah-buildah7" \
	"200 build:crun-buildah-buildah7" "$(cgcurl "$CG_BUILD" /cg-build) $(logq path=/cg-build --field as)"
expect_eq "a client in a plain cgroup is user" "200 user" \
	"$(cgcurl "$CG_OTHER" /cg-other) $(logq path=/cg-other --field as)"
expect_eq "a client in a libpod-conmon-*.scope is user, not a container" "200 user" \
	"$(cgcurl "$CG_CONMON" /cg-conmon) $(logq path=/cg-conmon --field as)"
expect_eq "a client deep inside a container's cgroup is named by the outermost libpod scope" \
	"200 container:$CTR_ID" "$(cgcurl "$CG_NESTED" /cg-nested) $(logq path=/cg-nested --field as)"
expect_eq "a libpod-<id>.scope not right below an engine cgroup is user" "200 user" \
	"$(cgcurl "$CG_DEEP" /cg-deep) $(logq path=/cg-deep --field as)"
expect_re "... and the forwarder says so" \
	"cgroup /${CG#"$CG2"/}/other/libpod-$CTR_ID\\.scope: named like a container or build but not right below an engine cgroup: as user" \
	"$(cat "$LAB_DIR/forward.err")"
expect_eq "a libpod-<id>.scope right below one, for an id only another net's snapshot lists, is user" \
	"200 user" "$(cgcurl "$CG_UNKNOWN" /cg-unknown) $(logq path=/cg-unknown --field as)"
expect_re "... and the forwarder says so" \
	"container ${UNKNOWN_ID:0:12} is not in the engine's latest snapshot of net vm: as user" \
	"$(cat "$LAB_DIR/forward.err")"
# the snapshot file changes: re-read (the cache keeps no such miss)
printf '{"t":"2026-12-01T00:00:03.000Z","net":"vm","containers":[{"id":"%s","name":"u","project":null,"netmode":"host","addrs":[]}]}\n' \
	"$UNKNOWN_ID" >>"$ENGINE"
expect_eq "... once a snapshot of net vm lists it, that container" "200 container:$UNKNOWN_ID" \
	"$(cgcurl "$CG_UNKNOWN" /cg-unknown2) $(logq path=/cg-unknown2 --field as)"
expect_eq "... and the one it dropped is user" "200 user" \
	"$(sleep 1.1; cgcurl "$CG_CTR" /cg-dropped) $(logq path=/cg-dropped --field as)"
chmod 622 "$ENGINE"
sleep 1.1 # past the cache of /cg-unknown2's cgroup
expect_eq "an engine state file others may write names no container" "200 user" \
	"$(cgcurl "$CG_UNKNOWN" /cg-writable) $(logq path=/cg-writable --field as)"
chmod 600 "$ENGINE"
printf '{"t":"2026-12-01T00:00:04.000Z","net":"vm","containers":[{"id":"%s","name":"c","project":null,"netmode":"host","addrs":[]}]}\n' \
	"$CTR_ID" >>"$ENGINE"
sleep 1.1 # past the cache of the cgroups above
code=$(nsenter --net="/run/netns/$HNS" curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
	-x http://127.0.0.1:3130 http://good.test/cg-root 2>&1; true)
expect_eq "a client in the root cgroup (this test) is user" "200 user" "$code $(logq path=/cg-root --field as)"
# the cache answers by id: alternate quickly between two cgroups
seen=
for i in 1 2 3; do
	cgcurl "$CG_CTR" "/alt-c$i" >/dev/null
	cgcurl "$CG_OTHER" "/alt-o$i" >/dev/null
	seen="$seen $(logq path=/alt-c$i --field as | cut -c1-10) $(logq path=/alt-o$i --field as)"
done
expect_eq "alternating cgroups within a second keep their own names" \
	" container: user container: user container: user" "$seen"

code=$(ip netns exec "$SNS" curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
	-x http://127.0.0.1:3129 http://good.test/cg-ns 2>&1; true)
expect_eq "a client through the namespace listener is served" 200 "$code"
expect_eq "... and its row has as null" "127.0.0.1@vm null" \
	"$(logq path=/cg-ns --field who) $(logq path=/cg-ns --field as)"
expect_eq "an unattributed row has as null" "unattributed null" \
	"$(pcode http://good.test/cg-direct >/dev/null; logq path=/cg-direct --field who) $(logq path=/cg-direct --field as)"

# the proxy verifies as= under the MAC: an independent signer (stamp.py)
BOOT=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')
st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" 10.88.0.9 vm "$BOOT" 1 --as build:handmade)
expect_re "stamp.py writes as= right after net=" '; net=vm; as=build:handmade; boot=' "$st"
pcurl -o /dev/null -H "Sluice-Stamp: $st" http://good.test/cg-signed
expect_eq "a stamp with as= signed elsewhere verifies and its row carries it" \
	"10.88.0.9@vm build:handmade" "$(logq path=/cg-signed --field who) $(logq path=/cg-signed --field as)"
st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" 10.88.0.9 vm "$BOOT" 2 --as user)
pcurl -o /dev/null -H "Sluice-Stamp: ${st/as=user/as=uses}" http://good.test/cg-forged
expect_eq "... one whose as= was changed after signing leaves the connection unattributed" \
	"unattributed null" "$(logq path=/cg-forged --field who) $(logq path=/cg-forged --field as)"

# a client whose socket is not in the forwarder's namespace: reset, not forwarded
rows=$(logq)
out=$(ix "$PY" - <<'PYEOF' 2>&1
import socket
try:
    # the reset may come before connect() has even returned
    s = socket.create_connection(("192.0.2.1", 3132), timeout=5)
    s.sendall(b"GET http://good.test/cg-away HTTP/1.1\r\nHost: good.test\r\n\r\n")
    d = s.recv(4096)
    print("eof" if not d else "data")
except ConnectionResetError:
    print("rst")
except socket.timeout:
    print("timeout")
PYEOF
)
expect_eq "a client the forwarder cannot find by its socket gets an RST" rst "$out"
sleep 0.2
expect_eq "... nothing reached the proxy" "$rows" "$(logq)"
lab_proxy_control "... nothing reached the proxy"
expect_re "... and the forwarder said why, in one line" \
	'attribute client 192\.0\.2\.2:[0-9]+: socket lookup: client socket not found: reset' \
	"$(cat "$LAB_DIR/forward.err")"

# --mark: an nft table in $HNS only lets marked connections reach the proxy
hx nft -f - <<NFT || not_ok "nft table for --mark"
table inet slmarktest {
	chain out {
		type filter hook output priority 0;
		ip daddr 127.0.0.1 tcp dport $PROXY_PORT meta mark != $MARK reject with tcp reset
	}
}
NFT
code=$(hx curl -s -o /dev/null -w '%{http_code} %{exitcode}' --max-time 5 -x "$PROXY_URL" \
	http://good.test/mark-direct 2>&1; true)
expect_eq "with the mark rule, a direct client is refused by the rule (connection refused)" "000 7" "$code"
expect_eq "... while one through the forwarder's own listener is served" "200 user" \
	"$(cgcurl "$CG_OTHER" /mark-own) $(logq path=/mark-own --field as)"
code=$(ip netns exec "$SNS" curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
	-x http://127.0.0.1:3129 http://good.test/mark-ns 2>&1; true)
expect_eq "... and one through its namespace listener too" 200 "$code"
# the control: the same forwarder without --mark is stopped by the rule
nsenter --net="/run/netns/$HNS" "$FWD" --key "$STATE/stamp.key" --net vm \
	"127.0.0.1:3133=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward-nomark.err" 2>&1 &
LAB_PIDS+=($!)
"$FWD" --wait "/run/netns/$HNS" 127.0.0.1:3133 --timeout 5 </dev/null
rows=$(logq)
code=$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://127.0.0.1:3133 \
	http://good.test/mark-none 2>&1; true)
expect_eq "... while a forwarder without --mark is refused by it (the client is reset)" "000" "$code"
expect_eq "... and nothing reached the proxy" "$rows" "$(logq)"
hx nft delete table inet slmarktest
# (after the table is gone: it refuses the control's own direct request)
lab_proxy_control "... and nothing reached the proxy"
expect_eq "the forwarder is still running" 0 "$(kill -0 "$FPID" 2>/dev/null; echo $?)"

# bad option values are usage errors
"$FWD" --key "$STATE/stamp.key" --net vm --mark 0 127.0.0.1:1=127.0.0.1:2 2>/dev/null
expect_eq "--mark 0 is a usage error (2)" 2 "$?"
"$FWD" --key "$STATE/stamp.key" --net vm --mark 0xg 127.0.0.1:1=127.0.0.1:2 2>/dev/null
expect_eq "--mark 0xg is a usage error (2)" 2 "$?"
"$FWD" --key "$STATE/stamp.key" --net vm --own 127.0.0.1:1 2>/dev/null
expect_eq "--own without =UPSTREAM is a usage error (2)" 2 "$?"
lab_done
