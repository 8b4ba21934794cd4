// User controllers integrated implicitly (cenic-math §9, paper §V-C, Fig. 12):
// a stiff inverse-dynamics PD controller on the Panda.
#include <cmath>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using test_util::DataPtr;
using test_util::ModelPtr;

constexpr const char* kPanda = "menagerie/franka_emika_panda/scene.xml";

struct TrackResult {
  bool ok = false;
  long steps = 0, rejected = 0, calls = 0;
  double error = 0;  // max |q - q_d| at the end [rad or m]
};

// τ = M(q) (Kp (q_d − q) − Kd v) + c(q, v), written into qfrc_applied.
TrackResult Track(ControllerTreatment treatment, double kp, double accuracy, double duration) {
  char err[1000] = "";
  ModelPtr m(mj_loadXML(test_util::SharedModelPath(kPanda).c_str(), nullptr, err, sizeof(err)));
  EXPECT_NE(m, nullptr) << err;
  m->opt.disableflags |= mjDSBL_ACTUATION;  // the controller replaces the servos
  DataPtr d(mj_makeData(m.get()));
  mj_resetDataKeyframe(m.get(), d.get(), 0);
  const int nv = static_cast<int>(m->nv);
  const std::vector<double> q_d(d->qpos, d->qpos + m->nq);
  for (int i = 0; i < 7; ++i) d->qpos[i] += 0.1;  // start away from the set point
  const double kd = 2 * std::sqrt(kp);
  std::vector<double> a(nv), tau(nv);
  StepperOptions o;
  o.mode = Mode::kCenic;
  o.accuracy = accuracy;
  o.controller = treatment;
  o.min_step = 1e-7;
  auto s = Stepper::Create(m.get(), o).value();
  s->SetController([&](const mjModel* mm, mjData* dd) {
    for (int i = 0; i < nv; ++i) a[i] = kp * (q_d[i] - dd->qpos[i]) - kd * dd->qvel[i];
    mj_mulM(mm, dd, tau.data(), a.data());
    for (int i = 0; i < nv; ++i) dd->qfrc_applied[i] = tau[i] + dd->qfrc_bias[i];
    return true;
  });
  TrackResult r;
  // Zero-order hold evaluates the controller once per Step(): step at opt.timestep.
  r.ok = true;
  if (treatment == ControllerTreatment::kZeroOrderHold) {
    while (r.ok && d->time < duration - 1e-12) r.ok = s->Step(d.get()).ok();
  } else {
    r.ok = s->AdvanceTo(d.get(), duration).ok();
  }
  r.steps = s->stats().steps;
  r.rejected = s->stats().rejected_steps;
  r.calls = s->stats().controller_calls;
  for (int i = 0; i < nv; ++i) r.error = std::max(r.error, std::abs(d->qpos[i] - q_d[i]));
  if (!std::isfinite(r.error)) r.ok = false;
  return r;
}

TEST(Controller, ImplicitTracksStiffInverseDynamicsWhereExplicitNeedsTinySteps) {
  MJCENIC_SHARED_MODEL_OR_SKIP(panda, kPanda);
  const double kp = 1e7;  // ω ≈ 3200 rad/s: far beyond explicit stability at ms steps
  const TrackResult imp = Track(ControllerTreatment::kImplicit, kp, 1e-3, 0.5);
  const TrackResult xpl = Track(ControllerTreatment::kExplicit, kp, 1e-3, 0.5);
  std::printf("[ controller ] Kp %.0e, accuracy 1e-3, 0.5 s: implicit %s, %ld steps (%ld "
              "rejected), %ld controller calls, error %.3g; explicit %s, %ld steps (%ld "
              "rejected), error %.3g\n",
              kp, imp.ok ? "ok" : "FAILED", imp.steps, imp.rejected, imp.calls, imp.error,
              xpl.ok ? "ok" : "FAILED", xpl.steps, xpl.rejected, xpl.error);
  ASSERT_TRUE(imp.ok);
  EXPECT_LT(imp.error, 1e-3);  // the set point is reached and held
  // The explicit treatment fails or needs at least ten times more steps.
  EXPECT_TRUE(!xpl.ok || xpl.steps >= 10 * imp.steps);
}

TEST(Controller, ZeroOrderHoldAndImplicitAgreeForSoftGains) {
  MJCENIC_SHARED_MODEL_OR_SKIP(panda, kPanda);
  // With soft gains all treatments converge to the same motion.
  const TrackResult zoh = Track(ControllerTreatment::kZeroOrderHold, 100, 1e-4, 0.3);
  const TrackResult imp = Track(ControllerTreatment::kImplicit, 100, 1e-4, 0.3);
  ASSERT_TRUE(zoh.ok && imp.ok);
  std::printf("[ controller ] Kp 100: error zoh %.4g, implicit %.4g\n", zoh.error, imp.error);
  EXPECT_NEAR(zoh.error, imp.error, 0.1 * imp.error + 1e-3);
}

}  // namespace
}  // namespace mjcenic
