"""Contact forces written to mjData for condim 4 and 6 (docs/mujoco-mapping.md), decoded by
MuJoCo's own mj_contactForce: a box resting on a floor under gravity carries its weight, so
the decoded normal forces of its contacts sum to m·g, and each stays inside MuJoCo's friction
cone (pyramidal: Σ|f_j|/μ_j ≤ f_n; elliptic: Σ(f_j/μ_j)² ≤ f_n²), for both cones and for
condim 3, 4 and 6 (with 4 and 6 the pyramid has 6 and 10 edges, not 4)."""
import mujoco
import numpy as np
import pytest

import mjcenic  # noqa: E402  (conftest puts build/python on sys.path)

MASS, G = 2.0, 9.81


def scene(cone, condim):
    return f"""<mujoco>
  <option timestep="0.002" cone="{cone}" gravity="0 0 -{G}"/>
  <worldbody>
    <geom type="plane" size="2 2 .1" condim="{condim}" friction="0.8 0.05 0.01"/>
    <body pos="0 0 0.1"><freejoint/>
      <geom type="box" size=".1 .1 .1" mass="{MASS}" condim="{condim}" friction="0.8 0.05 0.01"/>
    </body>
  </worldbody>
</mujoco>"""


@pytest.mark.parametrize("condim", [3, 4, 6])
@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_resting_box_contact_forces_decode_to_its_weight(cone, condim):
    m = mujoco.MjModel.from_xml_string(scene(cone, condim))
    d = mujoco.MjData(m)
    s = mjcenic.Stepper(m, accuracy=1e-4)
    for _ in range(250):  # 0.5 s: settled
        s.step(d)
    assert d.ncon >= 4
    total = np.zeros(6)
    f = np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        assert c.dim == condim
        mujoco.mj_contactForce(m, d, i, f)
        assert f[0] >= 0
        mu = c.friction[: condim - 1]
        if cone == "pyramidal":
            assert np.sum(np.abs(f[1:condim]) / mu) <= f[0] * (1 + 1e-9) + 1e-12, (i, f)
        else:
            assert np.sum((f[1:condim] / mu) ** 2) <= f[0] ** 2 * (1 + 1e-9) + 1e-12, (i, f)
        total += f
    # At rest the contacts carry the weight (to the Newton tolerance), and no net
    # tangential force or torque acts.
    assert total[0] == pytest.approx(MASS * G, rel=2e-3), total
    assert np.abs(total[1:3]).max() <= 1e-3 * MASS * G, total
    assert np.abs(d.qvel).max() < 1e-3
