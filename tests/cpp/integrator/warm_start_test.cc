// WarmStart (cenic-math.md §8.1.1, §8.1.3) on hand-built problems: which
// starting velocity each island gets from the history of accepted steps.
#include <vector>

#include <gtest/gtest.h>

#include "icf/icf_test_util.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/integrator/warm_start.h"

namespace mjcenic {
namespace {

using icf::IcfModel;
using icf::Random;

constexpr double kH = 5e-3;
constexpr double kTight = 1e-8;  // fixed mode's default Newton tolerance

// Cliques of `cliques` dofs, one island each; a dry-friction row on the
// cliques listed in `smooth` (an island with a smooth row, as with contacts).
IcfModel Problem(const std::vector<int>& cliques, const std::vector<int>& smooth) {
  Random rng(3);
  IcfModel m;
  icf::MakeBase(&m, cliques, rng);
  for (int c : smooth)
    icf::FillJ(m.dry_friction.rows,
               m.dry_friction.Add(std::vector<int>{m.clique_start[c]}, 0.4), rng);
  m.Finalize(kH);
  return m;
}

// Accepts steps of kH from v with the accelerations accel[0], accel[1], ...
// (each step starting where the one before ended); returns the last end.
std::vector<double> Accept(WarmStart* w, std::vector<double> v,
                           const std::vector<std::vector<double>>& accel) {
  for (const auto& a : accel) {
    std::vector<double> end(v.size());
    for (size_t i = 0; i < v.size(); ++i) end[i] = v[i] + kH * a[i];
    w->BeginStep(v.data());
    w->Accept(v.data(), end.data(), kH);
    v = end;
  }
  return v;
}

struct Guess {
  bool extrapolated;
  std::vector<double> dir;  // v_guess − v_t
};

Guess Propose(WarmStart* w, const IcfModel& m, const std::vector<double>& v, double tol) {
  w->BeginStep(v.data());
  std::vector<double> guess(m.nv), dir(m.nv);
  const bool any = w->Propose(m, v.data(), kH, tol, guess.data(), dir.data());
  for (int i = 0; i < m.nv; ++i) EXPECT_EQ(guess[i], v[i] + dir[i]) << "dof " << i;
  return {any, dir};
}

// A steady acceleration on an island with a smooth row is carried on: the
// guess is v_t + h a. Alternating accelerations (period-2 chatter of a
// contact, |a − a_old|_M ≥ |a|_M) and a step that does not start where the
// last one ended start at v_t.
TEST(WarmStart, SteadyAccelerationIsCarriedOnAndChatterStartsAtTheStartVelocity) {
  const IcfModel m = Problem({3}, {0});
  ASSERT_TRUE(m.HasSmoothRows());
  const std::vector<double> a = {1.0, -2.0, 0.5}, minus_a = {-1.0, 2.0, -0.5};
  WarmStart w;
  w.Configure(m.nv);
  std::vector<double> v = Accept(&w, {0.1, 0.2, 0.3}, {a, a});
  Guess g = Propose(&w, m, v, kTight);
  EXPECT_TRUE(g.extrapolated);
  // (a as the history holds it: (v_end − v_t)/h, to round-off)
  for (int i = 0; i < m.nv; ++i) EXPECT_NEAR(g.dir[i], kH * a[i], 1e-14);

  v = Accept(&w, v, {minus_a});  // a, then −a: chatter
  g = Propose(&w, m, v, kTight);
  EXPECT_FALSE(g.extrapolated);
  for (double x : g.dir) EXPECT_EQ(x, 0.0);

  // Not the last step's end velocity: the history does not apply, and the
  // next accepted step has no a_old (v_t again).
  w.Configure(m.nv);
  v = Accept(&w, {0.1, 0.2, 0.3}, {a, a});
  v[1] += 1e-3;
  g = Propose(&w, m, v, kTight);
  EXPECT_FALSE(w.continues());
  EXPECT_FALSE(g.extrapolated);
  v = Accept(&w, v, {a});
  EXPECT_FALSE(Propose(&w, m, v, kTight).extrapolated);
  v = Accept(&w, v, {a});
  EXPECT_TRUE(Propose(&w, m, v, kTight).extrapolated);
}

// The guess does not depend on the Newton tolerance (error control solves
// loosely, fixed mode tightly) except through the rest test: an island at
// rest to the tolerance (h |a|_M below it) starts at v_t, at the loose
// tolerance first.
TEST(WarmStart, AnyToleranceExtrapolatesAndRestStartsAtTheStartVelocity) {
  const IcfModel m = Problem({3}, {0});
  const std::vector<double> a = {1.0, -2.0, 0.5}, slow = {1e-5, 0.0, 0.0};
  {
    WarmStart w;
    w.Configure(m.nv);
    const std::vector<double> v = Accept(&w, {0.1, 0.2, 0.3}, {a, a});
    for (double tol : {kTight, 1e-6, 1e-3}) {
      const Guess g = Propose(&w, m, v, tol);
      EXPECT_TRUE(g.extrapolated) << tol;
      for (int i = 0; i < m.nv; ++i) EXPECT_NEAR(g.dir[i], kH * a[i], 1e-14) << tol;
    }
  }
  WarmStart w;
  w.Configure(m.nv);
  const std::vector<double> v = Accept(&w, {0.1, 0.2, 0.3}, {slow, slow});
  EXPECT_TRUE(Propose(&w, m, v, kTight).extrapolated);
  EXPECT_FALSE(Propose(&w, m, v, 1e-6).extrapolated);
}

// Island by island: both islands accelerate steadily; the one with a smooth
// row is extrapolated one step (c = 1), the one of piecewise-quadratic rows
// starts at v_t (the smooth rule would give it c = 1 too).
TEST(WarmStart, EachIslandTakesItsOwnFactor) {
  const IcfModel m = Problem({2, 2}, {0});
  ASSERT_EQ(m.num_islands, 2);
  const std::vector<double> a1 = {1.0, -1.0, 2.0, 4.0}, a2 = a1;
  WarmStart w;
  w.Configure(m.nv);
  const std::vector<double> v = Accept(&w, {0.0, 0.1, 0.2, 0.3}, {a1, a2});
  const Guess g = Propose(&w, m, v, kTight);
  EXPECT_TRUE(g.extrapolated);
  EXPECT_NEAR(g.dir[0], kH * a2[0], 1e-14);
  EXPECT_NEAR(g.dir[1], kH * a2[1], 1e-14);
  EXPECT_EQ(g.dir[2], 0.0);
  EXPECT_EQ(g.dir[3], 0.0);
}

}  // namespace
}  // namespace mjcenic
