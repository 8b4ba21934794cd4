#include "mjcenic/adapter/contact_parameters.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mjcenic::adapter {

namespace {
constexpr double kMinImp = 1e-4, kMaxImp = 0.9999, kMinVal = 1e-15;
}

double Impedance(const double solimp[5], double violation) {
  const double d0 = std::clamp(solimp[0], kMinImp, kMaxImp);
  const double dw = std::clamp(solimp[1], kMinImp, kMaxImp);
  const double width = std::max(kMinVal, solimp[2]);
  const double mid = std::clamp(solimp[3], kMinImp, kMaxImp);
  const double power = std::max(1.0, solimp[4]);
  if (d0 == dw || width <= kMinVal) return 0.5 * (d0 + dw);
  const double x = std::abs(violation) / width;
  if (x >= 1) return dw;
  if (x <= 0) return d0;
  double y;
  if (power == 1) {
    y = x;
  } else if (x <= mid) {
    y = std::pow(x, power) / std::pow(mid, power - 1);
  } else {
    y = 1 - std::pow(1 - x, power) / std::pow(1 - mid, power - 1);
  }
  return d0 + y * (dw - d0);
}

void ReferenceGains(const double solref_in[2], double dmax, double timestep, bool refsafe,
                    double* K, double* B) {
  double solref[2] = {solref_in[0], solref_in[1]};
  // Mixed signs are replaced by MuJoCo's default.
  if ((solref[0] > 0) != (solref[1] > 0) && !(solref[0] <= 0 && solref[1] <= 0)) {
    solref[0] = 0.02;
    solref[1] = 1;
  }
  if (solref[0] > 0) {
    const double tau = refsafe ? std::max(solref[0], 2 * timestep) : solref[0];
    const double zeta = solref[1];
    *K = 1.0 / (dmax * dmax * tau * tau * zeta * zeta);
    *B = 2.0 / (dmax * tau);
  } else {
    *K = -solref[0] / (dmax * dmax);
    *B = -solref[1] / dmax;
  }
}

PointContactParameters MapContact(const double solref[2], const double solimp[5], double m_c,
                                  double lambda, double timestep, bool refsafe, double g_ref,
                                  double omega_max) {
  PointContactParameters out;
  const double dw = std::clamp(solimp[1], kMinImp, kMaxImp);
  double K, B;
  ReferenceGains(solref, dw, timestep, refsafe, &K, &B);
  // Static load per unit effective mass at penetration x: λ K d(x)² x / (1 − d(x)).
  auto load = [&](double x) {
    const double d = Impedance(solimp, x);
    return lambda * K * d * d * x / (1 - d);
  };
  double lo = 0, hi = 1e-6;
  for (int i = 0; i < 200 && load(hi) < g_ref; ++i) hi *= 2;
  for (int i = 0; i < 100; ++i) {
    const double mid = 0.5 * (lo + hi);
    (load(mid) < g_ref ? lo : hi) = mid;
  }
  const double x_star = 0.5 * (lo + hi);
  const double d = Impedance(solimp, x_star);
  double k_per_mass = lambda * K * d * d / (1 - d);
  if (omega_max > 0 && k_per_mass > omega_max * omega_max) {
    k_per_mass = omega_max * omega_max;
    out.capped = true;
  }
  out.k = m_c * k_per_mass;
  const double omega = std::sqrt(k_per_mass);
  const double zeta_eff = K > 0 ? B / (2 * std::sqrt(K)) : 1.0;
  const double tau_d = 2 * zeta_eff / omega;  // Kelvin–Voigt time scale
  out.x_nom = g_ref / k_per_mass;
  out.d = tau_d / out.x_nom;                  // d_HC = τ_d / x_nom
  return out;
}

double SeparationRate(const double solref[2], const double solimp[5], double timestep,
                      bool refsafe, double x) {
  const double dw = std::clamp(solimp[1], kMinImp, kMaxImp);
  double K, B;
  ReferenceGains(solref, dw, timestep, refsafe, &K, &B);
  return B > 0 ? Impedance(solimp, x) * K / B : std::numeric_limits<double>::infinity();
}

double SecantStiffnessPerMass(const double solref[2], const double solimp[5], double lambda,
                              double timestep, bool refsafe, double omega_max, double x) {
  const double dw = std::clamp(solimp[1], kMinImp, kMaxImp);
  double K, B;
  ReferenceGains(solref, dw, timestep, refsafe, &K, &B);
  const double d = Impedance(solimp, x);
  const double k = lambda * K * d * d / (1 - d);
  return omega_max > 0 ? std::min(k, omega_max * omega_max) : k;
}

}  // namespace mjcenic::adapter
