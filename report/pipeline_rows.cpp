#include "report/pipeline_rows.h"

#include "report/number_text.h"

namespace qdq {

std::vector<PipelineRow> pipeline_rows(const PipelineResults& r) {
    std::vector<PipelineRow> rows = {{"FP32", "", r.fp32, {}, {}}};
    for (const CalibratedMethod& m : r.calibration.methods) rows.push_back({"PTQ " + m.name, "", m.metrics, {}, {}});
    // The method and the float set vary by run; a sweep gathers them in the row's "from".
    if (r.budget)
        rows.push_back({"PTQ within " + fixed(r.budget->budget, 2) + " points",
                        r.budget->method + " with " + std::to_string(r.budget->float_quantizers.size()) + " in float",
                        r.budget->metrics, {}, {}});
    rows.push_back({"QAT", r.qat_from, r.qat, {}, {}});
    for (const QatVariantResult& v : r.qat_variants) rows.push_back({"QAT " + v.name, r.qat_from, v.test, {}, {}});
    if (r.onnx) {
        const OnnxEvaluation& fp32 = r.onnx->fp32;
        const OnnxEvaluation& int8 = r.onnx->int8;
        rows.push_back({fp32.model, "", fp32.metrics, fp32.latency_ms, fp32.ms_per_example});
        rows.push_back({int8.model, r.deployed_qat, int8.metrics, int8.latency_ms, int8.ms_per_example});
        if (const std::optional<OnnxEvaluation>& e = r.onnx->int8_every)
            rows.push_back({e->model, "", e->metrics, e->latency_ms, e->ms_per_example});
    }
    return rows;
}

std::string row_label(const PipelineRow& row) {
    return row.from.empty() ? row.model : row.model + " (from " + row.from + ")";
}

}  // namespace qdq
