#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""check_tc_json.py: check tc's JSON for a carousel qdisc or class, key by key.

  check_tc_json.py qdisc|class WANT.json < tc -j -s ... show output
  check_tc_json.py --batch KIND WANT.json DATA.json HEADER LABEL [...]

--batch runs several checks in one start (python3 takes seconds to start
in a TCG guest): for each group of five, HEADER (if not empty) and the
check's lines go to stderr, and LABEL to stdout if that check failed.
Exits 0 when every check ran, whatever they found.

WANT.json is an object:
  "handle":   which object to check ("1:" for a qdisc, "1:10" for a class)
  "keys":     the keys the object must have, nested ones as "a.b"
  "allow":    keys it may also have (tc's own, which differ by version)
  "values":   {"path": value} that must be equal (ints compared exactly)
  "ints":     paths that must hold a non-negative integer
Every key of "keys" must be present and no key outside "keys" and
"allow" may be: a key of ours added or renamed without updating the test
fails it.  Prints one line per
check; exits 1 on the first mismatch list, 0 when all hold.
"""
import json
import sys


def get(obj, path):
    for part in path.split("."):
        if not isinstance(obj, dict) or part not in obj:
            raise KeyError(path)
        obj = obj[part]
    return obj


def flat_keys(obj, prefix=""):
    out = set()
    for k, v in obj.items():
        p = prefix + k
        if isinstance(v, dict):
            out |= flat_keys(v, p + ".")
        else:
            out.add(p)
    return out


def main():
    if sys.argv[1] != "--batch":
        with open(sys.argv[2]) as f:
            return check(sys.argv[1], json.load(f), json.load(sys.stdin))
    args = sys.argv[2:]
    if len(args) % 5:
        print("--batch takes groups of KIND WANT DATA HEADER LABEL", file=sys.stderr)
        return 2
    for i in range(0, len(args), 5):
        kind, want_path, data_path, header, label = args[i:i + 5]
        with open(want_path) as f:
            want = json.load(f)
        with open(data_path) as f:
            data = json.load(f)
        if header:
            print(header, file=sys.stderr)
        if check(kind, want, data, sys.stderr):
            print(label, flush=True)
    return 0


def check(kind, want, data, out=sys.stdout):
    objs = [o for o in data if o.get("handle") == want["handle"] and
            (kind == "class" or o.get("kind") == "carousel")]
    if len(objs) != 1:
        print(f"FAIL: {len(objs)} objects with handle {want['handle']}", file=out)
        return 1
    obj = objs[0]
    bad = []
    have = flat_keys(obj)
    keys = set(want["keys"])
    for k in sorted(keys - have):
        bad.append(f"missing key {k}")
    for k in sorted(have - keys - set(want.get("allow", []))):
        bad.append(f"unexpected key {k}")
    for path, v in want.get("values", {}).items():
        try:
            got = get(obj, path)
        except KeyError:
            bad.append(f"{path}: missing")
            continue
        ok = got == v and type(got) is type(v)
        print(f"{'ok' if ok else 'FAIL'}: {path} = {json.dumps(got)}"
              f" (want {json.dumps(v)})", file=out)
        if not ok:
            bad.append(f"{path} is {json.dumps(got)}, want {json.dumps(v)}")
    for path in want.get("ints", []):
        try:
            got = get(obj, path)
        except KeyError:
            bad.append(f"{path}: missing")
            continue
        if not (isinstance(got, int) and not isinstance(got, bool) and
                got >= 0):
            bad.append(f"{path} is {json.dumps(got)}, not an integer >= 0")
    print(f"{len(keys)} keys, {len(want.get('values', {}))} values, "
          f"{len(want.get('ints', []))} integers checked; "
          f"{len(bad)} problems", file=out)
    for b in bad:
        print(f"FAIL: {b}", file=out)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
