#!/usr/bin/env python3
"""Query JSON-lines files (network log rows, origin records) for the tests.

  jq.py FILE [KEY=VALUE|KEY~SUBSTR|KEY!=VALUE|KEY!~SUBSTR ...] [--count | --field KEY | --json]

A FILE that does not exist is an error (exit 2, "jq.py: no file FILE" on
stdout and stderr): a record that was never written is not an empty one, so
"nothing reached the origin" cannot pass when the origin never ran. Rows
that are not JSON are skipped (and counted on stderr). Values compare as
their JSON text for non-strings (status=200, dialed=null). --field prints the
field of the last matching row; --json prints the last matching row; default
--count.
"""
import json, sys


def val(v):
    if isinstance(v, str):
        return v
    return json.dumps(v)


def main():
    path = sys.argv[1]
    conds, out = [], ("count", None)
    args = sys.argv[2:]
    while args:
        a = args.pop(0)
        if a == "--count":
            out = ("count", None)
        elif a == "--field":
            out = ("field", args.pop(0))
        elif a == "--json":
            out = ("json", None)
        elif "!~" in a:
            k, v = a.split("!~", 1)
            conds.append((k, "notin", v))
        elif "!=" in a:
            k, v = a.split("!=", 1)
            conds.append((k, "ne", v))
        elif "~" in a:
            k, v = a.split("~", 1)
            conds.append((k, "in", v))
        else:
            k, v = a.split("=", 1)
            conds.append((k, "eq", v))
    rows, bad = [], 0
    try:
        f = open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        msg = "jq.py: no file %s (%s)" % (path, e.strerror)
        print(msg)
        sys.stderr.write(msg + "\n")
        sys.exit(2)
    for line in f:
        line = line.strip()
        if not line:
            continue
        try:
            rows.append(json.loads(line))
        except ValueError:
            bad += 1
    if bad:
        sys.stderr.write("jq.py: %d unparsable lines in %s\n" % (bad, path))
    m = []
    for r in rows:
        okr = True
        for k, op, v in conds:
            x = val(r.get(k)) if isinstance(r, dict) else ""
            if op == "eq" and x != v or op == "ne" and x == v or op == "in" and v not in x \
                    or op == "notin" and v in x:
                okr = False
                break
        if okr:
            m.append(r)
    if out[0] == "count":
        print(len(m))
    elif out[0] == "field":
        print(val(m[-1].get(out[1])) if m else "")
    else:
        print(json.dumps(m[-1]) if m else "")


if __name__ == "__main__":
    main()
