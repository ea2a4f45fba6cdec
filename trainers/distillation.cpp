#include "trainers/distillation.h"

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "autograd/ops.h"
#include "trainers/checkpoint.h"
#include "trainers/classification_labels.h"
#include "trainers/run_device.h"
#include "trainers/task.h"

namespace qdq {

Tensor distillation_loss(const DistillationSettings& distillation, const Tensor& task_loss,
                         const std::vector<Tensor>& student_logits, const std::vector<Tensor>& teacher_logits) {
    if (student_logits.empty() || student_logits.size() != teacher_logits.size())
        throw std::invalid_argument("distillation_loss: " + std::to_string(student_logits.size()) +
                                    " student outputs for " + std::to_string(teacher_logits.size()) + " of the teacher");
    const float temperature = (float)distillation.temperature;
    Tensor kl = softmax_kl_div(student_logits[0], teacher_logits[0], temperature);
    for (size_t k = 1; k < student_logits.size(); ++k)
        kl = add(kl, softmax_kl_div(student_logits[k], teacher_logits[k], temperature));
    const double kl_weight =
        (1 - distillation.alpha) * distillation.temperature * distillation.temperature / (double)student_logits.size();
    return add(mul_scalar(task_loss, (float)distillation.alpha), mul_scalar(kl, (float)kl_weight));
}

nn::BertConfig teacher_model_config(const RunConfig& config, const nn::BertConfig& student) {
    const std::string& path = config.distillation->teacher;
    if (path.empty())
        throw ConfigError(config.source + ": 'distillation.teacher' is not set: only the pipeline has a " +
                          "default teacher (its FP32 model); a training run must name one");
    nn::BertConfig c = model_file_config(path);
    const auto refuse = [&](const std::string& what) {
        throw ConfigError(config.source + ": 'distillation.teacher' " + path + ": " + what);
    };
    // Its logits are compared with the student's class by class.
    if (!c.label_names.empty() && !label_order(c.label_names, student.label_names, path).model_ids.empty())
        refuse("orders the labels otherwise than the model (the teacher's by id " +
               nlohmann::json(c.label_names).dump() + ", the model's " + nlohmann::json(student.label_names).dump() + ")");
    c.num_labels = student.num_labels;
    c.label_names = student.label_names;
    if (c.vocab_size != student.vocab_size || c.type_vocab_size != student.type_vocab_size)
        refuse("reads other token ids than the model (vocab_size " + std::to_string(c.vocab_size) + " and " +
               std::to_string(student.vocab_size) + ", type_vocab_size " + std::to_string(c.type_vocab_size) +
               " and " + std::to_string(student.type_vocab_size) + ")");
    if (config.data.max_seq_length > c.max_position_embeddings)
        refuse("holds " + std::to_string(c.max_position_embeddings) + " positions, fewer than data.max_seq_length " +
               std::to_string(config.data.max_seq_length));
    return c;
}

void load_teacher(nn::Module& teacher, const RunConfig& config) {
    const std::string& path = config.distillation->teacher;
    nn::LoadReport report = read_model_weights(teacher, path);
    std::erase_if(report.unexpected, [](const std::string& key) { return key.ends_with("_amax"); });
    if (!report.missing.empty())
        throw ConfigError(config.source + ": 'distillation.teacher' " + path +
                          " is not a model of this task: " + report.summary());
    if (!report.unexpected.empty()) std::cerr << path << " (distillation.teacher): " << report.summary();
    teacher.eval();
    teacher.move_to(run_device(config.training));  // beside the student
}

}  // namespace qdq
