// The program file against itself, before any case is read (reader.cpp calls them once per
// export): what `inputs` declares and what the jaxpr computes on must be the same arrays, so that a
// case is never blamed for the file, nor an i32 input read into an f32 program.
#pragma once

#include <string>
#include <vector>

#include "interp/ir.hpp"

namespace meshrun::interp {

// Each of `inputs` has its export's invar's dtype and rank, the same size where both give a
// number, and each dimension name of `inputs` stands for one expression of the jaxpr's wherever
// it is used (x [B, D] and w1 [D, H] swapped in `inputs` give D two meanings: refused).
// `at`: "exports[0].jaxpr".
void check_inputs_agree(const std::vector<ArgInfo>& inputs, const Jaxpr& jx, const std::string& at);

// Every name a type of the export uses (at any depth) is one of its `dims`. `at`: "exports[0]".
void check_dims_named(const Export& x, const std::string& at);

}  // namespace meshrun::interp
