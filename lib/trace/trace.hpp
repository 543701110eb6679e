// Trace: the SPMD program as it actually ran, recorded by the runtime (shard_map records the
// blocks it hands each device and gets back; Device records each collective as it enters it) --
// never asserted by the program itself. --trace prints it, --show-sharding draws it, and the
// structural rules (structure.hpp) are checked against it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/communicator.hpp"
#include "trace/profile.hpp"
#include "shard/mesh_shape.hpp"
#include "shard/partition_spec.hpp"
#include "tensor/tensor.hpp"

namespace meshrun {

struct CollectiveRecord {
  std::string op;     // JAX's name: psum, pmean, all_gather, psum_scatter, ppermute
  std::string axis;   // "data", or "(data,model)" for a tuple of axes
  Shape in_shape;     // the operand this device passed
  Shape out_shape;    // what it got back
  bool out_varying;   // the result differs from device to device (psum_scatter, ppermute)
  std::uint64_t seq;  // the collective's sequence number on the device, from 1
  // The device exchanged data with another: false for a collective over subgroups of one device
  // (axis_index_groups [[0], [1], ...]) and a ppermute that sends this device's value to itself
  // and receives only its own -- a call that combines nothing, which the rules on what was
  // combined or reduced across devices do not count.
  bool moves = true;
  std::size_t bytes() const { return shape_size(in_shape) * sizeof(float); }
};

struct ArrayRecord {
  std::string name;
  Shape global;
  PartitionSpec spec;
  std::vector<Shape> blocks;  // [device]: the shape of the block that device held
  // An output whose shard_map does not check its replicas (check_vma=False): "" when every
  // device holding a copy of a block holds the same values (up to 1e-5 + 1e-5 |v|, a sum in
  // another order), else which devices differ and where. Unused for inputs.
  std::string replicas_differ;
  std::vector<std::string> manual_axes;  // its shard_map's (ArgDef's); empty: every axis
};

struct Trace {
  std::string program;
  MeshShape mesh;
  std::string axis;  // the first axis of the mesh (on a one-axis mesh, its axis)
  int devices = 0;   // on the whole mesh
  // Of every shard_map call of the program's run, in order (issue #47: a program of several
  // shard_maps is graded on all of them): the arrays each call took and returned that are the
  // program's inputs and outputs, and below each device's collectives over all the calls.
  std::vector<ArrayRecord> inputs;
  std::vector<ArrayRecord> outputs;
  // The shard_map calls recorded in this run so far: the run of a program (programs/program.hpp's
  // shard_map) sets it to 0, each call adds one; a call with 0 starts the record afresh.
  int calls = 0;
  // The first value a shard_map call of the run returned under a spec that replicates it whose
  // unchecked replicas (check_vma=False) differ, whatever it became after: which devices, where,
  // and the output's name ("" when every such value agreed). JAX returns device 0's copy.
  std::string replicas_differ;
  // The largest gap between two copies of an element of such a value, relative to the value's
  // largest magnitude (0: every copy the same), and where it is: same_function's draws judge the
  // copies by it, relative as their numbers are (a ring's copies differ by rounding only).
  float replica_gap = 0;
  std::string replica_gap_at;
  // [device]: its collectives in order. Each device appends only to its own vector.
  std::vector<std::vector<CollectiveRecord>> collectives;
  // When given (--timings, --profile): the run's timeline, recorded alongside (profile.hpp).
  Profile* profile = nullptr;
  // While it is graded (check_structure with values): the case's inputs, in the program's order,
  // and what the run returned -- for the rules that are facts about values. Null otherwise.
  const std::vector<TensorRef>* input_values = nullptr;
  const std::vector<Tensor>* output_values = nullptr;
};

// The --trace text: mesh, inputs (global shape, spec, block per device), each device's
// collectives in order, outputs -- in JAX's notation (f32[16,2], f32[2,2]{V:data}, P('data',)).
std::string format_trace(const Trace& trace);

// The --show-sharding text: per array, which device holds which block, in the manner of
// jax.debug.visualize_array_sharding (a replicated array is one box naming all its devices).
std::string format_sharding(const Trace& trace);

}  // namespace meshrun
