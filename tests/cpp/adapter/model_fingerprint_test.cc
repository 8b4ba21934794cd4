// The model arrays a stepper watches for edits between calls
// (adapter/model_fingerprint.h, docs/limitations.md).
#include <string>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/adapter/model_fingerprint.h"
#include "test_util.h"

namespace mjcenic::adapter {
namespace {

constexpr const char* kXml = R"(
<mujoco>
  <worldbody>
    <geom type="plane" size="1 1 .1" rgba="1 0 0 1"/>
    <body pos="0 0 .2">
      <joint name="j" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -.5" size=".05" mass="1" user="1 2"/>
      <site name="s" pos="0 0 -.5"/>
    </body>
  </worldbody>
  <actuator><motor joint="j" gear="2"/></actuator>
  <sensor><jointpos joint="j"/></sensor>
</mujoco>)";

TEST(ModelFingerprint, ReportsEveryEditOfAWatchedArrayOnceAndIgnoresDisplayArrays) {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(kXml, &err);
  ASSERT_NE(m, nullptr) << err;
  ModelFingerprint watch(m.get());
  EXPECT_FALSE(watch.Changed());
  // The copy: the watched arrays (and the padding between them), not the
  // whole model.
  EXPECT_GE(watch.bytes(), sizeof(mjtNum) * (3 * m->ngeom + m->nbody + 10 * m->nu));
  EXPECT_LT(watch.bytes(), static_cast<std::size_t>(m->nbuffer));
  // One edit in each kind of array the problem reads: reported at the next
  // check, once.
  double* edits[] = {&m->geom_friction[3], &m->body_mass[1], &m->dof_damping[0],
                     &m->actuator_gainprm[0], &m->actuator_gear[0], &m->jnt_stiffness[0],
                     &m->geom_size[4], &m->site_pos[2], &m->qpos_spring[0]};
  for (double* x : edits) {
    *x += 0.5;
    EXPECT_TRUE(watch.Changed()) << x - m->geom_friction;
    EXPECT_FALSE(watch.Changed());
  }
  m->geom_condim[1] = 1;
  EXPECT_TRUE(watch.Changed());
  // Colours, user data and sensor parameters are not watched (edited for
  // display; the sensors are recomputed at every call).
  m->geom_rgba[0] = 0.5f;
  m->geom_user[0] = 7;
  m->sensor_noise[0] = 0.1;
  m->geom_group[1] = 3;
  EXPECT_FALSE(watch.Changed());
}

TEST(ModelFingerprint, WatchesTheFluidCoefficientsWhileTheFluidModelIsOn) {
  std::string err;
  test_util::ModelPtr m = test_util::ModelFromXml(kXml, &err);
  ASSERT_NE(m, nullptr) << err;
  ModelFingerprint watch(m.get());
  m->geom_fluid[12] = 1;  // the capsule's ellipsoid-model switch
  EXPECT_FALSE(watch.Changed());
  // Turning the fluid on makes the coefficients count, the earlier edit too.
  m->opt.density = 1.2;
  EXPECT_TRUE(watch.Changed());
  EXPECT_FALSE(watch.Changed());
  m->geom_fluid[13] = 0.5;
  EXPECT_TRUE(watch.Changed());
}

}  // namespace
}  // namespace mjcenic::adapter
