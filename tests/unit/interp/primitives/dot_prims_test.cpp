// The interpreter's primitives, one family per file: dot_general (lib/interp/dot.cpp): batched,
// either operand's contraction side, vectors, integers, empty arrays, and its errors. Expected
// values are worked out by hand or computed by JAX 0.10.2 on CPU (jax.lax on the same float32
// inputs, pasted with 9 significant digits, so they are JAX's bits).
#include "unit/interp/primitives/prim_test_util.hpp"

BOOST_AUTO_TEST_SUITE(dot)

json dims_json(std::vector<int> lc, std::vector<int> rc, std::vector<int> lb = {},
               std::vector<int> rb = {}) {
  return {{"contracting", {lc, rc}}, {"batch", {lb, rb}}, {"preferred_element_type", nullptr}};
}

BOOST_AUTO_TEST_CASE(batched_matches_jax) {
  // lax.dot_general(a (2,3,4), b (2,4,5), (((2,),(1,)),((0,),(0,)))) on JAX 0.10.2 CPU.
  const std::vector<float> a{
      2.10367751f,  1.06844974f,  -2.37900519f,  -0.455406249f, 2.49635839f,  -0.187877804f,
      -2.4479444f,  0.818686068f, 2.23697782f,   -1.39513063f,  -1.87746811f, 1.87893355f,
      1.39328766f,  -2.23796844f, -0.816587806f, 2.44839406f,   0.185663611f, -2.49623752f,
      0.457589328f, 2.37832189f,  -1.07045662f,  -2.10247684f,  1.61224186f,  1.68701994f};
  const std::vector<float> b{
      2.27324367f,   -1.32459033f, -1.93191123f,  1.82242262f,    1.46229303f,   -2.19923949f,
      -0.895573199f, 2.43001866f,  0.269384116f,  -2.49943614f,   0.374693036f,  2.40288186f,
      -0.993889213f, -2.14676762f, 1.54708755f,   1.74810004f,    -1.99755371f,  -1.23335254f,
      2.31537509f,   0.636705816f, -2.47944713f,  0.00222039199f, 2.47887492f,   -0.640999198f,
      -2.31369662f,  1.23721325f,  1.99488032f,   -1.75127196f,   -1.54359674f,  2.14903998f,
      0.989812851f,  -2.40410376f, -0.370301813f, 2.4995265f,     -0.273798645f, -2.42897153f,
      0.899717867f,  2.19712424f,  -1.46589255f,  -1.81937981f};
  const Value c =
      run1(make("dot_general", dims_json({2}, {1}, {0}, {0})), {F({2, 3, 4}, a), F({2, 4, 5}, b)});
  check_bits(c, {2, 3, 5},
             {0.74490267f,  -8.55015564f, 1.45837855f,  8.17434788f,  -3.56481814f,  6.60193682f,
              -10.6558838f, -3.85603261f, 11.6495409f,  0.854073942f, 10.7345123f,   -9.97824287f,
              -8.16322803f, 12.0818167f,  5.04987717f,  -12.978776f,  -0.295360148f, 13.0548868f,
              -3.06874108f, -12.2641068f, -8.87266922f, -3.9395566f,  9.88785076f,   1.39156628f,
              -10.2464418f, -2.44897723f, -6.55472136f, 4.13805723f,  5.48838949f,   -5.55235434f});
}

BOOST_AUTO_TEST_CASE(lhs_contracted_first_and_rhs_contracted_last_match_jax) {
  // (4,3) . (4,5) contracting (0, 0): the matmul_tn layout, unmoved.
  const Value tn =
      run1(make("dot_general", dims_json({0}, {0})),
           {F({4, 3},
              {0.352800012f, -2.49980807f, 0.291373014f, 2.42472458f, -0.916197836f, -2.18863034f,
               1.48018384f, 1.80720341f, -1.94588017f, -1.30577147f, 2.28236318f, 0.717631638f}),
            F({4, 5}, {-1.89200628f,  -1.37671387f,  2.24677014f,   0.797745883f,  -2.4523406f,
                       -0.165804744f, 2.49506664f,   -0.477146447f, -2.37211132f,  1.08841336f,
                       2.09163904f,   -1.62740576f,  -1.67227459f,  2.05833244f,   1.1418649f,
                       -2.35257864f,  -0.535631359f, 2.49060488f,   -0.106170088f, -2.46324587f})});
  check_bits(tn, {3, 5},
             {5.09840965f, 3.85469699f, -6.09172297f, -2.28492761f, 6.68052292f, 3.29214025f,
              -3.00801277f, -2.51700926f, 3.6566186f, 1.57473898f, -5.94675827f, -3.07956505f,
              6.74032831f, 1.34265721f, -7.08631563f});
  // (3,4) . (5,4) contracting (1, 1): x @ w.T.
  const Value nt =
      run1(make("dot_general", dims_json({1}, {1})),
           {F({3, 4}, {-2.39731073f, 1.01212478f, 2.13649726f, -1.56267667f, -1.73381269f,
                       2.00946116f, 1.21599674f, -2.32280993f, -0.617434144f, 2.48191595f,
                       -0.0221282728f, -2.47621369f}),
            F({5, 4}, {-0.698538721f, 2.4704206f,   0.0619385652f, -2.48638153f, 0.578774571f,
                       2.3372376f,    -1.18105495f, -2.0328927f,   1.70490909f,  1.59355652f,
                       -2.11555099f,  -1.04840231f, 2.38571262f,   0.433630377f, -2.4974544f,
                       0.209936142f,  2.44335628f,  -0.839562178f, -2.22701025f, 1.4134382f})});
  check_bits(nt, {3, 5},
             {8.19272995f, 1.63150692f, -5.35587406f, -10.944273f, -13.673974f, 12.0260582f,
              6.97896576f, 0.108933195f, -6.78955364f, -11.9145756f, 12.7181196f, 10.5034828f,
              5.54528618f, -0.861368656f, -7.04302931f});
}

BOOST_AUTO_TEST_CASE(vectors_outer_integers_and_empty) {
  check_bits(run1(make("dot_general", dims_json({0}, {0})), {F({3}, {1, 2, 3}), F({3}, {4, 5, 6})}),
             {}, {32});
  check_bits(run1(make("dot_general", dims_json({}, {})), {F({2}, {1, 2}), F({3}, {1, 10, 100})}),
             {2, 3}, {1, 10, 100, 2, 20, 200});
  // Batch dims not in front: lhs (3, 2) batch 1, rhs (2, 3) batch 0, contracting lhs 0 / rhs 1.
  check_bits(run1(make("dot_general", dims_json({0}, {1}, {1}, {0})),
                  {F({3, 2}, {1, 2, 3, 4, 5, 6}), F({2, 3}, {1, 1, 1, 2, 2, 2})}),
             {2}, {9, 24});
  const Value i =
      run1(make("dot_general", dims_json({1}, {0})), {I({1, 2}, {3, 4}), I({2, 1}, {5, 6})});
  BOOST_CHECK(i.dtype == DType::kI32);
  check_bits(i, {1, 1}, {39});
  check_bits(run1(make("dot_general", dims_json({1}, {0})), {F({2, 0}, {}), F({0, 2}, {})}), {2, 2},
             {0, 0, 0, 0});
}

BOOST_AUTO_TEST_CASE(dot_general_errors) {
  CHECK_ERROR(
      infer_error(make("dot_general", dims_json({1}, {0})), {F32({2, 3}), F32({4, 2})}),
      "dot_general requires contracting dimensions to have the same shape, got (3,) and (4,)");
  CHECK_ERROR(infer_error(make("dot_general", dims_json({2}, {1}, {0}, {0})),
                          {F32({2, 3, 4}), F32({3, 4, 5})}),
              "batch dimensions to have the same shape, got (2,) and (3,)");
  CHECK_ERROR(infer_error(make("dot_general", dims_json({2}, {0})), {F32({2, 3}), F32({3, 2})}),
              "less than the number of axes of the lhs");
  CHECK_ERROR(
      infer_error(make("dot_general", dims_json({1}, {0}, {1}, {0})), {F32({2, 3}), F32({3, 2})}),
      "distinct");
  CHECK_ERROR(
      infer_error(make("dot_general", dims_json({1}, {0}, {0}, {})), {F32({2, 3}), F32({3, 2})}),
      "equal numbers of lhs_batch and rhs_batch");
  CHECK_ERROR(infer_error(make("dot_general", {{"contracting", {{1}}}, {"batch", {{}, {}}}}),
                          {F32({2, 3}), F32({3, 2})}),
              "[[lhs axes], [rhs axes]]");
  // Operands of two dtypes are JAX's (the higher dtype: jnp.take_along_axis's one_hot mode);
  // two bools are not.
  CHECK_ERROR(infer_error(make("dot_general", dims_json({1}, {0})),
                          {T(DType::kBool, {2, 3}), T(DType::kBool, {3, 2})}),
              "dot_general does not accept dtype bool");
  CHECK_ERROR(infer_error(make("dot_general", {{"batch", {{}, {}}}}), {F32({2, 3}), F32({3, 2})}),
              "param 'contracting' missing");
}

BOOST_AUTO_TEST_SUITE_END()
