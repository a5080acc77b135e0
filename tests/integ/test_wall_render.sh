#!/bin/bash
# The rendered walls are valid nft: each golden file (and the CLI's own
# sandbox render) passes `nft -c`, which parses and checks without loading,
# run inside a fresh network namespace anyway. The host profile's cgroup
# path must exist for nft to compile it: a private cgroup2 mount (unshare -m)
# gets that directory for the check, and loses it after.
cd "$(dirname "$0")/../.." || exit 2
source tests/integ/lab.sh
NS=slw$$
CG=sluice.slice/sluice-vm-41000.slice # as in tests/unit/test_wall.c
TMP=$(mktemp -d /tmp/sluice-wall.XXXXXX)
trap 'ip netns del "$NS" 2>/dev/null; rm -rf "$TMP"' EXIT
ip netns add "$NS" || lab_bail "ip netns add $NS"

check() { # NAME FILE
	local out
	if out=$(ip netns exec "$NS" unshare -m sh -c '
		mount -t cgroup2 cgroup2 /sys/fs/cgroup || exit 1
		top=/sys/fs/cgroup/${2%%/*}
		[ -d "$top" ] && had=1 || had=0
		mkdir -p "/sys/fs/cgroup/$2" || exit 1
		nft -c -f "$1"; rc=$?
		rmdir "/sys/fs/cgroup/$2"
		[ $had = 1 ] || rmdir "$top"
		exit $rc' sh "$2" "$CG" 2>&1); then
		ok "$1 passes nft -c"
	else
		not_ok "$1 passes nft -c" "$out"
	fi
}

for f in tests/unit/golden/wall_*.nft; do
	check "$(basename "$f")" "$f"
done

printf 'agent:100000:65536\n' >"$TMP/subuid"
if "$SLUICE_BUILD/sluice" wall render sandbox --user 65534 --subuid "$TMP/subuid" --gateway 192.168.5.2 \
	--gateway fd00::2 --resolver 192.168.5.3 --forwarder 10.88.0.1:3128 --port-base 41000 \
	>"$TMP/sandbox.nft"; then
	check "sluice wall render sandbox" "$TMP/sandbox.nft"
else
	not_ok "sluice wall render sandbox exits 0"
fi
printf 'table inet sluice_bad {\n\tchain c {\n\t\tbogus accept\n\t}\n}\n' >"$TMP/bad.nft"
if ip netns exec "$NS" nft -c -f "$TMP/bad.nft" 2>/dev/null; then
	not_ok "nft -c refuses a broken script"
else
	ok "nft -c refuses a broken script"
fi
if ip netns exec "$NS" nft list tables | grep -q .; then
	not_ok "nothing was loaded in $NS"
else
	ok "nothing was loaded in $NS"
fi
"$SLUICE_BUILD/sluice" wall apply sandbox 2>/dev/null
rc=$?
expect_eq "wall apply without --netns or --i-mean-this-host is refused (exit 2)" 2 "$rc"
lab_done
