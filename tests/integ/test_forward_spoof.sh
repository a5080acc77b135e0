#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# A cgroup named after a container is not that container. On the vm's --own
# listener, a non-root user (nobody) with a delegated cgroup subtree makes
# libpod-<id of a real container> (and a *buildah-*.scope) inside it and
# moves itself there: its rows are as=user and an inject rule scoped to
# principal=container:<id> gives it nothing, while the real --network host
# container (whose cgroup podman made under /libpod_parent) gets the
# credential. A container is accepted only as a direct child of an engine
# cgroup (--engine-cgroup, default /libpod_parent and /machine.slice), owned
# with that parent by --engine-uid (default 0), and listed in the latest
# engine snapshot of the forwarder's --net (--engine-state, default
# engine.jsonl next to --key): a root-made libpod-<id> there for an id the
# engine does not have is user too, and so is the real container before any
# snapshot names it.
source "$(dirname "$0")/lab.sh"
lab_up
lab_tls_origin
lab_sandbox_up

CG2=$(awk '{ for (i = 7; i < NF; i++) if ($i == "-") { if ($(i + 1) == "cgroup2") print $5; break } }' \
	/proc/self/mountinfo | head -1)
[ -n "$CG2" ] && [ -d "$CG2" ] || lab_bail "a cgroup2 mount" "none in /proc/self/mountinfo"
DEL=$CG2/sluice-spoof-$$            # the user's delegated subtree
NOBODY=65534
FAKE_ID=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
FAKE=$CG2/libpod_parent/libpod-$FAKE_ID # root-made, where podman puts them, for no container
PUB=$(mktemp -d /tmp/sluice-spoof.XXXXXX)
chmod 755 "$PUB"
spoof_cleanup() {
	local d
	for d in $(find "$DEL" -depth -type d 2>/dev/null) "$FAKE"; do
		rmdir "$d" 2>/dev/null
	done
	rm -rf "$PUB"
}
trap 'rc=$?; spoof_cleanup; (exit $rc); lab_teardown' EXIT

# the real container, first: the inject rule names its id
ch=spoof-h-$$
sbx_ctr "$ch" --network host -v "$PUB:/pub:ro" -- sleep 300 >/dev/null || lab_bail "podman run --network host"
chid=$(podman inspect -f '{{.Id}}' "$ch")
[ ${#chid} = 64 ] || lab_bail "the container's id" "$chid"
expect_re "the real container's cgroup is podman's libpod_parent/libpod-<id>" \
	"^0::/libpod_parent/libpod-$chid\$" "$(sbx_exec "$ch" cat /proc/self/cgroup | grep '^0::')"

lab_write_conf "listen $SBX_PROXY" "intercept on" "allow api.test:9443" \
	"upstream-ca api.test $LAB_DIR/tls/ca.crt" \
	"inject ctr host=api.test:9443 path=/api header=Authorization prefix=\"Bearer \" env=SLUICE_LAB_TOKEN principal=container:$chid"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
sl key init >/dev/null 2>&1 || lab_bail "sluice key init"
export SLUICE_LAB_TOKEN=$LAB_TOKEN
lab_run_proxy
unset SLUICE_LAB_TOKEN
cp "$STATE/ca.crt" "$PUB/ca.crt" && chmod 644 "$PUB/ca.crt"
# the lab's forwarder: no engine options, so the defaults
lab_sandbox_forward

# the user's tool: in DELEGATED, make NAME, move there, say who and where, then fetch URL
cat >"$PUB/spoof.sh" <<'SH'
#!/bin/sh
# spoof.sh DELEGATED NAME URL PROXY CA
mkdir -p "$1/$2" && echo $$ >"$1/$2/cgroup.procs" || exit 3
printf '%s %s ' "$(id -u)" "$(sed -n 's/^0:://p' /proc/self/cgroup)"
exec curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$5" -x "http://$4" "$3"
SH
chmod 755 "$PUB/spoof.sh"
mkdir "$DEL" && chown "$NOBODY:$NOBODY" "$DEL" "$DEL/cgroup.procs" "$DEL/cgroup.subtree_control" \
	"$DEL/cgroup.threads" || lab_bail "a delegated cgroup for nobody under $CG2"
# ucurl NAME PATH [LISTENER]: as nobody, from $DEL/NAME (nobody makes it), in the vm
ucurl() {
	sh -c 'echo $$ >"$1/cgroup.procs" && exec nsenter --net="/run/netns/$2" \
		setpriv --reuid="$3" --regid="$3" --clear-groups "$4" "$1" "$5" "$6" "$7" "$8"' \
		sh "$DEL" "$VNS" "$NOBODY" "$PUB/spoof.sh" "$1" "https://api.test:9443$2" \
		"${3:-$SBX_OWN}" "$PUB/ca.crt" 2>&1
	true
}
# ccurl PATH: the real container through the --own listener
ccurl() {
	sbx_exec "$ch" curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert /pub/ca.crt \
		-x "http://$SBX_OWN" "https://api.test:9443$1" 2>&1
	true
}
# seen PATH: what the origin saw for PATH: requests, and how many carried the secret
seen() {
	local l
	l=$(grep -F "\"GET $1 HTTP/1.1\"" "$LAB_DIR/tls9443.jsonl")
	echo "$(grep -c . <<<"$l") $(grep -cF "$LAB_TOKEN" <<<"$l")"
}

# before any engine snapshot the real container is not known to be one
expect_eq "the real container before any engine snapshot: no credential (401)" 401 "$(ccurl /api?who=early)"
expect_eq "... its row is as=user, no rule" "user null" \
	"$(logq path=/api?who=early --field as) $(logq path=/api?who=early --field inject)"
sl engine snapshot --net podman >/dev/null || not_ok "sluice engine snapshot"
expect_eq "the real container once a snapshot lists it: the credential, 200" 200 "$(ccurl /api?who=ctr)"
expect_eq "... its row is as=container:<id> and names the rule" "container:$chid ctr" \
	"$(logq path=/api?who=ctr --field as) $(logq path=/api?who=ctr --field inject)"
expect_eq "... the origin is up and recording, and saw the secret once" "1 1" "$(seen /api?who=ctr)"

# nobody, in its own libpod-<real id> under its delegated subtree
out=$(ucurl "libpod-$chid" /api?who=spoof)
expect_eq "nobody in its self-made libpod-<real id>: no credential (401)" \
	"$NOBODY /sluice-spoof-$$/libpod-$chid 401" "$out"
expect_eq "... its row is as=user, no rule" "user null" \
	"$(logq path=/api?who=spoof --field as) $(logq path=/api?who=spoof --field inject)"
expect_eq "... the origin got the request, without the secret" "1 0" "$(seen /api?who=spoof)"
out=$(ucurl "libpod-$chid.scope" /api?who=spoof-scope)
expect_eq "... and in libpod-<real id>.scope: as=user, 401" "$NOBODY /sluice-spoof-$$/libpod-$chid.scope 401 user" \
	"$out $(logq path=/api?who=spoof-scope --field as)"
out=$(ucurl "crun-buildah-buildah9.scope" /api?who=spoof-build)
expect_eq "nobody in its self-made *buildah-*.scope: as=user, not a build" \
	"$NOBODY /sluice-spoof-$$/crun-buildah-buildah9.scope 401 user" \
	"$out $(logq path=/api?who=spoof-build --field as)"

# root-made, where podman puts containers, but for an id the engine does not have
mkdir "$FAKE" || lab_bail "mkdir $FAKE"
code=$(sh -c 'echo $$ >"$1/cgroup.procs" && exec nsenter --net="/run/netns/$2" curl -s -o /dev/null \
	-w "%{http_code}" --max-time 10 --cacert "$3" -x "http://$4" "https://api.test:9443/api?who=fake"' \
	sh "$FAKE" "$VNS" "$PUB/ca.crt" "$SBX_OWN" 2>&1; true)
expect_eq "root in libpod_parent/libpod-<id the engine does not have>: as=user, 401" "401 user" \
	"$code $(logq path=/api?who=fake --field as)"
expect_eq "the real container still gets the credential" "200 container:$chid" \
	"$(ccurl /api?who=ctr2) $(logq path=/api?who=ctr2 --field as)"

# a forwarder told that nobody's subtree is an engine cgroup: still refused while the
# engine uid is 0 (nobody owns it); accepted with --engine-uid nobody (the control)
own2=127.0.0.1:3134 own3=127.0.0.1:3135
nsenter --net="/run/netns/$VNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net podman \
	--engine-cgroup "/sluice-spoof-$$" --own "$own2=$SBX_PROXY" >>"$LAB_DIR/forward2.err" 2>&1 &
LAB_PIDS+=($!)
nsenter --net="/run/netns/$VNS" "$SLUICE_BUILD/sluice-forward" --key "$STATE/stamp.key" --net podman \
	--engine-cgroup "/sluice-spoof-$$" --engine-uid "$NOBODY" --engine-state "$STATE/engine.jsonl" \
	--own "$own3=$SBX_PROXY" >>"$LAB_DIR/forward3.err" 2>&1 &
LAB_PIDS+=($!)
"$SLUICE_BUILD/sluice-forward" --wait "/run/netns/$VNS" "$own2" --timeout 5 </dev/null &&
	"$SLUICE_BUILD/sluice-forward" --wait "/run/netns/$VNS" "$own3" --timeout 5 </dev/null ||
	lab_bail "the two extra forwarders listen" "$(cat "$LAB_DIR/forward2.err" "$LAB_DIR/forward3.err")"
out=$(ucurl "libpod-$chid" /api?who=uid0 "$own2")
expect_eq "--engine-cgroup naming nobody's subtree, engine uid 0: nobody's libpod-<id> is user" \
	"$NOBODY /sluice-spoof-$$/libpod-$chid 401 user" "$out $(logq path=/api?who=uid0 --field as)"
out=$(ucurl "libpod-$chid" /api?who=uidn "$own3")
expect_eq "... with --engine-uid $NOBODY the same cgroup is that container (the control)" \
	"$NOBODY /sluice-spoof-$$/libpod-$chid 200 container:$chid" "$out $(logq path=/api?who=uidn --field as)"

# who the credential was spent for, from the rows the proxy wrote: the real container alone
# (each row the rule was applied to counted; the spoofers' as=user rows had none)
out=$(sl log --by-rule --json | "$PY" -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print(r["rule"], r["principal"]["kind"], r["principal"]["id"], r["count"])')
want=$("$PY" -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) if l.strip() and json.loads(l).get("inject") == "ctr"))' "$NETLOG")
expect_eq "sluice log --by-rule: rule ctr, spent for the real container alone, on each of its rows" \
	"ctr container $chid $want" "$out"
expect_ge "... which are some (the control)" 2 "$want"

# bad option values are usage errors
F=$SLUICE_BUILD/sluice-forward
for bad in "--engine-cgroup libpod_parent" "--engine-cgroup /a/../b" "--engine-cgroup /a//b" \
	"--engine-cgroup /a/" "--engine-uid -1" "--engine-uid x" "--engine-uid 4294967295"; do
	# shellcheck disable=SC2086
	"$F" --key "$STATE/stamp.key" --net vm $bad --own 127.0.0.1:1=127.0.0.1:2 2>/dev/null
	expect_eq "$bad is a usage error (2)" 2 "$?"
done
lab_done
