// The per-island stopping test of the Newton solver (cenic-math.md §8.2),
// checked on the iterates themselves. With several islands each island i
// stops at the first iteration k where its scaled gradient |D ∇ℓ|_i is below
// tol_i = ε max(1, |D r|_i), or where η s_k < tol_i: s_k = |D⁻¹ Δv_k|_i its
// last scaled step and η = θ/(1 − θ), θ = s_k / s_{k−1} (θ clamped below 1;
// η = 1 before θ is known) — the bound on the distance left to the minimizer
// when the steps shrink geometrically by θ. The iterates v_k of a solve are
// recovered by solving again from the same guess with max_iterations = k
// (a fresh solver each time: the same policy, so the same iterates), and the
// rule is checked at the iteration where each island stopped.
//
// The problems: boxes landing at 5 m/s on a floor (one island each) and the
// clutter scene's islands, each solved at 21 tolerances from 1e-3 to 1e-8.
// (η = θ/(1 + θ) in place of θ/(1 − θ) stops clutter islands with η s up to
// 1.6 tol_i.)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/stepper.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using icf::IcfModel;
using icf::IcfSolver;
using icf::SolverOptions;
using icf::SolveStats;
using icf::SolveStatus;

// Boxes of 0.2 m on free joints, 1 mm into the floor, falling at 5 m/s; the
// fixed-mode problem of their first step (dt = 5 ms).
IcfModel LandingBoxes(int n) {
  std::string bodies;
  for (int i = 0; i < n; ++i) {
    char b[200];
    std::snprintf(b, sizeof(b),
                  "<body pos='%d 0 0.099'><freejoint/><geom type='box' size='0.1 0.1 0.1'/>"
                  "</body>", i);
    bodies += b;
  }
  const std::string xml =
      "<mujoco><option timestep='0.005'/><worldbody><geom type='plane' size='9 9 .1'/>" + bodies +
      "</worldbody></mujoco>";
  std::string err;
  test_util::ModelPtr model = test_util::ModelFromXml(xml, &err);
  EXPECT_NE(model, nullptr) << err;
  if (model == nullptr) return IcfModel{};
  test_util::DataPtr data(mj_makeData(model.get()));
  for (int i = 0; i < n; ++i) data->qvel[6 * i + 2] = -5.0 - 0.3 * i;  // distinct speeds
  mj_forward(model.get(), data.get());
  StepperOptions so;
  so.mode = Mode::kFixed;
  auto stepper = test_util::MakeStepper(model.get(), so);
  EXPECT_TRUE(stepper->Step(data.get()).ok());
  return stepper->last_problem();
}

// The clutter scene's problem after default (error-controlled) steps to t.
IcfModel ClutterAt(double t) {
  std::string err;
  test_util::Scene s = test_util::LoadSceneAtKey("clutter.xml", "drop", &err);
  EXPECT_NE(s.model, nullptr) << err;
  StepperOptions o;
  o.dense_output = false;
  auto stepper = test_util::MakeStepper(s.model.get(), o);
  while (s.data->time < t - 1e-9) EXPECT_TRUE(stepper->Step(s.data.get()).ok());
  return stepper->last_problem();
}

struct RuleCheck {
  int islands_checked = 0;   // islands that stopped by the step test
  int violations = 0;
  double worst = 0;          // max over those islands of η s / tol_i
};

// Solves m from v0 at tolerance eps (no contact sweeps: the guess is v0),
// replays the iterates and checks each island's stopping rule.
void CheckSolve(const IcfModel& m, double eps, RuleCheck* out) {
  SolverOptions o;
  o.tolerance = eps;
  o.min_tolerance = std::min(eps, o.min_tolerance);
  o.contact_sweeps = false;
  const int nv = m.nv;
  std::vector<double> v(nv);
  SolveStats st;
  {
    IcfSolver s;
    ASSERT_EQ(s.Solve(m, m.v0.data(), o, v.data(), &st), SolveStatus::kConverged);
  }
  const int K = st.iterations;
  std::vector<std::vector<double>> iterates(K + 1, std::vector<double>(nv));
  for (int k = 0; k <= K; ++k) {
    IcfSolver s;
    SolverOptions capped = o;
    capped.max_iterations = k;
    SolveStats sk;
    s.Solve(m, m.v0.data(), capped, iterates[k].data(), &sk);
  }
  for (int i = 0; i < nv; ++i) ASSERT_EQ(iterates[K][i], v[i]) << "replay differs at dof " << i;

  const int ni = std::max(m.num_islands, 1);
  ASSERT_GT(ni, 1);
  auto island = [&](int dof) { return m.island_of_clique[m.clique_of_dof[dof]]; };
  // Per island: tolerance, scaled gradient at the returned v, steps s_k.
  std::vector<double> tol(ni, 0.0), Dg2(ni, 0.0);
  std::vector<std::vector<double>> step(ni, std::vector<double>(K + 1, 0.0));
  IcfSolver eval;
  eval.Evaluate(m, v.data());
  for (int i = 0; i < nv; ++i) {
    const double D = 1 / std::sqrt(m.M_diag[i]), g = D * eval.data().grad[i];
    tol[island(i)] += (D * m.r[i]) * (D * m.r[i]);
    Dg2[island(i)] += g * g;
    for (int k = 1; k <= K; ++k) {
      const double x = (iterates[k][i] - iterates[k - 1][i]) / D;
      step[island(i)][k] += x * x;
    }
  }
  for (int j = 0; j < ni; ++j) {
    tol[j] = eps * std::max(1.0, std::sqrt(tol[j]));
    if (std::sqrt(Dg2[j]) < tol[j] * (1 + 1e-6)) continue;  // stopped by the gradient test
    int last = 0;  // the update after which the island stopped
    for (int k = 1; k <= K; ++k) {
      step[j][k] = std::sqrt(step[j][k]);
      if (step[j][k] > 0) last = k;
    }
    ASSERT_GE(last, 1) << "island " << j << " stopped at its guess with |D g| above tol";
    double eta = 1.0;
    if (last >= 2) {
      ASSERT_GT(step[j][last - 1], 0);
      const double theta = std::clamp(step[j][last] / step[j][last - 1], 0.0, 0.9999);
      eta = theta / (1 - theta);
    }
    const double ratio = eta * step[j][last] / tol[j];
    ++out->islands_checked;
    out->worst = std::max(out->worst, ratio);
    if (ratio >= 1 + 1e-6) {
      ++out->violations;
      ADD_FAILURE() << "island " << j << " stopped after update " << last << " with η s = "
                    << eta * step[j][last] << " ≥ tol_i = " << tol[j] << " and |D g|_i = "
                    << std::sqrt(Dg2[j]) << " (ε = " << eps << ")";
    }
  }
}

void CheckTolerances(const IcfModel& m, const char* name) {
  RuleCheck r;
  for (int e = 12; e <= 32; ++e) CheckSolve(m, std::pow(10.0, -e / 4.0), &r);
  std::printf("%s: %d islands stopped by the step test, worst η s / tol_i = %.3f\n", name,
              r.islands_checked, r.worst);
  EXPECT_GT(r.islands_checked, 0) << name;
  EXPECT_EQ(r.violations, 0) << name;
}

TEST(IslandsStoppingRule, LandingBoxesStopOnlyWhenTheStepBoundMeetsTheTolerance) {
  const IcfModel m = LandingBoxes(4);
  ASSERT_EQ(m.num_islands, 4);
  CheckTolerances(m, "landing boxes");
}

TEST(IslandsStoppingRule, ClutterIslandsStopOnlyWhenTheStepBoundMeetsTheTolerance) {
  const IcfModel m = ClutterAt(0.3);
  ASSERT_GT(m.num_islands, 1);
  CheckTolerances(m, "clutter");
}

}  // namespace
}  // namespace mjcenic
