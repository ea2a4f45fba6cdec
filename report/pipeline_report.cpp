#include "report/pipeline_report.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "json/json_file.h"
#include "report/number_text.h"
#include "report/pipeline_rows.h"
#include "report/svg_plot.h"
#include "report/text_append.h"
#include "report/training_curves.h"

namespace qdq {

namespace fs = std::filesystem;

// Where the choices (the best checkpoint with load_best_model_at_end, the calibration method)
// were made: on the validation split, whose size is given, or on the test set.
std::string choices_sentence(const RunConfig& config, const PipelineResults& results) {
    const double fraction = config.pipeline.validation_fraction;
    if (fraction == 0 || !results.fp32_validation)
        return "Choices (calibration method, best checkpoint) were made on these test numbers: "
               "pipeline.validation_fraction is 0.";
    const auto examples = results.fp32_validation->counts.find("eval_examples");
    const std::string size = examples == results.fp32_validation->counts.end()
                                 ? ""
                                 : " (" + std::to_string(examples->second) + " examples)";
    return "Choices (calibration method, best checkpoint) were made on a validation split of " +
           fixed(100 * fraction, 0) + "% of the training examples" + size +
           ", held out of training; every number above is the test set's.";
}

namespace {

// How the products of two quantized operands ran, after "those of two quantized operands", as
// the record says; `object` ends the sentence where the code's own wording names its object.
std::string quantized_products_clause(const std::optional<Scoring>& scoring, const std::string& object) {
    if (!scoring)
        return "either on their dequantized values or on their integer codes: the record predates records saying "
               "which";
    if (scoring->quantized_products == QuantizedProducts::integer_codes)
        return "on their integer codes, as the exported INT8 graph computes" + object;
    return "on their dequantized values (pytorch-quantization's fake quantization), where the exported INT8 graph "
           "multiplies the integer codes";
}

// A LayerNorm other than the exact one, said where a record's rows ran it.
std::string layer_norm_sentence(const std::optional<Scoring>& scoring) {
    if (!scoring || scoring->layer_norm == LayerNormForward::exact) return "";
    return " LayerNorm summed its mean and variance in float32, not in double with each output rounded once.";
}

// What the float set costs in ONNX Runtime: the INT8 model's latency against every quantizer's.
std::string float_set_latency_sentence(const PipelineResults& results) {
    if (!results.onnx || !results.onnx->int8_every) return "";
    const double with = results.onnx->int8.latency_ms, every = results.onnx->int8_every->latency_ms;
    return " In ONNX Runtime at batch 1 the float set costs " + fixed(with - every, 2) + " ms (" +
           fixed(100 * (with - every) / every, 1) + "%): " + fixed(with, 2) + " ms against " + fixed(every, 2) +
           " ms with every quantizer in INT8.";
}

// Which QAT run the INT8 export is of, when there was a choice.
std::string deployed_sentence(const PipelineResults& results) {
    if (results.qat_variants.empty() || !results.onnx) return "";
    return "The INT8 export is of " + results.deployed_qat +
           ", the best QAT run on the metric where choices are made (among those ONNX can hold). ";
}

// How each exported model's outputs compare with the framework's for the same checkpoint:
// "ONNX Runtime INT8 ...: logits argmax the same on 994 of 1000 rows, largest difference 0.3068 (of
// the probabilities 0.1111)."
std::string agreement_sentence(const PipelineResults& results) {
    if (!results.onnx) return "";
    std::vector<const OnnxEvaluation*> rows = {&results.onnx->fp32, &results.onnx->int8};
    if (results.onnx->int8_every) rows.push_back(&*results.onnx->int8_every);
    std::string text;
    for (const OnnxEvaluation* e : rows) {
        if (e->agreement.empty()) continue;
        text += " " + e->model + " against the framework's model:";
        for (const OutputFidelity& o : e->agreement)
            text += std::string(&o == &e->agreement.front() ? " " : "; ") + o.name + " argmax the same on " +
                    std::to_string(o.argmax_agree) + " of " + std::to_string(o.rows) + " rows, largest difference " +
                    fixed(o.max_difference, 4) + " (of the probabilities " + fixed(o.max_probability_difference, 4) + ")";
        text += ".";
    }
    return text;
}

}  // namespace

std::string precision_sentence(const PipelineResults& results) {
    const std::optional<Scoring>& scoring = results.scoring;
    if (!results.config.training.bf16)
        return "Every framework row ran its matrix products in FP32, those of two quantized operands " +
               quantized_products_clause(scoring, " them") + "." + layer_norm_sentence(scoring);
    return "Training ran its matrix products in bf16 with FP32 accumulation (training.bf16; in FP32 on a CPU "
           "without a bf16 kernel, as the run's log says), and so did the FP32 row's scoring; every quantized row "
           "was scored with FP32 products, those of two quantized operands " +
           quantized_products_clause(scoring, "") + "." + layer_norm_sentence(scoring) +
           " ONNX Runtime rows, where there are, run the exported FP32 and INT8 graphs.";
}

std::vector<std::string> qat_stage_names(const PipelineResults& results, std::vector<std::string> names) {
    for (const QatVariantResult& v : results.qat_variants) names.push_back("qat_" + v.name);
    return names;
}

// Where the budget's loss was measured: records from before the halves checked all of validation.
std::string checked_where(const AccuracyBudgetResult& b) {
    if (b.validation_fp32) return " on validation's second half (the sweep ranked on its first)";
    return b.validation ? " on validation" : " on test";
}

std::string budget_sentence(const PipelineResults& results) {
    if (!results.budget) return "";
    const AccuracyBudgetResult& b = *results.budget;
    std::string rows;
    for (const std::string& row : b.left_in_float) rows += (rows.empty() ? "" : ", ") + row;
    const size_t n = b.float_quantizers.size();
    const std::string loss = b.loss >= 0 ? fixed(b.loss, 2) + " points below FP32" : fixed(-b.loss, 2) + " points above FP32";
    return " Accuracy budget " + fixed(b.budget, 2) + " points: " +
           (b.left_in_float.empty() ? std::string("the PTQ model was within it, nothing left in float")
                                    : std::to_string(n) + (n == 1 ? " quantizer" : " quantizers") + " left in float (" +
                                          rows + "), " + loss + checked_where(b) +
                                          (b.held ? "" : ", which is still over the budget")) +
           (qat_takes_float_set(b, results.calibration) || b.left_in_float.empty()
                ? "; QAT and the INT8 export leave the same ones out."
                : "; that is the FP32 model, so QAT starts from the fully quantized PTQ model instead.") +
           float_set_latency_sentence(results);
}

void write_pipeline_report(const RunConfig& config, const PipelineResults& results) {
    const std::string dir = config.training.output_dir;
    fs::create_directories(dir + "/plots");
    write_json_file(dir + "/results.json", pipeline_results_to_json(results));
    const std::vector<std::string> metrics = shown_metrics(results.fp32.task);

    std::string md = "# " + config.source + "\n\n| model |";
    std::string rule = "|---|";
    for (const std::string& m : metrics) md += " " + m + " (%) | vs FP32 |", rule += "---:|---:|";
    md += " ONNX Runtime latency, batch 1 (ms) | batched (ms/example) |\n" + rule + "---:|---:|\n";
    std::vector<std::string> labels;
    std::vector<double> values;
    for (const PipelineRow& row : pipeline_rows(results)) {
        append(md, {"| ", row_label(row), " |"});
        for (const std::string& m : metrics) {
            const double v = row.metrics.percent(m), base = results.fp32.percent(m);
            std::string change;
            if (row.model != "FP32") append(change, {v >= base ? "+" : "", fixed(v - base, 2)});
            append(md, {" ", fixed(v, 2), " | ", change, " |"});
        }
        append(md, {" ", row.latency_ms ? fixed(*row.latency_ms, 1) : "", " | ",
                    row.ms_per_example ? fixed(*row.ms_per_example, 2) : "", " |\n"});
        labels.push_back(row_label(row));
        values.push_back(row.metrics.percent(metrics.back()));
    }
    const CalibrationCost& c = results.calibration.cost;
    const auto examples = results.fp32.counts.find("eval_examples");
    const bool counted = examples != results.fp32.counts.end();
    md += "\nEvaluated on " + std::to_string(counted ? examples->second : (int64_t)0) + " examples" +
          (counted ? "" : " (see eval_results.json)") + ". Calibration: " + std::to_string(c.calibration_examples) +
          " training examples, collecting at " + fixed(c.collect_ratio, 2) +
          "x the CPU time of a plain pass over them. QAT from the " + results.qat_from +
          " calibration at " + fixed(config.pipeline.qat_learning_rate_ratio, 3) +
          " of the FP32 learning rate. " + deployed_sentence(results) + precision_sentence(results) + " " +
          choices_sentence(config, results) +
          budget_sentence(results) + agreement_sentence(results) +
          " Per-quantizer ranges and sensitivity: calibrate/calibration_report.md.\n"
          "\n![" + metrics.back() + " by stage](plots/metric_by_stage.svg)\n![FP32 training](plots/fp32_loss.svg)\n"
          "![QAT training](plots/qat_loss.svg)\n";
    for (const QatVariantResult& v : results.qat_variants)
        md += "![QAT " + v.name + " training](plots/qat_" + v.name + "_loss.svg)\n";
    std::ofstream out(dir + "/results.md", std::ios::trunc);
    out << md;
    if (!out) throw std::runtime_error(dir + "/results.md: cannot write");
    for (const std::string& stage : qat_stage_names(results, {"fp32", "qat"}))
        write_training_curves(dir + "/" + stage, dir + "/plots/" + stage);
    write_svg(dir + "/plots/metric_by_stage.svg", svg_bar_chart(metrics.back() + " by stage", metrics.back() + " (%)", labels, values));
}

}  // namespace qdq
