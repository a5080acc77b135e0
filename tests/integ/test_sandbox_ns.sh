#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# The forwarder follows a namespace that is removed and created again (as a
# rootless engine's network namespace is when its last container stops and
# the next one starts). Each of 12 times: the namespace is deleted and made
# anew, and at once a real podman container is started inside it with an OCI
# prestart hook running `sluice-forward --wait`; with the wait, every one of
# those first containers connects through the forwarder.
source "$(dirname "$0")/lab.sh"
lab_up
lab_sandbox_up
lab_start_stamped_proxy "listen $SBX_PROXY" "allow good.test"

BNS=slb${HNS#slh}
LAB_EXTRA_NS+=("$BNS")
mkbr() {
	ip netns add "$BNS" && ip -n "$BNS" link set lo up
}
mkbr || lab_bail "ip netns add $BNS"
nsenter --net="/run/netns/$VNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" \
	--net rootless --netns "/run/netns/$BNS" "127.0.0.1:3131=$SBX_PROXY" \
	>>"$LAB_DIR/forward.err" 2>&1 &
FWD2=$!
LAB_PIDS+=($FWD2)
"$SLUICE_BUILD/sluice-forward" --wait "/run/netns/$BNS" 127.0.0.1:3131 --timeout 5 </dev/null ||
	lab_bail "sluice-forward listens in $BNS" "$(tail -5 "$LAB_DIR/forward.err")"

hooks=$LAB_DIR/hooks.d
mkdir -p "$hooks"
cat >"$hooks/sluice-wait.json" <<JSON
{
  "version": "1.0.0",
  "hook": {
    "path": "$SLUICE_BUILD/sluice-forward",
    "args": ["sluice-forward", "--wait", "/run/netns/$BNS", "127.0.0.1:3131", "--timeout", "10"]
  },
  "when": { "always": true },
  "stages": ["prestart"]
}
JSON

# first: the wait itself, without a container
t0=$(now)
"$SLUICE_BUILD/sluice-forward" --wait "/run/netns/$BNS" 127.0.0.1:3199 --timeout 1 </dev/null 2>/dev/null
rc=$?
expect_eq "--wait for a port nobody listens on fails after its timeout (exit 1)" 1 "$rc"
expect_ge "... not before it (1 s)" 0.9 "$(elapsed "$t0")"

# recreate_and_fetch NAME PATH [podman global options...]: delete the
# namespace, make it anew, and at once start container NAME in it fetching
# PATH through the forwarder; 0 when it was served.
recreate_and_fetch() {
	local c=$1 path=$2
	shift 2
	ip netns del "$BNS"
	mkbr || return 1
	LAB_CTRS+=("$c")
	code=$(lab_podman "$VNS" "$@" run --rm --name "$c" \
		--ulimit nofile=1024:1024 --ulimit nproc=1024:1024 -v /usr:/usr:ro \
		--network "ns:/run/netns/$BNS" "$LAB_IMAGE" \
		curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://127.0.0.1:3131 \
		"http://good.test/$path" 2>>"$LAB_DIR/podman.err")
	[ "$code" == 200 ]
}
served=0
for i in $(seq 12); do
	recreate_and_fetch "sbx-r$i-$$" "first$i" --hooks-dir "$hooks" && served=$((served + 1))
done
expect_eq "the first container after each of 12 re-creations connects (with the prestart wait)" \
	12 "$served"
expect_eq "... 12 rows, all stamped by the forwarder" 12 "$(logq 'path~/first' who~@rootless)"
expect_eq "... the forwarder followed the namespace (it is still running)" 0 \
	"$(kill -0 "$FWD2" 2>/dev/null; echo $?)"
expect_eq "... and moved its listener each time" 12 "$(grep -c 'listening in new namespace' "$LAB_DIR/forward.err")"

# for the record (not a check: it is a race): the same without the wait
served=0
for i in 1 2 3 4; do
	recreate_and_fetch "sbx-n$i-$$" "nowait$i" && served=$((served + 1))
done
echo "# without the prestart wait: $served of 4 first containers connected"
lab_done
