#include "data/classification_reader.h"

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "json/json_file.h"

namespace qdq {
namespace {

using nlohmann::json;

constexpr int32_t kNoGoldLabel = -1;

bool equal_ignoring_case(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
}

std::string joined(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
    return out;
}

[[noreturn]] void throw_bad_label(const std::string& label, const std::vector<std::string>& names,
                                  const std::string& where) {
    throw std::runtime_error(where + ": label '" + label + "' is not one of " + joined(names) + " (or 0.." +
                             std::to_string(names.size() - 1) + ", or '-' for no gold label)");
}

int32_t label_from_number(int64_t value, const std::vector<std::string>& names, const std::string& where) {
    if (value == -1) return kNoGoldLabel;
    if (value < 0 || value >= (int64_t)names.size()) throw_bad_label(std::to_string(value), names, where);
    return (int32_t)value;
}

int32_t label_from_text(const std::string& text, const std::vector<std::string>& names, const std::string& where) {
    if (text == "-") return kNoGoldLabel;
    for (size_t i = 0; i < names.size(); ++i)
        if (equal_ignoring_case(text, names[i])) return (int32_t)i;
    const bool digits = !text.empty() && text.size() <= 9 && text.find_first_not_of("0123456789") == std::string::npos;
    if (digits) return label_from_number(std::stoll(text), names, where);
    if (text == "-1") return kNoGoldLabel;
    throw_bad_label(text, names, where);
}

// Adds kept rows to the result, keeping the counts in step.
struct Collector {
    ClassificationData data;

    explicit Collector(const ClassificationOptions& options) {
        data.stats.label_counts.assign(options.label_names.size(), 0);
    }
    void add(std::string id, std::string text_a, std::string text_b, int32_t label) {
        if (label >= 0) ++data.stats.label_counts[label];
        data.examples.push_back({std::move(id), std::move(text_a), std::move(text_b), label});
    }
};

// Column positions, npos where the file has no such column or none is wanted.
struct ColumnPositions {
    static constexpr size_t npos = std::string::npos;
    size_t id = npos, text_a = npos, text_b = npos, label = npos, filter = npos;
};

ColumnPositions find_columns(const DelimitedReader& reader, const ClassificationOptions& options) {
    const ClassificationColumns& columns = options.columns;
    ColumnPositions at;
    if (!columns.id.empty()) at.id = reader.find_column(columns.id).value_or(ColumnPositions::npos);
    at.text_a = reader.column(columns.text_a);
    if (!columns.text_b.empty()) at.text_b = reader.column(columns.text_b);
    if (options.keep_only) at.filter = reader.column(options.keep_only->column);
    if (options.labelled) {
        for (const auto& name : columns.label) {
            if (const auto found = reader.find_column(name)) {
                at.label = *found;
                break;
            }
        }
        if (at.label == ColumnPositions::npos)
            throw std::runtime_error(reader.path() + ": no label column (" + joined(columns.label) +
                                     "; columns: " + joined(reader.header()) + ")");
    }
    return at;
}

ClassificationData read_delimited(const std::string& path, const ClassificationOptions& options) {
    DelimitedReader reader(path, options.format.value_or(format_for_path(path)));
    const ColumnPositions at = find_columns(reader, options);
    const std::string file_name = std::filesystem::path(path).filename().string();
    constexpr size_t npos = ColumnPositions::npos;

    Collector out(options);
    ClassificationStats& stats = out.data.stats;
    std::vector<std::string> fields;
    while (reader.next(fields)) {
        ++stats.records;
        if (at.filter != npos && fields[at.filter] != options.keep_only->value) {
            ++stats.filtered_out;
            continue;
        }
        int32_t class_index = -1;
        if (at.label != npos) {
            class_index = label_from_text(fields[at.label], options.label_names, reader.where());
            if (class_index == kNoGoldLabel) {
                ++stats.skipped_no_gold;
                continue;
            }
        }
        out.add(at.id != npos ? std::move(fields[at.id]) : file_name + ":" + std::to_string(reader.record_line()),
                std::move(fields[at.text_a]), at.text_b != npos ? std::move(fields[at.text_b]) : std::string(),
                class_index);
    }
    return std::move(out.data);
}

const json& json_key(const json& row, const std::string& key, const std::string& where) {
    const auto found = row.find(key);
    if (found == row.end()) throw std::runtime_error(where + ": no key '" + key + "'");
    return *found;
}

std::string json_text(const json& row, const std::string& key, const std::string& where) {
    const json& value = json_key(row, key, where);
    if (!value.is_string()) throw std::runtime_error(where + ": '" + key + "' is not a string");
    return value.get<std::string>();
}

ClassificationData read_json_lines(const std::string& path, const ClassificationOptions& options) {
    const ClassificationColumns& columns = options.columns;
    const std::string file_name = std::filesystem::path(path).filename().string();
    Collector out(options);
    ClassificationStats& stats = out.data.stats;
    LineReader lines(path);
    std::string line;
    while (lines.next(line)) {
        if (line.empty() || line == "\r") continue;
        const std::string where = lines.where();
        json row;
        try {
            row = json::parse(line);
        } catch (const json::parse_error& e) {
            throw std::runtime_error(where + ": not valid JSON: " + json_line_error_text(e));
        }
        if (!row.is_object()) throw std::runtime_error(where + ": not a JSON object");
        ++stats.records;
        if (options.keep_only) {
            const json& value = json_key(row, options.keep_only->column, where);
            if ((value.is_string() ? value.get<std::string>() : value.dump()) != options.keep_only->value) {
                ++stats.filtered_out;
                continue;
            }
        }
        int32_t class_index = -1;
        if (options.labelled) {
            const json* label = nullptr;
            for (const auto& name : columns.label) {
                const auto found = row.find(name);
                if (found != row.end()) {
                    label = &*found;
                    break;
                }
            }
            if (!label) throw std::runtime_error(where + ": no label key (" + joined(columns.label) + ")");
            if (label->is_number_integer()) {
                class_index = label_from_number(label->get<int64_t>(), options.label_names, where);
            } else if (label->is_string()) {
                class_index = label_from_text(label->get<std::string>(), options.label_names, where);
            } else {
                throw_bad_label(label->dump(), options.label_names, where);
            }
            if (class_index == kNoGoldLabel) {
                ++stats.skipped_no_gold;
                continue;
            }
        }
        std::string id = file_name + ":" + std::to_string(lines.line_number());
        if (const auto found = columns.id.empty() ? row.end() : row.find(columns.id); found != row.end())
            id = found->is_string() ? found->get<std::string>() : found->dump();
        out.add(std::move(id), json_text(row, columns.text_a, where),
                columns.text_b.empty() ? std::string() : json_text(row, columns.text_b, where), class_index);
    }
    return std::move(out.data);
}

}  // namespace

ClassificationData read_classification(const std::string& path, const ClassificationOptions& options) {
    if (options.label_names.empty() && options.labelled)
        throw std::invalid_argument("read_classification: labelled, but no label_names given");
    if (path.ends_with(".jsonl") || path.ends_with(".jsonl.gz")) return read_json_lines(path, options);
    return read_delimited(path, options);
}

ClassificationOptions nli_options() { return {}; }

ClassificationOptions headerless_nli_options() {
    ClassificationOptions options;
    options.columns = {.id = "", .text_a = "1", .text_b = "2", .label = {"0"}};
    DelimitedFormat format = tsv_format();
    format.has_header = false;
    options.format = format;
    return options;
}

ClassificationOptions sick_options() {
    ClassificationOptions options;
    options.columns = {.id = "pair_ID", .text_a = "sentence_A", .text_b = "sentence_B", .label = {"entailment_label"}};
    options.format = tsv_format();
    return options;
}

ClassificationOptions rte_options() {
    ClassificationOptions options;
    options.label_names = {"entailment", "not_entailment"};
    return options;
}

ClassificationOptions wnli_options() {
    ClassificationOptions options;
    options.label_names = {"not_entailment", "entailment"};
    return options;
}

ClassificationColumns premise_hypothesis_columns() {
    return {.id = "", .text_a = "premise", .text_b = "hypothesis", .label = {"label"}};
}

ClassificationOptions sst2_options() {
    ClassificationOptions options;
    options.columns = {.id = "", .text_a = "sentence", .text_b = "", .label = {"label"}};
    options.label_names = {"negative", "positive"};
    return options;
}

}  // namespace qdq
