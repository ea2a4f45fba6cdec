#include "trainers/task.h"

namespace qdq {

std::unique_ptr<Task> make_squad_task(const RunConfig& config, const TaskData&) {
    throw std::runtime_error(config.source + ": data.task squad is not built yet");
}

}  // namespace qdq
