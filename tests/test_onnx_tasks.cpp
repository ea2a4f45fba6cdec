// Trained task models through `qdqtrain export` (stages/export.h) and ONNX Runtime, on real
// evaluation data (../shared/data): an IMDB classifier and a SQuAD reader, each a 2-layer,
// hidden-64 BERT trained briefly from random initialisation, exported float and, after max
// calibration on training batches, QDQ for both targets. ORT's outputs are compared row by row
// with the framework's own forward (float, or fake-quantized by the model's quantizers), and the
// task metric computed from ORT's outputs (accuracy; SQuAD EM/F1 through the framework's
// postprocessing, data/squad_postprocess.h) with the framework's Task::evaluate(). The IMDB
// QDQ model is also compared with the framework running its products in bf16 (training.bf16).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <unordered_map>

#include <onnx/onnx_pb.h>

#include "autograd/gemm_bf16.h"
#include "autograd/matmul_precision.h"
#include "autograd/tape.h"
#include "data/classification_features.h"
#include "data/imdb_reader.h"
#include "data/loader.h"
#include "data/metrics.h"
#include "data/squad_features.h"
#include "data/squad_postprocess.h"
#include "data/squad_reader.h"
#include "nn/heads.h"
#include "tests/support/data.h"
#include "tests/support/onnx_task_runs.h"
#include "tests/support/run_files.h"
#include "tests/support/temp_dir.h"
#include "tests/test_onnx_support.h"
#include "trainers/trainer.h"

using namespace qdq;
using namespace qdq::testing;

namespace {

// What the comparison of one export looks at, per evaluation row (an example or a SQuAD
// window): the logits postprocessing reads, flattened (SQuAD: the window's start then end logits).
using Rows = std::vector<std::vector<float>>;

struct EvalRows {
    std::vector<Encoding> encodings;
    int32_t pad_id = 0;
};

Batch batch_of(const EvalRows& set, const std::vector<int64_t>& indices) {
    PaddingOptions padding;
    padding.pad_id = set.pad_id;
    return collate(set.encodings, {}, indices, padding);
}

// Rows from outputs [B, K] (classification) or start, end [B, T] (rows' real lengths only).
void append_rows(const EvalRows& set, const std::vector<int64_t>& indices, const std::vector<Tensor>& outputs,
                 Rows& rows) {
    for (size_t r = 0; r < indices.size(); ++r) {
        std::vector<float>& row = rows[(size_t)indices[r]];
        for (const Tensor& t : outputs) {
            const int64_t width = t.size(1);
            const int64_t n = outputs.size() == 1 ? width : (int64_t)set.encodings[(size_t)indices[r]].ids.size();
            row.insert(row.end(), t.f32() + (int64_t)r * width, t.f32() + (int64_t)r * width + n);
        }
    }
}

// The framework's eval-mode forward, 64 rows at a time.
Rows framework_rows(Task& task, const EvalRows& set) {
    nn::Module& model = task.model();
    model.eval();
    NoGradGuard no_grad;
    Rows rows(set.encodings.size());
    for (size_t start = 0; start < set.encodings.size(); start += 64) {
        std::vector<int64_t> indices;
        for (size_t i = start; i < std::min(set.encodings.size(), start + 64); ++i) indices.push_back((int64_t)i);
        Batch b = batch_of(set, indices);
        const nn::BertInputs in{b.input_ids, b.token_type_ids, b.attention_mask};
        if (auto* cls = dynamic_cast<nn::BertForSequenceClassification*>(&model)) {
            append_rows(set, indices, {cls->forward(in)}, rows);
        } else {
            nn::SpanLogits l = dynamic_cast<nn::BertForQuestionAnswering&>(model).forward(in);
            append_rows(set, indices, {l.start, l.end}, rows);
        }
    }
    return rows;
}

// ORT on every row in one padded batch; `optimized`: where ORT saves the graph it ran.
Rows onnxruntime_rows(const std::string& model, const EvalRows& set, bool classification,
                      const std::string& optimized = "") {
    std::vector<int64_t> all(set.encodings.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = (int64_t)i;
    Batch b = batch_of(set, all);
    OnnxRuntimeOptions runtime;
    runtime.optimized_path = optimized;
    std::map<std::string, Tensor> out =
        run_onnxruntime(model, {{b.input_ids, b.token_type_ids, b.attention_mask}}, runtime).outputs.at(0);
    Rows rows(all.size());
    if (classification) append_rows(set, all, {out.at("logits")}, rows);
    else append_rows(set, all, {out.at("start_logits"), out.at("end_logits")}, rows);
    return rows;
}

// Rows whose largest |ORT − framework| exceeds float rounding, 1e-4·(1 + |framework|): the float
// tolerance of tests/test_onnx.cpp, relative as trained logits reach ~10.
struct RowDiff {
    float max_abs = 0;
    std::vector<bool> inexact;
    int64_t inexact_count = 0;
    int64_t values = 0, inexact_values = 0;
};

RowDiff compare_rows(const Rows& got, const Rows& expected) {
    RowDiff d;
    d.inexact.assign(expected.size(), false);
    for (size_t r = 0; r < expected.size(); ++r) {
        EXPECT_EQ(got[r].size(), expected[r].size()) << "row " << r;
        for (size_t i = 0; i < std::min(got[r].size(), expected[r].size()); ++i) {
            const float e = std::fabs(got[r][i] - expected[r][i]);
            d.max_abs = std::max(d.max_abs, e);
            const bool off = e > 1e-4f * (1 + std::fabs(expected[r][i]));
            d.inexact[r] = d.inexact[r] || off;
            d.inexact_values += off;
            d.values++;
        }
        d.inexact_count += d.inexact[r];
    }
    return d;
}

// ORT's graph after its optimizations: how many nodes of each op ("com.microsoft.BiasGelu").
std::map<std::string, int> op_counts(const std::string& optimized) {
    onnx::ModelProto model;
    std::ifstream in(optimized, std::ios::binary);
    EXPECT_TRUE(model.ParseFromIstream(&in)) << optimized;
    std::map<std::string, int> ops;
    for (const onnx::NodeProto& node : model.graph().node())
        ops[(node.domain().empty() ? "" : node.domain() + ".") + node.op_type()]++;
    return ops;
}

std::string op_listing(const std::map<std::string, int>& ops) {
    std::string listing;
    for (const auto& [op, n] : ops) listing += " " + op + "×" + std::to_string(n);
    return listing;
}

// What ORT makes of the 2-layer encoder of either target: every quantized product an integer
// kernel (P·V, which a Q follows, a QLinearMatMul), no float MatMul left, each LayerNorm and bias
// + GELU fused, the Q/DQ pairs of the products consumed; the DequantizeLinears left feed the
// residual Adds, which stay float. Attention stays unfused: ORT's fusion matches float products,
// and its quantized form (QAttention) would compute Q·Kᵀ and P·V in float, where QDQBERT
// quantizes both products' inputs.
void expect_fusions(const std::map<std::string, int>& ops, const std::string& target) {
    auto count = [&](const std::string& op) { return ops.count(op) ? ops.at(op) : 0; };
    EXPECT_EQ(count("com.microsoft.MatMulIntegerToFloat"), 14) << target;
    EXPECT_EQ(count("QLinearMatMul"), 2) << target;
    EXPECT_EQ(count("MatMul"), 0) << target;
    EXPECT_EQ(count("com.microsoft.FusedMatMul"), 0) << target;
    EXPECT_EQ(count("LayerNormalization"), 5) << target;
    EXPECT_EQ(count("com.microsoft.BiasGelu"), 2) << target;
    EXPECT_EQ(count("DequantizeLinear"), 8) << target;
    EXPECT_EQ(count("com.microsoft.Attention") + count("com.microsoft.QAttention"), 0) << target;
}

struct Metric {
    const char* name;
    double ort, framework;  // from ORT's rows; the framework's Task::evaluate()
};

// One export judged: rows against the framework's, and each metric of ORT's rows against the
// framework's evaluate(). A metric moves only through an example whose rows moved, by at most
// `per_example` each (1/N for accuracy, 100/N for EM and F1); examples group rows (SQuAD windows
// by question: `example_of`).
// QDQ budget: integer kernels match fake quantization up to float rounding, except where a value
// lands one quantum away: x/scale within an ulp of k + ½, where ONNX's x / (amax/127) and PQ's
// x · (127/amax) can round apart, as can the slightly different inputs ORT's fused kernels
// compute. That is ~1e-5 of the quantized values, and a SQuAD window quantizes ~10^5: a few flips
// per window, each moving the logits of the tokens it reaches. How many depends on the trained
// model, which float rounding of the build changes: SQuAD's logits beyond float rounding were
// 1.1% (by at most 0.04) on one machine, 2.3% (0.023) in a release build and 6.9% (0.042) in the
// sanitizer build on another; IMDB's [CLS] logits 1.3% (0.001). The budget: at most a fifth of
// the logits beyond float rounding, none beyond 0.5 (tests/test_onnx.cpp's per-row bound).
// A wrong scale, axis or zero point, or a missing pair, moves nearly every logit.
void judge(const std::string& what, const Rows& ort, const Rows& framework, bool quantized,
           const std::vector<Metric>& metrics, double per_example, const std::vector<int64_t>& example_of,
           int64_t examples) {
    RowDiff d = compare_rows(ort, framework);
    std::vector<bool> moved((size_t)examples, false);
    for (size_t r = 0; r < ort.size(); ++r)
        if (d.inexact[r]) moved[(size_t)example_of[r]] = true;
    const int64_t moved_examples = std::count(moved.begin(), moved.end(), true);
    if (quantized) {
        EXPECT_LE(d.inexact_values * 5, d.values) << what;
        EXPECT_LE(d.max_abs, 0.5f) << what;
    } else {
        EXPECT_EQ(d.inexact_count, 0) << what << ": max |diff| " << d.max_abs;
    }
    std::printf("[ %s ] max |ORT - framework| %.3g; beyond 1e-4: logits %lld of %lld, rows %lld of %zu, "
                "examples %lld of %lld\n",
                what.c_str(), d.max_abs, (long long)d.inexact_values, (long long)d.values, (long long)d.inexact_count,
                ort.size(), (long long)moved_examples, (long long)examples);
    for (const Metric& m : metrics) {
        EXPECT_LE(std::fabs(m.ort - m.framework), per_example * (double)moved_examples + 1e-9) << what << " " << m.name;
        std::printf("[ %s ] %s: ORT %.4f, framework evaluate() %.4f, difference %+.4f\n", what.c_str(), m.name,
                    m.ort, m.framework, m.ort - m.framework);
    }
}

struct ClassificationEval {
    EvalRows rows;
    std::vector<int32_t> labels;
};

// The task's evaluation set as make_classification_task reads it: example_subset of the file.
ClassificationEval imdb_eval(const RunConfig& config) {
    ClassificationData data = read_imdb(config.data.eval_files.at(0), true);
    std::vector<TextExample> examples;
    for (size_t i : example_subset(data.examples.size(), config.data.max_eval_examples))
        examples.push_back(data.examples[i]);
    const Tokenizer tokenizer = task_tokenizer(config, nn::BertConfig{});  // bert-base's 30,522 embeddings
    ClassificationEval e;
    e.rows.encodings = classification_encodings(tokenizer, examples, config.data.max_seq_length);
    e.rows.pad_id = tokenizer.special.pad_id;
    for (const TextExample& x : examples) e.labels.push_back(x.label);
    return e;
}

double accuracy(const Rows& rows, const std::vector<int32_t>& labels) {
    int64_t correct = 0;
    for (size_t i = 0; i < rows.size(); ++i)
        correct += std::max_element(rows[i].begin(), rows[i].end()) - rows[i].begin() == labels[i];
    return (double)correct / (double)rows.size();
}

// The framework in bf16 (training.bf16) against ORT's INT8 model. A fake-quantized operand is
// q·scale with |q| <= 127; bf16 keeps 8 significant bits, so q itself is exact but q·scale
// rounds by up to 2^-9 of itself, less than a quarter of a quantum: the operand stays nearer its
// own level of the grid than any other. Yet every product rounds, so nearly every logit moves by
// a few parts in a thousand (and an activation near a rounding boundary of the next quantizer
// can land one level over): judge()'s float-rounding budget does not apply. The budget here: no
// logit beyond 0.5 (test_onnx.cpp's per-row bound), predicted labels differing on at most 2% of
// the examples, and the accuracy moving by no more than those examples account for. Measured:
// max |diff| 0.027, labels differ on 1 of 300.
void judge_bf16(const std::string& what, const Rows& ort, const Rows& framework, const std::vector<int32_t>& labels,
                double framework_accuracy) {
    RowDiff d = compare_rows(ort, framework);
    int64_t flipped = 0;
    for (size_t r = 0; r < ort.size(); ++r)
        flipped += std::max_element(ort[r].begin(), ort[r].end()) - ort[r].begin() !=
                   std::max_element(framework[r].begin(), framework[r].end()) - framework[r].begin();
    const double ort_accuracy = accuracy(ort, labels);
    std::printf("[ %s ] max |ORT - framework| %.3g; beyond 1e-4: logits %lld of %lld; labels differ on %lld of %zu; "
                "accuracy ORT %.4f, framework %.4f\n",
                what.c_str(), d.max_abs, (long long)d.inexact_values, (long long)d.values, (long long)flipped,
                ort.size(), ort_accuracy, framework_accuracy);
    EXPECT_LE(d.max_abs, 0.5f) << what;
    EXPECT_LE(flipped * 50, (int64_t)ort.size()) << what;
    EXPECT_LE(std::fabs(ort_accuracy - framework_accuracy), (double)flipped / (double)ort.size() + 1e-9) << what;
}

struct SquadEval {
    EvalRows rows;
    std::vector<SquadExample> examples;
    std::vector<SquadWindow> windows;
    std::vector<int64_t> question_of;  // per window
};

// The task's evaluation set as make_squad_task reads it: the articles split off train_files,
// example_subset of their questions, unpadded windows.
SquadEval squad_eval(const RunConfig& config) {
    const SquadData data = read_squad(config.data.train_files.at(0));
    const SquadSplit split =
        split_squad_by_article(data.examples, config.data.squad_eval_fraction, config.data.squad_split_seed);
    SquadEval e;
    for (size_t i : example_subset(split.eval.size(), config.data.max_eval_examples)) e.examples.push_back(split.eval[i]);
    SquadFeatureOptions options;
    options.max_seq_length = config.data.max_seq_length;
    options.doc_stride = config.data.doc_stride;
    options.pad_to_max_length = false;
    const Tokenizer tokenizer = task_tokenizer(config, nn::BertConfig{});  // bert-base's 30,522 embeddings
    e.windows = squad_windows(tokenizer, e.examples, options);
    e.rows.pad_id = tokenizer.special.pad_id;
    for (const SquadWindow& w : e.windows) {
        e.rows.encodings.push_back(w.encoding);
        e.question_of.push_back(w.example_index);
    }
    return e;
}

// The official EM and F1 of the answers the framework's postprocessing takes from `rows`, laid
// out as the SQuAD task lays out its logits: [windows, max_seq_length], -inf past a window's end.
SquadScore squad_score(const Rows& rows, const SquadEval& e, int64_t T) {
    std::vector<float> start(e.windows.size() * (size_t)T, -std::numeric_limits<float>::infinity()), end(start);
    for (size_t w = 0; w < rows.size(); ++w) {
        const size_t n = rows[w].size() / 2;
        std::copy_n(rows[w].begin(), n, start.begin() + (std::ptrdiff_t)(w * (size_t)T));
        std::copy_n(rows[w].begin() + (std::ptrdiff_t)n, n, end.begin() + (std::ptrdiff_t)(w * (size_t)T));
    }
    const std::vector<SquadPrediction> predicted = squad_predictions(e.examples, e.windows, start, end, T);
    std::unordered_map<std::string, std::string> by_id;
    for (size_t i = 0; i < predicted.size(); ++i) by_id[e.examples[i].id] = predicted[i].text;
    return squad_v1_evaluate(e.examples, by_id).score;
}

}  // namespace

// 800 reviews cut to 64 tokens, 100 steps: a random-init model learns enough to be above chance
// on 300 test reviews (0.5 ± 0.03; it reaches ~0.65).
TEST(OnnxTasks, ImdbClassifierKeepsItsLogitsAndAccuracy) {
    for (const char* file : {kVocab, kImdbTrain, kImdbTest}) QDQ_REQUIRE_DATA_FILE(file);
    QDQ_REQUIRE(onnxruntime);
    QDQ_REQUIRE(python_onnx);
    TempDir dir;
    const RunFiles fp32 = imdb_run(dir, 300);
    std::unique_ptr<Task> task = make_task(fp32.config, {true, true});
    ASSERT_EQ(train(fp32.config, *task).status, TrainStatus::finished);
    const double fp32_accuracy = task->evaluate(64).scores.at("accuracy");
    EXPECT_GT(fp32_accuracy, 0.6);

    const ClassificationEval eval = imdb_eval(fp32.config);
    const int64_t n = (int64_t)eval.labels.size();
    std::vector<int64_t> example_of((size_t)n);
    for (int64_t i = 0; i < n; ++i) example_of[(size_t)i] = i;
    const Rows fp32_ort = onnxruntime_rows(export_run(dir, fp32, "fp32", "tensorrt"), eval.rows, true);
    judge("imdb fp32", fp32_ort, framework_rows(*task, eval.rows), false,
          {{"accuracy", accuracy(fp32_ort, eval.labels), fp32_accuracy}}, 1.0 / (double)n, example_of, n);

    RunFiles qdq;
    std::unique_ptr<Task> quantized = calibrated_task(dir, fp32, qdq);
    const double qdq_accuracy = quantized->evaluate(64).scores.at("accuracy");
    const Rows fake_quant = framework_rows(*quantized, eval.rows);
    Rows ort_cpu;
    for (const std::string target : {"tensorrt", "onnxruntime-cpu"}) {
        const std::string optimized = (dir.path() / ("imdb." + target + ".opt.onnx")).string();
        const Rows ort = onnxruntime_rows(export_run(dir, qdq, "qdq." + target, target), eval.rows, true, optimized);
        judge("imdb qdq " + target, ort, fake_quant, true, {{"accuracy", accuracy(ort, eval.labels), qdq_accuracy}},
              1.0 / (double)n, example_of, n);
        const std::map<std::string, int> ops = op_counts(optimized);
        std::printf("[ imdb qdq %s: ORT ran ]%s\n", target.c_str(), op_listing(ops).c_str());
        expect_fusions(ops, target);
        ort_cpu = ort;
    }
    if (bf16_kernel() == Bf16Kernel::None) return;
    MatmulPrecisionGuard bf16(MatmulPrecision::BF16);
    judge_bf16("imdb qdq onnxruntime-cpu, framework in bf16", ort_cpu, framework_rows(*quantized, eval.rows),
               eval.labels, quantized->evaluate(64).scores.at("accuracy"));
}

// SQuAD v1.1 dev split by article (the only SQuAD file in the data dir): 600 training questions,
// 80 steps, 300 evaluation questions in ~2.5 windows each. The model learns little (its F1 is
// printed); what matters is that ORT's logits give the framework's answers.
TEST(OnnxTasks, SquadReaderKeepsItsLogitsAndExactMatchAndF1) {
    for (const char* file : {kVocab, kSquadDev}) QDQ_REQUIRE_DATA_FILE(file);
    QDQ_REQUIRE(onnxruntime);
    QDQ_REQUIRE(python_onnx);
    TempDir dir;
    const nlohmann::json raw = {
        {"model", {{"config", small_bert()}}},
        {"data",
         {{"task", "squad"}, {"train_files", kSquadDev}, {"squad_eval_fraction", 0.1}, {"vocab", kVocab},
          {"max_seq_length", 128}, {"doc_stride", 64}, {"max_train_examples", 600}, {"max_eval_examples", 300}}},
        {"training", training_section(dir, 80)}};
    const RunFiles fp32 = write_run(dir, "fp32.json", raw, (dir.path() / "run" / "model.h5").string());
    std::unique_ptr<Task> task = make_task(fp32.config, {true, true});
    ASSERT_EQ(train(fp32.config, *task).status, TrainStatus::finished);
    const Metrics fp32_metrics = task->evaluate(64);

    const SquadEval eval = squad_eval(fp32.config);
    const int64_t questions = (int64_t)eval.examples.size(), T = fp32.config.data.max_seq_length;
    ASSERT_EQ(fp32_metrics.counts.at("eval_windows"), (int64_t)eval.windows.size());
    auto metrics = [&](const Rows& rows, const Metrics& framework) {
        const SquadScore s = squad_score(rows, eval, T);
        return std::vector<Metric>{{"exact_match", s.exact_match, framework.scores.at("exact_match")},
                                   {"f1", s.f1, framework.scores.at("f1")}};
    };
    const Rows fp32_ort = onnxruntime_rows(export_run(dir, fp32, "fp32", "tensorrt"), eval.rows, false);
    judge("squad fp32", fp32_ort, framework_rows(*task, eval.rows), false, metrics(fp32_ort, fp32_metrics),
          100.0 / (double)questions, eval.question_of, questions);

    RunFiles qdq;
    std::unique_ptr<Task> quantized = calibrated_task(dir, fp32, qdq);
    const Metrics qdq_metrics = quantized->evaluate(64);
    const Rows fake_quant = framework_rows(*quantized, eval.rows);
    for (const std::string target : {"tensorrt", "onnxruntime-cpu"}) {
        const std::string optimized = (dir.path() / ("squad." + target + ".opt.onnx")).string();
        const Rows ort = onnxruntime_rows(export_run(dir, qdq, "qdq." + target, target), eval.rows, false, optimized);
        judge("squad qdq " + target, ort, fake_quant, true, metrics(ort, qdq_metrics), 100.0 / (double)questions,
              eval.question_of, questions);
        std::printf("[ squad qdq %s: ORT ran ]%s\n", target.c_str(), op_listing(op_counts(optimized)).c_str());
    }
}
