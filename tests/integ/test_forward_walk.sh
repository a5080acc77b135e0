#!/bin/bash
# sluice-forward's --own listener names a client by its socket's cgroup, and
# only a cgroup inside an --engine-cgroup subtree can name a container or a
# build. So it searches only those subtrees for the id: a user who makes
# thousands of cgroups elsewhere (a delegated subtree) costs the forwarder
# nothing per connection, and its clients are as=user.
#
# Here: 5000 cgroups in a subtree of the test's own, outside the engine
# cgroup; a client in the one readdir lists last (a whole-tree walk opens
# every one before it). strace counts the forwarder's openat and getdents64
# for that one connection. The cgroups are removed at the end.
source "$(dirname "$0")/lab.sh"
lab_up
lab_start_stamped_proxy "allow good.test"

FWD=$SLUICE_BUILD/sluice-forward
PY3=/usr/bin/python3
NMANY=5000
CG2=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
	/proc/self/mountinfo | head -1)
[ -n "$CG2" ] && [ -d "$CG2" ] || lab_bail "a cgroup2 mount" "none in /proc/self/mountinfo"
command -v strace >/dev/null || lab_bail "strace is installed"
CG=$CG2/sluice-walk-$$
ENG=$CG/engine
CTR_ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
CG_CTR=$ENG/libpod-$CTR_ID.scope
CG_ENGUSER=$ENG/other            # inside the engine subtree, a plain cgroup
MANY=$CG/many
ENGINE=$LAB_DIR/engine.jsonl

cg_cleanup() {
	local d
	[ -d "$CG" ] || return 0
	# deepest first; the clients have exited, so every cgroup is empty
	find "$CG" -depth -type d -print0 2>/dev/null | xargs -0 -r rmdir 2>/dev/null
	[ -d "$CG" ] && echo "# left behind: $CG" >&2
	return 0
}
trap 'rc=$?; cg_cleanup; (exit $rc); lab_teardown' EXIT
mkdir -p "$CG_CTR" "$CG_ENGUSER" "$MANY" || lab_bail "mkdir test cgroups under $CG2"
# the many: one mkdir process, bounded
"$PY3" - "$MANY" "$NMANY" <<'PYEOF' || lab_bail "mkdir $NMANY cgroups"
import os, sys
for i in range(int(sys.argv[2])):
    os.mkdir(os.path.join(sys.argv[1], "u%05d" % i))
PYEOF
expect_eq "the test made $NMANY cgroups outside the engine subtree" "$NMANY" \
	"$(find "$MANY" -mindepth 1 -maxdepth 1 -type d | wc -l)"
# the one readdir gives last: a whole-tree walk opens all the others first
LAST=$("$PY3" -c 'import os, sys; print([e.name for e in os.scandir(sys.argv[1]) if e.is_dir()][-1])' "$MANY")
[ -n "$LAST" ] || lab_bail "the last of the many in readdir order"
CG_LAST=$MANY/$LAST
{
	printf '{"t":"2026-12-01T00:00:01.000Z","net":"vm","containers":[{"id":"%s","name":"c","project":null,"netmode":"host","addrs":[]}]}\n' "$CTR_ID"
} >"$ENGINE"
chmod 600 "$ENGINE"

nsenter --net="/run/netns/$HNS" "$FWD" --key "$STATE/stamp.key" --net vm \
	--engine-cgroup "/${ENG#"$CG2"/}" --engine-state "$ENGINE" \
	--own "127.0.0.1:3130=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward.err" 2>&1 &
FPID=$!
LAB_PIDS+=($FPID)
"$FWD" --wait "/run/netns/$HNS" 127.0.0.1:3130 --timeout 5 </dev/null ||
	lab_bail "sluice-forward listens" "$(cat "$LAB_DIR/forward.err")"

# cgcurl CGROUP PATH: curl from inside CGROUP, in $HNS, through the --own listener
cgcurl() {
	sh -c 'echo $$ >"$1/cgroup.procs" && exec nsenter --net="/run/netns/$2" \
		curl -s -o /dev/null -w "%{http_code}" --max-time 10 -x http://127.0.0.1:3130 "http://good.test$3"' \
		sh "$1" "$HNS" "$2" 2>&1
	true
}

# traced CGROUP PATH: cgcurl under strace -c of the forwarder; prints
# "CODE OPENAT GETDENTS64" (the forwarder's calls while serving it)
traced() {
	local out=$LAB_DIR/strace${2//\//_} code s pid
	strace -f -c -e trace=openat,getdents64 -o "$out" -p "$FPID" 2>"$out.err" &
	pid=$!
	wait_until 5 grep -q attached "$out.err" || { kill "$pid"; wait "$pid"; echo "no-attach"; return; }
	code=$(cgcurl "$1" "$2")
	sleep 0.2
	kill -INT "$pid"
	wait "$pid"
	s=$(awk '$NF == "openat" { o = $4 } $NF == "getdents64" { g = $4 } END { printf "%d %d", o, g }' "$out")
	echo "$code $s"
}

# control: a client right below the engine cgroup, named by it
expect_eq "a client in libpod-<id>.scope below the engine cgroup is served as container:<id>" \
	"200 container:$CTR_ID" "$(cgcurl "$CG_CTR" /w-ctr) $(logq path=/w-ctr --field as)"
expect_eq "a plain cgroup inside the engine subtree is user" "200 user" \
	"$(cgcurl "$CG_ENGUSER" /w-enguser) $(logq path=/w-enguser --field as)"

t0=$(now)
read -r code nopen ndents <<<"$(traced "$CG_LAST" /w-last)"
dt=$(elapsed "$t0")
expect_eq "a client in the last of $NMANY cgroups outside the engine subtree is served" 200 "$code"
expect_eq "... as user" user "$(logq path=/w-last --field as)"
echo "# the forwarder for that connection: openat $nopen, getdents64 $ndents (${dt}s with strace)"
expect_lt "... and the forwarder opened few directories for it (a whole-tree walk opens $NMANY)" 100 "$nopen"
expect_lt "... and read few (getdents64)" 200 "$ndents"
# a second fresh cgroup: each new id is a cache miss
read -r code nopen ndents <<<"$(traced "$MANY/u00007" /w-seven)"
expect_eq "another of them, a fresh id, is served as user" "200 user" "$code $(logq path=/w-seven --field as)"
expect_lt "... also with few openat" 100 "$nopen"
# the engine's containers are still found, with the many still there
read -r code nopen ndents <<<"$(sleep 1.1; traced "$CG_CTR" /w-ctr2)"
expect_eq "the container is still container:<id> (past the cache)" "200 container:$CTR_ID" \
	"$code $(logq path=/w-ctr2 --field as)"
expect_lt "... with few openat" 100 "$nopen"
expect_not_re "the forwarder reset no client" "reset" "$(cat "$LAB_DIR/forward.err")"
expect_eq "the forwarder is still running" 0 "$(kill -0 "$FPID" 2>/dev/null; echo $?)"
lab_done
