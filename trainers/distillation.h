// Knowledge distillation (Hinton et al. 2015) during training or QAT, from the run config's
// "distillation" section (trainers/run_config.h), as FasterTransformer's BERT QAT and Model
// Optimizer's QAD add it to the recipes:
//   loss = α·task_loss + (1 − α)·T²·KL(teacher ‖ student)
// with the KL of the softmaxes at temperature T (autograd/ops.h softmax_kl_div, batchmean)
// averaged over the model's logit outputs: SQuAD's start and end each give one term, halved as
// its two cross-entropies are. The T² keeps the KL term's gradients, which shrink as 1/T², the
// size of the task loss's whatever T.
//
// The teacher is a model of the student's task and class, read from distillation.teacher
// whenever a task is made for training (so at every start and resumption of a run; it is never
// checkpointed), without quantizers, in eval mode (no dropout, nothing drawn from any RNG), and
// run without the tape on the student's batch.
#pragma once

#include <memory>
#include <vector>

#include "autograd/rng.h"
#include "autograd/tape.h"
#include "autograd/tensor.h"
#include "nn/bert.h"
#include "nn/bert_config.h"
#include "nn/module.h"
#include "trainers/run_config.h"

namespace qdq {

// `student_logits[k]` and `teacher_logits[k]` are one output's [N, C] logits of either model.
// With α = 1 the KL term is multiplied by 0: the loss and its gradients equal the task loss's.
Tensor distillation_loss(const DistillationSettings& distillation, const Tensor& task_loss,
                         const std::vector<Tensor>& student_logits, const std::vector<Tensor>& teacher_logits);

// The teacher's model config, its file's own (trainers/task.h model_file_config), with the
// student's num_labels and label names (classification takes them from the data set). It may be
// larger than the student, but must read the same token ids (vocab_size, type_vocab_size), hold
// data.max_seq_length positions and, when its config names the student's labels, name them in
// the student's order (trainers/classification_labels.h): its logits are compared with the
// student's class by class. Errors name distillation.teacher.
nn::BertConfig teacher_model_config(const RunConfig& config, const nn::BertConfig& student);

// Reads every weight of `teacher` from distillation.teacher and puts it in eval mode. A weight
// the file lacks is an error (a teacher partly at its random initialisation would teach noise);
// ranges (_amax) of a quantized file are skipped, as the teacher runs in float.
void load_teacher(nn::Module& teacher, const RunConfig& config);

// The task's teacher: a TaskModel (the student's class) of teacher_model_config, loaded.
template <typename TaskModel>
std::unique_ptr<TaskModel> make_teacher(const RunConfig& config, const nn::BertConfig& student) {
    Rng init_rng(config.training.seed);  // every weight is then replaced by the teacher file's
    auto teacher = std::make_unique<TaskModel>(teacher_model_config(config, student), init_rng);
    load_teacher(*teacher, config);
    return teacher;
}

// The teacher's outputs for the student's batch, off the tape.
template <typename TaskModel>
auto teacher_forward(TaskModel& teacher, const nn::BertInputs& in) {
    NoGradGuard no_grad;
    return teacher.forward(in);
}

}  // namespace qdq
