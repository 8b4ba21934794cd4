#!/usr/bin/env python3
"""Runs every top-level model of ../shared/models for T seconds with mjcenic
(default options, driven like an mj_step loop: Step() once per opt.timestep)
and with mj_step at the model's timestep, and writes

    OUT/sweep.json   one record per model (build/mjcenic-run's JSON)
    OUT/sweep.md     a table: real-time rates, max penetration, steps
    OUT/sweep.png    max penetration, mjcenic vs mj_step, per model

    python3 scripts/sweep_shared_models.py [--duration 5] [--out out/sweep] [--jobs N]

The model list is tests/python/test_models.py's (the acceptance sweep of
issue 5 asserts on the same runs). Not a test: it only measures.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from test_models import CONVERGED_COLLIDER, MODELS, SLOW_FIRST  # noqa: E402

SHARED = ROOT.parent / "shared" / "models"


def run(binary, rel, duration):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        proc = subprocess.run([binary, str(SHARED / rel), "--duration", str(duration), "--chunk",
                               "step", "--compare-mjstep", "--json", out,
                               *CONVERGED_COLLIDER.get(rel, [])],
                              capture_output=True, text=True)
        if not os.path.exists(out):
            return {"model": rel, "error": proc.stdout + proc.stderr}
        r = json.load(open(out))
    r["model"] = rel
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=5.0)
    ap.add_argument("--out", default=str(ROOT / "out" / "sweep"))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--build", default=os.environ.get("MJCENIC_BUILD", str(ROOT / "build")))
    a = ap.parse_args()
    binary = str(pathlib.Path(a.build) / "mjcenic-run")
    order = SLOW_FIRST + [m for m in MODELS if m not in SLOW_FIRST]
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        results = dict(zip(order, pool.map(lambda rel: run(binary, rel, a.duration), order)))
    records = [results[m] for m in MODELS]
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(records, indent=1))

    lines = [f"Every top-level model of `../shared/models`, {a.duration:g} s from its first keyframe "
             "with `ctrl` held; mjcenic with default options (CENIC, accuracy 1e-3) called once per "
             "`opt.timestep` like `mj_step`. Real-time rate = simulated / wall time on one core; "
             "penetration = deepest contact seen (mjcenic: every geometry query it made). Models marked "
             "ccd_iterations run with MuJoCo's convex collider converged for both simulators "
             "(README, Known limitations).", "",
             "| model | mj_step RT rate | mjcenic RT rate | max pen. mj_step [mm] | max pen. mjcenic [mm] "
             "| steps (rejected) | Newton it./solve | warnings |", "|---|---|---|---|---|---|---|---|"]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['model']} | failed: {r['error'][:80]} |||||||")
            continue
        rt = r["sim_time"] / r["wall_time"] if r["wall_time"] else float("inf")
        mrt = r["sim_time"] / r["mjstep_wall_time"] if r["mjstep_wall_time"] else float("inf")
        it = r["newton_iterations"] / max(r["solves"], 1)
        name = r["model"] + (f" (ccd_iterations {r['ccd_iterations']}, both)"
                             if r["model"] in CONVERGED_COLLIDER else "")
        lines.append(f"| {name} | {mrt:.3g}x | {rt:.3g}x | {1e3 * r['mjstep_max_penetration']:.3g} "
                     f"| {1e3 * r['max_penetration']:.3g} | {r['accepted_steps']} ({r['rejected_steps']}) "
                     f"| {it:.2f} | {len(r['warnings'])} |")
    (out / "sweep.md").write_text("\n".join(lines) + "\n")

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = [r for r in records if "error" not in r]
    names = [r["model"].replace("menagerie/", "").replace("mujoco_warp/", "warp/") for r in ok]
    y = range(len(ok))
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(ok) + 1.5))
    ax.barh([i + 0.2 for i in y], [1e3 * r["mjstep_max_penetration"] for r in ok], 0.4,
            label="mj_step (model dt)")
    ax.barh([i - 0.2 for i in y], [1e3 * r["max_penetration"] for r in ok], 0.4,
            label="mjcenic (accuracy 1e-3)")
    ax.set_yticks(list(y), names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel("max penetration [mm]")
    ax.set_title(f"Shared models, {a.duration:g} s")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "sweep.png", dpi=120)
    print(f"wrote {out / 'sweep.json'}, {out / 'sweep.md'}, {out / 'sweep.png'}")


if __name__ == "__main__":
    main()
