#!/usr/bin/env python3
"""Batch-rollout throughput: mjcenic.rollout on 1 vs 2 threads.

A batch of clutter drops (models/clutter.xml, 20 objects falling into a bin, each rollout from a
slightly different start so their costs differ) rolled out with nthread=1 and nthread=2,
interleaved, each the minimum wall time of --reps repetitions (the machine is shared: the minimum
is the run least disturbed by other processes). Also times the same batch as a Python loop over
mjcenic.Stepper (what a user writes without rollout) and checks that every configuration returns
the same arrays bit for bit. Throughput = rollout steps (of opt.timestep) per wall second.

    nice python3 scripts/bench_rollout.py [--nbatch 8] [--nstep 150] [--reps 9] [--wait-idle 1.7]
        [--out docs/rollout]   # writes rollout.json, rollout.png and the page section

The "rollout" section of docs/benchmarks.md is rewritten from the run (for an --out under docs/);
--from-json docs/rollout/rollout.json regenerates plot and section without measuring, --no-page
prints the section instead.

mjcenic.rollout against mujoco.rollout.rollout (the Shadow hand, ctrl per step): the rollout
part of scripts/bench_policy_loop.py (--parts rollout).
"""
import argparse
import json
import os
import pathlib
import platform
import resource
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build"))
sys.path.insert(0, str(BUILD / "python"))
sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402
import mujoco  # noqa: E402
import mjcenic  # noqa: E402

FULL = mujoco.mjtState.mjSTATE_FULLPHYSICS


def initial_states(m, nbatch, seed=0):
    """The clutter keyframe with each free body's height jittered by up to 2 cm."""
    d = mjcenic.make_data(m)
    x0 = np.empty(mujoco.mj_stateSize(m, FULL))
    mujoco.mj_getState(m, d, x0, FULL)
    rng = np.random.default_rng(seed)
    x = np.tile(x0, (nbatch, 1))
    for j in range(m.njnt):
        if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            x[:, 1 + m.jnt_qposadr[j] + 2] += rng.uniform(0, 0.02, nbatch)
    return x


def idle_cores(window=1.0):
    """Idle CPU cores over the next `window` seconds, machine-wide (/proc/stat)."""
    def read():
        with open("/proc/stat") as f:
            v = [float(x) for x in f.readline().split()[1:]]
        return v[3] + v[4], sum(v)  # idle + iowait, total (jiffies)
    i0, t0 = read()
    time.sleep(window)
    i1, t1 = read()
    return (i1 - i0) / max(t1 - t0, 1e-9) * os.cpu_count()


def wait_for_idle(cores, timeout):
    """Waits (up to timeout s) until `cores` cores were idle for a second; returns the idle."""
    end = time.monotonic() + timeout
    while True:
        idle = idle_cores()
        if idle >= cores or time.monotonic() > end:
            return idle


def python_loop(m, x, nstep):
    """The user's loop without rollout: fresh Stepper per rollout, step, mj_getState."""
    state = np.empty((x.shape[0], nstep, x.shape[1]))
    d = mujoco.MjData(m)
    for r in range(x.shape[0]):
        mujoco.mj_setState(m, d, x[r], FULL)
        sim = mjcenic.Stepper(m)
        for t in range(nstep):
            sim.step(d)
            mujoco.mj_getState(m, d, state[r, t], FULL)
    return state


def plot(report, out):
    """rollout.png: throughput per configuration, from the report."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = list(report["wall_time"])
    best = {k: report["wall_time"][k]["min"] for k in names}
    one = report["throughput_steps_per_s"]["rollout, 1 thread"]
    thr = [report["throughput_steps_per_s"][k] for k in names]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    bars = ax.barh(names, thr, color=["#999999", "#4477aa", "#228833"])
    for b, k in zip(bars, names):
        ax.text(b.get_width(), b.get_y() + b.get_height() / 2,
                f" {b.get_width():.0f}/s ({best['rollout, 1 thread'] / best[k]:.2f}×)",
                va="center", fontsize=9)
    ax.axvline(2 * one, color="k", ls=":", lw=1, label="2× one thread")
    ax.invert_yaxis()
    ax.set_xlim(0, max(thr + [2 * one]) * 1.3)
    ax.set_xlabel(f"rollout steps per second (min of {report['reps']} interleaved reps)")
    ax.set_title(f"mjcenic.rollout, {report['model']}: {report['nbatch']} rollouts × "
                 f"{report['nstep']} steps on {report['cpus']} cores", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(pathlib.Path(out) / "rollout.png", dpi=120)
    plt.close(fig)


def section(r):
    """The page section: the batch, the table and the two ratios."""
    w, tp = r["wall_time"], r["throughput_steps_per_s"]
    one = w["rollout, 1 thread"]["min"]
    same = all(r["bit_identical_to_1_thread"].values())
    lines = [
        f"`mjcenic.rollout` on 1 and 2 threads and a Python `Stepper` loop over the same batch: "
        f"{r['model']}, {r['nbatch']} rollouts × {r['nstep']} steps of {1e3 * r['timestep']:g} ms "
        f"from jittered starts, interleaved, wall time the minimum of {r['reps']} repetitions on a "
        f"{r['cpus']}-core machine (`nice python3 scripts/bench_rollout.py --wait-idle 1.7`). "
        f"2 threads: {r['speedup_2_threads']:.2f}× one thread's throughput; CPU time of the "
        f"2-thread run / the 1-thread run's: {r['cpu_time_ratio_2_vs_1_thread']:.2f} (the threads "
        "add no work when it is 1). "
        + ("All three return the same arrays bit for bit." if same else
           "The runs do NOT return the same arrays: "
           + ", ".join(k for k, v in r["bit_identical_to_1_thread"].items() if not v) + "."), "",
        "| | wall time (min) | steps/s | vs 1 thread |", "|---|---|---|---|"]
    for k, v in w.items():
        lines.append(f"| {k} | {v['min']:.3f} s | {tp[k]:.0f} | {one / v['min']:.2f}× |")
    lines += ["", "![rollout throughput](rollout/rollout.png)"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(ROOT / "models/clutter.xml"))
    ap.add_argument("--nbatch", type=int, default=8)
    ap.add_argument("--nstep", type=int, default=150)
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--out", default=str(ROOT / "docs/rollout"))
    ap.add_argument("--wait-idle", type=float, default=0.0, metavar="CORES",
                    help="before each rep, wait until this many cores were idle for 1 s "
                         "(shared machine; up to --wait-timeout s per rep)")
    ap.add_argument("--wait-timeout", type=float, default=120.0)
    _page.add_arguments(ap)
    a = ap.parse_args()
    if a.from_json:
        report = json.loads(pathlib.Path(a.from_json).read_text())
        pathlib.Path(a.out).mkdir(parents=True, exist_ok=True)
        plot(report, a.out)
        _page.publish(a, a.out, "rollout", "bench_rollout.py", section(report))
        return 0

    m = mujoco.MjModel.from_xml_path(a.model)
    x = initial_states(m, a.nbatch)
    configs = {
        "python loop": lambda: python_loop(m, x, a.nstep),
        "rollout, 1 thread": lambda: mjcenic.rollout(m, None, x, nstep=a.nstep, nthread=1),
        "rollout, 2 threads": lambda: mjcenic.rollout(m, None, x, nstep=a.nstep, nthread=2),
    }
    times = {k: [] for k in configs}
    cpu = {k: [] for k in configs}  # process CPU time of each run (user + system)
    results = {}
    load_before = os.getloadavg()
    for k, fn in configs.items():  # warm-up (page faults, first allocations), not timed
        results[k] = fn()
    idle_before_rep = []
    for rep in range(a.reps):
        if a.wait_idle > 0:
            idle_before_rep.append(wait_for_idle(a.wait_idle, a.wait_timeout))
        order = list(configs) if rep % 2 == 0 else list(reversed(configs))
        for k in order:
            r0 = resource.getrusage(resource.RUSAGE_SELF)
            t0 = time.perf_counter()
            configs[k]()
            times[k].append(time.perf_counter() - t0)
            r1 = resource.getrusage(resource.RUSAGE_SELF)
            cpu[k].append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        print(f"rep {rep + 1}/{a.reps}: " +
              ", ".join(f"{k} {times[k][-1]:.3f} s" for k in configs), flush=True)
    load_after = os.getloadavg()

    ref = results["rollout, 1 thread"]
    identical = {k: bool(np.array_equal(r if isinstance(r, np.ndarray) else r.state, ref.state))
                 for k, r in results.items()}
    steps = a.nbatch * a.nstep
    best = {k: min(v) for k, v in times.items()}
    speedup = best["rollout, 1 thread"] / best["rollout, 2 threads"]
    report = {
        "model": os.path.relpath(a.model, ROOT), "nbatch": a.nbatch, "nstep": a.nstep,
        "timestep": m.opt.timestep, "reps": a.reps, "cpus": os.cpu_count(),
        "machine": platform.processor() or platform.machine(),
        "loadavg_before": load_before, "loadavg_after": load_after,
        "idle_cores_before_each_rep": idle_before_rep,
        "internal_steps_per_rollout": ref.stats["steps"].tolist(),
        "rejected_steps_per_rollout": ref.stats["rejected_steps"].tolist(),
        "wall_time": {k: {"min": best[k], "all": v} for k, v in times.items()},
        # Work inflation: CPU time of the 2-thread run over the 1-thread run (1.0: threads add
        # no work; then the wall-time ratio is limited only by free cores and balance).
        "cpu_time": {k: {"min": min(v), "all": v} for k, v in cpu.items()},
        "cpu_time_ratio_2_vs_1_thread": min(cpu["rollout, 2 threads"]) /
                                        min(cpu["rollout, 1 thread"]),
        "throughput_steps_per_s": {k: steps / best[k] for k in configs},
        "speedup_2_threads": speedup,
        "speedup_rollout_1_thread_vs_python_loop": best["python loop"] / best["rollout, 1 thread"],
        "bit_identical_to_1_thread": identical,
    }
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "rollout.json").write_text(json.dumps(report, indent=2) + "\n")

    plot(report, out)
    _page.publish(a, out, "rollout", "bench_rollout.py", section(report))
    print(json.dumps({k: report[k] for k in ("throughput_steps_per_s", "speedup_2_threads",
                                             "cpu_time_ratio_2_vs_1_thread",
                                             "bit_identical_to_1_thread", "loadavg_before",
                                             "loadavg_after")}, indent=1))
    return 0 if all(identical.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
