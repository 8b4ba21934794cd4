#!/usr/bin/env python3
"""Cost of anchor_eps_cap (cenic-math §4.10) in an mj_step-style loop: per
robot scene of docs/step_loop, 1 s of step() once per opt.timestep at accuracy
1e-3 (dense output, the default) with the cap on and off; accepted steps,
Newton iterations per convex solve and in total, wall-time ratio (min of
--reps, interleaved).

    python3 scripts/bench_anchor_eps_cap.py [--reps 2] [--out docs/step_loop/anchor_eps_cap.json]

For an --out under docs/ the run also writes the "anchor_eps_cap" section of
docs/benchmarks.md; --from-json FILE regenerates the section without measuring,
--no-page prints it instead.
"""
import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MJCENIC_SHARED_MODELS", ROOT.parent / "shared" / "models"))
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))

import mujoco  # noqa: E402

import mjcenic  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402


def section(data):
    recs = data["records"]
    ratios = [r["wall_ratio"] for r in recs]
    same = sum(r["cap"]["steps"] == r["nocap"]["steps"] and r["cap"]["newton"] == r["nocap"]["newton"]
               for r in recs)
    lines = [f"`anchor_eps_cap` on / off in the `mj_step`-style loop (1 s, `step()` once per "
             f"`opt.timestep`, accuracy 1e-3, dense output; wall time min of {data['reps']} "
             "interleaved repetitions; `python3 scripts/bench_anchor_eps_cap.py`): the same steps "
             f"and Newton iterations on {same} of {len(recs)} robots; wall-time ratio "
             f"{min(ratios):.2f}–{max(ratios):.2f} (median {_page.median(ratios):.2f}).", "",
             "| model | steps on / off | Newton it./solve on / off | Newton total on / off | wall on / off |",
             "|---|---|---|---:|---:|"]
    for r in recs:
        c, o = r["cap"], r["nocap"]
        lines.append(f"| {r['model']} | {c['steps']} / {o['steps']} | {c['newton_per_solve']:.2f} / "
                     f"{o['newton_per_solve']:.2f} | {c['newton'] / max(o['newton'], 1):.2f} | "
                     f"{r['wall_ratio']:.2f} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--reps", type=int, default=2)
    p.add_argument("--out", default=str(ROOT / "docs" / "step_loop" / "anchor_eps_cap.json"))
    _page.add_arguments(p)
    a = p.parse_args()
    if a.from_json:
        data = json.loads(pathlib.Path(a.from_json).read_text())
        _page.publish(a, pathlib.Path(a.from_json).parent, "anchor_eps_cap", "bench_anchor_eps_cap.py",
                      section(data))
        return
    models = [r["model"] for r in
              json.loads((ROOT / "docs" / "step_loop" / "step_loop.json").read_text())["records"]]
    records = []
    for rel in models:
        m = mjcenic.load_model(str(SHARED / rel))
        d0 = mujoco.MjData(m)
        if m.nkey:
            mujoco.mj_resetDataKeyframe(m, d0, 0)
        mujoco.mj_forward(m, d0)
        n = round(1.0 / m.opt.timestep)
        rec = {"model": rel}
        wall = {True: float("inf"), False: float("inf")}
        for _ in range(a.reps):
            for cap in (True, False):
                d = mujoco.MjData(m)
                mujoco.mj_copyData(d, m, d0)
                sim = mjcenic.Stepper(m, accuracy=1e-3, anchor_eps_cap=cap)
                t = time.perf_counter()
                for _ in range(n):
                    sim.step(d)
                wall[cap] = min(wall[cap], time.perf_counter() - t)
                st = sim.stats
                rec["cap" if cap else "nocap"] = {
                    "steps": st["steps"], "solves": st["solves"],
                    "newton": st["newton_iterations"],
                    "newton_per_solve": st["newton_iterations"] / max(1, st["solves"])}
        rec["wall_ratio"] = wall[True] / wall[False]
        c, o = rec["cap"], rec["nocap"]
        print(f"{rel:48s} steps {c['steps']:5d} / {o['steps']:5d}  Newton/solve "
              f"{c['newton_per_solve']:.2f} / {o['newton_per_solve']:.2f}  Newton total "
              f"{c['newton'] / o['newton']:.2f}x  wall {rec['wall_ratio']:.2f}x", flush=True)
        records.append(rec)
    data = {"reps": a.reps, "records": records}
    pathlib.Path(a.out).write_text(json.dumps(data, indent=1))
    print(f"wrote {a.out}")
    _page.publish(a, pathlib.Path(a.out).parent, "anchor_eps_cap", "bench_anchor_eps_cap.py",
                  section(data))


if __name__ == "__main__":
    main()
