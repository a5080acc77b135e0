#!/bin/bash
# integ: group podman (runs containers or snapshots all of the machine's: one such file at a time)
# test_run_rows.sh: a run's own output and rows (issue 28, items 2-4).
#   - nothing of sluice's goes to CMD's stdout: on a fresh STATE (the CA
#     and stamp key made by the run, the daemons started for it) CMD's
#     stdout is CMD's alone, with and without --image;
#   - the run's self-check (verify's control request to 198.18.0.1) is a
#     row of its own kind, "probe", which no refusal view counts; a CMD
#     that sends the very same request gets a plain refusal, counted;
#   - the proxy writes a "run" row when a run starts and when it ends
#     (name, project, command line, exit status, duration, bytes), told by
#     the run; `sluice log --run ID`, `--name AGENT` and `--who sluice-ID`
#     find a run's rows.
# Real `sluice run`, real proxy, sluice-dns, forwarder and origin.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
source "$INTEG_DIR/run_lab.sh"
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"'
lab_run_project 43500
ERR=$LAB_DIR/run.err

# ---------------------------------------------------------------- item 2: CMD's stdout is CMD's
# a fresh STATE: the run makes the CA and the stamp key, starts the daemons
rm -rf "$STATE"
out=$(srun -- sh -c 'echo only-this' 2>"$ERR")
code=$?
expect_eq "fresh STATE: the run exits 0" 0 "$code"
expect_eq "... CMD's stdout is exactly CMD's" "only-this" "$out"
expect_re "... the run's own lines went to stderr (the key it made)" "key 1 is current" "$(cat "$ERR")"
expect_re "... (the CA it made)" "created: .*valid until" "$(cat "$ERR")"
expect_re "... (the daemons it started)" "started sluice-proxy for this run" "$(cat "$ERR")"
out=$(srun -- sh -c 'echo only-this' 2>"$ERR")
expect_eq "a warm run: CMD's stdout is exactly CMD's" "only-this" "$out"
lab_image
IMG_OPTS=(--podman "podman --runtime runc" --image "$LAB_IMAGE" --ulimit nofile=1024:1024
	--ulimit nproc=1024:1024 -v /usr:/usr:ro)
out=$(srun "${IMG_OPTS[@]}" -- sh -c 'echo only-this' 2>"$ERR")
expect_eq "--image: the container's stdout is exactly CMD's" "only-this" "$out"

# ---------------------------------------------------------------- item 3: the self-check is a probe
# (each run above made one too: none of them may count as a refusal)
out=$(srun -- sh -c 'echo hi' 2>"$ERR")
net=$(logq ua=sluice-verify --field net)
expect_re "a run's self-check row names the run" '^sluice-[0-9a-f]{12}$' "$net"
expect_eq "... it is one row, of kind probe (no refusal row of the run's)" "1 0" \
	"$(logq net="$net" ua=sluice-verify kind=probe --count) $(logq net="$net" decision=refuse kind!=probe --count)"
expect_eq "... every run's self-check in this test is a probe: 4 runs, 4 probes, 0 refusals" "4 0" \
	"$(logq kind=probe reason=denied-ip --count) $(logq kind!=probe host=198.18.0.1 --count)"
refused=$(sl log --refused 2>&1)
expect_eq "sluice log --refused counts no probe" "" "$(grep 198.18.0.1 <<<"$refused")"
expect_eq "sluice log --by-host counts no probe" "" "$(sl log --by-host 2>&1 | grep 198.18.0.1)"

# a hostile CMD: the probe's very request, with a made-up nonce, and verify's own shape
P=http://198.18.0.1
out=$(srun -- sh -c "curl -s -o /dev/null -w '%{http_code} ' -A sluice-verify $P/.sluice-probe/0123456789abcdef0123456789abcdef;
	curl -s -o /dev/null -w '%{http_code}' -A sluice-verify $P/" 2>"$ERR")
expect_eq "CMD's requests shaped like the probe are refused" "403 403" "$out"
net=$(logq kind=probe --field net)
expect_eq "... each is a refusal of the run's, counted as one: not a probe" "2 1" \
	"$(logq net="$net" kind=http decision=refuse reason=denied-ip --count) $(logq net="$net" kind=probe --count)"
expect_re "... sluice log --refused counts them" "198\.18\.0\.1.* 2( |$)" \
	"$(sl log --refused 2>&1 | grep 198.18.0.1 | tr -s ' ')"

# the project's daemons up (not started per run), with metrics: a run's probe counts in no series
MP=43596
echo "metrics-listen 127.0.0.1:$MP" >>"$CONF"
lab_run_proxy
lab_run_dns "$CONF"
scrape() { hx curl -s --max-time 5 -o "$1" -w '%{http_code}' "http://127.0.0.1:$MP/metrics"; }
expect_eq "the project's proxy serves its metrics" 200 "$(scrape "$LAB_DIR/m.0")"
out=$(srun -- sh -c 'curl -s -o /dev/null http://good.test/warm' 2>"$ERR")
net=$(logq kind=probe --field net)
expect_eq "with the project's daemons up, the run's self-check is a probe row too" "1 sluice" \
	"$(logq net="$net" kind=probe --count) ${net%%-*}"
wait_log 5 kind=run event=end net="$net"
scrape "$LAB_DIR/m.1" >/dev/null
expect_eq "... which no metric counts (no refusal series, no probe series); its request is counted" \
	"0 0 1" "$(grep -c 'reason="denied-ip"' "$LAB_DIR/m.1") $(grep -c 'kind="probe"' "$LAB_DIR/m.1") \
$(awk '$1 ~ /^sluice_proxy_requests_total\{kind="http",decision="allow"/ { print $2 }' "$LAB_DIR/m.1")"
expect_eq "... and the proxy, still up, wrote the run's start and end rows" "1 1" \
	"$(logq net="$net" kind=run event=start --count) $(logq net="$net" kind=run event=end --count)"
expect_eq "... and the run's note is gone" "" "$(ls "$STATE/runnotes" 2>/dev/null)"

# ---------------------------------------------------------------- item 4: a run's own rows
out=$(srun --name agent-a -- sh -c 'curl -s -o /dev/null http://good.test/r4-a; exit 5' 2>"$ERR")
expect_eq "a named run exits with CMD's status" 5 "$?"
start=$(logq kind=run event=start name=agent-a --json)
end=$(logq kind=run event=end name=agent-a --json)
id=$("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["sandbox"])' "$start" 2>/dev/null)
expect_re "the proxy wrote the run's start row, its id in sandbox" '^[0-9a-f]{12}$' "$id"
field() { "$PY" -c 'import json,sys; r=json.loads(sys.argv[1]); print(" ".join(str(r.get(k)) for k in sys.argv[2:]))' "$@" 2>/dev/null; }
# the project: the run's principal's NAME (its request row's as, project:NAME/agent-a)
proj=$(logq net="sluice-$id" kind=http --field as)
proj=${proj#project:}
expect_eq "... naming its network, project (its principal's) and command line" \
	"sluice-$id ${proj%/agent-a} sh -c 'curl -s -o /dev/null http://good.test/r4-a; exit 5'" \
	"$(field "$start" net project cmd)"
expect_eq "... and its end row: exit status 5, one request" "$id 5 1" "$(field "$end" sandbox status requests)"
expect_eq "... the bytes its requests moved (their rows' up and down, summed; some down)" \
	"$(logq net="sluice-$id" kind=http --field up) $(logq net="sluice-$id" kind=http --field down) True" \
	"$(field "$end" up down) $("$PY" -c 'import json,sys; print(json.loads(sys.argv[1])["down"] > 0)' "$end" 2>/dev/null)"
expect_re "... and how long it ran" '^[0-9.]+$' "$(field "$end" ms)"
expect_eq "... in order: start, probe, the request, end" "run probe http run" \
	"$(grep -F "sluice-$id" "$NETLOG" | "$PY" -c '
import json, sys
print(" ".join(json.loads(l)["kind"] for l in sys.stdin))')"
expect_eq "... the run's request row is as before, counted once (by-host: good.test 1)" 1 \
	"$(logq net="sluice-$id" kind=http host=good.test --count)"
expect_eq "sluice log --by-host counts no run row (no host-less group)" "" \
	"$(sl log --by-host 2>&1 | awk '$1 == "-" || $2 == "-"')"

out=$(srun --name agent-b -- sh -c 'curl -s -o /dev/null http://good.test/r4-b' 2>"$ERR")
idb=$(logq kind=run event=start name=agent-b --field sandbox)
rows_of() { sl log --json "$@" 2>/dev/null | "$PY" -c '
import json, sys
print(" ".join(json.loads(l).get("kind") + ":" + str(json.loads(l).get("path") or json.loads(l).get("event")) for l in sys.stdin))'; }
A="run:start probe:/.sluice-probe/ http:/r4-a run:end"
expect_eq "sluice log --run ID: that run's rows, its own and its requests" "$A" "$(rows_of --run "$id")"
expect_eq "... --run sluice-ID the same" "$A" "$(rows_of --run "sluice-$id")"
expect_eq "... --who sluice-ID the same" "$A" "$(rows_of --who "sluice-$id")"
expect_eq "sluice log --name agent-a: the rows of the runs named so, not agent-b's" "$A" "$(rows_of --name agent-a)"
expect_eq "... --name agent-b: agent-b's" "run:start probe:/.sluice-probe/ http:/r4-b run:end" "$(rows_of --name agent-b)"
table=$(sl log --run "$id" 2>&1)
expect_re "the table names the run's request by the run's name" "agent-a +allow +[0-9]+ +GET +good.test:80 +/r4-a" "$table"
expect_re "... and shows its start" "agent-a +start +- +run " "$table"
expect_re "... and its end, with status and what it moved" "agent-a +end +5 +run .* ms +1 requests, [0-9]+ up, [0-9]+ down" "$table"
expect_eq "sluice log --run with a bad id is a usage error, and says so" "2 bad run" \
	"$(sl log --run nothex >/dev/null 2>"$ERR"; echo "$? $(grep -o 'bad run' "$ERR")")"
expect_eq "no run is left, nor a note for the proxy" "" "$(run_leftovers)$(ls "$STATE/runnotes" 2>/dev/null)"

lab_done
