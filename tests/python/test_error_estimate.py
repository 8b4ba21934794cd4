"""Stepper.sample (trajectory output that does not cap the step) and the
embedded error estimate from Python."""
import mujoco
import numpy as np
import pytest

from conftest import ROOT, SPHERE

import mjcenic  # noqa: E402  (conftest puts build/python on sys.path)

FALL = """<mujoco><option gravity="0 0 -9.81"/>
  <worldbody><body pos="0 0 1"><freejoint/><geom type="sphere" size=".1" mass="1"/></body>
  </worldbody></mujoco>"""


def test_sample_in_fixed_mode_is_linear_inside_each_step():
    # Fixed steps of 10 ms in free fall: samples on step ends are the states
    # advance_to gives; a sample inside a step lies on the straight line
    # q_t + s h v_{t+h} (the implicit step's own continuous extension).
    m = mujoco.MjModel.from_xml_string(FALL)
    d = mujoco.MjData(m)
    sim = mjcenic.Stepper(m, mode="fixed", max_step=0.01)
    times = [0.01, 0.025, 0.03]
    out = sim.sample(times, d)
    assert out["qpos"].shape == (3, m.nq) and out["qvel"].shape == (3, m.nv)
    ref_d = mujoco.MjData(m)
    ref = mjcenic.Stepper(m, mode="fixed", max_step=0.01)
    ref.advance_to(0.01, ref_d)
    np.testing.assert_allclose(out["qpos"][0], ref_d.qpos, rtol=0, atol=1e-15)
    ref.advance_to(0.02, ref_d)
    z2 = ref_d.qpos[2]
    ref.advance_to(0.03, ref_d)
    z3 = ref_d.qpos[2]
    assert out["qpos"][1][2] == pytest.approx(0.5 * (z2 + z3), abs=1e-14)
    assert out["qpos"][2][2] == pytest.approx(z3, abs=1e-14)
    assert d.time == pytest.approx(0.03, abs=1e-15)
    assert np.all(out["step_size"] == pytest.approx(0.01))


def test_sample_does_not_cap_the_step():
    # 100 samples over 1 s of a sphere coming to rest: sample() takes the
    # steps the controller wants (about as many as one advance_to over the
    # whole second), advance_to per sample must land on each of them.
    m = mujoco.MjModel.from_xml_string(SPHERE.format(ext=""))
    times = np.linspace(0.01, 1.0, 100)
    d1 = mujoco.MjData(m)
    s1 = mjcenic.Stepper(m)
    out = s1.sample(times, d1)
    d2 = mujoco.MjData(m)
    s2 = mjcenic.Stepper(m)
    s2.advance_to(1.0, d2)
    d3 = mujoco.MjData(m)
    s3 = mjcenic.Stepper(m)
    z3 = []
    for t in times:
        s3.advance_to(t, d3)
        z3.append(d3.qpos[2])
    assert s1.stats["steps"] <= s2.stats["steps"] + 2  # the last step may differ
    assert s3.stats["steps"] >= 100  # one landing per sample
    assert s1.stats["h_max"] > 0.02  # steps longer than the sample interval
    # Once the ball rests (t ≥ 0.5 s) every sample lies inside a step longer
    # than two sample intervals.
    assert np.all(out["step_size"][times >= 0.5] > 0.02)
    # The sampled trajectory agrees with the per-sample one to the accuracy
    # scale (both are 1e-3-accurate solutions of the same problem).
    assert np.max(np.abs(out["qpos"][:, 2] - np.array(z3))) < 5e-3  # measured 7e-4
    assert d1.time == pytest.approx(1.0, abs=1e-12)
    assert abs(out["qpos"][-1][2] - 0.1) < 2e-3  # resting on the floor


def test_sample_refuses_bad_times():
    m = mujoco.MjModel.from_xml_string(FALL)
    d = mujoco.MjData(m)
    sim = mjcenic.Stepper(m)
    for bad in ([0.2, 0.1], [float("nan")], [-1.0]):
        with pytest.raises(ValueError, match="times"):
            sim.sample(bad, d)
    assert d.time == 0


def test_embedded_estimate_costs_one_solve_per_attempt():
    m = mujoco.MjModel.from_xml_path(str(ROOT / "models/clutter.xml"))
    d = mjcenic.make_data(m, "drop")
    sim = mjcenic.Stepper(m, error_estimate="embedded")
    sim.advance_to(0.3, d)
    st = sim.stats
    attempts = st["steps"] + st["rejected_steps"]
    # Doubling fallbacks only where no previous step exists (the first attempt
    # after each call's start is not one: advance_to continues the history).
    assert st["solves"] <= attempts + 4
    assert st["geometry_queries"] <= attempts + st["steps"] // 10 + 4
    assert sim.options["error_estimate"] == "embedded"
    assert 0 < st["last_error"] <= 1e-3
    with pytest.raises(ValueError, match="error_estimate"):
        mjcenic.Stepper(m, error_estimate="embedded", mode="trapezoid")
