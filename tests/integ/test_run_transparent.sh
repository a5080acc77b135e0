#!/bin/bash
# test_run_transparent.sh: what a client that ignores the proxy variables
# finds inside `sluice run`. /etc/hosts in the run holds only the localhost
# lines, so no host entry of the machine's sidesteps sluice-dns: a name the
# machine's hosts file maps (here a bind-mounted one, in a mount namespace
# of the test's own) does not resolve in the run unless granted, and then
# through sluice-dns.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
lab_up
lab_tls_origin
lab_unbound 'local-data: "tls.test. 300 IN A 203.0.113.13"'

RUN_BASE=41400
DNSLOG=$LAB_DIR/state/dns.log
lab_write_conf "intercept on" "upstream-ca tls.test $LAB_DIR/tls/ca.crt" \
	"nameserver 127.0.0.1" "dns-listen 127.0.0.1:53" "dns-upstream $UNBOUND_ADDR" \
	"dns-timeout 1"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"
out=$(sl key init 2>&1) || lab_bail "sluice key init" "$out"
dnsq() { jq_ "$DNSLOG" "$@"; }

# The machine's hosts file, as the run would find it: a mount namespace of
# the test's own (slave: nothing mounted in it reaches the machine) with a
# hosts file naming lab hosts bind-mounted over /etc/hosts.
MACHINE_HOSTS=$LAB_DIR/machine-hosts
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost\n203.0.113.10 sneaky.test\n203.0.113.13 tls.test\n' >"$MACHINE_HOSTS"
SRUN=(unshare -m --propagation slave sh -c 'mount --bind "$0" /etc/hosts && exec "$@"' "$MACHINE_HOSTS"
	nsenter --net="/run/netns/$HNS" env SLUICE_PORT_BASE=$RUN_BASE "$SLUICE_BUILD/sluice" -c "$CONF" run)
srun() { "${SRUN[@]}" "$@"; }

out=$("${SRUN[@]:0:8}" cat /etc/hosts 2>&1)
expect_re "control: the run's parent sees the machine's hosts file with its lab names" "sneaky.test" "$out"
expect_eq "control: the machine's own /etc/hosts is untouched" "" "$(grep -l sneaky.test /etc/hosts)"

cat >"$LAB_DIR/names.sh" <<EOF
cat /etc/hosts
echo ---
getent hosts sneaky.test || echo "sneaky: none"
$PY -c 'import socket; print(socket.getaddrinfo("tls.test", 443, socket.AF_INET)[0][4][0], "tls.test")'
EOF

out=$(srun --allow tls.test:8443 -- sh -c "$(cat "$LAB_DIR/names.sh")" 2>"$LAB_DIR/run.err")
expect_eq "in the run /etc/hosts holds only the localhost lines" \
	"127.0.0.1 localhost|::1 localhost ip6-localhost ip6-loopback" "$(sed -n '1,/^---$/p' <<<"$out" | grep -v '^---$' | paste -sd'|')"
expect_re "... so a name only the machine's hosts file maps does not resolve" "sneaky: none" "$out"
expect_re "... and a granted one resolves through sluice-dns" "^203\.0\.113\.13 " "$(sed -n '/^---$/,$p' <<<"$out" | tail -1)"
expect_re "... which logged it" "allow" "$(dnsq name=tls.test type=A --field decision)"
expect_eq "... sneaky.test was asked of sluice-dns, and refused" "refuse" "$(dnsq name=sneaky.test type=A --field decision)"
lab_done
