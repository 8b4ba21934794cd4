// Speculative contacts (option speculative_margin): MuJoCo reports pairs
// within the margin, ICF's contact potential stays inactive until the
// linearized gap φ0 + h v_n closes, so a large step cannot carry a falling
// body deep into the floor before the contact is seen.
#include <cmath>
#include <string>
#include <cstdio>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {


struct DropResult {
  double min_z = 1e9;   // lowest ball centre over the run [m]
  double final_z = 0;
  long steps = 0;
};

DropResult Drop(double margin, double penetration_tolerance = 0) {
  std::string err;
  auto [m, d] = test_util::LoadSceneAtKey("sphere_plane.xml", "drop", &err);
  EXPECT_NE(m, nullptr) << err;
  StepperOptions o;
  o.mode = Mode::kCenic;
  o.accuracy = 1e-2;
  o.initial_step = 2e-3;
  o.speculative_margin = margin;
  o.penetration_tolerance = penetration_tolerance;
  auto s = Stepper::Create(m.get(), o).value();
  DropResult r;
  while (d->time < 0.8 - 1e-12) {
    EXPECT_TRUE(s->StepOnce(d.get()).ok());
    if (d->time > 0.8) break;
    r.min_z = std::min(r.min_z, d->qpos[2]);
  }
  r.final_z = d->qpos[2];
  r.steps = s->stats().steps;
  return r;
}

TEST(Speculative, LargeStepsDoNotSinkIntoTheFloor) {
  // The paper's configuration (no penetration check, cenic-math §11.10).
  const DropResult plain = Drop(0.0);
  const DropResult spec = Drop(0.5);
  const DropResult checked = Drop(0.0, 1.0);  // the default penetration check
  std::printf("[ speculative ] lowest centre: plain %.4f m (%ld steps), margin 0.5 m %.4f m "
              "(%ld steps), penetration check %.4f m (%ld steps); radius 0.1 m\n",
              plain.min_z, plain.steps, spec.min_z, spec.steps, checked.min_z, checked.steps);
  // The rest penetration is 0.37 mm; without speculative contacts a coarse
  // step ends centimetres deep (the known blind spot of step doubling).
  EXPECT_LT(plain.min_z, 0.1 - 1e-2);
  EXPECT_GT(spec.min_z, 0.1 - 2e-3);
  EXPECT_LT(plain.min_z, spec.min_z);
  EXPECT_NEAR(spec.final_z, 0.1, 1e-3);
  // The penetration check rejects the step that ends deep instead.
  EXPECT_GT(checked.min_z, 0.1 - 5e-3);
  EXPECT_NEAR(checked.final_z, 0.1, 1e-3);
}

TEST(Speculative, RestingStateUnchanged) {
  // Speculative pairs carry no force while apart: the resting penetration
  // stays m g / k.
  std::string err;
  auto [m, d] = test_util::LoadSceneAtKey("sphere_plane.xml", "rest", &err);
  ASSERT_NE(m, nullptr) << err;
  StepperOptions o;
  o.mode = Mode::kFixed;
  o.contact.stiffness = 1e5;
  o.speculative_margin = 0.05;
  auto s = Stepper::Create(m.get(), o).value();
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(s->Step(d.get()).ok());
  EXPECT_NEAR(0.1 - d->qpos[2], 9.81 / 1e5, 0.02 * 9.81 / 1e5);
}

}  // namespace
}  // namespace mjcenic
