#!/usr/bin/env python3
"""Runs every top-level model of ../shared/models for T seconds with mjcenic
(default options, driven like an mj_step loop: Step() once per opt.timestep)
and with mj_step at the model's timestep, and writes

    OUT/sweep.json   one record per model (build/mjcenic-run's JSON)
    OUT/sweep.png    max penetration, mjcenic vs mj_step, per model
    a table (real-time rates, max penetration, steps): for an OUT under docs/ the
    "sweep" section of docs/benchmarks.md, else OUT/sweep.md

--from-json OUT/sweep.json regenerates plot and table without running; --no-page
prints the section instead.

    python3 scripts/sweep_shared_models.py [--duration 5] [--out out/sweep] [--jobs N]
                                           [--models REL,REL] [--ray [ADDRESS]]

The model list is tests/python/test_models.py's (its acceptance sweep
asserts on the same runs); --models picks some of them. Not a test: it
only measures.

--ray [ADDRESS] runs each model as a Ray task (one CPU each; mjcenic.distributed.map_tasks)
on the cluster at ADDRESS or, without one, on a local Ray, instead of --jobs threads; the
records are the same (timings aside). The workers run build/mjcenic-run and read the
models by absolute path, so on a cluster both must exist at the same paths on every node.
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

sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402

SHARED = pathlib.Path(os.environ.get("MJCENIC_SHARED_MODELS", ROOT.parent / "shared" / "models"))


def run(binary, rel, duration):
    return run_item((binary, str(SHARED / rel), rel, duration, CONVERGED_COLLIDER.get(rel, [])))


def run_item(item):
    """One model's record: item = (binary, model path, rel, duration, extra args), self-
    contained so that it can travel to a Ray worker."""
    binary, path, rel, duration, extra = item
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        proc = subprocess.run([binary, path, "--duration", str(duration), "--chunk",
                               "step", "--compare-mjstep", "--json", out, *extra],
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
    ap.add_argument("--models", default=None, metavar="REL,REL",
                    help="only these models (paths relative to ../shared/models, from the list)")
    ap.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                    help="run the models as Ray tasks on the cluster at ADDRESS (local Ray "
                         "without one) instead of --jobs threads")
    _page.add_arguments(ap)
    a = ap.parse_args()
    if a.from_json:
        records = json.loads(pathlib.Path(a.from_json).read_text())
        duration = max(r.get("sim_time", 0) for r in records)
        write_outputs(a, pathlib.Path(a.out), records, duration)
        return
    binary = str((pathlib.Path(a.build) / "mjcenic-run").resolve())
    # Checked before any work.
    if not os.access(binary, os.X_OK):
        ap.error(f"{binary} not found: build first (make build) or pass --build")
    models = MODELS
    if a.models:
        models = [m.strip() for m in a.models.split(",") if m.strip()]
        unknown = [m for m in models if m not in MODELS]
        if unknown or not models:
            ap.error(f"--models: not in the sweep's list: {', '.join(unknown) or a.models!r}")
    if a.ray is not None:
        sys.path.insert(0, str(pathlib.Path(a.build) / "python"))
        try:
            import ray  # noqa: F401
        except ImportError:
            ap.error("--ray needs Ray: pip install 'mjcenic[ray]' (or pip install ray)")
    order = [m for m in SLOW_FIRST if m in models] + [m for m in models if m not in SLOW_FIRST]
    items = [(binary, str((SHARED / rel).resolve()), rel, a.duration,
              CONVERGED_COLLIDER.get(rel, [])) for rel in order]
    if a.ray is not None:
        from mjcenic import distributed
        try:
            distributed.init(a.ray or None)
        except Exception as e:  # noqa: BLE001 - Ray's ConnectionError, bad address format
            ap.exit(2, f"{ap.prog}: --ray: could not reach Ray at {a.ray or 'a new local Ray'}: "
                       f"{' '.join(str(e).split())}\n")
        done = distributed.map_tasks(
            run_item, items, address=a.ray or None,
            progress=lambda k, n: print(f"sweep: {k}/{n} models done", file=sys.stderr))
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
            done = list(pool.map(run_item, items))
    results = dict(zip(order, done))
    records = [results[m] for m in models]
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(records, indent=1))

    write_outputs(a, out, records, a.duration)


def table(records, duration):
    lines = [f"Every top-level model of `../shared/models`, {duration:g} s from its first keyframe "
             "with `ctrl` held; mjcenic with default options (CENIC, accuracy 1e-3) called once per "
             "`opt.timestep` like `mj_step`. Real-time rate = simulated / wall time on one core; "
             "penetration = deepest contact seen (mjcenic: every geometry query it made). Models marked "
             "ccd_iterations run with MuJoCo's convex collider converged for both simulators "
             "(docs/limitations.md).", "",
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
    return "\n".join(lines)


def write_outputs(a, out, records, duration):
    out.mkdir(parents=True, exist_ok=True)
    text = table(records, duration)
    link = _page.link_dir(a, out)
    if link is None and not a.page:
        (out / "sweep.md").write_text(text + "\n")
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
    ax.set_title(f"Shared models, {duration:g} s")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "sweep.png", dpi=120)
    print(f"wrote {out / 'sweep.png'}")
    link = link or str(out)
    cmd = f"python3 scripts/sweep_shared_models.py --duration {duration:g} --out {'docs/' + link if _page.under_docs(out) else out}"
    _page.publish(a, out, "sweep", "sweep_shared_models.py",
                  f"{text}\n\n`{cmd}`\n\n![sweep penetration]({link}/sweep.png)")


if __name__ == "__main__":
    main()
