// jax.shard_map: the signature types a program is made of -- each argument's name, symbolic
// dims and partition spec, and the per-device body -- and shard_map itself, which splits global
// arrays into device blocks, runs the body on every device of a Mesh and assembles the outputs.
// Below the programs: a program is a body plus its specs, and nothing here knows any program.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "mesh/mesh.hpp"
#include "shard/partition_spec.hpp"
#include "tensor/tensor.hpp"
#include "trace/trace.hpp"

namespace meshrun {

// One input or output: its JSON key, its dimensions by symbolic name ({} for a scalar,
// {"N", "D"} for a matrix), and its partition spec over the program's mesh axes.
struct ArgDef {
  std::string name;
  std::vector<std::string> dims;
  PartitionSpec spec;
  // An output's replicas must hold the same bits (JAX's check_vma / check_rep). A program that
  // turned the check off (shard_map(..., check_vma=False)) gets what JAX gives it: the block of
  // the first device holding it, whatever the other replicas hold.
  bool check_replicas = true;
  // The axes its shard_map is manual over (JAX's axis_names=); empty: every axis of the mesh. A
  // partial shard_map's body sees the others whole, so the trace's rules on how an array is split
  // over one of those judge the shard_maps nested in it, not this one.
  std::vector<std::string> manual_axes;
};

// Runs once per device on that device's blocks (in the order of the in-specs) and returns
// its blocks of the outputs (in the order of the out-specs). The blocks are the device's own
// copies, dropped when the body returns: a body may move from them (the interpreter does).
using Body = std::function<std::vector<Tensor>(Device&, std::vector<Tensor>& blocks)>;

// From this many bytes of inputs, shard_map has the device threads cut their own blocks (in a
// first run of the mesh, on every core); below it, the caller cuts them.
inline constexpr std::size_t kSplitOnDevicesBytes = std::size_t{1} << 20;

// Splits each global input by its in-spec (each device gets a copy of its own block only), runs
// `body` on every device, assembles the outputs by their out-specs. Devices holding copies of one
// output block (replicated over an axis the spec does not name) must hold the same bits.
// Throws InputError when a spec names an axis the mesh lacks or a split does not divide.
// With `trace`, records the run: mesh, the blocks handed to and returned by each device, and
// every collective (trace->program is left to the caller).
std::vector<Tensor> shard_map(Mesh& mesh, const Body& body, const std::vector<ArgDef>& in_specs,
                              const std::vector<ArgDef>& out_specs,
                              const std::vector<Tensor>& inputs, Trace* trace = nullptr);
// The same on inputs held elsewhere (a Case's, some left in their mapped .npy files): each
// device's block is copied straight from them. They must outlive the call.
std::vector<Tensor> shard_map(Mesh& mesh, const Body& body, const std::vector<ArgDef>& in_specs,
                              const std::vector<ArgDef>& out_specs,
                              const std::vector<TensorRef>& inputs, Trace* trace = nullptr);

// One shard_map a program calls: the body and the specs of its operands and results. `key` names
// the call the same way in every process of a job, so a process that does not evaluate the program
// (an MPI rank other than 0) can build the same call (programs/program.hpp: Computation::call);
// never "".
struct ShardMapCall {
  std::string key;
  Body body;
  std::vector<ArgDef> in, out;
};

// Where a program's shard_maps run, as JAX's backend is: the device threads of this process
// (InProcessEngine) or the ranks of an MPI job (io/mpi/mpi_engine.hpp's RootEngine). A program
// hands it each shard_map with the call's global operands and gets the call's global results back.
class Engine {
 public:
  virtual ~Engine() = default;
  virtual const MeshShape& shape() const = 0;
  virtual std::vector<Tensor> shard_map(const ShardMapCall& call,
                                        const std::vector<TensorRef>& global) = 0;
};

// The in-process engine: shard_map (above) on `mesh`, recording into `trace` when given.
class InProcessEngine final : public Engine {
 public:
  InProcessEngine(Mesh& mesh, Trace* trace) : mesh_(mesh), trace_(trace) {}
  const MeshShape& shape() const override { return mesh_.shape(); }
  std::vector<Tensor> shard_map(const ShardMapCall& call,
                                const std::vector<TensorRef>& global) override;

 private:
  Mesh& mesh_;
  Trace* trace_;
};

// shard_map's steps, for a backend that runs the devices elsewhere (lib/mpi: across ranks).
// check_shard_map_inputs: the InputErrors shard_map throws before running anything.
void check_shard_map_inputs(const MeshShape& mesh, const std::vector<ArgDef>& in_specs,
                            const std::vector<ArgDef>& out_specs,
                            const std::vector<TensorRef>& inputs);
// Device `device`'s own blocks of the inputs, in the order of the in-specs.
std::vector<Tensor> device_blocks(const MeshShape& mesh, const std::vector<ArgDef>& in_specs,
                                  const std::vector<TensorRef>& inputs, int device);
// Records the mesh and every device's input blocks in `trace` (clearing inputs and outputs).
void record_inputs(Trace& trace, const MeshShape& mesh, const std::vector<ArgDef>& in_specs,
                   const std::vector<TensorRef>& inputs);
// The global outputs from every device's output blocks (outs[device][output]), checking that
// replicated copies hold the same bits; records the outputs in `trace` when given.
std::vector<Tensor> assemble_outputs(const MeshShape& mesh, const std::vector<ArgDef>& out_specs,
                                     std::vector<std::vector<Tensor>> outs, Trace* trace = nullptr);

}  // namespace meshrun
