"""Every top-level MJCF listed in ../shared/models/README.md, unchanged.

* Each model runs 5 s from its first keyframe with the
  default stepper (CENIC, accuracy 1e-3) driven the way an mj_step loop drives
  it (the mj_step-signature Step() once per opt.timestep), with a finite state,
  no "unsupported feature" warning at all (condim 4/6 included), and a maximum
  penetration no deeper than mj_step's on the same model at the model's
  timestep. mjcenic's figure is the stepper's own statistic, the deepest contact
  of every geometry query it made (half steps and rejected attempts included);
  mj_step's is the deepest contact after every mj_step.
* Each model also runs 2 s in fixed-step mode at its own
  timestep with a finite state; fixed-base arms starting from a keyframe hold
  it about as well as mj_step does.

The runs are independent processes of build/mjcenic-run, started together on
as many workers as there are cores (the slowest models first)."""
import concurrent.futures
import json
import os
import subprocess
import tempfile

import mujoco
import numpy as np
import pytest

from conftest import BUILD, SHARED_MODELS

pytestmark = pytest.mark.shared_models

MODELS = [
    "menagerie/franka_emika_panda/scene.xml",
    "menagerie/shadow_hand/scene_right.xml",
    "menagerie/shadow_hand/scene_left.xml",
    "menagerie/wonik_allegro/scene_right.xml",
    "menagerie/wonik_allegro/scene_left.xml",
    "menagerie/robotiq_2f85/scene.xml",
    "menagerie/kuka_iiwa_14/scene.xml",
    "mujoco/humanoid/humanoid.xml",
    "mujoco/humanoid/100_humanoids.xml",
    "mujoco/humanoid/humanoid100.xml",
    "mujoco/barkour_v0/assets/barkour_v0_mjx.xml",
    "mujoco/car/car.xml",
    "mujoco/slider_crank/slider_crank.xml",
    "mujoco/replicate/particle.xml",
    "mujoco/replicate/particle_free.xml",
    "mujoco/replicate/particle_free2d.xml",
    "mujoco/replicate/leaves.xml",
    "mujoco/replicate/stonehenge.xml",
    "mujoco/replicate/newton_cradle.xml",
    "mujoco/replicate/tendon.xml",
    "mujoco/replicate/bowl.xml",
    "mujoco/replicate/cylinder.xml",
    "mujoco/replicate/helix.xml",
    "mujoco/replicate/container.xml",
    "mujoco_warp/aloha_pot/scene.xml",
    "mujoco_warp/unitree_g1/scene_flat.xml",
    "mujoco_warp/unitree_g1/scene_hfield.xml",
    "mujoco_warp/franka_emika_panda/scene.xml",
]
REPLACED_SETTINGS = "MJCF options replaced by mjcenic and ignored"


def _replaced_settings(m):
    """The model's mj_step settings other than MuJoCo's defaults that mjcenic ignores."""
    return [s for s, default in ((m.opt.integrator, mujoco.mjtIntegrator.mjINT_EULER),
                                 (m.opt.solver, mujoco.mjtSolver.mjSOL_NEWTON),
                                 (m.opt.noslip_iterations, 0)) if s != default]


# Measured single-core wall times dominate the sweep: start these first.
SLOW_FIRST = ["mujoco/humanoid/100_humanoids.xml", "mujoco/replicate/particle.xml",
              "mujoco/replicate/leaves.xml", "mujoco/replicate/tendon.xml",
              "mujoco/humanoid/humanoid100.xml"]

# Fixed-base arms that start from a keyframe and must hold it with their servos.
HOLDS_KEYFRAME = {"menagerie/franka_emika_panda/scene.xml", "menagerie/kuka_iiwa_14/scene.xml"}

# MuJoCo's convex collider (GJK/EPA) stops after <option ccd_iterations> (35
# by default). replicate/particle_free2d.xml spawns one of its planar
# particles (geom 104) inside the mocap capsule of replicate/scene.xml, 10 cm
# deep, and there 35 iterations are not enough: the reported depth is 100.71
# mm where the converged depth is 101.90 mm, and the reported normal flips
# between faces with the pose, one of them pointing the wrong way (pushing
# along it makes the reported overlap deeper; see
# test_particle_free2d_collider_is_unconverged_at_35_iterations). mj_step's
# first 10 ms step happens to see the good face and ejects the particle;
# mjcenic's error-controlled steps sample the noise (2489 accepted + 1705
# rejected steps) and the particle jitters in place, 0.26 mm deeper than the
# start by the unconverged measure. Acceptance 1 is therefore measured for
# this model with the collider converged, the same setting for both
# simulators (the MJCF file is unchanged; mjcenic-run --ccd-iterations sets
# m->opt): both then report the start overlap, 101.90 mm, as the deepest.
CONVERGED_COLLIDER = {"mujoco/replicate/particle_free2d.xml":
                      ["--ccd-iterations", "200", "--ccd-tolerance", "1e-10"]}

CENIC_ARGS = ["--duration", "5", "--chunk", "step", "--compare-mjstep"]
FIXED_ARGS = ["--duration", "2", "--mode", "fixed", "--compare-mjstep"]


def _run(rel, args):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "report.json")
        proc = subprocess.run([str(BUILD / "mjcenic-run"), str(SHARED_MODELS / rel), *args,
                               "--json", out], capture_output=True, text=True, timeout=1500)
        report = json.load(open(out)) if os.path.exists(out) else None
    return proc.returncode, report, proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def sweep():
    """{(model, 'cenic'|'fixed'): (returncode, report, output)}, all run concurrently."""
    order = SLOW_FIRST + [m for m in MODELS if m not in SLOW_FIRST]
    jobs = [(rel, kind) for rel in order for kind in ("cenic", "fixed")]
    jobs += [(rel, "stock collider") for rel in CONVERGED_COLLIDER]
    args = {"cenic": lambda rel: CENIC_ARGS + CONVERGED_COLLIDER.get(rel, []),
            "fixed": lambda rel: FIXED_ARGS, "stock collider": lambda rel: CENIC_ARGS}
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        futures = {job: pool.submit(_run, job[0], args[job[1]](job[0])) for job in jobs}
        return {job: f.result() for job, f in futures.items()}


def _load(rel):
    return mujoco.MjModel.from_xml_path(str(SHARED_MODELS / rel))


def _pair_contact(m, d, geoms):
    mujoco.mj_forward(m, d)
    found = [c for c in d.contact[:d.ncon] if set(c.geom) == set(geoms)]
    assert len(found) == 1
    return -found[0].dist, found[0].frame[:3].copy()


def test_particle_free2d_collider_is_unconverged_at_35_iterations():
    """Why CONVERGED_COLLIDER: at the model's own ccd_iterations the engulfed
    particle's depth is under-reported by > 1 mm and one reported normal is
    not a separating direction; at 200 iterations the depth is a smooth
    function of the pose whose normal decreases it."""
    rel = "mujoco/replicate/particle_free2d.xml"
    m = _load(rel)
    d = mujoco.MjData(m)
    assert m.opt.ccd_iterations == 35
    pair = (5, 104)  # the capsule, the engulfed particle
    body = m.geom_bodyid[104]
    x = m.jnt_qposadr[m.body_jntadr[body]]  # slide x, slide y, hinge z
    q0 = d.qpos.copy()

    def probe(dx, dy):
        d.qpos[:] = q0
        d.qpos[x] += dx
        d.qpos[x + 1] += dy
        return _pair_contact(m, d, pair)

    stock, _ = probe(0, 0)
    # 1 mm in -x the collider reports the other face; a small push along that
    # normal's in-plane part makes the reported overlap deeper, not shallower.
    depth, n = probe(-1e-3, 0)
    push = 2e-4 * n[:2] / np.linalg.norm(n[:2])
    deeper, _ = probe(-1e-3 + push[0], push[1])
    m.opt.ccd_iterations, m.opt.ccd_tolerance = 200, 1e-10
    converged, nc = probe(0, 0)
    pc = 2e-4 * nc[:2] / np.linalg.norm(nc[:2])
    pushed, _ = probe(pc[0], pc[1])
    print(f"engulfed particle: depth {1e3 * stock:.3f} mm at 35 iterations, {1e3 * converged:.3f} mm "
          f"converged; 0.2 mm along the stock normal {np.round(n, 3)}: {1e3 * depth:.4f} -> "
          f"{1e3 * deeper:.4f} mm; along the converged normal: {1e3 * pushed:.4f} mm")
    assert stock == pytest.approx(0.10071, abs=2e-5)
    assert converged - stock > 1e-3
    assert deeper > depth
    assert pushed < converged


@pytest.mark.parametrize("rel", MODELS)
def test_model_runs_five_seconds_error_controlled(sweep, rel):
    assert (SHARED_MODELS / rel).exists(), f"missing shared model {rel}"
    rc, r, out = sweep[(rel, "cenic")]
    print(out)
    assert r is not None, out
    assert rc == 0 and r["finite"] is True, out
    assert r["mode"] == "cenic" and r["accuracy"] == 1e-3
    assert abs(r["sim_time"] - round(5.0 / r["timestep"]) * r["timestep"]) < 1e-9
    nkey = _load(rel).nkey
    assert (r["keyframe"] is not None) == (nkey > 0), "must start from the first keyframe"
    # The only warning allowed names the mj_step integrator/solver settings the
    # model sets and mjcenic replaces by design; right for
    # the models that set integrator="implicitfast", solver="CG"/"PGS".
    other = [w for w in r["warnings"] if not w.startswith(REPLACED_SETTINGS)]
    assert other == [], f"unexpected warnings: {r['warnings']}"
    assert len(r["warnings"]) - len(other) == int(bool(_replaced_settings(_load(rel))))
    pen, mj_pen = r["max_penetration"], r["mjstep_max_penetration"]
    print(f"{rel}: max penetration {1e3 * pen:.3f} mm vs mj_step {1e3 * mj_pen:.3f} mm; "
          f"{r['accepted_steps']} accepted + {r['rejected_steps']} rejected steps, "
          f"h median {r['h_median']:.3g} s, wall {r['wall_time']:.1f} s "
          f"(mj_step {r['mjstep_wall_time']:.2f} s)")
    if rel in CONVERGED_COLLIDER:
        assert r["ccd_iterations"] == 200 and r["ccd_tolerance"] == 1e-10
    assert pen <= mj_pen * (1 + 1e-6) + 1e-9


@pytest.mark.parametrize("rel", MODELS)
def test_model_runs_two_seconds_fixed_step(sweep, rel):
    rc, r, out = sweep[(rel, "fixed")]
    print(out)
    assert r is not None, out
    assert rc == 0 and r["finite"] is True, out
    assert r["steps"] == round(2.0 / r["timestep"])
    assert abs(r["sim_time"] - r["steps"] * r["timestep"]) < 1e-9 * r["steps"]
    assert len(r["final_qpos"]) == r["nq"]
    print(f"{rel}: max joint drift mjcenic {r['max_joint_drift']:.4g} "
          f"mj_step {r['mjstep_max_joint_drift']:.4g}; max penetration "
          f"{1e3 * r['max_penetration']:.3g} mm vs mj_step {1e3 * r['mjstep_max_penetration']:.3g} mm")
    if rel in HOLDS_KEYFRAME:
        assert r["keyframe"] is not None
        assert r["max_joint_drift"] <= max(1.5 * r["mjstep_max_joint_drift"], 0.01)


def test_particle_free2d_at_the_stock_collider(sweep):
    """The same run at the model's own ccd_iterations = 35: mj_step's deepest
    is the start overlap as the unconverged collider reports it; mjcenic
    keeps the particle within 1 mm of it (measured 0.26 mm deeper, collider
    noise) and finite. Printed for the record; the bound guards regressions."""
    rel = "mujoco/replicate/particle_free2d.xml"
    rc, r, out = sweep[(rel, "stock collider")]
    assert r is not None, out
    assert rc == 0 and r["finite"] is True and r["ccd_iterations"] == 35, out
    m = _load(rel)
    d = mujoco.MjData(m)
    start, _ = _pair_contact(m, d, (5, 104))
    print(f"{rel} at ccd_iterations 35: max penetration {1e3 * r['max_penetration']:.3f} mm vs "
          f"mj_step {1e3 * r['mjstep_max_penetration']:.3f} mm (start {1e3 * start:.3f} mm); "
          f"{r['accepted_steps']} accepted + {r['rejected_steps']} rejected steps")
    assert r["mjstep_max_penetration"] == pytest.approx(start, rel=1e-6)
    assert r["max_penetration"] <= start + 1e-3
