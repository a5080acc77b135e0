#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# sluice engine snapshot|watch against real podman containers, and sluice log
# naming rows from those snapshots: the table, --who, --by-host, --refused,
# --json; a stopped container's address is not its own after the snapshot
# that dropped it. The rows are written by hand in the proxy's exact format:
# this file tests the reader (rows through the real forwarder:
# test_sandbox.sh). Other tests may run containers at the same time, so
# checks look only at this file's containers.
source "$(dirname "$0")/lab.sh"
lab_up
NS=sle${HNS#slh}
ip netns add "$NS" || lab_bail "ip netns add $NS"
LAB_EXTRA_NS+=("$NS")
ip netns exec "$NS" ip link set lo up
lab_image
lab_write_conf

PODMAN="nsenter --net=/run/netns/$NS podman --runtime runc"
ENG=$STATE/engine.jsonl
c1=eng-a-$$
c2=eng-b-$$
c3=eng-c-$$
lab_run_ctr "$NS" "$c1" --network bridge -- sleep 120 >/dev/null || lab_bail "podman run $c1"
lab_run_ctr "$NS" "$c2" --network bridge --label com.docker.compose.project=demo -- sleep 120 \
	>/dev/null || lab_bail "podman run $c2"
a1=$(lab_ctr_addr "$c1")
a2=$(lab_ctr_addr "$c2")
id1=$(podman inspect -f '{{.Id}}' "$c1")
id2=$(podman inspect -f '{{.Id}}' "$c2")
echo "# containers: $c1 $a1, $c2 $a2"
[ -n "$a1" ] && [ -n "$a2" ] && [ "$a1" != "$a2" ] ||
	lab_bail "two bridged containers with their own addresses" "$a1 $a2"

S() { "$SLUICE_BUILD/sluice" -c "$CONF" "$@"; }
nlines() { if [ -f "$ENG" ]; then grep -c . "$ENG"; else echo 0; fi; }
# ctr_in LINE ID: "name project addrs netmode" of ID in snapshot line LINE (-1: the last), or "absent"
ctr_in() {
	"$PY" - "$ENG" "$1" "$2" <<'EOF'
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
s = json.loads(lines[int(sys.argv[2]) if int(sys.argv[2]) < 0 else int(sys.argv[2]) - 1])
for c in s["containers"]:
    if c["id"] == sys.argv[3]:
        print(c["name"], c["project"], ",".join(c["addrs"]), c["netmode"])
        break
else:
    print("absent")
EOF
}
now_ts() { date -u +%Y-%m-%dT%H:%M:%S.%3NZ; }
# row SRC AS KIND HOST PORT PATH DECISION REASON [RULE]: one row as sluice-proxy writes
# it, now (RULE: the inject rule applied to it)
row() {
	local src=$1 as=$2 kind=$3 host=$4 port=$5 path=$6 decision=$7 reason=$8
	local who=unattributed jsrc=null jnet=null jas=null jpath=null method=GET status=200
	local boot=null seq=null kid=null grant=null inject=null
	[ -n "${9-}" ] && inject="\"$9\""
	if [ "$src" != - ]; then
		who=$src@podman jsrc="\"$src\"" jnet='"podman"' boot='"9f2c4e6a8b0d1f37"' seq=$RANDOM kid=1
	fi
	[ "$as" != - ] && jas="\"$as\""
	[ "$path" != - ] && jpath="\"$path\""
	[ "$kind" = tunnel ] && method=CONNECT
	[ "$decision" = refuse ] && status=403
	[ "$decision" = allow ] && grant="\"$host (config)\""
	printf '{"ts":"%s","conn":%d,"req":1,"run":"0123456789abcdef","who":"%s","src":%s,"net":%s,"as":%s,"boot":%s,"seq":%s,"kid":%s,"client":"10.88.0.1:%d","kind":"%s","method":"%s","host":"%s","port":%d,"path":%s,"status":%d,"decision":"%s","reason":"%s","grant":%s,"inject":%s,"dialed":null,"up":0,"down":12,"ms":1.250,"dns_ms":0.100,"connect_ms":0.200,"ua":"curl/7.88.1","detail":null}\n' \
		"$(now_ts)" "$RANDOM" "$who" "$jsrc" "$jnet" "$jas" "$boot" "$seq" "$kid" \
		"$((40000 + RANDOM % 1000))" "$kind" "$method" "$host" "$port" "$jpath" "$status" \
		"$decision" "$reason" "$grant" "$inject" >>"$NETLOG"
	sleep 0.01
}
# jrow PATH: the --json output row of PATH's principal as "kind name id project"
jprincipal() {
	S log --json 2>/dev/null | "$PY" -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r.get("path") == sys.argv[1]:
        p = r["principal"]
        print(p["kind"], p["name"], p["id"], p["project"])' "$1"
}

# --- snapshot ------------------------------------------------------------------

out=$(S engine snapshot --net podman --podman "$PODMAN" 2>&1)
rc=$?
expect_eq "engine snapshot exits 0" 0 "$rc"
expect_re "... and says what it recorded" "containers? on podman" "$out"
expect_eq "... one line in STATE/engine.jsonl" 1 "$(nlines)"
expect_eq "... holding $c1 with its real address" "$c1 None $a1 bridge" "$(ctr_in -1 "$id1")"
expect_eq "... and $c2 with its compose project" "$c2 demo $a2 bridge" "$(ctr_in -1 "$id2")"
expect_re "... stamped with the net and a UTC ms time" \
	'^\{"t":"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z","net":"podman","containers":\[' \
	"$(head -1 "$ENG")"
expect_eq "... the file is 0600" 600 "$(stat -c %a "$ENG")"

# settled: a snapshot, then another that prints "unchanged" and writes nothing. Other
# tests may start or stop containers meanwhile, so it gets three chances.
settled() {
	local n out
	for _ in 1 2 3; do
		S engine snapshot --net podman --podman "$PODMAN" >/dev/null 2>&1
		n=$(nlines)
		out=$(S engine snapshot --net podman --podman "$PODMAN" 2>&1)
		case $out in unchanged*) [ "$(nlines)" = "$n" ] && echo yes && return ;; esac
	done
	echo "no: $out"
}
expect_eq "a snapshot with nothing changed prints unchanged and writes nothing" yes "$(settled)"
n=$(nlines)
out=$(S engine snapshot --net other --podman "$PODMAN" 2>&1)
expect_eq "... but the same containers for another net are recorded" "$((n + 1))" "$(nlines)"
expect_eq "... under that net" '"other"' "$(tail -1 "$ENG" | "$PY" -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["net"]))')"
out=$(hx "$SLUICE_BUILD/sluice" -c "$CONF" engine snapshot --net podman 2>&1)
expect_eq "plain podman works from inside another namespace (ip netns exec) too" 0 "$?"

n=$(nlines)
out=$(S engine snapshot --podman false 2>&1)
rc=$?
expect_eq "a failing podman is an error" "1 $n" "$rc $(nlines)"
expect_re "... with a clear message, writing nothing" '^engine: false ps: exited 1' "$out"
out=$(S engine snapshot --podman /nonexistent/podman 2>&1)
expect_re "a missing podman is an error naming it" 'exec /nonexistent/podman: no such file' "$out"
out=$(S engine snapshot --net 'bad net' 2>&1)
expect_eq "a bad --net is a usage error" 2 "$?"
out=$(S engine frob 2>&1)
expect_eq "an unknown engine subcommand is a usage error" 2 "$?"

# --- a container that goes away between podman ps and podman inspect ---------------
# The race made deterministic with the real podman: $RACE runs the real podman for
# everything, but before an inspect it removes (real podman rm -f) the first of the
# inspected ids still listed in $VICTIMS, so a container that ps listed is gone when
# inspect runs. A gone container is left out; the others are recorded; no complaint.
VICTIMS=$LAB_DIR/victims
RACE=$LAB_DIR/podman-race
cat >"$RACE" <<EOF
#!/bin/bash
real=($PODMAN)
if [ "\$1" = inspect ] && [ -s "$VICTIMS" ]; then
	for id in "\${@:2}"; do
		grep -qx "\$id" "$VICTIMS" || continue
		"\${real[@]}" rm -f -t 0 "\$id" >/dev/null 2>&1 || exit 99
		grep -vx "\$id" "$VICTIMS" >"$VICTIMS.new"
		mv "$VICTIMS.new" "$VICTIMS"
		echo "\$id" >>"$LAB_DIR/removed"
		break
	done
fi
exec "\${real[@]}" "\$@"
EOF
chmod 755 "$RACE"
vids=()
for v in 1 2 3 4; do
	lab_run_ctr "$NS" "eng-v$v-$$" --network bridge -- sleep 120 >/dev/null ||
		lab_bail "podman run eng-v$v-$$"
	vids+=("$(podman inspect -f '{{.Id}}' "eng-v$v-$$")")
done
# exists ID: whether the real podman still has container ID
exists() { if lab_podman "$NS" container exists "$1"; then echo yes; else echo no; fi; }

echo "${vids[0]}" >"$VICTIMS"
: >"$LAB_DIR/removed"
n=$(nlines)
out=$(S engine snapshot --net podman --podman "$RACE" 2>"$LAB_DIR/race.err")
rc=$?
expect_eq "race: the shim removed eng-v1 between ps and inspect (it listed it, it is gone)" \
	"${vids[0]} no" "$(cat "$LAB_DIR/removed") $(exists "${vids[0]}")"
expect_eq "... the snapshot succeeds and is recorded" "0 $((n + 1))" "$rc $(nlines)"
expect_eq "... without eng-v1, which no longer exists" absent "$(ctr_in -1 "${vids[0]}")"
expect_eq "... with $c1" "$c1 None $a1 bridge" "$(ctr_in -1 "$id1")"
expect_eq "... and $c2" "$c2 demo $a2 bridge" "$(ctr_in -1 "$id2")"
expect_re "... and the others that were running" "^eng-v2-$$ None " "$(ctr_in -1 "${vids[1]}")"
expect_eq "... with nothing on stderr (a container going away is no error)" "" \
	"$(cat "$LAB_DIR/race.err")"

# a busy engine: a container goes away during each of three inspects in a row
printf '%s\n' "${vids[@]:1:3}" >"$VICTIMS"
: >"$LAB_DIR/removed"
n=$(nlines)
out=$(S engine snapshot --net podman --podman "$RACE" 2>"$LAB_DIR/race.err")
rc=$?
expect_eq "churn: three containers went away, one during each inspect" \
	"3 no no no" "$(grep -c . "$LAB_DIR/removed") $(exists "${vids[1]}") $(exists "${vids[2]}") $(exists "${vids[3]}")"
expect_eq "... the snapshot succeeds and is recorded" "0 $((n + 1))" "$rc $(nlines)"
expect_eq "... without them" "absent absent absent" \
	"$(ctr_in -1 "${vids[1]}") $(ctr_in -1 "${vids[2]}") $(ctr_in -1 "${vids[3]}")"
expect_eq "... with $c1 and $c2" "$c1 None $a1 bridge|$c2 demo $a2 bridge" \
	"$(ctr_in -1 "$id1")|$(ctr_in -1 "$id2")"
expect_eq "... with nothing on stderr" "" "$(cat "$LAB_DIR/race.err")"

# a podman whose inspect fails for containers that do exist still fails the snapshot
BROKEN=$LAB_DIR/podman-broken
cat >"$BROKEN" <<EOF
#!/bin/bash
if [ "\$1" = inspect ]; then
	echo 'Error: inspecting object: database is locked' >&2
	exit 125
fi
exec $PODMAN "\$@"
EOF
chmod 755 "$BROKEN"
n=$(nlines)
out=$(S engine snapshot --net podman --podman "$BROKEN" 2>&1)
rc=$?
expect_eq "a podman whose inspect exits 125 fails the snapshot, writing nothing" "1 $n" "$rc $(nlines)"
expect_eq "... with podman's own error, once" \
	"engine: $BROKEN inspect: exited 125: Error: inspecting object: database is locked" "$out"
# ... also when a container went away in the same snapshot
lab_run_ctr "$NS" "eng-v5-$$" --network bridge -- sleep 120 >/dev/null || lab_bail "podman run eng-v5-$$"
podman inspect -f '{{.Id}}' "eng-v5-$$" >"$VICTIMS"
: >"$LAB_DIR/removed"
cat >"$BROKEN" <<EOF
#!/bin/bash
if [ "\$1" = inspect ] && [ ! -s "$VICTIMS" ]; then
	echo 'Error: inspecting object: database is locked' >&2
	exit 125
fi
exec "$RACE" "\$@"
EOF
n=$(nlines)
out=$(S engine snapshot --net podman --podman "$BROKEN" 2>&1)
rc=$?
expect_eq "... and when a container also went away in between" "1 $n no" \
	"$rc $(nlines) $(exists "$(cat "$LAB_DIR/removed" | tail -1)")"
expect_eq "... with the same error" \
	"engine: $BROKEN inspect: exited 125: Error: inspecting object: database is locked" "$out"

# --- rows named at read time -----------------------------------------------------

row "$a1" - http good.test 80 /a1 allow granted
row "$a2" - http other.test 80 /b1 allow granted
row "$a1" - tunnel refused.test 443 - refuse not-granted
row "$a1" - http refused.test 8080 /r2 refuse not-granted
row - - http good.test 80 /u allow granted
row 127.0.0.1 "container:$id2" http good.test 80 /viaid allow granted
row 127.0.0.1 user http good.test 80 /vmuser allow granted
row "10.88.254.254" - http good.test 80 /nobody allow granted

out=$(S log 2>&1)
expect_re "log: the table names $c1" "^[0-9-]+ [0-9:]+ +$c1 +allow .*/a1" "$(printf '%s\n' "$out" | grep /a1)"
expect_re "... $c2 with its project" "$c2 \(demo\)" "$(printf '%s\n' "$out" | grep /b1)"
expect_re "... unattributed" " unattributed " "$(printf '%s\n' "$out" | grep ' /u ')"
expect_re "... a principal by id (as=)" "$c2 \(demo\)" "$(printf '%s\n' "$out" | grep /viaid)"
expect_re "... the sandbox user" " user " "$(printf '%s\n' "$out" | grep /vmuser)"
expect_re "... an address no snapshot holds, bare" "10\.88\.254\.254@podman" "$(printf '%s\n' "$out" | grep /nobody)"
expect_eq "... and no complaint" "" "$(S log 2>&1 >/dev/null)"

out=$(S log --who "$c1")
expect_eq "log --who NAME: everything $c1 did" "3" "$(printf '%s\n' "$out" | tail -n +2 | grep -c .)"
expect_not_re "... and nothing of anyone else" "/b1|/u |/viaid|/vmuser" "$out"
expect_eq "log --who ID-PREFIX (12 hex)" "$out" "$(S log --who "${id1:0:12}")"
expect_eq "log --who ADDRESS" "$out" "$(S log --who "$a1")"
expect_re "log --who $c2 includes its as= row" "/viaid" "$(S log --who "$c2")"
expect_eq "log --who unattributed" 1 "$(S log --who unattributed --json | grep -c .)"
expect_eq "log --who user" 1 "$(S log --who user --json | grep -c '/vmuser')"
expect_eq "log --who composes with --decision and -n" 1 \
	"$(S log --who "$c1" --decision refuse -n 1 --json | grep -c '"path":"/r2"')"

out=$(S log --by-host)
expect_re "log --by-host: good.test used by $c1, 1 allowed" "^good\.test +$c1 +1 +0 +0 +[0-9-]+ [0-9:]+$" \
	"$(printf '%s\n' "$out" | grep "^good.test .*$c1")"
expect_re "... other.test by $c2 (demo)" "^other\.test +$c2 \(demo\) +1 +0 +0 " \
	"$(printf '%s\n' "$out" | grep "^other.test")"
expect_re "... refused.test: $c1 refused twice" "^refused\.test +$c1 +0 +2 +0 " \
	"$(printf '%s\n' "$out" | grep "^refused.test")"
expect_re "... good.test by the id-named $c2" "^good\.test +$c2 \(demo\) +1 " "$out"
expect_eq "... hosts sorted" "good.test other.test refused.test" \
	"$(printf '%s\n' "$out" | tail -n +2 | awk '{print $1}' | uniq | paste -sd' ')"
expect_eq "log --by-host --host" "refused.test" "$(S log --by-host --host refused.test | tail -n +2 | awk '{print $1}' | uniq)"

out=$(S log --refused)
expect_re "log --refused: $c1, refused.test, the proxy's grant command" \
	"^$c1 +refused\.test +1 +[0-9-]+ [0-9:]+ +not-granted +sluice allow add refused\.test$" \
	"$(printf '%s\n' "$out" | grep ' refused.test ')"
expect_re "... a port other than the default named as the grant takes it" \
	"^$c1 +refused\.test:8080 +1 .*sluice allow add refused\.test:8080$" \
	"$(printf '%s\n' "$out" | grep 'refused.test:8080')"
expect_eq "... only refused rows" 3 "$(printf '%s\n' "$out" | grep -c .)"
expect_re "log --refused --json" '"grant":"sluice allow add refused.test"' "$(S log --refused --json | grep "\"target\":\"refused.test\"")"
out=$(S log --refused -f 2>&1)
expect_eq "log --refused -f is a usage error" 2 "$?"
out=$(S log --by-host --refused 2>&1)
expect_eq "log --by-host --refused is a usage error" 2 "$?"

expect_eq "log --json: a principal object naming $c1" "container $c1 $id1 None" "$(jprincipal /a1)"
expect_eq "... $c2 with its project" "container $c2 $id2 demo" "$(jprincipal /b1)"
expect_eq "... unattributed" "unattributed None None None" "$(jprincipal /u)"
expect_eq "... by id" "container $c2 $id2 demo" "$(jprincipal /viaid)"
expect_eq "... an unknown address" "address 10.88.254.254@podman None None" "$(jprincipal /nobody)"
expect_eq "... the row's own keys kept, in order, as written" \
	"$(grep '"path":"/a1"' "$NETLOG")" \
	"$(S log --json | grep '"path":"/a1"' | sed 's/,"principal":{[^}]*}}$/}/')"

# --- who spent which credential: --by-rule; and --by-who
row "$a1" - http api.test 80 /k1 allow granted tok
row "$a1" - http api.test 80 /k2 allow granted tok
row "$a2" - http api.test 80 /k3 allow granted tok
row "$a2" - http api.test 80 /k4 allow granted other-rule
out=$(S log --by-rule)
expect_eq "log --by-rule: a line per rule and principal, rows with no rule not counted" \
	"RULE WHO COUNT FIRST LAST|other-rule $c2 (demo) 1|tok $c1 2|tok $c2 (demo) 1" \
	"$(printf '%s\n' "$out" | sed -E 's/  +/ /g; s/ [0-9]{2}-[0-9]{2} [0-9:]{8}//g; s/ $//' | paste -sd'|')"
json=$(S log --by-rule --json | grep "\"who\":\"$c1\"")
expect_eq "log --by-rule --json: $c1's tok rows, count, first and last the rows' own times" \
	"tok 2 $(grep '"path":"/k1"' "$NETLOG" | sed -E 's/.*"ts":"([^"]*)".*/\1/') $(grep '"path":"/k2"' "$NETLOG" | sed -E 's/.*"ts":"([^"]*)".*/\1/') container $id1" \
	"$("$PY" -c 'import json, sys; r = json.loads(sys.argv[1]); print(r["rule"], r["count"], r["first"], r["last"], r["principal"]["kind"], r["principal"]["id"])' "$json")"
out=$(S log --by-who --who "$c1")
expect_eq "log --by-who --who $c1: its hosts as a grant names them, allowed / refused / observed" \
	"WHO HOST ALLOWED REFUSED OBSERVED LAST|$c1 api.test 2 0 0|$c1 good.test 1 0 0|$c1 refused.test 0 1 0|$c1 refused.test:8080 0 1 0" \
	"$(printf '%s\n' "$out" | sed -E 's/  +/ /g; s/ [0-9]{2}-[0-9]{2} [0-9:]{8}//g; s/ $//' | paste -sd'|')"
expect_eq "log --by-who --json: the host as a grant names it" '"refused.test:8080" 1' \
	"$(S log --by-who --json | grep "\"who\":\"$c1\"" | grep -o '"host":"refused.test:8080"' | sed 's/"host"://') $(S log --by-who --json | grep "\"who\":\"$c1\"" | grep '"host":"refused.test:8080"' | grep -o '"refused":[0-9]*' | cut -d: -f2)"
S log --by-who --by-rule >/dev/null 2>&1
expect_eq "log --by-who --by-rule is a usage error" 2 "$?"
S log --dns --by-rule >/dev/null 2>&1
expect_eq "log --dns --by-rule is a usage error (a DNS row names no principal)" 2 "$?"
S log --by-rule -f >/dev/null 2>&1
expect_eq "log --by-rule -f is a usage error" 2 "$?"

# --- a stopped container: its address is not its own after the snapshot that dropped it

lab_podman "$NS" rm -f -t 0 "$c1" >/dev/null 2>&1
S engine snapshot --net podman --podman "$PODMAN" >/dev/null
expect_eq "after $c1 is removed the next snapshot drops it" absent "$(ctr_in -1 "$id1")"
expect_eq "... and keeps $c2" "$c2 demo $a2 bridge" "$(ctr_in -1 "$id2")"
row "$a1" - http good.test 80 /after-stop allow granted
expect_re "a row from $c1's address after that snapshot is not $c1's" "$a1@podman" \
	"$(S log | grep /after-stop)"
expect_not_re "... nor in log --who $c1" "/after-stop" "$(S log --who "$c1")"
expect_re "... while its earlier rows still are" "/a1" "$(S log --who "$c1")"
expect_eq "... and --json says address" "address $a1@podman None None" "$(jprincipal /after-stop)"

# --- watch -------------------------------------------------------------------

before=$(nlines)
"$SLUICE_BUILD/sluice" -c "$CONF" engine watch --net podman --podman "$PODMAN" \
	>"$LAB_DIR/watch.out" 2>"$LAB_DIR/watch.err" &
wpid=$!
wait_until 10 grep -q "on podman" "$LAB_DIR/watch.out" || not_ok "engine watch takes a first snapshot" "$(cat "$LAB_DIR/watch.err")"
sleep 0.5 # podman events is running by now
lab_run_ctr "$NS" "$c3" --network bridge -- sleep 120 >/dev/null || lab_bail "podman run $c3"
id3=$(podman inspect -f '{{.Id}}' "$c3")
a3=$(lab_ctr_addr "$c3")
has_c3() { grep -q "\"id\":\"$id3\"" "$ENG"; }
wait_until 10 has_c3
expect_eq "engine watch records a container that starts" "$c3 None $a3 bridge" "$(ctr_in -1 "$id3")"
lab_podman "$NS" rm -f -t 0 "$c3" >/dev/null 2>&1
gone_c3() { [ "$(ctr_in -1 "$id3")" = absent ]; }
wait_until 10 gone_c3
expect_eq "... and one that goes away" absent "$(ctr_in -1 "$id3")"
expect_eq "... $c2 in both" "$c2 demo $a2 bridge" "$(ctr_in -1 "$id2")"
expect_ge "... each as its own line" "$((before + 2))" "$(nlines)"
kids=$(pgrep -P "$wpid")
expect_re "... while running podman events as its child" '^[0-9]+$' "$kids"
kill "$wpid"
wait "$wpid"
rc=$?
expect_eq "engine watch ends on SIGTERM with status 0" 0 "$rc"
left=
for k in $kids; do kill -0 "$k" 2>/dev/null && left="$left $k"; done
sleep 0.5
for k in $left; do kill -0 "$k" 2>/dev/null || left=${left/ $k/}; done
expect_eq "... and its podman events is gone" "" "$left"
expect_eq "... with nothing on stderr" "" "$(cat "$LAB_DIR/watch.err")"

# --- damaged snapshots are reported, not fatal
echo 'not json' >>"$ENG"
out=$(S log --who "$c2" 2>&1 >/dev/null)
expect_eq "a damaged engine.jsonl line is reported with its number" \
	"log: $ENG:$(nlines): not a JSON object" "$out"
expect_re "... and the log is still named" "/b1" "$(S log --who "$c2" 2>/dev/null)"
expect_eq "... and snapshots still compare with the last good one before it" yes "$(settled)"
lab_done
