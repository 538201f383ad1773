#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Run tdc-style JSON test cases (tools/testing/selftests/tc-testing) for
sch_carousel, with more checks than tdc.py makes.

  run.py [--tc TC] [--tc-json TC] [--ids ID,...] [--results FILE] FILE.json...

The JSON is tdc's: id, name, category, plugins, setup, cmdUnderTest,
expExitCode, verifyCmd, matchPattern, matchCount, teardown, and the
commands use tdc's names ($TC, $IP, $DEV0, $DEV1, $DUMMY, $NS ...).  As with
tdc.py's nsPlugin, every command runs in a network namespace ($NS) that
holds $DEV1, one end of a veth pair (the other end, $DEV0, sits in a
second namespace here, so nothing is left in the caller's).  The runner
enters $NS itself (setns), and runs a command through sh only when it
needs a shell: every exec costs ~0.1 s in the test VM.

For each case, beyond tdc.py's exit code and verify pattern, this runner
checks:

  1. the exit code of cmdUnderTest is expExitCode (non-zero for every case
     that has an errorPattern);
  2. its output (stdout + stderr) matches errorPattern (a regex, searched
     case-insensitively): the message names the problem.  tdc.py ignores
     this key;
  3. the state is unchanged: `tc -j qdisc show`, `tc -j class show` and
     `tc -j filter show` (of the qdiscs 1: and 2:, ingress and egress) of
     $DEV1, from one `tc -j -batch` of --tc-json (a tc whose class JSON
     works: Debian 12's prints text), are the same after the command as
     before it, unless the case says "stateChange": true (a command
     expected to succeed);
  4. the kernel logged nothing new at warning level or worse, and no
     line matching the selftests' bad-line regex (WARNING:, BUG:, Oops...),
     while the command ran (but for what a TCG guest on a busy host prints
     by itself: "hrtimer: interrupt took N ns" and the like, shown only).

Prints one line per case ("ok N ID name" / "not ok N ID name # why") and a
last line "N passed, N failed".  --results writes every case's details as
JSON.  Exit 0 if all passed, 1 otherwise, 2 on usage errors.  Python 3
stdlib only; run as root.
"""
import argparse
import ctypes
import json
import os
import re
import shlex
import shutil
import string
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools"))
from kmsg import Kmsg, is_bad  # noqa: E402


CLONE_NEWNET = 0x40000000
SHELLY = re.compile(r"""[|&;<>()`$*?!{}\[\]~"'\\]""")


def sh(cmd, timeout=30):
    """Run a command, through sh only if it needs a shell (each exec costs
    in the test VM); (exit code, stdout, stderr)."""
    argv = cmd if not SHELLY.search(cmd) else None
    try:
        if argv is not None:
            p = subprocess.run(shlex.split(argv), capture_output=True, text=True,
                               timeout=timeout, errors="replace")
        else:
            p = subprocess.run(cmd, shell=True, capture_output=True, text=True,
                               timeout=timeout, errors="replace")
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 255, "", f"command timed out after {timeout}s: {cmd}"
    except OSError as e:
        return 127, "", f"{cmd}: {e}"


def setns(path):
    """Move this process (and so every command it runs) into a netns."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"setns {path}: {os.strerror(e)}")
    finally:
        os.close(fd)


class Runner:
    def __init__(self, args):
        self.args = args
        tag = f"{os.getpid()}"
        self.names = {
            "TC": args.tc,
            "IP": shutil.which("ip") or "/sbin/ip",
            "DEV0": "v0p0",
            "DEV1": "v0p1",
            "DEV2": "",
            "DUMMY": "dummy1",
            "ETH": "eth0",
            "NS": f"tcut-{tag}",
            "BATCH_FILE": f"/tmp/carousel-tdc-{tag}.batch",
            "BATCH_DIR": "/tmp",
            "TIMEOUT": 24,
            "EBPFDIR": "./",
        }
        self.peer_ns = f"tcut-peer-{tag}"
        self.tc_json = args.tc_json or args.tc
        self.kmsg = Kmsg()

    # ---------------------------------------------------------- namespaces
    def ns_create(self):
        n = self.names
        for cmd in (f"ip netns add {n['NS']}",
                    f"ip netns add {self.peer_ns}",
                    f"ip -n {self.peer_ns} link add {n['DEV0']} type veth "
                    f"peer name {n['DEV1']} netns {n['NS']}",
                    f"ip -n {self.peer_ns} link set {n['DEV0']} up",
                    f"ip -n {n['NS']} link set lo up",
                    f"ip -n {n['NS']} link set {n['DEV1']} up"):
            rc, _, err = sh(cmd)
            if rc:
                sys.exit(f"run.py: {cmd}: {err.strip()}")
        # Like nsPlugin: every command of a case runs in $NS.
        setns(f"/run/netns/{n['NS']}")

    def ns_destroy(self):
        sh(f"ip netns del {self.names['NS']}")
        sh(f"ip netns del {self.peer_ns}")

    def subst(self, cmd):
        return string.Template(cmd).safe_substitute(
            {k: str(v) for k, v in self.names.items()})

    def run(self, cmd):
        return sh(self.subst(cmd), timeout=int(self.names["TIMEOUT"]))

    # ---------------------------------------------------------------- state
    def state(self):
        """qdisc, class and filter JSON of $DEV1 (no stats: -s is not
        used), from one `tc -j -batch` of the JSON-capable tc."""
        dev = self.names["DEV1"]
        batch = [f"qdisc show dev {dev}", f"class show dev {dev}"]
        # Filters of every qdisc that may hold some; a qdisc's handle is
        # only known from the first line, so ask for the usual ones.
        batch += [f"filter show dev {dev} parent {h}" for h in ("1:", "2:")]
        batch += [f"filter show dev {dev} ingress", f"filter show dev {dev} egress"]
        p = subprocess.run([self.tc_json, "-j", "-force", "-batch", "-"],
                           input="\n".join(batch) + "\n", capture_output=True,
                           text=True, errors="replace", timeout=30)
        docs = []
        dec = json.JSONDecoder()
        out = p.stdout.strip()
        i = 0
        while i < len(out):
            try:
                obj, j = dec.raw_decode(out, i)
            except json.JSONDecodeError:
                docs.append({"text": out[i:]})
                break
            docs.append(obj)
            i = j
            while i < len(out) and out[i].isspace():
                i += 1
        # Errors (a parent that does not exist) go to stderr: keep them too,
        # they are part of the state.
        return {"json": docs, "errors": p.stderr.strip()}

    # ---------------------------------------------------------------- cases
    def stage(self, name, cmds, why):
        for c in cmds:
            codes = [0]
            if isinstance(c, list):
                c, codes = c[0], [int(x) for x in c[1:]]
            if not c:
                continue
            rc, out, err = self.run(c)
            if rc not in codes:
                why.append(f"{name} `{self.subst(c)}` exited {rc}: "
                           f"{(err or out).strip()}")
                return False
        return True

    def one(self, case):
        why = []
        res = {"id": case["id"], "name": case["name"]}
        self.names["TESTID"] = case["id"]
        if case.get("skip") == "yes":
            res["result"] = "skip"
            return res
        if not self.stage("setup", case.get("setup", []), why):
            self.stage("teardown", case.get("teardown", []), [])
            res.update(result="fail", why=why)
            return res

        before = self.state()
        self.kmsg.mark()
        t0 = time.monotonic()
        rc, out, err = self.run(case["cmdUnderTest"])
        res["seconds"] = round(time.monotonic() - t0, 3)
        res["cmd"] = self.subst(case["cmdUnderTest"])
        res["exit"] = rc
        res["output"] = (out + err).strip()
        after = self.state()
        klog = self.kmsg.new()

        # 1. exit code
        exp = int(case["expExitCode"])
        if rc != exp:
            why.append(f"exit {rc}, want {exp}")
        pat = case.get("errorPattern")
        if pat is None and exp != 0:
            why.append("case has no errorPattern")
        # 2. the message names the problem
        if pat is not None:
            if exp == 0:
                why.append("errorPattern on a case expected to succeed")
            elif not re.search(pat, res["output"], re.IGNORECASE):
                why.append(f"output lacks /{pat}/: {res['output']!r}")
        # 3. nothing changed
        if case.get("stateChange"):
            res["state_changed"] = before != after
        elif before != after:
            why.append("state changed: before " + json.dumps(before, sort_keys=True) +
                       " after " + json.dumps(after, sort_keys=True))
        # 4. no kernel warning
        bad = [t for lvl, t in klog if is_bad(lvl, t)]
        if bad:
            why.append("kernel logged: " + " | ".join(bad[:5]))
        res["klog"] = [t for _, t in klog]

        # tdc.py's own verify step
        if "verifyCmd" in case and "matchPattern" in case:
            vrc, vout, verr = self.run(case["verifyCmd"])
            vtext = vout if not (vrc and verr) else verr
            found = re.findall(re.compile(str(case["matchPattern"]),
                                          re.DOTALL | re.MULTILINE), vtext)
            if len(found) != int(case.get("matchCount", 1)):
                why.append(f"verify: /{case['matchPattern']}/ matched {len(found)}"
                           f" times, want {case.get('matchCount', 1)}: {vtext.strip()!r}")

        if not self.stage("teardown", case.get("teardown", []), why):
            why.append("teardown failed")
        res["result"] = "fail" if why else "pass"
        if why:
            res["why"] = why
        return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--tc", default=shutil.which("tc") or "/sbin/tc",
                    help="the tc under test ($TC)")
    ap.add_argument("--tc-json", default=os.environ.get("TC_NEW") or None,
                    help="a tc whose `class show -j` prints JSON (iproute2 >= 6.x)")
    ap.add_argument("--ids", help="only these comma-separated case ids")
    ap.add_argument("--results", help="write per-case results (JSON) here")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run.py: must run as root")

    cases = []
    for f in args.files:
        with open(f) as fh:
            for c in json.load(fh):
                c["file"] = os.path.basename(f)
                cases.append(c)
    ids = [c["id"] for c in cases]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        sys.exit(f"run.py: duplicate ids: {dup}")
    if args.ids:
        want = set(args.ids.split(","))
        cases = [c for c in cases if c["id"] in want]
    if not cases:
        print("run.py: no cases", file=sys.stderr)
        return 2

    r = Runner(args)
    r.ns_create()
    results = []
    t0 = time.monotonic()
    try:
        for n, case in enumerate(cases, 1):
            res = r.one(case)
            results.append(res)
            line = f"{res['id']} {res['name']}"
            if res["result"] == "pass":
                print(f"ok {n} {line}")
            elif res["result"] == "skip":
                print(f"ok {n} {line} # SKIP")
            else:
                print(f"not ok {n} {line}")
                for w in res["why"]:
                    print(f"#   {w}")
            if args.verbose and "output" in res:
                print(f"#   $ {res['cmd']}\n#   -> exit {res['exit']}: {res['output']!r}")
            sys.stdout.flush()
    finally:
        r.ns_destroy()
    secs = time.monotonic() - t0
    npass = sum(1 for x in results if x["result"] == "pass")
    nfail = sum(1 for x in results if x["result"] == "fail")
    nskip = sum(1 for x in results if x["result"] == "skip")
    if args.results:
        with open(args.results, "w") as fh:
            json.dump({"cases": results, "seconds": round(secs, 1)}, fh, indent=1)
    print(f"# {len(results)} cases in {secs:.1f}s")
    print(f"{npass} passed, {nfail} failed" + (f", {nskip} skipped" if nskip else ""))
    return 0 if nfail == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
