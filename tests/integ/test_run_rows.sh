#!/bin/bash
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

lab_done
