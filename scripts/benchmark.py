#!/usr/bin/env python3
"""Work–precision benchmark: mjcenic (CENIC step doubling) at accuracies
1e-1..1e-4 against mj_step at several time steps, on paper-like scenes.

    python3 scripts/benchmark.py [--out-dir out/benchmark] [--quick]

With --out-dir under docs/ (e.g. docs/benchmark) the run also writes the
"benchmark" section of docs/benchmarks.md; --from-json DIR/benchmark.json
regenerates plot and section without measuring, --no-page prints the section.

Writes benchmark.json (wall time, steps, solves, Newton iterations,
factorizations, error vs reference per run) and work_precision.png (error vs
wall time, one panel per scene). The error of a run is the weighted
tangent-space position error at the end time (translations divided by the
model length scale, rotations in radians, ∞-norm) against a tight mjcenic
reference (accuracy 1e-6). Run from the repository root after `make build`.

Two mjcenic series: the defaults (the paper's position-only local error
control) and, on the cylinder and sphere, global_accuracy=true (the
recipe of docs/how-it-works.md: error_norm=full_state, extrapolate=true, speculative_margin = 0.1 L),
whose end error tracks the accuracy. Where the recipe is run,
the reference is the recipe at accuracy 1e-6 (the tighter of the two).
"""
import argparse
import json
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))

import mujoco  # noqa: E402

import mjcenic  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402

SCENES = [
    # name, file, keyframe, end time [s], extra stepper options, also run
    # with global_accuracy=true
    ("cylinder on table (0.6 s)", "models/cylinder_table.xml", "drop", 0.6, {}, True),
    ("sphere drop (0.5 s)", "models/sphere_plane.xml", "drop", 0.5, {}, True),
    ("soft clutter (0.3 s)", "models/clutter.xml", "drop", 0.3, {}, False),
    ("hard clutter (0.3 s)", "models/clutter.xml", "drop", 0.3,
     {"stiffness_scale": 10, "stiction_tolerance": 1e-5}, False),
]
ACCURACIES = [1e-1, 1e-2, 1e-3, 1e-4]
MJSTEP_DT = [4e-3, 2e-3, 1e-3, 5e-4, 2.5e-4]


def fresh(path, key):
    m = mujoco.MjModel.from_xml_path(str(ROOT / path))
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, key))
    mujoco.mj_forward(m, d)
    return m, d


def error(m, q, q_ref, length_scale):
    """The stepper's weighted error norm of the qpos difference (translations / L,
    rotations in radians, infinity norm)."""
    return mjcenic.error_norm(m, q_ref, q, length_scale=length_scale)


def run_mjcenic(path, key, T, opts):
    m, d = fresh(path, key)
    sim = mjcenic.Stepper(m, mode="cenic", **opts)
    t0 = time.perf_counter()
    sim.advance_to(T, d)
    wall = time.perf_counter() - t0
    return d.qpos.copy(), wall, sim.stats, sim.length_scale


def run_mjstep(path, key, T, dt):
    m, d = fresh(path, key)
    m.opt.timestep = dt
    n = int(round(T / dt))
    t0 = time.perf_counter()
    for _ in range(n):
        mujoco.mj_step(m, d)
    return d.qpos.copy(), time.perf_counter() - t0, n


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", default=str(ROOT / "out" / "benchmark"))
    p.add_argument("--quick", action="store_true", help="fewer accuracies and time steps")
    _page.add_arguments(p)
    a = p.parse_args()
    out = pathlib.Path(a.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if a.from_json:
        rows = json.loads(pathlib.Path(a.from_json).read_text())["rows"]
        write_outputs(a, out, rows)
        return
    accs = ACCURACIES[:3] if a.quick else ACCURACIES
    dts = MJSTEP_DT[:3] if a.quick else MJSTEP_DT
    rows = []
    for name, path, key, T, extra, global_too in SCENES:
        series = [("mjcenic", extra)]
        if global_too:
            series.append(("mjcenic global_accuracy", dict(extra, global_accuracy=True)))
        q_ref, _, _, L = run_mjcenic(path, key, T, dict(series[-1][1], accuracy=1e-6))
        m, _ = fresh(path, key)
        for method, opts in series:
            for acc in accs:
                q, wall, st, _ = run_mjcenic(path, key, T, dict(opts, accuracy=acc))
                rows.append(dict(scene=name, method=method, accuracy=acc, wall_time=wall,
                                 steps=st["steps"], rejected_steps=st["rejected_steps"],
                                 solves=st["solves"], newton_iterations=st["newton_iterations"],
                                 factorizations=st["factorizations"],
                                 ls_iterations=st["ls_iterations"], error=error(m, q, q_ref, L)))
                print(f"{name:22s} {method} acc {acc:7.0e}: {wall:7.3f} s, {st['steps']:6d} "
                      f"steps, error {rows[-1]['error']:.3g}", flush=True)
        if not extra:  # mj_step knows nothing of mjcenic's contact options
            for dt in dts:
                q, wall, n = run_mjstep(path, key, T, dt)
                rows.append(dict(scene=name, method="mj_step", timestep=dt, wall_time=wall,
                                 steps=n, error=error(m, q, q_ref, L)))
                print(f"{name:22s} mj_step dt {dt:7.1e}: {wall:7.3f} s, {n:6d} steps, "
                      f"error {rows[-1]['error']:.3g}", flush=True)
    meta = dict(mujoco=mujoco.__version__,
                reference="mjcenic cenic accuracy 1e-6 (global_accuracy where it is run)",
                error="weighted tangent-space position error at the end time (inf-norm)")
    (out / "benchmark.json").write_text(json.dumps(dict(meta=meta, rows=rows), indent=1))
    write_outputs(a, out, rows)


def section(rows, link):
    """The page section: per scene and series, the end error and the wall time per level."""
    lines = ["End error (weighted, against mjcenic at accuracy 1e-6) and wall time per run "
             f"(`python3 scripts/benchmark.py --out-dir docs/{link}`).", "",
             "| scene | series | accuracy or dt | end error | wall [s] | steps |", "|---|---|---|---:|---:|---:|"]
    for r in rows:
        level = f"dt {1e3 * r['timestep']:g} ms" if r["method"] == "mj_step" else f"{r['accuracy']:g}"
        lines.append(f"| {r['scene']} | {r['method']} | {level} | {r['error']:.2g} | "
                     f"{r['wall_time']:.3g} | {r['steps']} |")
    lines += ["", f"![work-precision]({link}/work_precision.png)"]
    return "\n".join(lines)


def write_outputs(a, out, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker
    fig, axes = plt.subplots(1, len(SCENES), figsize=(4.2 * len(SCENES), 3.8))
    for ax, (name, *_rest) in zip(axes, SCENES):
        for method, style, color in (("mjcenic", "o-", "C0"), ("mjcenic global_accuracy", "^-", "C1"),
                                     ("mj_step", "s--", "C2")):
            r = [x for x in rows if x["scene"] == name and x["method"] == method]
            if not r:
                continue
            ax.loglog([x["wall_time"] for x in r], [max(x["error"], 1e-12) for x in r], style,
                      color=color, label=method)
            for x in r:
                lab = (f"{x['timestep'] * 1e3:g}ms" if method == "mj_step"
                       else f"{x['accuracy']:.0e}")
                ax.annotate(lab, (x["wall_time"], max(x["error"], 1e-12)), fontsize=7,
                            textcoords="offset points", xytext=(3, 3))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("wall time [s]")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("error vs reference")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out / "work_precision.png", dpi=110)
    print(f"wrote {out / 'work_precision.png'}")
    link = _page.link_dir(a, out) or str(out)
    _page.publish(a, out, "benchmark", "benchmark.py", section(rows, link))


if __name__ == "__main__":
    main()
