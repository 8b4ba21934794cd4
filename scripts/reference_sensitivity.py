#!/usr/bin/env python3
"""Why a work-precision reference does or does not converge.

    python3 scripts/reference_sensitivity.py [--scene clutter] [--levels 3,9] [--delta 1e-9]

For one scene of scripts/work_precision.py and each simulator (mj_step, and
mjcenic in fixed mode: the references' runners of mjcenic.work_precision):

* the check between consecutive levels dt/2^(k-1) and dt/2^k at every 20 ms
  sample: a first-order method's checks halve from level to level; a chaotic
  scene's do not fall;
* the growth of a perturbation: the first free body shifted by --delta along x
  at t = 0, run at the finest level but one; the difference at each sample over
  delta is the amplification a local error made at t = 0 suffers by that time.
  An amplification of order 10^2 (not 10^6 and more) says the scene is not
  chaotic on this horizon: a check above tolerance is then slow convergence,
  not sensitivity.

Prints one table per simulator (docs/cenic-math.md §14.6).
"""
import argparse
import os
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(pathlib.Path(os.environ.get("MJCENIC_BUILD", ROOT / "build")) / "python"))
sys.path.insert(0, str(ROOT / "scripts"))

import mujoco  # noqa: E402

import mjcenic  # noqa: E402
from mjcenic import work_precision as wp  # noqa: E402
import work_precision as bench  # noqa: E402


def distance(m, a, b):
    v = np.zeros(m.nv)
    mujoco.mj_differentiatePos(m, v, 1.0, a, b)
    return float(np.abs(v).max())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scene", default="clutter", choices=sorted(bench.SCENES))
    p.add_argument("--levels", default="3,9", help="k_lo,k_hi: levels dt/2^k")
    p.add_argument("--delta", type=float, default=1e-9, help="[m] initial perturbation")
    a = p.parse_args()
    sc = bench.Scene(a.scene, *bench.SCENES[a.scene])
    m, dt = sc.m, sc.m.opt.timestep
    lo, hi = (int(x) for x in a.levels.split(","))
    free = np.nonzero(m.jnt_type == mujoco.mjtJoint.mjJNT_FREE)[0]

    def perturbed():
        d = sc.data()
        if len(free):
            d.qpos[m.jnt_qposadr[free[0]]] += a.delta
            mujoco.mj_forward(m, d)
        return d

    print(f"[{a.scene}] dt = {dt:g}, samples every {bench.SAMPLE} s to {sc.horizon} s")
    for sim in ("mj_step", "mjcenic"):
        runs = {}
        print(f"\n{sim}: check |x(dt/2^(k-1)) - x(dt/2^k)| at each sample [m, rad]")
        for k in range(lo, hi + 1):
            runs[k] = wp.runner(sim, m, sc.times, sc.data, ctrl=sc.ctrl)(dt / 2 ** k)
            if k > lo:
                c = [distance(m, runs[k].q[i], runs[k - 1].q[i]) for i in range(len(sc.times))]
                print(f"  k={k:2d}: max {max(c):.2e}  " + " ".join(f"{x:.1e}" for x in c))
        if len(free):
            r = wp.runner(sim, m, sc.times, perturbed, ctrl=sc.ctrl)(dt / 2 ** (hi - 1))
            g = [distance(m, r.q[i], runs[hi - 1].q[i]) / a.delta for i in range(len(sc.times))]
            print(f"  amplification of a {a.delta:g} m shift at k={hi - 1}: max {max(g):.3g}  "
                  + " ".join(f"{x:.2g}" for x in g))


if __name__ == "__main__":
    main()
