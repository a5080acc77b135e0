#!/bin/bash
# test_log_escape.sh: what a client writes never reaches the operator's
# terminal as a control. Each class of code point a terminal acts on or
# hides (C0 and DEL, C1 such as U+009B CSI and U+009D OSC, the bidi
# controls, the invisible format characters and separators) and bytes that
# are not UTF-8, in a User-Agent sent through the real proxy: the row in
# the network log holds them as \uXXXX escapes, never raw, and
# `sluice log --json` prints them so; wide characters (CJK, an emoji) pass
# as they are. Rows an older writer left with the code points raw (and
# escaped ones), in a log of their own: `sluice log`, its grouped views, its
# --json, the DNS log's table and `sluice watch` (tmux) show each class as
# a visible escape, and a cell holding wide characters is cut and padded by
# columns, so the next column stays in place. sluice-dns writes its rows
# with the same escaper, and a name in them is ASCII: a query for a name
# with C1 bytes in a label is refused as malformed, its row naming no name
# and holding no raw byte.
source "$(dirname "$0")/lab.sh"
command -v tmux >/dev/null || lab_bail "tmux is installed (deps/debian-packages)"
export LANG=C.UTF-8 LC_ALL=C.UTF-8
lab_up
TM=sluice-esc-$$
trap 'rc=$?; tmux -L "$TM" kill-server 2>/dev/null; (exit $rc); lab_teardown' EXIT
lab_start_proxy "allow good.test" "dns-listen 127.0.0.1:53" "dns-upstream 192.0.2.2:53"
HID=$INTEG_DIR/hidden.py
hid() { "$PY" "$HID" "$@"; }
# clean NAME: stdin holds no hidden code point raw (ok), else what it held
clean() { local o; o=$(hid check "$1"); if [ -z "$o" ]; then ok "$1"; else not_ok "$1" "$o"; fi; }
# holds NAME WHERE CLASS...: stdin shows each class's escapes as WHERE does
holds() { local o; o=$(hid has "$@"); if [ -z "$o" ]; then ok "$1"; else not_ok "$1" "$o"; fi; }

# --- through the proxy: a User-Agent with each class
for cls in c1 bidi invisible wide bad; do
	out=$(raw "GET http://good.test/e-$cls HTTP/1.1\\r\\nHost: good.test\\r\\nUser-Agent: x$(hid sample $cls)\\r\\n\\r\\n" --timeout 5)
	expect_eq "a request whose User-Agent holds $cls is answered" 200 "$(meta_status "$out")"
done
wait_log 5 path=/e-bad || lab_bail "the proxy logs /e-bad"
row() { grep -a "\"path\":\"/e-$1\"" "$NETLOG"; }
expect_eq "the issue's probe (x CSI 31m OSC 52;c;QUJD ST RLO) gives a row" 1 "$(row c1 | wc -l)"
for cls in c1 bidi invisible; do
	row $cls | clean "the raw log: the $cls row holds no hidden code point raw"
	row $cls | holds "... it holds them as \\u escapes" json $cls
done
row wide | clean "the raw log: the wide row is clean"
row wide | holds "... and holds CJK and the emoji as they are" json wide
row bad | clean "the raw log: bytes that are not UTF-8 are escaped"
expect_re "... as \\u00XX" 'x\\u00ff\\u00c0\\u0080\\u00ed\\u00a0\\u0080\\u00e2\\u0082' "$(row bad)"
sl log --json >"$LAB_DIR/json.out" 2>&1
clean "sluice log --json on the proxy's log: nothing hidden raw" <"$LAB_DIR/json.out"
holds "... each class as \\u escapes, wide characters as they are" json c1 bidi invisible wide \
	<"$LAB_DIR/json.out"

# --- rows left raw by an older writer, and escaped ones, in a log of their own
S2=$LAB_DIR/st2
mkdir -m 700 "$S2"
hid rows net >"$S2/network.log"
hid rows dns >"$S2/dns.log"
printf 'state %s\nlog %s/network.log\ndns-log %s/dns.log\n' "$S2" "$S2" "$S2" >"$LAB_DIR/c2.conf"
sl2() { "$SLUICE_BUILD/sluice" -c "$LAB_DIR/c2.conf" "$@"; }
expect_ne() { if [ "$2" != "$3" ]; then ok "$1"; else not_ok "$1" "both '$2'"; fi; }
hid check "the hand-written log holds hidden code points raw (the test's control)" \
	<"$S2/network.log" >/dev/null && not_ok "the hand-written log holds hidden code points raw" ||
	ok "the hand-written log holds hidden code points raw (the test's control)"

sl2 log >"$LAB_DIR/t.out" 2>&1
expect_eq "sluice log: a line per row" 11 "$(wc -l <"$LAB_DIR/t.out")"
clean "sluice log: nothing hidden raw" <"$LAB_DIR/t.out"
holds "... each class shown as an escape, wide characters as they are" first c0 c1 bidi invisible wide \
	<"$LAB_DIR/t.out"
cols=$(hid cols 'not-granted' refuse <"$LAB_DIR/t.out" | sort -u)
expect_eq "... the REASON column starts at one screen column on every line (widths in columns)" \
	1 "$(printf '%s\n' "$cols" | wc -l)"
expect_re "... a cell of wide characters cut with its marker" '/wdr/漢字😀é漢+\.\.\.' "$(cat "$LAB_DIR/t.out")"
sl2 log --json >"$LAB_DIR/j.out" 2>&1
clean "sluice log --json: rows left raw come out escaped" <"$LAB_DIR/j.out"
expect_eq "... every row, each still JSON" 10 "$("$PY" -c 'import json,sys; print(sum(1 for l in sys.stdin if json.loads(l)))' <"$LAB_DIR/j.out")"
holds "... each class as \\u escapes" json c1 bidi invisible wide <"$LAB_DIR/j.out"
for v in --by-host --refused --by-who; do
	sl2 log $v >"$LAB_DIR/v.out" 2>&1
	clean "sluice log $v: nothing hidden raw" <"$LAB_DIR/v.out"
	holds "... each class shown as an escape" first c0 c1 bidi invisible wide <"$LAB_DIR/v.out"
	sl2 log $v --json >"$LAB_DIR/v.out" 2>&1
	clean "sluice log $v --json: nothing hidden raw" <"$LAB_DIR/v.out"
done
sl2 log --dns >"$LAB_DIR/d.out" 2>&1
clean "sluice log --dns: nothing hidden raw" <"$LAB_DIR/d.out"
holds "... each class shown as an escape" first c0 c1 bidi invisible wide <"$LAB_DIR/d.out"
sl2 log --dns --json >"$LAB_DIR/d.out" 2>&1
clean "sluice log --dns --json: nothing hidden raw" <"$LAB_DIR/d.out"
sl2 log --dns --refused >"$LAB_DIR/d.out" 2>&1
clean "sluice log --dns --refused: nothing hidden raw" <"$LAB_DIR/d.out"

# --- sluice watch on that log, in tmux
cat >"$LAB_DIR/w.sh" <<EOF
#!/bin/bash
exec "$SLUICE_BUILD/sluice" -c "$LAB_DIR/c2.conf" watch
EOF
chmod +x "$LAB_DIR/w.sh"
tmux -L "$TM" -u new-session -d -s w -x 200 -y 30 "$LAB_DIR/w.sh"
cap() { tmux -L "$TM" capture-pane -p -t w; }
if wait_until 5 bash -c "tmux -L $TM capture-pane -p -t w | grep -q /wde/"; then ok "watch shows the rows"; else
	not_ok "watch shows the rows" "$(cap)"; fi
cap | clean "watch: nothing hidden raw on the screen"
cap | holds "... each class shown as an escape, wide characters as they are" first c0 c1 bidi invisible wide
cols=$(cap | hid cols ' 403 ' refuse | sort -u)
expect_eq "... the STATUS column starts at one screen column on every row (widths in columns)" \
	1 "$(printf '%s\n' "$cols" | grep -c .)"
# with its attributes (-e): nothing but SGR sequences
tmux -L "$TM" capture-pane -p -e -t w | sed 's/\x1b\[[0-9;]*m//g' |
	clean "... the screen with its attributes holds nothing hidden but them"
tmux -L "$TM" send-keys -t w q

# --- sluice-dns: a query for a name with C1 bytes in a label (no host name has them)
lab_run_dns "$CONF"
hx "$PY" - <<'EOF'
import socket, struct
q = struct.pack(">HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
for label in (b"x\xc2\x9b31m\xc2\x9d52\xe2\x80\xae", b"test"):
    q += bytes([len(label)]) + label
q += b"\x00" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(3)
s.sendto(q, ("127.0.0.1", 53))
s.recvfrom(512)
EOF
expect_eq "sluice-dns answers the query" 0 "$?"
DLOG=$STATE/dns.log
wait_until 5 grep -q '"kind":"dns"' "$DLOG" 2>/dev/null
grep -a '"kind":"dns"' "$DLOG" | clean "the DNS log: the name's C1 bytes are not raw"
expect_re "... the query is refused as malformed, its row naming no name" \
	'"name":null,.*"reason":"malformed".*"detail":"a label with a byte no host name has"' \
	"$(grep -a '"kind":"dns"' "$DLOG")"
sl log --dns | clean "sluice log --dns on it: nothing hidden raw"
lab_done
