// From MuJoCo's per-contact solref/solimp to the point-contact stiffness k and
// Hunt–Crossley dissipation d of ICF (docs/mujoco-mapping.md §5.7). Pure math:
// callers pass MuJoCo's numbers, nothing here reads mjModel.
#pragma once

namespace mjcenic::adapter {

// MuJoCo's impedance d(r) ∈ [1e-4, 0.9999] at violation |r| (solimp has 5 entries).
double Impedance(const double solimp[5], double violation);

// Reference stiffness K [1/s²] and damping B [1/s] of MuJoCo's constraint law
// for solref (standard (τ, ζ) or direct (−s, −c)); refsafe clamps τ ≥ 2·timestep.
void ReferenceGains(const double solref[2], double dmax, double timestep, bool refsafe,
                    double* K, double* B);

struct PointContactParameters {
  double k = 0;       // stiffness [N/m]
  double d = 0;       // Hunt–Crossley dissipation [s/m]
  double x_nom = 0;   // penetration carrying m_c·g_ref [m]
  bool capped = false;
};

// Recipe of mapping §5.7: m_c effective mass [kg], lambda pyramidal-cone
// stiffness factor (1 for elliptic/frictionless), g_ref reference acceleration,
// omega_max cap on sqrt(k/m_c) [rad/s] (≤ 0: no cap).
PointContactParameters MapContact(const double solref[2], const double solimp[5], double m_c,
                                  double lambda, double timestep, bool refsafe, double g_ref,
                                  double omega_max);

// MuJoCo's separation rate at penetration x: a row deep in penetration
// (reference acceleration −B v − K d(x) x) stops pushing at the separating
// speed v = x·d(x)K/B; returns d(x)K/B [1/s] (+∞ if B = 0). Hunt–Crossley
// stops at v = 1/d, so d ≤ B/(d(x) K x) keeps MuJoCo's push-out speed
// (cenic-math §4.11).
double SeparationRate(const double solref[2], const double solimp[5], double timestep,
                      bool refsafe, double x);

// MuJoCo's static (secant) contact stiffness per unit effective mass at
// penetration x: λ K d(x)² / (1 − d(x)) [1/s²], capped at omega_max² (≤ 0: no cap).
double SecantStiffnessPerMass(const double solref[2], const double solimp[5], double lambda,
                              double timestep, bool refsafe, double omega_max, double x);

}  // namespace mjcenic::adapter
