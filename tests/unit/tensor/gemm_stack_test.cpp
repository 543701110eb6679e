// gemm on a small thread stack (issue #32.2): a product of a few rows of K needs no 32 KB panel
// of B on the device thread's stack. That panel put every device's first small product (the first
// documented example's are 1x1x1) a page deeper into a fresh stack: one more page fault per
// device in every start-up. Here such products run on a 32 KB stack, which the big panel overflows.
#include <boost/test/unit_test.hpp>

#include <pthread.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "tensor/gemm.hpp"

using namespace meshrun;

namespace {

struct Product {
  std::size_t m, k, n;
  std::vector<float> a, b, c;
};

void* run_product(void* arg) {
  auto* p = static_cast<Product*>(arg);
  gemm(Gemm::dense(p->a.data(), p->b.data(), p->c.data(), p->m, p->k, p->n));
  return nullptr;
}

// Runs c = a @ b on a thread of `stack_bytes` of stack; a stack overflow ends the test binary.
void run_on_small_stack(Product& p, std::size_t stack_bytes) {
  pthread_attr_t attr;
  BOOST_REQUIRE_EQUAL(pthread_attr_init(&attr), 0);
  BOOST_REQUIRE_EQUAL(pthread_attr_setstacksize(&attr, stack_bytes), 0);
  pthread_t thread;
  const int made = pthread_create(&thread, &attr, run_product, &p);
  pthread_attr_destroy(&attr);
  BOOST_REQUIRE_EQUAL(made, 0);
  BOOST_REQUIRE_EQUAL(pthread_join(thread, nullptr), 0);
}

}  // namespace

BOOST_AUTO_TEST_CASE(small_products_run_on_a_32_kb_stack_on_every_target) {
  for (const std::string& target : gemm_targets()) {
    BOOST_REQUIRE(gemm_use_target(target));
    for (const auto& [m, k, n] : {std::array<std::size_t, 3>{1, 1, 1}, {3, 4, 5}, {7, 2, 70}}) {
      BOOST_TEST_CONTEXT("target " << target << ", " << m << "x" << k << "x" << n) {
        Product p{m,
                  k,
                  n,
                  std::vector<float>(m * k),
                  std::vector<float>(k * n),
                  std::vector<float>(m * n, -1.0f)};
        for (std::size_t i = 0; i < p.a.size(); ++i) p.a[i] = float(i % 5) - 2.0f;
        for (std::size_t i = 0; i < p.b.size(); ++i) p.b[i] = float(i % 3) + 0.5f;
        run_on_small_stack(p, 32 * 1024);
        for (std::size_t i = 0; i < m; ++i)
          for (std::size_t j = 0; j < n; ++j) {
            float want = 0.0f;
            for (std::size_t q = 0; q < k; ++q)
              want = std::fma(p.a[i * k + q], p.b[q * n + j], want);
            BOOST_TEST(p.c[i * n + j] == want);
          }
      }
    }
  }
  gemm_use_target("");
}
