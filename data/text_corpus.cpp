#include "data/text_corpus.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "data/document_slice.h"
#include "data/text_file.h"
#include "json/json_file.h"

namespace qdq {
namespace {

bool is_blank(std::string_view line) { return line.find_first_not_of(" \t\r\f\v") == std::string_view::npos; }

void read_json_lines(const std::string& path, const std::function<bool(std::string_view)>& visit) {
    LineReader lines(path);
    std::string line;
    while (lines.next(line)) {
        if (is_blank(line)) continue;
        // Checked before parsing: nlohmann's message for bad UTF-8 reads like a syntax error.
        check_utf8(line, lines.where());
        nlohmann::json row;
        try {
            row = nlohmann::json::parse(line);
        } catch (const nlohmann::json::parse_error& e) {
            throw std::runtime_error(lines.where() + ": not valid JSON: " + json_line_error_text(e));
        }
        if (!row.is_object()) throw std::runtime_error(lines.where() + ": not a JSON object");
        const auto text = row.find("text");
        if (text == row.end()) throw std::runtime_error(lines.where() + ": no key 'text'");
        if (!text->is_string()) throw std::runtime_error(lines.where() + ": 'text' is not a string");
        const std::string& document = text->get_ref<const std::string&>();
        if (!document.empty() && !visit(document)) return;
    }
}

void read_plain_text(const std::string& path, const std::function<bool(std::string_view)>& visit) {
    LineReader lines(path);
    std::string line, document;
    while (lines.next(line)) {
        if (line.ends_with('\r')) line.pop_back();
        check_utf8(line, lines.where());
        if (is_blank(line)) {
            if (!document.empty() && !visit(document)) return;
            document.clear();
            continue;
        }
        if (!document.empty()) document += '\n';
        document += line;
    }
    if (!document.empty()) visit(document);
}

// Appends the token stream to `out`, closing a sequence with [SEP] whenever it holds `chunk`
// tokens and opening the next with [CLS] when a token arrives for it.
struct Packer {
    PackedSequences& out;
    const Tokenizer& tokenizer;
    int64_t chunk;
    int64_t max_sequences;
    bool open = false;
    bool any_document = false;

    bool full() const { return max_sequences >= 0 && sequence_count(out) >= max_sequences; }

    void push(int32_t id) {
        if (!open) {
            out.tokens.push_back(tokenizer.special.cls_id);
            open = true;
        }
        out.tokens.push_back(id);
        if ((int64_t)out.tokens.size() - out.starts.back() == chunk + 1) close();
    }

    void close() {
        out.tokens.push_back(tokenizer.special.sep_id);
        out.starts.push_back((int64_t)out.tokens.size());
        open = false;
    }

    // False once max_sequences are packed: reading stops there.
    bool add(const std::vector<int32_t>& ids) {
        if (ids.empty()) return true;  // a document of whitespace and control characters only
        if (any_document) push(tokenizer.special.sep_id);
        any_document = true;
        for (int32_t id : ids) {
            if (full()) return false;
            push(id);
        }
        return !full();
    }
};

}  // namespace

void read_documents(const std::string& path, const std::function<bool(std::string_view text)>& visit) {
    if (path.ends_with(".jsonl") || path.ends_with(".jsonl.gz")) return read_json_lines(path, visit);
    if (path.ends_with(".txt") || path.ends_with(".txt.gz")) return read_plain_text(path, visit);
    throw std::runtime_error(path + ": not a corpus file (*.jsonl[.gz] or *.txt[.gz])");
}

void read_document_slice(const std::string& spec, const std::function<bool(std::string_view text)>& visit) {
    const DocumentSlice slice = parse_document_slice(spec);
    if (slice.whole_file()) return read_documents(slice.path, visit);
    int64_t count = -1;
    if (slice.needs_count()) {
        count = 0;
        read_documents(slice.path, [&](std::string_view) { return ++count, true; });
    }
    const DocumentRange range = document_range(slice, count);
    int64_t index = 0;
    read_documents(slice.path, [&](std::string_view text) {
        if (index >= range.end) return false;
        const bool keep = index++ >= range.begin;
        return !keep || visit(text);
    });
}

int64_t sequence_count(const PackedSequences& packed) { return (int64_t)packed.starts.size() - 1; }

int32_t sequence_length(const PackedSequences& packed, int64_t i) {
    return (int32_t)(packed.starts[(size_t)i + 1] - packed.starts[(size_t)i]);
}

Encoding sequence_encoding(const PackedSequences& packed, int64_t i) {
    Encoding e;
    const auto begin = packed.tokens.begin() + packed.starts[(size_t)i];
    e.ids.assign(begin, begin + sequence_length(packed, i));
    e.token_type_ids.assign(e.ids.size(), 0);
    e.attention_mask.assign(e.ids.size(), 1);
    return e;
}

PackedSequences pack_documents(const std::vector<std::string>& files, const Tokenizer& tokenizer,
                               int32_t max_seq_length, int64_t max_sequences) {
    if (max_seq_length < 3)
        throw std::invalid_argument("pack_documents: max_seq_length " + std::to_string(max_seq_length) +
                                    " leaves no room for a token between [CLS] and [SEP]");
    PackedSequences out;
    Packer packer{out, tokenizer, max_seq_length - 2, max_sequences};
    TokenizeScratch scratch;
    WordPieces pieces;
    for (const std::string& file : files) {
        if (packer.full()) break;
        read_document_slice(file, [&](std::string_view text) {
            tokenize(tokenizer, text, scratch, pieces);
            return packer.add(pieces.ids);
        });
    }
    if (packer.open) packer.close();
    // No shrink_to_fit: the spare capacity was never written, so it holds no memory, and the
    // copy would raise the peak (280 -> 380 MB on the 46M-token corpus).
    return out;
}

}  // namespace qdq
