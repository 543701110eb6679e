// What the x86-64 CPU this process runs on can execute -- features the CPU has *and* the OS
// enables (the AVX and AVX-512 register state) -- as glibc already found out at start-up
// (<sys/platform/x86.h>, glibc 2.33+). No CPUID of our own: in a VM every CPUID traps to the
// hypervisor, and GCC's __builtin_cpu_supports / target_clones link libgcc's CPU probe, a
// constructor that ran ~15 more of them in every process (issue 9: start-up). Without that header
// (another libc; clang, which rejects its C _Bool in C++) the same answers come from
// __builtin_cpu_supports; off x86-64 every feature is false.
#pragma once

namespace meshrun::cpu {

struct Features {
  bool avx2 = false, fma = false, f16c = false, bmi2 = false;
  bool avx512f = false, avx512vl = false, avx512dq = false, avx512bw = false;
};

// Read once, on first use.
const Features& features();
// AVX2 and FMA both: what a function compiled with __attribute__((target("avx2,fma"))) may run on
// (the vector std::fma of tensor/ and interp/ loops).
inline bool has_avx2_fma() {
  static const bool yes = features().avx2 && features().fma;
  return yes;
}

}  // namespace meshrun::cpu
