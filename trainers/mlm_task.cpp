#include "trainers/task.h"

namespace qdq {

std::unique_ptr<Task> make_mlm_task(const RunConfig& config, const TaskData&) {
    throw std::runtime_error(config.source + ": data.task mlm is not built yet");
}

}  // namespace qdq
