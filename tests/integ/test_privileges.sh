#!/bin/bash
# Privileges. With `user NAME`, sluice-proxy binds, opens its log, maps the
# replay window and reads its CA and keys as root, then drops to NAME and its
# groups with no capability left (none in any set, the bounding set empty,
# no_new_privs), and from then on re-reads the config, the grant store and
# the stamp keys as that user: a grant added live, a config change and a
# rotated stamp key are still picked up, and the log still rotates. It
# refuses to start, naming the file, when the user could not read or write
# what it needs, and when the user could write STATE or the log is in STATE.
# Root follows no link planted where the user writes (the log's directory)
# or in STATE: the proxy refuses a link or a file not root's or the user's
# at the log path, sluice log and log verify refuse it too, the CLI refuses
# a link at its lock files and engine.jsonl (the target unchanged, nothing
# created), and a ca.key not root's is refused. Started as root without
# `user` it refuses a log the user left, then says it runs as root, once.
# sluice-forward keeps only the capabilities its options use (CAP_SYS_ADMIN
# for --netns, CAP_NET_ADMIN for --mark; sock_diag and the cgroup lookups of
# --own need none) and still stamps with them.
source "$(dirname "$0")/lab.sh"
lab_up

TU=slp$$
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$TU" ||
	lab_bail "useradd $TU"
priv_cleanup() {
	userdel -f "$TU" 2>/dev/null
	getent group "$TU" >/dev/null && groupdel "$TU" 2>/dev/null
}
trap 'rc=$?; priv_cleanup; (exit $rc); lab_teardown' EXIT
TUID=$(id -u "$TU")
TGID=$(id -g "$TU")

STATE=$LAB_DIR/state
LOGDIR=$LAB_DIR/log
NETLOG=$LOGDIR/network.log
CONF=$LAB_DIR/sluice.conf
mkdir -p "$LOGDIR"
chmod 755 "$STATE" "$LOGDIR"
# priv_conf LINE...: the proxy's config, the log in its own directory
priv_conf() {
	{
		echo "listen $PROXY_ADDR:$PROXY_PORT"
		echo "state $STATE"
		echo "log $NETLOG"
		printf '%s\n' "$@" | grep -q '^intercept ' || echo "intercept off"
		echo "head-timeout 5"
		echo "connect-timeout 3"
		echo "response-timeout 5"
		echo "allow good.test"
		printf '%s\n' "$@"
	} >"$CONF"
	chmod 644 "$CONF"
}
# start_fails: run the proxy in the foreground; prints its exit status and stderr
start_fails() {
	timeout 10 ip netns exec "$HNS" "$SLUICE_BUILD/sluice-proxy" -c "$CONF" 2>&1
	echo "exit $?"
}
status_line() { awk -v k="$2:" '$1 == k { $1 = ""; sub(/^ /, ""); print }' "/proc/$1/status"; }

# an intercepted host whose credential a token command mints: the command
# records who it ran as
lab_tls_origin
cat >"$LAB_DIR/mint.sh" <<SH
#!/bin/sh
echo "\$(id -u) \$(awk '/^NoNewPrivs:/ { print \$2 }' /proc/self/status)" >"$LOGDIR/mint.out"
echo "$LAB_TOKEN"
echo 60
SH
chmod 755 "$LAB_DIR/mint.sh"
priv_conf "user $TU" "log-rotate-bytes 4096" "log-keep 3" "intercept on" \
	"allow tok.test:9443" "upstream-ca tok.test $LAB_DIR/tls/ca.crt" \
	"inject tok host=tok.test:9443 header=Authorization prefix=\"Bearer \" command=$LAB_DIR/mint.sh unattributed=yes" \
	"allow api.test:9443" "upstream-ca api.test $LAB_DIR/tls/ca.crt" \
	"inject f host=api.test:9443 path=/api header=Authorization prefix=\"Bearer \" file=$LAB_DIR/api.secret unattributed=yes"
echo "$LAB_TOKEN" >"$LAB_DIR/api.secret"
chmod 600 "$LAB_DIR/api.secret"
sl key init >/dev/null || lab_bail "sluice key init"
out=$(sl ca init 2>&1) || lab_bail "sluice ca init" "$out"

# what the user must be able to read and write, each refused by name
out=$(start_fails)
expect_re "the stamp key root-only (0600): the proxy does not start" 'exit 1$' "$out"
expect_re "... naming the key file and the user" "$TU.*$STATE/stamp\\.key|$STATE/stamp\\.key.*$TU" "$out"
chgrp "$TU" "$STATE/stamp.key" && chmod 640 "$STATE/stamp.key"
out=$(start_fails)
expect_re "the log's directory not writable by the user: the proxy does not start" 'exit 1$' "$out"
expect_re "... naming the directory (rotation renames and creates files there)" "$TU.*$LOGDIR|$LOGDIR.*$TU" "$out"
chown "$TU:$TU" "$LOGDIR"
chmod 700 "$STATE"
out=$(start_fails)
expect_re "the state directory not searchable by the user: the proxy does not start" 'exit 1$' "$out"
expect_re "... naming the grant store" "$STATE/grants" "$out"
chmod 755 "$STATE"
chmod 600 "$CONF"
out=$(start_fails)
expect_re "the config not readable by the user: the proxy does not start" 'exit 1$' "$out"
expect_re "... naming it" "$CONF" "$out"
chmod 644 "$CONF"

# What runs as the user (the proxy, its token commands) writes the log's
# directory; root must follow nothing planted there, nor in STATE.
VICTIM=$LAB_DIR/victim
echo "root's file" >"$VICTIM"
chmod 644 "$VICTIM"
victim_sum() { sha256sum "$VICTIM" | cut -d' ' -f1; }
V0=$(victim_sum)
# try_start: the proxy in the background; if it comes up, one request (a row
# it logs) and a SIGTERM. Prints "exit N" and its stderr.
try_start() {
	local pid st
	ip netns exec "$HNS" "$SLUICE_BUILD/sluice-proxy" -c "$CONF" >"$LAB_DIR/try.err" 2>&1 &
	pid=$!
	up_or_gone() { ! kill -0 "$pid" 2>/dev/null || hx bash -c "</dev/tcp/$PROXY_ADDR/$PROXY_PORT"; }
	wait_until 10 up_or_gone
	if kill -0 "$pid" 2>/dev/null; then
		pcode http://good.test/planted >/dev/null
		sleep 0.3
		kill "$pid"
	fi
	wait "$pid"
	st=$?
	cat "$LAB_DIR/try.err"
	echo "exit $st"
}
runuser -u "$TU" -- ln -sfn "$VICTIM" "$NETLOG" || not_ok "the user can plant a link in its log directory"
out=$(try_start)
expect_re "a symbolic link the user planted at the log's path: the proxy does not start" 'exit 1$' "$out"
expect_re "... naming the log and saying it is a link" "log $NETLOG: a symbolic link" "$out"
expect_eq "... and the root-owned file it points to gained nothing" "$V0" "$(victim_sum)"
out=$(sl log 2>&1)
expect_re "sluice log, as root, does not read through it either" "log: open $NETLOG: a symbolic link" "$out"
out=$(sl log verify 2>&1)
expect_re "... nor does sluice log verify" "open $NETLOG: a symbolic link" "$out"
rm -f "$NETLOG"
chgrp "$TU" "$STATE" && chmod 775 "$STATE"
out=$(try_start)
expect_re "the state directory writable by the user's group: the proxy does not start" 'exit 1$' "$out"
expect_re "... saying the user can write it" "user $TU can write the state directory $STATE" "$out"
expect_re "... and where the log and STATE belong" 'keep it root:GROUP 0750 and put the log in its own directory owned by .*log /var/log/sluice/network\.log' "$out"
chgrp root "$STATE" && chmod 757 "$STATE"
out=$(try_start)
expect_re "... writable by others: refused too" "user $TU can write the state directory" "$out"
chmod 755 "$STATE"
sed -i "s|^log .*|log $STATE/network.log|" "$CONF"
out=$(try_start)
expect_re "the log in the state directory: the proxy does not start" 'exit 1$' "$out"
expect_re "... saying to give the log its own directory" "the log $STATE/network.log is in the state directory $STATE.*log /var/log/sluice/network\.log" "$out"
rm -f "$STATE/network.log"
chown "$TU" "$STATE/ca.key"
priv_conf "user $TU" "intercept on"
out=$(try_start)
expect_re "ca.key owned by the user (0600): the proxy does not start" 'exit 1$' "$out"
expect_re "... saying ca.key is not root's" 'ca\.key is not owned by root' "$out"
chown root "$STATE/ca.key"

# the CLI, as root, in STATE: a planted link is refused, its target untouched
NEW=$LAB_DIR/made-by-root
ln -sfn "$NEW" "$STATE/grants.lock"
out=$(sl allow add planted.test 2>&1)
expect_eq "a dangling link at STATE/grants.lock: sluice allow add fails" 1 "$?"
expect_re "... naming the lock file, a link" "refusing $STATE/grants.lock: a symbolic link" "$out"
expect_eq "... and root created nothing where it pointed" no "$([ -e "$NEW" ] && echo yes || echo no)"
expect_eq "... nor granted anything" 0 "$(cat "$STATE/grants" 2>/dev/null | grep -c planted.test)"
rm -f "$STATE/grants.lock"
ln -sfn "$NEW" "$STATE/.stamp.key.lock"
out=$(sl key list 2>&1)
expect_re "a dangling link at STATE/.stamp.key.lock: sluice key refuses it" "refusing $STATE/\.stamp\.key\.lock: a symbolic link" "$out"
expect_eq "... and root created nothing where it pointed" no "$([ -e "$NEW" ] && echo yes || echo no)"
rm -f "$STATE/.stamp.key.lock"
ln -s "$VICTIM" "$STATE/engine.jsonl"
out=$(sl engine snapshot --podman true 2>&1)
expect_re "a link at STATE/engine.jsonl: sluice engine snapshot refuses it" "refusing $STATE/engine\.jsonl: a symbolic link" "$out"
expect_eq "... and the root-owned file it points to gained nothing" "$V0" "$(victim_sum)"
rm -f "$STATE/engine.jsonl"
ln "$VICTIM" "$STATE/engine.jsonl"
out=$(sl engine snapshot --podman true 2>&1)
expect_re "a hard link at STATE/engine.jsonl: refused too" "refusing $STATE/engine\.jsonl: a hard link" "$out"
expect_eq "... the file unchanged" "$V0" "$(victim_sum)"
rm -f "$STATE/engine.jsonl"
priv_conf "user $TU" "log-rotate-bytes 4096" "log-keep 3" "intercept on" \
	"allow tok.test:9443" "upstream-ca tok.test $LAB_DIR/tls/ca.crt" \
	"inject tok host=tok.test:9443 header=Authorization prefix=\"Bearer \" command=$LAB_DIR/mint.sh unattributed=yes" \
	"allow api.test:9443" "upstream-ca api.test $LAB_DIR/tls/ca.crt" \
	"inject f host=api.test:9443 path=/api header=Authorization prefix=\"Bearer \" file=$LAB_DIR/api.secret unattributed=yes"
rm -f "$NETLOG"*
: >"$LAB_DIR/proxy.err"

lab_run_proxy
P=$PROXY_PID
expect_eq "the proxy runs as the user (real, effective, saved, fs uid)" \
	"$TUID $TUID $TUID $TUID" "$(status_line "$P" Uid | tr '\t' ' ')"
expect_eq "... and its group" "$TGID $TGID $TGID $TGID" "$(status_line "$P" Gid | tr '\t' ' ')"
expect_eq "... with the user's groups only" "$TGID" "$(status_line "$P" Groups | tr -s ' \t' ' ' | sed 's/ $//')"
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
	expect_eq "... $c is empty" 0000000000000000 "$(status_line "$P" "$c")"
done
expect_eq "... no_new_privs is set" 1 "$(status_line "$P" NoNewPrivs)"
expect_eq "... and it never printed the running-as-root note" 0 "$(grep -c 'running as root' "$LAB_DIR/proxy.err")"

expect_eq "it serves a granted request" 200 "$(pcode http://good.test/p1)"
expect_eq "... and logs it (the log opened before the drop)" 1 "$(logq path=/p1 --count)"
expect_eq "other.test is not granted yet (403)" 403 "$(pcode http://other.test/p2)"
sl allow add other.test >/dev/null || not_ok "sluice allow add other.test"
expect_eq "... the CLI writes the grant store readable by others (0644)" 644 "$(stat -c %a "$STATE/grants")"
t0=$(now)
# is200 URL: through the proxy, a 200
is200() { [ "$(pcode "$1")" = 200 ]; }
wait_until 3 is200 http://other.test/p3
el=$(elapsed "$t0")
expect_eq "a grant added live by root (sluice allow add) is served" 200 "$(pcode http://other.test/p3)"
expect_lt "... within a second or so of the add (${el} s)" 2.5 "$el"
expect_re "... the user re-read the grant store" 'policy reloaded \(grant store changed\)' "$(cat "$LAB_DIR/proxy.err")"
echo "allow third.test" >>"$CONF"
wait_until 3 is200 http://third.test/p4
expect_eq "a config change is re-read by the user too" 200 "$(pcode http://third.test/p4)"

expect_eq "the CA key is root's alone (0600)" "600 root" "$(stat -c '%a %U' "$STATE/ca.key")"
out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$STATE/ca.crt" https://tok.test:9443/api 2>&1)
expect_eq "an intercepted request (the CA key read before the drop) gets its minted credential" "api ok" "$out"
expect_eq "... the token command ran as the user, with no_new_privs" "$TUID 1" "$(cat "$LOGDIR/mint.out" 2>&1)"
# file= secrets are read for each request, so as the user
out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$STATE/ca.crt" -w ' %{http_code}' https://api.test:9443/api 2>&1)
expect_eq "a file= secret only root can read (0600 root) cannot be had: 403 (the operator's to fix)" 403 "${out##* }"
expect_re "... the row says the file cannot be read" 'secret file .*api\.secret cannot be read' "$(logq path=/api --field detail)"
chown "$TU" "$LAB_DIR/api.secret"
out=$(hx curl -sS --max-time 10 -x "$PROXY_URL" --cacert "$STATE/ca.crt" https://api.test:9443/api 2>&1)
expect_eq "... owned by the user (0600), it is injected" "api ok" "$out"

for i in $(seq 1 10); do
	pcode "http://good.test/r$i" >/dev/null
done
expect_eq "the log rotated as the user (network.log.1 exists)" yes "$([ -s "$NETLOG.1" ] && echo yes || echo no)"
expect_eq "... the new network.log is the user's" "$TU" "$(stat -c %U "$NETLOG")"
expect_eq "... and rows keep coming after the rotation" 200 "$(pcode http://good.test/after-rotate)"
wait_log 2 path=/after-rotate
expect_eq "... into the new file" 1 "$(logq path=/after-rotate --count)"
expect_eq "the proxy is still running" yes "$(proxy_alive && echo yes || echo no)"

# the replay window, mapped before the drop, is still written to
st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" 10.88.0.5 podman 00112233aabbccdd 1)
H='Host: good.test\r\n'
out=$(raw "GET http://good.test/rp1 HTTP/1.1\r\n${H}Sluice-Stamp: $st\r\nConnection: close\r\n\r\n")
expect_eq "a stamped request is served and attributed (the user reads the key file)" "200 10.88.0.5@podman" \
	"$(meta_status "$out") $(logq path=/rp1 --field who)"
out=$(raw "GET http://good.test/rp2 HTTP/1.1\r\n${H}Sluice-Stamp: $st\r\nConnection: close\r\n\r\n")
expect_refusal "the same stamp again is refused as a replay (STATE/stamp.seen, mapped before the drop)" "$out" 403 stamp-replay
expect_eq "... and STATE/stamp.seen stays root's, 0600" "600 root" "$(stat -c '%a %U' "$STATE/stamp.seen")"

# the row budgets' table (STATE/lograte), opened before the drop, mapped at
# the first count, after it: 300 quick refusals spend the budget (200)
out=$(hx "$PY" - <<'PYEOF'
import socket
for i in range(300):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    s.sendall(b"GET http://denied.test/lr%d HTTP/1.1\r\nHost: denied.test\r\n\r\n" % i)
    while s.recv(65536):
        pass
    s.close()
print("done")
PYEOF
)
expect_eq "300 refusals answered" done "$out"
expect_eq "STATE/lograte is mapped by the user at the first count: sized, root's, 0600" "600 root yes" \
	"$(stat -c '%a %U' "$STATE/lograte") $([ -s "$STATE/lograte" ] && echo yes || echo no)"
expect_eq "... not counted in memory only" 0 "$(grep -c 'counted in memory only' "$LAB_DIR/proxy.err")"

# sluice-forward in front, with --netns, --own and --mark
FWD=$SLUICE_BUILD/sluice-forward
SNS=slq${HNS#slh}
ip netns add "$SNS" || lab_bail "ip netns add $SNS"
LAB_EXTRA_NS+=("$SNS")
ip -n "$SNS" link set lo up
nsenter --net="/run/netns/$HNS" "$FWD" --key "$STATE/stamp.key" --net vm --mark 0x5c1 \
	--netns "/run/netns/$SNS" "127.0.0.1:3129=$PROXY_ADDR:$PROXY_PORT" \
	--own "127.0.0.1:3130=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward.err" 2>&1 &
FPID=$!
LAB_PIDS+=($FPID)
"$FWD" --wait "/run/netns/$HNS" 127.0.0.1:3130 --timeout 5 </dev/null &&
	"$FWD" --wait "/run/netns/$SNS" 127.0.0.1:3129 --timeout 5 </dev/null ||
	lab_bail "sluice-forward listens" "$(cat "$LAB_DIR/forward.err")"
# cap_net_admin (12) and cap_sys_admin (21)
expect_eq "the forwarder keeps only CAP_NET_ADMIN and CAP_SYS_ADMIN (CapEff)" 0000000000201000 "$(status_line "$FPID" CapEff)"
expect_eq "... CapPrm the same" 0000000000201000 "$(status_line "$FPID" CapPrm)"
expect_eq "... and its bounding set the same" 0000000000201000 "$(status_line "$FPID" CapBnd)"
expect_eq "... CapInh and CapAmb empty" "0000000000000000 0000000000000000" \
	"$(status_line "$FPID" CapInh) $(status_line "$FPID" CapAmb)"
expect_eq "... no_new_privs is set" 1 "$(status_line "$FPID" NoNewPrivs)"
scode() { ip netns exec "$SNS" curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x http://127.0.0.1:3129 "http://good.test$1"; }
ocode() { nsenter --net="/run/netns/$HNS" curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://127.0.0.1:$2" "http://good.test$1"; }
expect_eq "a request through its --netns listener (marked upstream) is served" 200 "$(scode /f1)"
expect_eq "... stamped, and the proxy (as the user) verified it" "127.0.0.1@vm 1" \
	"$(logq path=/f1 --field who) $(logq path=/f1 --field kid)"
expect_eq "a request through its --own listener (sock_diag, cgroup) is served and stamped" "200 user" \
	"$(ocode /f2 3130) $(logq path=/f2 --field as)"
ip netns del "$SNS"
ip netns add "$SNS" && ip -n "$SNS" link set lo up
"$FWD" --wait "/run/netns/$SNS" 127.0.0.1:3129 --timeout 5 </dev/null
expect_eq "the sandbox namespace re-created: the forwarder listens in the new one (setns)" 0 $?
expect_eq "... and a request there is served and stamped" "200 127.0.0.1@vm" "$(scode /f3) $(logq path=/f3 --field who)"

sl key rotate >/dev/null || not_ok "sluice key rotate"
expect_eq "sluice key rotate keeps the key file's group and group read (never others)" "640 $TU" \
	"$(stat -c '%a %G' "$STATE/stamp.key")"
kill -HUP "$FPID"
new_kid() { [ "$(scode /f4)" = 200 ] && [ "$(logq path=/f4 --field kid)" = 2 ]; }
wait_until 3 new_kid
expect_eq "after the rotation the proxy (as the user) verifies stamps under the new key" "127.0.0.1@vm 2" \
	"$(logq path=/f4 --field who) $(logq path=/f4 --field kid)"

nsenter --net="/run/netns/$HNS" "$FWD" --key "$STATE/stamp.key" --net vm2 \
	--own "127.0.0.1:3131=$PROXY_ADDR:$PROXY_PORT" >>"$LAB_DIR/forward2.err" 2>&1 &
F2=$!
LAB_PIDS+=($F2)
"$FWD" --wait "/run/netns/$HNS" 127.0.0.1:3131 --timeout 5 </dev/null || lab_bail "the --own forwarder listens" "$(cat "$LAB_DIR/forward2.err")"
expect_eq "a forwarder with only --own keeps no capability at all" "0000000000000000 0000000000000000" \
	"$(status_line "$F2" CapEff) $(status_line "$F2" CapBnd)"
expect_eq "... and still finds and stamps its clients" "200 user 127.0.0.1@vm2" \
	"$(ocode /f5 3131) $(logq path=/f5 --field as) $(logq path=/f5 --field who)"
expect_eq "the proxy is still running" yes "$(proxy_alive && echo yes || echo no)"
# stop_status PID: SIGTERM, then its exit status in ST (a sanitizer's complaint at exit is not 0)
stop_status() {
	kill "$1"
	for _ in $(seq 30); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	wait "$1"
	ST=$?
}
sl allow add session.test --level session >/dev/null 2>&1
expect_eq "while it runs, a session grant can be added (STATE/proxy.run, share-locked)" 0 $?
stop_status "$PROXY_PID"
PROXY_PID=
expect_eq "the proxy (as the user) stops on SIGTERM with status 0" 0 "$ST"
expect_eq "... it could not remove STATE/proxy.run from the root-owned state dir" yes \
	"$([ -e "$STATE/proxy.run" ] && echo yes || echo no)"
out=$(sl allow add session2.test --level session 2>&1)
expect_eq "... yet a session grant is refused: no proxy holds the file's lock" 1 $?
expect_re "... saying no proxy runs" 'no running sluice-proxy .*left from one that stopped' "$out"
stop_status "$FPID"
s1=$ST
stop_status "$F2"
expect_eq "the forwarders stop on SIGTERM with status 0" "0 0" "$s1 $ST"
grep -q 'Sanitizer' "$LAB_DIR/proxy.err" "$LAB_DIR/forward.err" "$LAB_DIR/forward2.err" &&
	not_ok "no sanitizer report" "$(grep -h -A3 Sanitizer "$LAB_DIR/proxy.err" "$LAB_DIR/forward.err" "$LAB_DIR/forward2.err" | head -5)"

# root without `user`: the log the user left is not root's to append to
priv_conf
out=$(start_fails)
expect_re "root without user: the log file the user created is refused" "log $NETLOG: not owned by root" "$out"
chown root "$NETLOG"*
# ... and a note, once
: >"$LAB_DIR/proxy.err"
lab_run_proxy
kill -HUP "$PROXY_PID"
wait_until 3 grep -q 'policy reloaded (SIGHUP)' "$LAB_DIR/proxy.err"
expect_eq "started as root without user: served" 200 "$(pcode http://good.test/root1)"
expect_eq "... it says it runs as root, once (a reload does not repeat it)" 1 "$(grep -c 'running as root' "$LAB_DIR/proxy.err")"
expect_eq "... with its capabilities kept (root, as before)" 0 "$(status_line "$PROXY_PID" Uid | awk '{print $1}')"
lab_stop_proxy
lab_done
