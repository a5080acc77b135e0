# run_lab.sh: what the hostile tests of `sluice run` (test_run_hostile,
# test_run_fs, test_run_share) share. Source it after lab.sh; call
# lab_run_project once lab_up and lab_unbound ran.

# lab_run_project BASE: the project they run: the config (intercept on,
# good.test granted, sluice-dns on 127.0.0.1:53 asking unbound), its CA and
# stamp key; SRUN (`sluice run` in the host namespace as an operator types
# it, the project's band at BASE); LAB_DIR as the working directory, where
# the scripts CMD runs are (it is under /tmp, and a run gives CMD a /tmp of
# its own with only its working directory in it); and the test hook naming
# each run's namespace in LAB_DIR/netns.list (other labs may run `sluice
# run` meanwhile: what is ours is told by our state dir and that list).
lab_run_project() {
	local out
	RUN_BASE=$1
	lab_write_conf "intercept on" "allow good.test" "nameserver 127.0.0.1" "dns-listen 127.0.0.1:53" \
		"dns-upstream $UNBOUND_ADDR" "dns-timeout 1"
	out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
	out=$(sl key init 2>&1) || lab_bail "sluice key init" "$out"
	SRUN=(nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=$RUN_BASE "$SLUICE_BUILD/sluice" -c "$CONF" run)
	cd "$LAB_DIR" || lab_bail "cd $LAB_DIR"
	export SLUICE_RUN_TEST_HOOK="echo \$SLUICE_RUN_NETNS >>$LAB_DIR/netns.list"
	GO=$LAB_DIR/go
}
srun() { "${SRUN[@]}" "$@"; }
# go NAME: a CMD waiting with `until_go NAME` goes on
go() { touch "$GO.$1"; }
until_go() { echo "while [ ! -e $GO.$1 ]; do sleep 0.05; done"; }

# forwarders_of STATE: the pids of the forwarders stamping with STATE's key
forwarders_of() { pgrep -x sluice-forward -a | grep -F -- "--key $1/stamp.key" | cut -d' ' -f1; }
# what runs of this lab's state dir left: namespaces, records, forwarders, the --allow grants
run_leftovers() {
	{
		sort -u "$LAB_DIR/netns.list" 2>/dev/null | while read -r n; do [ -e "$n" ] && echo "$n"; done
		for r in "$STATE"/runs/*/record; do sed -n 's|^id |/run/netns/sluice-|p' "$r" 2>/dev/null; done |
			while read -r n; do [ -e "$n" ] && echo "$n"; done
		ls "$STATE/runs" 2>/dev/null
		forwarders_of "$STATE" | sed 's/^/forwarder /'
		sl allow list 2>/dev/null | grep -Eo '(other|third)\.test' | sed 's/^/grant /'
	} | tr '\n' ' '
}
locked() { [ -e "$1" ] && ! flock -n "$1" true; }
# "proxy dns", "proxy ", " dns" or " ": the daemons of this lab's state dir up (their run files locked)
daemons_up() { echo "$(locked "$STATE/proxy.run" && echo proxy) $(locked "$STATE/dns.run" && echo dns)"; }
no_daemons() { [ "$(daemons_up)" == " " ]; }
SLEEP=20.$$ # CMD's sleep, told from any other lab's
nothing_runs() { [ -z "$(pgrep -x sleep -a | grep "sleep $SLEEP")$(forwarders_of "$STATE")" ]; }
