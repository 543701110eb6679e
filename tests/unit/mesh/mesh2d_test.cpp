// Meshes of two axes. Collectives over one axis, a tuple, and both orders of a tuple on a
// {data: 2, model: 4} mesh (and 4x2, 3x2), each result computed here as a serial left fold over
// the group's members in the documented order (rank order; a tuple: row-major over its axes);
// device numbering and block placement as jax.make_mesh; mlp-train's cases on meshes 1x8, 2x4, 4x2,
// 8x1 and 1x1 against their independently computed `expected` and against each other; --exact
// output bit-identical across runs; its structural rules against deliberately wrong programs.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "io/case_reader.hpp"
#include "mesh/device.hpp"
#include "mesh/injection.hpp"
#include "mesh/mesh.hpp"
#include "programs/program.hpp"
#include "support/run_meshrun.hpp"
#include "support/errors.hpp"
#include "trace/structure.hpp"
#include "trace/trace.hpp"

using namespace meshrun;
using meshrun::testing::kSource;

namespace {

// A value unique to (device, element), exact in float32, so a wrong member or order shows.
float value(int device, std::size_t i) {
  return static_cast<float>(device) * 0.375f + static_cast<float>(i) * 1.0e-3f + 0.1f;
}

// The serial left fold of value(m, i) over `members` in the given order.
float fold(const std::vector<int>& members, std::size_t i) {
  float s = 0.0f;
  bool first = true;
  for (int m : members) {
    s = first ? value(m, i) : s + value(m, i);
    first = false;
  }
  return s;
}

// The devices of `device`'s group over axes `tuple` (positions into {data, model}), in rank
// order -- row-major over the tuple -- written out from the numbering rule d = i * M + j.
std::vector<int> group_of(int device, int data, int model, const std::vector<int>& tuple) {
  const int i = device / model, j = device % model;
  std::vector<int> members;
  if (tuple == std::vector<int>{1}) {
    for (int jj = 0; jj < model; ++jj) members.push_back(i * model + jj);
  } else if (tuple == std::vector<int>{0}) {
    for (int ii = 0; ii < data; ++ii) members.push_back(ii * model + j);
  } else if (tuple == std::vector<int>{0, 1}) {
    for (int ii = 0; ii < data; ++ii)
      for (int jj = 0; jj < model; ++jj) members.push_back(ii * model + jj);
  } else {  // (model, data)
    for (int jj = 0; jj < model; ++jj)
      for (int ii = 0; ii < data; ++ii) members.push_back(ii * model + jj);
  }
  return members;
}

const std::vector<std::pair<std::vector<int>, AxisNames>> kTuples = {
    {{1}, AxisNames("model")},
    {{0}, AxisNames("data")},
    {{0, 1}, AxisNames{"data", "model"}},
    {{1, 0}, AxisNames{"model", "data"}},
};

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && (a.data.empty() || std::memcmp(a.data.data(), b.data.data(),
                                                              a.size() * sizeof(float)) == 0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(collectives_on_groups)

BOOST_AUTO_TEST_CASE(psum_pmean_all_gather_per_group_in_documented_order) {
  for (const auto& shape : {std::pair{2, 4}, std::pair{4, 2}, std::pair{3, 2}, std::pair{1, 8}}) {
    // Plain variables, not a structured binding: clang 14 lets no lambda capture one.
    const int data = shape.first, model = shape.second;
    Mesh mesh(MeshShape{{"data", data}, {"model", model}});
    const int n = data * model;
    std::vector<std::string> errors(static_cast<std::size_t>(n));
    mesh.run([&](Device& dev) {
      const int d = dev.index();
      std::string& err = errors[static_cast<std::size_t>(d)];
      constexpr std::size_t kElems = 7;
      Tensor x({kElems});
      for (std::size_t i = 0; i < kElems; ++i) x.data[i] = value(d, i);
      if (dev.axis_index("data") != d / model || dev.axis_index("model") != d % model)
        err += "coordinates; ";
      for (const auto& [tuple, axes] : kTuples) {
        const std::vector<int> members = group_of(d, data, model, tuple);
        const auto size = static_cast<int>(members.size());
        if (dev.axis_size(axes) != size) err += "axis_size " + axes.str() + "; ";
        const int rank =
            static_cast<int>(std::find(members.begin(), members.end(), d) - members.begin());
        if (dev.axis_index(axes) != rank) err += "axis_index " + axes.str() + "; ";
        const Tensor s = dev.psum(x, axes), m = dev.pmean(x, axes), g = dev.all_gather(x, axes);
        for (std::size_t i = 0; i < kElems; ++i) {
          const float want = fold(members, i);
          if (s.data[i] != want) err += "psum " + axes.str() + "; ";
          if (m.data[i] != want / static_cast<float>(size)) err += "pmean " + axes.str() + "; ";
          for (int r = 0; r < size; ++r)
            if (g.data[static_cast<std::size_t>(r) * kElems + i] !=
                value(members[static_cast<std::size_t>(r)], i))
              err += "all_gather " + axes.str() + "; ";
        }
        // ppermute: a shift by one rank within the group.
        std::vector<std::pair<int, int>> shift;
        shift.reserve(static_cast<std::size_t>(size));
        for (int r = 0; r < size; ++r) shift.emplace_back(r, (r + 1) % size);
        const Tensor p = dev.ppermute(x, axes, shift);
        const int from = members[static_cast<std::size_t>((rank + size - 1) % size)];
        if (p.data[0] != value(from, 0)) err += "ppermute " + axes.str() + "; ";
      }
    });
    for (int d = 0; d < n; ++d)
      BOOST_TEST(
          errors[static_cast<std::size_t>(d)].empty(),
          data << "x" << model << " device " << d << ": " << errors[static_cast<std::size_t>(d)]);
  }
}

// pmax and pmin over one axis, a tuple and both orders of it: the fold from -inf (+inf) with
// std::max (std::min) over the group's members in rank order (communicator.hpp). The inputs make
// that order show: element 0 is +0.0 or -0.0 by the device's parity (the group's first member's
// zero wins), element 1 NaN on device 1 and 6 (passed over; all NaN on a group of them gives
// -inf / +inf), element 2 the same value on every device but device 3 (its bits decide
// nothing), the rest distinct values. Staged (7 elements) and direct (5003).
BOOST_AUTO_TEST_CASE(pmax_pmin_per_group_in_documented_order) {
  auto input = [](int device, std::size_t i) {
    if (i == 0) return device % 2 ? -0.0f : 0.0f;
    if (i == 1) return device == 1 || device == 6 ? NAN : value(device, i);
    if (i == 2) return device == 3 ? 2.5f : 1.0f;
    return (device % 3 == 0 ? -1.0f : 1.0f) * value(device, i);
  };
  auto fold_max_min = [&](const std::vector<int>& members, std::size_t i, bool max) {
    float acc = max ? -INFINITY : INFINITY;
    for (int m : members) acc = max ? std::max(acc, input(m, i)) : std::min(acc, input(m, i));
    return acc;
  };
  auto bits = [](float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
  };
  for (const auto& shape : {std::pair{2, 4}, std::pair{4, 2}, std::pair{3, 2}, std::pair{2, 1}}) {
    const int data = shape.first, model = shape.second;
    Mesh mesh(MeshShape{{"data", data}, {"model", model}});
    const int n = data * model;
    std::vector<std::string> errors(static_cast<std::size_t>(n));
    mesh.run([&](Device& dev) {
      const int d = dev.index();
      std::string& err = errors[static_cast<std::size_t>(d)];
      for (const std::size_t elems : {std::size_t{7}, std::size_t{5003}}) {
        Tensor x({elems});
        for (std::size_t i = 0; i < elems; ++i) x.data[i] = input(d, i);
        for (const auto& [tuple, axes] : kTuples) {
          const std::vector<int> members = group_of(d, data, model, tuple);
          const Tensor mx = dev.pmax(x, axes), mn = dev.pmin(x, axes);
          std::vector<float> buf = x.data;
          dev.pmax_inplace(buf, axes);
          for (std::size_t i = 0; i < elems; ++i) {
            if (bits(mx.data[i]) != bits(fold_max_min(members, i, true)) ||
                bits(buf[i]) != bits(mx.data[i])) {
              err += "pmax " + axes.str() + " element " + std::to_string(i) + "; ";
              break;
            }
            if (bits(mn.data[i]) != bits(fold_max_min(members, i, false))) {
              err += "pmin " + axes.str() + " element " + std::to_string(i) + "; ";
              break;
            }
          }
        }
      }
    });
    for (int d = 0; d < n; ++d)
      BOOST_TEST(
          errors[static_cast<std::size_t>(d)].empty(),
          data << "x" << model << " device " << d << ": " << errors[static_cast<std::size_t>(d)]);
  }
}

BOOST_AUTO_TEST_CASE(unknown_axis_is_an_input_error_naming_the_mesh_axes) {
  Mesh mesh(MeshShape{{"data", 2}, {"model", 2}});
  try {
    mesh.run([](Device& dev) { dev.psum(Tensor({1}), AxisNames{"data", "pipe"}); });
    BOOST_TEST(false, "accepted an unknown axis");
  } catch (const DeviceError& e) {
    BOOST_TEST(std::string(e.what()).find(
                   "unknown axis name 'pipe' (the mesh's axes are ('data', 'model'))") !=
                   std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_CASE(blocks_follow_jax_numbering) {
  // x (4, 8) under P('data', 'model') on data=2, model=4: device 5 = (1, 1) holds rows [2:4),
  // columns [2:4); under P(('data', 'model'),) on a vector of 8, device d holds entry d.
  const MeshShape mesh{{"data", 2}, {"model", 4}};
  Tensor g({4, 8});
  for (std::size_t i = 0; i < g.size(); ++i) g.data[i] = static_cast<float>(i);
  const Tensor b = block_of(g, P{"data", "model"}, mesh, 5);
  BOOST_TEST((b.shape == Shape{2, 2}));
  BOOST_TEST((b.data == std::vector<float>{18, 19, 26, 27}));
  Tensor v({8});
  for (std::size_t i = 0; i < 8; ++i) v.data[i] = static_cast<float>(i);
  for (int d = 0; d < 8; ++d)
    BOOST_TEST((block_of(v, P{{"data", "model"}}, mesh, d).data[0] == static_cast<float>(d)));
  BOOST_TEST((block_of(v, P{{"model", "data"}}, mesh, 5).data[0] == 3.0f));  // model 1 * 2 + data 1
  BOOST_TEST((P{{"data", "model"}}.str() == "P(('data', 'model'),)"));
  std::vector<Tensor> blocks;
  blocks.reserve(8);
  for (int d = 0; d < 8; ++d) blocks.push_back(block_of(g, P{"data", "model"}, mesh, d));
  BOOST_TEST(same_bits(assemble(blocks, P{"data", "model"}, mesh), g));
}

// Arrays of rank 3 and 4 (issue 48.4), a spec on any of their dimensions: each device's block is
// the elements whose index along every split dimension falls in its range, as an index-by-index
// reference says, and the blocks assemble back to the array.
BOOST_AUTO_TEST_CASE(blocks_of_any_rank_follow_jax_numbering) {
  const MeshShape mesh{{"data", 2}, {"model", 4}};
  const std::vector<std::pair<Shape, P>> cases = {
      {{3, 4, 5}, P{None, "data"}},
      {{2, 3, 8}, P{None, None, "model"}},
      {{4, 3, 8}, P{"data", None, "model"}},
      {{8, 2, 3}, P{{"model", "data"}}},
      {{2, 4, 4, 3}, P{None, "model", "data"}},
      {{4, 2, 8, 2}, P{"data", None, "model"}},
      {{2, 2, 2}, P{}},
  };
  for (const auto& [shape, spec] : cases) {
    Tensor g(shape);
    for (std::size_t i = 0; i < g.size(); ++i) g.data[i] = static_cast<float>(i);
    const Shape bs = block_shape(shape, spec, mesh);
    std::vector<Tensor> blocks;
    for (int d = 0; d < 8; ++d) {
      const Tensor b = block_of(g, spec, mesh, d);
      BOOST_TEST((b.shape == bs), spec.str() << " device " << d);
      BOOST_REQUIRE(b.size() == shape_size(bs));
      // Element k of the block: its index in the block, offset by the block's origin.
      for (std::size_t k = 0; k < b.size(); ++k) {
        std::size_t rest = k, flat = 0, stride = 1;
        for (std::size_t dim = shape.size(); dim-- > 0;) {
          const std::size_t at = rest % bs[dim];
          rest /= bs[dim];
          const auto block = static_cast<std::size_t>(shard_index(spec, dim, mesh, d));
          flat += (block * bs[dim] + at) * stride;
          stride *= shape[dim];
        }
        if (b.data[k] != static_cast<float>(flat)) {
          BOOST_ERROR(spec.str() << " device " << d << " element " << k << ": " << b.data[k]
                                 << ", expected " << flat);
          break;
        }
      }
      blocks.push_back(b);
    }
    BOOST_TEST(same_bits(assemble(blocks, spec, mesh), g), spec.str());
  }
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(mlp_train)

namespace {

const std::vector<MeshShape> kMeshes = {{{"data", 1}, {"model", 8}},
                                        {{"data", 2}, {"model", 4}},
                                        {{"data", 4}, {"model", 2}},
                                        {{"data", 8}, {"model", 1}},
                                        {{"data", 1}, {"model", 1}}};

std::vector<std::string> mlp_cases() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(kSource + "/cases/mlp-train"))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<Tensor> run_on(const ProgramDef& p, const std::vector<Tensor>& inputs,
                           const MeshShape& shape, Trace* trace = nullptr) {
  Mesh mesh(shape);
  return shard_map(mesh, p, inputs, trace);
}

// Every element within |a - b| <= 1e-5 + 1e-5 |b|, as the grader allows.
bool close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, std::string& where) {
  for (std::size_t o = 0; o < a.size(); ++o) {
    if (a[o].shape != b[o].shape) return where = "output " + std::to_string(o) + " shape", false;
    for (std::size_t i = 0; i < a[o].size(); ++i) {
      const double x = a[o].data[i], y = b[o].data[i];
      if (std::fabs(x - y) > 1e-5 + 1e-5 * std::fabs(y))
        return where = "output " + std::to_string(o) + "[" + std::to_string(i) + "]", false;
    }
  }
  return true;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_case_on_every_mesh_matches_expected_and_each_other) {
  const ProgramDef& p = *find_program("mlp-train");
  const auto files = mlp_cases();
  BOOST_TEST(files.size() >= 8u);
  for (const std::string& file : files) {
    const Case c = read_case(file, &p, 0);
    BOOST_REQUIRE(c.expected.has_value());
    std::vector<Tensor> first;
    for (const MeshShape& shape : kMeshes) {
      Trace trace;
      const std::vector<Tensor> got = run_on(p, c.inputs, shape, &trace);
      std::string where;
      BOOST_TEST(close(got, *c.expected, where),
                 file << " on " << mesh_str(shape) << ": " << where);
      if (first.empty()) first = got;
      BOOST_TEST(close(got, first, where),
                 file << " on " << mesh_str(shape) << " vs 1x8: " << where);
      const StructuralVerdict v = check_structure(p.structure, trace);
      BOOST_TEST(v.ok(),
                 file << " on " << mesh_str(shape) << ": " << (v.ok() ? "" : v.failures[0]));
      BOOST_TEST(v.passed.size() == 8u);
    }
  }
}

// mlp-train's body, bit for bit, against its arithmetic written out unfused as it was before the
// body wrote its gradients in place: z = x w1 + b1, h = relu(z), the relu' mask from z,
// a plain transpose, each gradient its own tensor then packed, the update a std::fma loop. On
// every mesh, on the cases (their inputs) and on random inputs with exact zeros in x (so some
// pre-activations are exactly b1, and some +-0).
std::vector<Tensor> unfused_mlp_train(Device& dev, std::vector<Tensor>& in) {
  const Tensor &x = in[0], &y = in[1], &w1 = in[2], &b1 = in[3], &w2 = in[4], &b2 = in[5];
  const float lr = in[6].data[0];
  const float inv_rows = 1.0f / static_cast<float>(x.rows());
  Tensor z = matmul(x, w1);
  add_row_vector(z, b1);
  Tensor h = z;
  relu_inplace(h);
  Tensor out = dev.psum(matmul(h, w2), "model");
  add_row_vector(out, b2);
  Tensor g = out;
  std::vector<float> row_sums(g.rows(), 0.0f);  // reduce_sum over O, then over the rows
  for (std::size_t i = 0; i < g.size(); ++i) {
    const float e = out.data[i] - y.data[i];
    row_sums[i / g.cols()] += e * e;
    g.data[i] = 2.0f * e * inv_rows;
  }
  float sq = 0.0f;
  for (float s : row_sums) sq += s;
  Tensor w2t({w2.cols(), w2.rows()});
  for (std::size_t i = 0; i < w2.rows(); ++i)
    for (std::size_t j = 0; j < w2.cols(); ++j) w2t(j, i) = w2(i, j);
  const Tensor dw2 = matmul_tn(h, g);
  const Tensor db2 = sum_rows(g);
  Tensor dz = matmul(g, w2t);
  for (std::size_t i = 0; i < dz.size(); ++i)
    if (!(z.data[i] > 0.0f)) dz.data[i] = 0.0f;
  const Tensor dw1 = matmul_tn(x, dz);
  const Tensor db1 = sum_rows(dz);
  std::vector<float> packed{sq / static_cast<float>(x.rows())};
  for (const Tensor* t : {&dw1, &db1, &dw2, &db2})
    packed.insert(packed.end(), t->data.begin(), t->data.end());
  dev.pmean_inplace(packed, "data");
  std::size_t at = 1;
  std::vector<Tensor> res;
  for (const Tensor* p : {&w1, &b1, &w2, &b2}) {
    Tensor q = *p;
    for (float& v : q.data) v = std::fma(-lr, packed[at++], v);
    res.push_back(std::move(q));
  }
  res.push_back(Tensor::scalar(packed[0]));
  return res;
}

bool same_outputs(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t o = 0; o < a.size(); ++o)
    if (a[o].shape != b[o].shape ||
        std::memcmp(a[o].data.data(), b[o].data.data(), a[o].size() * sizeof(float)) != 0)
      return false;
  return true;
}

BOOST_AUTO_TEST_CASE(the_body_has_the_bits_of_its_unfused_arithmetic) {
  const ProgramDef& p = *find_program("mlp-train");
  std::vector<std::vector<Tensor>> inputs;
  for (const std::string& file : mlp_cases()) inputs.push_back(read_case(file, &p, 0).inputs);
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto random = [&](Shape s, bool zeros) {
    Tensor t(std::move(s));
    for (std::size_t i = 0; i < t.size(); ++i) t.data[i] = zeros && i % 3 == 0 ? 0.0f : normal(rng);
    return t;
  };
  // B=16 D=40 H=72 O=24: past a tile of rows, the vector width and the 16 x 16 transpose tiles.
  inputs.push_back({random({16, 40}, true), random({16, 24}, false), random({40, 72}, false),
                    random({72}, false), random({72, 24}, false), random({24}, false),
                    Tensor::scalar(0.05f)});
  BOOST_TEST(inputs.size() >= 9u);
  for (std::size_t c = 0; c < inputs.size(); ++c) {
    for (const MeshShape& shape : kMeshes) {
      Mesh mesh(shape);
      const std::vector<Tensor> got = shard_map(mesh, p, inputs[c]);
      const std::vector<Tensor> want =
          shard_map(mesh, unfused_mlp_train, p.inputs, p.outputs, inputs[c]);
      BOOST_TEST(same_outputs(got, want), "inputs " << c << " on " << mesh_str(shape));
    }
  }
}

BOOST_AUTO_TEST_CASE(repeated_runs_are_bit_identical) {
  const ProgramDef& p = *find_program("mlp-train");
  const Case c = read_case(kSource + "/cases/mlp-train/b16-d4-h32-o3.json", &p, 0);
  for (const MeshShape& shape : kMeshes) {
    const std::vector<Tensor> first = run_on(p, c.inputs, shape);
    for (int rep = 0; rep < 5; ++rep) {
      const std::vector<Tensor> again = run_on(p, c.inputs, shape);
      for (std::size_t o = 0; o < first.size(); ++o)
        BOOST_TEST(same_bits(first[o], again[o]), mesh_str(shape) << " output " << o);
    }
  }
  // And through the binary: --exact prints the same bytes every time.
  const auto once =
      meshrun::testing::run({"mlp-train", "--exact", "cases/mlp-train/example1.json"});
  BOOST_TEST(once.code == 0, once.err);
  for (int rep = 0; rep < 3; ++rep) {
    const auto again =
        meshrun::testing::run({"mlp-train", "--exact", "cases/mlp-train/example1.json"});
    BOOST_TEST(again.out == once.out);
  }
}

// ------------------------------------------------------------------- deliberately wrong programs

namespace {

const ProgramDef& mlp() { return *find_program("mlp-train"); }

StructuralVerdict verdict_of(const ProgramDef& p) {
  const Case c = read_case(kSource + "/cases/mlp-train/example1.json", &mlp(), 0);
  Trace trace;
  run_on(p, c.inputs, {{"data", 2}, {"model", 4}}, &trace);
  return check_structure(p.structure, trace);
}

bool mentions(const StructuralVerdict& v, const std::string& text) {
  for (const auto& f : v.failures)
    if (f.find(text) != std::string::npos) return true;
  return false;
}

// The real body with its collectives' axes replaced.
Body body_reducing_over(AxisNames model_axes, AxisNames data_axes) {
  const std::string m0(model_axes.names()[0]), d0(data_axes.names()[0]);
  const bool m_tuple = model_axes.names().size() > 1, d_tuple = data_axes.names().size() > 1;
  return [=](Device& dev, const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor z = matmul(x, in[2]);
    add_row_vector(z, in[3]);
    relu_inplace(z);
    const Tensor part = matmul(z, in[4]);
    Tensor out = m_tuple ? dev.psum(part, {"data", "model"}) : dev.psum(part, m0);
    add_row_vector(out, in[5]);
    std::vector<float> packed(1 + in[2].size() + in[3].size() + in[4].size() + in[5].size(), 0.0f);
    if (d_tuple)
      dev.pmean_inplace(packed, {"data", "model"});
    else
      dev.pmean_inplace(packed, d0);
    return std::vector<Tensor>{in[2], in[3], in[4], in[5], Tensor::scalar(packed[0])};
  };
}

}  // namespace

BOOST_AUTO_TEST_CASE(real_program_passes_and_full_inputs_fail) {
  BOOST_TEST(verdict_of(mlp()).ok());
  ProgramDef wrong = mlp();
  for (auto& a : wrong.inputs) a.spec = P();  // every device gets everything
  for (auto& a : wrong.outputs) a.spec = P();
  wrong.computation = one_shard_map([](Device&, const std::vector<Tensor>& in) {
    return std::vector<Tensor>{in[2], in[3], in[4], in[5], Tensor::scalar(0)};
  });
  const auto v = verdict_of(wrong);
  BOOST_TEST(mentions(v, "device 0 held f32[8,2] (the full x), expected f32[4,2]"));
  BOOST_TEST(mentions(v, "(the full y)"));
  BOOST_TEST(mentions(v, "device 0 held f32[2,8] (the full w1), expected f32[2,2]"));
  BOOST_TEST(mentions(v, "(the full b1)"));
  BOOST_TEST(mentions(v, "(the full w2)"));
  BOOST_TEST(
      mentions(v, "reduced 0 elements over 'model', fewer than the 4 of its partial outputs"));
}

// A timeout in one group whose missing member waits in another group is reported at the cause.
// On 2x4, device 6 stalls at psum #1 over 'model' ({4, 5, 6, 7}); devices 0, 1, 3 wait in pmean
// #1 over 'data' for 4, 5, 7, which wait in the 'model' psum for 6 (device 2 and 6 share no
// collective). The 'model' devices enter 100 ms after the 'data' ones, well inside the 1 s
// timeout, so a 'data' device times out first -- and the report is still the 'model' psum's,
// where 6 stalled: the same line whichever group's deadline comes first (on a loaded machine the
// order of near-simultaneous deadlines is a race, and a verdict must not depend on it).
BOOST_AUTO_TEST_CASE(a_timeout_is_reported_at_the_collective_where_the_device_stalled) {
  for (int rep = 0; rep < 2; ++rep) {
    MeshOptions o;
    o.timeout = std::chrono::milliseconds(1000);
    o.injections = {parse_injection("stall:6@1")};
    Mesh mesh(MeshShape{{"data", 2}, {"model", 4}}, o);
    std::atomic<int> data_ready{0};
    try {
      mesh.run([&](Device& dev) {
        const int d = dev.index();
        std::vector<float> buf(3, 1.0f);
        if (d == 2) return;
        if (d < 4) {
          data_ready.fetch_add(1);
          dev.pmean_inplace(buf, "data");
          return;
        }
        for (int i = 0; i < 1000 && data_ready.load() < 3; ++i)  // bounded: at most ~1 s
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        dev.psum_inplace(buf, "model");
        dev.pmean_inplace(buf, "data");
      });
      BOOST_TEST(false, "the stall was not reported");
    } catch (const TimeoutError& e) {
      BOOST_TEST(std::string(e.what()) ==
                     "psum #1 on 'model': timed out after 1000 ms; device(s) 6 never arrived "
                     "(6 stalled by --inject)",
                 e.what());
      BOOST_TEST((e.missing() == std::vector<int>{6}));
    }
  }
}

// The collective at the cause is one the timed-out device's waits lead to, never another group's
// that merely looks like one. On 2x2 ('model' groups {0, 1}, {2, 3}) devices 0 and 3 are late (in
// their body for 600 ms); device 2 waits for 3 from the start, device 1 for 0 from 100 ms on. 2
// times out first, and its line names 3 -- not 0, whose group had waited less.
BOOST_AUTO_TEST_CASE(the_cause_reported_is_the_one_the_timed_out_device_waited_for) {
  MeshOptions o;
  o.timeout = std::chrono::milliseconds(200);
  Mesh mesh(MeshShape{{"data", 2}, {"model", 2}}, o);
  try {
    mesh.run([&](Device& dev) {
      std::vector<float> buf(3, 1.0f);
      const int d = dev.index();
      if (d == 0 || d == 3) {
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        return;
      }
      if (d == 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
      dev.psum_inplace(buf, "model");
    });
    BOOST_TEST(false, "the late device was not reported");
  } catch (const TimeoutError& e) {
    BOOST_TEST(std::string(e.what()) ==
                   "psum #1 on 'model': timed out after 200 ms; device(s) 3 never arrived (3 "
                   "late: still running the body, a longer --timeout may help)",
               e.what());
  }
}

// Without a collective at the cause -- every device waits for one that waits elsewhere, a cycle
// no stall or late device ends -- the device that timed out reports its own collective and the
// waits followed from it, each device once. On 2x2 ('data' groups {0, 2}, {1, 3}; 'model' groups
// {0, 1}, {2, 3}): 0 waits in 'model' for 1, 1 in 'data' for 3, 3 in 'model' for 2, 2 in 'data'
// for 0.
BOOST_AUTO_TEST_CASE(a_cycle_of_waits_is_reported_as_the_chain_it_is) {
  MeshOptions o;
  o.timeout = std::chrono::milliseconds(200);
  Mesh mesh(MeshShape{{"data", 2}, {"model", 2}}, o);
  try {
    mesh.run([&](Device& dev) {
      std::vector<float> buf(3, 1.0f);
      const int d = dev.index();
      if (d == 0 || d == 3)
        dev.psum_inplace(buf, "model");
      else
        dev.psum_inplace(buf, "data");
    });
    BOOST_TEST(false, "the cycle was not reported");
  } catch (const TimeoutError& e) {
    const std::string what = e.what();
    const std::vector<std::string> lines = {
        "psum #1 on 'model': timed out after 200 ms; device(s) 1 never arrived (1 waiting in psum "
        "#1 on 'data' for 3; 3 waiting in psum #1 on 'model' for 2; 2 waiting in psum #1 on "
        "'data' for 0)",
        "psum #1 on 'data': timed out after 200 ms; device(s) 3 never arrived (3 waiting in psum "
        "#1 on 'model' for 2; 2 waiting in psum #1 on 'data' for 0; 0 waiting in psum #1 on "
        "'model' for 1)",
        "psum #1 on 'model': timed out after 200 ms; device(s) 2 never arrived (2 waiting in psum "
        "#1 on 'data' for 0; 0 waiting in psum #1 on 'model' for 1; 1 waiting in psum #1 on "
        "'data' for 3)",
        "psum #1 on 'data': timed out after 200 ms; device(s) 0 never arrived (0 waiting in psum "
        "#1 on 'model' for 1; 1 waiting in psum #1 on 'data' for 3; 3 waiting in psum #1 on "
        "'model' for 2)"};
    BOOST_TEST((std::ranges::find(lines, what) != lines.end()), what);
  }
}

BOOST_AUTO_TEST_CASE(reductions_over_the_wrong_axes_fail) {
  ProgramDef wrong = mlp();
  // Partial outputs summed over the whole mesh (mixing the data rows).
  wrong.computation = one_shard_map(body_reducing_over(AxisNames{"data", "model"}, "data"));
  auto v = verdict_of(wrong);
  BOOST_TEST(mentions(v, "reduced 0 elements over 'model'"));
  BOOST_TEST(mentions(v, "called psum #1 over '(data,model)'"));
  // Axes swapped: outputs over 'data', gradients over 'model'.
  wrong.computation = one_shard_map(body_reducing_over("data", "model"));
  v = verdict_of(wrong);
  BOOST_TEST(mentions(v, "over 'model', more than the 4 of its partial outputs"));
  BOOST_TEST(mentions(v, "over 'data', fewer than the"));
  // Gradients averaged over the whole mesh.
  wrong.computation = one_shard_map(body_reducing_over("model", AxisNames{"data", "model"}));
  v = verdict_of(wrong);
  BOOST_TEST(mentions(v, "reduced 0 elements over 'data'"));
  BOOST_TEST(v.failures.size() == 2u);
}

BOOST_AUTO_TEST_CASE(gathering_hidden_fails) {
  ProgramDef wrong = mlp();
  const Body real = body_of(mlp());
  wrong.computation = one_shard_map([real](Device& dev, std::vector<Tensor>& in) {
    dev.all_gather(matmul(in[0], in[2]), "model");  // the full hidden activations on every device
    return real(dev, in);
  });
  const auto v = verdict_of(wrong);
  BOOST_TEST(v.failures.size() == 1u);
  BOOST_TEST(mentions(v, "hidden stayed split"));
  BOOST_TEST(mentions(v, "called all_gather #1 over 'model'"));
}

BOOST_AUTO_TEST_SUITE_END()

// ------------------------------------------------------------------------------------------------
BOOST_AUTO_TEST_SUITE(trace_and_cli)

using meshrun::testing::run;

BOOST_AUTO_TEST_CASE(trace_and_sharding_show_the_2d_mesh) {
  const auto r = run({"mlp-train", "--trace", "--show-sharding", "cases/mlp-train/example1.json"});
  BOOST_TEST(r.code == 0, r.err);
  for (const char* line :
       {"mesh: Mesh('data': 2, 'model': 4)\n", "    device 5: f32[4,2]{V:data}  rows [4:8)\n",
        "    device 5: f32[2,2]{V:model}  columns [2:4)\n",
        "  device 5: #1 psum[axis_name='model'] f32[4,1]{V:model} -> f32[4,1]  16 bytes\n",
        "  device 5: #1 pmean[axis_name='data'] f32[10]{V:data} -> f32[10]  40 bytes\n",
        "sharding of mlp-train on Mesh('data': 2, 'model': 4)\n", "│  dev 4,5,6,7  │ rows [4:8)\n",
        "│ dev 0,4 │ dev 1,5 │ dev 2,6 │ dev 3,7 │\n"})
    BOOST_TEST(r.err.find(line) != std::string::npos, "missing: " << line);
}

// An array split over both axes: a 2-D grid of boxes, its blocks typed {V:(data,model)}.
BOOST_AUTO_TEST_CASE(a_block_split_both_ways_is_a_grid) {
  ProgramDef copy;
  copy.name = "copy";
  copy.inputs = {{"a", {"R", "C"}, P{"data", "model"}}};
  copy.outputs = copy.inputs;
  copy.computation = one_shard_map([](Device&, const std::vector<Tensor>& in) { return in; });
  const ProgramDef& p = copy;
  Mesh mesh(MeshShape{{"data", 2}, {"model", 2}});
  Trace trace;
  const Tensor a({4, 4}, std::vector<float>(16, 1.0f));
  shard_map(mesh, p, {a}, &trace);
  const std::string text = format_trace(trace), grid = format_sharding(trace);
  BOOST_TEST(text.find("    device 3: f32[2,2]{V:(data,model)}  rows [2:4), columns [2:4)\n") !=
                 std::string::npos,
             text);
  BOOST_TEST(
      grid.find("┌───────┬───────┐\n│ dev 0 │ dev 1 │ rows [0:2)\n├───────┼───────┤\n"
                "│ dev 2 │ dev 3 │ rows [2:4)\n└───────┴───────┘\n  [0:2)   [2:4)  columns\n") !=
          std::string::npos,
      grid);
}

// Inputs of 1 MiB and more are cut by the device threads themselves (shard_map), smaller ones
// by the caller: either way each device gets exactly its own blocks, so a body that hands them
// back assembles the inputs bit for bit, split both ways, replicated, or split over one axis.
BOOST_AUTO_TEST_CASE(blocks_cut_on_the_devices_or_the_caller_come_back_bit_for_bit) {
  ProgramDef copy;
  copy.name = "copy";
  copy.inputs = {{"a", {"R", "C"}, P{"data", "model"}},
                 {"b", {"S", "T"}, P()},
                 {"c", {"S", "C"}, P{None, "model"}}};
  copy.outputs = copy.inputs;
  copy.computation = one_shard_map([](Device&, const std::vector<Tensor>& in) { return in; });
  const ProgramDef& p = copy;
  std::mt19937 rng(11);
  const auto random = [&](std::size_t rows, std::size_t cols) {
    std::vector<float> v(rows * cols);
    for (float& x : v) x = static_cast<float>(rng()) / 4096.0f;
    return Tensor({rows, cols}, std::move(v));
  };
  // 8 rows of a: 32 KiB of inputs in all, cut by the caller; 512 rows: 2 MiB, by the devices.
  constexpr std::size_t kSmall = (std::size_t{8} + 4) * 1024 + std::size_t{16} * 24;  // floats
  constexpr std::size_t kLarge = std::size_t{512} * 1024;                             // floats of a
  static_assert(kSmall * sizeof(float) < kSplitOnDevicesBytes);
  static_assert(kLarge * sizeof(float) >= kSplitOnDevicesBytes);
  for (const std::size_t rows : {std::size_t{8}, std::size_t{512}}) {
    const std::vector<Tensor> in{random(rows, 1024), random(16, 24), random(4, 1024)};
    for (const MeshShape& shape :
         {MeshShape{{"data", 2}, {"model", 4}}, MeshShape{{"data", 4}, {"model", 2}},
          MeshShape{{"data", 1}, {"model", 1}}}) {
      Mesh mesh(shape);
      const std::vector<Tensor> out = shard_map(mesh, p, in);
      BOOST_TEST_REQUIRE(out.size() == in.size());
      for (std::size_t i = 0; i < in.size(); ++i) {
        BOOST_TEST((out[i] == in[i]),
                   "rows " << rows << ", mesh " << mesh_str(shape) << ", input " << i);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(every_case_passes_through_the_binary_and_check) {
  const auto r = run({"check", "cases/mlp-train"});
  BOOST_TEST(r.code == 0, r.out << r.err);
  BOOST_TEST(r.out.find("PASS cases/mlp-train/example1.json: numbers ok; structure ok (8 rules)") !=
                 std::string::npos,
             r.out);
  for (const char* mesh :
       {"data=1,model=8", "data=4,model=2", "data=8,model=1", "data=1,model=1"}) {
    const auto m = run({"check", "--mesh", mesh, "cases/mlp-train"});
    BOOST_TEST(m.code == 0, mesh << ": " << m.out << m.err);
  }
  // The mesh key and the flags: --mesh overrides the case, an unknown axis is exit 2.
  const auto bad = run({"mlp-train", "--mesh", "rows=2,model=4", "cases/mlp-train/example1.json"});
  BOOST_TEST(bad.code == 2);
  BOOST_TEST(bad.out == "");
  BOOST_TEST(bad.err ==
             "meshrun: cases/mlp-train/example1.json: input.x: P('data', None) refers to mesh axis "
             "'data', "
             "which is not in the mesh's axis names ('rows', 'model')\n");
  // The one-axis programs run on a 2-D mesh too: the axis their specs do not name replicates.
  const auto dp = run({"dp-step", "--mesh", "data=4,model=2", "cases/dp-step/example1.json"});
  BOOST_TEST(dp.out == "{\"w\":[[1.11]],\"b\":[0.2],\"loss\":121.0}\n", dp.err);
}

BOOST_AUTO_TEST_SUITE_END()
