// Loud, clear failures: step-size underflow, invalid options, version pin.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/options.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::ModelPath;
using test_util::ModelPtr;

TEST(Errors, StepSizeUnderflowNamesTimeAndCoordinate) {
  std::string err;
  auto [m, d] = test_util::LoadSceneAtKey("sphere_plane.xml", "drop", &err);
  ASSERT_NE(m, nullptr) << err;
  StepperOptions o;
  o.mode = Mode::kCenic;
  o.accuracy = 1e-9;   // free fall needs h ≈ 2 sqrt(ε/g) ≈ 2e-5 s ...
  o.min_step = 1e-3;   // ... far below the allowed minimum
  auto s = Stepper::Create(m.get(), o).value();
  const double z0 = d->qpos[2];
  const absl::Status st = s->AdvanceTo(d.get(), 0.1);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted);
  const std::string msg(st.message());
  EXPECT_NE(msg.find("underflow at time 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("worst coordinate: dof 2"), std::string::npos) << msg;  // vertical
  EXPECT_NE(msg.find("'ball'"), std::string::npos) << msg;                   // joint name
  // Nothing was accepted: the state is exactly the start state.
  EXPECT_EQ(d->time, 0.0);
  EXPECT_EQ(d->qpos[2], z0);
}

// Every entry of every input array is checked (CheckInputs' two-lane sum
// then its per-entry search): a NaN or ±inf anywhere is named with its
// index; the largest finite values, subnormals and −0 pass.
TEST(Errors, EveryNonFiniteInputEntryIsNamed) {
  const std::string xml = R"(
<mujoco>
  <worldbody>
    <body mocap="true" pos="0 0 1"><geom size="0.1" contype="0" conaffinity="0"/></body>
    <body><freejoint/><geom size="0.1"/></body>
    <body pos="1 0 0"><joint name="h" type="hinge"/><geom size="0.1"/></body>
  </worldbody>
  <actuator>
    <motor joint="h"/>
    <position joint="h" kp="10" timeconst="0.1"/>
  </actuator>
</mujoco>)";
  std::string err;
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  ASSERT_NE(m, nullptr) << err;
  ASSERT_GT(m->na, 0);
  ASSERT_GT(m->nmocap, 0);
  auto s = Stepper::Create(m.get(), StepperOptions{}).value();
  mjData* d = mj_makeData(m.get());
  struct Field { const char* name; double* x; long n; };
  const Field fields[] = {
      {"qpos", d->qpos, m->nq},         {"qvel", d->qvel, m->nv},
      {"act", d->act, m->na},           {"ctrl", d->ctrl, m->nu},
      {"qfrc_applied", d->qfrc_applied, m->nv},
      {"xfrc_applied", d->xfrc_applied, 6 * m->nbody},
      {"mocap_pos", d->mocap_pos, 3 * m->nmocap},
      {"mocap_quat", d->mocap_quat, 4 * m->nmocap}};
  const double inf = std::numeric_limits<double>::infinity();
  const double bad[] = {std::nan(""), inf, -inf};
  const double fine[] = {std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(),
                         std::numeric_limits<double>::denorm_min(), -0.0};
  // AdvanceTo(d, d->time) only checks the inputs.
  for (const Field& f : fields) {
    for (long i = 0; i < f.n; ++i) {
      const double keep = f.x[i];
      for (double v : bad) {
        f.x[i] = v;
        const absl::Status st = s->AdvanceTo(d, d->time);
        EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << f.name << "[" << i << "]";
        const std::string want = std::string(f.name) + "[" + std::to_string(i) + "] is ";
        EXPECT_NE(std::string(st.message()).find(want), std::string::npos) << st.message();
      }
      for (double v : fine) {
        f.x[i] = v;
        EXPECT_TRUE(s->AdvanceTo(d, d->time).ok()) << f.name << "[" << i << "] = " << v;
      }
      f.x[i] = keep;
    }
  }
  mj_deleteData(d);
}

TEST(Errors, InvalidOptionsAreRejectedWithTheirName) {
  StepperOptions o;
  EXPECT_FALSE(SetOption(&o, "accuracy", "-1").ok());
  EXPECT_FALSE(SetOption(&o, "accuracy", "nan").ok());
  const absl::Status s = SetOption(&o, "mode", "rk4");
  EXPECT_NE(std::string(s.message()).find("'mode'"), std::string::npos);
  const absl::Status u = SetOption(&o, "acuracy", "1e-3");
  EXPECT_NE(std::string(u.message()).find("unknown option 'acuracy'"), std::string::npos);
  EXPECT_TRUE(SetOption(&o, "accuracy", "1e-4").ok());
  EXPECT_EQ(o.accuracy, 1e-4);
  char err[1000] = "";
  ModelPtr m(mj_loadXML(ModelPath("pendulum.xml").c_str(), nullptr, err, sizeof(err)));
  ASSERT_NE(m, nullptr) << err;
  StepperOptions bad;
  bad.accuracy = 0;
  EXPECT_EQ(Stepper::Create(m.get(), bad).status().code(), absl::StatusCode::kInvalidArgument);
  // An option that would silently do nothing in the chosen mode is refused.
  StepperOptions extrapolated_fixed;
  extrapolated_fixed.mode = Mode::kFixed;
  extrapolated_fixed.extrapolate = true;
  const absl::Status e = Stepper::Create(m.get(), extrapolated_fixed).status();
  EXPECT_EQ(e.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(e.message()).find("extrapolate"), std::string::npos) << e;
}

TEST(Errors, LibraryMatchesHeaders) {
  // Create() refuses a libmujoco other than the headers it was built with
  // (CheckMujocoVersion is the check Create runs on mj_version()); in this
  // build they agree (the pin in MUJOCO_VERSION).
  EXPECT_EQ(mj_version(), mjVERSION_HEADER);
  EXPECT_TRUE(CheckMujocoVersion(mj_version(), mj_versionString()).ok());
  for (int other : {mjVERSION_HEADER - 1, mjVERSION_HEADER + 1, 0}) {
    const absl::Status s = CheckMujocoVersion(other, "9.9.9");
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << other;
    EXPECT_NE(std::string(s.message()).find("9.9.9"), std::string::npos) << s;
    EXPECT_NE(std::string(s.message()).find("rebuild"), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace mjcenic
