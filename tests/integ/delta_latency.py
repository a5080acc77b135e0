#!/usr/bin/env python3
"""delta_latency.py ORIGIN_LOG LINES [codex]: for every delta agent_origin.py
sent (ORIGIN_LOG), the seconds from its sending to the first line of LINES
naming its tag. LINES is line_times.py's output ("SECONDS<TAB>LINE"), or
with "codex" Codex's RUST_LOG trace (each line starting with its UTC time).
Prints "N MAX D1 D2..." (the deltas seen, the largest delay and each, in seconds), or
"missing TAG" for a delta no line names."""
import datetime
import json
import re
import sys

sent = {}
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("ev") == "delta":
        sent[r["tag"]] = r["t"]
seen = {}
codex = len(sys.argv) > 3 and sys.argv[3] == "codex"
for line in open(sys.argv[2], errors="replace"):
    if codex:
        m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z .*output_text\.delta", line)
        if not m:
            continue
        t = datetime.datetime.strptime(m.group(1)[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    else:
        t, _, line = line.partition("\t")
        t = float(t)
    for tag in re.findall(r"tick-\d+-\d+", line):
        seen.setdefault(tag, t)
if not sent:
    print("none sent")
    sys.exit(0)
worst, each = 0.0, []
for tag, t in sorted(sent.items(), key=lambda kv: kv[1]):
    if tag not in seen:
        print("missing " + tag)
        sys.exit(0)
    worst = max(worst, seen[tag] - t)
    each.append("%.3f" % (seen[tag] - t))
print("%d %.3f %s" % (len(sent), worst, " ".join(each)))
