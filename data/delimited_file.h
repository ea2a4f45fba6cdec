// TSV and CSV files, plain or gzipped, with a header row naming the columns.
//
// Quoting is a property of the file, not of the delimiter alone:
// - GLUE's TSVs are written without quoting and hold bare '"' (MNLI: `"Yes," he said`), and
//   GLUE's own readers use csv.QUOTE_NONE. So TSV defaults to no quoting: a field is everything
//   between two tabs, and a record is one line.
// - CSV (pandas, the RTE/WNLI/MultiNLI/SNLI copies) defaults to RFC 4180: a field may be quoted,
//   a quoted field may hold the delimiter, newlines and doubled quotes (""), and a record may
//   span lines. Strictly: a quote inside an unquoted field, or anything but a delimiter or the
//   end of the record after a closing quote, is an error (it means the file was not written
//   with RFC quoting).
// Either way: one '\r' before a record's end is dropped (SICK.txt has CRLF ends), completely
// empty lines are skipped (they hold no record), every record must have as many fields as the
// header, and every record must be valid UTF-8. Errors are std::runtime_error "<file>:<line>: ..."
// with the line on which the record starts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/text_file.h"

namespace qdq {

enum class Quoting {
    none,     // csv.QUOTE_NONE
    rfc4180,  // csv.QUOTE_MINIMAL as written by pandas and Python's csv
};

struct DelimitedFormat {
    char delimiter = '\t';
    Quoting quoting = Quoting::none;
    bool has_header = true;  // without one, columns are named "0", "1", ... by position
};

DelimitedFormat tsv_format();  // tab, no quoting, header
DelimitedFormat csv_format();  // comma, RFC 4180, header
// csv_format() for *.csv and *.csv.gz, else tsv_format() (*.tsv, SICK's *.txt).
DelimitedFormat format_for_path(const std::string& path);

class DelimitedReader {
public:
    // Opens the file and reads the header (an error for an empty file).
    DelimitedReader(const std::string& path, const DelimitedFormat& format);

    const std::vector<std::string>& header() const { return header_; }
    std::optional<size_t> find_column(const std::string& name) const;
    // Throws "<file>: no column '<name>' (columns: ...)".
    size_t column(const std::string& name) const;

    // The next record's fields; false at the end of the file.
    bool next(std::vector<std::string>& fields);

    int64_t record_line() const { return record_line_; }  // first line of the last record
    std::string where() const;                            // "<file>:<record_line>"
    const std::string& path() const { return lines_.path(); }

private:
    bool read_record(std::vector<std::string>& fields);
    void split_unquoted(std::vector<std::string>& fields) const;
    void split_quoted(std::vector<std::string>& fields);

    LineReader lines_;
    DelimitedFormat format_;
    std::vector<std::string> header_;
    std::string line_;
    int64_t record_line_ = 0;
    std::vector<std::string> first_record_;  // of a header-less file, read to count its columns
    bool first_record_pending_ = false;
};

}  // namespace qdq
