#!/usr/bin/env python3
"""scripts/replay-compare counts, gang by gang, what moved between two
`simulate --replay -o json` outputs: each kind (same, later, earlier, lost,
gained, runs changed) on hand-made outputs, --tick, the exit status (1 when a
gang is later or lost) and a clear message on a file that is not JSON.
Usage: test_replay_compare.py SRCDIR"""
import json, os, subprocess, sys, tempfile

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
script = os.path.join(src, "scripts", "replay-compare")
failed = 0


def check(name, ok, detail=""):
    global failed
    print(f"[ {'      OK' if ok else ' FAILED '} ] {name}" + ("" if ok else f": {detail}"))
    failed += not ok


def gang(name, starts, wait=0, pg=True):
    return {"podGroup": name if pg else None, "pods": [{"pod": name + "-0"}], "wait": wait,
            "runs": [{"start": s, "end": s + 60} for s in starts]}


def write(d, name, gangs):
    p = os.path.join(d, name)
    with open(p, "w") as f:
        json.dump({"gangs": gangs, "summary": {}}, f)
    return p


def run(*args):
    p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


with tempfile.TemporaryDirectory() as d:
    before = write(d, "before.json", [gang("ml/a", [10]), gang("ml/b", [20], 5),
                                      gang("ml/c", [30, 90]), gang("ml/d", []),
                                      gang("ml/e", [50]), gang("ml/solo", [7], pg=False)])
    after = write(d, "after.json", [gang("ml/a", [10.5]), gang("ml/b", [25], 10),
                                    gang("ml/c", [12]), gang("ml/d", [40]), gang("ml/e", []),
                                    gang("ml/solo", [7], pg=False)])
    rc, out = run(before, after)
    first = out.splitlines()[0] if out else ""
    check("each kind counted",
          "6 gangs before, 6 after (tick 1 s): 2 same, 1 later, 1 earlier, 1 lost, 1 gained, "
          "3 runs changed" in first, first)
    check("a later or lost gang fails the comparison", rc == 1, f"rc {rc}")
    check("the gangs named", "ml/b: 20 -> 25" in out and "ml/e: 50 -> None" in out, out)
    check("waits of the gangs placed", "before: wait over 5 gangs placed" in out, out)
    rc, out = run(before, before)
    check("the same output: all same, exit 0", rc == 0 and "6 same, 0 later" in out, out)
    no_loss = write(d, "noloss.json", [gang("ml/a", [10]), gang("ml/b", [25]), gang("ml/c", [30]),
                                       gang("ml/d", []), gang("ml/e", [50]),
                                       gang("ml/solo", [7], pg=False)])
    rc, out = run(before, no_loss, "--tick", "5")
    check("--tick: 5 s later counts as same", rc == 0 and "0 later" in out, out)
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        f.write("not json")
    rc, out = run(before, bad)
    check("a file that is not JSON: exit 2 with a message", rc == 2 and "replay-compare:" in out, out)

print(f"{failed} failed")
sys.exit(1 if failed else 0)
