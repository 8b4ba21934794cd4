"""Every top-level MJCF listed in ../shared/models/README.md loads unchanged and
runs 2 s at its own time step with mjcenic (fixed mode) with a finite state.
Models that start from a keyframe must hold it under their own actuators about
as well as mj_step does (max joint drift printed and compared)."""
import pytest

from conftest import SHARED_MODELS

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

# Fixed-base arms that start from a keyframe and must hold it with their servos.
HOLDS_KEYFRAME = {"menagerie/franka_emika_panda/scene.xml", "menagerie/kuka_iiwa_14/scene.xml"}


@pytest.mark.parametrize("rel", MODELS)
def test_model_runs_two_seconds(cli, rel):
    path = SHARED_MODELS / rel
    assert path.exists(), f"missing shared model {path}"
    _, r, out, _ = cli(path, "--duration", "2", "--compare-mjstep", "--mode", "fixed")
    print(out)
    assert r["finite"] is True
    assert r["steps"] == round(2.0 / r["timestep"])
    assert abs(r["sim_time"] - r["steps"] * r["timestep"]) < 1e-9 * r["steps"]
    assert len(r["final_qpos"]) == r["nq"]
    print(f"{rel}: max joint drift mjcenic {r['max_joint_drift']:.4g} "
          f"mj_step {r['mjstep_max_joint_drift']:.4g}; max penetration "
          f"{1e3 * r['max_penetration']:.3g} mm vs mj_step {1e3 * r['mjstep_max_penetration']:.3g} mm")
    if rel in HOLDS_KEYFRAME:
        assert r["keyframe"] is not None
        assert r["max_joint_drift"] <= max(1.5 * r["mjstep_max_joint_drift"], 0.01)
