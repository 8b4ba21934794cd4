// Preconditioned conjugate gradients for the Newton direction (kPcg):
// H block-sparse over the cliques, symmetric block Gauss–Seidel
// preconditioner (cenic-math §8.4). Checked on a real ICF
// problem of one large island of small trees (343 balls on slide joints,
// packed so that every ball touches its neighbours: 1029 dofs, one island),
// where `auto` chooses it: the direction solves H w = −∇ℓ to the requested
// relative residual and equals the dense direction when the residual is
// tight; full solves reach the same velocities as CHOLMOD within the Newton
// tolerance; a stepper run agrees with the sparse solver's.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include "mjcenic/icf/linear/linear_solver.h"
#include "mjcenic/icf/icf_model.h"
#include "mjcenic/icf/icf_solver.h"
#include "mjcenic/integrator/stepper.h"
#include "icf/with_contacts.h"
#include "test_util.h"

namespace mjcenic {
namespace {

using icf::IcfModel;
using icf::IcfSolver;
using icf::LinearSolverKind;
using icf::SolverOptions;
using icf::SolveStats;
using icf::SolveStatus;
using test_util::DataPtr;
using test_util::ModelPtr;

// The scaled distance |D⁻¹ (a − b)| (D = diag(M)^(−1/2), §8.2) of two
// solutions, and the Newton tolerance ε max(1, |D r|) it is compared with.
struct Gap {
  double dv, tol;
};
Gap ScaledGap(const IcfModel& m, const double* a, const double* b, double tolerance) {
  double Dr = 0, dv = 0;
  for (int i = 0; i < m.nv; ++i) {
    Dr += m.r[i] * m.r[i] / m.M_diag[i];
    dv += m.M_diag[i] * (a[i] - b[i]) * (a[i] - b[i]);
  }
  return {std::sqrt(dv), tolerance * std::max(1.0, std::sqrt(Dr))};
}

constexpr int kSide = 7;  // 7 x 7 x 7 balls, 3 slide dofs each

// Balls of radius 0.02 m on a 0.039 m grid (1 mm overlap with each
// neighbour), the bottom layer 1 mm into the floor. condim 1: frictionless
// contacts (G = g e₀e₀ᵀ, rank one), and two balls with a second sphere geom
// (frictionless on one, with friction on the other), so that the coupling
// blocks of their neighbour pairs hold two contacts.
ModelPtr Pile(int condim = 3) {
  std::string xml = R"(<mujoco><option timestep="0.005"/><worldbody>
    <geom type="plane" size="1 1 0.1"/>)";
  char buf[400];
  for (int i = 0; i < kSide; ++i)
    for (int j = 0; j < kSide; ++j)
      for (int k = 0; k < kSide; ++k) {
        std::snprintf(buf, sizeof(buf),
                      R"(<body pos="%g %g %g"><joint type="slide" axis="1 0 0"/>
                      <joint type="slide" axis="0 1 0"/><joint type="slide" axis="0 0 1"/>
                      <geom type="sphere" size="0.02" mass="0.05" condim="%d"/>)",
                      0.039 * i, 0.039 * j, 0.019 + 0.039 * k, condim);
        xml += buf;
        const bool twice = condim == 1 && i == j && j == k && (i == 0 || i == 3);
        if (twice)
          xml += i == 0 ? R"(<geom type="sphere" size="0.02" mass="0.01" condim="1"/>)"
                        : R"(<geom type="sphere" size="0.02" mass="0.01" condim="3"/>)";
        xml += "</body>";
      }
  xml += "</worldbody></mujoco>";
  std::string err;
  ModelPtr m = test_util::ModelFromXml(xml, &err);
  EXPECT_NE(m, nullptr) << err;
  return m;
}

// The ICF problem of the pile's first step.
IcfModel* MakePileProblem(int condim) {
    auto* p = new IcfModel;
    ModelPtr m = Pile(condim);
    if (!m) return p;
    DataPtr d(mj_makeData(m.get()));
    mj_forward(m.get(), d.get());
    StepperOptions o;
    o.mode = Mode::kFixed;
    auto s = Stepper::Create(m.get(), o);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return p;
    EXPECT_TRUE((*s)->Step(d.get()).ok());
    *p = (*s)->last_problem();
    return p;
}

const IcfModel& PileProblem() {
  static const IcfModel* problem = MakePileProblem(3);
  return *problem;
}

// The frictionless pile (condim 1): every ball–ball coupling block is the
// rank-one −g j jᵀ of one contact, except the two explicit pairs' blocks.
const IcfModel& FrictionlessPileProblem() {
  static const IcfModel* problem = MakePileProblem(1);
  return *problem;
}

double RelDiff(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return (a - b).norm() / a.norm();
}

TEST(Pcg, AutoChoosesItForOneLargeIslandOfSmallTrees) {
  const IcfModel& m = PileProblem();
  ASSERT_EQ(m.nv, 3 * kSide * kSide * kSide);
  std::printf("  pile: nv %d, contacts %d, islands %d (largest %d)\n", m.nv, m.contacts.size(),
              m.num_islands, m.largest_island);
  EXPECT_EQ(m.num_islands, 1);
  EXPECT_GE(m.contacts.size(), 3 * kSide * kSide * (kSide - 1));  // every neighbour pair
  EXPECT_EQ(icf::ChooseLinearSolver(m, LinearSolverKind::kAuto), LinearSolverKind::kPcg);
}

void ExpectDirectionSolvesTheNewtonSystem(const IcfModel& m) {
  ASSERT_GT(m.nv, 0);
  IcfSolver solver;
  // Dense reference direction and H at v0.
  Eigen::VectorXd w_dense(m.nv);
  ASSERT_TRUE(solver.SearchDirection(m, m.v0.data(), LinearSolverKind::kDense, w_dense.data()));
  const Eigen::VectorXd g = Eigen::Map<const Eigen::VectorXd>(solver.data().grad.data(), m.nv);
  const Eigen::MatrixXd H = solver.Hessian(m, m.v0.data());
  solver.Evaluate(m, m.v0.data());
  // The residual PCG can reach in double precision: the round-off floor
  // κ(H)·ε of a solve with H (any method); it stops at max(tol, floor).
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(H);
  const double kappa = eig.eigenvalues().maxCoeff() / eig.eigenvalues().minCoeff();
  const double floor = kappa * std::numeric_limits<double>::epsilon();
  std::printf("  kappa(H) %.3g, round-off floor %.3g\n", kappa, floor);
  for (double tol : {1e-2, 1e-4, 1e-12}) {
    auto pcg = icf::MakeLinearSolver(LinearSolverKind::kPcg, tol, 1000);
    pcg->Prepare(m);
    ASSERT_TRUE(pcg->AssembleAndFactor(m, solver.data()));
    // The matrix it multiplies by is H.
    EXPECT_LE((pcg->DenseH() - H).cwiseAbs().maxCoeff(), 1e-12 * H.cwiseAbs().maxCoeff());
    Eigen::VectorXd w(m.nv);
    const Eigen::VectorXd b = -g;
    pcg->Solve(b.data(), w.data());
    const double residual = (H * w + g).norm() / g.norm();
    std::printf("  pcg tolerance %.0e: %d iterations, residual %.2e, |w - w_dense|/|w_dense| "
                "%.2e\n", tol, pcg->last_iterations(), residual, RelDiff(w_dense, w));
    EXPECT_LE(residual, std::max(tol, floor));
    EXPECT_LT(g.dot(w), 0.0);  // a descent direction at any tolerance
    EXPECT_LT(pcg->last_iterations(), 200);
    if (tol < 1e-10) {
      EXPECT_LT(RelDiff(w_dense, w), 1e-9);
    }
  }
}

TEST(Pcg, DirectionSolvesTheNewtonSystem) { ExpectDirectionSolvesTheNewtonSystem(PileProblem()); }

// Rank-one coupling blocks (cenic-math §8.4): the frictionless pile, with
// two blocks of two contacts each, has the dense direction too.
TEST(Pcg, RankOneCouplingBlocksSolveTheNewtonSystem) {
  const IcfModel& m = FrictionlessPileProblem();
  ASSERT_EQ(m.nv, 3 * kSide * kSide * kSide);
  IcfSolver solver;
  solver.Evaluate(m, m.v0.data());
  // Closed ball–ball contacts with a rank-one G, and the second geoms'
  // contacts (4 of ball (0,0,0), 6 of ball (3,3,3)) beyond one per
  // neighbour pair and floor ball.
  int rank_one = 0, with_friction = 0;
  for (int c = 0; c < m.contacts.size(); ++c) {
    const double* G = solver.data().contacts.G.data() + 9 * c;
    bool zero = true, one = G[0] != 0;
    for (int q = 1; q < 9; ++q) zero = zero && G[q] == 0, one = one && G[q] == 0;
    rank_one += one;
    with_friction += !zero && !one;
  }
  std::printf("  frictionless pile: %d contacts, %d closed with rank-one G, %d with friction\n",
              m.contacts.size(), rank_one, with_friction);
  EXPECT_GE(rank_one, 3 * kSide * kSide * (kSide - 1) / 2);
  EXPECT_GE(m.contacts.size(), 3 * kSide * kSide * (kSide - 1) + kSide * kSide + 10);
  ExpectDirectionSolvesTheNewtonSystem(m);
}

TEST(Pcg, SolvesReachTheSparseSolversVelocities) {
  const IcfModel& m = PileProblem();
  ASSERT_GT(m.nv, 0);
  SolverOptions os, op;
  os.linear_solver = LinearSolverKind::kSparse;
  op.linear_solver = LinearSolverKind::kPcg;
  IcfSolver ss, sp;
  SolveStats sts, stp;
  Eigen::VectorXd vs(m.nv), vp(m.nv);
  ASSERT_EQ(ss.Solve(m, m.v0.data(), os, vs.data(), &sts), SolveStatus::kConverged);
  ASSERT_EQ(sp.Solve(m, m.v0.data(), op, vp.data(), &stp), SolveStatus::kConverged);
  const auto [dv, tol] = ScaledGap(m, vs.data(), vp.data(), os.tolerance);
  std::printf("  Newton iterations sparse %d / pcg %d (%d CG iterations), scaled |dv| %.2e "
              "(tol %.2e)\n", sts.iterations, stp.iterations, stp.linear_iterations,
              dv, tol);
  EXPECT_LT(dv, 10 * tol);
  EXPECT_LE(stp.iterations, sts.iterations + 2);
  EXPECT_GT(stp.linear_iterations, 0);
  EXPECT_EQ(sts.linear_iterations, 0);
}

// Preconditioned CG on H x = b from x = 0 with z = precondition(r), written
// with Eigen as the reference the tests compare PcgSolver against: the
// iteration count to the relative residual `tol`, and the solution in *x.
template <class Precondition>
int ReferencePcgIterations(const Eigen::MatrixXd& H, const Eigen::VectorXd& b, double tol,
                           Precondition&& precondition, Eigen::VectorXd* x) {
  *x = Eigen::VectorXd::Zero(H.rows());
  Eigen::VectorXd r = b, z = precondition(r), p = z;
  double rz = r.dot(z);
  int it = 0;
  while (r.norm() > tol * b.norm() && it < 1000) {
    const Eigen::VectorXd q = H * p;
    const double a = rz / p.dot(q);
    *x += a * p;
    r -= a * q;
    z = precondition(r);
    const double rz_new = r.dot(z);
    p = z + (rz_new / rz) * p;
    rz = rz_new;
    ++it;
  }
  return it;
}

// Block-Jacobi PCG (z = B⁻¹ r with B the 3×3 ball blocks of H): its
// iteration count to `tol`.
int BlockJacobiIterations(const Eigen::MatrixXd& H, const Eigen::VectorXd& b, double tol) {
  const int n = static_cast<int>(H.rows());
  Eigen::MatrixXd Binv = Eigen::MatrixXd::Zero(n, n);
  for (int c = 0; c < n; c += 3) Binv.block(c, c, 3, 3) = H.block(c, c, 3, 3).inverse();
  Eigen::VectorXd x;
  return ReferencePcgIterations(
      H, b, tol, [&](const Eigen::VectorXd& r) { return Eigen::VectorXd(Binv * r); }, &x);
}

TEST(Pcg, GaussSeidelPreconditionerHalvesTheIterationsOfBlockJacobi) {
  const IcfModel& m = PileProblem();
  ASSERT_GT(m.nv, 0);
  IcfSolver solver;
  const Eigen::MatrixXd H = solver.Hessian(m, m.v0.data());
  solver.Evaluate(m, m.v0.data());
  const Eigen::VectorXd b = -Eigen::Map<const Eigen::VectorXd>(solver.data().grad.data(), m.nv);
  for (double tol : {1e-2, 1e-4, 1e-8}) {
    auto pcg = icf::MakeLinearSolver(LinearSolverKind::kPcg, tol, 1000);
    pcg->Prepare(m);
    ASSERT_TRUE(pcg->AssembleAndFactor(m, solver.data()));
    Eigen::VectorXd w(m.nv);
    pcg->Solve(b.data(), w.data());
    const int jacobi = BlockJacobiIterations(H, b, tol);
    std::printf("  tolerance %.0e: symmetric Gauss-Seidel %d iterations, block Jacobi %d\n", tol,
                pcg->last_iterations(), jacobi);
    EXPECT_LE((H * w - b).norm(), tol * b.norm());
    // Measured 33 vs 71 at 1e-4 (cenic-math §8.4): at most 60 % of block Jacobi's.
    EXPECT_LE(pcg->last_iterations(), 0.6 * jacobi);
  }
}

// PCG with the symmetric block Gauss–Seidel preconditioner
// P = (B + L) B⁻¹ (B + L)ᵀ in its textbook form (z = P⁻¹ r, one product with
// H per iteration), written here densely with Eigen as the reference for the
// split form PcgSolver runs (cenic-math §8.4): the iteration count to `tol`
// and the solution in *x.
int TextbookSgsIterations(const IcfModel& m, const Eigen::MatrixXd& H, const Eigen::VectorXd& b,
                          double tol, Eigen::VectorXd* x) {
  const int n = static_cast<int>(H.rows());
  Eigen::MatrixXd E = Eigen::MatrixXd::Zero(n, n), B = Eigen::MatrixXd::Zero(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      const int ci = m.clique_of_dof[i], cj = m.clique_of_dof[j];
      if (ci >= cj) E(i, j) = H(i, j);
      if (ci == cj) B(i, j) = H(i, j);
    }
  const Eigen::PartialPivLU<Eigen::MatrixXd> lu(E);
  auto precondition = [&](const Eigen::VectorXd& r) {
    const Eigen::VectorXd y = lu.solve(r);  // E⁻¹ r
    return Eigen::VectorXd(lu.transpose().solve(B * y));  // E⁻ᵀ B E⁻¹ r
  };
  return ReferencePcgIterations(H, b, tol, precondition, x);
}

void ExpectTextbookIterates(const IcfModel& m) {
  ASSERT_GT(m.nv, 0);
  IcfSolver solver;
  const Eigen::MatrixXd H = solver.Hessian(m, m.v0.data());
  solver.Evaluate(m, m.v0.data());
  const Eigen::VectorXd b = -Eigen::Map<const Eigen::VectorXd>(solver.data().grad.data(), m.nv);
  for (double tol : {1e-2, 1e-4, 1e-8}) {
    auto pcg = icf::MakeLinearSolver(LinearSolverKind::kPcg, tol, 1000);
    pcg->Prepare(m);
    ASSERT_TRUE(pcg->AssembleAndFactor(m, solver.data()));
    pcg->Bind(m, solver.data());
    Eigen::VectorXd w(m.nv), w_ref(m.nv);
    pcg->Solve(b.data(), w.data());
    const int ref = TextbookSgsIterations(m, H, b, tol, &w_ref);
    std::printf("  tolerance %.0e: split form %d iterations, textbook %d, |w - w_ref|/|w_ref| "
                "%.2e\n", tol, pcg->last_iterations(), ref, RelDiff(w_ref, w));
    EXPECT_EQ(pcg->last_iterations(), ref);
    EXPECT_LE((H * w - b).norm(), tol * b.norm());
    EXPECT_LT(RelDiff(w_ref, w), 1e-9);
  }
}

// The split form (CG on E⁻¹HE⁻ᵀ, §8.4) has the iterates of the textbook
// preconditioned CG in exact arithmetic: the same iteration count to each
// tolerance and the same direction up to round-off; also with rank-one
// coupling blocks swept as x (yᵀ v).
TEST(Pcg, SplitFormTakesTheTextbookIterates) { ExpectTextbookIterates(PileProblem()); }
TEST(Pcg, SplitFormWithRankOneBlocksTakesTheTextbookIterates) {
  ExpectTextbookIterates(FrictionlessPileProblem());
}

TEST(Pcg, ForcingCutsConjugateGradientIterationsNotTheSolution) {
  const IcfModel& m = PileProblem();
  ASSERT_GT(m.nv, 0);
  SolverOptions os, o0, o1;
  os.linear_solver = LinearSolverKind::kSparse;
  o0.linear_solver = o1.linear_solver = LinearSolverKind::kPcg;
  // Forcing (§8.4) is the solver's policy for a tight tolerance (o1's 1e-8):
  // o0, at a looser tolerance, solves every direction to pcg_tolerance.
  o0.tolerance = 2 * IcfSolver::kTightTolerance;
  IcfSolver ss, s0, s1;
  SolveStats sts, st0, st1;
  Eigen::VectorXd vs(m.nv), v0(m.nv), v1(m.nv);
  ASSERT_EQ(ss.Solve(m, m.v0.data(), os, vs.data(), &sts), SolveStatus::kConverged);
  ASSERT_EQ(s0.Solve(m, m.v0.data(), o0, v0.data(), &st0), SolveStatus::kConverged);
  ASSERT_EQ(s1.Solve(m, m.v0.data(), o1, v1.data(), &st1), SolveStatus::kConverged);
  const auto [dv, tol] = ScaledGap(m, vs.data(), v1.data(), os.tolerance);
  std::printf("  CG iterations %d -> %d with forcing, Newton %d -> %d (sparse %d), scaled |dv| "
              "%.2e (tol %.2e)\n", st0.linear_iterations, st1.linear_iterations, st0.iterations,
              st1.iterations, sts.iterations, dv, tol);
  EXPECT_LT(dv, 10 * tol);
  EXPECT_LT(st1.linear_iterations, st0.linear_iterations);
  EXPECT_LE(st1.iterations, st0.iterations + 2);
}

void ExpectRebindingMultipliesByTheCurrentHessian(const IcfModel& m) {
  ASSERT_GT(m.nv, 0);
  SolverOptions os;
  os.linear_solver = LinearSolverKind::kSparse;
  IcfSolver ref, solver;
  Eigen::VectorXd v1(m.nv);
  ASSERT_EQ(ref.Solve(m, m.v0.data(), os, v1.data(), nullptr), SolveStatus::kConverged);
  const Eigen::MatrixXd H0 = ref.Hessian(m, m.v0.data());
  const Eigen::MatrixXd H1 = ref.Hessian(m, v1.data());
  ASSERT_GT((H1 - H0).norm(), 1e-3 * H0.norm());  // contacts changed state
  const double tol = 1e-10;
  auto pcg = icf::MakeLinearSolver(LinearSolverKind::kPcg, tol, 1000);
  solver.Evaluate(m, m.v0.data());
  pcg->Prepare(m);
  ASSERT_TRUE(pcg->AssembleAndFactor(m, solver.data()));
  const Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(m.nv, -1.0, 1.0);
  Eigen::VectorXd w(m.nv);
  pcg->Bind(m, solver.data());
  pcg->Solve(b.data(), w.data());
  const double r0 = (H0 * w - b).norm() / b.norm();
  solver.Evaluate(m, v1.data());
  pcg->Bind(m, solver.data());
  pcg->Solve(b.data(), w.data());
  const double r1 = (H1 * w - b).norm() / b.norm();
  std::printf("  residual with the assembled H(v0) %.2e, with H(v1) after rebinding %.2e\n", r0,
              r1);
  EXPECT_LE(r0, tol);
  EXPECT_LE(r1, tol);
}

// Assembled at v0, then bound to a later iterate:
// the product must be that iterate's H, not the assembled one; the textbook
// form's preconditioner then has the rank-one blocks written out densely.
TEST(Pcg, RebindingMultipliesByTheCurrentHessian) {
  ExpectRebindingMultipliesByTheCurrentHessian(PileProblem());
}
TEST(Pcg, RebindingWithRankOneBlocks) {
  ExpectRebindingMultipliesByTheCurrentHessian(FrictionlessPileProblem());
}

// Within one Prepare, assembled at v0, at a stirred v1 where ball–ball
// contacts of the frictionless pile open, and at v0 again: coupling blocks
// go rank-one → empty (a pair's only contact opens), dense → rank-one (one
// of a two-contact pair opens) and back, so the sweeps' block lists of the
// previous assembly are stale at the next (cenic-math §8.4, "Rank-one
// coupling blocks"). Every split-form direction must be the dense direction.
TEST(Pcg, ReassemblyAtANewIterateTakesItsBlocks) {
  const IcfModel& m = FrictionlessPileProblem();
  ASSERT_GT(m.nv, 0);
  IcfSolver ref, solver;
  Eigen::VectorXd v1(m.nv);
  for (int i = 0; i < m.nv; ++i) v1[i] = m.v0[i] + 0.3 * std::sin(1.0 + 7.0 * i);  // m/s
  // Active contacts (nonzero G) at v0 and at v1.
  auto active = [&](const double* v) {
    ref.Evaluate(m, v);
    std::vector<bool> on(m.contacts.size());
    for (int c = 0; c < m.contacts.size(); ++c) {
      const double* G = ref.data().contacts.G.data() + 9 * c;
      for (int q = 0; q < 9; ++q) on[c] = on[c] || G[q] != 0;
    }
    return on;
  };
  const std::vector<bool> on0 = active(m.v0.data()), on1 = active(v1.data());
  int opened = 0;
  for (int c = 0; c < m.contacts.size(); ++c) opened += on0[c] && !on1[c];
  std::printf("  of %d contacts, %d open between v0 and v1\n", m.contacts.size(), opened);
  ASSERT_GT(opened, 0);
  const double tol = 1e-12;
  auto pcg = icf::MakeLinearSolver(LinearSolverKind::kPcg, tol, 1000);
  pcg->Prepare(m);
  Eigen::VectorXd w(m.nv), w_dense(m.nv);
  const double* iterates[] = {m.v0.data(), v1.data(), m.v0.data()};
  for (const double* v : iterates) {
    ASSERT_TRUE(ref.SearchDirection(m, v, LinearSolverKind::kDense, w_dense.data()));
    solver.Evaluate(m, v);
    ASSERT_TRUE(pcg->AssembleAndFactor(m, solver.data()));
    pcg->Bind(m, solver.data());
    const Eigen::VectorXd b = -Eigen::Map<const Eigen::VectorXd>(solver.data().grad.data(), m.nv);
    pcg->Solve(b.data(), w.data());
    std::printf("  at %s: %d iterations, |w - w_dense|/|w_dense| %.2e\n",
                v == m.v0.data() ? "v0" : "v1", pcg->last_iterations(), RelDiff(w_dense, w));
    EXPECT_LT(RelDiff(w_dense, w), 1e-9);
  }
}

// A solver keeps its kinds' layouts across solves while Prepare reports the
// same pattern. With the same cliques but other coupled pairs (ball–ball
// contacts gone), the last assembly's coupling blocks are indexed by the old
// pairs: Prepare must report the change, so the reused solver lays them out
// again and reaches the velocities of a fresh one.
TEST(Pcg, PrepareReportsAChangedCouplingPattern) {
  const IcfModel& full = FrictionlessPileProblem();
  ASSERT_GT(full.nv, 0);
  int seen = 0;
  const IcfModel fewer = test_util::WithContacts(full, [&](int c) {
    const auto dofs = full.contacts.rows.dofs(c);
    const bool coupling = full.clique_of_dof[dofs.front()] != full.clique_of_dof[dofs.back()];
    return !coupling || seen++ % 3 != 0;  // drop every third ball–ball contact
  });
  ASSERT_LT(fewer.contacts.size(), full.contacts.size());
  auto pcg = icf::MakeLinearSolver(LinearSolverKind::kPcg, 1e-10, 1000);
  pcg->Prepare(full);
  EXPECT_FALSE(pcg->Prepare(full));
  EXPECT_TRUE(pcg->Prepare(fewer));
  EXPECT_FALSE(pcg->Prepare(fewer));
  EXPECT_TRUE(pcg->Prepare(full));

  SolverOptions o;
  o.linear_solver = LinearSolverKind::kPcg;
  o.friction_dual = false;  // (its start depends on the last solve's iterations)
  IcfSolver reused, fresh;
  Eigen::VectorXd v(full.nv), v_fresh(full.nv);
  SolveStats st, st_fresh;
  ASSERT_EQ(reused.Solve(full, full.v0.data(), o, v.data(), &st), SolveStatus::kConverged);
  const SolveStatus status = reused.Solve(fewer, fewer.v0.data(), o, v.data(), &st);
  ASSERT_EQ(fresh.Solve(fewer, fewer.v0.data(), o, v_fresh.data(), &st_fresh),
            SolveStatus::kConverged);
  const auto [dv, tol] = ScaledGap(fewer, v.data(), v_fresh.data(), o.tolerance);
  std::printf("  fewer contacts, reused / fresh solver: %d / %d Newton iterations, %d / %d "
              "factorizations, scaled |v - v_fresh| %.2e (tol %.2e)\n", st.iterations,
              st_fresh.iterations, st.factorizations, st_fresh.factorizations, dv, tol);
  EXPECT_EQ(status, SolveStatus::kConverged);
  EXPECT_EQ(st.factorizations, st_fresh.factorizations);
  EXPECT_LT(dv, 10 * tol);
}

TEST(Pcg, FixedModePileNeedsFewNewtonIterations) {
  // The stepper's fixed mode on the pile dropped with a stir (PCG under
  // auto once it is one island; warm start, primal-dual friction and forcing
  // of cenic-math §8.1, §8.4): measured 3.77 Newton iterations per solve over
  // 0.3 s (60 steps).
  ModelPtr m = Pile();
  ASSERT_TRUE(m);
  DataPtr d(mj_makeData(m.get()));
  for (int i = 0; i < m->nv; ++i) {
    if (i % 3 == 2) d->qpos[i] = 0.03 + 0.002 * (i / 3 % kSide);
    d->qvel[i] = 0.1 * std::sin(1.0 + i);
  }
  mj_forward(m.get(), d.get());
  StepperOptions o;
  o.mode = Mode::kFixed;
  auto s = Stepper::Create(m.get(), o);
  ASSERT_TRUE(s.ok()) << s.status();
  for (int k = 0; k < 60; ++k) ASSERT_TRUE((*s)->Step(d.get()).ok());
  const auto& st = (*s)->stats();
  const double per_solve = static_cast<double>(st.newton_iterations) / st.solves;
  std::printf("  fixed mode, 60 steps: %.2f Newton iterations per solve\n", per_solve);
  EXPECT_EQ(st.solves, 60);
  EXPECT_LE(per_solve, 4.25);  // measured 3.77 + a quarter iteration
}

TEST(Pcg, StepperRunsAgreeWithTheSparseSolver) {
  ModelPtr m = Pile();
  ASSERT_TRUE(m);
  Eigen::VectorXd q[2];
  long steps[2];
  for (int k = 0; k < 2; ++k) {
    DataPtr d(mj_makeData(m.get()));
    // Dropped from 3 cm with a sideways stir: separate trees first (islands),
    // one island after the landing (pcg under auto).
    for (int i = 0; i < m->nv; ++i) {
      if (i % 3 == 2) d->qpos[i] = 0.03 + 0.002 * (i / 3 % kSide);
      d->qvel[i] = 0.1 * std::sin(1.0 + i);
    }
    mj_forward(m.get(), d.get());
    StepperOptions o;
    o.solver.linear_solver = k ? mjcenic::LinearSolverKind::kPcg : mjcenic::LinearSolverKind::kSparse;
    auto s = Stepper::Create(m.get(), o);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->AdvanceTo(d.get(), 0.2).ok());
    q[k] = Eigen::Map<const Eigen::VectorXd>(d->qpos, m->nq);
    steps[k] = (*s)->stats().steps;
  }
  const double diff = (q[0] - q[1]).cwiseAbs().maxCoeff();
  std::printf("  0.2 s: steps sparse %ld / pcg %ld, max |q_sparse - q_pcg| = %.2e m\n", steps[0],
              steps[1], diff);
  // Both follow the same trajectory to far below the accuracy (1e-3 of the
  // ball size, 2e-5 m).
  EXPECT_GT(steps[0], 10);
  EXPECT_LT(diff, 2e-6);
}

}  // namespace
}  // namespace mjcenic
