#include "data/imdb_reader.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "data/text_file.h"

namespace qdq {
namespace {

namespace fs = std::filesystem;

struct ReviewFile {
    int64_t n = 0;
    fs::path path;
};

bool is_small_number(const std::string& text) {
    return !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
}

// n and rating of "<n>_<rating>.txt".
std::optional<std::pair<int64_t, int>> parse_review_name(const std::string& name) {
    if (!name.ends_with(".txt")) return std::nullopt;
    const std::string stem = name.substr(0, name.size() - 4);
    const size_t underscore = stem.find('_');
    if (underscore == std::string::npos) return std::nullopt;
    const std::string n = stem.substr(0, underscore), rating = stem.substr(underscore + 1);
    if (!is_small_number(n) || !is_small_number(rating)) return std::nullopt;
    return std::pair(std::stoll(n), std::stoi(rating));
}

// The folder's reviews, sorted by n; each rating must lie in [min_rating, max_rating].
std::vector<ReviewFile> list_reviews(const fs::path& folder, int min_rating, int max_rating) {
    if (!fs::is_directory(folder)) throw std::runtime_error(folder.string() + ": not a folder");
    std::vector<ReviewFile> files;
    for (const auto& entry : fs::directory_iterator(folder)) {
        const auto error = [&](const std::string& problem) {
            return std::runtime_error(entry.path().string() + ": " + problem);
        };
        const auto parsed = parse_review_name(entry.path().filename().string());
        if (!entry.is_regular_file() || !parsed) throw error("not a review file named <n>_<rating>.txt");
        const auto [n, rating] = *parsed;
        if (rating < min_rating || rating > max_rating)
            throw error("rating " + std::to_string(rating) + " outside " + std::to_string(min_rating) + ".." +
                        std::to_string(max_rating) + " for this folder");
        files.push_back({n, entry.path()});
    }
    std::sort(files.begin(), files.end(), [](const ReviewFile& a, const ReviewFile& b) { return a.n < b.n; });
    for (size_t i = 1; i < files.size(); ++i)
        if (files[i].n == files[i - 1].n)
            throw std::runtime_error(files[i].path.string() + ": review number repeats " + files[i - 1].path.string());
    return files;
}

void add_reviews(ClassificationData& out, const std::vector<ReviewFile>& files, const std::string& id_prefix,
                 int32_t label) {
    for (const ReviewFile& file : files) {
        std::string text = read_text_file(file.path.string());
        check_utf8(text, file.path.string());
        ++out.stats.records;
        if (label >= 0) ++out.stats.label_counts[label];
        out.examples.push_back({id_prefix + std::to_string(file.n), std::move(text), "", label});
    }
}

ClassificationData read_folder(const fs::path& folder, bool labelled) {
    ClassificationData out;
    out.stats.label_counts.assign(2, 0);
    const std::string name = folder.filename().string();
    if (!labelled) {
        add_reviews(out, list_reviews(folder, 0, 0), name + "_", -1);
        return out;
    }
    // Scan both folders before reading, so a misnamed file fails fast.
    const auto negative = list_reviews(folder / "neg", 1, 4);
    const auto positive = list_reviews(folder / "pos", 7, 10);
    out.examples.reserve(negative.size() + positive.size());
    add_reviews(out, negative, name + "_neg_", 0);
    add_reviews(out, positive, name + "_pos_", 1);
    return out;
}

}  // namespace

ClassificationOptions imdb_jsonl_options(bool labelled) {
    ClassificationOptions options;
    options.columns = {.id = "id", .text_a = "text", .text_b = "", .label = {"label"}};
    options.label_names = {"negative", "positive"};
    options.labelled = labelled;
    return options;
}

ClassificationOptions imdb_csv_options() {
    ClassificationOptions options;
    options.columns = {.id = "", .text_a = "review", .text_b = "", .label = {"sentiment"}};
    options.label_names = {"negative", "positive"};
    options.format = csv_format();
    return options;
}

ClassificationData read_imdb(const std::string& path, bool labelled) {
    // A trailing slash would leave the folder's own name (the split) empty.
    fs::path folder = fs::path(path).lexically_normal();
    if (!folder.has_filename()) folder = folder.parent_path();
    if (fs::is_directory(folder)) return read_folder(folder, labelled);
    if (path.ends_with(".csv") || path.ends_with(".csv.gz")) {
        ClassificationOptions options = imdb_csv_options();
        options.labelled = labelled;
        return read_classification(path, options);
    }
    if (path.ends_with(".jsonl") || path.ends_with(".jsonl.gz"))
        return read_classification(path, imdb_jsonl_options(labelled));
    throw std::runtime_error(path + ": not an IMDB folder, *.jsonl[.gz] or *.csv[.gz]");
}

}  // namespace qdq
