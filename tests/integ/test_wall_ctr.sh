#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# The sandbox uid wall against a real container: in the lab's vm namespace
# (--netns), a --network host podman container running as subuid 100005 is
# refused at once going directly to an origin, yet reaches the proxy on the
# host gateway 192.168.5.2:3128 (inside the wall's port band 3000-3199); a
# root --network host container (outside the wall) still goes straight out;
# `sluice verify` run inside the subuid container exits 0. A bridged
# container, which reaches the origin and a vm service before the wall, is
# refused both after it (forward and input chains) and is served only
# through the forwarder. The band is exact: the subuid container is refused
# the host gateway's port 80, outside it.
source "$(dirname "$0")/lab.sh"
lab_up
lab_sandbox_up
lab_start_stamped_proxy "listen $SBX_PROXY" "allow good.test"
lab_sandbox_forward

# The vm routes the origins through the host namespace, which forwards them
# to inet (and inet knows the way back), so that without the wall a vm
# process reaches an origin directly.
vx ip route add 203.0.113.0/24 via 192.168.5.2 || lab_bail "route to the origins in the vm"
hx sysctl -qw net.ipv4.ip_forward=1 || lab_bail "forwarding in the host namespace"
ix ip route add 192.168.5.0/24 via 192.0.2.1 || lab_bail "route back to the vm in inet"

code=$(vx curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://203.0.113.10/)
expect_eq "control: without the wall a vm process reaches the origin directly" 200 "$code"

# The runner's snapshot dir is mode 0700: give the container a copy it can execute.
mkdir -p "$LAB_DIR/bin"
cp "$SLUICE_BUILD/sluice" "$LAB_DIR/bin/sluice" || lab_bail "copy sluice for the container"
chmod 755 "$LAB_DIR/bin" "$LAB_DIR/bin/sluice"

# a bridged container (its start makes the bridge, 10.88.0.1), and a
# service of the vm's own on every address
cb=wctr-b-$$
sbx_ctr "$cb" -v "$LAB_DIR/bin:/sbin2:ro" -- sleep 300 >/dev/null 2>"$LAB_DIR/ctr.err" ||
	lab_bail "podman run (bridged)" "$(cat "$LAB_DIR/ctr.err")"
lab_bg "$VNS" "$PY" -m http.server --bind 0.0.0.0 8099
wait_until 10 vx bash -c '</dev/tcp/10.88.0.1/8099' || lab_bail "a vm service on 10.88.0.1:8099"
# a bridged container serving on 8099, published on the vm's port 8088
cw=wctr-w-$$
sbx_ctr "$cw" -p 8088:8099 -- python3 -m http.server 8099 >/dev/null 2>"$LAB_DIR/ctr.err" ||
	lab_bail "podman run -p 8088:8099 (bridged server)" "$(cat "$LAB_DIR/ctr.err")"
aw=$(lab_ctr_addr "$cw")
wait_until 10 vx bash -c "</dev/tcp/$aw/8099" || lab_bail "the bridged server on $aw:8099"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# a container on a second podman network (its own bridge, podman1)
net2=sbxnet2-$$
LAB_NETS+=("$net2")
lab_podman "$VNS" network create "$net2" >/dev/null 2>"$LAB_DIR/net.err" ||
	lab_bail "podman network create $net2" "$(cat "$LAB_DIR/net.err")"
c2=wctr-n2-$$
sbx_ctr "$c2" --network "$net2" -- sleep 300 >/dev/null 2>"$LAB_DIR/ctr.err" ||
	lab_bail "podman run --network $net2" "$(cat "$LAB_DIR/ctr.err")"
gw2=$(podman network inspect -f '{{range .Subnets}}{{.Gateway}}{{end}}' "$net2" 2>/dev/null)
# n2curl URL: from the second network's container; prints "EXIT CODE"
n2curl() {
	local out
	out=$(sbx_exec "$c2" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" 2>/dev/null)
	echo "$? $out"
}
expect_eq "control: without the wall a container on a second network ($gw2) reaches the origin" "0 200" \
	"$(n2curl http://203.0.113.10/)"
expect_eq "control: ... and the vm's service at its gateway" "0 200" "$(n2curl "http://$gw2:8099/")"
# bcurl URL [curl options]: from the bridged container; prints "EXIT CODE"
bcurl() {
	local out
	out=$(sbx_exec "$cb" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" 2>/dev/null)
	echo "$? $out"
}
expect_eq "control: without the wall a bridged container reaches the origin directly" "0 200" \
	"$(bcurl http://203.0.113.10/)"
expect_eq "control: ... and the vm's service on 10.88.0.1:8099" "0 200" "$(bcurl http://10.88.0.1:8099/)"


printf 'nobody:100000:65536\n' >"$LAB_DIR/subuid"
chmod 644 "$LAB_DIR/subuid"
"$SLUICE_BUILD/sluice" -c "$CONF" wall apply sandbox --user nobody --subuid "$LAB_DIR/subuid" \
	--gateway 192.168.5.2 --port-base 3000 --forwarder "$SBX_FWD" \
	--log-group 8 --netns "/run/netns/$VNS" >"$LAB_DIR/wall.out" 2>&1 ||
	lab_bail "sluice wall apply sandbox --netns (vm)" "$(cat "$LAB_DIR/wall.out")"
expect_re "the sandbox table is in the vm namespace" 'table inet sluice_sandbox_3000' "$(vx nft list tables)"
expect_not_re "... and not in the host namespace" 'sluice_sandbox_3000' "$(hx nft list tables)"
lab_denied_start "$VNS" 8

cs=wctr-s-$$
cr=wctr-r-$$
# (not in $(...): sbx_ctr records the name for teardown in this shell)
sbx_ctr "$cs" --network host --user 100005:100005 -v "$LAB_DIR/bin:/sbin2:ro" -- sleep 300 \
	>/dev/null 2>"$LAB_DIR/ctr.err" ||
	lab_bail "podman run --network host --user 100005:100005" "$(cat "$LAB_DIR/ctr.err")"
sbx_ctr "$cr" --network host -- sleep 300 >/dev/null 2>"$LAB_DIR/ctr.err" ||
	lab_bail "podman run --network host (root)" "$(cat "$LAB_DIR/ctr.err")"
expect_eq "the subuid container runs as uid 100005" 100005 "$(sbx_exec "$cs" id -u 2>&1)"
hpid=$(podman inspect -f '{{.State.Pid}}' "$cs" 2>/dev/null)
expect_eq "... which is uid 100005 on the machine too (rootful, no user namespace)" 100005 \
	"$(awk '/^Uid:/{print $2}' "/proc/$hpid/status" 2>/dev/null)"

# cdirect CTR: curl http://203.0.113.10/ from inside CTR; prints "EXIT SECONDS CODE"
# (seconds as curl measured them, so podman exec's own start-up is not counted)
cdirect() {
	local out rc
	out=$(sbx_exec "$1" curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 \
		http://203.0.113.10/ 2>/dev/null)
	rc=$?
	set -- $out
	echo "$rc ${2:-9} ${1:-none}"
}

set -- $(cdirect "$cs")
expect_eq "subuid container: direct curl is refused (curl exit 7)" 7 "$1"
expect_lt "... at once" 1 "$2"
code=$(sbx_exec "$cs" curl -s -o /dev/null -w '%{http_code}' --max-time 5 \
	-x "http://$SBX_PROXY" http://good.test/ctr1 2>&1)
expect_eq "subuid container: through the proxy on $SBX_PROXY, good.test answers 200" 200 "$code"
expect_eq "... the proxy logged it" 1 "$(logq path=/ctr1 --count)"

set -- $(cdirect "$cr")
expect_eq "root container (not walled) still reaches the origin directly" "0 200" "$1 $3"

expect_eq "the bridged container going directly to the origin is refused (forward chain)" "7 000" \
	"$(bcurl http://203.0.113.10/)"
expect_eq "... and to the vm's own service (input chain)" "7 000" "$(bcurl http://10.88.0.1:8099/)"
expect_eq "... and to the proxy" "7 000" "$(bcurl -x "http://$SBX_PROXY" http://good.test/ctr-b-direct)"
expect_eq "... but is served through the forwarder" "0 200" \
	"$(bcurl -x "http://$SBX_FWD" http://good.test/ctr-b-fwd)"
expect_eq "... which stamped it" "$(lab_ctr_addr "$cb")@podman" "$(logq path=/ctr-b-fwd --field who)"
expect_eq "... and the direct attempt never reached the proxy" 0 "$(logq path=/ctr-b-direct --count)"

code=$(sbx_exec "$cs" curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://192.168.5.2:80/ 2>/dev/null)
expect_eq "subuid container: the host gateway outside the band (port 80) is refused" "7 000" "$? $code"
code=$(sbx_exec "$cr" curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://192.168.5.2:80/ 2>/dev/null)
expect_eq "... which answers the root container (control)" "0 200" "$? $code"

expect_eq "the second network's container is refused the origin (the vm routes nothing new)" "7 000" \
	"$(n2curl http://203.0.113.10/)"
expect_eq "... and the vm's service at its gateway (the default bridge pattern podman*)" "7 000" \
	"$(n2curl "http://$gw2:8099/")"

# the sandbox user and its own containers
expect_eq "nobody in the vm reaches its own bridged container's server ($aw:8099)" 200 \
	"$(vx "${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 "http://$aw:8099/")"
expect_eq "... and its port published on the vm (127.0.0.1:8088)" 200 \
	"$(vx "${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:8088/)"
d=$(lab_denied_stop)
expect_re "the subuid container's direct curl is logged with its uid" \
	'"profile":"sandbox","reason":"egress","uid":100005,"proto":"tcp",.*"dst":"203.0.113.10","dport":80' "$d"
expect_re "... and its try at the gateway's port 80" \
	'"reason":"egress","uid":100005,"proto":"tcp",.*"dst":"192.168.5.2","dport":80' "$d"
expect_re "the bridged container's refusals are logged (bridge)" \
	"\"reason\":\"bridge\",\"proto\":\"tcp\",\"src\":\"$(lab_ctr_addr "$cb")\".*\"dst\":\"10.88.0.1\",\"dport\":8099" "$d"

out=$(sbx_exec "$cs" /sbin2/sluice verify --target 203.0.113.10 --proxy "$SBX_PROXY" 2>&1)
rc=$?
expect_eq "sluice verify inside the subuid container exits 0" 0 "$rc"
[ "$rc" == 0 ] || echo "$out" | sed 's/^/# verify: /'
out=$(sbx_exec "$cb" /sbin2/sluice verify --target 203.0.113.10 --proxy "$SBX_FWD" \
	--proxy-direct "$SBX_PROXY" 2>&1)
rc=$?
expect_eq "sluice verify in the bridged container (through the forwarder; the proxy direct refused) exits 0" 0 "$rc"
[ "$rc" == 0 ] || echo "$out" | sed 's/^/# verify: /'
lab_done
