#!/bin/bash
# The host wall with real rules and real traffic, in the lab's host namespace
# only (--netns). The sandbox's process is matched by its cgroup v2 path, so
# every command that needs a cgroup (nft resolving `socket cgroupv2` paths,
# a client moving itself into a cgroup) runs in a mount namespace of its own
# with cgroup2 mounted at /sys/fs/cgroup (cgx); the machine's own mounts are
# not touched. Two projects' sandboxes (cgroups A and B, bands 41000 and
# 41200) each reach their own proxy listener on loopback and nothing else:
# not the origins, not other loopback services, not the other project's
# band, not a public resolver. A process outside both cgroups is the
# control. Refusals are logged to an NFLOG group and read back with `sluice
# wall denied`; `status` notices a cgroup that was recreated (the rule then
# matches nothing, which the test also shows); `sluice verify` in A passes.
source "$(dirname "$0")/lab.sh"
lab_up
command -v unshare >/dev/null && command -v nsenter >/dev/null ||
	lab_bail "unshare and nsenter (util-linux) are installed"

CGROOT=sluicet$$.slice
CGA=$CGROOT/vm-a.slice
CGB=$CGROOT/vm-b.slice
GROUP=5
# cgx CMD...: CMD in a mount namespace of its own with cgroup2 at /sys/fs/cgroup
cgx() { unshare -m sh -c 'mount -t cgroup2 none /sys/fs/cgroup && exec "$@"' cgx "$@"; }
# in_cg CG CMD...: CMD inside cgroup CG, in the lab's host namespace
in_cg() {
	local cg=$1
	shift
	cgx nsenter --net="/run/netns/$HNS" \
		sh -c 'echo $$ >"/sys/fs/cgroup/$0/cgroup.procs" && exec "$@"' "$cg" "$@"
}
# outside CMD...: the control, in the host namespace and this test's own cgroup
outside() { nsenter --net="/run/netns/$HNS" "$@"; }
cg_cleanup() {
	# kill whatever this test left in its cgroups (a backgrounded in_cg's pid
	# is its subshell's, not the server's), then remove them, deepest first
	cgx sh -c '
		for cg in "$@"; do
			[ -d "/sys/fs/cgroup/$cg" ] || continue
			echo 1 >"/sys/fs/cgroup/$cg/cgroup.kill" 2>/dev/null
			for _ in $(seq 50); do
				[ -z "$(cat "/sys/fs/cgroup/$cg/cgroup.procs")" ] && break
				sleep 0.1
			done
		done
		for cg in "$@"; do rmdir "/sys/fs/cgroup/$cg"; done' cg "$CGA" "$CGB" "$CGROOT" 2>/dev/null
}
trap 'rc=$?; cg_cleanup; (exit $rc); lab_teardown' EXIT
cgx mkdir -p "/sys/fs/cgroup/$CGA" "/sys/fs/cgroup/$CGB" || lab_bail "mkdir test cgroups (cgroup2)"

# resolvers: a local one (allowed) and one at an outside address (refused)
lab_bg "$HNS" "$PY" "$INTEG_DIR/dns.py" --log "$LAB_DIR/dns-local.jsonl" 127.0.0.1 53
lab_bg "$INS" "$PY" "$INTEG_DIR/dns.py" --log "$LAB_DIR/dns-out.jsonl" 203.0.113.10 53
# the host's own resolver (systemd-resolved's stub), which Lima's hostResolver asks
lab_bg "$HNS" "$PY" "$INTEG_DIR/dns.py" --log "$LAB_DIR/dns-stub.jsonl" 127.0.0.53 53
PROXY_ADDR=127.0.0.1 PROXY_PORT=41000 PROXY_URL=http://127.0.0.1:41000
# dns-listen: where doctor expects sluice-dns (the stand-in on 127.0.0.1:53)
lab_start_proxy "allow good.test" "allow 203.0.113.10" "listen 127.0.0.1:41200" "dns-listen 127.0.0.1:53"
wait_until 10 hx bash -c '</dev/tcp/127.0.0.1/41200' || lab_bail "sluice-proxy listens on 127.0.0.1:41200"
# a listener inside the sandbox's own cgroup, outside the band (a VM's own forwarded port)
in_cg "$CGA" "$PY" -m http.server --bind 127.0.0.1 9099 >/dev/null 2>&1 &
LAB_PIDS+=($!)
wait_until 10 hx bash -c '</dev/tcp/127.0.0.1/9099' || lab_bail "the sandbox's own listener on 127.0.0.1:9099"

S="$SLUICE_BUILD/sluice -c $CONF"
WA=(host --cgroup "$CGA" --port-base 41000 --log-group "$GROUP" --netns "/run/netns/$HNS")
WB=(host --cgroup "$CGB" --port-base 41200 --log-group "$GROUP" --netns "/run/netns/$HNS")

# code WHERE... -- URL [curl options]: "EXIT SECONDS HTTPCODE" of one curl
code() {
	local t0 c rc
	t0=$(now)
	c=$("$@" -s -o /dev/null -w '%{http_code}' --max-time 5 2>/dev/null)
	rc=$?
	echo "$rc $(elapsed "$t0") $c"
}
# expect_rst NAME RESULT: curl exit 7 (connection refused) within a second
expect_rst() {
	set -- "$1" $2
	if [ "$2" = 7 ] && is_num "$3" && awk -v s="$3" 'BEGIN{exit !(s < 1)}'; then ok "$1"; else
		not_ok "$1" "curl exit $2 after $3 s (code $4); want exit 7 within 1 s"; fi
}
# controls, before any wall: the sandbox's cgroup goes straight out
expect_eq "before the wall, a process in cgroup A reaches the origin directly" 200 \
	"$(in_cg "$CGA" curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://203.0.113.10/)"

run_rc() { "$@" >"$LAB_DIR/wall.out" 2>&1; echo $?; }
if [ "$(stat -f -c %T /sys/fs/cgroup)" != cgroup2fs ]; then
	expect_eq "apply host where /sys/fs/cgroup is not cgroup2 (this machine's own mounts) fails" 1 \
		"$(run_rc $S wall apply "${WA[@]}")"
	expect_re "... saying why" "needs cgroup2 mounted at /sys/fs/cgroup" "$(cat "$LAB_DIR/wall.out")"
fi
expect_eq "apply host for a cgroup that does not exist fails" 1 \
	"$(run_rc cgx $S wall apply host --cgroup "$CGROOT/nope.slice" --port-base 41000 --netns "/run/netns/$HNS")"
expect_re "... nft says why" "cgroup|No such file" "$(cat "$LAB_DIR/wall.out")"
expect_eq "... and nothing is loaded" "" "$(hx nft list tables)"

expect_eq "apply host for project A (cgroup $CGA, band 41000)" 0 "$(run_rc cgx $S wall apply "${WA[@]}")"
expect_eq "apply host for project B (cgroup $CGB, band 41200)" 0 "$(run_rc cgx $S wall apply "${WB[@]}")"
expect_eq "both tables are there" "table inet sluice_host_41000 table inet sluice_host_41200" \
	"$(hx nft list tables | sort | tr '\n' ' ' | sed 's/ $//')"
expect_eq "status A: as applied" 0 "$(run_rc cgx $S wall status "${WA[@]}")"

# the refusals' log: nflog group $GROUP, read in the lab's namespace
lab_denied_start "$HNS" "$GROUP"

expect_rst "A: direct to the origin is refused at once" \
	"$(code in_cg "$CGA" curl http://203.0.113.10/)"
expect_rst "A: direct HTTPS port too" "$(code in_cg "$CGA" curl http://203.0.113.10:443/)"
expect_eq "A: through its proxy listener (127.0.0.1:41000)" 200 \
	"$(in_cg "$CGA" curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://127.0.0.1:41000 http://good.test/host-a)"
expect_rst "A: a loopback service outside the band (127.0.0.1:80) is refused" \
	"$(code in_cg "$CGA" curl http://127.0.0.1:80/)"
expect_rst "A: project B's band (127.0.0.1:41200) is refused" \
	"$(code in_cg "$CGA" curl -x http://127.0.0.1:41200 http://good.test/a-via-b)"
expect_eq "A: its own listener outside the band (127.0.0.1:9099) is open" 200 \
	"$(in_cg "$CGA" curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:9099/)"
expect_eq "A: DNS to the local resolver is answered" answered "$(udp_probe in_cg "$CGA" -- 127.0.0.1 53 dns)"
expect_re "A: DNS to an outside resolver is refused" '^refused ' \
	"$(udp_probe in_cg "$CGA" -- 203.0.113.10 53 dns)"
expect_eq "... which answers the control outside the cgroups" answered \
	"$(udp_probe outside -- 203.0.113.10 53 dns)"
expect_eq "B: through its own listener (127.0.0.1:41200)" 200 \
	"$(in_cg "$CGB" curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://127.0.0.1:41200 http://good.test/host-b)"
expect_rst "B: project A's band (127.0.0.1:41000) is refused" \
	"$(code in_cg "$CGB" curl -x http://127.0.0.1:41000 http://good.test/b-via-a)"
expect_rst "B: direct to the origin is refused" "$(code in_cg "$CGB" curl http://203.0.113.10/)"
expect_eq "outside the cgroups: the origin directly (control)" 200 \
	"$(outside curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://203.0.113.10/)"
expect_eq "outside the cgroups: 127.0.0.1:80 (control)" 200 \
	"$(outside curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:80/)"
expect_eq "the proxy logged A's and B's requests" "1 1" \
	"$(logq path=/host-a) $(logq path=/host-b)"
expect_eq "... and neither cross-band request" "0 0" "$(logq path=/a-via-b) $(logq path=/b-via-a)"

# the log of refusals
d=$(lab_denied_stop)
expect_re "the refusal of A's direct request is logged" \
	'"profile":"host","reason":"egress".*"proto":"tcp".*"dst":"203.0.113.10","dport":80' "$d"
expect_re "... and of the outside resolver" '"reason":"dns".*"proto":"udp".*"dst":"203.0.113.10","dport":53' "$d"
expect_re "... and of the loopback service outside the band" \
	'"reason":"loopback".*"dst":"127.0.0.1","dport":80' "$d"
expect_re "... and of the other project's band" '"reason":"loopback".*"dport":41200' "$d"

# sluice verify from inside A
mkdir -p "$LAB_DIR/bin"
cp "$SLUICE_BUILD/sluice" "$LAB_DIR/bin/sluice" && chmod 755 "$LAB_DIR/bin" "$LAB_DIR/bin/sluice"
out=$(in_cg "$CGA" "$LAB_DIR/bin/sluice" verify --proxy 127.0.0.1:41000 --target 203.0.113.10 \
	--target6 2001:db8::10 --json 2>"$LAB_DIR/verify.err")
expect_eq "verify inside cgroup A exits 0" "0" "$?"
expect_re "... verdict pass" '"verdict":"pass"' "$out"
out=$(outside "$LAB_DIR/bin/sluice" verify --proxy 127.0.0.1:41000 --target 203.0.113.10 --json 2>/dev/null)
expect_eq "verify outside the cgroups exits 1 (control: no wall there)" "1" "$?"

# an untracked loopback flow would carry no mark past the input check: refused
hx nft -f - <<'NFT' || not_ok "a notrack table for loopback"
table inet sluicet_raw {
	chain out {
		type filter hook output priority raw; policy accept;
		oifname "lo" notrack
	}
}
NFT
expect_rst "A: with loopback untracked, 127.0.0.1:80 is refused" "$(code in_cg "$CGA" curl http://127.0.0.1:80/)"
hx nft delete table inet sluicet_raw
expect_eq "... and without the notrack table, the band is open again" 200 \
	"$(in_cg "$CGA" curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://127.0.0.1:41000 http://good.test/host-a2)"

# a recreated cgroup: the rule still names the old one and matches nothing
cgx rmdir "/sys/fs/cgroup/$CGB" && cgx mkdir "/sys/fs/cgroup/$CGB" ||
	not_ok "recreate cgroup B" "rmdir/mkdir failed"
expect_eq "status B after its cgroup was recreated exits 1" 1 "$(run_rc cgx $S wall status "${WB[@]}")"
expect_re "... and says so" "removed or recreated" "$(cat "$LAB_DIR/wall.out")"
expect_eq "... indeed B's new cgroup now goes straight out" 200 \
	"$(in_cg "$CGB" curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://203.0.113.10/)"
expect_eq "status A is unaffected" 0 "$(run_rc cgx $S wall status "${WA[@]}")"
expect_eq "apply B again" 0 "$(run_rc cgx $S wall apply "${WB[@]}")"
expect_eq "status B: as applied" 0 "$(run_rc cgx $S wall status "${WB[@]}")"
expect_rst "B: direct to the origin is refused again" "$(code in_cg "$CGB" curl http://203.0.113.10/)"

expect_eq "remove B" 0 "$(run_rc $S wall remove host --port-base 41200 --netns "/run/netns/$HNS")"
expect_eq "... A's table stays" "table inet sluice_host_41000" "$(hx nft list tables)"
expect_eq "status A still as applied" 0 "$(run_rc cgx $S wall status "${WA[@]}")"

# A Lima VM's host wall: limactl runs in the VM's cgroup and answers the guest's
# hostResolver (192.168.5.3) by asking the host's own resolver. Without a pinned
# resolver the wall lets it (any name: a DNS channel sluice-dns never sees);
# `sluice install` renders the wall with --resolver 127.0.0.1, sluice-dns.
expect_eq "A, no --resolver: the host's own resolver (127.0.0.53) answers the VM's cgroup" answered \
	"$(udp_probe in_cg "$CGA" -- 127.0.0.53 53 dns)"
dwall() { cgx $S doctor --before-proxy 2>&1 | grep -E "^[A-Z?a-z]+ +wall +sluice_host_41000 in [^ ]+ lets"; }
expect_re "... and doctor fails it, naming the range" \
	"^FAIL +wall +sluice_host_41000 in /run/netns/$HNS lets the VM ask 127.0.0.0/8 for names" "$(dwall)"
WL=(host --cgroup "$CGA" --port-base 41000 --log-group "$GROUP" --netns "/run/netns/$HNS" --resolver 127.0.0.1)
expect_eq "apply A as the Lima unit renders it (--resolver 127.0.0.1)" 0 "$(run_rc cgx $S wall apply "${WL[@]}")"
expect_re "A, pinned: the host's own resolver is refused" '^refused ' \
	"$(udp_probe in_cg "$CGA" -- 127.0.0.53 53 dns)"
expect_eq "... which still answers outside the cgroups (control)" answered \
	"$(udp_probe outside -- 127.0.0.53 53 dns)"
expect_eq "... and sluice-dns's address (127.0.0.1:53) is answered" answered \
	"$(udp_probe in_cg "$CGA" -- 127.0.0.1 53 dns)"
expect_re "... and doctor says the VM asks only sluice-dns" \
	"^ok +wall +sluice_host_41000 in /run/netns/$HNS lets the VM ask only sluice-dns" "$(dwall)"
lab_done
