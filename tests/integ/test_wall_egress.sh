#!/bin/bash
# The egress wall with real traffic, in the lab's host namespace only
# (--netns): sluice-proxy runs as nobody, and the wall refuses nobody's own
# sockets the proxy's denied ranges in the kernel, a second layer under the
# proxy's resolve-and-check. The proxy's config lets evil10.test resolve
# into 10.20.0.5 (allow-private); a wall rendered from a config without that
# exception stands for a code path that skipped the check: the kernel then
# refuses the proxy's dial (502 at once) and logs it with the proxy's uid.
# The wall rendered from the proxy's own config opens the exception again.
# Direct sockets of nobody's to a denied range are refused, loopback
# included, except the project's token band; root's (not the proxy's uid)
# are not.
source "$(dirname "$0")/lab.sh"
lab_up
command -v setpriv >/dev/null || lab_bail "setpriv (util-linux) is installed"

mkdir -p "$LAB_DIR/bin"
cp "$SLUICE_BUILD/sluice-proxy" "$LAB_DIR/bin/" || lab_bail "copy sluice-proxy for nobody"
chmod 755 "$LAB_DIR/bin" "$LAB_DIR/bin/sluice-proxy"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
lab_write_conf "allow good.test" "allow evil10.test" "allow-private evil10.test 10.20.0.5/32"
chown -R 65534:65534 "$STATE"
# the proxy as nobody (lab_run_proxy starts it as root)
ip netns exec "$HNS" "${NOBODY[@]}" "$LAB_DIR/bin/sluice-proxy" -c "$CONF" >>"$LAB_DIR/proxy.out" 2>>"$LAB_DIR/proxy.err" &
PROXY_PID=$!
wait_until 10 hx bash -c "</dev/tcp/$PROXY_ADDR/$PROXY_PORT" ||
	lab_bail "sluice-proxy as nobody listens" "$(tail -5 "$LAB_DIR/proxy.err")"
expect_eq "the proxy runs as nobody" 65534 "$(awk '/^Uid:/{print $2}' "/proc/$PROXY_PID/status")"

# a config like the proxy's, but without the exception
sed '/^allow-private/d' "$CONF" >"$LAB_DIR/strict.conf"
S="$SLUICE_BUILD/sluice -c $CONF"
STRICT="$SLUICE_BUILD/sluice -c $LAB_DIR/strict.conf"
W=(egress --user nobody --port-base 41000 --log-group 4 --netns "/run/netns/$HNS")

expect_eq "before the wall: evil10.test through the proxy (the allow-private exception)" 200 \
	"$(pcode http://evil10.test/e0)"

$STRICT wall apply "${W[@]}" >"$LAB_DIR/wall.out" 2>&1 ||
	lab_bail "sluice wall apply egress (strict config)" "$(cat "$LAB_DIR/wall.out")"
lab_denied_start "$HNS" 4
t0=$(now)
expect_eq "with a wall that lacks the exception, the kernel refuses the proxy's dial (502)" 502 \
	"$(pcode http://evil10.test/e1)"
expect_lt "... at once" 1 "$(elapsed "$t0")"
expect_re "... the row says the connection was refused" "connect-failed" "$(logq path=/e1 --field reason)"
expect_none "... and nothing reached 10.20.0.5" inet 'line~/e1'
expect_eq "good.test through the proxy still works" 200 "$(pcode http://good.test/g1)"
t0=$(now)
hx "${NOBODY[@]}" curl -s -o /dev/null --max-time 5 http://169.254.169.254/
expect_eq "nobody directly to 169.254.169.254 is refused (curl exit 7)" 7 "$?"
expect_lt "... at once" 1 "$(elapsed "$t0")"
expect_eq "root (not the proxy's uid) reaches it (control)" 200 \
	"$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://169.254.169.254/)"
# loopback is not an exception: a root service there is refused, the project's token band is not
lab_bg "$HNS" "$PY" -m http.server --bind 127.0.0.1 41100
wait_until 10 hx bash -c '</dev/tcp/127.0.0.1/41100' || lab_bail "a token service on 127.0.0.1:41100"
hx "${NOBODY[@]}" curl -s -o /dev/null --max-time 5 http://127.0.0.1:80/
expect_eq "nobody to a root service on 127.0.0.1:80 is refused (curl exit 7)" 7 "$?"
expect_eq "... which answers root (control)" 200 \
	"$(hx curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:80/)"
expect_eq "nobody reaches the project's token band (127.0.0.1:41100)" 200 \
	"$(hx "${NOBODY[@]}" curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:41100/)"
d=$(lab_denied_stop)
expect_re "the refused dial is logged with the proxy's uid" \
	'"profile":"egress","reason":"denied-ip","uid":65534,"proto":"tcp",.*"dst":"10.20.0.5","dport":80' "$d"
expect_re "... and nobody's direct try" '"reason":"denied-ip","uid":65534,.*"dst":"169.254.169.254"' "$d"
expect_not_re "... and nothing of root's" '"uid":0,' "$d"

$S wall apply "${W[@]}" >"$LAB_DIR/wall.out" 2>&1 ||
	lab_bail "sluice wall apply egress (the proxy's config)" "$(cat "$LAB_DIR/wall.out")"
expect_re "the wall from the proxy's own config opens 10.20.0.5" 'ip daddr 10.20.0.5 accept' \
	"$(hx nft list table inet sluice_egress_41000)"
expect_eq "... and evil10.test is served again" 200 "$(pcode http://evil10.test/e2)"
hx "${NOBODY[@]}" curl -s -o /dev/null --max-time 5 http://169.254.169.254/
expect_eq "... while 169.254.169.254 stays refused" 7 "$?"
$S wall status "${W[@]}" >"$LAB_DIR/wall.out" 2>&1
expect_eq "status: as applied" 0 "$?"
$STRICT wall status "${W[@]}" >"$LAB_DIR/wall.out" 2>&1
expect_eq "status from the strict config says it renders differently" 1 "$?"
$S wall remove egress --port-base 41000 --netns "/run/netns/$HNS" >/dev/null 2>&1
expect_eq "remove leaves no table" "" "$(hx nft list tables)"
lab_done
