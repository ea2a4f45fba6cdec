// amax from a collected histogram: PQ's _compute_amax_percentile, _compute_amax_mse and
// _compute_amax_entropy (calib/histogram.py), restated in calibrators.h. Sums of counts are
// exact in double (integers below 2^53); only the divergences and errors carry rounding.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "quant/calibrators.h"
#include "quant/fake_quant.h"

namespace qdq {

namespace {

void check_candidates(const HistogramCalibrator& calib, const char* method, int64_t start_bin,
                      int64_t stride, int64_t last) {
    check(calib.width > 0.0f,
          std::string(method) + ": the histogram holds no nonzero value (collect first)");
    check(stride >= 1, std::string(method) + ": stride must be >= 1");
    check(start_bin >= 1 && start_bin <= last,
          std::string(method) + ": no candidate: start_bin " + std::to_string(start_bin) +
              " with " + std::to_string(calib.counts.size()) + " bins");
}

}  // namespace

float percentile_amax(const HistogramCalibrator& calib, double percentile) {
    check(percentile >= 0.0 && percentile <= 100.0,
          "percentile_amax: percentile must be in [0, 100], got " + std::to_string(percentile));
    check(calib.width > 0.0f, "percentile_amax: the histogram holds no nonzero value (collect first)");
    double total = 0;
    for (int64_t c : calib.counts) total += (double)c;
    double target = percentile / 100.0, cdf = 0;
    int64_t bins = (int64_t)calib.counts.size();
    for (int64_t i = 0; i < bins; ++i) {
        cdf += (double)calib.counts[(size_t)i] / total;
        if (cdf >= target) return histogram_edge(calib, i);
    }
    return histogram_edge(calib, bins);  // rounding left the CDF short of 1: numpy's searchsorted
}

float mse_amax(const HistogramCalibrator& calib, int64_t start_bin, int64_t stride) {
    int64_t bins = (int64_t)calib.counts.size();
    check_candidates(calib, "mse_amax", start_bin, stride, bins - 1);
    Tensor centres = empty({bins});
    float* c = centres.f32();
    std::vector<int64_t> occupied;
    for (int64_t j = 0; j < bins; ++j) {
        c[j] = (histogram_edge(calib, j) + histogram_edge(calib, j + 1)) / 2.0f;
        if (calib.counts[(size_t)j] != 0) occupied.push_back(j);
    }
    // PQ's fake_tensor_quant with num_bits and unsigned; centres are >= 0, so the lower bound
    // (narrow range or not) never applies.
    QuantParams params{calib.num_bits, calib.unsigned_};
    Tensor amax = empty({});
    double best = std::numeric_limits<double>::infinity();
    int64_t best_i = start_bin;
    for (int64_t i = start_bin; i < bins; i += stride) {
        amax.f32()[0] = c[i];
        Tensor q = fake_quant(centres, amax, params);
        const float* pq = q.f32();
        double error = 0;
        for (int64_t j : occupied) {
            double d = (double)pq[j] - (double)c[j];  // exact: both are floats
            error += (double)calib.counts[(size_t)j] * d * d;
        }
        if (error < best) {
            best = error;
            best_i = i;
        }
    }
    return c[best_i];
}

float entropy_amax(const HistogramCalibrator& calib, int64_t start_bin, int64_t stride) {
    int64_t bins = (int64_t)calib.counts.size();
    check_candidates(calib, "entropy_amax", start_bin, stride, bins);
    std::vector<double> b(calib.counts.begin(), calib.counts.end());
    if (bins > 1) b[0] = b[1];
    std::vector<double> tail((size_t)bins + 1, 0.0);  // tail[i] = Σ_{j >= i} b[j]
    for (int64_t j = bins - 1; j >= 0; --j) tail[(size_t)j] = tail[(size_t)j + 1] + b[(size_t)j];
    const double total = tail[0];
    const int64_t levels = int64_t{1} << (calib.num_bits - 1 + (calib.unsigned_ ? 1 : 0));
    std::vector<double> level_sum((size_t)levels), level_nonzero((size_t)levels);
    double best = std::numeric_limits<double>::infinity();
    int64_t best_i = start_bin;
    for (int64_t i = start_bin; i <= bins; i += stride) {
        std::fill(level_sum.begin(), level_sum.end(), 0.0);
        std::fill(level_nonzero.begin(), level_nonzero.end(), 0.0);
        for (int64_t j = 0; j < i; ++j)
            if (b[(size_t)j] != 0) {
                level_sum[(size_t)(j * levels / i)] += b[(size_t)j];
                level_nonzero[(size_t)(j * levels / i)] += 1;
            }
        const double kept = total - tail[(size_t)i];  // Σ Q before normalising
        double kl = 0;
        for (int64_t j = 0; j < i; ++j) {
            double p = b[(size_t)j] + (j == i - 1 ? tail[(size_t)i] : 0.0);
            if (p == 0) continue;
            if (b[(size_t)j] == 0) {  // Q is 0 where P is not
                kl = std::numeric_limits<double>::infinity();
                break;
            }
            size_t k = (size_t)(j * levels / i);
            double pn = p / total, qn = level_sum[k] / level_nonzero[k] / kept;
            kl += pn * std::log(pn / qn);
        }
        if (kl <= best) {  // <=: the last argmin, as PQ
            best = kl;
            best_i = i;
        }
    }
    return histogram_edge(calib, best_i);
}

}  // namespace qdq
