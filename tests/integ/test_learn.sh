#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# The learn window (`sluice allow enforce learn --for D`, `sluice allow
# learn`): a real bridged podman container in the sandbox lab and an
# unattributed client. While the window is open the proxy refuses nothing
# and logs each would-be refusal; its deadline alone brings enforcing back
# (no command), and closes a tunnel it let open. `allow learn` groups the
# window's would-be refusals by host, naming who asked (the container by its
# name), their user agents and path prefixes; without a terminal it prints
# the `sluice allow add` lines and grants nothing; on a terminal (a pty) it
# offers each, and `o` grants it once, scoped to who asked, `v` is never
# offered again; a host more principals asked for than a grant can name
# is granted to every connection only once that is confirmed.
source "$(dirname "$0")/lab.sh"
lab_up
lab_sandbox_up
lab_start_stamped_proxy "listen $SBX_PROXY"
lab_sandbox_forward

c1=learn-a-$$
sbx_ctr "$c1" --network bridge -- sleep 300 >/dev/null || lab_bail "podman run $c1"
a1=$(lab_ctr_addr "$c1")
[ -n "$a1" ] || lab_bail "the container's address"
sl engine snapshot --net podman >/dev/null || lab_bail "sluice engine snapshot"
bcurl() { sbx_exec "$c1" curl -s -o /dev/null -w '%{http_code}' --max-time 10 -A learn-agent/1 \
	-x "http://$SBX_FWD" "$1" 2>&1; true; }
ucurl() { hx curl -s -o /dev/null -w '%{http_code}' --max-time 10 -x "http://$SBX_PROXY" "$1" 2>&1; true; }
code_is() { [ "$(bcurl "$2")" = "$1" ]; }

expect_eq "before the window: enforcing (the config's mode), the container is refused" 403 \
	"$(bcurl http://good.test/before)"
expect_re "allow enforce says whose mode it is" "^enforce \\(the config's mode" "$(sl allow enforce)"
expect_eq "--for 0 is refused" 2 "$(sl allow enforce learn --for 0 >/dev/null 2>&1; echo $?)"
expect_eq "--for past 8 h is refused" 2 "$(sl allow enforce learn --for 9h >/dev/null 2>&1; echo $?)"
expect_eq "--for without learn is refused" 2 "$(sl allow enforce on --for 1m >/dev/null 2>&1; echo $?)"

out=$(sl allow enforce learn --for 6s)
t0=$(now)
expect_re "allow enforce learn --for 6s: a window that ends by itself" \
	"^learn until .* \\(0h0m[56]s left\\), then enforce\$" "$out"
expect_re "... held in the grant store" "^mode learn [0-9]+ [0-9]+\$" "$(grep '^mode ' "$STATE/grants")"
if wait_until 3 code_is 200 http://good.test/learn-0; then ok "within a second the proxy refuses nothing"; else
	not_ok "within a second the proxy refuses nothing" "$(bcurl http://good.test/learn-0)"; fi
expect_eq "the container, good.test: allowed" 200 "$(bcurl http://good.test/learn-1?q=secret)"
expect_eq "... and again, another path" 200 "$(bcurl http://good.test/api/v1/x/y)"
expect_eq "... other.test:80" 200 "$(bcurl http://other.test/o1)"
expect_eq "an unattributed client, other.test" 200 "$(ucurl http://other.test/u1)"
expect_eq "... each row: observe, not-granted" "observe not-granted" \
	"$(logq path=/learn-1?q=secret --field decision) $(logq path=/learn-1?q=secret --field reason)"
expect_eq "... the origin saw them (the window lets them through)" 1 "$(inetq ev=req 'line~/api/v1/x/y ' --count)"
# a tunnel opened in the window (unattributed), held until the deadline closes it
cat >"$LAB_DIR/tun.py" <<'PYEOF'
import socket, sys, time
addr, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((addr, int(port)), timeout=5)
s.sendall(b"CONNECT other.test:80 HTTP/1.1\r\nHost: other.test:80\r\n\r\n")
head = s.recv(4096)
print("tunnel", head.split(b"\r\n")[0].decode(errors="replace"), flush=True)
t0 = time.time()
s.settimeout(0.2)
while time.time() - t0 < 15:
    try:
        if s.recv(4096) == b"":
            print("closed after %.1f s" % (time.time() - t0))
            sys.exit(0)
    except socket.timeout:
        pass
print("still open after 15 s")
PYEOF
hx "$PY" "$LAB_DIR/tun.py" "$SBX_PROXY" >"$LAB_DIR/hold.out" 2>&1 &
hold=$!
LAB_PIDS+=($hold)

# the deadline, and nothing else
wait_until 10 code_is 403 http://good.test/after
el=$(elapsed "$t0")
expect_eq "after the deadline, with no command: refused again" 403 "$(bcurl http://good.test/after2)"
expect_ge "... not before the window's 6 s (${el} s)" 5 "$el"
expect_lt "... and within 3 s after it (${el} s)" 9 "$el"
expect_re "allow enforce: the window has ended" "^enforce \\(the learn window ended at " "$(sl allow enforce)"
wait "$hold" 2>/dev/null
expect_re "the tunnel the window let open was closed at its end" \
	"^tunnel HTTP/1.1 200 .*
closed after [0-9.]+ s\$" "$(cat "$LAB_DIR/hold.out")"
expect_eq "... its row says revoked" revoked "$(logq kind=tunnel host=other.test --field reason | tail -1)"

# what the window would have refused, without a terminal
out=$(sl allow learn </dev/null)
printf '%s\n' "$out" | sed 's/^/# learn: /'
expect_re "allow learn: the window and the hosts" "^# learn window .*: 2 hosts would have been refused" "$out"
block=$(printf '%s\n' "$out" | grep -A5 '^# good.test:')
n=$(logq host=good.test decision=observe --count)
expect_ge "... (the window logged good.test's would-be refusals)" 3 "$n"
expect_re "good.test: each would-be refusal counted, first and last time" \
	"^# good\\.test: $n would-be refusals, [0-9T:.-]+Z \\.\\. [0-9T:.-]+Z" "$block"
expect_re "... who asked: the container, by its name" "who: $c1\$" "$block"
expect_re "... its user agent" "agents: learn-agent/1\$" "$block"
expect_re "... the first three path prefixes, of two segments, no query" \
	"paths: /learn-0, /learn-1, /api/v1\$" "$block"
expect_re "... the line that grants it to who asked" "^sluice allow add good\\.test --for $a1@podman\$" "$block"
block=$(printf '%s\n' "$out" | grep -A5 '^# other.test:')
expect_re "other.test: asked by the container and an unattributed client" "who: $c1, unattributed\$" "$block"
expect_re "... so the line grants it to every connection" "^sluice allow add other\\.test\$" "$block"
expect_re "... and, not a terminal, nothing was granted" "nothing granted" "$out"
expect_eq "... the store holds no grant" 0 "$(grep -cv '^#\|^mode \|^learned ' "$STATE/grants")"

# learn_pty ANSWERS: `allow learn` on a pty, ANSWERS typed at its prompts (its output shown)
learn_pty() {
	local o
	o=$("$PY" "$INTEG_DIR/onpty.py" --answer 'grant it? |not only who asked? ' "$1" \
		ip netns exec "$HNS" "$SLUICE_BUILD/sluice" -c "$CONF" allow learn 2>&1)
	printf '%s\n' "$o" | sed 's/^/# pty: /' >&2
	printf '%s\n' "$o"
}
# on a terminal: o for good.test (the first: the most refused), v for other.test
out=$(learn_pty o,v)
expect_re "on a terminal, o grants good.test once for 15 min, for the container" \
	"added good\\.test for $a1@podman once, expires in 15m0s" "$out"
expect_re "... v: other.test is not offered again" "not offered again" "$out"
expect_eq "... allow learn exits 0" "exit 0" "$(printf '%s\n' "$out" | tail -1)"
if wait_until 3 code_is 200 http://good.test/granted; then ok "the container is served good.test"; else
	not_ok "the container is served good.test" "$(bcurl http://good.test/granted)"; fi
expect_eq "... and still refused other.test" 403 "$(bcurl http://other.test/o2)"
expect_eq "other.test is in learn.never" other.test "$(cat "$STATE/learn.never")"
out=$(sl allow learn </dev/null)
expect_re "allow learn again: nothing left to offer" "^# 2 more already granted or marked never\$" "$out"
expect_not_re "... no allow add line" "^sluice allow add" "$out"

# a host asked for by more principals than a grant can name (9 stamped
# clients): its grant would serve every connection, so o, s and p ask first
sl allow enforce learn --for 1m >/dev/null
if wait_until 3 code_is 200 http://other.test/probe; then ok "a second window: the proxy refuses nothing"; else
	not_ok "a second window: the proxy refuses nothing" "$(bcurl http://other.test/probe)"; fi
# sget I PATH: GET third.test/PATH stamped as 10.88.0.I@podman, its own boot
# id (each stamp's sequence the clock's nanoseconds: a retry is no replay)
sget() {
	local st
	st=$("$PY" "$INTEG_DIR/stamp.py" "$STATE/stamp.key" "10.88.0.$1" podman "00112233445566$1" "$(date +%s%N)")
	raw "GET http://third.test/$2 HTTP/1.1\r\nHost: third.test\r\nSluice-Stamp: $st\r\nConnection: close\r\n\r\n" --timeout 5
}
got=$(for i in 41 42 43 44 45 46 47 48 49; do printf '%s ' "$(meta_status "$(sget $i many-$i)")"; done)
expect_eq "nine stamped clients ask for third.test in the window: each let through" \
	"200 200 200 200 200 200 200 200 200 " "$got"
expect_eq "... each its own principal in the log" "1 1 1 1 1 1 1 1 1 " \
	"$(for i in 41 42 43 44 45 46 47 48 49; do printf '%s ' "$(logq host=third.test decision=observe src=10.88.0.$i --count)"; done)"
sl allow enforce on >/dev/null
wait_until 3 code_is 403 http://other.test/probe-end || not_ok "enforcing again after allow enforce on"
out=$(sl allow learn </dev/null)
block=$(printf '%s\n' "$out" | grep -A6 '^# third.test:')
printf '%s\n' "$block" | sed 's/^/# learn: /'
expect_re "allow learn: third.test, asked by the nine" "who: 10\\.88\\.0\\.41@podman, .*10\\.88\\.0\\.49@podman\$" "$block"
expect_re "... it says the grant would serve every connection, and why" \
	"more asked than the 8 principals a grant can name: this grant serves every connection" "$block"
expect_re "... its line names no principal" "^sluice allow add third\\.test\$" "$block"
out=$(learn_pty o,n)
expect_re "on a terminal, o asks to confirm a grant to every connection" \
	"to every connection, not only who asked\\? \\[y\\]es, \\[n\\]o: " "$out"
expect_re "... n: not granted" "not granted" "$out"
expect_eq "... the store has no third.test" 0 "$(grep -c '^third\.test ' "$STATE/grants")"
expect_refusal "... and a tenth client is still refused" "$(sget 50 refused-50)" 403 not-granted
out=$(learn_pty o,y)
expect_re "o and y: third.test granted once for 15 min, for every connection" \
	"added third\\.test once, expires in 15m0s" "$out"
served() { [ "$(meta_status "$(sget "$1" "served-$1")")" = 200 ]; }
if wait_until 3 served 51; then ok "... then a client that never asked is served it"; else
	not_ok "... then a client that never asked is served it" "$(sget 52 served-52)"; fi

lab_ctrs_remove
lab_done
