// What a run trains: data.task, parsed once at load into this type, on which the model's head,
// the data's reading, the metrics and the export are chosen.
#pragma once

#include <utility>

namespace qdq {

enum class TaskKind { classification, squad, mlm };

// data.task's names, as configs and result files spell them (json/json_fields.h's choices).
inline constexpr std::pair<const char*, TaskKind> kTaskKindNames[] = {
    {"classification", TaskKind::classification}, {"squad", TaskKind::squad}, {"mlm", TaskKind::mlm}};

}  // namespace qdq
