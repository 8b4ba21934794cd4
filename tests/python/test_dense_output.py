"""Dense output (docs/python.md, "Outputs inside a step"): a step() loop with held inputs
reads the state inside the controller's accepted steps. Against analytic solutions the step
itself reproduces exactly, so the interpolation is the only error left: a free fall
(velocity linear in time, which implicit Euler and the linear interpolant both reproduce
exactly) and a first-order actuator (filterexact: MuJoCo's exact exponential, which the
interpolant reproduces too, cenic-math §11.5)."""
import math

import mujoco
import numpy as np
import pytest

import mjcenic  # noqa: E402  (conftest puts build/python on sys.path)

G, TAU = 9.81, 0.05
# A ball falling along a slide joint, and a free-spinning hinge carrying a filterexact
# actuator with zero gain (its activation has no effect on the motion) whose control is
# held at 1: act(t) = 1 − exp(−t/τ).
SCENE = f"""<mujoco>
  <option timestep="0.001" gravity="0 0 -{G}"/>
  <worldbody>
    <body pos="0 0 10"><joint name="z" type="slide" axis="0 0 1"/>
      <geom type="sphere" size=".1" mass="1"/></body>
    <body pos="1 0 0"><joint name="h" type="hinge" axis="0 1 0"/>
      <geom type="sphere" size=".1" mass="1"/></body>
  </worldbody>
  <actuator><general joint="h" dyntype="filterexact" dynprm="{TAU}" gainprm="0"/></actuator>
</mujoco>"""


def test_qvel_and_act_inside_steps_match_the_analytic_motion():
    m = mujoco.MjModel.from_xml_string(SCENE)
    d = mujoco.MjData(m)
    d.ctrl[0] = 1.0
    s = mjcenic.Stepper(m, accuracy=1e-3)
    ncall = 200
    inside = 0
    for i in range(ncall):
        steps = s.stats["steps"]
        s.step(d)
        t = d.time  # the sum of the timesteps
        assert t == pytest.approx((i + 1) * m.opt.timestep, abs=1e-12)
        inside += s.stats["steps"] == steps  # no new step: read inside the last one
        assert abs(d.qvel[0] + G * t) <= 1e-12 * G, (i, d.qvel[0], -G * t)
        assert abs(d.act[0] - (1 - math.exp(-t / TAU))) <= 1e-12, (i, d.act[0])
        # Positions: first order along the chord; within the step's own error.
        assert abs(d.qpos[0] + 0.5 * G * t * t) <= 1e-2
    # Most calls end inside a step (the controller's steps are many timesteps long).
    assert s.stats["steps"] < ncall / 3
    assert inside > ncall / 2


def test_dense_and_capped_runs_agree_at_step_ends():
    m = mujoco.MjModel.from_xml_string(SCENE)
    out = {}
    for dense in (True, False):
        d = mujoco.MjData(m)
        d.ctrl[0] = 1.0
        s = mjcenic.Stepper(m, accuracy=1e-3, dense_output=dense)
        for _ in range(100):
            s.step(d)
        out[dense] = (d.time, d.qvel.copy(), d.act.copy())
    for t, qvel, act in out.values():
        assert np.allclose(qvel[0], -G * t, rtol=0, atol=1e-11)
        assert np.allclose(act[0], 1 - math.exp(-t / TAU), rtol=0, atol=1e-12)
