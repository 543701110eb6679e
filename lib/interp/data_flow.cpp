// Forward data flow over a program's jaxprs (data_flow.hpp).
#include "interp/data_flow.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "interp/eval.hpp"
#include "interp/ops/control_flow.hpp"
#include "interp/primitives.hpp"

namespace meshrun::interp {
namespace {

using Mask = InputMask;
constexpr Mask kConstant = kConstantInput;
using Operand = FlowOperand;

bool is_reduction(const std::string& p) {
  return find_primitive(p) != nullptr && find_primitive(p)->reduction;
}

bool has(const std::vector<std::string>& axes, const std::string& a) {
  return std::find(axes.begin(), axes.end(), a) != axes.end();
}

}  // namespace

bool FlowOperand::enters_axis(const std::string& axis) const { return has(enters, axis); }

std::vector<std::string> shard_map_manual_axes(const Eqn& e) {
  std::vector<std::string> axes;
  const auto names = [&](const nlohmann::json& list, bool pairs) {
    if (!list.is_array()) return;
    for (const nlohmann::json& a : list) {
      const nlohmann::json& name =
          pairs ? (a.is_array() && !a.empty() ? a[0] : nlohmann::json()) : a;
      if (name.is_string()) axes.push_back(name.get<std::string>());
    }
  };
  const auto manual = e.params.find("manual_axes");
  if (manual != e.params.end() && !manual->is_null()) {
    names(*manual, false);
  } else if (const auto mesh = e.params.find("mesh"); mesh != e.params.end()) {
    names(*mesh, true);
  }
  return axes;
}

std::string declared_type(const Type& t) {
  std::string dims;
  for (const DimExpr& d : t.shape) dims += (dims.empty() ? "" : ",") + d.str();
  return std::string(dtype_name(t.dtype)) + "[" + dims + "]";
}

// Forward data flow: what each outvar of `jx` depends on, given its invars' masks.
std::vector<Mask> flow(const Jaxpr& jx, const std::vector<Mask>& in, Flow& f, int depth,
                       bool in_body) {
  std::vector<Mask> m(jx.types.size(), 0);
  for (std::size_t i = 0; i < jx.invars.size() && i < in.size(); ++i) m[jx.invars[i]] = in[i];

  for (std::size_t i = 0; i < jx.constvars.size(); ++i) {
    if (jx.consts[i].shape.empty()) continue;
    m[jx.constvars[i]] = kConstant;
    if (in_body) f.body_constants.push_back(declared_type(jx.types[jx.constvars[i]]));
  }
  for (const Eqn& e : jx.eqns) {
    std::vector<Mask> ops;
    Mask all = 0;
    for (const Atom& a : e.in) {
      ops.push_back(a.is_literal() ? 0 : m[a.var]);
      all |= ops.back();
    }
    if (const Primitive* p = find_primitive(e.primitive);
        p != nullptr && p->control != Primitive::Control::kNone && depth < 64) {
      // scan, while, cond: through loop carries to their fixpoint, and every branch.
      const auto body = [&](const Jaxpr& j, const std::vector<Mask>& sub_in) {
        return flow(j, sub_in, f, depth + 1, in_body);
      };
      const auto either = [](Mask a, Mask b) { return a | b; };
      // 64 bits: a fixpoint within 64 rounds, nothing to widen or extend.
      const auto same = [](Mask a) { return a; };
      const auto last = [](Mask, Mask after, std::uint64_t) { return after; };
      const std::vector<Mask> outs =
          control_facts<Mask>(e, ops, e.out.size(), body, either, either, same, last);
      for (std::size_t k = 0; k < e.out.size(); ++k) m[e.out[k]] = outs[k];
      continue;
    }
    const Jaxpr* sub = e.sub("jaxpr") ? e.sub("jaxpr") : e.sub("call_jaxpr");
    std::vector<std::string> entered;  // a shard_map's axes the code around it is not manual over
    if (e.primitive == "shard_map" && sub != nullptr) {
      for (const std::string& a : shard_map_manual_axes(e))
        if (!has(f.manual, a)) entered.push_back(a);
      std::vector<PartitionSpec> specs;
      try {
        specs = shard_map_specs(e, "in_specs");
      } catch (const PrimitiveError&) {
      }
      for (std::size_t k = 0; k < ops.size() && k < specs.size() && k < sub->invars.size(); ++k) {
        const Atom& a = e.in[k];
        f.operands.push_back({ops[k], specs[k], declared_type(sub->types[sub->invars[k]]),
                              a.is_literal() ? "" : declared_type(jx.types[a.var]), &e, entered});
      }
    }
    if (sub != nullptr && depth < 64) {
      const std::size_t around = f.manual.size();
      f.manual.insert(f.manual.end(), entered.begin(), entered.end());
      std::vector<Mask> outs = flow(*sub, ops, f, depth + 1, in_body || e.primitive == "shard_map");
      f.manual.resize(around);
      // Combined over the axis only by the shard_map that makes it manual: a nested one's body
      // (or a partial one's, over an automatic axis) combines nothing over it.
      if (e.primitive == "shard_map" && !f.combined_over.empty() && has(entered, f.combined_over)) {
        std::vector<PartitionSpec> out_specs;
        try {
          out_specs = shard_map_specs(e, "out_specs");
        } catch (const PrimitiveError&) {
        }
        for (std::size_t k = 0; k < outs.size() && k < out_specs.size(); ++k) {
          bool split = false;
          for (const auto& axes : out_specs[k].dims())
            split = split || std::find(axes.begin(), axes.end(), f.combined_over) != axes.end();
          if (!split) outs[k] &= kConstant;
        }
      }
      for (std::size_t k = 0; k < e.out.size() && k < outs.size(); ++k) m[e.out[k]] = outs[k];
      continue;
    }
    if (is_reduction(e.primitive)) {
      // psum of several operands: each result depends on its own operand only.
      for (std::size_t k = 0; k < e.out.size() && k < ops.size(); ++k) m[e.out[k]] = ops[k];
      continue;
    }
    for (int v : e.out) m[v] = all;
  }

  std::vector<Mask> out;
  for (const Atom& a : jx.outvars) out.push_back(a.is_literal() ? 0 : m[a.var]);
  return out;
}

std::map<const Eqn*, std::vector<int>> shard_map_operand_inputs(const ProgramFile& file,
                                                                const Export& exp) {
  std::vector<Mask> in;
  for (std::size_t i = 0; i < file.inputs.size(); ++i) in.push_back(i < 63 ? Mask{1} << i : 0);
  Flow f;
  flow(exp.jaxpr, in, f);
  std::map<const Eqn*, std::vector<int>> out;
  for (const Operand& op : f.operands) {
    int input = -1;
    for (std::size_t i = 0; i < file.inputs.size() && i < 63; ++i) {
      if (op.depends == (Mask{1} << i) &&
          op.outer_type == declared_type(exp.jaxpr.types[exp.jaxpr.invars[i]])) {
        input = static_cast<int>(i);
      }
    }
    out[op.shard_map].push_back(input);
  }
  return out;
}

}  // namespace meshrun::interp
