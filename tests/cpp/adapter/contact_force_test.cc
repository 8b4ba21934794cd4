// Contact forces reported back to MuJoCo after a step: efc_force of the
// contact rows carries the impulses of the step's last convex solve (divided
// by its step), so touch sensors, mj_contactForce, cfrc_ext and the viewer's
// contact-force arrows see ICF's contact forces. Checked on a box resting on
// a flat and on an inclined plane, for pyramidal and elliptic cones.
#include <cmath>
#include <cstdio>
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

constexpr double kMass = 2.0, kG = 9.81;

// A 2 kg box (half size 0.1) on a plane tilted by `tilt` rad about y, with a
// touch sensor whose site box encloses the box's bottom face.
ModelPtr BoxOnPlane(double tilt, const char* cone) {
  const double c = std::cos(tilt / 2), s = std::sin(tilt / 2);
  char xml[2500];
  std::snprintf(xml, sizeof(xml), R"(
<mujoco>
  <option timestep="0.002" cone="%s" gravity="0 0 -%g"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="1" quat="%.17g 0 %.17g 0"/>
    <body name="box" pos="%.17g 0 %.17g" quat="%.17g 0 %.17g 0">
      <freejoint/>
      <geom type="box" size="0.1 0.1 0.1" mass="%g" friction="1"/>
      <site name="pad" type="box" pos="0 0 -0.1" size="0.12 0.12 0.02"/>
    </body>
  </worldbody>
  <sensor>
    <touch name="touch" site="pad"/>
  </sensor>
</mujoco>)",
                cone, kG, c, s, 0.1 * std::sin(tilt), 0.1 * std::cos(tilt), c, s, kMass);
  std::string err;
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  EXPECT_NE(m, nullptr) << err;
  return m;
}

struct Resting {
  double touch = 0;            // touch sensor [N]
  double normal = 0;           // Σ normal force, mj_contactForce [N]
  double tangential[3] = {};   // Σ tangential force in world coordinates [N]
  double cfrc_ext_z = 0;       // world z force of cfrc_ext on the box [N]
  int ncon = 0;
};

Resting Settle(double tilt, const char* cone, Mode mode) {
  ModelPtr m = BoxOnPlane(tilt, cone);
  if (!m) return {};
  DataPtr d(mj_makeData(m.get()));
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.mode = mode;
  auto s = Stepper::Create(m.get(), o).value();
  for (int i = 0; i < 500; ++i) EXPECT_TRUE(s->Step(d.get()).ok());  // 1 s
  Resting r;
  r.touch = d->sensordata[0];
  r.ncon = d->ncon;
  for (int i = 0; i < d->ncon; ++i) {
    double f[6];
    mj_contactForce(m.get(), d.get(), i, f);
    const double* frame = d->contact[i].frame;
    r.normal += f[0];
    for (int j = 0; j < 3; ++j) r.tangential[j] += f[1] * frame[3 + j] + f[2] * frame[6 + j];
  }
  mj_rnePostConstraint(m.get(), d.get());
  r.cfrc_ext_z = d->cfrc_ext[6 * mj_name2id(m.get(), mjOBJ_BODY, "box") + 5];
  return r;
}

TEST(ContactForces, RestingBoxCarriesItsWeight) {
  for (const char* cone : {"pyramidal", "elliptic"})
    for (Mode mode : {Mode::kFixed, Mode::kCenic}) {
      const Resting r = Settle(0.0, cone, mode);
      std::printf("%s, %s: %d contacts, touch %.4f N, normal %.4f N, cfrc_ext z %.4f N "
                  "(m g = %.4f)\n", cone, ToString(mode), r.ncon, r.touch, r.normal,
                  r.cfrc_ext_z, kMass * kG);
      EXPECT_GE(r.ncon, 4);
      EXPECT_NEAR(r.normal, kMass * kG, 0.01 * kMass * kG);
      EXPECT_NEAR(r.touch, kMass * kG, 0.01 * kMass * kG);
      EXPECT_NEAR(r.cfrc_ext_z, kMass * kG, 0.01 * kMass * kG);
      EXPECT_LT(std::hypot(r.tangential[0], r.tangential[1]), 1e-3 * kMass * kG);
    }
}

TEST(ContactForces, StaticFrictionHoldsTheBoxOnAnIncline) {
  // 20° < atan(μ = 1): the box sticks; the contact forces balance gravity:
  // normal m g cos θ, friction m g sin θ up the slope.
  const double tilt = 20 * M_PI / 180;
  for (const char* cone : {"pyramidal", "elliptic"}) {
    const Resting r = Settle(tilt, cone, Mode::kCenic);
    const double ft = std::sqrt(r.tangential[0] * r.tangential[0] +
                                r.tangential[1] * r.tangential[1] +
                                r.tangential[2] * r.tangential[2]);
    std::printf("%s incline: normal %.4f N (m g cos = %.4f), friction %.4f N (m g sin = %.4f)\n",
                cone, r.normal, kMass * kG * std::cos(tilt), ft, kMass * kG * std::sin(tilt));
    EXPECT_NEAR(r.normal, kMass * kG * std::cos(tilt), 0.02 * kMass * kG);
    EXPECT_NEAR(ft, kMass * kG * std::sin(tilt), 0.02 * kMass * kG);
    // Vertical balance: normal and friction together hold m g.
    EXPECT_NEAR(r.cfrc_ext_z, kMass * kG, 0.02 * kMass * kG);
  }
}

}  // namespace
}  // namespace mjcenic
