#!/usr/bin/env python3
"""Tally of the Python fuzz suite (tests/python/test_fuzz.py) by class and
outcome: clear error / ran correctly / silent wrong / crash / hang.

    MJCENIC_BUILD=build python3 scripts/fuzz_report.py [--cases 50] [--seed 1]
                                                       [--classes a,b] [--json out.json]

Every case runs in a supervised worker process (a crash or a hang is counted
and the worker restarts at the next case). Prints the table and the first
problems of every class that had a crash, hang or silent wrong result; exits
1 if there was one."""
import argparse
import json
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))

import test_fuzz  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--cases", type=int, default=50, help="cases per class")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--classes", default=",".join(test_fuzz.CLASSES))
    p.add_argument("--hang-guard", type=float, default=test_fuzz.HANG_GUARD, help="seconds per case")
    p.add_argument("--json", help="also write the tally (with problems) here")
    a = p.parse_args()
    classes = [c for c in a.classes.split(",") if c]
    unknown = set(classes) - set(test_fuzz.CLASSES)
    if unknown:
        p.error(f"unknown classes {sorted(unknown)}; known: {', '.join(test_fuzz.CLASSES)}")
    with tempfile.TemporaryDirectory() as tmp:
        summary = test_fuzz.supervise(test_fuzz.case_list(classes, a.seed, a.cases), tmp,
                                      hang_guard=a.hang_guard)
    print(f"seed {a.seed}, {a.cases} cases per class")
    print(test_fuzz.table(summary))
    bad = {k: v["problems"][:5] for k, v in summary.items()
           if v["silent wrong"] or v["crash"] or v["hang"]}
    for name, problems in bad.items():
        print(f"\n{name}:")
        for x in problems:
            print(f"  {x[:400]}")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(summary, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
