#!/usr/bin/env python3
"""Creep benchmark: how fast objects held by static friction slide,
for mjcenic's defaults, candidate settings and mj_step.

    python3 scripts/bench_creep.py [--out-dir docs/creep] [--quick]
        [--scenes pinch,incline,gripper,panda,stack] [--series "defaults;..."]

Scenes (all far inside the friction cone, so Coulomb's law says: no motion):
  pinch    models/pinch_grasp.xml, MuJoCo issue #3328's setting: a 45 g capsule
           pinched between two position-controlled pads (load ~3 % of the bound)
  incline  models/box_incline.xml tilted to 10 deg, mu = 0.5 (load 35 % of the bound)
  gripper  models/gripper_lift.xml: a two-finger gripper lifts a 0.2 kg box
           7 cm off the floor and holds it (load ~20 % of the bound)
  panda    the Menagerie Panda holding a 0.1 kg box at its home pose
  stack    models/box_stack.xml: three boxes stacked on a 10 deg incline

Creep speed: displacement of the held object (relative to the hand for the
Panda and the gripper; the largest of the three boxes for the stack) over a window after
settling, divided by the window [µm/s]. Runs: mjcenic in an mj_step-style
loop (step() per model timestep, error control inside) and in 20 ms
advance_to chunks at accuracies 1e-2..1e-4, mjcenic fixed steps of 1-100 ms,
and mj_step (elliptic and pyramidal cones, noslip_iterations 0 and 10).
Writes creep.json, creep.png and (for an --out-dir under docs/) the "creep" section of
docs/benchmarks.md; --from-json docs/creep/creep.json regenerates plot and section without
measuring, --no-page prints the section instead. Run after `make build`.
"""
import argparse
import json
import math
import os
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import mujoco  # noqa: E402
import numpy as np  # noqa: E402

import mjcenic  # noqa: E402


def tilt(m, deg):
    th = math.radians(deg)
    m.opt.gravity[:] = [9.81 * math.sin(th), 0, -9.81 * math.cos(th)]


def body(m, name):
    return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)


def from_key(m, key):
    d = mujoco.MjData(m)
    mujoco.mj_resetDataKeyframe(m, d, mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, key))
    mujoco.mj_forward(m, d)
    return d


def pinch():
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/pinch_grasp.xml"))
    b = body(m, "capsule")
    return m, from_key(m, "grip"), lambda m, d: d.xpos[b].copy()


def incline():
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/box_incline.xml"))
    tilt(m, 10)
    b = body(m, "box")
    return m, from_key(m, "rest"), lambda m, d: d.xpos[b].copy()


def gripper():
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/gripper_lift.xml"))
    hand, b = body(m, "carriage"), body(m, "box")
    return m, from_key(m, "grip"), lambda m, d: d.xpos[b] - d.xpos[hand]


def stack():
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/box_stack.xml"))
    bs = [body(m, f"box{i}") for i in range(3)]
    return m, from_key(m, "rest"), lambda m, d: np.concatenate([d.xpos[b] for b in bs])


def panda():
    """The Panda at its home pose closing on a 0.1 kg box between the finger
    pads (tests/python/test_menagerie_tasks.py); the box position in the hand
    frame."""
    from test_menagerie_tasks import panda_with_box
    m, d = panda_with_box()
    hand, b = body(m, "hand"), body(m, "box")
    return m, d, lambda m, d: d.xmat[hand].reshape(3, 3).T @ (d.xpos[b] - d.xpos[hand])


# name: (builder, settle [s], window [s]); the pinch pads centre the capsule
# along x with a ~0.06 s time constant, hence its longer settling time.
# The gripper's lift settles (1 mm from its rest) after about 1 s.
SCENES = {"pinch": (pinch, 1.0, 1.0), "incline": (incline, 0.5, 1.0),
          "gripper": (gripper, 1.0, 1.0), "panda": (panda, 1.0, 1.0),
          "stack": (stack, 0.5, 1.0)}


def creep(scene, method, options=None, accuracy=1e-3, h=None, cone=None, noslip=0,
          settle=None, window=None):
    """Runs one scene; returns a dict with creep [µm/s], wall [s], steps,
    solves, Newton iterations per solve. method: 'loop' (step() per model
    timestep), 'chunks' (advance_to every 20 ms), 'fixed' (fixed steps of h),
    'mj_step' (at the model timestep, or h)."""
    build, s0, w0 = SCENES[scene]
    settle = s0 if settle is None else settle
    window = w0 if window is None else window
    m, d, probe = build()
    if h is not None:
        m.opt.timestep = h
    if cone is not None:
        m.opt.cone = cone
    m.opt.noslip_iterations = noslip
    opts = dict(options or {})
    if method == "fixed":
        opts["mode"] = "fixed"
    elif method != "mj_step":
        opts.setdefault("accuracy", accuracy)
    sim = mjcenic.Stepper(m, **opts) if method != "mj_step" else None
    chunk = 0.02

    def run_to(t_end):
        if method == "chunks":
            while d.time < t_end - 1e-9:
                sim.advance_to(min(t_end, d.time + chunk), d)
        else:
            n = int(round((t_end - d.time) / m.opt.timestep))
            if method == "mj_step":
                mujoco.mj_step(m, d, n)
            else:
                sim.step(d, n)

    t0 = time.perf_counter()
    ok = True
    try:
        run_to(settle)
        p0, ta = probe(m, d), d.time
        run_to(settle + window)
        p1, tb = probe(m, d), d.time
    except Exception as e:  # noqa: BLE001 — a failed run is a data point
        ok, p0, p1, ta, tb = False, np.zeros(3), np.full(3, np.nan), 0, 1
        print(f"  {scene} {method}: {e}", file=sys.stderr)
    wall = time.perf_counter() - t0
    dp = (p1 - p0).reshape(-1, 3)
    v = float(np.max(np.linalg.norm(dp, axis=1)) / (tb - ta)) * 1e6
    out = {"creep_um_s": v, "wall_s": wall, "ok": ok and bool(np.isfinite(v))}
    if sim is not None:
        st = sim.stats
        out.update(steps=int(st["steps"]), solves=int(st["solves"]),
                   newton_per_solve=st["newton_iterations"] / max(1, st["solves"]))
    else:
        out.update(steps=int(round((settle + window) / m.opt.timestep)))
    return out


# Candidate settings (stepper options); "defaults" = none.
SERIES = {
    "defaults": {},
    "dense_output=false": {"dense_output": "false"},
    "no anchors (paper)": {"stiction_anchors": "false"},
    "no anchors, v_s=1e-7, sigma_R=0": {"stiction_anchors": "false",
                                        "stiction_tolerance": 1e-7, "sigma_r": 0},
}
ACCURACIES = [1e-2, 1e-3, 1e-4]
FIXED_H = [1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2, 1e-1]
MJ = [("elliptic", mujoco.mjtCone.mjCONE_ELLIPTIC, 0), ("elliptic+noslip", mujoco.mjtCone.mjCONE_ELLIPTIC, 10),
      ("pyramidal", mujoco.mjtCone.mjCONE_PYRAMIDAL, 0),
      ("pyramidal+noslip", mujoco.mjtCone.mjCONE_PYRAMIDAL, 10)]


sys.path.insert(0, str(ROOT / "scripts"))
import _page  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", default=str(ROOT / "docs" / "creep"))
    _page.add_arguments(ap)
    ap.add_argument("--quick", action="store_true", help="fewer fixed steps and accuracies")
    ap.add_argument("--scenes", default=",".join(SCENES))
    ap.add_argument("--series", default=";".join(SERIES), help="names separated by ;")
    args = ap.parse_args()
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if args.from_json:
        rows = json.loads(pathlib.Path(args.from_json).read_text())
        plot(rows, out / "creep.png")
        _page.publish(args, out, "creep", "bench_creep.py", section(rows))
        return
    accs = [1e-2, 1e-4] if args.quick else ACCURACIES
    hs = [2e-3, 2e-2, 1e-1] if args.quick else FIXED_H
    rows = []

    def rec(**kw):
        rows.append(kw)
        print(json.dumps(kw), flush=True)

    for scene in args.scenes.split(","):
        for name, cone, ns in MJ:
            rec(scene=scene, series="mj_step " + name, method="mj_step",
                **creep(scene, "mj_step", cone=cone, noslip=ns))
        for series in args.series.split(";"):
            opts = SERIES[series]
            for a in accs:
                for method in ("loop", "chunks"):
                    rec(scene=scene, series=series, method=method, accuracy=a,
                        **creep(scene, method, opts, accuracy=a))
            for h in hs:
                rec(scene=scene, series=series, method="fixed", h=h,
                    **creep(scene, "fixed", opts, h=h))
    (out / "creep.json").write_text(json.dumps(rows, indent=1))
    plot(rows, out / "creep.png")
    print(f"wrote {out / 'creep.json'} and {out / 'creep.png'}")
    _page.publish(args, out, "creep", "bench_creep.py", section(rows))


def _um(v):
    return "—" if v is None else "not finite" if not math.isfinite(v) else f"{v:.2g}" if v < 1 else f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def section(rows):
    """The page section: creep [µm/s] per scene for mj_step and each mjcenic series (loop and
    chunks: the largest over the accuracies; fixed steps up to 20 ms: the largest)."""
    scenes = list(dict.fromkeys(r["scene"] for r in rows))
    accs = sorted({r["accuracy"] for r in rows if "accuracy" in r}, reverse=True)
    hs = sorted({r["h"] for r in rows if "h" in r})

    def worst(sel):
        vals = [r["creep_um_s"] if r["ok"] else math.inf for r in sel]
        return max(vals) if vals else None

    table = []
    for series in dict.fromkeys(r["series"] for r in rows):
        rs = [r for r in rows if r["series"] == series]
        if rs[0]["method"] == "mj_step":
            table.append((f"`{series}`", {sc: worst([r for r in rs if r["scene"] == sc]) for sc in scenes}))
            continue
        acc_text = "…".join(f"1e{round(math.log10(a))}" for a in (accs[0], accs[-1])[:len(accs)])
        for method in ("loop", "chunks"):
            table.append((f"{series}, {method}, accuracy {acc_text} (largest)", {
                sc: worst([r for r in rs if r["scene"] == sc and r["method"] == method]) for sc in scenes}))
        small = [h for h in hs if h <= 0.02 + 1e-12]
        if small:
            table.append((f"{series}, fixed {1e3 * small[0]:g}–{1e3 * small[-1]:g} ms (largest)", {
                sc: worst([r for r in rs if r["scene"] == sc and r["method"] == "fixed"
                           and r["h"] in small]) for sc in scenes}))
        for h in (h for h in hs if h > 0.02 + 1e-12):
            table.append((f"{series}, fixed {1e3 * h:g} ms", {
                sc: worst([r for r in rs if r["scene"] == sc and r["method"] == "fixed"
                           and r["h"] == h]) for sc in scenes}))
    lines = ["Creep [µm/s]: the held object's displacement over 1 s after settling (relative to "
             "the hand for the gripper and the Panda; the fastest box of the stack). "
             "\"loop\": `step()` per model timestep (2 ms) with error control; \"chunks\": "
             "`advance_to` every 20 ms; fixed: `mode=fixed` at that step "
             "(`python3 scripts/bench_creep.py`).", "",
             "| | " + " | ".join(scenes) + " |", "|---|" + "---:|" * len(scenes)]
    for label, vals in table:
        lines.append(f"| {label} | " + " | ".join(_um(vals[sc]) for sc in scenes) + " |")
    lines += ["", "![creep](creep/creep.png)"]
    return "\n".join(lines)


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scenes = list(dict.fromkeys(r["scene"] for r in rows))
    fig, axes = plt.subplots(1, len(scenes), figsize=(4.5 * len(scenes), 4), squeeze=False)
    for ax, scene in zip(axes[0], scenes):
        rs = [r for r in rows if r["scene"] == scene]
        for series in dict.fromkeys(r["series"] for r in rs if r["method"] == "fixed"):
            f = [r for r in rs if r["series"] == series and r["method"] == "fixed"]
            ax.loglog([r["h"] * 1e3 for r in f], [max(r["creep_um_s"], 1e-4) for r in f], "o-",
                      label=f"mjcenic {series}, fixed h")
            for method, mk in (("loop", "s"), ("chunks", "^")):
                a = [r for r in rs if r["series"] == series and r["method"] == method]
                ax.scatter([r["accuracy"] * 1e3 for r in a], [max(r["creep_um_s"], 1e-4) for r in a],
                           marker=mk, label=f"{series}, {method} (x: accuracy*1e3)")
        for r in rs:
            if r["method"] == "mj_step":
                ax.axhline(max(r["creep_um_s"], 1e-4), ls=":", lw=1, color="gray")
                ax.text(1, max(r["creep_um_s"], 1e-4), r["series"], fontsize=6, color="gray")
        ax.axhline(0.1, color="red", lw=0.8)
        ax.set_title(scene)
        ax.set_xlabel("fixed step h [ms]  /  accuracy x 1e3")
        ax.set_ylabel("creep [µm/s]")
    axes[0][0].legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
