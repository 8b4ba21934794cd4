// The warm-start unit's rules, one at a time (warm_start.h, cenic-math.md §8.1.1–8.1.3): Newton's
// starting velocity proposed from the accepted steps' mean accelerations, on
// hand-built ICF problems whose history makes each rule's guess known in
// closed form.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "icf/icf_test_util.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/integrator/warm_start.h"

namespace mjcenic {
namespace {

using icf::IcfModel;

constexpr double kH = 0.01;
constexpr double kTol = 1e-8;  // a tight (fixed-mode) Newton tolerance

// Two dofs in one clique (one island). smooth: a dry-friction row on dof 0
// (a cost that is not piecewise quadratic, so the contact rule of §8.1.1
// applies); else no rows at all (a quadratic problem).
IcfModel Problem(bool smooth) {
  icf::Random rng(3);
  IcfModel m;
  icf::MakeBase(&m, {2}, rng);
  for (int i = 0; i < m.nv; ++i) m.v0[i] = 0;
  if (smooth) m.dry_friction.rows.J(m.dry_friction.Add(std::vector<int>{0}, 0.5))[0] = 1.0;
  m.Finalize(kH);
  m.SetTimeStep(kH);
  EXPECT_STREQ(m.Validate(), "");
  EXPECT_EQ(m.num_islands, 1);
  return m;
}

// A WarmStart that accepted steps of size kH with the given mean
// accelerations (oldest first), each starting where the one before ended,
// from v = 0; it is at the start of the next step. Returns that step's v_t.
std::vector<double> History(WarmStart* ws, const std::vector<std::vector<double>>& accels) {
  std::vector<double> v(2, 0.0), next(2);
  ws->Configure(2);
  for (const auto& a : accels) {
    ws->BeginStep(v.data());
    for (int i = 0; i < 2; ++i) next[i] = v[i] + kH * a[i];
    ws->Accept(v.data(), next.data(), kH);
    v = next;
  }
  ws->BeginStep(v.data());
  return v;
}

struct Guess {
  bool extrapolated;
  std::vector<double> v, dir;
};

Guess Propose(WarmStart& ws, const IcfModel& m, const std::vector<double>& v_start,
              double tolerance = kTol) {
  Guess g{false, std::vector<double>(2), std::vector<double>(2)};
  g.extrapolated = ws.Propose(m, v_start.data(), kH, tolerance, g.v.data(), g.dir.data());
  for (int i = 0; i < 2; ++i) EXPECT_DOUBLE_EQ(g.dir[i], g.v[i] - v_start[i]) << i;
  return g;
}

void ExpectGuess(const Guess& g, const std::vector<double>& v_start,
                 const std::vector<double>& dv, bool extrapolated) {
  EXPECT_EQ(g.extrapolated, extrapolated);
  for (int i = 0; i < 2; ++i) EXPECT_NEAR(g.v[i], v_start[i] + dv[i], 1e-14) << i;
}

// Constant acceleration (free fall with friction): a = a_old, so the next
// step's velocity is v_t + h a exactly.
TEST(WarmStart, ConstantAccelerationIsExtrapolatedOneStep) {
  const IcfModel m = Problem(true);
  WarmStart ws;
  const std::vector<double> a = {-9.81, 2.5};
  const auto v = History(&ws, {a, a});
  ExpectGuess(Propose(ws, m, v), v, {kH * a[0], kH * a[1]}, true);
}

// Only for a step that starts where the last accepted one ended, after two
// accepted steps (a and a_old known): else the guess is v_t.
TEST(WarmStart, GuessIsTheStartVelocityWithoutAHistory) {
  const IcfModel m = Problem(true);
  const std::vector<double> a = {-9.81, 2.5};
  {
    WarmStart ws;
    auto v = History(&ws, {a, a});
    v[0] += 1e-3;  // the state was changed between steps
    ws.BeginStep(v.data());
    EXPECT_FALSE(ws.continues());
    ExpectGuess(Propose(ws, m, v), v, {0, 0}, false);
  }
  {
    WarmStart ws;  // one accepted step: a_old unknown
    const auto v = History(&ws, {a});
    ExpectGuess(Propose(ws, m, v), v, {0, 0}, false);
  }
}

// With contact-like rows: an acceleration that changed by more than its
// size (|a − a_old|_M ≥ |a|_M) is not predictable, the guess is v_t.
TEST(WarmStart, ChangedAccelerationIsNotExtrapolated) {
  const IcfModel m = Problem(true);
  WarmStart ws;
  const auto v = History(&ws, {{-1.0, 1.0}, {1.0, -1.0}});
  ExpectGuess(Propose(ws, m, v), v, {0, 0}, false);
}

// Near rest (h |a|_M below the tolerance) the guess is v_t.
TEST(WarmStart, NearRestTheGuessIsTheStartVelocity) {
  const IcfModel m = Problem(true);
  WarmStart ws;
  const std::vector<double> a = {1e-9, -1e-9};
  const auto v = History(&ws, {a, a});
  ExpectGuess(Propose(ws, m, v), v, {0, 0}, false);
}

// Only piecewise-quadratic rows (here none): from v_t one exact Newton step
// solves the problem, so even an acceleration that halves every step (a
// guess v_t + ½ h a would be right) is not extrapolated: the guess is v_t.
TEST(WarmStart, PiecewiseQuadraticProblemStartsAtTheStartVelocity) {
  const IcfModel m = Problem(false);
  WarmStart ws;
  const std::vector<double> a_old = {4.0, -2.0}, a = {2.0, -1.0};
  const auto v = History(&ws, {a_old, a});
  ExpectGuess(Propose(ws, m, v), v, {0, 0}, false);
}

}  // namespace
}  // namespace mjcenic
