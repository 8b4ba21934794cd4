#!/usr/bin/env python3
"""Sinking at loose accuracy: max penetration of mjcenic at accuracy 1e-1, 1e-2
and 1e-3 against mj_step at the model's dt (issue 17, README "No sinking at
loose accuracy").

    python3 scripts/sinking.py [--out-dir docs/sinking] [--scenes mesh_drop,panda]
                               [--configs default,paper] [--loops chunk,step,sample]

Scenes: the heavy-mesh drop (models/mesh_drop.xml, scripts/gen_mesh_drop.py),
the work-precision scenes (scripts/work_precision.py: same files, keyframes,
horizons and 20 ms control schedule) and Newton's cradle.

Loops (mjcenic, each at every accuracy, per configuration):
  chunk:  advance_to() every 20 ms (the control period), the step capped by it;
  step:   an mj_step-style loop, step() once per opt.timestep;
  sample: Stepper.sample at the 20 ms sample times (the step is not capped by
          the samples; work_precision.py's loop).
Penetration = max(-dist) over the active contacts: for mjcenic the stepper's
own statistic (every state of the trajectory it queried: step starts,
accepted midpoints, outputs); for mj_step the contacts of every state it
stepped from. Criterion (issue 17): at 1e-1 and 1e-2, penetration <= 1.5x
that at 1e-3 and <= mj_step's (a floor of 0.1 mm is allowed on scenes whose
contacts barely penetrate).

Configurations: "default" (the defaults) and "paper" (penetration_tolerance=0,
the paper's configuration without the penetration check; cenic-math
§11.10).

Writes OUT/sinking.json and OUT/sinking.png.
"""
import argparse
import json
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import work_precision as wp  # noqa: E402  (scenes, ctrl schedule; imports mjcenic)

import mujoco  # noqa: E402

import mjcenic  # noqa: E402

ROOT = wp.ROOT
SAMPLE = wp.SAMPLE
ACCURACIES = [1e-1, 1e-2, 1e-3]
FLOOR = 1e-4  # [m] penetrations below this count as equal
SCENES = dict(wp.SCENES)
SCENES = {"mesh_drop": (ROOT / "models/mesh_drop.xml", "drop", 1.5, "hold"), **SCENES,
          "newton_cradle": (wp.SHARED / "mujoco/replicate/newton_cradle.xml", None, 1.0, "hold")}
CONFIGS = {"default": {}, "paper": {"penetration_tolerance": 0}}
LOOPS = ["chunk", "step", "sample"]


def penetration(d):
    if d.ncon == 0:
        return 0.0
    c = d.contact
    act = c.exclude[: d.ncon] == 0
    return float(max(0.0, -c.dist[: d.ncon][act].min())) if act.any() else 0.0


def run_mjstep(sc):
    m, d = sc.m, sc.data()
    per = round(SAMPLE / m.opt.timestep)
    pen = 0.0
    start = time.perf_counter()
    for k in range(len(sc.times)):
        d.ctrl[:] = sc.ctrl(k * SAMPLE)
        for _ in range(per):
            mujoco.mj_step(m, d)
            pen = max(pen, penetration(d))
    wall = time.perf_counter() - start
    mujoco.mj_forward(m, d)
    return {"pen": max(pen, penetration(d)), "wall": wall, "steps": per * len(sc.times)}


def run_mjcenic(sc, options, loop):
    m, d = sc.m, sc.data()
    sim = mjcenic.Stepper(m, **options)
    per = round(SAMPLE / m.opt.timestep)
    start = time.perf_counter()
    err = None
    try:
        if loop == "sample" and sc.control == "hold":  # one call: the step is never capped
            sim.sample(sc.times, d)
        for k, t in enumerate(sc.times if not (loop == "sample" and sc.control == "hold")
                              else []):
            d.ctrl[:] = sc.ctrl(k * SAMPLE)
            if loop == "chunk":
                sim.advance_to(t, d)
            elif loop == "step":
                sim.step(d, per)
            else:
                sim.sample([t], d)
    except Exception as e:  # reported, not fatal
        err = str(e).splitlines()[0]
    wall = time.perf_counter() - start
    st = sim.stats
    out = {"pen": st["max_penetration"], "wall": wall, "steps": st["steps"],
           "rejected": st["rejected_steps"], "solves": st["solves"]}
    if err:
        out["error"] = err
    return out


def verdict(pens, mj):
    """Issue 17's criterion on {accuracy: pen} and mj_step's pen."""
    ref = pens.get(1e-3)
    ok = True
    for a in (1e-1, 1e-2):
        p = pens.get(a)
        if p is None or ref is None:
            continue
        ok &= p <= max(1.5 * ref, FLOOR) and p <= max(mj, FLOOR)
    return bool(ok)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default=str(ROOT / "docs/sinking"))
    p.add_argument("--scenes", default=",".join(SCENES))
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--loops", default=",".join(LOOPS))
    p.add_argument("--option", action="append", default=[],
                   help="KEY=VALUE added to every configuration (e.g. to measure a variant)")
    p.add_argument("--no-plot", action="store_true")
    a = p.parse_args()
    extra = {}
    for kv in a.option:
        k, v = kv.split("=", 1)
        try:
            extra[k] = float(v) if k not in ("mode", "error_estimate", "error_norm") else v
        except ValueError:
            extra[k] = v
    names = [s for s in a.scenes.split(",") if s]
    configs = [c for c in a.configs.split(",") if c]
    loops = [x for x in a.loops.split(",") if x]
    out = pathlib.Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    res = {"accuracies": ACCURACIES, "loops": loops, "configs":
           {c: dict(CONFIGS[c], **extra) for c in configs}, "scenes": {}}
    for name in names:
        sc = wp.Scene(name, *SCENES[name])
        mj = run_mjstep(sc)
        r = {"dt": sc.m.opt.timestep, "horizon": sc.horizon, "mj_step": mj, "runs": {}}
        print(f"[{name}] mj_step pen {1e3 * mj['pen']:.3g} mm ({mj['wall']:.2f} s)", flush=True)
        for c in configs:
            opts = dict(CONFIGS[c], **extra)
            for loop in loops:
                rows = {}
                for acc in ACCURACIES:
                    rows[acc] = run_mjcenic(sc, dict(opts, accuracy=acc), loop)
                ok = verdict({acc: x["pen"] for acc, x in rows.items()}, mj["pen"])
                r["runs"][f"{c}/{loop}"] = {"ok": ok, "by_accuracy": {f"{acc:g}": x for acc, x in
                                                                      rows.items()}}
                print(f"  {c:8s} {loop:6s} " + "  ".join(
                    f"{acc:g}: {1e3 * x['pen']:7.3g} mm {x['steps']:6d} st {x['wall']:6.2f} s"
                    + (" ERR" if "error" in x else "") for acc, x in rows.items())
                    + ("  ok" if ok else "  SINKS"), flush=True)
        res["scenes"][name] = r
        (out / "sinking.json").write_text(json.dumps(res, indent=1) + "\n")
    if not a.no_plot:
        plot(res, out / "sinking.png")


def plot(res, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scenes = list(res["scenes"])
    keys = [k for k in next(iter(res["scenes"].values()))["runs"]]
    fig, axes = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 4.5), sharey=True,
                             squeeze=False)
    x = np.arange(len(scenes))
    for ax, key in zip(axes[0], keys):
        mj = np.array([res["scenes"][s]["mj_step"]["pen"] for s in scenes]) * 1e3
        for i, acc in enumerate(res["accuracies"]):
            y = [res["scenes"][s]["runs"][key]["by_accuracy"][f"{acc:g}"]["pen"] * 1e3
                 for s in scenes]
            ax.bar(x + (i - 1.5) * 0.2, np.maximum(y, 1e-3), 0.2, label=f"accuracy {acc:g}")
        ax.bar(x + 1.5 * 0.2, np.maximum(mj, 1e-3), 0.2, color="k", label="mj_step (model dt)")
        ax.set_yscale("log")
        ax.set_xticks(x, scenes, rotation=60, ha="right", fontsize=8)
        ax.set_title(key, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("max penetration [mm]")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
