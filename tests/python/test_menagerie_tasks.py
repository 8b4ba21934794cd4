"""Menagerie manipulation scenarios (issue: load every Menagerie robot unchanged):
the Robotiq 2F-85 four-bar closing on its box, the Panda holding a box, and the
Shadow hand's tendon-coupled servos against mj_step."""
import mujoco
import numpy as np
import pytest

from conftest import SHARED_MODELS

pytestmark = pytest.mark.shared_models

import mjcenic  # noqa: E402


def body(m, name):
    return mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, name)


def test_robotiq_four_bar_stays_closed_while_grasping():
    m = mujoco.MjModel.from_xml_path(str(SHARED_MODELS / "menagerie/robotiq_2f85/scene.xml"))
    d = mjcenic.make_data(m)
    sim = mjcenic.Stepper(m, mode="cenic", accuracy=1e-3)
    d.ctrl[0] = 255  # close
    worst = 0.0
    pads = {body(m, n) for n in ("right_pad", "left_pad", "right_silicone_pad", "left_silicone_pad")}
    obj = body(m, "object")
    for _ in range(int(2.0 / m.opt.timestep)):
        sim.step(d)
        rows = d.efc_type[:d.nefc] == mujoco.mjtConstraint.mjCNSTR_EQUALITY
        if rows.any():
            worst = max(worst, float(np.abs(d.efc_pos[:d.nefc][rows]).max()))
    touching = set()
    for c in d.contact[:d.ncon]:
        b = {m.geom_bodyid[c.geom[0]], m.geom_bodyid[c.geom[1]]}
        if obj in b:
            touching |= (b & pads)
    print(f"Robotiq: max equality violation {worst:.3g} m, pads on the object: {sorted(touching)}")
    assert worst < 1e-3
    assert len(touching) >= 2  # both fingers on the box
    assert np.all(np.isfinite(d.qpos))


def panda_with_box():
    path = SHARED_MODELS / "menagerie/franka_emika_panda/scene.xml"
    m0 = mujoco.MjModel.from_xml_path(str(path))
    d0 = mjcenic.make_data(m0)
    spec = mujoco.MjSpec.from_file(str(path))
    for k in list(spec.keys):
        spec.delete(k)
    # A 0.1 kg box (3.8 x 4 x 4 cm) between the finger pads at the home pose.
    box = spec.worldbody.add_body(name="box", pos=[0.5545, 0, 0.5216])
    box.add_freejoint()
    box.add_geom(type=mujoco.mjtGeom.mjGEOM_BOX, size=[0.019, 0.02, 0.02], mass=0.1)
    m = spec.compile()
    d = mujoco.MjData(m)
    d.qpos[:9] = d0.qpos
    d.qpos[7:9] = 0.02  # fingers at the box width
    d.ctrl[:] = d0.ctrl
    d.ctrl[7] = 0  # close the gripper
    mujoco.mj_forward(m, d)
    return m, d


def test_panda_holds_box_for_five_seconds():
    m, d = panda_with_box()
    sim = mjcenic.Stepper(m, mode="cenic", accuracy=1e-3)
    hand, box = body(m, "hand"), body(m, "box")

    def rel():
        return d.xmat[hand].reshape(3, 3).T @ (d.xpos[box] - d.xpos[hand])

    # A user loop at the model's 2 ms control rate (error control inside each
    # step). Creep at other step sizes: scripts/bench_creep.py.
    while d.time < 1.0 - 1e-9:  # grasp settles
        sim.step(d)
    r0 = rel()
    while d.time < 6.0 - 1e-9:
        sim.step(d)
    slip = float(np.linalg.norm(rel() - r0))
    print(f"Panda: box slip over 5 s {slip * 1e3:.3f} mm, box height {d.xpos[box][2]:.4f} m, "
          f"{sim.stats['steps']} steps")
    assert d.xpos[box][2] > 0.45  # still in the hand, not on the floor
    assert slip < 1e-3


SHADOW = SHARED_MODELS / "menagerie/shadow_hand"


def shadow_run(file, frac, duration, method, probe=None):
    """Holds ctrl at lo + frac (hi - lo) from the default pose for `duration`;
    returns (model, data). probe(m, d) is called every 0.5 s."""
    m = mujoco.MjModel.from_xml_path(str(SHADOW / file))
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    d = mjcenic.make_data(m)
    d.ctrl[:] = lo + frac * (hi - lo)
    sim = mjcenic.Stepper(m, mode="cenic", accuracy=1e-3)
    every = int(round(0.5 / m.opt.timestep))
    for i in range(int(round(duration / m.opt.timestep))):
        mujoco.mj_step(m, d) if method == "mj_step" else sim.step(d)
        if probe and (i + 1) % every == 0:
            probe(m, d)
    return m, d


def hinge_angles(m, d):
    return np.array([d.qpos[m.jnt_qposadr[j]] for j in range(m.njnt)
                     if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE])


# scene_right.xml (the object dropped onto the closing hand) is not compared:
# the drop is chaotic (mjcenic at accuracy 1e-3 leaves the object on the palm,
# at 1e-5 it slips off the hand onto the floor), so its rest pose is not a steady
# state of the servos; see docs/limitations.md.
@pytest.mark.parametrize("file,frac", [("right_hand.xml", 0.1), ("right_hand.xml", 0.3)])
def test_shadow_hand_tendon_servos_match_mjstep_steady_state(file, frac):
    """20 position servos (4 on fixed tendons coupling
    J1/J2 of each finger), joint frictionloss, armature, limits, gravity. ctrl is held at
    a fixed fraction of its range; both runs must be at rest after 3 s and
    their joint angles agree within 0.02 rad (mj_step at 0.5 ms agrees with
    mj_step at the model's 2 ms within 0.003 rad here)."""
    final = {}
    for method in ("mj_step", "mjcenic"):
        m, d = shadow_run(file, frac, 3.0, method)
        assert np.abs(d.qvel[:24]).max() < 0.05, f"{method} is not at rest"
        final[method] = hinge_angles(m, d)
    diff = np.abs(final["mjcenic"] - final["mj_step"])
    print(f"Shadow hand {file} at {frac:.0%} ctrl: max steady joint-angle difference "
          f"{diff.max():.4f} rad")
    assert diff.max() < 0.02


def test_shadow_hand_friction_holds_where_mjstep_creeps():
    """At 60 % ctrl the little finger's middle phalanx presses on the ring
    finger's tip (mu = 1) and neither simulator is at rest after 4 s: the
    little finger's J5 keeps turning towards its set point in mj_step although
    MuJoCo's own contact force stays inside the friction cone (|f_t| / f_n at
    most 0.75 mu): that is the creep of MuJoCo's soft friction. Under
    Coulomb's law the contact sticks; mjcenic's regularized friction creeps at
    a fraction of mj_step's rate. Asserted: mj_step's friction ratio is inside
    the cone while it moves, and mjcenic turns less than half as far."""
    ratios = []
    f = np.zeros(6)

    def cone_ratio(m, d):
        for c in range(d.ncon):
            mujoco.mj_contactForce(m, d, c, f)
            if f[0] > 0.2:
                ratios.append(np.hypot(f[1], f[2]) / (f[0] * d.contact[c].friction[0]))

    m = mujoco.MjModel.from_xml_path(str(SHADOW / "right_hand.xml"))
    j = m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, "rh_LFJ5")]
    travel = {}
    for method in ("mj_step", "mjcenic"):
        start = []
        m, d = shadow_run("right_hand.xml", 0.6, 4.0, method,
                          probe=lambda m, d: (start.append(d.qpos[j]),
                                              method == "mj_step" and cone_ratio(m, d)))
        travel[method] = start[-1] - start[0]  # from 0.5 s to 4 s
    print(f"LFJ5 travel 0.5 s -> 4 s: mj_step {travel['mj_step']:.3f} rad, mjcenic "
          f"{travel['mjcenic']:.3f} rad; mj_step |f_t|/(mu f_n) max {max(ratios):.2f}")
    assert ratios and max(ratios) < 0.8
    assert travel["mj_step"] > 0.1
    assert 0 <= travel["mjcenic"] < 0.5 * travel["mj_step"]


def test_shadow_hand_step_loop_at_loose_accuracy_returns_no_finger_inside_another():
    """cenic-math §11.5: with ctrl held for 20 ms, a Step() loop at accuracy 0.1
    lets the integrator take 0.1 s steps and returns the states inside them.
    Near 0.63 s such a step's chord passes the ring fingertip into the little
    fingertip (neither of its queries saw it; 2.97 mm deep when returned
    unchecked); every returned state is checked like a step's end, so the
    loop's deepest contact stays as shallow as at accuracy 1e-3 (0.13 mm;
    mj_step at its timestep 7.6 mm). The ctrl wave of scripts/sinking.py."""
    m = mujoco.MjModel.from_xml_path(str(SHADOW / "scene_right.xml"))
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    deepest = {}
    for accuracy in (1e-1, 1e-3):
        d = mujoco.MjData(m)
        mujoco.mj_forward(m, d)
        ctrl0 = d.ctrl.copy()
        s = mjcenic.Stepper(m, accuracy=accuracy)
        for k in range(50):  # 1 s in 20 ms periods
            d.ctrl[:] = np.clip(ctrl0 + 0.3 * 0.5 * (hi - lo) *
                                np.sin(2 * np.pi * 0.02 * k + 0.7 * np.arange(m.nu)), lo, hi)
            s.step(d, 10)
        deepest[accuracy] = s.stats["max_penetration"]
    print(f"deepest contact: accuracy 0.1 {deepest[0.1] * 1e3:.3f} mm, "
          f"1e-3 {deepest[1e-3] * 1e3:.3f} mm")
    assert deepest[0.1] < max(1.5 * deepest[1e-3], 3e-4)
