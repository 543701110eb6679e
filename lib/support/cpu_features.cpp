#include "support/cpu_features.hpp"

// glibc's header is C: clang (clang-tidy) rejects its _Bool in C++, and takes the fallback.
#if defined(__x86_64__) && !defined(__clang__) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#if defined(CPU_FEATURE_ACTIVE)  // glibc 2.33+ (2.32 had CPU_FEATURE_USABLE)
#define MESHRUN_GLIBC_CPU_FEATURES 1
#endif
#endif
#endif
#if defined(__x86_64__) && !defined(MESHRUN_GLIBC_CPU_FEATURES)
#include <cpuid.h>
#endif

namespace meshrun::cpu {

namespace {
Features read_features() {
  Features f;
#if defined(MESHRUN_GLIBC_CPU_FEATURES)
  f.avx2 = CPU_FEATURE_ACTIVE(AVX2);
  f.fma = CPU_FEATURE_ACTIVE(FMA);
  f.f16c = CPU_FEATURE_ACTIVE(F16C);
  f.bmi2 = CPU_FEATURE_ACTIVE(BMI2);
  f.avx512f = CPU_FEATURE_ACTIVE(AVX512F);
  f.avx512vl = CPU_FEATURE_ACTIVE(AVX512VL);
  f.avx512dq = CPU_FEATURE_ACTIVE(AVX512DQ);
  f.avx512bw = CPU_FEATURE_ACTIVE(AVX512BW);
#elif defined(__x86_64__)
  __builtin_cpu_init();
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // F16C: CPUID leaf 1, ECX bit 29
  f.f16c = __builtin_cpu_supports("avx") && __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 &&
           (ecx & bit_F16C) != 0;
  f.bmi2 = __builtin_cpu_supports("bmi2");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
#endif
  return f;
}
}  // namespace

const Features& features() {
  static const Features f = read_features();
  return f;
}

}  // namespace meshrun::cpu
