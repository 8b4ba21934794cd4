/* Wheels only (cmake/Install.cmake): GCC 12's libstdc++ gave
 * std::condition_variable::wait(std::unique_lock<std::mutex>&) a new symbol
 * version, GLIBCXX_3.4.30, which only manylinux_2_35 allows. Linked with
 * -Wl,--wrap=<its mangled name>, every call comes here and goes to the
 * GLIBCXX_3.4.11 version that every libstdc++ since GCC 4.4 exports (the
 * same wait; the newer one only lets a thread cancellation unwind through
 * it), so the wheel keeps its bundled libraries' tag, glibc 2.34
 * (docs/install.md, "Platform tag"). */
__asm__(".symver mjcenic_cv_wait_glibcxx_3_4_11, "
        "_ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE@GLIBCXX_3.4.11");
void mjcenic_cv_wait_glibcxx_3_4_11(void* cv, void* lock);

__attribute__((visibility("hidden"))) void
__wrap__ZNSt18condition_variable4waitERSt11unique_lockISt5mutexE(void* cv, void* lock) {
  mjcenic_cv_wait_glibcxx_3_4_11(cv, lock);
}
