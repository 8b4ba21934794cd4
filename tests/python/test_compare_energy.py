"""`mjcenic compare`'s energy probe (the drift it reports is of this value):
potential plus kinetic energy of a state, against the closed form of a free
sphere, and without touching the stepped MjData."""
import math

import mujoco
import numpy as np

from mjcenic import compare

SPHERE = """<mujoco><option gravity="0 0 -9.81"/><worldbody>
  <body pos="0 0 0"><freejoint/><geom type="sphere" size="0.1" mass="2"/></body>
</worldbody></mujoco>"""


def test_energy_is_potential_plus_kinetic():
    m = mujoco.MjModel.from_xml_string(SPHERE)
    d = mujoco.MjData(m)
    d.qpos[2] = 1.5                    # height: m g z = 2 · 9.81 · 1.5
    d.qvel[:3] = [0.3, -0.4, 1.2]      # |v|² = 1.69: ½ m |v|² = 1.69
    d.qvel[3:] = [0.0, 0.0, 2.0]       # spin: ½ I ω², I = 2/5 m r² = 0.008
    probe = compare._Probe(m)
    before = (d.qpos.copy(), d.qvel.copy())
    e = probe.energy(d)
    expected = 2 * 9.81 * 1.5 + 0.5 * 2 * 1.69 + 0.5 * 0.008 * 4.0
    assert math.isclose(e, expected, rel_tol=1e-9), (e, expected)
    np.testing.assert_array_equal(d.qpos, before[0])
    np.testing.assert_array_equal(d.qvel, before[1])
    # At rest only the potential energy is left.
    d.qvel[:] = 0
    assert math.isclose(probe.energy(d), 2 * 9.81 * 1.5, rel_tol=1e-12)
