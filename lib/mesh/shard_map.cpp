// shard_map: global arrays in, device blocks to the devices, device blocks out, global arrays back.
#include <cstring>

#include "mesh/mesh.hpp"
#include "support/errors.hpp"

namespace meshrun {

namespace {

void check_inputs(const Mesh& mesh, const ProgramDef& program, const std::vector<Tensor>& inputs) {
  if (mesh.axis() != program.axis) {
    throw InputError("", program.name + " runs on axis '" + program.axis + "', the mesh's axis is '" +
                             mesh.axis() + "'");
  }
  MESHRUN_CHECK(inputs.size() == program.inputs.size(), program.name + ": wrong number of inputs");
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ArgDef& arg = program.inputs[i];
    MESHRUN_CHECK(inputs[i].rank() == arg.dims.size(), "input." + arg.name + " has the wrong rank");
    check_divisible("input." + arg.name, inputs[i].shape, arg.spec, program.axis, mesh.size());
  }
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape &&
         (a.data.empty() || std::memcmp(a.data.data(), b.data.data(), a.data.size() * sizeof(float)) == 0);
}

}  // namespace

std::vector<Tensor> shard_map(Mesh& mesh, const ProgramDef& program, const std::vector<Tensor>& inputs,
                              Trace* trace) {
  check_inputs(mesh, program, inputs);
  const int n = mesh.size();
  // Each device's own blocks, made before the run: a device body can reach nothing else.
  std::vector<std::vector<Tensor>> blocks(static_cast<std::size_t>(n));
  for (int d = 0; d < n; ++d)
    for (std::size_t i = 0; i < inputs.size(); ++i)
      blocks[d].push_back(block_of(inputs[i], program.inputs[i].spec, program.axis, d, n));

  if (trace) {
    trace->program = program.name;
    trace->axis = program.axis;
    trace->devices = n;
    trace->inputs.clear();
    trace->outputs.clear();
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      ArrayRecord rec{program.inputs[i].name, inputs[i].shape, program.inputs[i].spec, {}};
      for (int d = 0; d < n; ++d) rec.blocks.push_back(blocks[d][i].shape);
      trace->inputs.push_back(std::move(rec));
    }
  }

  std::vector<std::vector<Tensor>> outs(static_cast<std::size_t>(n));
  mesh.run(
      [&](Device& dev) {
        const auto d = static_cast<std::size_t>(dev.index());
        outs[d] = program.body(dev, blocks[d]);
        blocks[d].clear();
      },
      trace);

  std::vector<Tensor> result;
  for (std::size_t o = 0; o < program.outputs.size(); ++o) {
    const ArgDef& arg = program.outputs[o];
    std::vector<Tensor> parts;
    for (int d = 0; d < n; ++d) {
      MESHRUN_CHECK(outs[d].size() == program.outputs.size(),
                    program.name + ": a device returned the wrong number of outputs");
      parts.push_back(std::move(outs[d][o]));
    }
    if (arg.spec.split_dim(program.axis) < 0) {
      // Replicated over the axis: every device must hold the same bits (JAX's check_rep).
      for (int d = 1; d < n; ++d) {
        MESHRUN_CHECK(same_bits(parts[0], parts[d]),
                      "output " + arg.name + " is declared " + arg.spec.str() + " but devices 0 and " +
                          std::to_string(d) + " hold different values");
      }
    }
    if (trace) {
      ArrayRecord rec{arg.name, {}, arg.spec, {}};
      for (const Tensor& p : parts) rec.blocks.push_back(p.shape);
      trace->outputs.push_back(std::move(rec));
    }
    result.push_back(assemble(parts, arg.spec, program.axis));
    if (trace) trace->outputs.back().global = result.back().shape;
  }
  return result;
}

}  // namespace meshrun
