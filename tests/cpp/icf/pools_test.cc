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
