#!/bin/bash
# test_run_project.sh: a run's principal outlives the run (issue 28, item 1).
# Every connection of a `sluice run` is stamped as=project:NAME (with
# --name AGENT, project:NAME/AGENT), the run's id kept in the row's own
# "sandbox" field. Run 1 of a project is refused; the operator approves
# its refusal after it ended (approve says so and grants to the project);
# run 2 of the project is served, a run of another project still refused.
# `allow learn` recommends grants for the project (and the agent), an
# agent's grant serves only that agent's runs, a project known only by its
# directory gets a short stable name, and a bad --project is refused.
# Real `sluice run`, real proxy, real origin.
source "$(dirname "$0")/lab.sh"
source "$INTEG_DIR/unbound.sh"
source "$INTEG_DIR/run_lab.sh"
lab_up
lab_unbound 'local-data: "good.test. 300 IN A 203.0.113.10"' 'local-data: "third.test. 300 IN A 203.0.113.10"' \
	'local-data: "learnt.test. 300 IN A 203.0.113.10"' 'local-data: "agent.test. 300 IN A 203.0.113.10"' \
	'local-data: "other.test. 300 IN A 203.0.113.10"'
lab_run_project 43500
# a project named by --project takes a band of the registry: this lab's own
export SLUICE_PORTS_REGISTRY=$LAB_DIR/ports
# get URL: CMD's line printing the status of one request through the run's proxy
get() { echo "curl -s -o /dev/null -w 'status %{http_code}\n' --max-time 5 $1"; }
status_of() { grep -o '^status [0-9]*' <<<"$1" | cut -d' ' -f2; }

# --- run 1 of project alpha is refused, and its row names the project
out=$(srun --project alpha -- sh -c "$(get http://third.test/pj-1)" 2>&1)
expect_eq "run 1 of project alpha: third.test is refused" 403 "$(status_of "$out")"
wait_log 5 path=/pj-1
expect_eq "... its row names the project as the principal (as)" "project:alpha" "$(logq path=/pj-1 --field as)"
sb1=$(logq path=/pj-1 --field sandbox)
expect_re "... and the run's id in a field of its own (sandbox)" '^[0-9a-f]{12}$' "$sb1"
expect_eq "... who is still the run's forwarder: 127.0.0.1 on the run's network" "127.0.0.1@sluice-$sb1" \
	"$(logq path=/pj-1 --field who)"
expect_eq "... run 1 has ended: its namespace is gone" "" "$(ls /run/netns | grep -x "sluice-$sb1")"

# --- approved after it ended: said, and granted to the project
rid=$(logq path=/pj-1 --field refusal)
out=$(sl allow approve --yes "$rid" 2>&1)
printf '%s\n' "$out" | sed 's/^/# approve: /'
expect_re "allow approve of run 1's refusal says the run has ended" "run $sb1 has ended" "$out"
expect_re "... and grants to the project, not the run" "added third\\.test for project:alpha once" "$out"

# --- run 2 of alpha is served; a run of beta is still refused
out=$(srun --project alpha -- sh -c "$(get http://third.test/pj-2)" 2>&1)
expect_eq "run 2 of project alpha is served" 200 "$(status_of "$out")"
expect_eq "... the origin saw it (up, recording)" 1 "$(inetq ev=req 'line~/pj-2')"
wait_log 5 path=/pj-2
sb2=$(logq path=/pj-2 --field sandbox)
expect_re "... another run: its own sandbox id" "^[0-9a-f]{12}\$" "$sb2"
[ "$sb2" != "$sb1" ] && ok "... not run 1's ($sb1)" || not_ok "... not run 1's" "both $sb1"
expect_eq "... the same principal" "project:alpha" "$(logq path=/pj-2 --field as)"
out=$(srun --project beta -- sh -c "$(get http://third.test/pj-3)" 2>&1)
expect_eq "a run of project beta is still refused third.test" 403 "$(status_of "$out")"
expect_none "... and never reached the origin" inet 'line~/pj-3'
expect_eq "... its row names beta" "project:beta" "$(logq path=/pj-3 --field as)"

# --- learn recommends grants to the project and to the agent
out=$(sl allow enforce learn --for 5m 2>&1) || not_ok "allow enforce learn" "$out"
wait_until 5 grep -q '^mode learn' "$STATE/grants" || not_ok "the store holds learn" "$(cat "$STATE/grants")"
sleep 1.2 # the proxy looks at the store each second
out=$(srun --project beta --name coder -- sh -c "$(get http://learnt.test/pj-4)" 2>&1)
expect_eq "in a learn window, run of beta as agent coder: learnt.test observed, served" 200 "$(status_of "$out")"
wait_log 5 path=/pj-4
expect_eq "... its principal is project:beta/coder" "project:beta/coder" "$(logq path=/pj-4 --field as)"
out=$(sl allow enforce on 2>&1) || not_ok "allow enforce on" "$out"
out=$(sl allow learn </dev/null)
printf '%s\n' "$out" | sed 's/^/# learn: /'
expect_re "allow learn recommends the grant for the agent of the project" \
	"^sluice allow add learnt\\.test --for project:beta/coder\$" "$out"
expect_re "... who asked, named as the project's agent" "who: project:beta/coder" "$out"

# --- --name AGENT: a grant to the agent serves only that agent's runs
sleep 1.2
out=$(srun --project beta --name coder -- sh -c "$(get http://agent.test/pj-5)" 2>&1)
expect_eq "agent coder of beta: agent.test refused" 403 "$(status_of "$out")"
wait_log 5 path=/pj-5
out=$(sl allow approve --yes "$(logq path=/pj-5 --field refusal)" 2>&1)
expect_re "approve grants to project:beta/coder" "added agent\\.test for project:beta/coder once" "$out"
out=$(srun --project beta --name coder -- sh -c "$(get http://agent.test/pj-6)" 2>&1)
expect_eq "... the agent's next run is served" 200 "$(status_of "$out")"
out=$(srun --project beta --name other -- sh -c "$(get http://agent.test/pj-7)" 2>&1)
expect_eq "... another agent of beta is refused" 403 "$(status_of "$out")"
out=$(srun --project beta -- sh -c "$(get http://agent.test/pj-8)" 2>&1)
expect_eq "... and so is beta without --name" 403 "$(status_of "$out")"
expect_none "... neither reached the origin (the other agent)" inet 'line~/pj-7'
expect_none "... (beta without --name)" inet 'line~/pj-8'

# --- a budget is the project's: its runs share it, another project has its own
out=$(sl allow add other.test --max-requests 2 2>&1) || not_ok "allow add other.test --max-requests 2" "$out"
sleep 1.2
out=$(srun --project gamma -- sh -c "$(get http://other.test/pb-1); $(get http://other.test/pb-2)" 2>&1)
expect_eq "run 1 of gamma: a budget of 2 serves its 2" "200 200" "$(grep -o '^status [0-9]*' <<<"$out" | cut -d' ' -f2 | tr '\n' ' ' | sed 's/ $//')"
out=$(srun --project gamma -- sh -c "$(get http://other.test/pb-3)" 2>&1)
expect_eq "... run 2 of gamma: the project's budget is spent" 403 "$(status_of "$out")"
wait_log 5 path=/pb-3
expect_eq "... refused for the budget" budget "$(logq path=/pb-3 --field reason)"
expect_none "... and never reached the origin" inet 'line~/pb-3'
out=$(srun --project delta -- sh -c "$(get http://other.test/pb-4)" 2>&1)
expect_eq "a run of delta has its own budget: served" 200 "$(status_of "$out")"

# --- a project known only by its directory: a short stable name
out=$(srun -- sh -c "$(get http://third.test/pj-9)" 2>&1)
wait_log 5 path=/pj-9
base=$(basename "$LAB_DIR" | tr -c 'A-Za-z0-9._\n-' '-' | cut -c1-23)
dname=$(logq path=/pj-9 --field as)
expect_re "a run without --project: project:BASENAME-HASH of its directory" \
	"^project:${base//./\\.}-$(printf %s "$LAB_DIR" | sha256sum | cut -c1-16)\$" "$dname"
out=$(srun -- sh -c "$(get http://third.test/pj-10)" 2>&1)
wait_log 5 path=/pj-10
expect_eq "... the same name for the next run of that directory" "$dname" "$(logq path=/pj-10 --field as)"

# --- a bad name is refused before anything is made
for bad in 'a b' 'x/y' "$(printf 'a%.0s' $(seq 41))" ''; do
	out=$(srun --project "$bad" -- true 2>&1)
	expect_eq "--project '$bad': a usage error" 2 "$?"
	expect_re "... saying what a name is" "A-Za-z0-9._-.*at most 40" "$out"
done
out=$(srun --name 'a:b' -- true 2>&1)
expect_eq "--name 'a:b': a usage error" 2 "$?"
expect_eq "nothing of a run is left" "" "$(run_leftovers | sed -E "s/grant (third|other)\\.test //g")"

lab_done
