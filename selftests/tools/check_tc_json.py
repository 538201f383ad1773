#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""check_tc_json.py: check tc's JSON for a carousel qdisc or class, key by key.

  check_tc_json.py qdisc|class WANT.json < tc -j -s ... show output

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
    kind, want_path = sys.argv[1], sys.argv[2]
    with open(want_path) as f:
        want = json.load(f)
    data = json.load(sys.stdin)
    objs = [o for o in data if o.get("handle") == want["handle"] and
            (kind == "class" or o.get("kind") == "carousel")]
    if len(objs) != 1:
        print(f"FAIL: {len(objs)} objects with handle {want['handle']}")
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
              f" (want {json.dumps(v)})")
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
          f"{len(bad)} problems")
    for b in bad:
        print(f"FAIL: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
