// Compiled with the shard layer's include roots only (tests/CMakeLists.txt): its own headers are
// found, the mesh layer's above it are not. The test passes when the compiler says so.
#include "shard/partition_spec.hpp"
#include "mesh/device.hpp"
