#include "results/pipeline_results.h"

#include <stdexcept>

namespace qdq {

namespace {

using json = nlohmann::json;

// `metrics` with each name prefixed, into `summary`.
void add_prefixed(json& summary, const std::string& prefix, const Metrics& metrics) {
    const json j = metrics_to_json(metrics);
    for (const auto& [name, value] : j.items()) summary[prefix + name] = value;
}

std::vector<QatVariantResult> qat_variants_from_json(const json& list, const std::string& source) {
    if (!list.is_array()) throw std::runtime_error(source + ": 'qat_variants' must be a list");
    std::vector<QatVariantResult> variants;
    for (size_t i = 0; i < list.size(); ++i) {
        const std::string path = "qat_variants[" + std::to_string(i) + "]";
        JsonFields f(list[i], path, source);
        QatVariantResult v;
        read_required(f, "name", v.name);
        v.test = metrics_from_json(required_section(f, "test"), path + ".test", source);
        v.validation = optional_metrics(f, "validation");
        f.finish();
        variants.push_back(v);
    }
    return variants;
}

}  // namespace

json pipeline_summary(const PipelineResults& r) {
    json summary = json::object();
    add_prefixed(summary, "fp32_", r.fp32);
    if (const CalibratedMethod* m = find_method(r.calibration, r.qat_from)) add_prefixed(summary, "ptq_", m->metrics);
    if (r.budget) {
        add_prefixed(summary, "ptq_budget_", r.budget->metrics);
        summary["ptq_budget_float_quantizers"] = (int64_t)r.budget->float_quantizers.size();
    }
    add_prefixed(summary, "qat_", r.qat);
    for (const QatVariantResult& v : r.qat_variants) add_prefixed(summary, "qat_" + v.name + "_", v.test);
    if (r.onnx) {
        add_prefixed(summary, "onnx_fp32_", r.onnx->fp32.metrics);
        add_prefixed(summary, "onnx_int8_", r.onnx->int8.metrics);
        summary["onnx_fp32_latency_ms"] = r.onnx->fp32.latency_ms;
        summary["onnx_int8_latency_ms"] = r.onnx->int8.latency_ms;
        if (r.onnx->int8_every) summary["onnx_int8_every_latency_ms"] = r.onnx->int8_every->latency_ms;
    }
    return summary;
}

json onnx_stage_to_json(const OnnxStage& onnx) {
    json j = json::array({onnx_evaluation_to_json(onnx.fp32), onnx_evaluation_to_json(onnx.int8)});
    if (onnx.int8_every) j.push_back(onnx_evaluation_to_json(*onnx.int8_every));
    return j;
}

OnnxStage onnx_stage_from_json(const json& j, const std::string& path, const std::string& source) {
    if (!j.is_array() || j.size() < 2 || j.size() > 3)
        throw std::runtime_error(source + ": " + (path.empty() ? "the file" : "'" + path + "'") +
                                 " must be a list of two evaluations, FP32 then INT8, and a third, INT8 with every "
                                 "quantizer, after an accuracy budget");
    OnnxStage onnx{onnx_evaluation_from_json(j[0], path + "[0]", source),
                   onnx_evaluation_from_json(j[1], path + "[1]", source)};
    if (j.size() == 3) onnx.int8_every = onnx_evaluation_from_json(j[2], path + "[2]", source);
    return onnx;
}

json pipeline_results_to_json(const PipelineResults& r) {
    json j = {{"config", run_config_to_json(r.config)},
              {"fp32", metrics_to_json(r.fp32)},
              {"calibration", calibration_result_to_json(r.calibration)},
              {"qat_from", r.qat_from},
              {"qat", metrics_to_json(r.qat)},
              {"summary", pipeline_summary(r)}};
    if (r.budget) j["accuracy_budget"] = accuracy_budget_to_json(*r.budget);
    if (r.fp32_validation) j["fp32_validation"] = metrics_to_json(*r.fp32_validation);
    if (r.qat_validation) j["qat_validation"] = metrics_to_json(*r.qat_validation);
    if (!r.qat_variants.empty()) {
        json& variants = j["qat_variants"] = json::array();
        for (const QatVariantResult& v : r.qat_variants) {
            json entry = {{"name", v.name}, {"test", metrics_to_json(v.test)}};
            if (v.validation) entry["validation"] = metrics_to_json(*v.validation);
            variants.push_back(entry);
        }
        j["deployed_qat"] = r.deployed_qat;
    }
    if (r.onnx) j["onnx"] = onnx_stage_to_json(*r.onnx);
    if (r.scoring) j["scoring"] = scoring_to_json(*r.scoring);
    return j;
}

PipelineResults pipeline_results_from_json(const json& j, const std::string& source) {
    JsonFields f(j, "", source);
    PipelineResults r;
    r.config = run_config_from_json(required_section(f, "config"), source);
    r.fp32 = metrics_from_json(required_section(f, "fp32"), "fp32", source);
    r.calibration = calibration_result_from_json(required_section(f, "calibration"), "calibration", source);
    read_required(f, "qat_from", r.qat_from);
    r.qat = metrics_from_json(required_section(f, "qat"), "qat", source);
    r.fp32_validation = optional_metrics(f, "fp32_validation");
    r.qat_validation = optional_metrics(f, "qat_validation");
    if (f.has("qat_variants")) {
        f.ignore("qat_variants");
        r.qat_variants = qat_variants_from_json(j.at("qat_variants"), source);
        read_required(f, "deployed_qat", r.deployed_qat);
    }
    if (f.has("accuracy_budget"))
        r.budget = accuracy_budget_from_json(f.section("accuracy_budget"), f.path_of("accuracy_budget"), source);
    if (f.has("onnx")) {
        f.ignore("onnx");
        r.onnx = onnx_stage_from_json(j.at("onnx"), "onnx", source);
    }
    r.scoring = optional_scoring(f, "scoring");
    f.ignore("summary");  // pipeline_summary of the rest
    f.finish();
    return r;
}

}  // namespace qdq
