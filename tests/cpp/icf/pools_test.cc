#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "icf_test_util.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/pools.h"

TEST(FrictionCoefficient, MatchesTable) {
  using mjcenic::icf::FrictionCoefficient;
  EXPECT_NEAR(FrictionCoefficient(0, 1, 0, 10), 1.0, 1e-12);
  EXPECT_NEAR(FrictionCoefficient(10, 1, 0, 10), 0.5, 1e-12);
  EXPECT_NEAR(FrictionCoefficient(1, 1, 0, 10), 0.99942, 1e-5);
  EXPECT_NEAR(FrictionCoefficient(5, 1, 0, 10), 0.99274, 1e-5);
  EXPECT_NEAR(FrictionCoefficient(15, 1, 0, 10), 0.00726, 1e-5);
  EXPECT_NEAR(FrictionCoefficient(1e9, 1, 0, 10), -0.0024938, 1e-6);
}

TEST(Pools, ConstraintsAreStoredContiguouslyInAdditionOrder) {
  // Three gain rows over different dof sets of a hand-built problem: indices
  // 0, 1, 2 in order, each keeps its dofs, and its Jacobian row follows the
  // previous one's in one buffer; Clear() empties the pool.
  mjcenic::icf::Random rng(3);
  mjcenic::icf::IcfModel m;
  mjcenic::icf::MakeBase(&m, {4, 3}, rng);
  const std::vector<std::vector<int>> dofs = {{0, 2}, {4, 5, 6}, {1}};
  for (size_t c = 0; c < dofs.size(); ++c) {
    EXPECT_EQ(m.gains.Add(dofs[c], 1.0, 2.0, 3.0, -1.0, 1.0), static_cast<int>(c));
    mjcenic::icf::FillJ(m.gains.rows, static_cast<int>(c), rng);
  }
  ASSERT_EQ(m.gains.size(), 3);
  for (int c = 0; c < 3; ++c) {
    ASSERT_EQ(m.gains.rows.ndof(c), static_cast<int>(dofs[c].size()));
    const auto d = m.gains.rows.dofs(c);
    EXPECT_EQ(std::vector<int>(d.begin(), d.end()), dofs[c]);
    if (c > 0) {
      EXPECT_EQ(m.gains.rows.J(c), m.gains.rows.J(c - 1) + m.gains.rows.ndof(c - 1));
    }
  }
  m.gains.Clear();
  EXPECT_EQ(m.gains.size(), 0);
}

namespace {

// One row of a rebuild: its dofs (one dof: the PutSingle path) and numbers.
struct TestRow {
  std::vector<int> dofs;
  double J0, a, b;
};

// Rebuilds `pool` in place from `rows` the way MujocoAdapter::Build does
// (row cursor, Put/PutSingle, Truncate at the end).
template <class Pool, class PutSingle, class Put>
void Rebuild(Pool* pool, const std::vector<TestRow>& rows, PutSingle put_single, Put put) {
  int c = 0;
  for (const TestRow& r : rows) {
    const int i = r.dofs.size() == 1 ? put_single(pool, c, r) : put(pool, c, r);
    EXPECT_EQ(i, c);
    double* J = pool->rows.J(i);
    for (size_t k = 0; k < r.dofs.size(); ++k) J[k] = r.J0 + k;
    ++c;
  }
  pool->Truncate(c);
}

template <class Pool>
void ExpectSameRows(const Pool& x, const Pool& y) {
  ASSERT_EQ(x.size(), y.size());
  const std::vector<double> v = {0.5, -1.5, 2.25, 3.0, -0.75, 1.125};
  for (int c = 0; c < x.size(); ++c) {
    const auto dx = x.rows.dofs(c), dy = y.rows.dofs(c);
    ASSERT_EQ(std::vector<int>(dx.begin(), dx.end()), std::vector<int>(dy.begin(), dy.end()));
    for (int k = 0; k < x.rows.ndof(c); ++k) EXPECT_EQ(x.rows.J(c)[k], y.rows.J(c)[k]);
    double ox, oy;
    x.rows.Multiply(c, v.data(), &ox);
    y.rows.Multiply(c, v.data(), &oy);
    EXPECT_EQ(ox, oy) << c;
  }
}

// A pool built from scratch: add(pool, row) per row, then the row's J as
// Rebuild writes it (J0, J0 + 1, ...).
template <class Pool, class Add>
void FreshBuild(Pool* pool, const std::vector<TestRow>& rows, Add add) {
  for (const TestRow& r : rows) {
    const int c = add(pool, r);
    for (size_t k = 0; k < r.dofs.size(); ++k) pool->rows.J(c)[k] = r.J0 + k;
  }
}

// Rows and every per-row number of two limit or coupling pools.
template <class Pool>
void ExpectSameNearRigid(const Pool& x, const Pool& y) {
  ExpectSameRows(x, y);
  EXPECT_EQ(x.g0, y.g0);
  EXPECT_EQ(x.w, y.w);
  EXPECT_EQ(x.tau_r, y.tau_r);
  EXPECT_EQ(x.R, y.R);
  EXPECT_EQ(x.vhat, y.vhat);
}

}  // namespace

TEST(Pools, RebuildInPlaceEqualsAFreshBuild) {
  // A pool rebuilt in place (rows kept where the dofs match, cut where they
  // do not, cut past the end) holds exactly what Adds of the new rows make.
  using mjcenic::icf::GainPool;
  using mjcenic::icf::LimitPool;
  const std::vector<TestRow> first = {{{0}, 1, 2, 3}, {{1}, -1, 4, 5}, {{2, 3}, 2, 6, 7},
                                      {{4}, 1, 8, 9}, {{5}, -1, 1, 2}, {{1, 2, 5}, 3, 1, 1}};
  const std::vector<std::vector<TestRow>> second = {
      {{{0}, 1, 9, 8}, {{1}, -1, 7, 6}, {{2, 3}, 5, 5, 4}},                   // kept, cut at end
      {{{0}, 1, 9, 8}, {{3}, -1, 7, 6}, {{2, 3}, 5, 5, 4}, {{4}, 1, 2, 2}},   // dof changes: cut
      {{{0}, 1, 9, 8}, {{1}, -1, 7, 6}, {{2, 4}, 5, 5, 4}},                   // multi-dof changes
      {{{0}, 1, 9, 8}, {{1}, -1, 7, 6}, {{2, 3}, 5, 5, 4}, {{4}, 1, 8, 9}, {{5}, -1, 1, 2},
       {{1, 2, 5}, 3, 1, 1}, {{0}, 2, 2, 2}},                                 // grows
      {}};
  auto limit_single = [](LimitPool* p, int c, const TestRow& r) {
    return p->PutSingle(c, r.dofs[0], r.J0, r.a, r.b, r.a + r.b);
  };
  auto limit_put = [](LimitPool* p, int c, const TestRow& r) {
    return p->Put(c, r.dofs, r.a, r.b, r.a + r.b);
  };
  auto gain_single = [](GainPool* p, int c, const TestRow& r) {
    return p->PutSingle(c, r.dofs[0], r.J0, r.a, r.b, -r.b, -r.a, r.a);
  };
  auto gain_put = [](GainPool* p, int c, const TestRow& r) {
    return p->Put(c, r.dofs, r.a, r.b, -r.b, -r.a, r.a);
  };
  for (const auto& rows : second) {
    LimitPool lim, lim_fresh;
    GainPool gain, gain_fresh;
    Rebuild(&lim, first, limit_single, limit_put);
    Rebuild(&gain, first, gain_single, gain_put);
    lim.R.assign(lim.size(), 42.0);  // what a solve left: overwritten by the rebuild
    lim.vhat.assign(lim.size(), 42.0);
    gain.vc0.assign(gain.size(), 42.0);
    gain.kappa.assign(gain.size(), 42.0);
    gain.h_over_kappa.assign(gain.size(), 42.0);
    Rebuild(&lim, rows, limit_single, limit_put);
    Rebuild(&gain, rows, gain_single, gain_put);
    FreshBuild(&lim_fresh, rows, [](LimitPool* p, const TestRow& r) {
      return p->Add(r.dofs, r.a, r.b, r.a + r.b);
    });
    FreshBuild(&gain_fresh, rows, [](GainPool* p, const TestRow& r) {
      return p->Add(r.dofs, r.a, r.b, -r.b, -r.a, r.a);
    });
    ExpectSameNearRigid(lim, lim_fresh);
    ExpectSameRows(gain, gain_fresh);
    for (auto f : {&GainPool::c, &GainPool::kq, &GainPool::kv, &GainPool::vc0, &GainPool::lo,
                   &GainPool::hi, &GainPool::kappa, &GainPool::c_eff, &GainPool::h_over_kappa})
      EXPECT_EQ(gain.*f, gain_fresh.*f);
  }
}

TEST(Pools, RowThatLosesAndRegainsADofIsRefilledInPlace) {
  // slider_crank's `backward` actuator: MuJoCo drops the exact-zero entry of
  // its moment row, which alternates between dofs {0, 1} and {1}. The row is
  // refilled where it is (RowStore::Refit, cenic-math §8.9), the rows
  // after it are not moved, and the pool equals a fresh build, also in the
  // products that run without the one-dof shortcut (the store has a gap).
  using mjcenic::icf::GainPool;
  const std::vector<TestRow> wide = {{{0}, 1, 2, 3}, {{0, 1}, -1, 4, 5}, {{2}, 2, 6, 7}};
  const std::vector<TestRow> narrow = {{{0}, 1, 2, 3}, {{1}, -1, 4, 5}, {{2}, 2, 6, 7}};
  auto gain_single = [](GainPool* p, int c, const TestRow& r) {
    return p->PutSingle(c, r.dofs[0], r.J0, r.a, r.b, -r.b, -r.a, r.a);
  };
  auto gain_put = [](GainPool* p, int c, const TestRow& r) {
    return p->Put(c, r.dofs, r.a, r.b, -r.b, -r.a, r.a);
  };
  GainPool gain;
  Rebuild(&gain, wide, gain_single, gain_put);
  const double* J2 = gain.rows.J(2);
  const std::vector<double> x = {0.5, -1.5, 2.25};
  for (const auto* rows : {&narrow, &wide, &narrow, &narrow, &wide}) {
    Rebuild(&gain, *rows, gain_single, gain_put);
    EXPECT_EQ(gain.rows.J(2), J2);  // not cut and appended again
    GainPool fresh;
    FreshBuild(&fresh, *rows, [](GainPool* p, const TestRow& r) {
      return p->Add(r.dofs, r.a, r.b, -r.b, -r.a, r.a);
    });
    ExpectSameRows(gain, fresh);
    for (auto f : {&GainPool::c, &GainPool::kq, &GainPool::kv, &GainPool::vc0, &GainPool::lo,
                   &GainPool::hi, &GainPool::kappa, &GainPool::c_eff, &GainPool::h_over_kappa})
      EXPECT_EQ(gain.*f, fresh.*f);
    std::vector<double> g(3, 0.25), g_fresh(3, 0.25);
    for (int c = 0; c < gain.size(); ++c) {
      const double gamma = 1.5 - c;
      gain.rows.MultiplyTransposeAdd(c, &gamma, -1.0, g.data());
      fresh.rows.MultiplyTransposeAdd(c, &gamma, -1.0, g_fresh.data());
    }
    EXPECT_EQ(g, g_fresh);
    double out, out_fresh;
    gain.rows.Multiply(1, x.data(), &out);
    fresh.rows.Multiply(1, x.data(), &out_fresh);
    EXPECT_EQ(out, out_fresh);
  }
  // One dof per row but a gap before row 2 (row 1 sits in a two-dof slot):
  // no one-dof shortcut. Cut after row 1, constraint c sits at dofs_[c] again
  // and the shortcut is back, with the same products.
  Rebuild(&gain, narrow, gain_single, gain_put);
  EXPECT_FALSE(gain.rows.all_single());
  gain.Truncate(2);
  EXPECT_TRUE(gain.rows.all_single());
  double out, out_fresh;
  GainPool fresh;
  FreshBuild(&fresh, {narrow[0], narrow[1]}, [](GainPool* p, const TestRow& r) {
    return p->Add(r.dofs, r.a, r.b, -r.b, -r.a, r.a);
  });
  for (int c = 0; c < 2; ++c) {
    gain.rows.Multiply(c, x.data(), &out);
    fresh.rows.Multiply(c, x.data(), &out_fresh);
    EXPECT_EQ(out, out_fresh) << c;
  }
}

TEST(Pools, CouplingAndDryFrictionRebuildInPlaceEqualsAFreshBuild) {
  // The equality and friction-loss rows of MuJoCo's efc rows are refilled the
  // same way (Put for every row, one dof or several; cenic-math §8.9).
  using mjcenic::icf::CouplingPool;
  using mjcenic::icf::DryFrictionPool;
  const std::vector<TestRow> first = {{{0, 1}, 1, 2, 3}, {{2}, -1, 4, 5}, {{1, 3}, 2, 6, 7},
                                      {{4}, 1, 8, 9}};
  const std::vector<std::vector<TestRow>> second = {
      {{{0, 1}, 3, 9, 8}, {{2}, -2, 7, 6}},                                 // kept, cut at end
      {{{0, 1}, 3, 9, 8}, {{3}, -2, 7, 6}, {{1, 3}, 5, 5, 4}},              // dof changes: cut
      {{{0, 1}, 3, 9, 8}, {{2}, -2, 7, 6}, {{1, 3}, 5, 5, 4}, {{4}, 1, 2, 2}, {{0}, 2, 2, 2}},
      {}};
  auto coupling_put = [](CouplingPool* p, int c, const TestRow& r) {
    return p->Put(c, r.dofs, r.a, r.b, r.a + r.b);
  };
  auto friction_put = [](DryFrictionPool* p, int c, const TestRow& r) {
    return p->Put(c, r.dofs, r.a, r.b);
  };
  for (const auto& rows : second) {
    CouplingPool eq, eq_fresh;
    DryFrictionPool fr, fr_fresh;
    Rebuild(&eq, first, coupling_put, coupling_put);
    Rebuild(&fr, first, friction_put, friction_put);
    eq.R.assign(eq.size(), 42.0);  // what a solve left: overwritten by the rebuild
    eq.vhat.assign(eq.size(), 42.0);
    fr.eps.assign(fr.size(), 42.0);
    Rebuild(&eq, rows, coupling_put, coupling_put);
    Rebuild(&fr, rows, friction_put, friction_put);
    FreshBuild(&eq_fresh, rows, [](CouplingPool* p, const TestRow& r) {
      return p->Add(r.dofs, r.a, r.b, r.a + r.b);
    });
    FreshBuild(&fr_fresh, rows, [](DryFrictionPool* p, const TestRow& r) {
      return p->Add(r.dofs, r.a, r.b);
    });
    ExpectSameNearRigid(eq, eq_fresh);
    ExpectSameRows(fr, fr_fresh);
    EXPECT_EQ(fr.F, fr_fresh.F);
    EXPECT_EQ(fr.eps_row, fr_fresh.eps_row);
    EXPECT_EQ(fr.eps, fr_fresh.eps);
  }
}

TEST(Pools, LaggedFrictionCoefficientIsTheBlendAtTheStartVelocity) {
  // μ of each contact after Finalize is the μ_s → μ_d blend at its own
  // tangential speed |v_t⁰| / v_s (§4.3, P8), to the bit: with μ_s = μ_d
  // (also a frictionless 0) the build skips the blend (it would add ±0), with
  // μ_s > μ_d it must not, and a tangential speed beyond the skip's bounds
  // takes the blend's value too.
  using mjcenic::icf::FrictionCoefficient;
  mjcenic::icf::Random rng(5);
  mjcenic::icf::IcfModel m;
  mjcenic::icf::MakeBase(&m, {6, 6}, rng);
  const double mus[5][2] = {{0.7, 0.7}, {1.2, 0.7}, {0.7, 0.7}, {0.9, 0.4}, {0.0, 0.0}};
  for (int c = 0; c < 5; ++c) {
    m.contacts.Add(rng.Subset(12, 6), 5.0, 1e4, 1.0, mus[c][0], mus[c][1], 1e-3);
    mjcenic::icf::FillJ(m.contacts.rows, c, rng);
  }
  for (int i = 0; i < m.nv; ++i) m.v0[i] = 0.01 * rng.N();
  // Contact 2 slides absurdly fast (its tangential rows see ~1e150).
  double* J2 = m.contacts.rows.J(2);
  for (int k = 6; k < 18; ++k) J2[k] *= 1e152;
  m.Finalize(1e-3);
  const mjcenic::icf::IcfParameters& p = m.params;
  int blended = 0;
  for (int c = 0; c < 5; ++c) {
    double vc[3];
    m.contacts.rows.Multiply(c, m.v0.data(), vc);
    const double s = std::hypot(vc[1], vc[2]) / p.stiction_tolerance;
    const double expect = FrictionCoefficient(s, mus[c][0], mus[c][1], p.transition_width);
    EXPECT_EQ(m.contacts.mu[c], expect) << "contact " << c;
    blended += m.contacts.mu[c] != mus[c][1];
  }
  EXPECT_EQ(m.contacts.mu[0], 0.7);
  EXPECT_FALSE(std::signbit(m.contacts.mu[4]));  // frictionless: +0, as the blend gives
  EXPECT_GE(blended, 1);  // a static-friction contact sits above μ_d
}
