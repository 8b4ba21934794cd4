#!/usr/bin/env python3
"""Cost of mjcenic in the loop a controller runs: d.ctrl written before every
call, one call per opt.timestep, against mj_step in the same loop.

    python3 scripts/bench_policy_loop.py [--duration 1] [--reps 3] [--min-time 2] [--models a.xml,b.xml]
                                         [--configs default,embedded,fixed] [--out-dir DIR]
                                         [--parts loop,rollout] [--rollout-reps 10]

Per model (first keyframe, or the model's initial state; the mesh pile for at
least 2 s, its drop and rest), interleaved in one process, the minimum over
--reps (at least; more until mj_step's runs add up to --min-time, so a loop of a
few milliseconds is not judged by a handful of runs) of the process CPU time
(this machine is shared: CPU time is what a loaded machine can still compare):

* mj_step, and mjcenic in each configuration of --configs:
  default   the stepper's defaults (error-controlled step doubling, accuracy 1e-3,
            dense output);
  embedded  error_estimate=embedded;
  fixed     mode=fixed (one convex solve per call at the model's timestep);
  extrapolate  extrapolate=true (not in the default --configs; cenic-math §11.1);
* each in two loops: ``every`` writes ctrl = ctrl0 + 0.01 * width * sin(2 pi t)
  before every call (width: the actuator's ctrlrange, 1 where unlimited), the
  loop policies, MPC and RL run; ``held`` leaves ctrl at ctrl0 (the best case
  for dense output, which may then end a call inside a longer step).

Reports CPU ratios to mj_step in the same loop, mjcenic's accepted and rejected
steps, convex solves, Newton iterations per solve, and the deepest penetration
of each run. Writes DIR/policy_loop.json, DIR/policy_loop.png (DIR defaults
to docs/policy_loop) and the "policy_loop" section of docs/benchmarks.md (into
docs/policy_loop: also the loop-cost column of README.md's accuracy table).

The rollout part (--parts rollout) runs the same loop as a batch: mjcenic.rollout
against mujoco.rollout.rollout on --rollout-model (the Shadow hand), --nbatch
initial states (the first keyframe, hinge and slide joints jittered by up to
0.02) x --nstep steps, the control array (nbatch x nstep x nu) the ``every``
loop's wave, --nthread threads and one MjData per thread for both, both
returning state and sensordata; interleaved, the minimum over --rollout-reps of
the wall and the process CPU time of each call, and mjcenic's ratios to
mujoco's. Writes DIR/rollout.json, DIR/rollout.png and the
"policy_loop_rollout" section.

--from-json DIR/policy_loop.json (or DIR/rollout.json) regenerates that part's
plot and section without measuring, --no-page prints the section instead. Not
a test: it only measures.
"""
import argparse
import json
import math
import os
import pathlib
import resource
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("MJCENIC_SHARED_MODELS", ROOT.parent / "shared" / "models"))
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))

import mujoco  # noqa: E402

import mjcenic  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402

ROBOTS = [
    "menagerie/franka_emika_panda/scene.xml",
    "menagerie/shadow_hand/scene_right.xml",
    "menagerie/wonik_allegro/scene_right.xml",
    "menagerie/robotiq_2f85/scene.xml",
    "menagerie/kuka_iiwa_14/scene.xml",
    "mujoco/humanoid/humanoid.xml",
    "mujoco/barkour_v0/assets/barkour_v0_mjx.xml",
    "mujoco_warp/unitree_g1/scene_flat.xml",
    "mujoco_warp/aloha_pot/scene.xml",
]
PILE = ROOT / "models" / "mesh_pile_125.xml"
PILE_DURATION = 2.0  # [s] the pile's drop, impacts and rest (it settles after about 1.4 s)
ROLLOUT_MODEL = "menagerie/shadow_hand/scene_right.xml"
MAX_REPS = 1000  # --min-time's repetitions stop here (a model whose mj_step loop takes microseconds)
PARTS = ("loop", "rollout")
CONFIGS = {"default": {}, "embedded": {"error_estimate": "embedded"}, "fixed": {"mode": "fixed"},
           "extrapolate": {"extrapolate": True}}


def initial_state(m):
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    return d


def control_wave(m, d0):
    """ctrl(t) = ctrl0 + 0.01 width sin(2 pi t), clamped to the range."""
    ctrl0 = d0.ctrl.copy()
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    limited = (m.actuator_ctrllimited == 1) | (
        (m.actuator_ctrllimited == 2) & ((m.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_CLAMPCTRL) == 0)
        & (hi > lo))
    width = np.where(limited, hi - lo, 1.0)

    def ctrl(t):
        c = ctrl0 + 0.01 * width * math.sin(2 * math.pi * t)
        return np.where(limited, np.clip(c, lo, hi), c)
    return ctrl


def loop(m, d0, n, step, ctrl):
    """n calls of step(d) from d0; ctrl(t) (or None: held) written before each."""
    d = mujoco.MjData(m)
    mujoco.mj_copyData(d, m, d0)
    start = time.process_time()
    if ctrl is None:
        for _ in range(n):
            step(d)
    else:
        for _ in range(n):
            d.ctrl[:] = ctrl(d.time)
            step(d)
    return time.process_time() - start, d


def deepest(d):
    """The deepest contact of d's contact list [m] (0 without one)."""
    return max(0.0, -float(d.contact.dist.min())) if d.ncon else 0.0


def mjstep_penetration(m, d0, n, ctrl):
    """The deepest contact of mj_step's trajectory (untimed): after each mj_step, d's contacts
    are those of the state the step started from; the last state by mj_forward."""
    d = mujoco.MjData(m)
    mujoco.mj_copyData(d, m, d0)
    pen = 0.0
    for _ in range(n):
        if ctrl is not None:
            d.ctrl[:] = ctrl(d.time)
        mujoco.mj_step(m, d)
        pen = max(pen, deepest(d))
    mujoco.mj_forward(m, d)
    return max(pen, deepest(d))


def bench(path, duration, reps, configs, log, min_time=0.0):
    if path.resolve() == PILE:
        duration = max(duration, PILE_DURATION)
    m = mjcenic.load_model(str(path))
    d0 = initial_state(m)
    n = max(1, round(duration / m.opt.timestep))
    wave = control_wave(m, d0)
    rec = {"model": str(path.relative_to(SHARED) if SHARED in path.parents else path.name),
           "nv": int(m.nv), "nu": int(m.nu), "dt": m.opt.timestep, "calls": n, "loops": {}}
    for name, ctrl in (("every", wave), ("held", None)):
        cpu = {k: math.inf for k in ["mj_step"] + configs}
        info = {}
        timed, rep = 0.0, 0
        while rep < reps or (timed < min_time and rep < MAX_REPS):
            c, d = loop(m, d0, n, lambda d: mujoco.mj_step(m, d), ctrl)
            cpu["mj_step"] = min(cpu["mj_step"], c)
            timed += c
            if rep == 0:
                info["mj_step"] = {"max_penetration": mjstep_penetration(m, d0, n, ctrl),
                                   "finite": bool(np.isfinite(d.qpos).all())}
            for k in configs:
                if rep and cpu[k] > 30:  # long runs are timed once
                    continue
                sim = mjcenic.Stepper(m, **CONFIGS[k])
                c, d = loop(m, d0, n, sim.step, ctrl)
                cpu[k] = min(cpu[k], c)
                if rep == 0:
                    st = sim.stats
                    info[k] = {"steps": int(st["steps"]), "rejected_steps": int(st["rejected_steps"]),
                               "solves": int(st["solves"]),
                               "newton_per_solve": st["newton_iterations"] / max(st["solves"], 1),
                               "max_penetration": float(st["max_penetration"]),
                               "finite": bool(np.isfinite(d.qpos).all())}
            rep += 1
        ratios = {k: cpu[k] / cpu["mj_step"] for k in configs}
        rec["duration"] = duration
        rec["loops"][name] = {"cpu": cpu, "ratio": ratios, "info": info, "reps": rep}
        log(f"{rec['model']:46s} ctrl {name:5s} " + "  ".join(
            f"{k} {ratios[k]:5.2f}x ({info[k]['steps']}+{info[k]['rejected_steps']} steps)"
            for k in configs))
    return rec


def jittered_states(m, d0, nbatch, seed=0):
    """nbatch mjSTATE_FULLPHYSICS states: d0's with every hinge and slide joint moved by up to
    0.02 (rad or m), clamped to its range where limited."""
    full = mujoco.mjtState.mjSTATE_FULLPHYSICS
    x0 = np.empty(mujoco.mj_stateSize(m, full))
    mujoco.mj_getState(m, d0, x0, full)
    x = np.tile(x0, (nbatch, 1))
    rng = np.random.default_rng(seed)
    for j in range(m.njnt):
        if m.jnt_type[j] in (mujoco.mjtJoint.mjJNT_HINGE, mujoco.mjtJoint.mjJNT_SLIDE):
            i = 1 + m.jnt_qposadr[j]  # the state starts with time
            x[:, i] += rng.uniform(-0.02, 0.02, nbatch)
            if m.jnt_limited[j]:
                x[:, i] = np.clip(x[:, i], *m.jnt_range[j])
    return x


def cpu_time():
    r = resource.getrusage(resource.RUSAGE_SELF)  # every thread of the process
    return r.ru_utime + r.ru_stime


def bench_rollout(path, nbatch, nstep, nthread, reps, configs, log):
    """mjcenic.rollout in each configuration against mujoco.rollout.rollout (module docstring)."""
    import mujoco.rollout
    m = mjcenic.load_model(str(path))
    d0 = initial_state(m)
    x = jittered_states(m, d0, nbatch)
    wave = control_wave(m, d0)
    control = np.array([[wave(d0.time + t * m.opt.timestep) for t in range(nstep)]] * nbatch)
    datas = [mujoco.MjData(m) for _ in range(nthread)]
    calls = {"mujoco": lambda: mujoco.rollout.rollout(m, datas, x, control)}
    for k in configs:
        calls[k] = lambda k=k: mjcenic.rollout(m, datas, x, control, **CONFIGS[k])
    results = {k: fn() for k, fn in calls.items()}  # warm-up, not timed
    wall = {k: math.inf for k in calls}
    cpu = {k: math.inf for k in calls}
    for rep in range(reps):
        for k in (list(calls) if rep % 2 == 0 else list(reversed(calls))):
            c0, t0 = cpu_time(), time.perf_counter()
            calls[k]()
            wall[k] = min(wall[k], time.perf_counter() - t0)
            cpu[k] = min(cpu[k], cpu_time() - c0)
    info = {}
    for k in configs:
        st = results[k].stats
        info[k] = {s: float(np.mean(st[s])) for s in ("steps", "rejected_steps", "solves")}
        info[k]["failed"] = int(results[k].failed.sum())
    rec = {"model": str(path.relative_to(SHARED) if SHARED in path.parents else path.name),
           "nv": int(m.nv), "nu": int(m.nu), "dt": m.opt.timestep, "nbatch": nbatch,
           "nstep": nstep, "nthread": nthread, "reps": reps, "mujoco": mujoco.__version__,
           "configs": {k: CONFIGS[k] for k in configs}, "wall": wall, "cpu": cpu,
           "ratio": {k: {"wall": wall[k] / wall["mujoco"], "cpu": cpu[k] / cpu["mujoco"]}
                     for k in configs}, "info": info}
    log(f"rollout {rec['model']}: " + "  ".join(
        f"{k} wall {rec['ratio'][k]['wall']:.2f}x cpu {rec['ratio'][k]['cpu']:.2f}x"
        for k in configs))
    return rec


def rollout_section(r, link):
    """The page section of the rollout part: the batch and the ratios."""
    configs = list(r["configs"])
    opts = "; ".join(f"{k}: " + (", ".join(f"`{o}={v}`" for o, v in r["configs"][k].items())
                                 or "the defaults") for k in configs)
    lines = [
        f"The same loop as a batch: `mjcenic.rollout` against `mujoco.rollout.rollout` on "
        f"{r['model']}, {r['nbatch']} initial states (the first keyframe, every hinge and slide "
        f"joint moved by up to 0.02) × {r['nstep']} steps, the control array "
        f"({r['nbatch']} × {r['nstep']} × {r['nu']}) the wave above, {r['nthread']} threads and "
        "one `MjData` per thread for both, both returning `state` and `sensordata`. mjcenic's "
        f"configurations ({opts}); wall and process CPU time of a call, minimum of {r['reps']} "
        "interleaved repetitions (`python3 scripts/bench_policy_loop.py --parts rollout`; "
        f"MuJoCo {r['mujoco']}).", "",
        "| | wall time | CPU time | wall / mujoco's | CPU / mujoco's | steps + rejected per "
        "rollout | solves per rollout |", "|---|---:|---:|---:|---:|---:|---:|",
        f"| `mujoco.rollout.rollout` | {1e3 * r['wall']['mujoco']:.1f} ms | "
        f"{1e3 * r['cpu']['mujoco']:.1f} ms | 1 | 1 | {r['nstep']} | |"]
    for k in configs:
        i = r["info"][k]
        lines.append(f"| `mjcenic.rollout`, {k} | {1e3 * r['wall'][k]:.1f} ms | "
                     f"{1e3 * r['cpu'][k]:.1f} ms | {r['ratio'][k]['wall']:.2f} | "
                     f"{r['ratio'][k]['cpu']:.2f} | {i['steps']:.1f} + {i['rejected_steps']:.1f} | "
                     f"{i['solves']:.1f} |")
    lines += ["", f"![rollout against mujoco.rollout]({link}/rollout.png)"]
    return "\n".join(lines)


def rollout_plot(r, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    configs = list(r["configs"])
    y = np.arange(len(configs))
    fig, ax = plt.subplots(figsize=(6.4, 0.5 * len(configs) + 1.6))
    for j, what in enumerate(("wall", "cpu")):
        ax.barh(y - 0.2 + 0.4 * j, [r["ratio"][k][what] for k in configs], 0.4,
                label="wall time" if what == "wall" else "process CPU time")
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(y)
    ax.set_yticklabels([f"mjcenic.rollout, {k}" for k in configs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("time / mujoco.rollout.rollout's")
    ax.set_title(f"{r['model']}: {r['nbatch']} rollouts × {r['nstep']} steps, "
                 f"{r['nthread']} threads", fontsize=9)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out_dir / "rollout.png", dpi=90)
    plt.close(fig)


def summarize(records, configs):
    out = {}
    robots = [r for r in records if r["model"] in ROBOTS]
    for name in ("every", "held"):
        for k in configs:
            vals = [r["loops"][name]["ratio"][k] for r in robots]
            if vals:
                out[f"robots_{name}_{k}_median"] = statistics.median(vals)
                out[f"robots_{name}_{k}_max"] = max(vals)
    return out


def section(data, link):
    """The page section: the loop, the configurations, the medians and the table."""
    configs = list(data["configs"])
    records, summary = data["records"], data["summary"]
    opts = "; ".join(f"{k}: " + (", ".join(f"`{o}={v}`" for o, v in data["configs"][k].items())
                                 or "the defaults") for k in configs)
    lines = [
        f"The loop a controller runs: `d.ctrl` written before every call (ctrl0 + 1 % of the "
        f"actuator range × sin(2πt)), one call per `opt.timestep`, {data['duration']:g} s from "
        "the first keyframe; the same loop with `ctrl` held for comparison (the best case for "
        "dense output, which may then end a call inside a longer step). mjcenic's "
        f"configurations ({opts}) against `mj_step` in the same loop: process CPU time, minimum "
        f"of at least {data['reps']} interleaved repetitions"
        + (f", more until `mj_step`'s add up to {data['min_time']:g} s" if data.get("min_time") else "")
        + f" (`python3 scripts/bench_policy_loop.py`; MuJoCo {data['mujoco']}).", ""]
    robots = [r for r in records if r["model"] in ROBOTS]
    if robots:  # (a run of --models without the shared robots has no medians)
        lines += [f"Median (max) CPU time / `mj_step`'s over the {len(robots)} robots:", "",
                  "| loop | " + " | ".join(configs) + " |", "|---|" + "---:|" * len(configs)]
        for name in ("every", "held"):
            lines.append(f"| ctrl {'written every call' if name == 'every' else 'held'} | " + " | ".join(
                f"{summary[f'robots_{name}_{k}_median']:.2f} ({summary[f'robots_{name}_{k}_max']:.2f})"
                for k in configs) + " |")
        lines.append("")
    lines += ["Per model: CPU time / `mj_step`'s (accepted + rejected steps).", "",
              "| model | loop | " + " | ".join(configs) + " |", "|---|---|" + "---|" * len(configs)]
    for r in records:
        for name, lp in r["loops"].items():
            cells = [f"{lp['ratio'][k]:.2f} ({lp['info'][k]['steps']} + {lp['info'][k]['rejected_steps']})"
                     for k in configs]
            lines.append(f"| {r['model']} | ctrl {name} | " + " | ".join(cells) + " |")
    for r in records:
        if r["model"] in ROBOTS:
            continue
        info = r["loops"]["every"]["info"]
        pens = ", ".join(f"{k} {1e3 * info[k]['max_penetration']:.1f} mm"
                         for k in ["mj_step"] + configs)
        lines += ["", f"{r['model']} ({r.get('duration', data['duration']):g} s): the deepest "
                  f"contact of each run (every state a geometry query saw; `mj_step`'s at each "
                  f"of its steps): {pens}."]
    lines += ["", f"![policy loop]({link}/policy_loop.png)"]
    return "\n".join(lines)


def plot(records, configs, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r["model"].replace("menagerie/", "").replace("/scene", "").replace(".xml", "")
             for r in records]
    y = np.arange(len(records))
    fig, axes = plt.subplots(1, 2, figsize=(11, 0.35 * len(records) + 1.8), sharey=True)
    width = 0.8 / len(configs)
    for ax, name in zip(axes, ("every", "held")):
        for j, k in enumerate(configs):
            ax.barh(y - 0.4 + (j + 0.5) * width, [r["loops"][name]["ratio"][k] for r in records],
                    width, label=k)
        ax.axvline(1.0, color="k", lw=0.8)
        ax.set_xscale("log")
        ax.set_title(f"ctrl {'written every call' if name == 'every' else 'held'}", fontsize=9)
        ax.set_xlabel("CPU time / mj_step's, same loop")
        ax.grid(True, axis="x", which="both", alpha=0.3)
    axes[0].set_yticks(y)
    axes[0].set_yticklabels(names, fontsize=7)
    axes[0].invert_yaxis()
    axes[1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(out_dir / "policy_loop.png", dpi=90)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--duration", type=float, default=1.0)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--min-time", type=float, default=2.0,
                   help="[s] repeat each loop until mj_step's runs add up to this much CPU time "
                        "(and at least --reps times)")
    p.add_argument("--models", default="",
                   help="comma-separated paths under the shared models folder, or MJCF files")
    p.add_argument("--configs", default="default,embedded,fixed")
    p.add_argument("--out-dir", default=str(ROOT / "docs" / "policy_loop"))
    p.add_argument("--parts", default=",".join(PARTS),
                   help="loop (the per-call loop on every model), rollout (mjcenic.rollout "
                        "against mujoco.rollout.rollout), or both")
    p.add_argument("--rollout-model", default=ROLLOUT_MODEL,
                   help="the rollout part's model: a path under the shared models folder, or a file")
    p.add_argument("--nbatch", type=int, default=16, help="rollout part: initial states")
    p.add_argument("--nstep", type=int, default=200, help="rollout part: steps per rollout")
    p.add_argument("--nthread", type=int, default=2, help="rollout part: threads (both)")
    p.add_argument("--rollout-reps", type=int, default=10)
    _page.add_arguments(p)
    a = p.parse_args()
    configs = [c for c in a.configs.split(",") if c]
    bad = [c for c in configs if c not in CONFIGS]
    if bad or not configs:
        p.error(f"--configs: choose from {', '.join(CONFIGS)} (got {a.configs!r})")
    parts = [c for c in a.parts.split(",") if c]
    if not parts or any(c not in PARTS for c in parts):
        p.error(f"--parts: choose from {', '.join(PARTS)} (got {a.parts!r})")
    if not a.duration > 0 or a.reps < 1 or a.rollout_reps < 1 or not a.min_time >= 0:
        p.error("--duration must be > 0, --reps and --rollout-reps >= 1, --min-time >= 0")
    if a.nbatch < 1 or a.nstep < 1 or a.nthread < 1:
        p.error("--nbatch, --nstep and --nthread must be >= 1")
    names = [s for s in a.models.split(",") if s] or ROBOTS + [str(PILE)]
    paths = [pathlib.Path(s) if pathlib.Path(s).is_file() else SHARED / s for s in names]
    rollout_path = (pathlib.Path(a.rollout_model) if pathlib.Path(a.rollout_model).is_file()
                    else SHARED / a.rollout_model)
    missing = [str(q) for q in paths if "loop" in parts and not q.is_file()]
    missing += [str(rollout_path)] if "rollout" in parts and not rollout_path.is_file() else []
    if missing and not a.from_json:
        p.error(f"no such model(s): {missing} (shared models: {SHARED}, MJCENIC_SHARED_MODELS)")
    out_dir = pathlib.Path(a.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    link = _page.link_dir(a, out_dir) or out_dir
    if a.from_json:
        data = json.loads(pathlib.Path(a.from_json).read_text())
        parts = ["rollout" if "nbatch" in data else "loop"]
    if "loop" in parts:
        if not a.from_json:
            records = [bench(q, a.duration, a.reps, configs, print, a.min_time) for q in paths]
            summary = summarize(records, configs)
            print(json.dumps(summary))
            data = {"duration": a.duration, "reps": a.reps, "min_time": a.min_time,
                    "configs": {k: CONFIGS[k] for k in configs}, "mujoco": mujoco.__version__,
                    "summary": summary, "records": records}
            (out_dir / "policy_loop.json").write_text(json.dumps(data, indent=1))
        plot(data["records"], list(data["configs"]), out_dir)
        print(f"wrote {out_dir}/policy_loop.png")
        _page.publish(a, out_dir, "policy_loop", "bench_policy_loop.py", section(data, link))
        if (out_dir.resolve() == (ROOT / "docs" / "policy_loop").resolve() and not a.no_page
                and not a.page and not a.from_json):
            # README.md's loop-cost column is read from the committed run just written.
            import gen_readme_tables
            gen_readme_tables.main([])
    if "rollout" in parts:
        if not a.from_json:
            data = bench_rollout(rollout_path, a.nbatch, a.nstep, a.nthread, a.rollout_reps,
                                 configs, print)
            (out_dir / "rollout.json").write_text(json.dumps(data, indent=1))
        rollout_plot(data, out_dir)
        print(f"wrote {out_dir}/rollout.png")
        _page.publish(a, out_dir, "policy_loop_rollout", "bench_policy_loop.py",
                      rollout_section(data, link))


if __name__ == "__main__":
    main()
