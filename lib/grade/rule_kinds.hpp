// The rule kinds an exercise file may name ({"rule": "input_split", "input": "w1", "dim": 1}):
// one generic implementation per kind, keyed by the kind, a kind given twice refused. Each kind
// declares its fields, so an exercise file is checked when it is read (exercise.cpp): a field
// missing, of the wrong type, naming an input, output or axis the exercise lacks, or one the kind
// does not take is a one-line error naming the file and the field. docs/grading.md says, per
// kind, the requirement in the exercise's words and what meshrun checks for it.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "grade/draws.hpp"
#include "grade/semantic_rules.hpp"
#include "trace/structure.hpp"

namespace meshrun::interp {

struct Exercise;
struct LoadedProgram;
struct Export;

// What a field of a rule holds, checked against the exercise at parse.
enum class FieldType {
  kInput,        // the name of one of the exercise's inputs
  kInputs,       // a non-empty array of them
  kOutput,       // the name of one of its outputs
  kOutputs,      // an array of them (may be empty)
  kAxis,         // an axis of the exercise's mesh
  kDim,          // an integer dimension, 0 to 7
  kText,         // a non-empty string without control bytes (a name, a sentence)
  kTexts,        // a non-empty array of them
  kCollectives,  // a non-empty array of collectives' names, each one of collective_names()
  kFlag,         // true or false
  kThrough,      // {"target": an input, "loss": an output}
  kSpec,         // a partition spec: per dimension an axis of the mesh or null
  kAlong,        // "rows" (the first dimension) or "columns" (the last)
};

struct RuleField {
  std::string name;
  FieldType type;
  bool required = true;
};

// What a kind builds a rule from.
struct RuleContext {
  const LoadedProgram& lp;
  const Exercise& exercise;
  Reference reference;  // the exercise's reference program, loaded on first use
  // The case's decisions, shared by the program's checks by values (draws.hpp).
  std::shared_ptr<CaseMemo> memo = std::make_shared<CaseMemo>();
};

struct RuleKind {
  std::string kind;
  std::vector<RuleField> fields;  // besides "rule" and "says" (which every kind takes)
  // Checked on the program file, once per export (the case may run any of them): the rule holds
  // when it holds on every export, else the first failing export says why.
  std::function<StructuralRule(const nlohmann::json& spec, const RuleContext& cx,
                               const Export& exp)>
      on_file;
  // Otherwise checked on the run (trace, values).
  std::function<StructuralRule(const nlohmann::json& spec, const RuleContext& cx)> on_run;
};

class RuleKinds {
 public:
  // std::logic_error when `kind.kind` is already there, or it has neither builder.
  void add(RuleKind kind);
  const RuleKind* find(const std::string& kind) const;  // nullptr when unknown
  std::string names() const;                            // "added_once, combined_over, ..."

 private:
  std::vector<RuleKind> kinds_;
};

// The collectives a trace records, by JAX's names (CollectiveRecord::op): psum, pmean,
// all_gather, psum_scatter (also for reduce_scatter), ppermute, all_to_all, sorted.
const std::vector<std::string>& collective_names();

// The kinds meshrun ships.
const RuleKinds& rule_kinds();

}  // namespace meshrun::interp
