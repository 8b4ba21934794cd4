// Dense output (cenic-math §11.5): a Step() loop with held inputs reads the
// state inside accepted steps instead of capping the step; any change to the
// data between calls restarts the integration from the data, and that call
// lands on its target.
#include <cmath>
#include <cstdio>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

struct LoopRun {
  long steps = 0;
  double time = 0;
  double qpos = 0;
};

// 200 Step() calls of the servo arm (timestep 1 ms) tracking a set point;
// change_ctrl: a new set point before every call (held otherwise).
LoopRun Loop(const mjModel* m, bool dense, bool change_ctrl) {
  DataPtr d(mj_makeData(m));
  StepperOptions o;
  o.accuracy = 1e-3;
  o.dense_output = dense;
  auto s = Stepper::Create(m, o).value();
  for (int i = 0; i < 200; ++i) {
    d->ctrl[0] = change_ctrl ? 0.5 + 1e-3 * i : 0.5;
    EXPECT_TRUE(s->Step(d.get()).ok());
  }
  return {s->stats().steps, d->time, d->qpos[0]};
}

TEST(DenseOutput, HeldInputsDoNotCapTheStepAndChangedInputsRestart) {
  char err[1000] = "";
  ModelPtr m(mj_loadXML(test_util::ModelPath("servo_arm.xml").c_str(), nullptr, err, sizeof(err)));
  ASSERT_TRUE(m) << err;
  const LoopRun held = Loop(m.get(), true, false);
  const LoopRun capped = Loop(m.get(), false, false);
  const LoopRun changed = Loop(m.get(), true, true);
  std::printf("200 calls: dense %ld steps, capped %ld, dense with ctrl changed every call %ld\n",
              held.steps, capped.steps, changed.steps);
  for (const LoopRun* r : {&held, &capped, &changed}) EXPECT_NEAR(r->time, 0.2, 1e-12);
  EXPECT_GE(capped.steps, 200);          // every call lands on its target
  EXPECT_LT(held.steps, capped.steps / 2);  // the controller's own steps
  EXPECT_GE(changed.steps, 200);         // each change restarts and lands
  // Both discretize the same motion: they agree to the global error of
  // accuracy 1e-3 (first order; the arm swings by ~0.5 rad).
  EXPECT_NEAR(held.qpos, capped.qpos, 0.05);
}

TEST(DenseOutput, AHeldLoopQueriesEachStateOnce) {
  // cenic-math §11.5, §11.10: a call's output inside a kept step has its own
  // geometry query (the post-step contract's), and the kept step's end is
  // queried, and checked, once, when a call continues from it. So a held
  // Step() loop makes at most one query per call, plus one per attempt's
  // midpoint and one per attempt's end (and the first call's start). The
  // pinch grasp holds its box over 250 calls in a few long steps.
  ModelPtr m = test_util::LoadScene("pinch_grasp.xml");
  ASSERT_TRUE(m);
  DataPtr d = test_util::MakeData(m.get(), "grip");
  auto s = Stepper::Create(m.get(), StepperOptions{}).value();
  const int calls = 250;
  for (int i = 0; i < calls; ++i) ASSERT_TRUE(s->Step(d.get()).ok());
  const StepperStats& st = s->stats();
  const long bound = calls + 2 * (st.steps + st.rejected_steps) + 1;
  std::printf("  %d calls, %ld + %ld steps: %ld geometry queries (bound %ld)\n", calls, st.steps,
              st.rejected_steps, st.geometry_queries, bound);
  EXPECT_LT(st.steps, calls / 4);  // the steps are the integrator's own
  EXPECT_LE(st.geometry_queries, bound);
}

}  // namespace
}  // namespace mjcenic
