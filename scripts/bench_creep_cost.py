#!/usr/bin/env python3
"""Cost of a friction setting on every shared model and on clutter:
Newton iterations per solve and wall time at accuracy 1e-3 for several
configurations (a build's mjcenic-run plus options), interleaved, wall time
the minimum of N repetitions (the machine is noisy).

    python3 scripts/bench_creep_cost.py --config before=/path/mjcenic-run \
        --config after=build/mjcenic-run [--config NAME=BIN:key=val,key=val]
        [--duration 1] [--reps 3] [--out out/creep/cost.json]
    python3 scripts/bench_creep_cost.py --anchors [--out docs/creep/cost.json]

--anchors: the stiction anchors off (the paper's friction law, the first
configuration, i.e. the baseline of the ratios) and on (the default), both
with build/mjcenic-run (or $MJCENIC_BUILD/mjcenic-run). Writes the JSON and a
PNG of the on/off ratios next to it, and for an --out under docs/ the "creep_cost"
section of docs/benchmarks.md; --from-json docs/creep/cost.json regenerates plot
and section without measuring, --no-page prints the section instead.
"""
import argparse
import json
import math
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "python"))
from test_models import CONVERGED_COLLIDER, MODELS  # noqa: E402

SHARED = ROOT.parent / "shared" / "models"
EXTRA = [("models/clutter.xml soft", ROOT / "models/clutter.xml", ["--keyframe", "drop"]),
         ("models/clutter.xml hard", ROOT / "models/clutter.xml",
          ["--keyframe", "drop", "--option", "stiffness_scale=10",
           "--option", "stiction_tolerance=1e-5"])]


def run(binary, path, args, duration):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        proc = subprocess.run([binary, str(path), "--duration", str(duration), "--chunk", "step",
                               "--accuracy", "1e-3", "--json", out, *args],
                              capture_output=True, text=True)
        if not os.path.exists(out):
            return {"error": (proc.stdout + proc.stderr)[-300:]}
        return json.load(open(out))


sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--anchors", action="store_true",
                    help="configs off=stiction_anchors=false, on=defaults (this build)")
    ap.add_argument("--duration", type=float, default=1.0)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default="")
    ap.add_argument("--out", default=None, help="the JSON to write (default out/creep/cost.json; "
                    "docs/creep/cost.json with --anchors)")
    _page.add_arguments(ap)
    ap.add_argument("--update", action="store_true",
                    help="replace only the rows of the models run in an existing --out "
                         "(e.g. re-measure noisy wall times with more --reps)")
    a = ap.parse_args()
    if a.from_json:
        rows = json.loads(pathlib.Path(a.from_json).read_text())
        names = [k for k in rows[0] if k != "model"]
        out = pathlib.Path(a.out) if a.out else pathlib.Path(a.from_json)
        out.parent.mkdir(parents=True, exist_ok=True)
        plot(rows, names[0], names[1], out.with_suffix(".png"))
        _page.publish(a, out.parent, "creep_cost", "bench_creep_cost.py", section(rows, names))
        return
    if a.out is None:
        a.out = str(ROOT / ("docs/creep/cost.json" if a.anchors else "out/creep/cost.json"))
    if a.anchors:
        binary = str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "mjcenic-run")
        a.config = [f"off={binary}:stiction_anchors=false", f"on={binary}"] + a.config
    if not a.config:
        ap.error("give --config or --anchors")
    configs = {}
    for c in a.config:
        name, spec = c.split("=", 1)
        binary, _, opts = spec.partition(":")
        configs[name] = (binary, [x for kv in opts.split(",") if kv for x in ("--option", kv)])
    cases = [(rel, SHARED / rel, CONVERGED_COLLIDER.get(rel, [])) for rel in MODELS] + EXTRA
    if a.models:
        cases = [c for c in cases if any(s in c[0] for s in a.models.split(","))]
    rows = []
    for name, path, args in cases:
        row = {"model": name}
        for rep in range(a.reps):
            for cname, (binary, opts) in configs.items():  # interleaved
                r = run(binary, path, args + opts, a.duration)
                if "error" in r or not r.get("finite", False):
                    row[cname] = {"failed": r.get("error", "not finite")}
                    continue
                prev = row.get(cname, {})
                row[cname] = {
                    "wall": min(prev.get("wall", 1e9), r["wall_time"]),
                    "newton_per_solve": r["newton_iterations"] / max(1, r["solves"]),
                    "steps": r["steps"], "rejected": r["rejected_steps"]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    pathlib.Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    if a.update and pathlib.Path(a.out).exists():
        new = {r["model"]: r for r in rows}
        old = json.loads(pathlib.Path(a.out).read_text())
        rows = [new.pop(r["model"], r) for r in old] + list(new.values())
    pathlib.Path(a.out).write_text(json.dumps(rows, indent=1))
    names = list(configs)
    base = names[0]
    print("| model | " + " | ".join(f"{n} N/solve | {n} wall [s]" for n in names) + " | ratios |")
    for row in rows:
        cells, ratios = [], []
        for n in names:
            r = row.get(n, {})
            if "wall" not in r:
                cells += ["fail", "fail"]
                continue
            cells += [f"{r['newton_per_solve']:.2f}", f"{r['wall']:.3f}"]
            b = row.get(base, {})
            if n != base and "wall" in b:
                ratios.append(f"{n}: N x{r['newton_per_solve'] / max(b['newton_per_solve'], 1e-9):.2f}"
                              f" wall x{r['wall'] / b['wall']:.2f}")
        print(f"| {row['model']} | " + " | ".join(cells) + " | " + "; ".join(ratios) + " |")
    if len(names) >= 2:
        plot(rows, names[0], names[1], pathlib.Path(a.out).with_suffix(".png"))
        if not a.models:
            _page.publish(a, pathlib.Path(a.out).parent, "creep_cost", "bench_creep_cost.py",
                          section(rows, names))


def section(rows, names):
    """The page section: per model the second configuration's Newton iterations per solve and
    wall time over the first's, and their ranges."""
    base, other = names[0], names[1]
    ok = [r for r in rows if "wall" in r.get(base, {}) and "wall" in r.get(other, {})]
    n = {r["model"]: (r[other]["newton_per_solve"] / r[base]["newton_per_solve"]
                      if r[base]["newton_per_solve"] > 0 else 1.0 if r[other]["newton_per_solve"] == 0
                      else math.inf) for r in ok}
    w = {r["model"]: r[other]["wall"] / r[base]["wall"] for r in ok}
    failed = [r["model"] for r in rows if r not in ok]
    cmd = ("python3 scripts/bench_creep_cost.py --anchors" if (base, other) == ("off", "on")
           else "python3 scripts/bench_creep_cost.py --config ...")
    lines = [f"`{other}` against `{base}` (`{cmd}`): {len(rows)} cases, 1 s at accuracy 1e-3 in "
             "a `step()` loop, the configurations interleaved, wall time the minimum of the "
             f"repetitions. {other} / {base}: Newton iterations per solve "
             f"{min(n.values()):.2f}–{max(n.values()):.2f}×, wall time "
             f"{min(w.values()):.2f}–{max(w.values()):.2f}× (median {_page.median(list(w.values())):.2f})"
             + (f"; failed: {', '.join(failed)}." if failed else "; every run finite."), "",
             f"| model | Newton it./solve {base} | {other} | ratio | wall [s] {base} | {other} | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in ok:
        lines.append(f"| {r['model']} | {r[base]['newton_per_solve']:.2f} | "
                     f"{r[other]['newton_per_solve']:.2f} | {n[r['model']]:.2f} | "
                     f"{r[base]['wall']:.3g} | {r[other]['wall']:.3g} | {w[r['model']]:.2f} |")
    lines += ["", "![creep cost](creep/cost.png)"]
    return "\n".join(lines)


def plot(rows, base, other, path):
    """Ratios other/base of Newton iterations per solve and wall time per model."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ok = [r for r in rows if "wall" in r.get(base, {}) and "wall" in r.get(other, {})]
    names = [r["model"].replace("menagerie/", "").replace("mujoco_warp/", "w/")
             .replace("mujoco/", "").replace("scene", "").replace(".xml", "") for r in ok]
    newton = [r[other]["newton_per_solve"] / max(r[base]["newton_per_solve"], 1e-9) for r in ok]
    wall = [r[other]["wall"] / r[base]["wall"] for r in ok]
    fig, ax = plt.subplots(figsize=(11, 4))
    x = range(len(ok))
    ax.bar([i - 0.2 for i in x], newton, 0.4, label="Newton iterations / solve")
    ax.bar([i + 0.2 for i in x], wall, 0.4, label="wall time (min of reps)")
    ax.axhline(1.0, color="k", lw=0.8)
    ax.axhline(1.1, color="red", lw=0.8, ls="--", label="1.1x")
    ax.set_xticks(list(x))
    ax.set_xticklabels(names, rotation=70, ha="right", fontsize=7)
    ax.set_ylabel(f"{other} / {base}")
    ax.set_title(f"cost at accuracy 1e-3: {other} vs {base}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
