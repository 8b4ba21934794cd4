#!/usr/bin/env python3
"""Cost of mjcenic in an mj_step-style loop: step() once per
opt.timestep, ctrl held, on every top-level shared model.

    python3 scripts/bench_step_loop.py [--duration 0.5] [--reps 3] [--models a.xml,b.xml]
                                       [--out-dir docs/step_loop]

Per model, interleaved in one process (min over --reps; this machine is
shared): mj_step at the model's timestep, and mjcenic at accuracy 1e-3 with
dense output (the default: a call whose inputs were left as the previous call
wrote them may end inside an accepted step, docs/python.md "The stepper")
and without it (every call lands on t + opt.timestep: the step is capped by
the loop). Reports wall-time ratios to mj_step, mjcenic's accepted steps,
convex solves and Newton iterations per solve, the deepest penetration each run saw, and the difference
between the two mjcenic runs' final states (weighted norm, mjcenic.error_norm)
against the accuracy.

Writes OUT/step_loop.json, OUT/step_loop.png and, for an OUT under docs/, the
section of docs/benchmarks.md named after OUT ("step_loop" for docs/step_loop,
"step_loop/per_unit_step_0.3s" for docs/step_loop/per_unit_step_0.3s);
--from-json OUT/step_loop.json regenerates plot and section without
measuring, --no-page prints the section instead.
"""
import argparse
import json
import math
import os
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MJCENIC_SHARED_MODELS", ROOT.parent / "shared" / "models"))
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import mujoco  # noqa: E402

import mjcenic  # noqa: E402
from mjcenic._cliutil import key_value  # noqa: E402
from test_models import MODELS  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402

ACCURACY = 1e-3
# Models the acceptance median is taken over: robots (arms, hands, legged, humanoids).
ROBOTS = ("menagerie/", "mujoco/barkour", "mujoco/humanoid/humanoid.xml", "mujoco/car",
          "mujoco_warp/franka", "mujoco_warp/unitree_g1", "mujoco_warp/aloha")


def _number(text):
    """An option value as given on the command line, as a number if it is one (for the JSON)."""
    try:
        return float(text)
    except ValueError:
        return text


def max_penetration(m, d):
    return max([-d.contact[i].dist for i in range(d.ncon)] + [0.0])


def run_mjstep(m, d0, n, measure=False):
    """n mj_step calls from d0, timed; with measure, an untimed run that
    also records the deepest penetration after each step (the scan is
    Python work the timed loop must not contain)."""
    d = mujoco.MjData(m)
    mujoco.mj_copyData(d, m, d0)
    pen = 0.0
    start = time.perf_counter()
    if measure:
        for _ in range(n):
            mujoco.mj_step(m, d)
            if d.ncon:
                pen = max(pen, max_penetration(m, d))
    else:
        for _ in range(n):
            mujoco.mj_step(m, d)
    return time.perf_counter() - start, {"max_penetration": pen}, d


def run_mjcenic(m, d0, n, dense, options):
    d = mujoco.MjData(m)
    mujoco.mj_copyData(d, m, d0)
    sim = mjcenic.Stepper(m, **dict({"accuracy": ACCURACY}, **options), dense_output=dense)
    start = time.perf_counter()
    for _ in range(n):
        sim.step(d)
    wall = time.perf_counter() - start
    st = sim.stats
    return wall, {k: st[k] for k in ("steps", "rejected_steps", "solves", "newton_iterations",
                                     "max_penetration")}, d


def bench(rel, duration, reps, log, options):
    m = mjcenic.load_model(str(SHARED / rel))
    d0 = mujoco.MjData(m)
    if m.nkey:  # the first keyframe, as the sweep does
        mujoco.mj_resetDataKeyframe(m, d0, 0)
    mujoco.mj_forward(m, d0)
    n = max(1, round(duration / m.opt.timestep))
    runs = {"mj_step": lambda: run_mjstep(m, d0, n),
            "dense": lambda: run_mjcenic(m, d0, n, True, options),
            "capped": lambda: run_mjcenic(m, d0, n, False, options)}
    wall = {k: math.inf for k in runs}
    info, final = {}, {}
    for rep in range(reps):
        for k, fn in runs.items():
            if rep and wall[k] > 20:  # long runs are timed once
                continue
            w, i, d = fn()
            wall[k] = min(wall[k], w)
            if rep == 0:
                info[k], final[k] = i, d
    _, info["mj_step"], _ = run_mjstep(m, d0, n, measure=True)
    diff = mjcenic.error_norm(m, final["capped"].qpos, final["dense"].qpos)
    rec = {"model": rel, "nv": int(m.nv), "dt": m.opt.timestep, "calls": n, "wall": wall,
           "ratio_dense": wall["dense"] / wall["mj_step"],
           "ratio_capped": wall["capped"] / wall["mj_step"], "info": info,
           "dense_vs_capped_final": float(diff)}
    log(f"{rel:48s} dense {rec['ratio_dense']:6.2f}x capped {rec['ratio_capped']:6.2f}x  "
        f"steps {info['dense']['steps']:6d} vs {info['capped']['steps']:6d}  pen [mm] "
        f"{1e3 * info['mj_step']['max_penetration']:.3g} / "
        f"{1e3 * info['dense']['max_penetration']:.3g} / "
        f"{1e3 * info['capped']['max_penetration']:.3g}  |x_dense - x_capped| {diff:.2g}")
    return rec


def plot(records, out_dir, accuracy):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r["model"].replace("menagerie/", "").replace("/scene", "").replace(".xml", "")
             for r in records]
    y = np.arange(len(records))
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(records) + 1.5))
    ax.barh(y - 0.2, [r["ratio_capped"] for r in records], 0.4, label="dense_output=false")
    ax.barh(y + 0.2, [r["ratio_dense"] for r in records], 0.4, label="dense output (default)")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.axvline(1.5, color="grey", lw=0.8, ls="--", label="1.5×")
    ax.set_xscale("log")
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(f"wall time / mj_step's (step() once per opt.timestep, accuracy {accuracy:g})")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, axis="x", which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(out_dir / "step_loop.png", dpi=90)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--duration", type=float, default=0.5)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--models", default="", help="comma-separated paths under ../shared/models")
    p.add_argument("--out-dir", default=str(ROOT / "docs" / "step_loop"))
    _page.add_arguments(p)
    p.add_argument("--option", action="append", type=key_value, metavar="KEY=VALUE", default=[],
                   help="a stepper option for both mjcenic runs (repeatable; e.g. "
                        "error_per_unit_step=0.3 to measure a variant; accuracy overrides 1e-3)")
    a = p.parse_args()
    options = dict(a.option)
    if "dense_output" in options:
        p.error("--option dense_output: the benchmark runs both (dense and capped)")
    if not a.duration > 0 or a.reps < 1:
        p.error("--duration must be > 0 and --reps >= 1")
    models = [s for s in a.models.split(",") if s] or MODELS
    missing = [s for s in models if not (SHARED / s).exists()]
    if missing and not a.from_json:
        p.error(f"no such model(s) under {SHARED}: {missing}")
    out_dir = pathlib.Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if a.from_json:
        data = json.loads(pathlib.Path(a.from_json).read_text())
    else:
        records = [bench(rel, a.duration, a.reps, print, options) for rel in models]
        robots = [r for r in records if r["model"].startswith(ROBOTS)]
        summary = {
            "median_dense_all": statistics.median(r["ratio_dense"] for r in records),
            "median_capped_all": statistics.median(r["ratio_capped"] for r in records),
            "median_dense_robots": statistics.median(r["ratio_dense"] for r in robots) if robots else None,
            "median_capped_robots": statistics.median(r["ratio_capped"] for r in robots) if robots else None,
            "max_newton_per_solve_dense": max(
                r["info"]["dense"]["newton_iterations"] / max(r["info"]["dense"]["solves"], 1)
                for r in records),
            "robots": [r["model"] for r in robots]}
        print(json.dumps({k: v for k, v in summary.items() if k != "robots"}))
        data = {"duration": a.duration, "reps": a.reps,
                "accuracy": float(options.get("accuracy", ACCURACY)),
                "options": {k: _number(v) for k, v in options.items()},
                "mujoco": mujoco.__version__, "summary": summary, "records": records}
        (out_dir / "step_loop.json").write_text(json.dumps(data, indent=1))
    plot(data["records"], out_dir, data["accuracy"])
    print(f"wrote {out_dir}/step_loop.png")
    link = _page.link_dir(a, out_dir) or str(out_dir)
    _page.publish(a, out_dir, link, "bench_step_loop.py", section(data, link))


def section(data, link):
    """The page section: what was run, the medians and the per-model table."""
    sm, records = data["summary"], data["records"]
    opts = ", ".join(f"`{k}={v}`" for k, v in data.get("options", {}).items() if k != "accuracy")
    cmd = f"python3 scripts/bench_step_loop.py --duration {data['duration']:g} --reps {data['reps']}"
    cmd += "".join(f" --option {k}={v}" for k, v in data.get("options", {}).items())
    if link != "step_loop":
        cmd += f" --out-dir docs/{link}"
    lines = [
        f"`step()` once per `opt.timestep`, `ctrl` held, accuracy {data['accuracy']:g}"
        + (f", {opts}" if opts else "") + f", {data['duration']:g} s from the first keyframe, "
        "with `dense_output` on (the default) and off, against `mj_step` in the same loop: wall "
        f"time, minimum of {data['reps']} interleaved repetitions (`{cmd}`; MuJoCo {data['mujoco']}).",
        "",
        f"Median wall time / `mj_step`'s: {sm['median_dense_robots']:.2f} with dense output and "
        f"{sm['median_capped_robots']:.2f} with `dense_output=false` over the "
        f"{len(sm['robots'])} robots; {sm['median_dense_all']:.2f} and "
        f"{sm['median_capped_all']:.2f} over all {len(records)} models. Highest Newton "
        f"iterations per solve (dense): {sm['max_newton_per_solve_dense']:.2f}.", "",
        "| model | dense output / mj_step | dense_output=false / mj_step | steps (dense / capped) "
        "| Newton it./solve (dense) | max pen. [mm] mj_step / dense / capped "
        "| final-state difference (weighted) |",
        "|---|---|---|---|---|---|---|"]
    for r in records:
        i = r["info"]
        lines.append(f"| {r['model']} | {r['ratio_dense']:.2f} | {r['ratio_capped']:.2f} | "
                     f"{i['dense']['steps']} / {i['capped']['steps']} | "
                     f"{i['dense']['newton_iterations'] / max(i['dense']['solves'], 1):.2f} | "
                     f"{1e3 * i['mj_step']['max_penetration']:.3g} / "
                     f"{1e3 * i['dense']['max_penetration']:.3g} / "
                     f"{1e3 * i['capped']['max_penetration']:.3g} | {r['dense_vs_capped_final']:.2g} |")
    lines += ["", f"![step loop]({link}/step_loop.png)"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
