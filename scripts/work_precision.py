#!/usr/bin/env python3
"""Work–precision of mjcenic and mj_step, each against its own converged reference.

    python3 scripts/work_precision.py [--out-dir docs/work_precision] [--scenes panda,humanoid]
                                      [--reps 3] [--quick]

Per scene (Panda, Allegro, humanoid falling, barkour, car, the pinch grasp,
clutter over 0.3 s) and per simulator:

* the reference is the same simulator at a tiny fixed step: mj_step at
  dt/2^REF_LEVEL, mjcenic in fixed mode at the same step. Its convergence is
  shown by the distance to the run at twice that step (the "check"): a
  first-order method's reference is then about that far from the exact
  trajectory, and errors below ~2x the check are not resolved;
* the sweep: mj_step at dt/2^k, k = 0..5; mjcenic at accuracy 1e-1..1e-5 for
  each error-estimate configuration (doubling = the paper's, embedded, and
  embedded with the full-state norm);
* achieved error: the trajectory error, max over the 20 ms samples of the
  tangent-space position difference (mj_differentiatePos; translations in m,
  rotations in rad, infinity norm), and the end error;
* wall time of the stepping loop, min over --reps repetitions, the runs of
  every configuration interleaved in one process (this machine is shared).

mjcenic runs sample the trajectory with Stepper.sample (interpolation inside
accepted steps; the step is not capped by the samples). Scenes with a
time-varying control hold ctrl for 20 ms periods (the same schedule for both
simulators), which does bound every simulator's step by 20 ms.

Writes OUT/work_precision.json, one OUT/<scene>.png per scene (error vs wall
time; error vs accuracy) and OUT/summary.md.
"""
import argparse
import json
import math
import os
import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MJCENIC_SHARED_MODELS", ROOT.parent / "shared" / "models"))
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))

import mujoco  # noqa: E402

import mjcenic  # noqa: E402

SAMPLE = 0.02  # [s] sample and control period
REF_LEVEL = 8  # reference step: dt / 2^REF_LEVEL
MJSTEP_LEVELS = range(0, 6)
ACCURACIES = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5]
REPEAT_LIMIT = 5.0  # [s] runs longer than this are timed once
CONFIGS = {  # label: stepper options
    "doubling": {},
    "embedded": {"error_estimate": "embedded"},
    "embedded+full_state": {"error_estimate": "embedded", "error_norm": "full_state"},
    "doubling+extrapolate": {"extrapolate": True},
    "global_accuracy": {"global_accuracy": True},
}
SCENES = {
    # name: (file, keyframe or None, horizon [s], control: "sine" or "hold")
    "panda": (SHARED / "menagerie/franka_emika_panda/scene.xml", None, 1.0, "sine"),
    "allegro": (SHARED / "menagerie/wonik_allegro/scene_right.xml", None, 1.0, "sine"),
    "humanoid": (SHARED / "mujoco/humanoid/humanoid.xml", None, 1.0, "hold"),
    "barkour": (SHARED / "mujoco/barkour_v0/assets/barkour_v0_mjx.xml", None, 1.0, "hold"),
    "car": (SHARED / "mujoco/car/car.xml", None, 1.0, "sine"),
    "pinch_grasp": (ROOT / "models/pinch_grasp.xml", "grip", 1.0, "hold"),
    "clutter": (ROOT / "models/clutter.xml", "drop", 0.3, "hold"),
}


class Scene:
    def __init__(self, name, path, key, horizon, control):
        self.name, self.horizon, self.control = name, horizon, control
        self.m = mjcenic.load_model(path)
        self.key = key
        d = mjcenic.make_data(self.m, key)
        self.ctrl0 = d.ctrl.copy()
        self.times = np.round(np.arange(1, round(horizon / SAMPLE) + 1) * SAMPLE, 12)

    def data(self):
        return mjcenic.make_data(self.m, self.key)

    def ctrl(self, t):
        """ctrl held over the period starting at t."""
        m = self.m
        if self.control == "hold" or m.nu == 0:
            return self.ctrl0
        lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
        limited = m.actuator_ctrllimited.astype(bool)
        half = np.where(limited, 0.5 * (hi - lo), 1.0)
        phase = np.arange(m.nu) * 0.7
        u = self.ctrl0 + 0.3 * half * np.sin(2 * np.pi * t + phase)
        return np.where(limited, np.clip(u, lo, hi), u)


def run_mjstep(sc, dt):
    m = sc.m
    d = sc.data()
    dt0 = m.opt.timestep
    m.opt.timestep = dt
    per = round(SAMPLE / dt)
    if abs(per * dt - SAMPLE) > 1e-9 * SAMPLE:
        m.opt.timestep = dt0
        raise ValueError(f"{sc.name}: dt {dt} does not divide the sample period {SAMPLE}")
    q = np.empty((len(sc.times), m.nq))
    start = time.perf_counter()
    try:
        for k in range(len(sc.times)):
            d.ctrl[:] = sc.ctrl(k * SAMPLE)
            for _ in range(per):
                mujoco.mj_step(m, d)
            q[k] = d.qpos
    finally:
        m.opt.timestep = dt0
    return q, time.perf_counter() - start, {"steps": per * len(sc.times)}


def run_mjcenic(sc, options):
    m = sc.m
    d = sc.data()
    sim = mjcenic.Stepper(m, **options)
    q = np.empty((len(sc.times), m.nq))
    start = time.perf_counter()
    if sc.control == "hold":
        q[:] = sim.sample(sc.times, d)["qpos"]
    else:
        for k, t in enumerate(sc.times):
            d.ctrl[:] = sc.ctrl(k * SAMPLE)
            q[k] = sim.sample([t], d)["qpos"][0]
    wall = time.perf_counter() - start
    st = sim.stats
    return q, wall, {key: st[key] for key in ("steps", "rejected_steps", "solves",
                                              "geometry_queries", "newton_iterations",
                                              "max_penetration")}


def traj_error(m, q, q_ref):
    dq = np.empty(m.nv)
    errs = []
    for a, b in zip(q, q_ref):
        mujoco.mj_differentiatePos(m, dq, 1.0, b, a)
        errs.append(float(np.max(np.abs(dq))) if m.nv else 0.0)
    errs = np.array(errs)
    if not np.all(np.isfinite(errs)):
        return math.inf, math.inf
    return float(errs.max()), float(errs[-1])


def bench_scene(sc, reps, quick, log, budget):
    m = sc.m
    dt = m.opt.timestep
    h_ref = dt / 2 ** REF_LEVEL
    log(f"[{sc.name}] nq={m.nq} nv={m.nv} dt={dt:g} horizon={sc.horizon} s; references at "
        f"h={h_ref:.3g} s")
    refs = {}
    for sim, runner, opts in (
            ("mj_step", lambda h: run_mjstep(sc, h), None),
            ("mjcenic", lambda h: run_mjcenic(sc, {"mode": "fixed", "max_step": h}), None)):
        q_ref, w_ref, _ = runner(h_ref)
        q_chk, _, _ = runner(2 * h_ref)
        chk, chk_end = traj_error(m, q_chk, q_ref)
        refs[sim] = {"q": q_ref, "h": h_ref, "check": chk, "check_end": chk_end,
                     "wall": w_ref}
        log(f"  {sim} reference: |x(2h) - x(h)| = {chk:.3g} (end {chk_end:.3g}), "
            f"{w_ref:.1f} s")
    runs = []
    levels = list(MJSTEP_LEVELS)[: 3 if quick else None]
    accs = ACCURACIES[: 3 if quick else None]
    for k in levels:
        runs.append({"sim": "mj_step", "series": "mj_step", "dt": dt / 2 ** k,
                     "fn": (lambda h=dt / 2 ** k: run_mjstep(sc, h))})
    for label, opts in CONFIGS.items():
        for a in accs:
            o = dict(opts, accuracy=a)
            runs.append({"sim": "mjcenic", "series": label, "accuracy": a,
                         "fn": (lambda o=o: run_mjcenic(sc, o))})
    for r in runs:
        r["wall"] = math.inf
        r["reps"] = 0
    over_budget = set()  # series whose previous (looser) level exceeded the budget
    for rep in range(reps):
        for r in runs:
            if r.get("skip"):
                continue
            if rep == 0 and r["series"] in over_budget:
                r["skipped"] = f"the looser level took more than {budget:g} s"
                r["skip"] = True
                continue
            if rep > 0 and r["wall"] > REPEAT_LIMIT:
                continue  # long runs are timed once: their noise is small
            try:
                q, wall, info = r["fn"]()
            except Exception as e:  # a failed run is reported, not fatal
                r["error_text"] = str(e).splitlines()[0]
                r["skip"] = True
                continue
            r["wall"] = min(r["wall"], wall)
            r["reps"] += 1
            if rep == 0:
                r["traj_error"], r["end_error"] = traj_error(m, q, refs[r["sim"]]["q"])
                r.update(info)
                if wall > budget:
                    over_budget.add(r["series"])
    out = []
    for r in runs:
        r.pop("fn")
        r.pop("skip", None)
        out.append(r)
        tag = f"dt={r['dt']:.3g}" if r["sim"] == "mj_step" else f"acc={r['accuracy']:g}"
        if "error_text" in r:
            log(f"  {r['series']:>20} {tag:>12}: failed: {r['error_text']}")
        elif "skipped" in r:
            log(f"  {r['series']:>20} {tag:>12}: skipped: {r['skipped']}")
        else:
            log(f"  {r['series']:>20} {tag:>12}: traj err {r['traj_error']:.3g} end "
                f"{r['end_error']:.3g} wall {r['wall'] * 1e3:8.1f} ms steps {r['steps']}")
    return {"scene": sc.name, "nq": int(m.nq), "nv": int(m.nv), "dt": dt,
            "horizon": sc.horizon, "control": sc.control,
            "references": {k: {kk: vv for kk, vv in v.items() if kk != "q"}
                           for k, v in refs.items()},
            "runs": out}


def cost_at(runs, series, target):
    """Wall time to reach traj error <= target along a series (log-linear
    interpolation between the bracketing runs; None if never reached)."""
    pts = sorted([(r["traj_error"], r["wall"]) for r in runs
                  if r["series"] == series and "traj_error" in r and math.isfinite(r["wall"])
                  and math.isfinite(r["traj_error"])], key=lambda p: -p[0])
    best = None
    for i, (e, w) in enumerate(pts):
        if e <= target:
            if i > 0 and pts[i - 1][0] > target:
                e0, w0 = pts[i - 1]
                f = (math.log(e0) - math.log(target)) / max(math.log(e0) - math.log(e), 1e-12)
                w = math.exp(math.log(w0) + f * (math.log(w) - math.log(w0)))
            best = w if best is None else min(best, w)
    return best


def summarize(results, log):
    lines = ["| scene | mj_step ref. check | mjcenic ref. check | series | achieved traj. error "
             "at accuracy 1e-2 / 1e-3 / 1e-4 | wall / mj_step's at error 1e-3 |", "|---|---|---|---|---|---|"]
    for res in results:
        runs = res["runs"]
        for series in CONFIGS:
            errs = []
            for a in (1e-2, 1e-3, 1e-4):
                r = [x for x in runs if x["series"] == series and x.get("accuracy") == a]
                errs.append(f"{r[0]['traj_error']:.2g}" if r and "traj_error" in r[0] else "—")
            target = 1e-3
            ours, theirs = cost_at(runs, series, target), cost_at(runs, "mj_step", target)
            if ours is None or theirs is None:  # the tightest error both reach
                both = [min((x["traj_error"] for x in runs
                             if x["series"] == s and "traj_error" in x), default=math.inf)
                        for s in (series, "mj_step")]
                target = max(both)
                ours, theirs = cost_at(runs, series, target), cost_at(runs, "mj_step", target)
            ratio = f"{ours / theirs:.2f} (at {target:.2g})" if ours and theirs else "—"
            lines.append(f"| {res['scene']} | {res['references']['mj_step']['check']:.2g} | "
                         f"{res['references']['mjcenic']['check']:.2g} | {series} | "
                         f"{' / '.join(errs)} | {ratio} |")
    text = "\n".join(lines)
    log(text)
    return text


def plot(res, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"mj_step": ("k", "s"), "doubling": ("C0", "o"), "embedded": ("C1", "^"),
              "embedded+full_state": ("C2", "v"), "doubling+extrapolate": ("C3", "D"),
              "global_accuracy": ("C4", "x")}
    for series, (c, mk) in styles.items():
        pts = [r for r in res["runs"] if r["series"] == series and "traj_error" in r
               and math.isfinite(r["traj_error"]) and r["traj_error"] > 0]
        if not pts:
            continue
        ax1.loglog([r["wall"] for r in pts], [r["traj_error"] for r in pts], color=c,
                   marker=mk, label=series)
        if series != "mj_step":
            ax2.loglog([r["accuracy"] for r in pts], [r["traj_error"] for r in pts], color=c,
                       marker=mk, label=series)
    for sim, ls in (("mj_step", ":"), ("mjcenic", "--")):
        ax1.axhline(res["references"][sim]["check"], color="grey", ls=ls, lw=0.8,
                    label=f"{sim} reference check")
    a = np.array(ACCURACIES)
    ax2.loglog(a, a, color="grey", lw=0.8, label="error = accuracy")
    ax2.loglog(a, 10 * a, color="grey", lw=0.8, ls="--", label="10 × accuracy")
    ax1.set_xlabel("wall time of the stepping loop [s]")
    ax1.set_ylabel("trajectory error (max over samples) [m, rad]")
    ax2.set_xlabel("accuracy")
    ax2.set_ylabel("trajectory error [m, rad]")
    ax2.invert_xaxis()
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{res['scene']} ({res['horizon']} s, nv={res['nv']}, dt={res['dt']:g})")
    fig.tight_layout()
    fig.savefig(out_dir / f"{res['scene']}.png", dpi=90)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--out-dir", default=str(ROOT / "docs" / "work_precision"))
    p.add_argument("--scenes", default=",".join(SCENES))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="3 levels per series")
    p.add_argument("--budget", type=float, default=30.0,
                   help="[s] a series stops at the first level whose run takes longer")
    p.add_argument("--series", default=",".join(CONFIGS),
                   help="mjcenic series to run (mj_step always runs)")
    a = p.parse_args()
    names = [s for s in a.scenes.split(",") if s]
    bad = [s for s in names if s not in SCENES]
    if bad:
        p.error(f"unknown scene(s) {bad}; known: {', '.join(SCENES)}")
    out_dir = pathlib.Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log_lines = []

    def log(s):
        print(s, flush=True)
        log_lines.append(s)

    for s in [s for s in a.series.split(",") if s]:
        if s not in CONFIGS:
            p.error(f"unknown series {s}; known: {', '.join(CONFIGS)}")
    for s in list(CONFIGS):
        if s not in a.series.split(","):
            del CONFIGS[s]
    results = []
    for name in names:
        sc = Scene(name, *SCENES[name])
        res = bench_scene(sc, a.reps, a.quick, log, a.budget)
        results.append(res)
        plot(res, out_dir)
        (out_dir / "work_precision.json").write_text(json.dumps(
            {"sample": SAMPLE, "ref_level": REF_LEVEL, "mujoco": mujoco.__version__,
             "results": results}, indent=1, default=float))
    (out_dir / "summary.md").write_text(summarize(results, log) + "\n")
    print(f"wrote {out_dir}/work_precision.json, summary.md and one PNG per scene")


if __name__ == "__main__":
    main()
