// Dense (Eigen LLT) vs sparse (CHOLMOD) factorization of the ICF Hessian on a
// real MuJoCo scene (cenic-math.md §8.1, §8.4, §13 item 25): same Newton
// direction to round-off, same converged velocities to the solver tolerance,
// and the block-sparse pattern (cliques + coupled clique pairs) assembled and
// reused correctly.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Dense>
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/icf/linear/linear_solver.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/stepper.h"
#include "icf/same_solves.h"
#include "icf/with_contacts.h"

namespace mjcenic {
namespace {

using icf::IcfModel;
using icf::IcfSolver;
using icf::LinearSolverKind;
using icf::SolverOptions;
using icf::SolveStats;
using icf::SolveStatus;

const std::string kClutter = std::string(MJCENIC_MODELS_DIR) + "/clutter.xml";

// The ICF problems of the clutter scene: at t = 0 (objects in the air, no
// contact) and after 0.6 s of simulation (objects piled in the bin).
struct ClutterProblems {
  IcfModel free_fall;  // built at t = 0
  IcfModel contact;    // built at t ≈ 0.6 s
  double t_contact = 0;
};

const ClutterProblems& Problems() {
  static const ClutterProblems* problems = [] {
    auto* p = new ClutterProblems;
    char error[1000] = "";
    mjModel* m = mj_loadXML(kClutter.c_str(), nullptr, error, sizeof(error));
    if (!m) {
      ADD_FAILURE() << "mj_loadXML(" << kClutter << "): " << error;
      return p;
    }
    mjData* d = mj_makeData(m);
    mj_resetDataKeyframe(m, d, 0);
    {
      auto stepper = Stepper::Create(m);
      if (!stepper.ok()) {
        ADD_FAILURE() << stepper.status();
      } else {
        Stepper& s = **stepper;
        absl::Status st = s.Step(d);
        EXPECT_TRUE(st.ok()) << st;
        p->free_fall = s.last_problem();
        while (st.ok() && d->time < 0.6 - 1e-9) st = s.Step(d);
        EXPECT_TRUE(st.ok()) << st;
        p->contact = s.last_problem();
        p->t_contact = d->time;
      }
    }
    mj_deleteData(d);
    mj_deleteModel(m);
    return p;
  }();
  return *problems;
}

int NumCliques(const IcfModel& m) { return static_cast<int>(m.clique_start.size()) - 1; }

// Cliques touched by contacts, and the number of contacts coupling two cliques.
void ContactCliques(const IcfModel& m, std::set<int>* touched, int* coupling) {
  *coupling = 0;
  for (int c = 0; c < m.contacts.size(); ++c) {
    std::set<int> q;
    for (int dof : m.contacts.rows.dofs(c)) q.insert(m.clique_of_dof[dof]);
    touched->insert(q.begin(), q.end());
    if (q.size() > 1) ++*coupling;
  }
}

double RelDiff(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return (a - b).norm() / a.norm();
}

Eigen::VectorXd Perturbed(const IcfModel& m, unsigned seed, double scale) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> n(0, 1);
  Eigen::VectorXd v = Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv);
  for (int i = 0; i < m.nv; ++i) v[i] += scale * n(gen);
  return v;
}

// Newton directions at v with both factorizations: |w1 − w2| / |w1|.
double DirectionDifference(const IcfModel& m, const Eigen::VectorXd& v) {
  IcfSolver solver;
  Eigen::VectorXd w1(m.nv), w2(m.nv), w3(m.nv);
  EXPECT_TRUE(solver.SearchDirection(m, v.data(), LinearSolverKind::kDense, w1.data()));
  EXPECT_TRUE(solver.SearchDirection(m, v.data(), LinearSolverKind::kIslands, w3.data()));
  EXPECT_LT(RelDiff(w1, w3), 1e-10);  // per-island dense blocks: same direction
  EXPECT_TRUE(solver.SearchDirection(m, v.data(), LinearSolverKind::kSparse, w2.data()));
  // Both solve H w = −∇ℓ.
  const Eigen::VectorXd g = Eigen::Map<const Eigen::VectorXd>(solver.data().grad.data(), m.nv);
  const Eigen::MatrixXd H = solver.Hessian(m, v.data());
  EXPECT_LE((H * w2 + g).norm(), 1e-9 * g.norm());
  EXPECT_GT(w1.norm(), 0.0);
  EXPECT_LT(g.dot(w2), 0.0);
  return RelDiff(w1, w2);
}

// Solves with both linear solvers from v0; checks convergence, iteration
// counts within ±1 and the solutions within the solver tolerance.
void CompareSolves(const IcfModel& m, const char* name) {
  SolverOptions od, os;
  od.tolerance = os.tolerance = 1e-8;
  od.linear_solver = LinearSolverKind::kDense;
  os.linear_solver = LinearSolverKind::kSparse;
  // The exact Hessian: the duals' start would follow the solver's last solve
  // (icf_solver.h, "Policy"), and the re-solve below must repeat the first.
  od.friction_dual = os.friction_dual = false;
  IcfSolver sd, ss;
  SolveStats std_, sts;
  Eigen::VectorXd vd(m.nv), vs(m.nv);
  ASSERT_EQ(sd.Solve(m, m.v0.data(), od, vd.data(), &std_), SolveStatus::kConverged);
  ASSERT_EQ(ss.Solve(m, m.v0.data(), os, vs.data(), &sts), SolveStatus::kConverged);
  EXPECT_LE(std::abs(std_.iterations - sts.iterations), 1);
  const double rel = RelDiff(vd, vs);
  EXPECT_LT(rel, 1e-6);
  // In the solver's own scaled norm |D⁻¹ Δv|, the difference is O(tol).
  double Dr = 0, dv = 0;
  for (int i = 0; i < m.nv; ++i) {
    Dr += m.r[i] * m.r[i] / m.M_diag[i];
    dv += m.M_diag[i] * (vd[i] - vs[i]) * (vd[i] - vs[i]);
  }
  const double tol = 1e-8 * std::max(1.0, std::sqrt(Dr));
  EXPECT_LT(std::sqrt(dv), 10 * tol);
  // Re-solving the same model on the same solver (pattern already analysed)
  // gives the same answer bit for bit.
  Eigen::VectorXd vs2(m.nv);
  SolveStats sts2;
  ASSERT_EQ(ss.Solve(m, m.v0.data(), os, vs2.data(), &sts2), SolveStatus::kConverged);
  EXPECT_EQ(vs2, vs);
  EXPECT_EQ(sts2.iterations, sts.iterations);
  std::printf("[ ls ] %-10s nv %d, cliques %d, contacts %d: Newton iterations dense %d / sparse %d, "
              "|v_dense - v_sparse|/|v| = %.2e, scaled %.2e (tol %.2e)\n",
              name, m.nv, NumCliques(m), m.contacts.size(), std_.iterations, sts.iterations, rel,
              std::sqrt(dv), tol);
}

TEST(LinearSolver, ClutterReachesAContactRichState) {
  const ClutterProblems& p = Problems();
  const IcfModel& m = p.contact;
  ASSERT_EQ(m.nv, 120);
  EXPECT_NEAR(p.t_contact, 0.6, 1e-9);
  EXPECT_EQ(NumCliques(m), 20);
  EXPECT_GT(m.contacts.size(), 20);
  std::set<int> touched;
  int coupling = 0;
  ContactCliques(m, &touched, &coupling);
  EXPECT_GE(static_cast<int>(touched.size()), 10);
  EXPECT_GE(coupling, 3);  // object–object contacts couple cliques
  // Several islands, none larger than kMaxIslandDofs: one dense block each.
  EXPECT_GT(m.num_islands, 1);
  EXPECT_LE(m.largest_island, icf::kMaxIslandDofs);
  EXPECT_EQ(icf::ChooseLinearSolver(m, LinearSolverKind::kAuto), LinearSolverKind::kIslands);
  std::printf("[ ls ] clutter at t = %.3f s: %d contacts, %zu cliques touched, %d coupling\n",
              p.t_contact, m.contacts.size(), touched.size(), coupling);
}

TEST(LinearSolver, DenseAndSparseGiveTheSameNewtonDirection) {
  const IcfModel& m = Problems().contact;
  ASSERT_GT(m.contacts.size(), 20);
  double worst = 0;
  const Eigen::VectorXd points[] = {Eigen::Map<const Eigen::VectorXd>(m.v0.data(), m.nv),
                                    Perturbed(m, 1, 1e-3), Perturbed(m, 2, 0.05)};
  for (const Eigen::VectorXd& v : points) {
    const double e = DirectionDifference(m, v);
    EXPECT_LT(e, 1e-10);
    worst = std::max(worst, e);
  }
  std::printf("[ ls ] contact problem: max |w_dense - w_sparse| / |w_dense| = %.2e\n", worst);
}

TEST(LinearSolver, DenseAndSparseAssembleTheSameHessian) {
  const IcfModel& m = Problems().contact;
  IcfSolver solver;
  const Eigen::VectorXd v = Perturbed(m, 3, 1e-2);
  solver.Evaluate(m, v.data());
  auto dense = icf::MakeLinearSolver(LinearSolverKind::kDense);
  auto sparse = icf::MakeLinearSolver(LinearSolverKind::kSparse);
  EXPECT_TRUE(dense->Prepare(m));
  EXPECT_TRUE(sparse->Prepare(m));
  ASSERT_TRUE(dense->AssembleAndFactor(m, solver.data()));
  ASSERT_TRUE(sparse->AssembleAndFactor(m, solver.data()));
  const Eigen::MatrixXd Hd = dense->DenseH(), Hs = sparse->DenseH();
  EXPECT_LE((Hd - Hs).cwiseAbs().maxCoeff(), 1e-14 * Hd.cwiseAbs().maxCoeff());
  // Solve with both.
  Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(m.nv, -1, 1), xd(m.nv), xs(m.nv);
  dense->Solve(b.data(), xd.data());
  sparse->Solve(b.data(), xs.data());
  EXPECT_LT(RelDiff(xd, xs), 1e-10);
  EXPECT_LE((Hd * xs - b).norm(), 1e-10 * b.norm());
  // One dense block per island: H has no entry across islands, so the
  // block-diagonal assembly is the whole H and solves the same system
  // (aliasing x = b allowed).
  auto islands = icf::MakeLinearSolver(LinearSolverKind::kIslands);
  EXPECT_TRUE(islands->Prepare(m));
  EXPECT_FALSE(islands->Prepare(m));  // same partition: no new "analysis"
  ASSERT_TRUE(islands->AssembleAndFactor(m, solver.data()));
  EXPECT_LE((Hd - islands->DenseH()).cwiseAbs().maxCoeff(), 1e-14 * Hd.cwiseAbs().maxCoeff());
  // DenseH does not test the islands kind's assembly: it rebuilds H with
  // AccumulateHessian, the dense kind's routine, while the factor is built
  // from H assembled straight into its storage (linear/islands.cc). Its
  // solves of H x = b do: they agree with the dense kind's for a few b.
  icf::ExpectSameSolves(islands.get(), dense.get(), m.nv);
  Eigen::VectorXd xi = b;
  islands->Solve(xi.data(), xi.data());
  EXPECT_LT(RelDiff(xd, xi), 1e-10);
}

TEST(LinearSolver, SparsePatternIsAnalysedOnce) {
  // IcfSolver does not expose its factor's analysis counter, so this drives
  // a LinearSolver directly the way IcfSolver::Solve does (Prepare once per
  // solve, then assemble/factor per Newton iteration).
  const IcfModel& m = Problems().contact;
  IcfSolver solver;
  auto sparse = icf::MakeLinearSolver(LinearSolverKind::kSparse);
  EXPECT_TRUE(sparse->Prepare(m));
  EXPECT_EQ(sparse->analyses(), 1);
  const auto id = sparse->pattern_id();
  for (int solve = 0; solve < 3; ++solve) {
    EXPECT_FALSE(sparse->Prepare(m));
    solver.Evaluate(m, Perturbed(m, 10 + solve, 1e-2).data());
    ASSERT_TRUE(sparse->AssembleAndFactor(m, solver.data()));
  }
  EXPECT_EQ(sparse->analyses(), 1);
  EXPECT_EQ(sparse->pattern_id(), id);
}

using test_util::WithContacts;

// Distinct pairs of cliques coupled by a contact.
std::set<std::pair<int, int>> CoupledPairs(const IcfModel& m) {
  std::set<std::pair<int, int>> pairs;
  for (int c = 0; c < m.contacts.size(); ++c) {
    std::set<int> q;
    for (int dof : m.contacts.rows.dofs(c)) q.insert(m.clique_of_dof[dof]);
    for (int a : q)
      for (int b : q)
        if (a < b) pairs.insert({a, b});
  }
  return pairs;
}

TEST(LinearSolver, SparsePatternReuseWhenContactsChange) {
  // Contacts coupling cliques come and go between solves; the sparse factor
  // keeps a superset pattern while it stays within 2·(current pairs) + 16
  // (linear_solver.h). Directions must be exact whichever pattern is in use.
  const IcfModel& full = Problems().contact;
  auto is_coupling = [&](int c) {
    const auto dofs = full.contacts.rows.dofs(c);
    return full.clique_of_dof[dofs.front()] != full.clique_of_dof[dofs.back()];
  };
  int seen = 0;
  const IcfModel half = WithContacts(full, [&](int c) {
    return !is_coupling(c) || (seen++ % 2 == 0);
  });
  const IcfModel none = WithContacts(full, [&](int c) { return !is_coupling(c); });
  const size_t n_full = CoupledPairs(full).size(), n_half = CoupledPairs(half).size();
  ASSERT_LT(n_half, n_full);
  ASSERT_GT(n_half, 0u);
  ASSERT_LE(n_full, 2 * n_half + 16);  // so `full` stays a reusable superset of `half`
  EXPECT_EQ(CoupledPairs(none).size(), 0u);

  // `sequence`'s internal sparse factor sees every model in turn; `probe`
  // receives the same Prepare calls and exposes the analysis counter.
  IcfSolver sequence;
  auto probe = icf::MakeLinearSolver(LinearSolverKind::kSparse);
  const IcfModel* order[] = {&full, &half, &full, &half, &full, &none, &half, &full};
  const int analyses_after[] = {1, 1, 1, 1, 1, -1, -1, -1};  // -1: not asserted
  double worst = 0;
  for (int k = 0; k < 8; ++k) {
    const IcfModel& m = *order[k];
    probe->Prepare(m);
    if (analyses_after[k] >= 0) {
      EXPECT_EQ(probe->analyses(), analyses_after[k]) << "step " << k;
    }
    const Eigen::VectorXd v = Perturbed(m, 5 + k, 1e-2);
    Eigen::VectorXd w_seq(m.nv), w_dense(m.nv);
    ASSERT_TRUE(sequence.SearchDirection(m, v.data(), LinearSolverKind::kSparse, w_seq.data()));
    IcfSolver fresh;
    ASSERT_TRUE(fresh.SearchDirection(m, v.data(), LinearSolverKind::kDense, w_dense.data()));
    const double e = RelDiff(w_dense, w_seq);
    EXPECT_LT(e, 1e-10) << "step " << k << ", contacts " << m.contacts.size();
    worst = std::max(worst, e);
  }
  std::printf("[ ls ] changing contact sets (%zu/%zu/0 coupled pairs): max direction difference "
              "%.2e, analyses %d\n", n_full, n_half, worst, probe->analyses());
}

TEST(LinearSolver, DenseAndSparseConvergeToTheSameVelocities) {
  CompareSolves(Problems().contact, "contact");
}

TEST(LinearSolver, ManyIndependentTreesBeforeContact) {
  // At t = 0 the 20 free bodies are in the air: H is block diagonal over the
  // cliques (no coupled pair at all).
  const IcfModel& m = Problems().free_fall;
  ASSERT_EQ(m.nv, 120);
  EXPECT_EQ(NumCliques(m), 20);
  EXPECT_EQ(m.contacts.size(), 0);
  EXPECT_EQ(m.num_islands, 20);
  EXPECT_EQ(m.largest_island, 6);
  EXPECT_EQ(icf::ChooseLinearSolver(m, LinearSolverKind::kAuto), LinearSolverKind::kIslands);
  double worst = 0;
  for (unsigned seed = 0; seed < 2; ++seed) {
    const Eigen::VectorXd v = Perturbed(m, seed, seed ? 0.1 : 0.0);
    const double e = DirectionDifference(m, v);
    EXPECT_LT(e, 1e-10);
    worst = std::max(worst, e);
  }
  std::printf("[ ls ] free fall: max |w_dense - w_sparse| / |w_dense| = %.2e\n", worst);
  CompareSolves(m, "free fall");
}

}  // namespace
}  // namespace mjcenic
