// The WordPiece tokenizer against Hugging Face tokenizers 0.23.2 (Rust, through its Node
// bindings): tests/fixtures/tokenizer_reference.json, written by make_tokenizer_reference.js,
// holds the reference's ids, token type ids, attention masks and offsets for texts it names in
// the shared data dir plus strings of its own. Exact equality is required: there is no tolerance.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "data/data_dir.h"
#include "data/gzip_file.h"
#include "data/tokenizer.h"
#include "data/utf8.h"
#include "tests/support/data.h"
#include "tests/support/fixture.h"
#include "tests/support/scoped_environment.h"

namespace qdq {
namespace {

using nlohmann::json;

const json& reference() {
    static const json root = qdq::testing::read_fixture_json("tokenizer_reference.json", "tests/fixtures/make_tokenizer_reference.js");
    return root;
}

const WordPieceTokenizer& tokenizer_named(const std::string& name) {
    static std::map<std::string, WordPieceTokenizer> loaded;
    auto it = loaded.find(name);
    if (it == loaded.end()) {
        const std::string file = reference().at("header").at("vocabs").at(name);
        it = loaded.emplace(name, load_wordpiece_tokenizer(data_path(file), name == "uncased")).first;
    }
    return it->second;
}

std::vector<std::string_view> split_lines(std::string_view text, char separator = '\n') {
    std::vector<std::string_view> lines;
    for (size_t pos = 0; pos <= text.size();) {
        size_t end = text.find(separator, pos);
        if (end == std::string_view::npos) end = text.size();
        lines.push_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    return lines;
}

// The texts a case names, read from the data dir (each file once).
struct CaseTexts {
    std::string first;
    std::optional<std::string> second;
};

struct DataSources {
    std::map<std::string, std::string> files;  // relative path -> decompressed content
    std::map<std::string, std::vector<std::string_view>> lines;  // of files
    std::map<std::string, std::pair<std::string, std::string>> squad_questions;  // id -> question, context
    json squad;

    const std::string& file(const std::string& relative) {
        auto it = files.find(relative);
        if (it == files.end()) it = files.emplace(relative, read_gzip_file(data_path(relative))).first;
        return it->second;
    }
    std::string_view line(const std::string& relative, size_t index) {
        auto it = lines.find(relative);
        if (it == lines.end()) it = lines.emplace(relative, split_lines(file(relative))).first;
        return it->second.at(index);
    }
    const json& squad_data() {
        if (squad.is_null()) {
            squad = json::parse(file("squad/dev-v1.1.json.gz")).at("data");
            for (const json& article : squad)
                for (const json& paragraph : article.at("paragraphs"))
                    for (const json& qa : paragraph.at("qas"))
                        squad_questions[qa.at("id")] = {qa.at("question"), paragraph.at("context")};
        }
        return squad;
    }
};

// The same rule as codepoint_text() in make_tokenizer_reference.js.
std::string codepoint_text(char32_t first, char32_t count) {
    std::string text;
    for (char32_t c = first; c < first + count && c <= 0x10FFFF; ++c) {
        if (c >= 0xD800 && c <= 0xDFFF) continue;
        if (!text.empty()) text += ' ';
        append_utf8(text, c);
        text += " a";
        append_utf8(text, c);
        text += 'a';
    }
    return text;
}

CaseTexts texts_of(const json& c, DataSources& data) {
    const std::string source = c.at("source");
    if (source == "tricky")
        return {c.at("text"), c.contains("pair") ? std::optional<std::string>(c.at("pair")) : std::nullopt};
    const json& ref = c.at("ref");
    if (source == "codepoints") return {codepoint_text(ref.at("first"), ref.at("count")), std::nullopt};
    if (source == "imdb_test") {
        json row = json::parse(data.line("imdb/imdb_test.jsonl.gz", ref.at("row")));
        if (row.at("id") != ref.at("id")) throw std::runtime_error("imdb_test row moved: " + ref.dump());
        return {row.at("text"), std::nullopt};
    }
    if (source == "wiki") {
        json row = json::parse(data.line("wiki/enwiki_wikiextractor_AA.jsonl.gz", ref.at("row")));
        if (row.at("id") != ref.at("id")) throw std::runtime_error("wiki row moved: " + ref.dump());
        return {std::string(split_lines(row.at("text").get_ref<const std::string&>()).at(ref.at("line"))),
                std::nullopt};
    }
    if (source == "squad_context")
        return {data.squad_data().at((size_t)ref.at("article")).at("paragraphs").at((size_t)ref.at("paragraph"))
                    .at("context"),
                std::nullopt};
    if (source == "squad_question" || source == "squad_question_context") {
        data.squad_data();
        const auto& [question, context] = data.squad_questions.at(ref.at("id"));
        if (source == "squad_question") return {question, std::nullopt};
        return {question, context};
    }
    if (source == "mnli_dev_matched") {
        const auto fields = split_lines(data.line("mnli/dev_matched.tsv.gz", 1 + (size_t)ref.at("row")), '\t');
        if (fields.at(0) != ref.at("pairID").get<std::string>()) throw std::runtime_error("mnli row moved");
        return {std::string(fields.at(2)), std::string(fields.at(3))};
    }
    throw std::runtime_error("unknown fixture source " + source);
}

EncodeOptions options_of(const json& c) {
    EncodeOptions options;
    if (!c.contains("options")) return options;
    const json& o = c.at("options");
    options.max_length = o.at("max_length");
    options.truncation = o.at("truncation") == "only_second" ? Truncation::only_second : Truncation::longest_first;
    options.pad_to_max_length = o.value("padding", false);
    return options;
}

// FNV-1a 64 over 32-bit words, as token_hashes() in make_tokenizer_reference.js.
std::vector<std::string> block_hashes(const Encoding& e, size_t block_size) {
    const size_t n = e.ids.size(), size = block_size ? block_size : std::max<size_t>(n, 1);
    std::vector<std::string> hashes;
    for (size_t b = 0; b < n; b += size) {
        uint64_t h = 0xcbf29ce484222325ull;
        for (size_t i = b; i < std::min(n, b + size); ++i)
            for (int32_t w : {e.ids[i], e.token_type_ids[i], e.attention_mask[i], e.offsets[i].begin, e.offsets[i].end})
                h = (h ^ (uint32_t)w) * 0x100000001b3ull;
        char hex[17];
        std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
        hashes.push_back(hex);
    }
    return hashes;
}

// Our tokens [first, end) with the original text each offset points at.
std::string describe_tokens(const WordPieceTokenizer& t, const Encoding& e, const CaseTexts& texts, size_t first,
                            size_t end) {
    std::ostringstream out;
    for (size_t i = first; i < std::min(end, e.ids.size()); ++i) {
        const std::string& text = e.token_type_ids[i] == 0 || !texts.second ? texts.first : *texts.second;
        const TokenSpan& b = e.byte_offsets[i];
        out << "\n    [" << i << "] id " << e.ids[i] << " '" << vocab_token(t.vocab, e.ids[i]) << "' type "
            << e.token_type_ids[i] << " mask " << e.attention_mask[i] << " offsets (" << e.offsets[i].begin << ", "
            << e.offsets[i].end << ") = '" << text.substr(b.begin, b.end - b.begin) << "'";
    }
    return out.str();
}

std::string excerpt(const std::string& text) {
    return json(text.size() > 300 ? text.substr(0, 300) + "..." : text).dump(-1, ' ', false,
                                                                              json::error_handler_t::replace);
}

size_t code_points(std::string_view text) {
    size_t n = 0;
    for (size_t pos = 0; pos < text.size(); ++n) decode_utf8(text, pos);
    return n;
}

// The fixture records each text's length, so that reading a different text is an error of its own.
void expect_lengths_match(const json& c, const CaseTexts& texts) {
    if (!c.contains("ref") || !c["ref"].contains("chars")) return;
    EXPECT_EQ(code_points(texts.first), c["ref"]["chars"].get<size_t>()) << "text of " << c["ref"].dump();
    if (texts.second) {
        EXPECT_EQ(code_points(*texts.second), c["ref"]["pair_chars"].get<size_t>()) << "pair of " << c["ref"].dump();
    }
}

// Where our encoding of a case differs from the reference's; empty when they agree.
std::string difference(const json& c, const json& expected, const WordPieceTokenizer& t, const CaseTexts& texts) {
    Encoding e;
    try {
        e = texts.second ? encode_pair(t, texts.first, *texts.second, options_of(c)) : encode(t, texts.first, options_of(c));
    } catch (const std::invalid_argument& err) {
        return expected.contains("error") ? "" : std::string("unexpected error: ") + err.what();
    }
    if (expected.contains("error")) return "expected the error '" + expected["error"].get<std::string>() + "'";
    if (expected.contains("ids")) {
        std::vector<std::pair<int32_t, int32_t>> offsets;
        for (const TokenSpan& s : e.offsets) offsets.emplace_back(s.begin, s.end);
        if (e.ids == expected["ids"].get<std::vector<int32_t>>() &&
            e.token_type_ids == expected["type_ids"].get<std::vector<int32_t>>() &&
            e.attention_mask == expected["attention_mask"].get<std::vector<int32_t>>() &&
            offsets == expected["offsets"].get<std::vector<std::pair<int32_t, int32_t>>>())
            return "";
        return "expected ids " + expected["ids"].dump() + " offsets " + expected["offsets"].dump() + " type ids " +
               expected["type_ids"].dump() + "; got" + describe_tokens(t, e, texts, 0, e.ids.size());
    }
    if (e.ids.size() != expected["n"].get<size_t>())
        return "expected " + expected["n"].dump() + " tokens, got " + std::to_string(e.ids.size());
    const size_t block_size = c.value("block_size", 64), size = block_size ? block_size : e.ids.size();
    const auto hashes = block_hashes(e, block_size);
    const auto want = expected["hashes"].get<std::vector<std::string>>();
    for (size_t b = 0; b < hashes.size(); ++b)
        if (hashes[b] != want.at(b))
            return "first differing block of tokens " + std::to_string(b * size) + ".." + std::to_string((b + 1) * size) +
                   "; ours:" + describe_tokens(t, e, texts, b * size, (b + 1) * size);
    return "";
}

// Compares every case of the given sources, for both vocabs; returns how many were compared.
size_t expect_cases_match(const std::vector<std::string>& sources) {
    DataSources data;
    size_t compared = 0, mismatched = 0;
    for (const json& c : reference().at("cases")) {
        if (std::find(sources.begin(), sources.end(), c.at("source")) == sources.end()) continue;
        const CaseTexts texts = texts_of(c, data);
        expect_lengths_match(c, texts);
        for (const auto& [vocab_name, expected] : c.at("expected").items()) {
            ++compared;
            const std::string problem = difference(c, expected, tokenizer_named(vocab_name), texts);
            if (!problem.empty() && ++mismatched <= 5)
                ADD_FAILURE() << c.at("source") << " " << (c.contains("ref") ? c["ref"].dump() : "") << " ("
                              << vocab_name << (c.contains("options") ? ", " + c["options"].dump() : "")
                              << ")\n  text: " << excerpt(texts.first)
                              << (texts.second ? "\n  pair: " + excerpt(*texts.second) : "") << "\n  " << problem;
        }
    }
    EXPECT_EQ(mismatched, 0u) << "of " << compared << " encodings";
    std::cout << "compared " << compared << " encodings (texts x 2 vocabs) from";
    for (const std::string& s : sources) std::cout << " " << s;
    std::cout << ": " << mismatched << " mismatches\n";
    return compared;
}

#define REQUIRE_VOCABS()                                         \
    QDQ_REQUIRE_DATA_FILE("vocab/bert-base-uncased-vocab.txt"); \
    QDQ_REQUIRE_DATA_FILE("vocab/bert-base-cased-vocab.txt")

TEST(TokenizerReference, TrickyStrings) {
    REQUIRE_VOCABS();
    EXPECT_GT(expect_cases_match({"tricky"}), 100u);
}

TEST(TokenizerReference, EveryCodePoint) {
    REQUIRE_VOCABS();
    EXPECT_EQ(expect_cases_match({"codepoints"}), 2 * 0x110000u / 512);
}

TEST(TokenizerReference, ImdbReviews) {
    REQUIRE_VOCABS();
    QDQ_REQUIRE_DATA_FILE("imdb/imdb_test.jsonl.gz");
    expect_cases_match({"imdb_test"});
}

TEST(TokenizerReference, SquadQuestionsAndContexts) {
    REQUIRE_VOCABS();
    QDQ_REQUIRE_DATA_FILE("squad/dev-v1.1.json.gz");
    expect_cases_match({"squad_question", "squad_context", "squad_question_context"});
}

TEST(TokenizerReference, MnliPairs) {
    REQUIRE_VOCABS();
    QDQ_REQUIRE_DATA_FILE("mnli/dev_matched.tsv.gz");
    expect_cases_match({"mnli_dev_matched"});
}

TEST(TokenizerReference, WikipediaParagraphs) {
    REQUIRE_VOCABS();
    QDQ_REQUIRE_DATA_FILE("wiki/enwiki_wikiextractor_AA.jsonl.gz");
    expect_cases_match({"wiki"});
}

// ---- errors, with a vocab written here so that no data file is needed ----

// A file in the temp dir, named per process (ctest runs test cases in parallel), removed when done.
struct TempFile {
    std::string path;
    TempFile(const std::string& name, const std::string& content)
        : path((std::filesystem::temp_directory_path() / (std::to_string(getpid()) + "_" + name)).string()) {
        std::ofstream(path, std::ios::binary) << content;
    }
    ~TempFile() { std::filesystem::remove(path); }
};

const WordPieceTokenizer& tiny_tokenizer() {
    static const WordPieceTokenizer t = load_wordpiece_tokenizer(
        TempFile("tiny_vocab.txt", "[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\nworld\n##s\n,\n").path, true);
    return t;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

TEST(Tokenizer, EncodesWithTinyVocab) {
    const Encoding e = encode(tiny_tokenizer(), "Hello, worlds!");
    EXPECT_EQ(e.ids, (std::vector<int32_t>{2, 4, 7, 5, 6, 1, 3}));
    EXPECT_EQ(e.offsets[3], (TokenSpan{7, 12}));
    EXPECT_EQ(e.offsets[4], (TokenSpan{12, 13}));
}

TEST(Tokenizer, OffsetsCountCodePointsAndBytes) {
    const Encoding e = encode(tiny_tokenizer(), "\xC3\xA9 h\xC3\xA9llo");  // "é héllo"
    ASSERT_EQ(e.ids, (std::vector<int32_t>{2, 1, 4, 3}));
    EXPECT_EQ(e.offsets[2], (TokenSpan{2, 7}));
    EXPECT_EQ(e.byte_offsets[2], (TokenSpan{3, 9}));
}

TEST(Tokenizer, MissingVocabFileIsNamed) {
    EXPECT_NE(error_of([] { load_wordpiece_tokenizer("/nonexistent/vocab.txt", true); }).find("/nonexistent/vocab.txt"),
              std::string::npos);
}

TEST(Tokenizer, DuplicateAndEmptyTokensNameTheLine) {
    const TempFile dup("dup_vocab.txt", "[PAD]\na\nb\na\n");
    EXPECT_NE(error_of([&] { load_vocab(dup.path); }).find(dup.path + ":4: duplicate token 'a' (first on line 2)"),
              std::string::npos);
    const TempFile empty("empty_vocab.txt", "[PAD]\n\nb\n");
    EXPECT_NE(error_of([&] { load_vocab(empty.path); }).find(empty.path + ":2: empty token"), std::string::npos);
    const TempFile no_unk("no_unk_vocab.txt", "[PAD]\n[CLS]\n[SEP]\n");
    EXPECT_NE(error_of([&] { load_wordpiece_tokenizer(no_unk.path, true); }).find("lacks [UNK]"), std::string::npos);
}

TEST(Tokenizer, InvalidUtf8IsAnErrorWithItsOffset) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"ab\x80", "byte 2 of a 3-byte text: unexpected continuation byte"},
        {"a\xC3", "byte 1 of a 2-byte text: sequence cut off by the end"},
        {"\xC3(", "byte 0 of a 2-byte text: sequence cut off by a non-continuation byte"},
        {"\xC0\xAF", "byte 0 of a 2-byte text: byte that never appears"},
        {"\xE0\x80\xAF", "overlong encoding"},
        {"\xED\xA0\x80", "encoded UTF-16 surrogate"},
        {"\xF4\x90\x80\x80", "code point above U+10FFFF"},
        {"\xFF", "byte that never appears"},
    };
    for (const auto& [text, message] : cases) {
        const std::string error = error_of([&] { encode(tiny_tokenizer(), text); });
        EXPECT_EQ(error.rfind("invalid UTF-8 at byte ", 0), 0u) << error;
        EXPECT_NE(error.find(message), std::string::npos) << error;
        EXPECT_THROW(encode_pair(tiny_tokenizer(), "hello", text), std::invalid_argument);
    }
}

TEST(Tokenizer, ImpossibleTruncationIsAnError) {
    EXPECT_THROW(encode(tiny_tokenizer(), "hello", {.max_length = 1}), std::invalid_argument);
    EXPECT_THROW(encode_pair(tiny_tokenizer(), "hello world", "hello", {.max_length = 4, .truncation = Truncation::only_second}),
                 std::invalid_argument);
    EXPECT_NO_THROW(encode(tiny_tokenizer(), "hello", {.max_length = 3, .truncation = Truncation::only_second}));
}

TEST(DataDir, EnvironmentOverridesTheDefault) {
    {
        const testing::ScopedEnvironment elsewhere("QDQ_DATA_DIR", "/some/where");
        EXPECT_EQ(data_path("vocab/x.txt"), "/some/where/vocab/x.txt");
    }
    const testing::ScopedEnvironment unset("QDQ_DATA_DIR", nullptr);
    EXPECT_NE(data_dir().find("shared/data"), std::string::npos);
}

TEST(GzipFile, RejectsMissingAndUncompressedFiles) {
    EXPECT_NE(error_of([] { read_gzip_file("/nonexistent/x.gz"); }).find("/nonexistent/x.gz"), std::string::npos);
    const TempFile plain("plain.txt", "not compressed");
    EXPECT_NE(error_of([&] { read_gzip_file(plain.path); }).find("is not gzip-compressed"), std::string::npos);
}

}  // namespace
}  // namespace qdq
