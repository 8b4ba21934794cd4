"""No sinking at loose accuracy (cenic-math §11.10): on the heavy-mesh
drop (models/mesh_drop.xml, scripts/gen_mesh_drop.py: three 11 kg meshes about
0.45 m across hitting a plane at 3-5 m/s) the deepest contact at accuracy 1e-1
and 1e-2 is at most 1.5x the one at 1e-3 and no deeper than mj_step's at the
model's dt; with the penetration check off (the paper's configuration) the
same loop sinks. The full table over every benchmark scene is
scripts/sinking.py (docs/sinking)."""
import subprocess
import sys

import mujoco
import numpy as np
import pytest

from conftest import ROOT

import mjcenic

DROP = ROOT / "models" / "mesh_drop.xml"
T = 0.8       # [s] all three have landed by 0.5 s
CHUNK = 0.02  # [s] advance_to period (a 50 Hz control loop)


def mjstep_penetration(m):
    d = mjcenic.make_data(m, "drop")
    deepest = 0.0
    while d.time < T - 1e-9:
        mujoco.mj_step(m, d)
        for i in range(d.ncon):
            if d.contact[i].exclude == 0:
                deepest = max(deepest, -d.contact[i].dist)
    return deepest


def mjcenic_penetration(m, **options):
    d = mjcenic.make_data(m, "drop")
    sim = mjcenic.Stepper(m, **options)
    for t in np.arange(1, round(T / CHUNK) + 1) * CHUNK:
        sim.advance_to(t, d)
    return sim.stats["max_penetration"], d


@pytest.fixture(scope="module")
def drop():
    m = mjcenic.load_model(DROP)
    mj = mjstep_penetration(m)
    pen = {acc: mjcenic_penetration(m, accuracy=acc)[0] for acc in (1e-1, 1e-2, 1e-3)}
    paper = {acc: mjcenic_penetration(m, accuracy=acc, penetration_tolerance=0)[0]
             for acc in (1e-1, 1e-2, 1e-3)}
    print(f"mj_step {1e3 * mj:.3g} mm; default "
          + ", ".join(f"{a:g}: {1e3 * p:.3g} mm" for a, p in pen.items()) + "; paper "
          + ", ".join(f"{a:g}: {1e3 * p:.3g} mm" for a, p in paper.items()))
    return m, mj, pen, paper


def test_generator_reproduces_the_committed_scene():
    text = DROP.read_text()
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_mesh_drop.py")], check=True)
    assert DROP.read_text() == text


def test_scene_is_three_heavy_meshes_that_hit_hard(drop):
    m, mj, _, _ = drop
    assert sum(m.geom_type == mujoco.mjtGeom.mjGEOM_MESH) == 3
    assert np.allclose(m.body_mass[1:], 11.0)
    # mj_step's soft contacts at 2 ms: a few centimetres at impact (30-38 mm).
    assert 0.01 < mj < 0.05


@pytest.mark.parametrize("acc", [1e-1, 1e-2])
def test_loose_accuracy_does_not_sink(drop, acc):
    _, mj, pen, _ = drop
    assert 0 < pen[acc] <= 1.5 * pen[1e-3]
    assert pen[acc] <= mj


def test_paper_configuration_sinks(drop):
    """The check is what removes it: without it, a contact first met inside a
    large step is seen too late (measured 60 mm at 1e-1, 23 mm at 1e-2)."""
    _, mj, pen, paper = drop
    assert paper[1e-1] > 1.5 * paper[1e-3]
    assert paper[1e-1] > mj
    assert paper[1e-2] > 1.5 * pen[1e-3]


def test_bodies_rest_on_the_plane_at_every_accuracy(drop):
    """At the end (bodies at rest) no contact is deeper than 5 mm at any
    accuracy (without the check, a rock at 1e-1 rests 0.1 m deep)."""
    m = drop[0]
    for acc in (1e-1, 1e-2, 1e-3):
        _, d = mjcenic_penetration(m, accuracy=acc)
        mujoco.mj_forward(m, d)
        deepest = max([0.0] + [-d.contact[i].dist for i in range(d.ncon)
                               if d.contact[i].exclude == 0])
        assert deepest < 0.005, (acc, deepest)


def test_stiff_contacts_do_not_force_tiny_steps():
    """x_nom of a 1e12 N/m contact is 1e-11 m; the tolerance floor 1e-3 L
    (cenic-math §11.10) keeps the sphere drop at the paper's step count
    (without the floor: 59 550 steps instead of 100)."""
    m = mjcenic.load_model(ROOT / "models" / "sphere_plane.xml")
    steps = {}
    for tol in (0, 1):
        d = mjcenic.make_data(m, "drop")
        sim = mjcenic.Stepper(m, contact_stiffness=1e12, penetration_tolerance=tol,
                              max_steps_per_call=20000)
        sim.advance_to(1.0, d)
        steps[tol] = sim.stats["steps"]
        assert abs(d.qpos[2] - 0.1) < 1e-3  # resting on the plane (radius 0.1)
    assert steps[1] <= 1.2 * steps[0], steps
