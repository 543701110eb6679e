// shard_map: global arrays in, device blocks to the devices, device blocks out, global arrays back.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <exception>
#include <string>

#include "mesh/shard_map.hpp"

#include "support/errors.hpp"

namespace meshrun {

void check_shard_map_inputs(const MeshShape& mesh, const std::vector<ArgDef>& in_specs,
                            const std::vector<ArgDef>& out_specs,
                            const std::vector<TensorRef>& inputs) {
  MESHRUN_CHECK(inputs.size() == in_specs.size(), "shard_map: wrong number of inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ArgDef& arg = in_specs[i];
    MESHRUN_CHECK(inputs[i].rank() == arg.dims.size(), "input." + arg.name + " has the wrong rank");
    check_spec_axes("input." + arg.name, arg.spec, mesh);
    check_divisible("input." + arg.name, inputs[i].shape, arg.spec, mesh);
  }
  for (const ArgDef& arg : out_specs) check_spec_axes("output." + arg.name, arg.spec, mesh);
}

namespace {

// The lowest-numbered device holding the same block of an array under `spec` as device `d`
// (d itself when no lower one does): devices that differ only on axes the spec does not name.
int first_holder(const PartitionSpec& spec, std::size_t rank, const MeshShape& mesh, int d) {
  for (int e = 0; e < d; ++e) {
    bool same = true;
    for (std::size_t dim = 0; same && dim < rank; ++dim)
      same = shard_index(spec, dim, mesh, e) == shard_index(spec, dim, mesh, d);
    if (same) return e;
  }
  return d;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && (a.data.empty() || std::memcmp(a.data.data(), b.data.data(),
                                                              a.data.size() * sizeof(float)) == 0);
}

// Where two replicas of a block differ beyond the rounding of a sum taken in another order
// (1e-5 + 1e-5 |a|, NaN against anything but NaN); "" when they do not.
std::string replica_difference(const Tensor& a, const Tensor& b, int da, int db) {
  const std::string who = "devices " + std::to_string(da) + " and " + std::to_string(db);
  if (a.shape != b.shape) return who + " hold blocks of different shapes";
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    const float x = a.data[i], y = b.data[i];
    const bool both_nan = std::isnan(x) && std::isnan(y);
    if (x == y || both_nan) continue;  // equal infinities too (inf - inf is NaN)
    if (!(std::fabs(x - y) <= 1e-5F + 1e-5F * std::fabs(x))) {
      return who + " hold different values (element " + std::to_string(i) + ": " +
             std::to_string(x) + " and " + std::to_string(y) + ")";
    }
  }
  return "";
}

// Trace::replica_gap: the largest |x - y| between a copy and its first holder's, over the
// value's largest magnitude.
void note_replica_gap(Trace& trace, const std::vector<Tensor>& parts, const ArgDef& arg,
                      const MeshShape& mesh) {
  float largest = 0;
  for (const Tensor& p : parts)
    for (const float x : p.data)
      if (std::isfinite(x)) largest = std::max(largest, std::fabs(x));
  const int n = static_cast<int>(parts.size());
  for (int d = 1; d < n; ++d) {
    const int e = first_holder(arg.spec, parts[0].rank(), mesh, d);
    if (e == d || parts[e].shape != parts[d].shape) continue;
    for (std::size_t i = 0; i < parts[d].data.size(); ++i) {
      const float x = parts[e].data[i], y = parts[d].data[i];
      if (x == y || (std::isnan(x) && std::isnan(y))) continue;
      const float gap = std::fabs(x - y) / std::max(largest, FLT_MIN);  // inf or NaN: not equal
      if (!(gap <= trace.replica_gap)) {
        trace.replica_gap = std::isnan(gap) ? INFINITY : gap;
        trace.replica_gap_at = "devices " + std::to_string(e) + " and " + std::to_string(d) +
                               " hold " + std::to_string(x) + " and " + std::to_string(y) +
                               " at element " + std::to_string(i) + " of " + arg.name;
      }
    }
  }
}

}  // namespace

std::vector<Tensor> device_blocks(const MeshShape& mesh, const std::vector<ArgDef>& in_specs,
                                  const std::vector<TensorRef>& inputs, int device) {
  std::vector<Tensor> blocks;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    blocks.push_back(block_of(inputs[i], in_specs[i].spec, mesh, device));
  return blocks;
}

void record_inputs(Trace& trace, const MeshShape& mesh, const std::vector<ArgDef>& in_specs,
                   const std::vector<TensorRef>& inputs) {
  trace.mesh = mesh;
  trace.axis = mesh[0].first;
  trace.devices = mesh_devices(mesh);
  if (trace.calls == 0) {  // a later call of the same run adds to the first's
    trace.inputs.clear();
    trace.outputs.clear();
    trace.replicas_differ.clear();
    trace.replica_gap = 0;
    trace.replica_gap_at.clear();
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ArrayRecord rec{in_specs[i].name, inputs[i].shape, in_specs[i].spec, {}};
    for (int d = 0; d < trace.devices; ++d)
      rec.blocks.push_back(block_shape(inputs[i].shape, in_specs[i].spec, mesh));
    rec.manual_axes = in_specs[i].manual_axes;
    trace.inputs.push_back(std::move(rec));
  }
}

std::vector<Tensor> assemble_outputs(const MeshShape& mesh, const std::vector<ArgDef>& out_specs,
                                     std::vector<std::vector<Tensor>> outs, Trace* trace) {
  const int n = mesh_devices(mesh);
  std::vector<Tensor> result;
  for (std::size_t o = 0; o < out_specs.size(); ++o) {
    const ArgDef& arg = out_specs[o];
    std::vector<Tensor> parts;
    for (int d = 0; d < n; ++d) {
      MESHRUN_CHECK(outs[d].size() == out_specs.size(),
                    "shard_map: a device returned the wrong number of outputs");
      parts.push_back(std::move(outs[d][o]));
    }
    // Replicated over the axes its spec does not name: every device holding a copy of a block
    // must hold the same bits (JAX's check_rep).
    // Unchecked (check_vma=False), the first holder's block is the value, as JAX assembles it;
    // the trace keeps whether the replicas agreed, for the exercise's "out replicated".
    std::string differ;
    for (int d = 1; d < n; ++d) {
      const int e = first_holder(arg.spec, parts[0].rank(), mesh, d);
      if (e == d || same_bits(parts[e], parts[d])) continue;
      if (arg.check_replicas) {
        throw ReplicationError(arg.name, "output " + arg.name + " is declared " + arg.spec.str() +
                                             " but devices " + std::to_string(e) + " and " +
                                             std::to_string(d) + " hold different values");
      }
      if (differ.empty()) differ = replica_difference(parts[e], parts[d], e, d);
    }
    if (trace && !differ.empty() && trace->replicas_differ.empty())
      trace->replicas_differ = differ + " of " + arg.name;
    if (trace) note_replica_gap(*trace, parts, arg, mesh);
    if (trace) {
      ArrayRecord rec{arg.name, {}, arg.spec, {}, differ};
      for (const Tensor& p : parts) rec.blocks.push_back(p.shape);
      rec.manual_axes = arg.manual_axes;
      trace->outputs.push_back(std::move(rec));
    }
    result.push_back(assemble(parts, arg.spec, mesh));
    if (trace) trace->outputs.back().global = result.back().shape;
  }
  return result;
}

std::vector<Tensor> shard_map(Mesh& mesh, const Body& body, const std::vector<ArgDef>& in_specs,
                              const std::vector<ArgDef>& out_specs,
                              const std::vector<Tensor>& inputs, Trace* trace) {
  return shard_map(mesh, body, in_specs, out_specs, refs(inputs), trace);
}

std::vector<Tensor> shard_map(Mesh& mesh, const Body& body, const std::vector<ArgDef>& in_specs,
                              const std::vector<ArgDef>& out_specs,
                              const std::vector<TensorRef>& inputs, Trace* trace) {
  check_shard_map_inputs(mesh.shape(), in_specs, out_specs, inputs);
  const int n = mesh.size();
  Profile* profile = trace ? trace->profile : nullptr;
  // Each device's own blocks, made before the run: a device body can reach nothing else. Large
  // inputs are cut by the device threads, each its own blocks, so the copies (and the page
  // faults of fresh memory) run on every core; small ones here, where waking the devices would
  // cost more than the copies.
  std::vector<std::vector<Tensor>> blocks(static_cast<std::size_t>(n));
  {
    const ProfilePhase phase(profile, "split");
    std::size_t bytes = 0;
    for (const TensorRef& t : inputs) bytes += t.size() * sizeof(float);
    if (bytes >= kSplitOnDevicesBytes && n > 1) {
      // A failure here (bad_alloc) is the caller's, as when the caller cuts: not a device's.
      std::vector<std::exception_ptr> failed(static_cast<std::size_t>(n));
      mesh.run([&](Device& dev) {
        const auto d = static_cast<std::size_t>(dev.index());
        try {
          blocks[d] = device_blocks(mesh.shape(), in_specs, inputs, dev.index());
        } catch (...) {
          failed[d] = std::current_exception();
        }
      });
      for (const std::exception_ptr& e : failed)
        if (e) std::rethrow_exception(e);
    } else {
      for (int d = 0; d < n; ++d) blocks[d] = device_blocks(mesh.shape(), in_specs, inputs, d);
    }
  }
  if (trace) record_inputs(*trace, mesh.shape(), in_specs, inputs);

  std::vector<std::vector<Tensor>> outs(static_cast<std::size_t>(n));
  {
    const ProfilePhase phase(profile, "run");
    mesh.run(
        [&](Device& dev) {
          const auto d = static_cast<std::size_t>(dev.index());
          outs[d] = body(dev, blocks[d]);
          blocks[d].clear();
        },
        trace);
  }
  const ProfilePhase phase(profile, "assemble");
  std::vector<Tensor> result = assemble_outputs(mesh.shape(), out_specs, std::move(outs), trace);
  if (trace) ++trace->calls;
  return result;
}

std::vector<Tensor> InProcessEngine::shard_map(const ShardMapCall& call,
                                               const std::vector<TensorRef>& global) {
  return meshrun::shard_map(mesh_, call.body, call.in, call.out, global, trace_);
}

}  // namespace meshrun
