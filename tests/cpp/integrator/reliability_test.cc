// Every would-be livelock, freeze, silent no-op, stale parameter or unnamed
// failure ends in a clear error or in correct physics (docs/how-it-works.md, "Errors and
// progress").
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/mujoco_adapter.h"
#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

bool Contains(const absl::Status& s, const std::string& what) {
  return std::string(s.message()).find(what) != std::string::npos;
}

// Ball resting on the floor (contact active from the first step).
test_util::Scene Resting() {
  std::string err;
  test_util::Scene s = test_util::LoadSceneAtKey("sphere_plane.xml", "rest", &err);
  EXPECT_NE(s.model, nullptr) << err;
  return s;
}

// Accuracies at or below round-off, and length scales that make the
// translational tolerance unresolvable, are refused at option time.
TEST(Reliability, RoundOffFloorsAreRefusedAtOptionTime) {
  for (const char* a : {"1e-13", "1e-15", "1e-17", "1e-300"}) {
    StepperOptions o;
    const absl::Status s = SetOption(&o, "accuracy", a);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << a;
    EXPECT_TRUE(Contains(s, "'accuracy'") && Contains(s, "1e-12")) << s.message();
  }
  StepperOptions o;
  EXPECT_TRUE(SetOption(&o, "accuracy", "1e-12").ok());
  auto scene = Resting();
  StepperOptions tiny;
  tiny.accuracy = 1e-15;
  const absl::Status c = Stepper::Create(scene.model.get(), tiny).status();
  EXPECT_EQ(c.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(c, "accuracy")) << c.message();
  // length_scale = 1e-300 asks translations to be exact to 1e-303 m: refused.
  for (const char* l : {"1e-300", "1e-7"}) {
    const absl::Status ls = SetOption(&o, "length_scale", l);
    EXPECT_TRUE(Contains(ls, "'length_scale'") && Contains(ls, "1e-6")) << ls.message();
  }
  EXPECT_TRUE(SetOption(&o, "length_scale", "0").ok());
  EXPECT_TRUE(SetOption(&o, "length_scale", "1e-6").ok());
  StepperOptions tiny_l;
  tiny_l.length_scale = 1e-300;
  const absl::Status cl = Stepper::Create(scene.model.get(), tiny_l).status();
  EXPECT_TRUE(Contains(cl, "length_scale")) << cl.message();
}

// a call that needs more than max_steps_per_call steps even at
// max_step is refused before it starts, the state untouched.
TEST(Reliability, CallNeedingTooManyStepsIsRefusedUpFront) {
  auto scene = Resting();
  StepperOptions o;
  o.max_step = 1e-10;  // Step() of 1 ms: 1e7 steps > the 1e6 limit
  auto s = Stepper::Create(scene.model.get(), o).value();
  const double z = scene.data->qpos[2];
  const absl::Status st = s->Step(scene.data.get());
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(st, "max_steps_per_call") && Contains(st, "max_step")) << st.message();
  EXPECT_EQ(scene.data->time, 0.0);
  EXPECT_EQ(scene.data->qpos[2], z);
  EXPECT_EQ(s->stats().steps, 0);
  // <option timestep="1e10">: one Step() would integrate 1e10 s.
  auto scene2 = Resting();
  scene2.model->opt.timestep = 1e10;
  auto s2 = Stepper::Create(scene2.model.get()).value();
  const absl::Status st2 = s2->Step(scene2.data.get());
  EXPECT_EQ(st2.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(st2, "to 1e+10")) << st2.message();
  EXPECT_EQ(scene2.data->time, 0.0);
}

// the per-call step cap itself (steps limited by the accuracy here).
TEST(Reliability, MaxStepsPerCallEndsALongCall) {
  std::string err;
  auto scene = test_util::LoadSceneAtKey("sphere_plane.xml", "drop", &err);
  ASSERT_NE(scene.model, nullptr) << err;
  StepperOptions o;
  o.max_steps_per_call = 20;
  auto s = Stepper::Create(scene.model.get(), o).value();
  const absl::Status st = s->AdvanceTo(scene.data.get(), 0.4);  // free fall: > 20 steps
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(st, "20 accepted steps (max_steps_per_call)")) << st.message();
  EXPECT_EQ(s->stats().steps, 20);
  // The state is the last accepted step: finite, between the start and the target.
  EXPECT_GT(scene.data->time, 0.0);
  EXPECT_LT(scene.data->time, 0.4);
  EXPECT_TRUE(std::isfinite(scene.data->qpos[2]));
}

// max_iterations = 1 never passes the stopping test (the guess is tested,
// then the loop ends after the step; the start velocity passes only where its
// constraints balance the step's forces, cenic-math §8.2 "The guess"): no
// solver-sized crawl, an error naming the failed solve.
TEST(Reliability, OneNewtonIterationEndsInErrorNotACrawl) {
  auto scene = Resting();
  scene.data->qvel[0] = 1.0;  // sliding: friction keeps Newton busy
  StepperOptions o;
  o.solver.max_iterations = 1;
  auto s = Stepper::Create(scene.model.get(), o).value();
  absl::Status st;
  for (int i = 0; i < 1000 && st.ok(); ++i) st = s->Step(scene.data.get());
  ASSERT_FALSE(st.ok()) << "time " << scene.data->time << ", steps " << s->stats().steps;
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(st, "max_iterations 1") || Contains(st, "maximum Newton iterations"))
      << st.message();
  EXPECT_LE(s->stats().steps, 200 * 1000);
}

// At t = 1e17 the timestep is below one ulp: an underflow error, not
// a success that moves nothing.
TEST(Reliability, StepAtHugeTimeUnderflows) {
  auto scene = Resting();
  scene.data->time = 1e17;
  auto s = Stepper::Create(scene.model.get()).value();
  const absl::Status st = s->Step(scene.data.get());
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(Contains(st, "step size underflow at time 1e+17")) << st.message();
  EXPECT_EQ(scene.data->time, 1e17);
  // Where the timestep is representable with margin, steps proceed.
  scene.data->time = 1e6;
  EXPECT_TRUE(s->Step(scene.data.get()).ok());
  EXPECT_GT(scene.data->time, 1e6);
}

// inconsistent step bounds are refused, naming the keys.
TEST(Reliability, InconsistentStepBoundsAreRefused) {
  auto scene = Resting();
  struct Case { double min_step, max_step, initial_step; const char* key; };
  for (const Case& c : {Case{0.5, 0.1, 0, "min_step (0.5 s) exceeds max_step (0.1 s)"},
                        Case{2, 0, 0, "min_step (2 s) exceeds the default max_step (0.1 s)"},
                        Case{0, 0, 10, "initial_step (10 s) exceeds the default max_step"},
                        Case{0, 0.01, 0.02, "initial_step (0.02 s) exceeds max_step (0.01 s)"}}) {
    StepperOptions o;
    o.min_step = c.min_step;
    o.max_step = c.max_step;
    o.initial_step = c.initial_step;
    EXPECT_FALSE(CheckStepBounds(o).ok());
    const absl::Status st = Stepper::Create(scene.model.get(), o).status();
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Contains(st, c.key)) << st.message();
  }
  StepperOptions ok;
  ok.min_step = 1e-6;
  ok.max_step = 0.01;
  ok.initial_step = 0.01;
  EXPECT_TRUE(Stepper::Create(scene.model.get(), ok).ok());
}

// mj_step settings that mjcenic replaces are named in one warning;
// defaults give none.
TEST(Reliability, ReplacedMjcfSettingsAreWarnedOnce) {
  std::string err;
  const char* xml = R"(<mujoco>
    <option integrator="implicitfast" solver="CG" noslip_iterations="3"/>
    <worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0 0 .2"><freejoint/><geom type="sphere" size=".1"/></body>
    </worldbody></mujoco>)";
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  ASSERT_NE(m, nullptr) << err;
  auto s = Stepper::Create(m.get()).value();
  ASSERT_EQ(s->warnings().size(), 1u);
  const std::string& w = s->warnings()[0];
  EXPECT_EQ(w.rfind(adapter::kReplacedSettingsWarning, 0), 0u) << w;
  EXPECT_NE(w.find("integrator=\"implicitfast\""), std::string::npos) << w;
  EXPECT_NE(w.find("solver=\"CG\""), std::string::npos) << w;
  EXPECT_NE(w.find("noslip_iterations=3"), std::string::npos) << w;
  for (const char* rk4 : {"RK4", "implicit"}) {
    ModelPtr m2 = test_util::ModelFromXml(
        std::string("<mujoco><option integrator=\"") + rk4 +
            "\"/><worldbody><body><joint/><geom size=\".1\"/></body></worldbody></mujoco>",
        &err);
    ASSERT_NE(m2, nullptr) << err;
    auto s2 = Stepper::Create(m2.get()).value();
    ASSERT_EQ(s2->warnings().size(), 1u);
    EXPECT_NE(s2->warnings()[0].find(std::string("integrator=\"") + rk4 + "\""),
              std::string::npos);
  }
  auto scene = Resting();  // Euler, Newton, no noslip: nothing to say
  EXPECT_TRUE(Stepper::Create(scene.model.get()).value()->warnings().empty());
}

// overflowing velocities / forces name the dof and the quantity at
// once (no 37 halvings ending in "error 0 ... worst coordinate: none").
TEST(Reliability, OverflowingInputsNameTheDof) {
  for (const char* field : {"qvel", "qfrc_applied"}) {
    auto scene = Resting();
    double* x = std::string(field) == "qvel" ? scene.data->qvel : scene.data->qfrc_applied;
    x[4] = 1e300;  // dof 4: rotation about y of the ball's free joint
    for (Mode mode : {Mode::kCenic, Mode::kFixed}) {
      StepperOptions o;
      o.mode = mode;
      auto s = Stepper::Create(scene.model.get(), o).value();
      const absl::Status st = s->Step(scene.data.get());
      EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << field << ": " << st.message();
      EXPECT_TRUE(Contains(st, "dof 4 (joint 'ball')")) << st.message();
      EXPECT_TRUE(Contains(st, std::string(field) + " = 1e+300")) << st.message();
      EXPECT_EQ(s->stats().rejected_steps, 0) << st.message();
      EXPECT_EQ(scene.data->time, 0.0);
      EXPECT_EQ(x[4], 1e300);
    }
  }
}

// A pendulum released at 1 rad (a slow, light model: the warm start's
// residual |D h f| is small).
ModelPtr Pendulum(double damping = 0) {
  std::string err;
  ModelPtr m = test_util::ModelFromXml(
      "<mujoco><worldbody><body><joint name='j' type='hinge' axis='0 1 0' damping='" +
          std::to_string(damping) +
          "'/><geom type='capsule' fromto='0 0 0 0 0 -1' size='.05' mass='1'/></body>"
          "</worldbody><actuator><motor joint='j' gear='1'/></actuator></mujoco>",
      &err);
  EXPECT_NE(m, nullptr) << err;
  return m;
}

// Tolerances that let Newton stop at the warm start with 0 iterations
// (accuracy 1000, kappa 100, solver_tolerance 1) froze the physics; they are
// refused naming the key, and at the largest accepted values the pendulum
// swings.
TEST(Reliability, TolerancesThatFreezeThePhysicsAreRefusedNamingTheKey) {
  StepperOptions o;
  for (auto [key, value] : std::vector<std::pair<const char*, const char*>>{
           {"accuracy", "1000"}, {"accuracy", "10"}, {"accuracy", "1.5"}, {"kappa", "100"},
           {"kappa", "2"}, {"solver_tolerance", "1"}, {"solver_tolerance", "0.01"}}) {
    const absl::Status st = SetOption(&o, key, value);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << key << "=" << value;
    EXPECT_TRUE(Contains(st, std::string("'") + key + "'")) << st.message();
  }
  ModelPtr m = Pendulum();
  StepperOptions both;
  both.kappa = 1;
  both.accuracy = 0.5;
  const absl::Status c = Stepper::Create(m.get(), both).status();
  EXPECT_EQ(c.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(c, "kappa") && Contains(c, "accuracy")) << c.message();
  StepperOptions loosest_cenic, loosest_kappa, loosest_fixed, loosest_no_dense;
  loosest_cenic.accuracy = 1;
  loosest_kappa.kappa = 1;
  loosest_fixed.mode = Mode::kFixed;
  loosest_fixed.solver.tolerance = kMaxNewtonTolerance;
  loosest_no_dense.accuracy = 1;
  loosest_no_dense.dense_output = false;
  for (const StepperOptions& opt : {loosest_cenic, loosest_kappa, loosest_fixed, loosest_no_dense}) {
    DataPtr d(mj_makeData(m.get()));
    d->qpos[0] = 1.0;
    mj_forward(m.get(), d.get());
    auto s = Stepper::Create(m.get(), opt).value();
    for (int i = 0; i < 250; ++i) ASSERT_TRUE(s->Step(d.get()).ok());
    // Released at 1 rad, the pendulum (period ≈ 1.7 s) has swung through the
    // bottom after 0.5 s.
    EXPECT_LT(d->qpos[0], 0.5) << "accuracy " << opt.accuracy << " kappa " << opt.kappa;
    EXPECT_GT(s->stats().newton_iterations, 0);
  }
}

// Floors that each hold alone but not together: accuracy 1e-12 with
// length_scale 1e-6 m is refused naming both; with error_per_unit_step a
// step whose own tolerance accuracy·h/T is below round-off ends in an error
// instead of a crawl.
TEST(Reliability, FloorsAreCheckedTogether) {
  auto scene = Resting();
  StepperOptions o;
  o.accuracy = 1e-12;
  o.length_scale = 1e-6;
  const absl::Status c = Stepper::Create(scene.model.get(), o).status();
  EXPECT_EQ(c.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(c, "accuracy") && Contains(c, "length_scale")) << c.message();
  ModelPtr m = Pendulum();
  DataPtr d(mj_makeData(m.get()));
  d->qpos[0] = 1.0;
  StepperOptions t;
  t.accuracy = 1e-8;
  t.error_per_unit_step = 0.1;
  auto s = Stepper::Create(m.get(), t).value();
  absl::Status st;
  for (int i = 0; i < 50 && st.ok(); ++i) st = s->Step(d.get());
  ASSERT_FALSE(st.ok()) << "time " << d->time << ", steps " << s->stats().steps;
  EXPECT_TRUE(Contains(st, "minimum")) << st.message();
  EXPECT_LE(s->stats().steps, 100000);
}

// With dense output a call may end inside the stepper's last step; an edit
// of a model array before the next call (here dof_damping, raised so much
// that the pendulum stops within a step) takes effect in that call instead
// of after the pending step.
TEST(Reliability, ModelEditsBetweenCallsTakeEffectWithDenseOutput) {
  for (const std::string what : {"dof_damping", "actuator_gainprm"}) {
    ModelPtr m = Pendulum();
    DataPtr d(mj_makeData(m.get()));
    d->qpos[0] = 1.0;
    d->ctrl[0] = 1;  // held: only the model changes between the calls
    StepperOptions o;
    o.accuracy = 1e-2;
    auto s = Stepper::Create(m.get(), o).value();
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(s->Step(d.get()).ok());
    const double v_before = d->qvel[0];
    ASSERT_GT(std::abs(v_before), 0.5);
    ASSERT_GT(s->stats().last_h, 2 * m->opt.timestep);  // the calls end inside a step
    if (what == "dof_damping")
      m->dof_damping[0] = 1e6;  // stops the pendulum within a timestep (implicit damping)
    else
      m->actuator_gainprm[0] = v_before > 0 ? -1e5 : 1e5;  // reverses it within a timestep
    ASSERT_TRUE(s->Step(d.get()).ok());
    if (what == "dof_damping")
      EXPECT_LT(std::abs(d->qvel[0]), 1e-2 * std::abs(v_before)) << what;
    else
      EXPECT_LT(d->qvel[0] * v_before, 0) << what << ": " << d->qvel[0] << " vs " << v_before;
  }
}

// Step(d, nstep) compares the model for edits once per call: its steps are
// those of nstep calls of Step(d), bit for bit, and an edit made before the
// call takes effect in its first step.
TEST(Reliability, StepWithNstepEqualsSingleStepsAndSeesAnEditBeforeTheCall) {
  for (Mode mode : {Mode::kCenic, Mode::kFixed}) {
    ModelPtr ma = Pendulum(), mb = Pendulum();
    DataPtr da(mj_makeData(ma.get())), db(mj_makeData(mb.get()));
    da->qpos[0] = db->qpos[0] = 1.0;
    StepperOptions o;
    o.mode = mode;
    o.accuracy = 1e-2;
    auto sa = Stepper::Create(ma.get(), o).value();
    auto sb = Stepper::Create(mb.get(), o).value();
    auto same = [&] {
      return da->time == db->time && da->qpos[0] == db->qpos[0] && da->qvel[0] == db->qvel[0];
    };
    da->ctrl[0] = db->ctrl[0] = 0.5;
    ASSERT_TRUE(sa->Step(da.get(), 50).ok());
    for (int i = 0; i < 50; ++i) ASSERT_TRUE(sb->Step(db.get()).ok());
    ASSERT_TRUE(same()) << static_cast<int>(mode) << ": " << da->qvel[0] << " vs " << db->qvel[0];
    const double v_before = da->qvel[0];
    ASSERT_GT(std::abs(v_before), 0.5);
    ma->dof_damping[0] = mb->dof_damping[0] = 1e6;  // stops the pendulum within a timestep
    ASSERT_TRUE(sa->Step(da.get(), 5).ok());
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(sb->Step(db.get()).ok());
    EXPECT_TRUE(same()) << static_cast<int>(mode) << ": " << da->qvel[0] << " vs " << db->qvel[0];
    EXPECT_LT(std::abs(da->qvel[0]), 1e-2 * std::abs(v_before)) << static_cast<int>(mode);
    EXPECT_TRUE(sa->Step(da.get(), 0).ok());  // nstep <= 0: nothing
    EXPECT_EQ(da->time, db->time);
  }
}

// A user controller runs between the steps of one Step(d, nstep) call and may
// edit the model: the edit takes effect at the next step, as with single
// steps (the model is then compared before every step).
TEST(Reliability, AModelEditByTheControllerInsideStepWithNstepTakesEffectAtTheNextStep) {
  ModelPtr ma = Pendulum(), mb = Pendulum();
  DataPtr da(mj_makeData(ma.get())), db(mj_makeData(mb.get()));
  da->qpos[0] = db->qpos[0] = 1.0;
  StepperOptions o;
  o.mode = Mode::kFixed;
  auto sa = Stepper::Create(ma.get(), o).value();
  auto sb = Stepper::Create(mb.get(), o).value();
  // At t = 0.1 s the controller raises the damping so far that the pendulum
  // stops within a step (implicit damping).
  auto brake = [](const mjModel* m, mjData* d) {
    if (d->time >= 0.1) const_cast<mjModel*>(m)->dof_damping[0] = 1e6;
    return true;
  };
  sa->SetController(brake);
  sb->SetController(brake);
  const int n = static_cast<int>(std::round(0.2 / ma->opt.timestep));
  ASSERT_TRUE(sa->Step(da.get(), n).ok());
  for (int i = 0; i < n; ++i) ASSERT_TRUE(sb->Step(db.get()).ok());
  EXPECT_EQ(da->qpos[0], db->qpos[0]);
  EXPECT_EQ(da->qvel[0], db->qvel[0]);
  EXPECT_LT(std::abs(da->qvel[0]), 1e-3) << da->qvel[0];
}

}  // namespace
}  // namespace mjcenic
