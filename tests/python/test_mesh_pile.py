"""models/mesh_pile.xml (scripts/gen_mesh_pile.py): 50 convex meshes dropped
into an open bin, the pile scene of the step-cost benchmark; models/mesh_pile_125.xml,
125 of them, the pile of the policy-loop benchmark. Physics and progress checks only;
their cost is measured by scripts/bench_step_cost.py and scripts/bench_policy_loop.py."""
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from conftest import ROOT

import mjcenic

PILE = ROOT / "models" / "mesh_pile.xml"
PILE_125 = ROOT / "models" / "mesh_pile_125.xml"
# Bin interior (generator): |x|, |y| < 0.15 m inside the walls, bottom surface z = 0.02 m.
HALF_WIDTH, BOTTOM = 0.15, 0.02


def test_generator_reproduces_the_committed_scene(tmp_path):
    texts = [PILE.read_text(), PILE_125.read_text()]
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_mesh_pile.py")], check=True)
    assert [PILE.read_text(), PILE_125.read_text()] == texts


def test_scene_is_a_pile_of_fifty_meshes():
    m = mjcenic.load_model(PILE)
    free = [j for j in range(m.njnt) if m.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE]
    assert len(free) == 50
    assert sum(m.geom_type == mujoco.mjtGeom.mjGEOM_MESH) == 50


@pytest.mark.parametrize("mode", ["fixed", "cenic"])
def test_pile_settles_in_the_bin_no_deeper_than_mj_step(mode):
    """1.5 s: every body ends inside the bin (centres within the walls, above the
    bottom), and the deepest contact mjcenic saw is no deeper than the deepest
    mj_step sees on the same drop (mj_step's soft contacts are the reference)."""
    m = mjcenic.load_model(PILE)
    T = 1.5
    d = mjcenic.make_data(m)
    sim = mjcenic.Stepper(m, mode=mode)
    sim.advance_to(T, d)
    x, y, z = d.qpos[0::7], d.qpos[1::7], d.qpos[2::7]
    assert np.all(np.abs(x) < HALF_WIDTH) and np.all(np.abs(y) < HALF_WIDTH)
    assert np.all(z > BOTTOM)
    dm = mjcenic.make_data(m)
    deepest = 0.0
    while dm.time < T - 1e-9:
        mujoco.mj_step(m, dm)
        deepest = max([deepest] + [-dm.contact[i].dist for i in range(dm.ncon)])
    assert deepest > 0  # the pile is in contact
    assert 0 < sim.stats["max_penetration"] <= deepest


@pytest.mark.parametrize("estimate", ["doubling", "embedded"])
def test_pile_of_125_drops_without_a_rejection_storm(estimate):
    """The drop of 125 meshes (0.4 s of 2 ms calls, the impacts): no step
    crawls to the minimum step (cenic-math §11.13: an embedded estimate across
    an impact gives way to doubling; §11.10: a contact point the start query
    did not report is measured from its own material points' depth at x_t),
    and fewer than half of the steps are rejected (measured: doubling
    744 + 293, h_min 9e-5 s; embedded 1064 + 306, h_min 7e-5 s; measuring
    from the pair's start depth alone 762 + 348 and 1092 + 380, each step
    that met such a point rejected down to a tenth of its size; without the
    storm rule and that 874 + 751 and 1258 + 826, each with a step of
    1e-14 s)."""
    m = mjcenic.load_model(PILE_125)
    assert sum(m.geom_type == mujoco.mjtGeom.mjGEOM_MESH) == 125
    d = mjcenic.make_data(m)
    sim = mjcenic.Stepper(m, error_estimate=estimate)
    sim.step(d, nstep=200)
    st = sim.stats
    assert d.time == pytest.approx(0.4)
    assert st["h_min"] > 1e-8
    assert st["rejected_steps"] < 0.5 * st["steps"]
