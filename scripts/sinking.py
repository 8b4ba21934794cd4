#!/usr/bin/env python3
"""Sinking at loose accuracy: max penetration of mjcenic at accuracy 1e-1, 1e-2
and 1e-3 against mj_step at the model's dt (docs/benchmarks.md, "No sinking
at loose accuracy").

    python3 scripts/sinking.py [--out-dir docs/sinking] [--scenes mesh_drop,panda]
                               [--configs default,paper] [--loops chunk,step,sample]

Scenes: the heavy-mesh drop (models/mesh_drop.xml, scripts/gen_mesh_drop.py),
the work-precision scenes (scripts/work_precision.py: same files, keyframes,
horizons and 20 ms control schedule) and Newton's cradle.

Loops (mjcenic, each at every accuracy, per configuration):
  chunk:  advance_to() every 20 ms (the control period; with dense output, the
          default, the step is not capped by it while ctrl is held);
  step:   an mj_step-style loop, step() once per opt.timestep;
  sample: Stepper.sample at the 20 ms sample times (the step is not capped by
          the samples; work_precision.py's loop).
Penetration = max(-dist) over the active contacts: for mjcenic the stepper's
own statistic (every state of the trajectory it queried: step starts,
accepted midpoints, outputs); for mj_step the contacts of every state it
stepped from. Criterion: at 1e-1 and 1e-2, penetration <= 1.5x
that at 1e-3 and <= mj_step's (a floor of 0.1 mm is allowed on scenes whose
contacts barely penetrate).

Configurations: "default" (the defaults) and "paper" (penetration_tolerance=0,
the paper's configuration without the penetration check; cenic-math
§11.10).

Cost (--cost-reps N > 0): at accuracy 1e-3, per scene and loop, the steps and
the wall time of "default" against "paper", the two runs interleaved in one
process, min over N repetitions (this machine is shared); ratio = default /
paper.

Writes OUT/sinking.json, OUT/sinking.png and (for an OUT under docs/) the
"sinking" section of docs/benchmarks.md; --from-json OUT/sinking.json
regenerates plot and section without measuring, --no-page prints the section
instead.
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
    """The criterion on {accuracy: pen} and mj_step's pen."""
    ref = pens.get(1e-3)
    ok = True
    for a in (1e-1, 1e-2):
        p = pens.get(a)
        if p is None or ref is None:
            continue
        ok &= p <= max(1.5 * ref, FLOOR) and p <= max(mj, FLOOR)
    return bool(ok)


sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default=str(ROOT / "docs/sinking"))
    p.add_argument("--scenes", default=",".join(SCENES))
    p.add_argument("--configs", default=",".join(CONFIGS))
    p.add_argument("--loops", default=",".join(LOOPS))
    p.add_argument("--option", action="append", default=[],
                   help="KEY=VALUE added to every configuration (e.g. to measure a variant)")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--cost-reps", type=int, default=5,
                   help="repetitions of the interleaved cost runs at 1e-3 (0: none)")
    _page.add_arguments(p)
    a = p.parse_args()
    if a.from_json:
        res = json.loads(pathlib.Path(a.from_json).read_text())
        out = pathlib.Path(a.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        if not a.no_plot:
            plot(res, out / "sinking.png")
        _page.publish(a, out, "sinking", "sinking.py", section(res))
        return
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
        if a.cost_reps > 0:
            r["cost_1e-3"] = cost(sc, loops, a.cost_reps, extra)
        res["scenes"][name] = r
        (out / "sinking.json").write_text(json.dumps(res, indent=1) + "\n")
    if not a.no_plot:
        plot(res, out / "sinking.png")
    _page.publish(a, out, "sinking", "sinking.py", section(res))


def section(res):
    """The page section: what was run, the tables and the plot."""
    ok = {c: sum(all(r["runs"][f"{c}/{lp}"]["ok"] for lp in res["loops"] if f"{c}/{lp}" in r["runs"])
                 for r in res["scenes"].values()) for c in res["configs"]}
    n = len(res["scenes"])
    head = (f"Max penetration [mm] of mjcenic at accuracy "
            + " / ".join(f"{a:g}" for a in res["accuracies"])
            + " against `mj_step` at the model's dt, per loop; **sinks**: at a loose accuracy deeper "
            "than 1.5× the 1e-3 run's or than `mj_step`'s (`python3 scripts/sinking.py`). "
            "Scenes meeting the criterion in every loop: "
            + ", ".join(f"{c} {ok[c]} of {n}" for c in res["configs"]) + ".")
    return head + "\n\n" + summary(res).strip() + "\n\n![sinking](sinking/sinking.png)"


def cost(sc, loops, reps, extra):
    """Steps and wall time at 1e-3, default vs paper, interleaved, min of reps."""
    out = {}
    for loop in loops:
        best = {c: None for c in CONFIGS}
        for _ in range(reps):
            for c in CONFIGS:
                x = run_mjcenic(sc, dict(CONFIGS[c], **extra, accuracy=1e-3), loop)
                if best[c] is None or x["wall"] < best[c]["wall"]:
                    best[c] = x
        d, pp = best["default"], best["paper"]
        out[loop] = {"default": d, "paper": pp, "steps_ratio": d["steps"] / max(pp["steps"], 1),
                     "attempts_ratio": (d["steps"] + d["rejected"]) /
                     max(pp["steps"] + pp["rejected"], 1),
                     "wall_ratio": d["wall"] / pp["wall"]}
        print(f"  cost 1e-3 {loop:6s}: steps {d['steps']} vs {pp['steps']} "
              f"(attempts {d['steps'] + d['rejected']} vs {pp['steps'] + pp['rejected']}), "
              f"wall {d['wall']:.3f} vs {pp['wall']:.3f} s = {out[loop]['wall_ratio']:.2f}x",
              flush=True)
    return out


def summary(res):
    """Markdown tables: max penetration [mm] per scene (mj_step; default and
    paper at 1e-1 / 1e-2 / 1e-3, per loop) and the cost at 1e-3."""
    def mm(x):
        return f"{1e3 * x:.3g}"
    lines = []
    for loop in res["loops"]:
        lines += [f"Loop `{loop}`: max penetration [mm] at accuracy 1e-1 / 1e-2 / 1e-3", "",
                  "| scene | mj_step (model dt) | default | paper (`penetration_tolerance=0`) |",
                  "|---|---|---|---|"]
        for name, r in res["scenes"].items():
            cells = []
            for c in res["configs"]:
                run = r["runs"].get(f"{c}/{loop}")
                if run is None:
                    cells.append("—")
                    continue
                cells.append(" / ".join(mm(run["by_accuracy"][f"{a:g}"]["pen"])
                                        for a in res["accuracies"])
                             + ("" if run["ok"] else " **sinks**"))
            lines.append(f"| {name} | {mm(r['mj_step']['pen'])} | " + " | ".join(cells) + " |")
        lines.append("")
    if any("cost_1e-3" in r for r in res["scenes"].values()):
        lines += ["Cost at accuracy 1e-3, default / paper: accepted steps (ratio of attempts, "
                  "rejected included) and wall-time ratio (interleaved, min of reps; runs of a "
                  "few ms on a shared machine, so noisy)", "",
                  "| scene | " + " | ".join(f"{lp}: steps | {lp}: wall" for lp in res["loops"])
                  + " |", "|---|" + "---|---|" * len(res["loops"])]
        for name, r in res["scenes"].items():
            c = r.get("cost_1e-3")
            if not c:
                continue
            lines.append(f"| {name} | " + " | ".join(
                f"{c[lp]['default']['steps']} / {c[lp]['paper']['steps']} "
                f"({c[lp]['attempts_ratio']:.2f}×) | {c[lp]['wall_ratio']:.2f}×"
                for lp in res["loops"]) + " |")
        lines.append("")
    return "\n".join(lines)


def plot(res, path):
    """One panel per configuration (rows) and loop (columns): max penetration
    per scene at each accuracy, and mj_step's at the model dt."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scenes = list(res["scenes"])
    configs, loops = list(res["configs"]), list(res["loops"])
    fig, axes = plt.subplots(len(configs), len(loops), figsize=(4.6 * len(loops),
                             3.6 * len(configs)), sharey=True, squeeze=False)
    x = np.arange(len(scenes))
    mj = np.array([res["scenes"][s]["mj_step"]["pen"] for s in scenes]) * 1e3
    for row, c in enumerate(configs):
        for col, loop in enumerate(loops):
            ax = axes[row][col]
            for i, acc in enumerate(res["accuracies"]):
                y = [res["scenes"][s]["runs"][f"{c}/{loop}"]["by_accuracy"][f"{acc:g}"]["pen"]
                     * 1e3 for s in scenes]
                ax.bar(x + (i - 1.5) * 0.2, np.maximum(y, 1e-3), 0.2, label=f"accuracy {acc:g}")
            ax.bar(x + 1.5 * 0.2, np.maximum(mj, 1e-3), 0.2, color="k", label="mj_step (model dt)")
            ax.set_yscale("log")
            ax.set_ylim(1e-2, 500)
            ax.set_xticks(x, scenes if row == len(configs) - 1 else [""] * len(scenes),
                          rotation=60, ha="right", fontsize=8)
            ax.set_title(f"{c}, loop {loop}", fontsize=9)
            ax.grid(axis="y", alpha=0.3)
        axes[row][0].set_ylabel("max penetration [mm]")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
