// The default GroupProvider: every device of the mesh lives in this process, and each group of
// each tuple of axes is an InProcessGroup (collectives/in_process.hpp) -- XLA's replica groups,
// {{0,1,2,3},{4,5,6,7}} for 'model' on data=2, model=4. New groups for every run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "mesh/group_provider.hpp"
#include "shard/topology.hpp"

namespace meshrun {

class InProcessGroups final : public GroupProvider {
 public:
  explicit InProcessGroups(MeshShape shape);

  int first_device() const override { return 0; }
  int local_devices() const override { return size_; }
  void begin_run(const GroupOptions& options, std::function<void()> aborted_elsewhere) override;
  std::vector<GroupMembership> memberships(int local) override;
  void abort(const std::string& reason) override;

 private:
  // The groups of one tuple of axes (mesh_axis_groups places the devices).
  struct Set {
    AxisGroups layout;
    std::vector<std::unique_ptr<InProcessGroup>> groups;
  };
  MeshShape shape_;
  int size_;
  std::vector<Set> sets_;
};

}  // namespace meshrun
