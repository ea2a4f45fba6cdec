// Timing and reporting shared by the benchmarks. Each workload runs `warmup` untimed
// repetitions, then `reps` timed ones; we report the median (robust to the odd preempted
// repetition on a shared machine) and the minimum.
//
// Output format, shared with bench_torch.py so that run.sh can join the two by name:
//   lines starting with '#' are comments (configuration, backend);
//   every other line after the header is: name reps median_ms min_ms gflops
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace qdq::bench {

struct Timing {
    int reps = 0;
    double median_ms = 0;
    double min_ms = 0;
};

// The median and minimum of repetitions timed in milliseconds (at least one).
inline Timing summarize(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    size_t n = ms.size();
    double median = n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
    return Timing{(int)n, median, ms.front()};
}

// One call of fn, in milliseconds.
template <typename Fn>
double time_once(Fn&& fn) {
    auto start = std::chrono::steady_clock::now();
    fn();
    auto stop = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(stop - start).count();
}

template <typename Fn>
Timing time_it(int warmup, int reps, Fn&& fn) {
    for (int i = 0; i < warmup; ++i) fn();
    std::vector<double> ms;
    for (int i = 0; i < reps; ++i) ms.push_back(time_once(fn));
    return summarize(ms);
}

inline void print_header() {
    std::printf("%-28s %5s %11s %11s %9s\n", "name", "reps", "median_ms", "min_ms", "GFLOP/s");
}

// flops = 0 prints "-": the workload has no meaningful FLOP count.
inline void print_row(const std::string& name, const Timing& t, double flops) {
    if (flops > 0)
        std::printf("%-28s %5d %11.3f %11.3f %9.1f\n", name.c_str(), t.reps, t.median_ms,
                    t.min_ms, flops / (t.median_ms * 1e6));
    else
        std::printf("%-28s %5d %11.3f %11.3f %9s\n", name.c_str(), t.reps, t.median_ms, t.min_ms,
                    "-");
    std::fflush(stdout);
}

}  // namespace qdq::bench
