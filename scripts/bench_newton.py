#!/usr/bin/env python3
"""Newton iterations per convex solve over a whole run, on every shared model
(tests/python/test_models.py's list) and every scene of models/.

    nice python3 scripts/bench_newton.py [--duration 2] [--only SUBSTR ...] [--no-page]

Per model, from the first keyframe (or the model's initial state), the run
the Newton table is measured with (`mjcenic-run MODEL --duration 2 --mode
fixed --chunk step`): fixed mode at the model's opt.timestep for --duration
seconds, and error-controlled CENIC at accuracy 1e-3 advanced in 0.05 s
chunks (the CLI's default --chunk) over the same span. For each: Newton
iterations per solve (the slowest island of each solve, as the step-cost
benchmark counts them), per island that iterated (as MuJoCo's solver_niter
counts), the number of solves, and the mean over consecutive quarters of the
run (where the iterations are: impacts, settling, rest).

This complements scripts/bench_step_cost.py, whose window (K steps from an
mj_step state at 0.5 s) starts from `mj_step`'s soft-contact state: on
particle.xml that window is the hand-over transient (see docs/cenic-math.md
§4.11).

Writes docs/newton/newton.json, docs/newton/newton.png and the section of docs/benchmarks.md
between the "newton" markers; --from-json regenerates PNG + section from a
saved run. Not a test: it only measures (the counts are deterministic for a
given build and MuJoCo version; no timing is involved).
"""
import argparse
import json
import os
import pathlib
import sys

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
OUT = ROOT / "docs" / "newton"
LIMIT = 6.0  # the plot's reference line, iterations per solve
ACCURACY = 1e-3
CHUNK = 0.05  # s, mjcenic-run's default --chunk for error-controlled modes
QUARTERS = 4


def start(m):
    d = mujoco.MjData(m)
    if m.nkey:
        mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    return d


def counts(stats, base):
    st = {k: v - base.get(k, 0) for k, v in stats.items() if isinstance(v, (int, float))}
    return st["newton_iterations"], st["solves"], st["island_newton_iterations"], st["island_solves"]


def run(m, mode, duration):
    """Newton iterations per solve over the run and per quarter of it."""
    d = start(m)
    if mode == "fixed":
        sim = mjcenic.Stepper(m, mode="fixed")
        n = max(1, int(round(duration / m.opt.timestep)))
        ends = [round(n * (q + 1) / QUARTERS) for q in range(QUARTERS)]
        done = 0
    else:
        sim = mjcenic.Stepper(m, mode="cenic", accuracy=ACCURACY)
        t0 = d.time
        chunks = max(1, int(round(duration / CHUNK)))
        ends = [round(chunks * (q + 1) / QUARTERS) for q in range(QUARTERS)]
        done = 0
    quarter, base = [], dict(sim.stats)
    for end in ends:
        qbase = dict(sim.stats)
        while done < end:
            if mode == "fixed":
                sim.step(d, end - done)
                done = end
            else:
                done += 1
                sim.advance_to(t0 + done * CHUNK, d)
        it, sv, _, _ = counts(sim.stats, qbase)
        quarter.append(it / sv if sv else 0.0)
    it, sv, iit, isv = counts(sim.stats, base)
    if not np.all(np.isfinite(d.qpos)):
        raise RuntimeError(f"{mode}: state not finite")
    return {"per_solve": it / sv if sv else 0.0, "per_island": iit / isv if isv else 0.0,
            "solves": int(sv), "quarters": quarter}


def bench(path, duration):
    m = mjcenic.load_model(path)
    return {"nv": m.nv, "dt": m.opt.timestep, "duration": duration,
            "fixed": run(m, "fixed", duration), "cenic": run(m, "cenic", duration)}


def plot(records, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [r["model"] for r in records]
    y = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(names) + 1.5))
    ax.barh(y - 0.2, [r["fixed"]["per_solve"] for r in records], 0.4, label="fixed (opt.timestep)")
    ax.barh(y + 0.2, [r["cenic"]["per_solve"] for r in records], 0.4,
            label=f"cenic, accuracy {ACCURACY:g}")
    ax.axvline(LIMIT, color="k", ls="--", lw=1, label=f"target ≤ {LIMIT:g}")
    ax.set_yticks(y)
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("Newton iterations per solve (slowest island)")
    ax.set_title(f"{records[0]['duration']:g} s from the first keyframe")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def table(records):
    dur = records[0]["duration"]
    worst_f = max(records, key=lambda r: r["fixed"]["per_solve"])
    worst_c = max(records, key=lambda r: r["cenic"]["per_solve"])
    lines = [
        "",
        f"Newton iterations per convex solve over {dur:g} s from the first keyframe "
        f"(`nice python3 scripts/bench_newton.py`): fixed mode at `opt.timestep` and CENIC at "
        f"accuracy {ACCURACY:g} ({CHUNK:g} s `advance_to` chunks). Per solve counts the slowest "
        "island; per island, each island that iterated (MuJoCo's `solver_niter` counts the same "
        "way); quarters: per solve in each quarter of the run. Highest: fixed "
        f"{worst_f['fixed']['per_solve']:.2f} ({worst_f['model']}), cenic "
        f"{worst_c['cenic']['per_solve']:.2f} ({worst_c['model']}).",
        "",
        "| model | fixed it./solve | it./island | quarters | cenic 1e-3 it./solve | it./island | solves |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for r in records:
        f, c = r["fixed"], r["cenic"]
        q = " ".join(f"{x:.1f}" for x in f["quarters"])
        lines.append(f"| {r['model']} | {f['per_solve']:.2f} | {f['per_island']:.2f} | {q} | "
                     f"{c['per_solve']:.2f} | {c['per_island']:.2f} | {c['solves']} |")
    lines += ["", "![newton](newton/newton.png)", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--out", default=str(OUT))
    _page.add_arguments(ap)
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    if a.from_json:
        records = json.loads(pathlib.Path(a.from_json).read_text())["models"]
    else:
        paths = [("shared/" + p, SHARED / p) for p in MODELS]
        paths += [("models/" + p.name, p) for p in sorted((ROOT / "models").glob("*.xml"))]
        if a.only:
            paths = [(n, p) for n, p in paths if any(s in n for s in a.only)]
        records = []
        for name, p in paths:
            r = bench(str(p), a.duration)
            r["model"] = name
            records.append(r)
            f, c = r["fixed"], r["cenic"]
            print(f"{name:55s} fixed {f['per_solve']:5.2f} ({f['per_island']:4.2f})  "
                  f"cenic {c['per_solve']:5.2f} ({c['per_island']:4.2f}, {c['solves']} solves)",
                  flush=True)
        out.mkdir(parents=True, exist_ok=True)
        (out / "newton.json").write_text(json.dumps(
            {"mujoco": mujoco.__version__, "mjcenic": mjcenic.__version__, "models": records},
            indent=1))
    out.mkdir(parents=True, exist_ok=True)
    plot(records, out / "newton.png")
    if not a.only:
        _page.publish(a, out, "newton", "bench_newton.py", table(records))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
