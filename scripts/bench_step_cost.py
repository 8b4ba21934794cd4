#!/usr/bin/env python3
"""Step-cost benchmark: wall time of one fixed-mode mjcenic step (error control
off, h = the model's opt.timestep) against one mj_step, on every shared model
(tests/python/test_models.py's list) and every scene of models/.

    nice python3 scripts/bench_step_cost.py [--reps 5] [--only SUBSTR ...] [--cpu] [--no-page]

Per model: both simulators start from the same state (the first keyframe,
advanced by --settle seconds of mj_step so piles are already in contact), then
run K steps each, interleaved in one process (mj_step chunk, mjcenic chunk,
...; each chunk is one call, mj_step(m, d, nstep=K) and Stepper.step(d, K), so
neither pays Python per step) --reps times from that same state; the µs per step of each is the
minimum over the repetitions (wall time, or with --cpu this process's CPU time: on a shared
machine the time taken from it by other processes is not counted). Also: mjcenic's Newton iterations per solve
(the slowest island's count) and per island that iterated,
contacts per step, and its time split by phase from the stats of a second
stepper with phase_timers on, run after the timed ones (MuJoCo stages = time_geometry, contact mapping, ICF assembly, the solve's
evaluate / factorize / line search, writeback, other).

Writes docs/step_cost/step_cost.json, docs/step_cost/step_cost.png and the
section of docs/benchmarks.md between the "step_cost" markers; with docs/step_cost/baseline.json
(an earlier run's step_cost.json, e.g. before a solver change) the table also
shows that run's ratio and Newton iterations. --from-json regenerates the PNG
and the section from a saved run without measuring. Not a test: it only measures.
"""
import argparse
import json
import math
import os
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import mjcenic  # noqa: E402
from test_models import MODELS  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402

SHARED = ROOT.parent / "shared" / "models"
OUT = ROOT / "docs" / "step_cost"
PHASES = ["time_geometry", "time_contacts", "time_assembly", "time_evaluate", "time_factorize",
          "time_line_search", "time_writeback"]


def state_of(m, d):
    return (d.time, d.qpos.copy(), d.qvel.copy(), d.act.copy(), d.ctrl.copy(),
            d.mocap_pos.copy(), d.mocap_quat.copy(), d.qacc_warmstart.copy())


def set_state(m, d, s):
    d.time = s[0]
    d.qpos[:], d.qvel[:], d.act[:], d.ctrl[:] = s[1], s[2], s[3], s[4]
    d.mocap_pos[:], d.mocap_quat[:], d.qacc_warmstart[:] = s[5], s[6], s[7]
    mujoco.mj_forward(m, d)


def bench(path, reps, settle, chunk_seconds, clock=time.perf_counter):
    m = mjcenic.load_model(path)
    d = mjcenic.make_data(m)
    dt = m.opt.timestep
    for _ in range(int(round(settle / dt))):
        mujoco.mj_step(m, d)
    s0 = state_of(m, d)
    # Chunk length: about chunk_seconds of mj_step wall time, 10..2000 steps.
    # The per-step time is the fastest of 5 probes (min, like the timed runs):
    # one probe taken under a load spike would shorten the window K, moving it
    # toward the transient after the settle and changing what is measured.
    per = math.inf
    for _ in range(5):
        t0 = clock()
        n = 0
        while clock() - t0 < 0.01 and n < 100:
            mujoco.mj_step(m, d)
            n += 1
        per = min(per, (clock() - t0) / n)
    K = int(min(2000, max(10, chunk_seconds / per)))
    sim = mjcenic.Stepper(m, mode="fixed")
    dm, dc = mujoco.MjData(m), mujoco.MjData(m)
    set_state(m, dc, s0)
    sim.step(dc, K)  # warm-up: allocations, patterns
    t_mj, t_c = [], []
    st0 = dict(sim.stats)
    for _ in range(reps):
        set_state(m, dm, s0)
        t0 = clock()
        mujoco.mj_step(m, dm, nstep=K)  # K steps in one call: no Python per step
        t_mj.append((clock() - t0) / K)
        set_state(m, dc, s0)
        t0 = clock()
        sim.step(dc, K)
        t_c.append((clock() - t0) / K)
    st = {k: v - st0.get(k, 0) for k, v in sim.stats.items() if isinstance(v, (int, float))}
    solves = max(st["solves"], 1)
    steps = max(st["steps"], 1)
    # The phase split from a second stepper with phase_timers on (its clock
    # reads are not in the timed runs above), over one chunk from s0.
    timed = mjcenic.Stepper(m, mode="fixed", phase_timers=True)
    set_state(m, dc, s0)
    timed.step(dc, K)
    pst = {k: v for k, v in timed.stats.items() if isinstance(v, (int, float))}
    total = pst["time_total"]
    phases = exclusive({p: pst[p] / total if total > 0 else 0 for p in PHASES})
    return {"nv": m.nv, "nbody": m.nbody, "dt": dt, "steps_per_rep": K,
            "mjstep_us": 1e6 * min(t_mj), "mjcenic_us": 1e6 * min(t_c),
            "ratio": min(t_c) / min(t_mj),
            "newton_per_solve": st["newton_iterations"] / solves,
            # per island that iterated (each island stops on its own; the
            # column above counts the slowest one), as MuJoCo's solver_niter
            "newton_per_island": st["island_newton_iterations"] / max(st["island_solves"], 1),
            "contacts_per_step": st["contacts"] / steps,
            "mjstep_contacts": int(dm.ncon),
            "phases": phases}


def exclusive(raw):
    """Non-overlapping shares from the stats' phase times: time_writeback is
    part of time_geometry (the post-step stages) and time_contacts part of
    time_assembly; evaluate / factorize / line search are parts of
    time_solve, whose rest (and the integrator's own work) is "other"."""
    ph = dict(raw)
    ph["time_geometry"] = max(0.0, raw["time_geometry"] - raw["time_writeback"])
    ph["time_assembly"] = max(0.0, raw["time_assembly"] - raw["time_contacts"])
    ph["other"] = max(0.0, 1 - sum(ph[p] for p in PHASES))
    return ph


def plot(records, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r["model"] for r in records]
    fig, ax = plt.subplots(1, 2, figsize=(13, 0.28 * len(names) + 1.5), sharey=True)
    y = np.arange(len(names))
    ax[0].barh(y, [r["ratio"] for r in records], color="tab:blue")
    ax[0].axvline(1.2, color="k", ls="--", lw=0.8, label="1.2x target")
    ax[0].axvline(1.0, color="gray", ls=":", lw=0.8)
    ax[0].set_xscale("log")
    ax[0].set_xlabel("mjcenic fixed / mj_step wall time per step")
    ax[0].set_yticks(y, names, fontsize=7)
    ax[0].invert_yaxis()
    ax[0].legend(fontsize=7)
    left = np.zeros(len(names))
    for p, c in zip(PHASES + ["other"], plt.cm.tab10.colors):
        w = np.array([r["phases"][p] for r in records])
        ax[1].barh(y, w, left=left, color=c, label=p.replace("time_", ""))
        left += w
    ax[1].set_xlabel("share of mjcenic's step time")
    ax[1].legend(fontsize=7, ncol=4, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def page_section(records, meta, baseline):
    ratios = [r["ratio"] for r in records]
    lines = [f"Fixed mode (error control off, h = the model's `opt.timestep`) against `mj_step`, "
             f"µs per step, min of {meta['reps']} interleaved repetitions in one process from the "
             f"same state (first keyframe + {meta['settle']:g} s of `mj_step`), on this machine "
             f"(`nice python3 scripts/bench_step_cost.py`). Median ratio {statistics.median(ratios):.2f}. "
             "Phases: share of mjcenic's step time in MuJoCo's stages (geometry), contact mapping, "
             "the rest of the ICF assembly, and the Newton solve's evaluate / factorize / line search "
             "(non-overlapping).", "",
             "Newton it./solve counts the slowest island of each solve; it./island, per island that "
             "took any (each island stops at its own convergence; MuJoCo's solver_niter counts the same way).", "",
             "| model | mj_step µs | mjcenic µs | ratio (baseline) | Newton it./solve (baseline) "
             "| it./island | contacts | geometry | contacts map | assembly | evaluate | factorize | line search |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in records:
        ph = r["phases"]
        b = baseline.get(r["model"])
        rb = f" ({b['ratio']:.2f})" if b else ""
        nb = f" ({b['newton_per_solve']:.2f})" if b else ""
        per_island = f"{r['newton_per_island']:.2f}" if "newton_per_island" in r else "–"
        lines.append(f"| {r['model']} | {r['mjstep_us']:.0f} | {r['mjcenic_us']:.0f} | "
                     f"{r['ratio']:.2f}{rb} | {r['newton_per_solve']:.2f}{nb} | {per_island} | "
                     f"{r['contacts_per_step']:.0f} | " +
                     " | ".join(f"{ph[p]:.2f}" for p in PHASES[:-1]) + " |")
    if baseline:
        lines += ["", f"Baseline in parentheses: {meta.get('baseline_note', 'docs/step_cost/baseline.json')}."]
    lines += ["", "![step cost](step_cost/step_cost.png)"]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--settle", type=float, default=0.5)
    ap.add_argument("--chunk", type=float, default=0.05, help="mj_step wall seconds per chunk")
    ap.add_argument("--only", nargs="*", help="substrings of model paths to run")
    ap.add_argument("--cpu", action="store_true", help="time by this process's CPU time, not wall time")
    ap.add_argument("--out", default=str(OUT))
    _page.add_arguments(ap)
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    base_path = OUT / "baseline.json"
    baseline = {}
    base_note = None
    if base_path.exists():
        bj = json.loads(base_path.read_text())
        baseline = {r["model"]: r for r in bj["records"]}
        base_note = bj["meta"].get("note")
    if a.from_json:
        saved = json.loads(pathlib.Path(a.from_json).read_text())
        records, meta = saved["records"], saved["meta"]
        if not meta.get("phases_exclusive"):
            for r in records:
                r["phases"] = exclusive(r["phases"])
            meta["phases_exclusive"] = True
        if base_note:
            meta["baseline_note"] = base_note
        out.mkdir(parents=True, exist_ok=True)
        (out / "step_cost.json").write_text(json.dumps(saved, indent=1))
        write_outputs(records, meta, baseline, out, a)
        return
    paths = [("shared/" + rel, SHARED / rel) for rel in MODELS]
    paths += [(f"models/{p.name}", p) for p in sorted((ROOT / "models").glob("*.xml"))]
    if a.only:
        paths = [(n, p) for n, p in paths if any(s in n for s in a.only)]
    records = []
    for name, p in paths:
        try:
            r = bench(p, a.reps, a.settle, a.chunk, time.process_time if a.cpu else time.perf_counter)
        except Exception as e:  # noqa: BLE001 — report and go on
            print(f"{name}: failed: {e}", file=sys.stderr)
            continue
        r["model"] = name
        records.append(r)
        print(f"{name:55s} mj {r['mjstep_us']:8.1f} us  cenic {r['mjcenic_us']:8.1f} us  "
              f"ratio {r['ratio']:5.2f}  newton {r['newton_per_solve']:5.2f}  "
              f"contacts {r['contacts_per_step']:6.1f}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"reps": a.reps, "settle": a.settle, "chunk": a.chunk, "phases_exclusive": True,
            "clock": "cpu" if a.cpu else "wall"}
    (out / "step_cost.json").write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    if a.only:
        return
    if base_note:
        meta["baseline_note"] = base_note
    write_outputs(records, meta, baseline, out, a)


def write_outputs(records, meta, baseline, out, args):
    plot(records, out / "step_cost.png")
    _page.publish(args, out, "step_cost", "bench_step_cost.py", page_section(records, meta, baseline))


if __name__ == "__main__":
    main()
