// Throughput of the WordPiece tokenizer on the 25,000 IMDB test reviews (32 MB), one thread.
// Reports texts and MB of UTF-8 input per CPU-second for: normalization and pre-tokenization alone,
// tokenize() with reused buffers, and encode() (special tokens, fresh vectors per text).
// Usage: bench_tokenizer [--reps N]   (data from $QDQ_DATA_DIR, see data/data_dir.h)
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/data_dir.h"
#include "data/gzip_file.h"
#include "data/tokenizer.h"

namespace {

std::vector<std::string> imdb_test_texts() {
    const std::string content = qdq::read_gzip_file(qdq::data_path("imdb/imdb_test.jsonl.gz"));
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < content.size();) {
        size_t end = content.find('\n', pos);
        if (end == std::string::npos) end = content.size();
        if (end > pos) texts.push_back(nlohmann::json::parse(content.substr(pos, end - pos)).at("text"));
        pos = end + 1;
    }
    return texts;
}

// This thread's CPU time: on a shared machine it counts only our work, where wall time would
// also count the time other processes held the core.
double thread_cpu_seconds() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

// Best of reps passes over all texts, in CPU seconds.
template <typename Fn>
double best_seconds(int reps, const std::vector<std::string>& texts, Fn&& per_text) {
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
        const double start = thread_cpu_seconds();
        for (const std::string& t : texts) per_text(t);
        best = std::min(best, thread_cpu_seconds() - start);
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    int reps = 3;
    for (int i = 1; i + 1 < argc; i += 2)
        if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(argv[i + 1]);

    const std::vector<std::string> texts = imdb_test_texts();
    size_t bytes = 0;
    for (const std::string& t : texts) bytes += t.size();
    std::printf("# %zu IMDB test reviews, %.1f MB, best of %d passes, one thread, CPU time\n", texts.size(), bytes / 1e6, reps);
    std::printf("# %-8s %-22s %10s %8s %12s\n", "vocab", "stage", "texts/s", "MB/s", "tokens");

    for (const bool uncased : {true, false}) {
        const char* vocab_name = uncased ? "uncased" : "cased";
        const qdq::WordPieceTokenizer tokenizer = qdq::load_wordpiece_tokenizer(
            qdq::data_path(uncased ? "vocab/bert-base-uncased-vocab.txt" : "vocab/bert-base-cased-vocab.txt"), uncased);
        qdq::NormalizedText scratch;
        qdq::WordPieces pieces;
        size_t tokens = 0;
        const auto report = [&](const char* stage, double seconds) {
            std::printf("  %-8s %-22s %10.0f %8.2f %12zu\n", vocab_name, stage, texts.size() / seconds,
                        bytes / seconds / 1e6, tokens / reps);
        };

        tokens = 0;
        report("normalize_and_split", best_seconds(reps, texts, [&](const std::string& t) {
                   qdq::normalize_and_split(t, uncased, scratch);
                   tokens += scratch.words.size();
               }));
        tokens = 0;
        report("tokenize", best_seconds(reps, texts, [&](const std::string& t) {
                   qdq::tokenize(tokenizer, t, scratch, pieces);
                   tokens += pieces.ids.size();
               }));
        tokens = 0;
        report("encode", best_seconds(reps, texts, [&](const std::string& t) {
                   tokens += qdq::encode(tokenizer, t).ids.size();
               }));
    }
    return 0;
}
