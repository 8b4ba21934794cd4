#include "mjcenic/integrator/flight.h"

#include <algorithm>

#include "mjcenic/icf/icf_model.h"

namespace mjcenic {

namespace {
int QposSize(int type) {
  return type == mjJNT_FREE ? 7 : type == mjJNT_BALL ? 4 : 1;
}
}  // namespace

Flight::Flight(const mjModel* m)
    : m_(m),
      row_(m->nv),
      tree_row_(std::max(static_cast<int>(m->ntree), 1)),
      dof_(m->nv),
      w_(m->nv),
      q_(m->nq) {}

void Flight::MarkRows(const icf::IcfModel* a, const icf::IcfModel* b) {
  std::fill(row_.begin(), row_.end(), 0);
  a->MarkRowDofs(row_.data());
  if (b) b->MarkRowDofs(row_.data());
}

bool Flight::Mark(const icf::IcfModel& a, const icf::IcfModel& b) {
  MarkRows(&a, &b);
  std::fill(tree_row_.begin(), tree_row_.end(), 0);
  for (int i = 0; i < m_->nv; ++i)
    if (row_[i]) tree_row_[m_->dof_treeid[i]] = 1;
  any_ = false;
  for (int i = 0; i < m_->nv; ++i) {
    dof_[i] = !tree_row_[m_->dof_treeid[i]];
    any_ |= dof_[i] != 0;
  }
  return any_;
}

bool Flight::HoldsFor(const icf::IcfModel& m) {
  MarkRows(&m, nullptr);
  for (int i = 0; i < m_->nv; ++i)
    if (dof_[i] && row_[i]) return false;
  return true;
}

void Flight::HalfStepPositions(double h, const double* q_t, const double* v_t,
                               const double* v_hat, double* q) {
  for (int i = 0; i < m_->nv; ++i) w_[i] = 0.25 * (3 * v_hat[i] + v_t[i]);
  std::copy(q_t, q_t + m_->nq, q_.begin());
  mj_integratePos(m_, q_.data(), w_.data(), h);
  for (int j = 0; j < m_->njnt; ++j) {
    if (!dof_[m_->jnt_dofadr[j]]) continue;
    const int a = m_->jnt_qposadr[j];
    std::copy(q_.begin() + a, q_.begin() + a + QposSize(m_->jnt_type[j]), q + a);
  }
}

}  // namespace mjcenic
