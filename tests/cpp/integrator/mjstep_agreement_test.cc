// Features mjcenic takes from MuJoCo's own computation (docs/how-it-works.md,
// "Supported MJCF features"), checked on small scenes where mjcenic and mj_step must
// agree: both integrate the same ODE with a first-order method, so after T
// each differs from the exact solution by C·h + o(h). The tolerance is derived
// from the methods, not from the results:
//   err_X(h) ≈ 2 |x_X(h) − x_X(h/2)|      (Richardson, first order)
//   tol = 2 (err_mj + err_cenic) + v_soft,
// where v_soft is the largest constraint violation mj_step's soft constraints
// showed (max |efc_pos| of equality rows; mjcenic's are near-rigid).
// Each case also checks that the feature moves the state by more than 3·tol,
// so that ignoring it fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

struct Run {
  std::vector<double> qpos;
  double soft = 0;  // max |efc_pos| over equality rows seen by mj_step
};

using Prepare = std::function<void(const mjModel*, mjData*)>;

// qpos after T from qpos0 (+prepare) with timestep h; `control` is called
// before every step with the time (mocap motion).
Run Simulate(const mjModel* m0, bool cenic, double h, double T, const Prepare& prepare,
             const Prepare& control) {
  ModelPtr m(mj_copyModel(nullptr, m0));
  m->opt.timestep = h;
  DataPtr d(mj_makeData(m.get()));
  if (prepare) prepare(m.get(), d.get());
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.mode = Mode::kFixed;
  o.max_step = 0;
  std::unique_ptr<Stepper> s;
  if (cenic) {
    auto c = Stepper::Create(m.get(), o);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return {};
    s = std::move(c).value();
  }
  Run r;
  const int n = static_cast<int>(std::lround(T / h));
  for (int i = 0; i < n; ++i) {
    if (control) control(m.get(), d.get());
    if (s) {
      const absl::Status st = s->Step(d.get());
      EXPECT_TRUE(st.ok()) << st;
      if (!st.ok()) break;
    } else {
      mj_step(m.get(), d.get());
      for (int e = 0; e < d->nefc; ++e)
        if (d->efc_type[e] == mjCNSTR_EQUALITY) r.soft = std::max(r.soft, std::abs(d->efc_pos[e]));
    }
  }
  r.qpos.assign(d->qpos, d->qpos + m->nq);
  return r;
}

double MaxDiff(const std::vector<double>& a, const std::vector<double>& b) {
  double x = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) x = std::max(x, std::abs(a[i] - b[i]));
  return x;
}

// The agreement check for `with` (feature on); `without` is the same scene
// with the feature off.
void ExpectAgreement(const char* name, const std::string& with, const std::string& without,
                     double T, const Prepare& prepare = {}, const Prepare& control = {}) {
  std::string err;
  ModelPtr m = test_util::ModelFromXml(with, &err);
  ASSERT_NE(m, nullptr) << err;
  ModelPtr m_off = test_util::ModelFromXml(without, &err);
  ASSERT_NE(m_off, nullptr) << err;
  const double h = m->opt.timestep;
  const Run mj = Simulate(m.get(), false, h, T, prepare, control);
  const Run mj2 = Simulate(m.get(), false, h / 2, T, prepare, control);
  const Run ce = Simulate(m.get(), true, h, T, prepare, control);
  const Run ce2 = Simulate(m.get(), true, h / 2, T, prepare, control);
  const Run off = Simulate(m_off.get(), false, h, T, prepare, control);
  const double err_mj = 2 * MaxDiff(mj.qpos, mj2.qpos);
  const double err_ce = 2 * MaxDiff(ce.qpos, ce2.qpos);
  const double tol = 2 * (err_mj + err_ce) + mj.soft;
  const double diff = MaxDiff(ce.qpos, mj.qpos), effect = MaxDiff(mj.qpos, off.qpos);
  std::printf("  %s: |mjcenic - mj_step| %.3g, tol %.3g (err mj %.3g, mjcenic %.3g, soft %.3g);"
              " feature effect %.3g\n",
              name, diff, tol, err_mj, err_ce, mj.soft, effect);
  EXPECT_LE(diff, tol) << name;
  EXPECT_GT(effect, 3 * tol) << name << ": the scene does not exercise the feature";
}

std::string Replace(std::string s, const std::string& a, const std::string& b) {
  const size_t p = s.find(a);
  EXPECT_NE(p, std::string::npos) << a;
  if (p != std::string::npos) s.replace(p, a.size(), b);
  return s;
}

TEST(MjstepAgreement, GravityCompensation) {
  // A free box with gravcomp 0.7 and a tumbling start: it falls at 0.3 g.
  const std::string xml = R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body pos="0 0 1" gravcomp="0.7">
      <freejoint/>
      <geom type="box" size="0.1 0.05 0.02" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>)";
  ExpectAgreement("gravcomp", xml, Replace(xml, R"(gravcomp="0.7")", ""), 0.5,
                  [](const mjModel*, mjData* d) {
                    d->qvel[3] = 1;
                    d->qvel[5] = 2;
                  });
}

TEST(MjstepAgreement, FluidForces) {
  // A light box thrown through a dense viscous medium (MuJoCo's inertia-box model).
  const std::string xml = R"(
<mujoco>
  <option timestep="0.002" density="1000" viscosity="0.5"/>
  <worldbody>
    <body pos="0 0 1">
      <freejoint/>
      <geom type="box" size="0.1 0.05 0.02" mass="1" contype="0" conaffinity="0"/>
    </body>
  </worldbody>
</mujoco>)";
  ExpectAgreement("fluid", xml, Replace(xml, R"(density="1000" viscosity="0.5")", ""), 0.5,
                  [](const mjModel*, mjData* d) {
                    d->qvel[0] = 2;
                    d->qvel[4] = 3;
                  });
}

TEST(MjstepAgreement, TendonSpringAndDamper) {
  // A fixed tendon (x1 − x2) with stiffness and damping couples two sliders.
  const std::string xml = R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <body><joint name="a" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
    <body pos="0 1 0"><joint name="b" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="2" contype="0" conaffinity="0"/></body>
  </worldbody>
  <tendon>
    <fixed stiffness="50" damping="2"><joint joint="a" coef="1"/><joint joint="b" coef="-1"/></fixed>
  </tendon>
</mujoco>)";
  ExpectAgreement("tendon", xml, Replace(xml, R"(stiffness="50" damping="2")", ""), 0.5,
                  [](const mjModel*, mjData* d) { d->qpos[0] = 0.1; });
}

TEST(MjstepAgreement, JointEquality) {
  // Hinge b follows hinge a (polycoef 0 1) while a swings under gravity.
  const std::string xml = R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body><joint name="a" axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/></body>
    <body pos="0 1 0"><joint name="b" axis="1 0 0"/>
      <geom type="sphere" pos="0 0 0" size="0.05" mass="0.1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <equality><joint joint1="b" joint2="a" polycoef="0 1 0 0 0" solref="0.01 1"/></equality>
</mujoco>)";
  ExpectAgreement("joint equality", xml,
                  Replace(xml, R"(solref="0.01 1")", R"(solref="0.01 1" active="false")"), 0.5);
}

TEST(MjstepAgreement, Connect) {
  // A second link hangs from the first by a connect (a double pendulum).
  const std::string xml = R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body name="l1"><joint axis="0 1 0"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/></body>
    <body name="l2" pos="0.3 0 0"><joint axis="0 1 0"/><joint type="slide" axis="1 0 0"/>
      <joint type="slide" axis="0 0 1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <equality><connect body1="l2" body2="l1" anchor="0 0 0" solref="0.01 1"/></equality>
</mujoco>)";
  ExpectAgreement("connect", xml,
                  Replace(xml, R"(solref="0.01 1")", R"(solref="0.01 1" active="false")"), 0.5);
}

TEST(MjstepAgreement, WeldToMocap) {
  // A free body welded to a mocap body that moves on a circle.
  const std::string xml = R"(
<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <body name="target" mocap="true" pos="0 0 1"/>
    <body name="b" pos="0 0 1"><freejoint/>
      <geom type="box" size="0.05 0.05 0.05" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <equality><weld body1="b" body2="target" solref="0.02 1"/></equality>
</mujoco>)";
  ExpectAgreement("weld to mocap", xml,
                  Replace(xml, R"(solref="0.02 1")", R"(solref="0.02 1" active="false")"), 0.5, {},
                  [](const mjModel*, mjData* d) {
                    d->mocap_pos[0] = 0.2 * std::sin(4 * d->time);
                    d->mocap_pos[2] = 1 + 0.2 * (1 - std::cos(4 * d->time));
                  });
}

TEST(MjstepAgreement, TendonEquality) {
  // Tendon t2 = x2 follows tendon t1 = x1 (polycoef 0 1) while a spring pulls x1.
  const std::string xml = R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <body><joint name="a" type="slide" axis="1 0 0" stiffness="20"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
    <body pos="0 1 0"><joint name="b" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="0.5" contype="0" conaffinity="0"/></body>
  </worldbody>
  <tendon>
    <fixed name="t1"><joint joint="a" coef="1"/></fixed>
    <fixed name="t2"><joint joint="b" coef="1"/></fixed>
  </tendon>
  <equality><tendon tendon1="t2" tendon2="t1" polycoef="0 1 0 0 0" solref="0.01 1"/></equality>
</mujoco>)";
  ExpectAgreement("tendon equality", xml,
                  Replace(xml, R"(solref="0.01 1")", R"(solref="0.01 1" active="false")"), 0.5,
                  [](const mjModel*, mjData* d) {
                    d->qpos[0] = d->qpos[1] = 0.1;  // consistent start
                  });
}

// A 1 kg slider (hinge-free, gravity off) driven by one actuator of each
// kind MuJoCo has a shortcut for; the same scene without the actuator is the
// reference for "the actuator acts".
std::string Slider(const std::string& actuator) {
  return R"(
<mujoco>
  <option timestep="0.002" gravity="0 0 0"/>
  <worldbody>
    <body><joint name="x" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.05" mass="1" contype="0" conaffinity="0"/></body>
  </worldbody>
  <actuator>)" + actuator + R"(</actuator>
</mujoco>)";
}

void ActuatorCase(const char* name, const std::string& actuator, double ctrl) {
  ExpectAgreement(name, Slider(actuator), Slider(""), 0.5, [ctrl](const mjModel* m, mjData* d) {
    d->qvel[0] = 0.4;
    if (m->nu) d->ctrl[0] = ctrl;
  });
}

TEST(MjstepAgreement, IntvelocityActuator) {
  ActuatorCase("intvelocity", R"(<intvelocity joint="x" kp="50" actrange="-1 1"/>)", -0.3);
}

TEST(MjstepAgreement, DamperActuator) {
  ActuatorCase("damper", R"(<damper joint="x" kv="3" ctrlrange="0 1"/>)", 0.8);
}

TEST(MjstepAgreement, CylinderActuator) {
  ActuatorCase("cylinder", R"(<cylinder joint="x" timeconst="0.05" area="0.01" bias="0 0 0"/>)",
               200);
}

TEST(MjstepAgreement, MuscleActuatorExplicit) {
  // Muscles are taken explicitly (a warning says so): still first order.
  ActuatorCase("muscle", R"(<muscle joint="x" lengthrange="-1 1" force="5"/>)", 0.7);
}

}  // namespace
}  // namespace mjcenic
