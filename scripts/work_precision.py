#!/usr/bin/env python3
"""Work–precision of mjcenic and mj_step, each against its own converged reference.

    python3 scripts/work_precision.py [--out-dir docs/work_precision] [--scenes panda,humanoid]
                                      [--reps 3] [--quick] [--integrators euler,implicitfast,rk4]

Per scene (Panda, Allegro, Shadow hand, humanoid falling, barkour, unitree G1 on flat
ground, ALOHA with its pot, car, the pinch grasp, Robotiq and clutter over 0.3 s) and
per simulator:

* the reference is the same simulator at a tiny fixed step: mj_step at
  dt/2^REF_LEVEL (clutter: dt/1024), mjcenic in fixed mode at the same step (mjcenic.work_precision,
  shared with `mjcenic compare`). Its convergence is shown by the distance to
  the run at twice that step (the "check"): a first-order method's reference
  is then about that far from the exact trajectory, and errors below ~2x the
  check are not resolved; the observed orders from the finest levels and
  --ref-tol decide whether it is printed as converged. The five finest levels
  also give Richardson extrapolations of consecutive pairs (the method's order:
  1, RK4 4); where those converge with a smaller check, the reference is the
  finest extrapolation (wp.reference, cenic-math §14.6);
* the sweep: mj_step at dt/2^k, k = 0..5 with the model's own integrator
  ("mj_step"); with --integrators (default: all three), each of MuJoCo's
  integrators Euler, implicitfast and RK4 at dt x {4, 2, 1, 1/2, 1/4, 1/8}
  ("mj_step:euler", ...), each against its own reference (that integrator at
  dt/2^REF_LEVEL, shown converged like the others; a step that does not divide
  the 20 ms sample is sampled by interpolation and takes a new ctrl at its
  first step after the sample); mjcenic at accuracy 1e-1..1e-5 for
  each error-estimate configuration (doubling = the paper's, embedded, and
  embedded with the full-state norm);
* achieved error: the trajectory error, max over the 20 ms samples of the
  tangent-space position difference (mj_differentiatePos; translations in m,
  rotations in rad, infinity norm), and the end error;
* wall time of the stepping loop, min over --reps repetitions, the runs of
  every configuration interleaved in one process (this machine is shared).

mjcenic runs sample the trajectory with advance_to and dense_output=True
(interpolation inside accepted steps; the step is not capped by the samples). Scenes with a
time-varying control hold ctrl for 20 ms periods (the same schedule for both
simulators), which does bound every simulator's step by 20 ms.

Writes OUT/work_precision.json, one OUT/<scene>.png per scene (error vs wall
time; error vs accuracy) and the summary table: for an OUT under docs/, as the
section of docs/benchmarks.md named after OUT ("work_precision" for
docs/work_precision, "work_precision/ingredients" for docs/work_precision/ingredients),
else as OUT/summary.md. --from-json OUT/work_precision.json regenerates the plots and
the section without measuring (a JSON named work_precision_X.json: the section
OUT-name + "_X"); --no-page prints the section instead.
"""
import argparse
import copy
import pickle
import json
import math
import os
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MJCENIC_SHARED_MODELS", ROOT.parent / "shared" / "models"))
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))

import mujoco  # noqa: E402

import mjcenic  # noqa: E402
from mjcenic import work_precision as wp  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402

SAMPLE = 0.02  # [s] sample and control period
REF_LEVEL = 8  # reference step: dt / 2^REF_LEVEL (a scene may ask for a finer one)
MJSTEP_LEVELS = range(0, 6)
# MuJoCo's integrators, each a series at dt * 2^-k, k = -2..3 (dt x 4 ... dt / 8).
MJ_INTEGRATORS = {"euler": mujoco.mjtIntegrator.mjINT_EULER,
                  "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
                  "rk4": mujoco.mjtIntegrator.mjINT_RK4}
INTEGRATOR_LEVELS = range(-2, 4)
ACCURACIES = [1e-1, 1e-2, 1e-3, 1e-4, 1e-5]
CONFIGS = {  # label: stepper options
    "doubling": {},
    "embedded": {"error_estimate": "embedded"},
    "embedded+full_state": {"error_estimate": "embedded", "error_norm": "full_state"},
    "doubling+extrapolate": {"extrapolate": True},
    "global_accuracy": {"global_accuracy": True},
    # What each part of global_accuracy buys on its own, and the second-order
    # scheme (docs/benchmarks.md, "What each ingredient buys"; not in the default run).
    "doubling+full_state": {"error_norm": "full_state"},
    "trapezoid": {"mode": "trapezoid"},
    "trapezoid+full_state": {"mode": "trapezoid", "error_norm": "full_state"},
    # Velocity errors weighted by the position error they will cause under the
    # step's own damping, capped by velocity_horizon (cenic-math §11.11).
    "doubling+propagated": {"error_norm": "propagated"},
    "doubling+propagated_0.1s": {"error_norm": "propagated", "velocity_horizon": 0.1},
    "doubling+propagated_modes": {"error_norm": "propagated_modes"},
    "doubling+propagated_modes_0.1s": {"error_norm": "propagated_modes", "velocity_horizon": 0.1},
    # Error per unit step: a step of h may make accuracy·h/T of error.
    "doubling+per_unit_step": {"error_per_unit_step": 1.0},
    "doubling+per_unit_step_0.3s": {"error_per_unit_step": 0.3},
    "doubling+per_unit_step_0.1s": {"error_per_unit_step": 0.1},
}
# The benchmark table's columns; the slow series (global_accuracy, the full-state
# norms: 10^3-10^5 steps per second) run with --series.
DEFAULT_SERIES = ["doubling", "embedded", "doubling+extrapolate"]
SCENES = {
    # name: (file, keyframe or None, horizon [s], control: "sine" or "hold"[, reference level])
    "panda": (SHARED / "menagerie/franka_emika_panda/scene.xml", None, 1.0, "sine"),
    "allegro": (SHARED / "menagerie/wonik_allegro/scene_right.xml", None, 1.0, "sine"),
    "shadow_hand": (SHARED / "menagerie/shadow_hand/scene_right.xml", None, 1.0, "sine"),
    "humanoid": (SHARED / "mujoco/humanoid/humanoid.xml", None, 1.0, "hold"),
    "barkour": (SHARED / "mujoco/barkour_v0/assets/barkour_v0_mjx.xml", None, 1.0, "hold"),
    # unitree_g1_flat: from its "home" keyframe on flat ground under its position servos; the
    # keyframe's ctrl lists the joints in another order than the actuators, so the servos pull the
    # joints away and the robot falls (under mj_step too). Its feet leave the floor in the first
    # milliseconds, where the lagged friction bound (cenic-math §4.5) gives mjcenic's fixed steps
    # a large first-order constant.
    "unitree_g1_flat": (SHARED / "mujoco_warp/unitree_g1/scene_flat.xml", "home", 1.0, "hold"),
    # aloha: both arms at the first keyframe, a pot on the table, fingers tied by joint equalities.
    "aloha": (SHARED / "mujoco_warp/aloha_pot/scene.xml", None, 1.0, "hold"),
    "car": (SHARED / "mujoco/car/car.xml", None, 1.0, "sine"),
    "pinch_grasp": (ROOT / "models/pinch_grasp.xml", "grip", 1.0, "hold"),
    # robotiq_2f85: a box hanging from a spatial tendon limit that starts violated by 2.09 cm
    # (cenic-math §5) below a gripper closed by a four-bar (two connects).
    "robotiq_2f85": (SHARED / "menagerie/robotiq_2f85/scene.xml", None, 0.3, "hold"),
    # clutter: both references converge at first order, mjcenic's with ~4x mj_step's constant
    # after the first impacts (docs/benchmarks.md "Work-precision against mj_step"); its check
    # falls below 1e-3 only at dt/1024.
    "clutter": (ROOT / "models/clutter.xml", "drop", 0.3, "hold", 10),
}


class Scene:
    def __init__(self, name, path, key, horizon, control, ref_level=REF_LEVEL):
        self.name, self.horizon, self.control = name, horizon, control
        self.ref_level = ref_level
        self.m = mjcenic.load_model(path)
        self.key = key
        d = mjcenic.make_data(self.m, key)
        self.ctrl0 = d.ctrl.copy()
        self.times = np.round(np.arange(1, round(horizon / SAMPLE) + 1) * SAMPLE, 12)

    def data(self):
        return mjcenic.make_data(self.m, self.key)

    def model_with(self, integrator):
        """A copy of the model stepped by mj_step with `integrator` (a MJ_INTEGRATORS key)."""
        mm = copy.deepcopy(self.m)
        mm.opt.integrator = MJ_INTEGRATORS[integrator]
        return mm

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


def run_mjstep(sc, dt, m=None):
    """mj_step at dt on sc's model, or on m (a copy with another integrator); only the model's
    own series must divide the sample period."""
    per = round(SAMPLE / dt)
    if m is None and abs(per * dt - SAMPLE) > 1e-9 * SAMPLE:
        raise ValueError(f"{sc.name}: dt {dt} does not divide the sample period {SAMPLE}")
    r = wp.run_mjstep(sc.m if m is None else m, dt, sc.times, sc.data, ctrl=sc.ctrl)
    return r, {"steps": r.steps}


def is_mjstep(series):
    """Whether a series is mj_step's (the model's integrator, or "mj_step:<integrator>")."""
    return series == "mj_step" or series.startswith("mj_step:")


def run_mjcenic(sc, options, time_limit=math.inf):
    r = wp.run_mjcenic(sc.m, options, sc.times, sc.data, ctrl=sc.ctrl, time_limit=time_limit)
    if r.error is not None:
        raise RuntimeError(r.error)
    st = r.stats
    return r, {key: st[key] for key in ("steps", "rejected_steps", "solves",
                                        "geometry_queries", "newton_iterations",
                                        "max_penetration")}


def bench_scene(sc, reps, quick, log, budget, ref_tol, ref_cache=None, integrators=()):
    m = sc.m
    dt = m.opt.timestep
    log(f"[{sc.name}] nq={m.nq} nv={m.nv} dt={dt:g} horizon={sc.horizon} s; references at "
        f"h={dt / 2 ** sc.ref_level:.3g} s")
    refs = {}
    models = {"mj_step": m, "mjcenic": m}
    models.update({f"mj_step:{i}": sc.model_with(i) for i in integrators})
    for sim, mm in models.items():
        # --ref-cache: the references do not depend on the series (fixed steps),
        # so a second run of other series can reuse them (pickle per scene).
        cache = (pathlib.Path(ref_cache) / f"{sc.name}_{sc.horizon:g}s_{sim.replace(':', '_')}.pkl"
                 if ref_cache else None)
        if cache is not None and cache.exists():
            ref = pickle.loads(cache.read_bytes())
        else:
            kind = "mjcenic" if sim == "mjcenic" else "mj_step"
            ref = wp.reference(mm, wp.runner(kind, mm, sc.times, sc.data, ctrl=sc.ctrl), dt,
                               levels=(sc.ref_level - 4, sc.ref_level), tol=ref_tol,
                               stop_early=False, log=log, label=sim,
                               order=wp.method_order(kind, mm))
            if cache is not None:
                cache.parent.mkdir(parents=True, exist_ok=True)
                cache.write_bytes(pickle.dumps(ref))
        refs[sim] = ref
        order = f"{ref['order']:.2f}" if ref["order"] is not None else "—"
        check = "—" if ref["check"] is None else f"{ref['check']:.3g}"
        end = "—" if ref["check_end"] is None else f"{ref['check_end']:.3g}"
        log(f"  {sim} reference{' (Richardson)' if ref.get('extrapolated') else ''}: "
            f"|x(2h) - x(h)| = {check} (end {end}), observed order {order}, "
            + ("converged" if ref["converged"] else f"NOT CONVERGED: {ref['note']}")
            + f", {ref['wall'] or 0:.1f} s")
    runs = []
    levels = list(MJSTEP_LEVELS)[: 3 if quick else None]
    accs = ACCURACIES[: 3 if quick else None]
    for k in levels:
        runs.append({"sim": "mj_step", "series": "mj_step", "dt": dt / 2 ** k,
                     "fn": (lambda h=dt / 2 ** k: run_mjstep(sc, h))})
    for i in integrators:
        sim = f"mj_step:{i}"
        for k in list(INTEGRATOR_LEVELS)[: 3 if quick else None]:
            runs.append({"sim": sim, "series": sim, "dt": dt * 2.0 ** -k,
                         "fn": (lambda h=dt * 2.0 ** -k, mm=models[sim]: run_mjstep(sc, h, mm))})
    for label, opts in CONFIGS.items():
        for a in accs:
            o = dict(opts, accuracy=a)
            runs.append({"sim": "mjcenic", "series": label, "accuracy": a,
                         # a run is cut at 4x the budget (reported as failed, the
                         # series stops): one tight level can otherwise run for minutes
                         "fn": (lambda o=o: run_mjcenic(sc, o, 4 * budget))})

    def first(r, run, info):
        if run.error is None:
            r["traj_error"], r["end_error"] = wp.traj_error(m, run.q, refs[r["sim"]]["run"].q)
        r.update(info)

    wp.time_interleaved(runs, reps, budget, first=first)
    out = []
    for r in runs:
        if r["reps"] == 0:
            r.pop("wall")
            r.pop("reps")
        out.append(r)
        tag = f"dt={r['dt']:.3g}" if is_mjstep(r["sim"]) else f"acc={r['accuracy']:g}"
        if "error_text" in r:
            log(f"  {r['series']:>20} {tag:>12}: failed: {r['error_text']}")
        elif "skipped" in r:
            log(f"  {r['series']:>20} {tag:>12}: skipped: {r['skipped']}")
        else:
            log(f"  {r['series']:>20} {tag:>12}: traj err {r['traj_error']:.3g} end "
                f"{r['end_error']:.3g} wall {r['wall'] * 1e3:8.1f} ms steps {r['steps']}")
    return {"scene": sc.name, "nq": int(m.nq), "nv": int(m.nv), "dt": dt, "ref_level": sc.ref_level,
            "horizon": sc.horizon, "control": sc.control,
            "references": {k: wp.summary(v) for k, v in refs.items()},
            "runs": out}


cost_at = wp.cost_at


def best_mjstep_cost(runs, target):
    """The least wall time of any mj_step integrator series to reach `target` (None if none
    does)."""
    costs = [cost_at(runs, s, target) for s in dict.fromkeys(x["series"] for x in runs)
             if s.startswith("mj_step:")]
    costs = [c for c in costs if c is not None]
    return min(costs) if costs else None


def integrators_of(res):
    """The mj_step integrator series a scene's results have, in run order."""
    return list(dict.fromkeys(x["series"] for x in res["runs"] if x["series"].startswith("mj_step:")))


def summary_rows(results, series_list):
    """Per scene and series: the references' checks, the achieved errors at 1e-2 / 1e-3 / 1e-4
    and wall / mj_step's at error 1e-3 (or at the tightest error both reach) with that error;
    with integrator series, also wall / the best integrator's at the same error."""
    rows = []
    for res in results:
        runs = res["runs"]
        integrators = integrators_of(res)
        for series in series_list:
            if not any(x["series"] == series for x in runs):
                continue
            errs = []
            for a in (1e-2, 1e-3, 1e-4):
                r = [x for x in runs if x["series"] == series and x.get("accuracy") == a]
                errs.append(r[0]["traj_error"] if r and "traj_error" in r[0] else None)
            target = 1e-3
            ours, theirs = cost_at(runs, series, target), cost_at(runs, "mj_step", target)
            if ours is None or theirs is None:  # the tightest error both reach
                both = [min((x["traj_error"] for x in runs
                             if x["series"] == s and "traj_error" in x), default=math.inf)
                        for s in (series, "mj_step")]
                target = max(both)
                ours, theirs = cost_at(runs, series, target), cost_at(runs, "mj_step", target)
            best = best_mjstep_cost(runs, target) if integrators else None
            row_extra = {}
            if integrators:
                row_extra = {"best_ratio": ours / best if ours and best else None,
                             "integrator_checks": [(res["references"][s]["check"],
                                                    res["references"][s]["converged"],
                                                    res["references"][s].get("extrapolated"))
                                                   for s in integrators]}
            rows.append({"scene": res["scene"], "series": series, "errors": errs, "target": target,
                         **row_extra,
                         "ratio": ours / theirs if ours and theirs else None,
                         "checks": [res["references"][k]["check"] for k in ("mj_step", "mjcenic")],
                         "converged": [res["references"][k]["converged"] for k in ("mj_step", "mjcenic")],
                         "extrapolated": [res["references"][k].get("extrapolated")
                                          for k in ("mj_step", "mjcenic")]})
    return rows


def _check(c, ok, extrapolated=False):
    return (("—" if c is None else f"{c:.2g}") + (" ᴿ" if extrapolated else "")
            + ("" if ok else " (**n.c.**)"))


def summarize(results, log=print, series_list=None):
    series_list = series_list or list(dict.fromkeys(
        x["series"] for res in results for x in res["runs"] if not is_mjstep(x["series"])))
    rows = summary_rows(results, series_list)
    integrators = any("best_ratio" in r for r in rows)
    lines = ["| scene | mj_step ref. check | mjcenic ref. check | series | achieved traj. error "
             "at accuracy 1e-2 / 1e-3 / 1e-4 | wall / mj_step's at error 1e-3 |"
             + (" Euler / implicitfast / RK4 ref. checks | wall / best integrator's |"
                if integrators else ""),
             "|---|---|---|---|---|---|" + ("---|---|" if integrators else "")]
    for r in rows:
        checks = [_check(c, ok, x) for c, ok, x in
                  zip(r["checks"], r["converged"], r.get("extrapolated", [False, False]))]
        errs = " / ".join("—" if e is None else f"{e:.2g}" for e in r["errors"])
        ratio = f"{r['ratio']:.2f} (at {r['target']:.2g})" if r["ratio"] is not None else "—"
        line = f"| {r['scene']} | {checks[0]} | {checks[1]} | {r['series']} | {errs} | {ratio} |"
        if integrators:
            ichecks = " / ".join(_check(*c) for c in r.get("integrator_checks", []))
            best = r.get("best_ratio")
            line += (f" {ichecks or '—'} | "
                     + (f"{best:.2f} (at {r['target']:.2g})" if best is not None else "—") + " |")
        lines.append(line)
    text = "\n".join(lines)
    log(text)
    return text


def section(data, link):
    """The page section: the run, the medians, the summary table and the plots."""
    results = data["results"]
    series_list = list(dict.fromkeys(x["series"] for res in results for x in res["runs"]
                                     if not is_mjstep(x["series"])))
    rows = summary_rows(results, series_list)
    medians = []
    for series in series_list:
        vals = [r["ratio"] for r in rows if r["series"] == series and r["ratio"] is not None]
        if vals:
            medians.append(f"{series} {_page.median(vals):.2f}")
    best = []
    for series in series_list:
        vals = [r["best_ratio"] for r in rows if r["series"] == series and r.get("best_ratio")]
        if vals:
            best.append(f"{series} {_page.median(vals):.2f}")
    scenes = [res["scene"] for res in results]
    any_extrapolated = any(ref.get("extrapolated") for res in results
                           for ref in res["references"].values())
    cmd = "python3 scripts/work_precision.py"
    if link != "work_precision":
        cmd += (f" --out-dir docs/{link.split('/_')[0]} --scenes {','.join(scenes)}"
                f" --series {','.join(series_list)}")
    head = (f"Achieved trajectory error (max over the {1e3 * data['sample']:g} ms samples; m and "
            "rad) of each series against its own simulator's converged reference, and wall time "
            "against `mj_step`'s at equal error (`" + cmd + f"`; MuJoCo {data['mujoco']}). "
            "**n.c.**: the reference is not converged (errors below about twice its check are not "
            "resolved)" + ("; **ᴿ**: the reference is the Richardson extrapolation of its two "
                           "finest levels, and its check is that of consecutive extrapolated "
                           "levels" if any_extrapolated else "") + ". "
            f"Median over the {len(scenes)} scenes of wall / `mj_step`'s at equal error: "
            + ", ".join(medians) + "."
            + (" Median of wall / the best of `mj_step`'s integrators (Euler, implicitfast, RK4 "
               "at dt × 4 … dt / 8, each against its own reference) at equal error: "
               + ", ".join(best) + "." if best else ""))
    suffix = link.split("/_work_precision")[1] if "/_work_precision" in link else ""
    plots = ", ".join(f"[{s}]({link.split('/_')[0]}/{s}{suffix}.png)" for s in scenes)
    return head + "\n\n" + summarize(results, lambda _: None, series_list) + "\n\nPlots per scene: " + plots


wp.STYLES.update({"mj_step:euler": ("0.45", "s"), "mj_step:implicitfast": ("0.3", "P"),
                  "mj_step:rk4": ("0.6", "*")})


def plot(res, out_dir, suffix=""):
    wp.plot(res, out_dir / f"{res['scene']}{suffix}.png", ACCURACIES)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--out-dir", default=str(ROOT / "docs" / "work_precision"))
    p.add_argument("--scenes", default=",".join(SCENES))
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="3 levels per series")
    p.add_argument("--budget", type=float, default=30.0,
                   help="[s] a series stops at the first level whose run takes longer")
    p.add_argument("--ref-tol", type=float, default=1e-3,
                   help="[m, rad] a reference whose check exceeds this is reported as not "
                        "converged (1e-3)")
    p.add_argument("--ref-cache", default=None,
                   help="directory: reuse (or store) each scene's references there")
    p.add_argument("--horizon", type=float, default=None,
                   help="[s] simulate every scene over this time instead of its own horizon")
    p.add_argument("--series", default=",".join(DEFAULT_SERIES),
                   help="mjcenic series to run (mj_step always runs)")
    p.add_argument("--integrators", default=",".join(MJ_INTEGRATORS),
                   help="mj_step series per integrator at dt x 4 ... dt / 8, each against its "
                        "own reference ('' for none; default: " + ",".join(MJ_INTEGRATORS) + ")")
    _page.add_arguments(p)
    a = p.parse_args()
    if a.from_json:
        data = json.loads(pathlib.Path(a.from_json).read_text())
        out_dir = pathlib.Path(a.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        for res in data["results"]:
            plot(res, out_dir, pathlib.Path(a.from_json).stem[len("work_precision"):])
        publish(a, out_dir, data, pathlib.Path(a.from_json).stem)
        return
    if a.horizon is not None and not (a.horizon >= SAMPLE and math.isfinite(a.horizon)):
        p.error(f"--horizon {a.horizon:g}: must be at least one sample ({SAMPLE:g} s)")
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

    integrators = [i for i in a.integrators.split(",") if i]
    bad = [i for i in integrators if i not in MJ_INTEGRATORS]
    if bad:
        p.error(f"unknown integrator(s) {bad}; known: {', '.join(MJ_INTEGRATORS)}")
    for s in [s for s in a.series.split(",") if s]:
        if s not in CONFIGS:
            p.error(f"unknown series {s}; known: {', '.join(CONFIGS)}")
    for s in list(CONFIGS):
        if s not in a.series.split(","):
            del CONFIGS[s]
    results = []
    for name in names:
        file, key, horizon, *rest = SCENES[name]
        sc = Scene(name, file, key, a.horizon or horizon, *rest)
        res = bench_scene(sc, a.reps, a.quick, log, a.budget, a.ref_tol, a.ref_cache, integrators)
        results.append(res)
        plot(res, out_dir)
        (out_dir / "work_precision.json").write_text(json.dumps(
            {"sample": SAMPLE, "ref_level": REF_LEVEL, "mujoco": mujoco.__version__,
             "results": results}, indent=1, default=float))
    data = {"sample": SAMPLE, "ref_level": REF_LEVEL, "mujoco": mujoco.__version__, "results": results}
    if _page.link_dir(a, out_dir) is None:
        (out_dir / "summary.md").write_text(summarize(results, log) + "\n")
    print(f"wrote {out_dir}/work_precision.json and one PNG per scene")
    publish(a, out_dir, data, "work_precision")


def publish(a, out_dir, data, stem):
    link = _page.link_dir(a, out_dir) or str(out_dir)
    name = link + stem[len("work_precision"):]
    _page.publish(a, out_dir, name, "work_precision.py",
                  section(data, link + ("/_" + stem if stem != "work_precision" else "")))
    if name == "work_precision" and not a.no_page and not a.page and not a.from_json:
        # README.md's achieved-error table is read from the committed run just written.
        import gen_readme_tables
        gen_readme_tables.main([])


if __name__ == "__main__":
    main()
