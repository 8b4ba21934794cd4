#include <gtest/gtest.h>
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
