// Reading and featurizing a full-size training set as a run does: make_task with only the
// training data asked for, on a 2-layer model so that the model's cost stays out of the figures.
// Prints the wall and CPU seconds, the features made and the process's peak resident memory.
// Usage: bench_readers CONFIG   (bench/bench_readers.sh writes the configs and the data files)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>

#include "trainers/run_config.h"
#include "trainers/task.h"

namespace {

double process_cpu_seconds() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double peak_resident_mb() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return (double)usage.ru_maxrss / 1024.0;  // Linux reports kilobytes
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: bench_readers CONFIG\n");
        return 2;
    }
    try {
        const qdq::RunConfig config = qdq::load_run_config(argv[1]);
        const auto start = std::chrono::steady_clock::now();
        const double cpu_start = process_cpu_seconds();
        const std::unique_ptr<qdq::Task> task =
            qdq::make_task(config, {.train = true, .eval = false, .weights = false, .on_run_device = false});
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("%s: %lld training features in %.1f s (%.1f CPU s), peak resident %.0f MB\n", argv[1],
                    (long long)task->train_size(), wall, process_cpu_seconds() - cpu_start, peak_resident_mb());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_readers: %s\n", e.what());
        return 1;
    }
    return 0;
}
