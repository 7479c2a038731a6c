#!/usr/bin/env python3
"""scripts/check-layers refuses a reach into the core's private layouts
(scheduler/internal.h) from outside the core: a copy of the tree with a
planted include fails and names the file; the same include inside the core
passes. Usage: test_check_layers.py SRCDIR"""
import os, shutil, subprocess, sys, tempfile

src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
script = os.path.join(src, "scripts", "check-layers")
dirs = ["util", "model", "config", "plugins", "scheduler", "informer", "agent"]
failed = 0


def check(name, ok):
    global failed
    print(f"[ {'      OK' if ok else ' FAILED '} ] {name}")
    failed += not ok


def run(root):
    p = subprocess.run([sys.executable, script, root], capture_output=True, text=True)
    return p.returncode, p.stdout


with tempfile.TemporaryDirectory() as tmp:
    for d in dirs:
        shutil.copytree(os.path.join(src, d), os.path.join(tmp, d),
                        ignore=shutil.ignore_patterns("*.o", "*.a"))
    rc, out = run(tmp)
    check("the tree as it is passes", rc == 0)

    def plant(rel):
        with open(os.path.join(tmp, rel), "w") as f:
            f.write('#include "scheduler/internal.h"\n')

    plant("scheduler/planted_core.c")   # the core itself may
    rc, out = run(tmp)
    check("the core may include scheduler/internal.h", rc == 0)

    for rel in ("scheduler/daemon/planted.c", "scheduler/sim/planted.h"):
        plant(rel)
        rc, out = run(tmp)
        check(f"{rel} including scheduler/internal.h fails", rc == 1)
        check(f"... and the message names {rel} and the accessors",
              f"{rel}:1: includes scheduler/internal.h" in out and "scheduler/engine.h" in out)
        os.remove(os.path.join(tmp, rel))

print(f"[  PASSED  ] {0 if failed else 1} test(s).")
if failed:
    print(f"[  FAILED  ] 1 test(s), {failed} check(s).")
sys.exit(1 if failed else 0)
