"""Menagerie manipulation scenarios (issue: load every Menagerie robot unchanged):
the Robotiq 2F-85 four-bar closing on its box, the Panda holding a box, and the
Shadow hand's tendon-coupled servos against mj_step."""
import mujoco
import numpy as np

from conftest import SHARED_MODELS

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
    # step). With single 0.1 s steps the box creeps ~1.8 mm in 5 s: ICF's
    # friction regularization ε = max(v_s, μ σ_R w_t h f_n) grows with h.
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


def test_shadow_hand_tendon_servos_match_mjstep_steady_state():
    m = mujoco.MjModel.from_xml_path(str(SHARED_MODELS / "menagerie/shadow_hand/scene_right.xml"))
    lo, hi = m.actuator_ctrlrange[:, 0], m.actuator_ctrlrange[:, 1]
    ctrl = lo + 0.3 * (hi - lo)  # fingers partly flexed, no finger–finger contact
    hinges = [m.jnt_qposadr[j] for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_HINGE]
    final = {}
    for method in ("mj_step", "mjcenic"):
        d = mjcenic.make_data(m)
        d.ctrl[:] = ctrl
        sim = mjcenic.Stepper(m, mode="cenic", accuracy=1e-3)
        for _ in range(int(3.0 / m.opt.timestep)):
            if method == "mj_step":
                mujoco.mj_step(m, d)
            else:
                sim.step(d)
        final[method] = d.qpos[hinges].copy()
    diff = np.abs(final["mjcenic"] - final["mj_step"])
    print(f"Shadow hand: max steady joint-angle difference {diff.max():.4f} rad")
    assert diff.max() < 0.02
