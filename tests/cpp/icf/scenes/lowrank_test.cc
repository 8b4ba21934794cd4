// The lowrank linear solver (cenic-math.md §8.6): H = B + V Vᵀ, B the
// per-tree blocks, V one column per curvature direction of the constraints
// that couple trees; solves by the Woodbury identity. And the block Cholesky
// over the tree graph (§8.7). Both checked against the plain dense Cholesky
// of the same H (independent truth) on a real contact scene with wide rows
// added: the Newton direction and the converged velocities; lowrank is
// analysed once whatever the contact set, block only when its pattern
// outgrows the stored superset; the auto choice between them. Each kind's
// own rules on hand-built problems: icf/linear/lowrank_test.cc and
// icf/linear/block_test.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/icf/linear/linear_solver.h"
#include "icf/with_contacts.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/stepper.h"

namespace mjcenic {
namespace {

using icf::IcfModel;
using icf::IcfSolver;
using icf::LinearSolverKind;

double RelDiff(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return (a - b).norm() / a.norm();
}

// Trees with dof ranges [start[t], start[t+1]): random dense SPD mass blocks,
// damping and start velocities (no constraint yet).
IcfModel RandomTrees(const std::vector<int>& start, std::mt19937* gen) {
  std::normal_distribution<double> n01(0, 1);
  const int trees = static_cast<int>(start.size()) - 1;
  IcfModel m;
  m.Reset(start.back());
  m.clique_start = start;
  for (int t = 0; t < trees; ++t)
    for (int i = start[t]; i < start[t + 1]; ++i) m.clique_of_dof[i] = t;
  for (int t = 0; t < trees; ++t) {
    const int s = start[t], w = start[t + 1] - s;
    const Eigen::MatrixXd X = Eigen::MatrixXd::NullaryExpr(w, w, [&] { return n01(*gen); });
    const Eigen::MatrixXd Mt = X * X.transpose() + 0.5 * Eigen::MatrixXd::Identity(w, w);
    for (int a = 0; a < w; ++a) {
      m.M_rowadr[s + a] = static_cast<int>(m.M.size());
      m.M_rownnz[s + a] = a + 1;
      for (int b = 0; b <= a; ++b) {
        m.M_colind.push_back(s + b);
        m.M.push_back(Mt(a, b));
      }
      m.M_diag[s + a] = Mt(a, a);
      m.D[s + a] = std::abs(n01(*gen));
      m.v0[s + a] = n01(*gen);
    }
  }
  return m;
}

// A random problem on `trees` trees of 1..7 dofs: random SPD mass blocks,
// damping, and gain rows (G = h κ > 0 when unclamped) that are wide (every
// dof), narrow across two or three trees, or inside one tree.
IcfModel RandomProblem(unsigned seed, int trees, int wide, int narrow, int local) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> n01(0, 1);
  std::uniform_int_distribution<int> size(1, 7);
  std::vector<int> start = {0};
  for (int t = 0; t < trees; ++t) start.push_back(start.back() + size(gen));
  const int nv = start.back();
  IcfModel m = RandomTrees(start, &gen);
  auto add_gain = [&](const std::vector<int>& dofs) {
    const int c = m.gains.Add(dofs, n01(gen), 0.0, 10.0 + 100.0 * std::abs(n01(gen)), -1e9, 1e9);
    for (size_t k = 0; k < dofs.size(); ++k) m.gains.rows.J(c)[k] = n01(gen);
  };
  std::vector<int> all(nv);
  for (int i = 0; i < nv; ++i) all[i] = i;
  for (int k = 0; k < wide; ++k) add_gain(all);
  std::uniform_int_distribution<int> tree(0, trees - 1);
  for (int k = 0; k < narrow; ++k) {
    std::vector<int> dofs;
    int a = tree(gen), b = tree(gen), c = tree(gen);
    for (int t = 0; t < trees; ++t)
      if (t == a || t == b || (k % 2 == 0 && t == c))
        for (int i = start[t]; i < start[t + 1]; ++i) dofs.push_back(i);
    add_gain(dofs);
  }
  for (int k = 0; k < local; ++k) {
    const int t = tree(gen);
    std::vector<int> dofs;
    for (int i = start[t]; i < start[t + 1]; ++i) dofs.push_back(i);
    add_gain(dofs);
  }
  m.Finalize(0.01);
  return m;
}

// Real contact problem (the clutter bin after 0.6 s: body–body contacts with
// 3×3 friction Hessians of rank ≤ 3) with wide rows added.
const IcfModel& ClutterWithWideRows() {
  static const IcfModel* model = [] {
    auto* out = new IcfModel;
    const std::string file = std::string(MJCENIC_MODELS_DIR) + "/clutter.xml";
    char error[1000] = "";
    mjModel* m = mj_loadXML(file.c_str(), nullptr, error, sizeof(error));
    if (!m) {
      ADD_FAILURE() << error;
      return out;
    }
    mjData* d = mj_makeData(m);
    mj_resetDataKeyframe(m, d, 0);
    auto stepper = Stepper::Create(m);
    EXPECT_TRUE(stepper.ok());
    if (stepper.ok()) {
      while (d->time < 0.6 - 1e-9) EXPECT_TRUE((*stepper)->Step(d).ok());
      *out = (*stepper)->last_problem();
    }
    mj_deleteData(d);
    mj_deleteModel(m);
    // Two "tendon" rows through every tree, a spring and a damper.
    std::vector<int> all(out->nv);
    for (int i = 0; i < out->nv; ++i) all[i] = i;
    for (int k = 0; k < 2; ++k) {
      const int c = out->gains.Add(all, 0.0, k == 0 ? 50.0 : 0.0, 5.0, -1e9, 1e9);
      for (int i = 0; i < out->nv; ++i) out->gains.rows.J(c)[i] = std::sin(0.7 * i + k);
    }
    out->Finalize(out->h);
    return out;
  }();
  return *model;
}

TEST(LowRank, NewtonDirectionAndSolutionMatchDenseOnAContactScene) {
  const IcfModel& m = ClutterWithWideRows();
  int coupling_contacts = 0;
  for (int c = 0; c < m.contacts.size(); ++c) {
    const auto dofs = m.contacts.rows.dofs(c);
    coupling_contacts += m.clique_of_dof[dofs.front()] != m.clique_of_dof[dofs.back()];
  }
  ASSERT_GT(coupling_contacts, 0);
  std::mt19937 gen(3);
  std::normal_distribution<double> n01(0, 1);
  for (double scale : {0.0, 1e-3, 0.05}) {
    Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv);
    for (int i = 0; i < m.nv; ++i) v[i] += scale * n01(gen);
    Eigen::VectorXd wd(m.nv), wl(m.nv), wb(m.nv);
    IcfSolver a, b, c;
    ASSERT_TRUE(a.SearchDirection(m, v.data(), LinearSolverKind::kDense, wd.data()));
    ASSERT_TRUE(b.SearchDirection(m, v.data(), LinearSolverKind::kLowRank, wl.data()));
    ASSERT_TRUE(c.SearchDirection(m, v.data(), LinearSolverKind::kBlock, wb.data()));
    EXPECT_LT(RelDiff(wd, wl), 1e-10) << "scale " << scale;
    EXPECT_LT(RelDiff(wd, wb), 1e-10) << "scale " << scale;
  }
  // Converged velocities agree to the solver tolerance, in as many iterations.
  icf::SolverOptions od;
  od.linear_solver = LinearSolverKind::kDense;
  Eigen::VectorXd vd(m.nv);
  IcfSolver sd;
  icf::SolveStats std_;
  EXPECT_EQ(sd.Solve(m, m.v0.data(), od, vd.data(), &std_), icf::SolveStatus::kConverged);
  for (LinearSolverKind kind : {LinearSolverKind::kLowRank, LinearSolverKind::kBlock}) {
    icf::SolverOptions ol;
    ol.linear_solver = kind;
    Eigen::VectorXd vl(m.nv);
    IcfSolver sl;
    icf::SolveStats stl;
    EXPECT_EQ(sl.Solve(m, m.v0.data(), ol, vl.data(), &stl), icf::SolveStatus::kConverged);
    EXPECT_EQ(std_.iterations, stl.iterations);
    EXPECT_LT(RelDiff(vd, vl), 1e-8);
  }
}

TEST(LowRank, StructureIsAnalysedOnceWhateverTheContactSet) {
  const IcfModel& full = ClutterWithWideRows();
  // The same scene with every other contact, and with none.
  auto subset = [&](int every) {
    return test_util::WithContacts(full, [every](int c) { return every > 0 && c % every == 0; });
  };
  const IcfModel half = subset(2), none = subset(0);
  auto low = icf::MakeLinearSolver(LinearSolverKind::kLowRank);
  auto block = icf::MakeLinearSolver(LinearSolverKind::kBlock);
  const IcfModel* order[] = {&full, &half, &none, &full, &half, &full};
  for (const IcfModel* m : order) {
    low->Prepare(*m);
    block->Prepare(*m);
    IcfSolver s;
    s.Evaluate(*m, m->v0.data());
    ASSERT_TRUE(low->AssembleAndFactor(*m, s.data()));
    ASSERT_TRUE(block->AssembleAndFactor(*m, s.data()));
    auto dense = icf::MakeLinearSolver(LinearSolverKind::kDense);
    dense->Prepare(*m);
    ASSERT_TRUE(dense->AssembleAndFactor(*m, s.data()));
    Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(m->nv, -1, 1), xd(m->nv), xl(m->nv),
                    xb(m->nv);
    dense->Solve(b.data(), xd.data());
    low->Solve(b.data(), xl.data());
    block->Solve(b.data(), xb.data());
    EXPECT_LT(RelDiff(xd, xl), 1e-10) << "contacts " << m->contacts.size();
    EXPECT_LT(RelDiff(xd, xb), 1e-10) << "contacts " << m->contacts.size();
  }
  EXPECT_EQ(low->analyses(), 1);
  // The block pattern is the union of the coupled tree pairs seen so far
  // (within 2·pairs + 16, as the sparse kind): `full` first, so `half` and
  // `none`-plus-the-wide-rows are subsets of the stored pattern; at most a
  // re-analysis when the superset grows too large for `none`.
  EXPECT_LE(block->analyses(), 2);
}

TEST(LowRank, AutoPicksItOnlyForFewCouplingRows) {
  // 40 trees of 1..7 dofs (blocks far below 25 % of H), one island.
  IcfModel few = RandomProblem(11, 40, 3, 10, 4);
  ASSERT_GE(few.nv, 64);
  ASSERT_EQ(few.num_islands, 1);
  EXPECT_LE(icf::CouplingRank(few), icf::kMaxLowRank);
  EXPECT_EQ(icf::ChooseLinearSolver(few, LinearSolverKind::kAuto), LinearSolverKind::kLowRank);
  IcfModel many = RandomProblem(11, 40, 3, icf::kMaxLowRank, 4);
  EXPECT_GT(icf::CouplingRank(many), icf::kMaxLowRank);
  EXPECT_EQ(icf::ChooseLinearSolver(many, LinearSolverKind::kAuto), LinearSolverKind::kBlock);
  // A chain of trees coupled pairwise (one island, no wide rows): the block
  // Cholesky; one row over three trees added: lowrank.
  IcfModel chain = RandomProblem(12, 40, 0, 0, 4);
  auto couple = [&](std::initializer_list<int> trees) {
    std::vector<int> dofs;
    for (int t : trees)
      for (int i = chain.clique_start[t]; i < chain.clique_start[t + 1]; ++i) dofs.push_back(i);
    const int c = chain.gains.Add(dofs, 0.0, 0.0, 1.0, -1e9, 1e9);
    for (size_t k = 0; k < dofs.size(); ++k) chain.gains.rows.J(c)[k] = 1.0;
  };
  for (int t = 0; t + 1 < 40; ++t) couple({t, t + 1});
  chain.Finalize(chain.h);
  ASSERT_GE(chain.nv, 64);
  ASSERT_EQ(chain.num_islands, 1);
  int wide = -1;
  EXPECT_EQ(icf::CouplingRank(chain, &wide), 39);
  EXPECT_EQ(wide, 0);
  EXPECT_EQ(icf::ChooseLinearSolver(chain, LinearSolverKind::kAuto), LinearSolverKind::kBlock);
  couple({3, 17, 30});
  chain.Finalize(chain.h);
  EXPECT_EQ(icf::CouplingRank(chain, &wide), 40);
  EXPECT_EQ(wide, 1);
  EXPECT_EQ(icf::ChooseLinearSolver(chain, LinearSolverKind::kAuto), LinearSolverKind::kLowRank);
  // An explicit choice is kept.
  EXPECT_EQ(icf::ChooseLinearSolver(few, LinearSolverKind::kSparse), LinearSolverKind::kSparse);
}

// A crowd: `islands` islands of `per_island` trees of 27 dofs (a humanoid's
// size), consecutive trees of an island coupled by `rows` gain rows each
// (contacts between neighbours).
IcfModel Crowd(int islands, int per_island, int rows) {
  constexpr int kTreeDofs = 27;
  std::mt19937 gen(5);
  std::normal_distribution<double> n01(0, 1);
  const int trees = islands * per_island;
  std::vector<int> start(trees + 1);
  for (int t = 0; t <= trees; ++t) start[t] = t * kTreeDofs;
  IcfModel m = RandomTrees(start, &gen);
  for (int k = 0; k < islands; ++k)
    for (int j = 0; j + 1 < per_island; ++j) {
      const int t = k * per_island + j;
      std::vector<int> dofs;
      for (int i = t * kTreeDofs; i < (t + 2) * kTreeDofs; ++i) dofs.push_back(i);
      for (int r = 0; r < rows; ++r) {
        const int c = m.gains.Add(dofs, n01(gen), 0.0, 10.0 + std::abs(n01(gen)), -1e9, 1e9);
        for (size_t q = 0; q < dofs.size(); ++q) m.gains.rows.J(c)[q] = n01(gen);
      }
    }
  m.Finalize(0.01);
  return m;
}

TEST(LowRank, AutoWeighsItAgainstDenseIslandsOfLargeTrees) {
  // Islands of 10 humanoid-sized trees (270 dofs, above kMaxIslandDofs):
  // dense island blocks cost Σ nᵢ³/3 = 3 · 270³/3, the Woodbury form
  // Σ n_c³/3 + r³/3 = 30 · 27³/3 + r³/3.
  const IcfModel few = Crowd(3, 10, 2);
  ASSERT_EQ(few.num_islands, 3);
  ASSERT_EQ(few.largest_island, 270);
  EXPECT_DOUBLE_EQ(few.island_cubes, 3 * 270.0 * 270 * 270);
  EXPECT_DOUBLE_EQ(few.clique_cubes, 30 * 27.0 * 27 * 27);
  EXPECT_EQ(icf::CouplingRank(few), 3 * 9 * 2);
  EXPECT_EQ(icf::ChooseLinearSolver(few, LinearSolverKind::kAuto), LinearSolverKind::kLowRank);
  // The Woodbury solve is H⁻¹ (dense Cholesky of the same H as truth).
  IcfSolver s;
  s.Evaluate(few, few.v0.data());
  auto low = icf::MakeLinearSolver(LinearSolverKind::kLowRank);
  auto dense = icf::MakeLinearSolver(LinearSolverKind::kDense);
  for (auto* f : {low.get(), dense.get()}) {
    f->Prepare(few);
    ASSERT_TRUE(f->AssembleAndFactor(few, s.data()));
  }
  Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(few.nv, -1, 1), xd(few.nv), xl(few.nv);
  dense->Solve(b.data(), xd.data());
  low->Solve(b.data(), xl.data());
  EXPECT_LT(RelDiff(xd, xl), 1e-10);
  // 30 rows per coupled pair: r = 810, r³ above the islands' cubes; islands
  // of ≤ kMaxIslandDofsLargeTrees dofs stay dense.
  const IcfModel many = Crowd(3, 10, 30);
  EXPECT_GT(std::pow(icf::CouplingRank(many), 3) + many.clique_cubes, many.island_cubes);
  EXPECT_EQ(icf::ChooseLinearSolver(many, LinearSolverKind::kAuto), LinearSolverKind::kIslands);
  // Trees of 27 dofs in islands of ≤ kMaxIslandDofs: dense islands, whatever r.
  EXPECT_EQ(icf::ChooseLinearSolver(Crowd(6, 4, 2), LinearSolverKind::kAuto),
            LinearSolverKind::kIslands);
}

}  // namespace
}  // namespace mjcenic
