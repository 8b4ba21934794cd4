"""Joint stiffness through every linear solver, on a scene (not a hand-built problem): three
islands of springs (a hinge, a slide, a two-link chain) without gravity or contact. The ICF
problem is then quadratic, so Newton with the exact Hessian (h·D + h²·K on the diagonal,
cenic-math §8) ends each solve after one iteration, and mode fixed reproduces implicit Euler's
recursion for each one-dof island, M(v₁ − v₀) = −h K (q₀ + h v₁), to round-off."""
import mujoco
import numpy as np
import pytest

import mjcenic  # noqa: E402  (conftest puts build/python on sys.path)

SCENE = """<mujoco>
  <option timestep="0.01" gravity="0 0 0"/>
  <worldbody>
    <body><joint type="hinge" axis="0 1 0" stiffness="400" damping="2"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".02" mass="1"/></body>
    <body pos="1 0 0"><joint type="slide" axis="1 0 0" stiffness="900"/>
      <geom type="sphere" size=".05" mass="1"/></body>
    <body pos="2 0 0"><joint type="hinge" axis="0 0 1" stiffness="50"/>
      <geom type="capsule" fromto="0 0 0 .2 0 0" size=".02" mass="1"/>
      <body pos=".2 0 0"><joint type="hinge" axis="0 0 1" stiffness="80"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".02" mass="1"/></body></body>
  </worldbody>
</mujoco>"""

KINDS = ["dense", "sparse", "islands", "pcg", "lowrank", "block", "tree", "auto"]
Q0 = [0.3, 0.05, 0.2, -0.1]
NSTEP = 50


def _implicit_euler(M, k, b, h, q, v, n):
    """n implicit Euler steps of M v' = −k q − b v."""
    for _ in range(n):
        v = (M * v - h * k * q) / (M + h * b + h * h * k)
        q = q + h * v
    return q, v


@pytest.mark.parametrize("kind", KINDS)
def test_springs_solve_in_one_newton_iteration_and_follow_implicit_euler(kind):
    m = mujoco.MjModel.from_xml_string(SCENE)
    d = mujoco.MjData(m)
    d.qpos[:] = Q0
    mujoco.mj_forward(m, d)
    M = []  # one-dof islands: their mass matrix is a scalar, M e_i · e_i
    for i in range(2):
        e, Me = np.zeros(m.nv), np.zeros(m.nv)
        e[i] = 1
        mujoco.mj_mulM(m, d, Me, e)
        M.append(Me[i])
    s = mjcenic.Stepper(m, mode="fixed", linear_solver=kind)
    for _ in range(NSTEP):
        s.step(d)
    st = s.stats
    assert st["solves"] == NSTEP
    assert st["newton_iterations"] == st["solves"], st  # exact Hessian: one iteration
    assert st["island_newton_iterations"] == st["island_solves"] <= 3 * NSTEP, st
    h = m.opt.timestep
    for i, (k, b) in enumerate([(400, 2), (900, 0)]):
        q, v = _implicit_euler(M[i], k, b, h, Q0[i], 0.0, NSTEP)
        assert d.qpos[i] == pytest.approx(q, abs=1e-9 * abs(Q0[i])), (kind, i)
        assert d.qvel[i] == pytest.approx(v, abs=1e-8 * abs(Q0[i]) * np.sqrt(k / M[i])), (kind, i)
    # Springs pull back: the chain's energy decays (implicit Euler), it never grows.
    assert abs(d.qpos[2]) < abs(Q0[2]) + 1e-12


@pytest.mark.parametrize("kind", KINDS)
def test_error_controlled_springs_agree_across_solvers(kind):
    m = mujoco.MjModel.from_xml_string(SCENE)
    ref = None
    for k in ("dense", kind):
        d = mujoco.MjData(m)
        d.qpos[:] = Q0
        s = mjcenic.Stepper(m, accuracy=1e-3, linear_solver=k)
        for _ in range(20):
            s.step(d)
        if ref is None:
            ref = d.qpos.copy()
    # Same problems, same steps: the solvers agree to the Newton tolerance.
    np.testing.assert_allclose(d.qpos, ref, atol=1e-7)
