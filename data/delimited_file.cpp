#include "data/delimited_file.h"

#include <stdexcept>

namespace qdq {

DelimitedFormat tsv_format() { return {'\t', Quoting::none, true}; }
DelimitedFormat csv_format() { return {',', Quoting::rfc4180, true}; }

DelimitedFormat format_for_path(const std::string& path) {
    return path.ends_with(".csv") || path.ends_with(".csv.gz") ? csv_format() : tsv_format();
}

DelimitedReader::DelimitedReader(const std::string& path, const DelimitedFormat& format)
    : lines_(path), format_(format) {
    if (!read_record(header_)) throw std::runtime_error(path + ": empty file, expected a header row");
    if (format_.has_header) return;
    // The first line is data: name the columns by position and hand that record out first.
    first_record_ = std::move(header_);
    header_.clear();
    for (size_t i = 0; i < first_record_.size(); ++i) header_.push_back(std::to_string(i));
    first_record_pending_ = true;
}

std::string DelimitedReader::where() const { return path() + ":" + std::to_string(record_line_); }

std::optional<size_t> DelimitedReader::find_column(const std::string& name) const {
    for (size_t i = 0; i < header_.size(); ++i)
        if (header_[i] == name) return i;
    return std::nullopt;
}

size_t DelimitedReader::column(const std::string& name) const {
    if (auto found = find_column(name)) return *found;
    std::string names;
    for (const auto& h : header_) names += (names.empty() ? "" : ", ") + h;
    throw std::runtime_error(path() + ": no column '" + name + "' (columns: " + names + ")");
}

bool DelimitedReader::next(std::vector<std::string>& fields) {
    if (first_record_pending_) {
        first_record_pending_ = false;
        fields = std::move(first_record_);
    } else if (!read_record(fields)) {
        return false;
    }
    if (fields.size() != header_.size())
        throw std::runtime_error(where() + ": " + std::to_string(fields.size()) + " fields, but the header has " +
                                 std::to_string(header_.size()));
    return true;
}

bool DelimitedReader::read_record(std::vector<std::string>& fields) {
    do {
        if (!lines_.next(line_)) return false;
    } while (line_.empty() || line_ == "\r");
    record_line_ = lines_.line_number();
    check_utf8(line_, lines_.where());
    fields.clear();
    if (format_.quoting == Quoting::none) {
        split_unquoted(fields);
    } else {
        split_quoted(fields);
    }
    return true;
}

void DelimitedReader::split_unquoted(std::vector<std::string>& fields) const {
    size_t stop = line_.size();
    if (line_.back() == '\r') --stop;
    for (size_t begin = 0;;) {
        size_t end = line_.find(format_.delimiter, begin);
        if (end == std::string::npos || end > stop) end = stop;
        fields.emplace_back(line_, begin, end - begin);
        if (end == stop) return;
        begin = end + 1;
    }
}

void DelimitedReader::split_quoted(std::vector<std::string>& fields) {
    const char delimiter = format_.delimiter;
    const auto error = [&](const std::string& problem) { return std::runtime_error(lines_.where() + ": " + problem); };
    size_t i = 0;
    for (;;) {
        fields.emplace_back();
        std::string& field = fields.back();
        if (i < line_.size() && line_[i] == '"') {
            ++i;
            for (;;) {
                const size_t quote = line_.find('"', i);
                if (quote == std::string::npos) {
                    // The record goes on: the newline belongs to the field.
                    field.append(line_, i);
                    field.push_back('\n');
                    if (!lines_.next(line_))
                        throw std::runtime_error(where() + ": quoted field not closed by the end of the file");
                    check_utf8(line_, lines_.where());
                    i = 0;
                    continue;
                }
                field.append(line_, i, quote - i);
                i = quote + 1;
                if (i < line_.size() && line_[i] == '"') {
                    field.push_back('"');
                    ++i;
                    continue;
                }
                break;
            }
            if (i == line_.size() || (i + 1 == line_.size() && line_[i] == '\r')) return;
            if (line_[i] != delimiter) throw error("unexpected character after the closing quote of a field");
            ++i;
            continue;
        }
        size_t end = line_.find(delimiter, i);
        const bool last = end == std::string::npos;
        if (last) end = line_.size() - (line_.back() == '\r' ? 1 : 0);
        if (line_.find('"', i) < end) throw error("quote inside an unquoted field (is this file really RFC 4180 CSV?)");
        field.assign(line_, i, end - i);
        if (last) return;
        i = end + 1;
    }
}

}  // namespace qdq
