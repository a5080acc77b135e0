#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# sluice install. It renders the units into the directory it names, and
# each passes `systemd-analyze verify` (with --prefix pointing at this
# build), while a unit with a missing binary or an unknown directive fails
# it (the control). It refuses a config the units could not hold (no
# `user`; for Lima no proxy listener on the band, no sluice-dns on 53).
# sluice-proxy and sluice-dns send READY=1 to $NOTIFY_SOCKET (a listener
# here records each datagram with its sender's credentials) only once
# they accept connections and run as `user`, STOPPING=1 on SIGTERM, and
# nothing from an instance that could not listen. Then the Lima boot script,
# run as root in the lab's vm namespace over a scratch root with this
# build's binaries, applies the sandbox and guard walls (`sluice wall status`
# says they hold), starts sluice-forward (listening, --wait), writes the
# proxy environment, the CA into the scratch trust store and the containers
# drop-in, and records the provision id, the SHA-256 of the script (the one
# in the lima.yaml entry too); nobody's request through the forwarder
# reaches the origin, stamped, while nobody's direct connection to the proxy
# is refused. A script whose wall cannot apply (a bad gateway) exits
# non-zero, stops the forwarder it had started, and records nothing. Last,
# under a real systemd (PID 1 of a podman container: run this file under
# the podman lock): the commands install prints start the units, the proxy
# answers as soon as start returns, runs as its user without capabilities,
# reloads, fails to start when it cannot listen, stops with its wall, and
# all come back after a reboot, the wall before network-pre.target; the
# Lima VM's unit does not start while its host wall cannot load; and the boot
# script there runs the forwarder as a unit of its own, stopped when a wall fails.
source "$(dirname "$0")/lab.sh"
lab_up
# the vm namespace, as Lima's network shows the host: vm 192.168.5.15, host
# 192.168.5.2 (lab_sandbox_up's layout, without its podman image: no containers here)
VNS=slv${HNS#slh}
ip netns add "$VNS" || lab_bail "ip netns add $VNS"
LAB_EXTRA_NS+=("$VNS")
# whatever the boot script started in the vm namespace goes with it
install_cleanup() {
	local p
	for p in $(ip netns pids "$VNS" 2>/dev/null); do
		kill -9 "$p" 2>/dev/null
	done
}
trap 'rc=$?; install_cleanup; (exit $rc); lab_teardown' EXIT
ip link add name "svv${HNS#slh}" netns "$VNS" type veth peer name "svg${HNS#slh}" netns "$HNS" ||
	lab_bail "vm veth pair"
vx ip link set lo up
vx ip addr add 192.168.5.15/24 dev "svv${HNS#slh}"
vx ip link set "svv${HNS#slh}" up
hx ip addr add 192.168.5.2/24 dev "svg${HNS#slh}"
hx ip link set "svg${HNS#slh}" up
command -v systemd-analyze >/dev/null || lab_bail "systemd-analyze is installed (systemd)"
command -v update-ca-certificates >/dev/null || lab_bail "update-ca-certificates (ca-certificates)"

export SLUICE_PORTS_REGISTRY=$LAB_DIR/ports
STATE=$LAB_DIR/state
LOGDIR=$LAB_DIR/log
NETLOG=$LOGDIR/network.log
CONF=$LAB_DIR/sluice.conf
mkdir -p "$LOGDIR"
chmod 755 "$STATE"
chown nobody:nogroup "$LOGDIR"
chmod 750 "$LOGDIR"
S="$SLUICE_BUILD/sluice"
# conf LINE...: the config every part uses, plus LINEs
conf() {
	{
		echo "listen 0.0.0.0:41000"
		echo "state $STATE"
		echo "log $NETLOG"
		echo "dns-listen 127.0.0.1:53"
		echo "dns-log $LOGDIR/dns.log"
		echo "dns-upstream 192.0.2.2"
		echo "intercept off"
		echo "allow good.test"
		printf '%s\n' "$@"
	} >"$CONF"
	chmod 644 "$CONF"
}
conf "user nobody"
BASE=$("$S" ports --project itest --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["base"])')
expect_eq "the project's band (a fresh registry)" 41000 "$BASE"
"$S" -c "$CONF" ca init >/dev/null 2>&1 || lab_bail "sluice ca init"
"$S" -c "$CONF" key init >/dev/null 2>&1 || lab_bail "sluice key init"
# the proxy reads the stamp keys as nobody once dropped
chgrp nogroup "$STATE/stamp.key" && chmod 640 "$STATE/stamp.key"

# ------------------------------------------------------------ rendering, verify

PREFIX=$LAB_DIR/prefix
mkdir -p "$PREFIX/bin"
for b in sluice sluice-proxy sluice-dns sluice-forward; do
	ln -s "$SLUICE_BUILD/$b" "$PREFIX/bin/$b"
done
printf '#!/bin/sh\nexit 1\n' >"$PREFIX/bin/limactl"
chmod 755 "$PREFIX/bin/limactl"
OUT=$LAB_DIR/out
out=$("$S" -c "$CONF" install --project itest --sandbox-vm lima --vm agent --vm-user daemon \
	--prefix "$PREFIX" --limactl "$PREFIX/bin/limactl" --out "$OUT" 2>&1)
expect_eq "sluice install --sandbox-vm lima exits 0" 0 $?
expect_re "it names the directory it rendered into" "^rendered into $OUT:" "$out"
expect_re "it prints the root commands (never runs them)" 'systemctl enable --now sluice-wall@egress.service sluice-dns.service sluice-proxy.service' "$out"
expect_re "... and how the Lima entry goes in" 'lima-provision.yaml.s$' "$(printf '%s' "$out" | grep -o "lima-provision.yaml.s")"
FILES="sluice-proxy.service sluice-dns.service sluice-wall@.service sluice-wall@egress.service.d/sluice.conf
sluice-wall@host.service.d/sluice.conf sluice-lima@.service lima-provision.sh lima-provision.yaml"
missing=
for f in $FILES; do [ -s "$OUT/$f" ] || missing="$missing $f"; done
expect_eq "every file is rendered" "" "$missing"
expect_re "ExecStart runs the --prefix binary on the config, absolute" \
	"^ExecStart=$PREFIX/bin/sluice-proxy -c $CONF\$" "$(grep ^ExecStart= "$OUT/sluice-proxy.service")"
expect_eq "sluice-proxy is Type=notify, root until its own drop" "Type=notify User=root" \
	"$(grep -E '^(Type|User)=' "$OUT/sluice-proxy.service" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "sluice-dns keeps CAP_NET_BIND_SERVICE for 53, the proxy on 41000 does not" \
	"yes no" "$(grep -q 'CAP_NET_BIND_SERVICE' "$OUT/sluice-dns.service" && echo yes) $(grep -q 'CAP_NET_BIND_SERVICE' "$OUT/sluice-proxy.service" && echo yes || echo no)"
expect_eq "ReadWritePaths: the state dir and the log's" "ReadWritePaths=$STATE $LOGDIR" \
	"$(grep ^ReadWritePaths= "$OUT/sluice-proxy.service")"
expect_re "under /tmp no PrivateTmp (it would hide the paths)" '^# no PrivateTmp' \
	"$(grep PrivateTmp "$OUT/sluice-proxy.service")"
expect_eq "the egress wall's drop-in names the proxy's user" 'Environment="SLUICE_WALL_ARGS=--user nobody"' \
	"$(grep ^Environment= "$OUT/sluice-wall@egress.service.d/sluice.conf")"
expect_re "the VM's host wall pins its DNS to sluice-dns (--resolver 127.0.0.1; test_wall_host shows why)" \
	'^Environment="SLUICE_WALL_ARGS=--cgroup [^ ]+ --resolver 127\.0\.0\.1"$' \
	"$(grep ^Environment= "$OUT/sluice-wall@host.service.d/sluice.conf")"

# verify U: systemd-analyze verify's exit status and everything it printed
verify() {
	local o rc
	o=$(systemd-analyze verify "$1" 2>&1)
	rc=$?
	echo "$rc${o:+ $o}"
}
for u in sluice-proxy.service sluice-dns.service sluice-wall@egress.service \
	sluice-wall@host.service sluice-lima@agent.service; do
	expect_eq "systemd-analyze verify $u: clean" 0 "$(verify "$OUT/$u")"
done
# the controls: the same verify fails a unit that could not start, and warns
BAD=$LAB_DIR/bad
mkdir -p "$BAD"
sed "s|^ExecStart=.*|ExecStart=$PREFIX/bin/no-such-daemon|" "$OUT/sluice-proxy.service" >"$BAD/sluice-proxy.service"
cp "$OUT/sluice-wall@.service" "$BAD/"
cp -r "$OUT/sluice-wall@egress.service.d" "$BAD/"
v=$(verify "$BAD/sluice-proxy.service")
expect_re "control: a unit whose ExecStart is missing fails verify" '^1 .*no-such-daemon' "$v"
sed 's/^NoNewPrivileges=yes/NoNewPrivilege=yes/' "$OUT/sluice-dns.service" >"$BAD/sluice-dns.service"
v=$(verify "$BAD/sluice-dns.service")
expect_re "control: a misspelt directive is reported (so a clean run means none)" "Unknown key 'NoNewPrivilege'" "$v"
sx=$(systemd-analyze security --offline=yes "$OUT/sluice-proxy.service" 2>&1 | tail -1)
echo "# sluice-proxy.service: $sx"
expect_re "systemd-analyze security rates sluice-proxy.service OK" 'exposure level .*: [0-9.]+ OK' "$sx"

# rendered again: the same bytes (a pure function of its inputs)
"$S" -c "$CONF" install --project itest --sandbox-vm lima --vm agent --vm-user daemon \
	--prefix "$PREFIX" --limactl "$PREFIX/bin/limactl" --out "$LAB_DIR/out2" >/dev/null 2>&1
expect_eq "rendered twice, the files are the same" "" "$(diff -r "$OUT" "$LAB_DIR/out2" 2>&1)"
# without a VM: no Lima files, and the Lima files of an earlier render removed
"$S" -c "$CONF" install --project itest --prefix "$PREFIX" --out "$LAB_DIR/out2" >/dev/null 2>&1
expect_eq "--sandbox-vm none: the four host files only" \
	"sluice-dns.service sluice-proxy.service sluice-wall@.service sluice-wall@egress.service.d/sluice.conf" \
	"$(cd "$LAB_DIR/out2" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ' | sed 's/ $//')"
"$S" -c "$CONF" install --project itest --prefix "$PREFIX" >/dev/null 2>&1
expect_eq "by default into STATE/install" yes "$([ -s "$STATE/install/sluice-proxy.service" ] && echo yes)"

# what it refuses
conf
out=$("$S" -c "$CONF" install --project itest --out "$LAB_DIR/out3" 2>&1)
expect_eq "no user in the config: refused (exit 1)" 1 $?
expect_re "... naming why" 'has no `user`.*egress wall' "$out"
conf "user nobody"
sed -i 's/^listen .*/listen 127.0.0.1:3128/' "$CONF"
out=$("$S" -c "$CONF" install --project itest --sandbox-vm lima --vm-user daemon --out "$LAB_DIR/out3" 2>&1)
expect_re "lima without a proxy listener in the band: refused" 'add `listen 127.0.0.1:41000`' "$out"
conf "user nobody"
sed -i 's/^dns-listen .*/dns-listen 127.0.0.1:5300/' "$CONF"
out=$("$S" -c "$CONF" install --project itest --sandbox-vm lima --vm-user daemon --out "$LAB_DIR/out3" 2>&1)
expect_re "lima without sluice-dns on 53: refused" 'add `dns-listen 127.0.0.1:53`' "$out"
expect_eq "... and nothing rendered" no "$([ -e "$LAB_DIR/out3/sluice-proxy.service" ] && echo yes || echo no)"
conf "user nobody"

# ------------------------------------------------------------ sd_notify

# a NOTIFY_SOCKET: one JSON line per datagram, with the sender's pid and uid
# and whether each ADDR:PORT given accepted a TCP connection when it came
NOTIFY_PY='
import json, os, socket, struct, sys
path, out, probes = sys.argv[1], sys.argv[2], sys.argv[3:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o777)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.settimeout(120)
open(out + ".ready", "w").close()
def probe(a):
    h, p = a.rsplit(":", 1)
    try:
        socket.create_connection((h, int(p)), timeout=1).close()
        return True
    except OSError:
        return False
while True:
    try:
        msg, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    except socket.timeout:
        break
    pid = uid = -1
    for lvl, typ, data in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_CREDENTIALS:
            pid, uid, _ = struct.unpack("iII", data[:12])
    row = {"msg": msg.decode(), "pid": pid, "uid": uid, "accepting": all(probe(a) for a in probes)}
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
    if msg.startswith(b"STOPPING"):
        break
'
mkdir -p "$LAB_DIR/notify"
chmod 755 "$LAB_DIR/notify"
# notify_listen NAME ADDR:PORT: a listener at $LAB_DIR/notify/NAME.sock, records in NAME.jsonl
notify_listen() {
	rm -f "$LAB_DIR/notify/$1.sock" "$LAB_DIR/notify/$1.jsonl.ready"
	: >"$LAB_DIR/notify/$1.jsonl"
	hx "$PY" -c "$NOTIFY_PY" "$LAB_DIR/notify/$1.sock" "$LAB_DIR/notify/$1.jsonl" "$2" &
	NOTIFY_PID=$!
	LAB_PIDS+=($NOTIFY_PID)
	wait_until 5 test -e "$LAB_DIR/notify/$1.jsonl.ready" || lab_bail "the notify listener $1 binds"
}
nq() { jq_ "$LAB_DIR/notify/$1.jsonl" "${@:2}"; }

notify_listen proxy 127.0.0.1:41000
PROXY_NOTIFY_PID=$NOTIFY_PID
# ip netns exec, not hx (a function: its pid would be a subshell's)
ip netns exec "$HNS" env NOTIFY_SOCKET="$LAB_DIR/notify/proxy.sock" "$SLUICE_BUILD/sluice-proxy" \
	-c "$CONF" 2>"$LAB_DIR/proxy.err" &
PROXY_PID=$!
wait_until 10 test "$(nq proxy msg=READY=1 --count)" -ge 1
expect_eq "sluice-proxy: one READY=1" 1 "$(nq proxy msg=READY=1 --count)"
expect_eq "... from the proxy's own pid" "$PROXY_PID" "$(nq proxy msg=READY=1 --field pid)"
expect_eq "... sent as nobody: after the drop" 65534 "$(nq proxy msg=READY=1 --field uid)"
expect_eq "... when 127.0.0.1:41000 already accepted connections" true "$(nq proxy msg=READY=1 --field accepting)"
# the control for "nothing from an instance that cannot listen": a second
# proxy on the same port, with a listener of its own
notify_listen proxy2 127.0.0.1:41000
hx env NOTIFY_SOCKET="$LAB_DIR/notify/proxy2.sock" "$SLUICE_BUILD/sluice-proxy" -c "$CONF" \
	2>"$LAB_DIR/proxy2.err"
expect_eq "a second sluice-proxy on a taken port exits 1" 1 $?
expect_re "... at its listener" 'listen 0.0.0.0:41000' "$(cat "$LAB_DIR/proxy2.err")"
expect_eq "... and sent no READY=1" 0 "$(nq proxy2 msg=READY=1 --count)"
kill "$NOTIFY_PID" 2>/dev/null

notify_listen dns 127.0.0.1:53
ip netns exec "$HNS" env NOTIFY_SOCKET="$LAB_DIR/notify/dns.sock" "$SLUICE_BUILD/sluice-dns" \
	-c "$CONF" 2>"$LAB_DIR/dns.err" &
DNS_PID=$!
LAB_PIDS+=($DNS_PID)
wait_until 10 test "$(nq dns msg=READY=1 --count)" -ge 1
expect_eq "sluice-dns: one READY=1, from its pid, as nobody" "1 $DNS_PID 65534" \
	"$(nq dns msg=READY=1 --count) $(nq dns msg=READY=1 --field pid) $(nq dns msg=READY=1 --field uid)"
expect_eq "... when 127.0.0.1:53 (TCP) already accepted connections" true "$(nq dns msg=READY=1 --field accepting)"
kill "$DNS_PID"
wait_until 5 test "$(nq dns msg=STOPPING=1 --count)" -ge 1
expect_eq "sluice-dns on SIGTERM: STOPPING=1" 1 "$(nq dns msg=STOPPING=1 --count)"
wait "$DNS_PID" 2>/dev/null
# the proxy keeps running for the boot script's forwarder below; its STOPPING=1 at the end

# ------------------------------------------------------------ the Lima boot script

SCRIPT=$OUT/lima-provision.sh
R=$LAB_DIR/root
mkdir -p "$R/etc/sluice"
install -m 0600 "$STATE/stamp.key" "$R/etc/sluice/stamp.key"
printf 'nobody:100000:65536\n' >"$R/etc/subuid"
# the guest's ca-certificates.conf, so its bundle holds the system roots too
[ -f /etc/ca-certificates.conf ] && cp /etc/ca-certificates.conf "$R/etc/"
# resolv.conf as a guest with systemd-resolved has it, resolved stopped here
ln -s ../run/systemd/resolve/stub-resolv.conf "$R/etc/resolv.conf"
# boot [SCRIPT]: run the boot script as Lima would (root, LIMA_CIDATA_USER), in the vm namespace
boot() {
	nsenter --net="/run/netns/$VNS" env SLUICE_ROOT="$R" SLUICE_BIN="$SLUICE_BUILD" \
		SLUICE_LAUNCH=direct LIMA_CIDATA_USER=nobody sh "${1:-$SCRIPT}" >"$LAB_DIR/boot.out" 2>&1
}
vS() { vx "$S" -c "$R/run/sluice/state/sluice.conf" "$@"; }
SANDBOX_ARGS=(--user nobody --subuid "$R/etc/subuid" --gateway 192.168.5.2 --resolver 192.168.5.2
	--forwarder 10.88.0.1:41000 --port-base 41000)
GUARD_ARGS=(--gateway 192.168.5.2 --mark 0x5300a028 --port-base 41000)

expect_eq "control: no wall in the vm namespace before the boot script" "" "$(vx nft list tables 2>&1 | grep sluice_)"
boot
expect_eq "the boot script exits 0" 0 "$?"
[ -s "$R/run/sluice/state/provision" ] || sed 's/^/# boot: /' "$LAB_DIR/boot.out"
out=$(vS wall status sandbox "${SANDBOX_ARGS[@]}" 2>&1)
expect_eq "sluice wall status sandbox in the vm namespace: it holds" "0 table inet sluice_sandbox_41000: as applied" "$? $out"
out=$(vS wall status guard "${GUARD_ARGS[@]}" 2>&1)
expect_eq "sluice wall status guard: it holds" "0 table inet sluice_guard_41000: as applied" "$? $out"
"$SLUICE_BUILD/sluice-forward" --wait "/run/netns/$VNS" 127.0.0.1:41000 --timeout 5
expect_eq "sluice-forward listens on 127.0.0.1:41000 in the vm (--wait)" 0 $?
"$SLUICE_BUILD/sluice-forward" --wait "/run/netns/$VNS" 10.88.0.1:41000 --timeout 5
expect_eq "... and on podman's bridge address 10.88.0.1:41000" 0 $?

REC=$R/run/sluice/state/provision
id=$(sha256sum <"$SCRIPT" | cut -d' ' -f1)
expect_eq "the provision record's id is the script's SHA-256" "id $id" "$(grep '^id ' "$REC")"
expect_eq "... the one the lima.yaml entry names" "# sluice-provision $id" "$(head -1 "$OUT/lima-provision.yaml")"
expect_eq "... and the yaml's script is the script, byte for byte" True \
	"$("$PY" -c 'import sys, yaml; d = yaml.safe_load(open(sys.argv[1])); print(d["provision"][0]["mode"] == "system" and d["provision"][0]["script"] == open(sys.argv[2]).read())' "$OUT/lima-provision.yaml" "$SCRIPT")"
expect_eq "the record names both walls" "wall sluice_sandbox_41000 wall sluice_guard_41000" \
	"$(grep '^wall ' "$REC" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "the record is world-readable (doctor reads it unprivileged)" 644 "$(stat -c %a "$REC")"
expect_eq "no systemd-resolved running: the guest's resolv.conf, a link before, names sluice-dns alone" \
	"file nameserver 192.168.5.2" \
	"$([ -L "$R/etc/resolv.conf" ] && echo link || echo file) $(grep -v '^#' "$R/etc/resolv.conf" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... resolved's drop-in makes sluice-dns its only upstream, for every name" \
	"[Resolve] DNS=192.168.5.2 Domains=~. LLMNR=no MulticastDNS=no" \
	"$(grep -v '^#' "$R/etc/systemd/resolved.conf.d/90-sluice.conf" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... and the record says which" "dns 192.168.5.2 resolv.conf" "$(grep '^dns ' "$REC")"
FWD=$(awk '$1 == "pid" { print $2 }' "$REC")
expect_eq "the record's forwarder pid is sluice-forward" "$(readlink -f "$SLUICE_BUILD/sluice-forward")" \
	"$(readlink "/proc/$FWD/exe" 2>/dev/null)"
LAB_PIDS+=($FWD)

# sluice doctor reads the record back (from the host, the vm's namespace named;
# --before-proxy: every check but the two daemons', which test_doctor.sh covers)
doc() { hx "$S" -c "$CONF" doctor --before-proxy --provision "${1:-$REC}" --netns "/run/netns/$VNS" 2>&1; }
out=$(doc)
code=$?
expect_eq "sluice doctor with the provision record: exit 0" 0 "$code"
expect_re "... both walls loaded" "ok +provision +wall sluice_sandbox_41000 is loaded.*ok +provision +wall sluice_guard_41000 is loaded" "$(echo $out)"
expect_re "... the forwarder listening on both addresses" "ok +provision +forwarder 127.0.0.1:41000 listens.*ok +provision +forwarder 10.88.0.1:41000 listens" "$(echo $out)"
expect_re "... and the id is the boot script rendered now" "ok +provision +id ${id:0:12}\.\.\. is the boot script rendered now" "$out"
sed "s/^id .*/id $(printf '%064d' 0)/" "$REC" >"$LAB_DIR/provision.other"
out=$(doc "$LAB_DIR/provision.other")
code=$?
expect_eq "a record of another script: doctor exits 1" 1 "$code"
expect_re "... naming both ids" "FAIL +provision +the sandbox applied 000000000000\.\.\., the boot script rendered now is ${id:0:12}" "$out"
out=$(doc "$LAB_DIR/no-such-record")
expect_re "a record that is not there: the boot script did not apply" "FAIL +provision .*missing: the boot script did not apply" "$out"

ENVD=$R/etc/environment.d/90-sluice-proxy.conf
expect_eq "environment.d: the proxy, both cases" \
	"HTTP_PROXY=http://127.0.0.1:41000 http_proxy=http://127.0.0.1:41000 HTTPS_PROXY=http://127.0.0.1:41000 https_proxy=http://127.0.0.1:41000" \
	"$(grep -iE '^https?_proxy=' "$ENVD" | tr '\n' ' ' | sed 's/ $//')"
expect_eq "... and NO_PROXY, both cases" "NO_PROXY=localhost,127.0.0.1,::1,192.168.5.2 no_proxy=localhost,127.0.0.1,::1,192.168.5.2" \
	"$(grep -i '^no_proxy=' "$ENVD" | tr '\n' ' ' | sed 's/ $//')"
# every variable `sluice ca show` prints, pointing at the guest's own files
miss=
for v in $("$S" -c "$CONF" ca show | sed -n 's/^export \([A-Z_]*\)=.*/\1/p'); do
	grep -q "^$v=$R/" "$ENVD" || miss="$miss $v"
done
expect_eq "environment.d has every CA variable sluice ca show prints, at the guest's paths" "" "$miss"
expect_eq "profile.d exports the same lines" "$(sed 's/^/export /' "$ENVD")" "$(cat "$R/etc/profile.d/90-sluice-proxy.sh")"
CAF=$R/usr/local/share/ca-certificates/sluice-ca.crt
BUNDLE=$R/etc/ssl/certs/ca-certificates.crt
expect_eq "the CA in the guest's trust store is STATE/ca.crt" "" "$(cmp "$STATE/ca.crt" "$CAF" 2>&1)"
expect_eq "the guest's bundle (update-ca-certificates) verifies the CA" "$STATE/ca.crt: OK" \
	"$(openssl verify -CAfile "$BUNDLE" "$STATE/ca.crt" 2>&1)"
expect_ge "... and still holds the system roots" 2 "$(grep -c 'BEGIN CERTIFICATE' "$BUNDLE")"
CC=$R/etc/containers/containers.conf.d/90-sluice-proxy.conf
expect_eq "the containers drop-in: the forwarder at the host's name, the bundle mounted" \
	'http_proxy = false|  "HTTPS_PROXY=http://host.containers.internal:41000",|  "SSL_CERT_FILE=/etc/sluice/ca-bundle.crt",|'"  \"$BUNDLE:/etc/sluice/ca-bundle.crt:ro\"," \
	"$(grep -E '^http_proxy|"HTTPS_PROXY|"SSL_CERT_FILE|ca-bundle.crt:ro' "$CC" | tr '\n' '|' | sed 's/|$//')"

# the path the script built: nobody in the vm, through the forwarder, to the origin
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
code=$(vx "${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 10 \
	-x http://127.0.0.1:41000 http://good.test/via-forwarder)
expect_eq "nobody in the vm: through the forwarder (its environment's proxy) to good.test" 200 "$code"
wait_log 3 path=/via-forwarder
expect_eq "... the row is stamped by the forwarder: net podman, as=user" "podman user" \
	"$(logq path=/via-forwarder --field net) $(logq path=/via-forwarder --field as)"
t0=$(now)
vx "${NOBODY[@]}" curl -s -o /dev/null --max-time 5 -x http://192.168.5.2:41000 http://good.test/around
rc=$?
expect_eq "nobody straight to the proxy at 192.168.5.2:41000: refused by the guard wall (curl 7)" 7 "$rc"
expect_lt "... at once" 1 "$(elapsed "$t0")"
# mark mode: root too is kept out unless its socket carries the forwarder's mark
MARKED_PY='
import socket, sys
s = socket.socket()
if sys.argv[1] != "0":
    s.setsockopt(socket.SOL_SOCKET, 36, int(sys.argv[1], 0))  # SO_MARK
s.settimeout(3)
try:
    s.connect(("192.168.5.2", 41000))
    print("connected")
except OSError as e:
    print(e.__class__.__name__)
'
expect_eq "root, unmarked, straight to the proxy: refused too (mark mode)" ConnectionRefusedError \
	"$(vx "$PY" -c "$MARKED_PY" 0)"
expect_eq "control: a socket with the forwarder's mark reaches the proxy there" connected \
	"$(vx "$PY" -c "$MARKED_PY" 0x5300a028)"

# fail closed: a wall that cannot apply (a bad gateway) leaves no forwarder
cp "$REC" "$LAB_DIR/provision.saved"
sed 's/^GATEWAY=192\.168\.5\.2 /GATEWAY=192.168.5.300 /' "$SCRIPT" >"$LAB_DIR/bad-gateway.sh"
expect_re "the broken script differs only in its gateway" '^GATEWAY=192.168.5.300 ' "$(grep '^GATEWAY=' "$LAB_DIR/bad-gateway.sh")"
expect_eq "control: the forwarder from the good boot runs" yes "$(kill -0 "$FWD" 2>/dev/null && echo yes)"
boot "$LAB_DIR/bad-gateway.sh"
expect_eq "the script with a bad gateway exits 1" 1 "$?"
expect_re "... naming the wall" 'the sandbox wall did not apply' "$(cat "$LAB_DIR/boot.out")"
expect_eq "... the forwarder it found running is stopped" no "$(kill -0 "$FWD" 2>/dev/null && echo yes || echo no)"
fw=
for p in $(ip netns pids "$VNS" 2>/dev/null); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = sluice-forward ] && fw="$fw $p"
done
expect_eq "... no sluice-forward runs in the vm namespace" "" "$fw"
"$SLUICE_BUILD/sluice-forward" --wait "/run/netns/$VNS" 127.0.0.1:41000 --timeout 1 2>/dev/null
expect_eq "... nothing listens on 127.0.0.1:41000" 1 $?
expect_eq "... and no provision record" no "$([ -e "$REC" ] && echo yes || echo no)"
out=$(doc "$LAB_DIR/provision.saved")
code=$?
expect_eq "doctor, given the record of the good boot, with its forwarder stopped: exit 1" 1 "$code"
expect_re "... naming the forwarder" "FAIL +provision +forwarder 127.0.0.1:41000 is not listening" "$out"
code=$(vx "${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://192.168.5.2:41000 http://good.test/after-fail)
expect_eq "... while the walls already loaded still refuse nobody" 000 "$code"

# booted again, it all comes back, the walls replaced, not doubled
boot
expect_eq "the good script run again exits 0" 0 "$?"
expect_eq "... records the same id" "id $id" "$(grep '^id ' "$REC" 2>/dev/null)"
FWD2=$(awk '$1 == "pid" { print $2 }' "$REC" 2>/dev/null)
LAB_PIDS+=($FWD2)
expect_eq "... one table each (replaced, not added)" 2 "$(vx nft list tables | grep -c 'sluice_\(sandbox\|guard\)_41000')"
"$SLUICE_BUILD/sluice-forward" --wait "/run/netns/$VNS" 127.0.0.1:41000 --timeout 5
expect_eq "... and the forwarder listens again" 0 $?
missing_key=$LAB_DIR/root-nokey
cp -a "$R" "$missing_key"
rm -f "$missing_key/etc/sluice/stamp.key" "$missing_key/run/sluice/state/forward.pid"
nsenter --net="/run/netns/$VNS" env SLUICE_ROOT="$missing_key" SLUICE_BIN="$SLUICE_BUILD" \
	SLUICE_LAUNCH=direct LIMA_CIDATA_USER=nobody sh "$SCRIPT" >"$LAB_DIR/boot-nokey.out" 2>&1
expect_eq "without the stamp key the script exits 1 before any step" "1 no" \
	"$? $([ -e "$missing_key/run/sluice/state/provision.tmp" ] && echo yes || echo no)"
expect_re "... naming the key" 'stamp.key: missing' "$(cat "$LAB_DIR/boot-nokey.out")"

# ------------------------------------------------------------ under a real systemd

# The units as systemd runs them, not only as it parses them: a container
# whose PID 1 is the machine's own systemd (its /usr mounted read-only, its
# own network namespace with loopback only), this build at /opt/sluice.
# Inside, the config, `sluice install` and the very commands it prints.
SYSD_IMAGE=localhost/sluice-systemd
sysd_image() {
	podman image exists "$SYSD_IMAGE" 2>/dev/null && return 0
	local r
	r=$(mktemp -d /tmp/sluice-sysd-root.XXXXXX)
	mkdir -p "$r/usr" "$r/etc/systemd/system" "$r/tmp" "$r/run" "$r/var/lib" "$r/var/log" \
		"$r/proc" "$r/sys" "$r/dev" "$r/root" "$r/opt"
	ln -s usr/bin "$r/bin"
	ln -s usr/sbin "$r/sbin"
	ln -s usr/lib "$r/lib"
	ln -s usr/lib64 "$r/lib64"
	ln -s ../usr/lib/os-release "$r/etc/os-release"
	chmod 1777 "$r/tmp"
	printf '%s\n' 'root:x:0:0:root:/root:/bin/bash' 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' \
		'sluice:x:990:990:sluice:/nonexistent:/usr/sbin/nologin' >"$r/etc/passwd"
	printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' 'sluice:x:990:' >"$r/etc/group"
	printf '%s\n' 'passwd: files' 'group: files' 'shadow: files' 'hosts: files' >"$r/etc/nsswitch.conf"
	printf '127.0.0.1 localhost\n' >"$r/etc/hosts"
	: >"$r/etc/machine-id"
	tar -C "$r" -cf "$r.tar" . && podman import -q "$r.tar" "$SYSD_IMAGE" >/dev/null
	local rc=$?
	rm -rf "$r" "$r.tar"
	[ $rc -eq 0 ] || lab_bail "podman import $SYSD_IMAGE"
}
sysd_image
SYSD=sluice-sysd-$$
LAB_CTRS+=("$SYSD")
podman --runtime runc run -d --name "$SYSD" --systemd=always --network none \
	--cap-add NET_ADMIN,SYS_ADMIN --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
	-v /usr:/usr:ro -v "$SLUICE_BUILD:/opt/sluice:ro" "$SYSD_IMAGE" /usr/lib/systemd/systemd \
	>/dev/null || lab_bail "a container with systemd as PID 1"
cx() { podman exec -i "$SYSD" "$@"; }
booted() { cx systemctl is-system-running 2>/dev/null | grep -Eq '^(running|degraded)$'; }
wait_until 30 booted || lab_bail "systemd boots in the container" "$(cx systemctl is-system-running 2>&1)"
cx bash -s >"$LAB_DIR/sysd-setup.out" 2>&1 <<'SH' || lab_bail "the config in the container" "$(cat "$LAB_DIR/sysd-setup.out")"
set -e
# a sanitized build's leak check at exit stops the world through ptrace, which
# the units' seccomp filter and bounding set refuse: off, the rest of ASan stays
mkdir -p /etc/systemd/system/service.d
printf '[Service]\nEnvironment=ASAN_OPTIONS=detect_leaks=0\n' >/etc/systemd/system/service.d/90-sanitizer.conf
mkdir -p /etc/sluice /var/lib/sluice /var/log/sluice /opt/p/bin
chgrp sluice /var/lib/sluice && chmod 0750 /var/lib/sluice
chown sluice:sluice /var/log/sluice && chmod 0750 /var/log/sluice
for b in sluice sluice-proxy sluice-dns sluice-forward; do ln -s /opt/sluice/$b /opt/p/bin/$b; done
printf '%s\n' "listen 127.0.0.1:41000" "state /var/lib/sluice" "log /var/log/sluice/network.log" \
	"dns-listen 127.0.0.1:53" "dns-log /var/log/sluice/dns.log" "dns-upstream 127.0.0.1:5353" \
	"user sluice" "intercept off" >/etc/sluice/sluice.conf
chgrp sluice /etc/sluice/sluice.conf && chmod 0640 /etc/sluice/sluice.conf
S="/opt/p/bin/sluice -c /etc/sluice/sluice.conf"
/opt/p/bin/sluice ports --project ctr >/dev/null
$S key init >/dev/null
chgrp sluice /var/lib/sluice/stamp.key && chmod 0640 /var/lib/sluice/stamp.key
SH
cx /opt/p/bin/sluice -c /etc/sluice/sluice.conf install --project ctr --prefix /opt/p \
	>"$LAB_DIR/sysd-install.out" 2>&1 || lab_bail "sluice install in the container" "$(cat "$LAB_DIR/sysd-install.out")"
# the root commands it printed, as printed
grep -E '^  (install|systemctl) ' "$LAB_DIR/sysd-install.out" >"$LAB_DIR/sysd-commands.sh"
expect_eq "install printed four root commands (no binaries to copy: --prefix has them)" 4 \
	"$(wc -l <"$LAB_DIR/sysd-commands.sh")"
cx bash -e <"$LAB_DIR/sysd-commands.sh" >"$LAB_DIR/sysd-enable.out" 2>&1
expect_eq "systemd: the printed commands install and start the units" 0 "$?"
expect_eq "... all three active" "active active active" \
	"$(cx systemctl is-active sluice-wall@egress sluice-dns sluice-proxy | tr '\n' ' ' | sed 's/ $//')"
# enable --now returned: READY=1 came, so the proxy answers now, without a wait
expect_eq "... and the proxy answers at once (Type=notify: started means listening)" 403 \
	"$(cx curl -s -o /dev/null -w '%{http_code}' --max-time 5 -x http://127.0.0.1:41000 http://other.test/)"
expect_eq "... with the egress wall loaded in its namespace" "table inet sluice_egress_41000" "$(cx nft list tables)"
for d in proxy dns; do
	st=$(cx bash -c "grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/\$(systemctl show -p MainPID --value sluice-$d)/status" |
		awk '{ printf "%s%s", (NR > 1 ? " " : ""), $2 }')
	expect_eq "sluice-$d under systemd: uid 990, no capabilities, no_new_privs, seccomp" \
		"990 0000000000000000 0000000000000000 1 2" "$st"
done
cx systemctl reload sluice-proxy sluice-dns 2>"$LAB_DIR/sysd-reload.err"
expect_eq "systemctl reload (SIGHUP) succeeds for both" 0 "$?"
[ -s "$LAB_DIR/sysd-reload.err" ] && cx journalctl --no-pager | tail -20 | sed 's/^/# /' 
reloaded() { cx journalctl -u sluice-proxy --no-pager | grep -q 'policy reloaded (SIGHUP)'; }
wait_until 3 reloaded
expect_eq "... and the proxy reloaded" 1 "$(cx journalctl -u sluice-proxy --no-pager | grep -c 'policy reloaded (SIGHUP)')"
# Type=notify: a proxy that cannot listen never reports started
cx systemctl stop sluice-proxy
cx bash -c 'echo $$ >/run/holder.pid; exec /usr/bin/python3 -c "import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind((\"127.0.0.1\", 41000)); s.listen(); time.sleep(60)"' &
HOLD=$!
held() { cx bash -c '</dev/tcp/127.0.0.1/41000'; }
wait_until 5 held || not_ok "a listener holds 127.0.0.1:41000 in the container"
cx systemctl start sluice-proxy 2>/dev/null
expect_eq "with its port taken, systemctl start sluice-proxy fails" 1 "$?"
expect_eq "... the unit is not active: waiting to try again (Restart=on-failure)" \
	"ActiveState=activating SubState=auto-restart" \
	"$(cx systemctl show -p ActiveState -p SubState sluice-proxy | tr '\n' ' ' | sed 's/ $//')"
cx bash -c 'kill "$(cat /run/holder.pid)"'
wait "$HOLD" 2>/dev/null
cx systemctl reset-failed sluice-proxy
cx systemctl stop sluice-proxy
# Requires=: no egress wall, no proxy
cx systemctl start sluice-proxy
cx systemctl stop sluice-wall@egress
expect_eq "stopping the egress wall stops the proxy and removes its table" "inactive inactive " \
	"$(cx systemctl is-active sluice-wall@egress sluice-proxy | tr '\n' ' ')$(cx nft list tables)"
cx systemctl start sluice-proxy
expect_eq "starting the proxy brings the wall back first" "active active table inet sluice_egress_41000" \
	"$(cx systemctl is-active sluice-wall@egress sluice-proxy | tr '\n' ' ')$(cx nft list tables)"
# a reboot: enabled, they come back, the wall before the network
podman restart -t 10 "$SYSD" >/dev/null 2>&1
wait_until 30 booted
expect_eq "after a reboot all three are active again" "active active active" \
	"$(cx systemctl is-active sluice-wall@egress sluice-dns sluice-proxy | tr '\n' ' ' | sed 's/ $//')"
order=$(cx journalctl -b --no-pager -o cat | grep -E '^(Finished sluice-wall@egress|Reached target network-pre.target|Started sluice-proxy)' |
	sed 's/ -.*//; s/\.$//' | tr '\n' '|')
expect_eq "... in order: the wall, then network-pre, then the proxy" \
	"Finished sluice-wall@egress.service|Reached target network-pre.target|Started sluice-proxy.service|" "$order"
# no host wall, no VM: where cgroup2 is not at /sys/fs/cgroup (this hybrid
# machine) the host wall cannot load, and the VM's unit must not start (its
# limactl records a run)
printf '#!/bin/sh\necho "$@" >/tmp/limactl-ran\nexec sleep 60\n' | cx tee /opt/p/bin/limactl >/dev/null
cx chmod 755 /opt/p/bin/limactl
cx /opt/p/bin/sluice -c /etc/sluice/sluice.conf ca init >/dev/null 2>&1
cx /opt/p/bin/sluice -c /etc/sluice/sluice.conf install --project ctr --prefix /opt/p --sandbox-vm lima \
	--vm agent --vm-user nobody --limactl /opt/p/bin/limactl >"$LAB_DIR/sysd-lima.out" 2>&1 ||
	lab_bail "sluice install --sandbox-vm lima in the container" "$(cat "$LAB_DIR/sysd-lima.out")"
grep -E '^  (install|systemctl daemon-reload)' "$LAB_DIR/sysd-lima.out" | cx bash -e
cx systemctl start sluice-lima@agent 2>/dev/null
rc=$?
ran=$(cx test -e /tmp/limactl-ran && echo yes || echo no)
if [ "$(cx stat -fc %T /sys/fs/cgroup)" = cgroup2fs ]; then
	# a unified machine: the wall loads, and only then the VM
	expect_eq "the VM's unit starts once its host wall holds" "0 active yes" \
		"$rc $(cx systemctl is-active sluice-wall@host) $ran"
else
	expect_eq "the VM's unit does not start when its host wall cannot load" "1 failed no" \
		"$rc $(cx systemctl is-active sluice-wall@host) $ran"
	expect_re "... the wall said why" 'cgroup2 mounted at /sys/fs/cgroup' \
		"$(cx journalctl -u sluice-wall@host --no-pager)"
fi
expect_eq "... and it left the proxy, sluice-dns and the egress wall running" "active active active" \
	"$(cx systemctl is-active sluice-wall@egress sluice-dns sluice-proxy | tr '\n' ' ' | sed 's/ $//')"
# the boot script where systemd runs the guest: the forwarder as a unit of its own
cx bash -s >"$LAB_DIR/sysd-guest.out" 2>&1 <<'SH'
set -e
G=/tmp/guest
mkdir -p $G/etc/sluice
install -m 0600 /var/lib/sluice/stamp.key $G/etc/sluice/stamp.key
echo nobody:100000:65536 >$G/etc/subuid
SH
gboot() {
	cx env SLUICE_ROOT=/tmp/guest SLUICE_BIN=/opt/sluice LIMA_CIDATA_USER=nobody \
		sh "${1:-/var/lib/sluice/install/lima-provision.sh}" >"$LAB_DIR/sysd-boot.out" 2>&1
}
# here the host's proxy shares the guest's namespace, and its port
gboot
expect_eq "where another program holds 127.0.0.1:41000 the boot script exits 1" 1 "$?"
expect_re "... naming it" 'another program listens on 127.0.0.1:41000' "$(cat "$LAB_DIR/sysd-boot.out")"
expect_eq "... and starting no forwarder unit" inactive "$(cx systemctl is-active sluice-forward.service)"
cx systemctl stop sluice-proxy
gboot
expect_eq "under systemd the boot script exits 0" 0 "$?"
expect_eq "... its forwarder is a unit (systemd-run), and the record says so" \
	"active unit sluice-forward.service" \
	"$(cx systemctl is-active sluice-forward.service) $(cx grep '^unit ' /tmp/guest/run/sluice/state/provision)"
gboot
expect_eq "run again: one forwarder unit, restarted" "0 active" "$? $(cx systemctl is-active sluice-forward.service)"
cx sed 's/^GATEWAY=192\.168\.5\.2 /GATEWAY=192.168.5.300 /' /var/lib/sluice/install/lima-provision.sh |
	cx tee /tmp/bad-gateway.sh >/dev/null
gboot /tmp/bad-gateway.sh
expect_eq "a bad gateway: exit 1, the forwarder unit stopped, no record" "1 inactive no" \
	"$? $(cx systemctl is-active sluice-forward.service) $(cx test -e /tmp/guest/run/sluice/state/provision && echo yes || echo no)"
[ -n "${SLUICE_KEEP-}" ] || podman rm -f -t 0 "$SYSD" >/dev/null 2>&1

kill "$FWD2" 2>/dev/null
kill "$PROXY_PID" 2>/dev/null
wait_until 5 test "$(nq proxy msg=STOPPING=1 --count)" -ge 1
expect_eq "sluice-proxy on SIGTERM: STOPPING=1, after its one READY=1" "READY=1 STOPPING=1" \
	"$("$PY" -c 'import json, sys; print(" ".join(json.loads(l)["msg"] for l in open(sys.argv[1])))' "$LAB_DIR/notify/proxy.jsonl")"
wait "$PROXY_PID" 2>/dev/null
PROXY_PID=
kill "$PROXY_NOTIFY_PID" 2>/dev/null
lab_done
