// Test helper: a copy of an ICF problem with fewer contacts.
#pragma once

#include <algorithm>

#include "mjcenic/icf/icf_model.h"

namespace mjcenic::test_util {

// A copy of `m` keeping only the contacts for which keep(c) is true.
template <class Keep>
icf::IcfModel WithContacts(const icf::IcfModel& m, Keep keep) {
  icf::IcfModel out = m;
  out.contacts.Clear();
  const icf::ContactPool& p = m.contacts;
  for (int c = 0; c < p.size(); ++c) {
    if (!keep(c)) continue;
    const int i = out.contacts.Add(p.rows.dofs(c), p.fe0[c], p.k[c], p.d[c], p.mu_s[c],
                                   p.mu_d[c], p.Rt[c]);
    std::copy(p.rows.J(c), p.rows.J(c) + 3 * p.rows.ndof(c), out.contacts.rows.J(i));
    for (int q = 0; q < 3; ++q) out.contacts.bias[3 * i + q] = p.bias[3 * c + q];
  }
  out.Finalize(m.h);
  return out;
}

}  // namespace mjcenic::test_util
