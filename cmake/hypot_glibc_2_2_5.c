/* Wheels only (cmake/Install.cmake): glibc 2.35 gave hypot a new symbol version,
 * the same computation without the old SVID error-handling wrapper. Linked with
 * -Wl,--wrap=hypot, every call to hypot comes here and goes to the version every
 * x86_64 glibc has, so the wheel needs glibc 2.34 (its bundled libraries'
 * floor), not 2.35 (docs/install.md, "Platform tag"). */
__asm__(".symver mjcenic_hypot_glibc_2_2_5, hypot@GLIBC_2.2.5");
double mjcenic_hypot_glibc_2_2_5(double x, double y);

__attribute__((visibility("hidden"))) double __wrap_hypot(double x, double y) {
  return mjcenic_hypot_glibc_2_2_5(x, y);
}
