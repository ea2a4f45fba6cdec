// The byte-level BPE tokenizer (data/bpe_tokenizer.h, through data/tokenizer.h) against
// tests/fixtures/bpe/reference.json, written by make_bpe_reference.py: an independent Python
// implementation of GPT-2's byte-level BPE with RobertaTokenizerFast's additions, over the
// vocabulary it trained (tests/fixtures/bpe/vocab.json, merges.txt). Exact equality: ids, token
// types, attention masks and offsets in code points and bytes; no tolerance.
#include <gtest/gtest.h>

#include <sstream>

#include <nlohmann/json.hpp>

#include "data/data_dir.h"
#include "data/gzip_file.h"
#include "data/tokenizer.h"
#include "tests/support/data.h"
#include "tests/support/expect_error.h"
#include "tests/support/fixture.h"
#include "tests/support/temp_dir.h"

namespace qdq {
namespace {

using nlohmann::json;
using testing::expect_error;
using testing::TempDir;

const json& reference() {
    static const json root = testing::read_fixture_json("bpe/reference.json", "tests/fixtures/make_bpe_reference.py");
    return root;
}

const std::string kFixtureDir = std::string(QDQ_FIXTURE_DIR) + "/bpe";

const Tokenizer& fixture_tokenizer() {
    static const Tokenizer t = load_tokenizer(kFixtureDir, true);
    return t;
}

EncodeOptions options_of(const json& c) {
    const json& o = c.at("options");
    EncodeOptions options;
    options.max_length = o.at("max_length");
    options.truncation = o.at("truncation") == "only_second" ? Truncation::only_second : Truncation::longest_first;
    options.pad_to_max_length = o.at("pad");
    return options;
}

json spans_json(const std::vector<TokenSpan>& spans) {
    json out = json::array();
    for (const TokenSpan& s : spans) out.push_back({s.begin, s.end});
    return out;
}

// The tokens around the first position where ids or offsets differ, for the failure message.
std::string first_difference(const Encoding& e, const json& c) {
    const Tokenizer& t = fixture_tokenizer();
    std::ostringstream out;
    const size_t n = std::max(e.ids.size(), c.at("ids").size());
    for (size_t i = 0; i < n; ++i) {
        const bool have = i < e.ids.size(), want = i < c.at("ids").size();
        if (have && want && e.ids[i] == c["ids"][i] && json({e.offsets[i].begin, e.offsets[i].end}) == c["offsets"][i])
            continue;
        out << "\n  first difference at token " << i << ": got ";
        if (have)
            out << e.ids[i] << " '" << t.bpe.tokens[e.ids[i]] << "' [" << e.offsets[i].begin << ", " << e.offsets[i].end
                << ")";
        out << ", expected ";
        if (want) out << c["ids"][i] << " '" << t.bpe.tokens[c["ids"][i].get<int32_t>()] << "' " << c["offsets"][i];
        break;
    }
    return out.str();
}

TEST(BpeReference, HeldOutStrings) {
    const Tokenizer& t = fixture_tokenizer();
    for (const json& c : reference().at("cases")) {
        const std::string name = c.at("name"), text = c.at("text");
        const Encoding e = c.contains("text_pair")
                               ? encode_pair(t, text, c["text_pair"].get<std::string>(), options_of(c))
                               : encode(t, text, options_of(c));
        EXPECT_EQ(json(e.ids), c.at("ids")) << name << first_difference(e, c);
        EXPECT_EQ(spans_json(e.offsets), c.at("offsets")) << name << first_difference(e, c);
        EXPECT_EQ(spans_json(e.byte_offsets), c.at("byte_offsets")) << name;
        EXPECT_EQ(json(e.attention_mask), c.at("attention_mask")) << name;
        EXPECT_EQ(e.token_type_ids, std::vector<int32_t>(e.ids.size(), 0)) << name << ": RoBERTa has one token type";
    }
}

// FNV-1a 64 over 32-bit little-endian words, as the script's encoding_hash.
std::string encoding_hash(const Encoding& e) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < e.ids.size(); ++i)
        for (int32_t word : {e.ids[i], e.attention_mask[i], e.offsets[i].begin, e.offsets[i].end})
            for (int k = 0; k < 4; ++k) h = (h ^ ((uint32_t)word >> (8 * k) & 0xFF)) * 0x100000001b3ull;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    return hex;
}

TEST(BpeReference, ImdbTestReviews) {
    const json& held_out = reference().at("held_out");
    QDQ_REQUIRE_DATA_FILE(held_out.at("file").get<std::string>());
    std::vector<std::string> rows;
    std::istringstream lines(read_gzip_file(data_path(held_out["file"])));
    for (std::string line; std::getline(lines, line);) rows.push_back(json::parse(line).at("text"));
    std::vector<std::string> texts;
    for (const json& row : held_out.at("rows")) texts.push_back(rows.at(row.get<size_t>()));
    const Tokenizer& t = fixture_tokenizer();
    for (size_t i = 0; i < texts.size(); ++i)
        EXPECT_EQ(encoding_hash(encode(t, texts[i])), held_out["single_hashes"][i])
            << "review row " << held_out["rows"][i];
    const EncodeOptions pair_options{.max_length = held_out.at("pair_max_length")};
    for (size_t i = 0; i + 1 < texts.size(); i += 2)
        EXPECT_EQ(encoding_hash(encode_pair(t, texts[i], texts[i + 1], pair_options)), held_out["pair_hashes"][i / 2])
            << "review rows " << held_out["rows"][i] << " and " << held_out["rows"][i + 1];
}

TEST(BpeTokenizer, SpecialTokensAndFrame) {
    const Tokenizer& t = fixture_tokenizer();
    ASSERT_EQ(t.kind, TokenizerKind::ByteLevelBpe);
    EXPECT_EQ(vocab_size(t), reference().at("header").at("vocab").at("size").get<int32_t>());
    EXPECT_EQ(t.special.cls_id, 0);
    EXPECT_EQ(t.special.pad_id, 1);
    EXPECT_EQ(t.special.sep_id, 2);
    EXPECT_EQ(t.unk_id, 3);
    EXPECT_EQ(t.mask_id, vocab_size(t) - 1);
    EXPECT_EQ(special_token_count(t.special, false), 2);
    EXPECT_EQ(special_token_count(t.special, true), 4);
    EXPECT_EQ(second_text_begin(t.special, 5), 8);  // <s> 5 tokens </s></s>
}

// A vocabulary of bytes and specials only, written beside merges.txt in `dir`.
std::string write_byte_vocab(const TempDir& dir, const std::string& merges, const std::string& skip_byte = "") {
    json vocab = {{"<s>", 0}, {"<pad>", 1}, {"</s>", 2}, {"<unk>", 3}};
    for (int b = 0; b < 256; ++b) {
        const std::string c = byte_level_char((uint8_t)b);
        if (c != skip_byte) vocab[c] = (int)vocab.size();
    }
    for (const std::string token : {"he", "hel", "ll", "llo"}) vocab[token] = (int)vocab.size();
    dir.write("merges.txt", merges);
    return dir.write("vocab.json", vocab.dump());
}

TEST(BpeTokenizer, MergesByRankAndCachesPerTokenizer) {
    TempDir dir;
    // "he" first, then "ll", then "llo": "hello" is he + llo; "hel" needs "he l", never reached
    // once "l l" has merged the l's away.
    write_byte_vocab(dir, "#version: 0.2\nh e\nl l\nll o\nhe l\n");
    const Tokenizer small = load_tokenizer(dir.path().string(), true);
    TokenizeScratch scratch;
    WordPieces pieces;
    tokenize(fixture_tokenizer(), "hello hello", scratch, pieces);  // fills the cache with the fixture's merges
    tokenize(small, "hello", scratch, pieces);
    const std::vector<std::string>& tokens = small.bpe.tokens;
    const auto id = [&](const char* token) {
        return (int32_t)(std::find(tokens.begin(), tokens.end(), token) - tokens.begin());
    };
    EXPECT_EQ(pieces.ids, (std::vector<int32_t>{id("he"), id("llo")}));
    EXPECT_EQ(pieces.offsets, (std::vector<TokenSpan>{{0, 2}, {2, 5}}));
    tokenize(small, "hel", scratch, pieces);  // h e l: "he" ranks first, then "he l" merges
    EXPECT_EQ(pieces.ids, (std::vector<int32_t>{id("hel")}));
}

TEST(BpeTokenizer, ByteMissingFromTheVocabularyIsUnk) {
    TempDir dir;
    write_byte_vocab(dir, "", byte_level_char('x'));
    const Tokenizer t = load_tokenizer(dir.path().string(), true);
    const Encoding e = encode(t, "axb");
    EXPECT_EQ(e.ids[2], t.unk_id);
    EXPECT_EQ(e.offsets[2], (TokenSpan{1, 2}));
}

TEST(BpeTokenizer, MalformedFilesNameFileAndLine) {
    TempDir dir;
    const std::string vocab = write_byte_vocab(dir, "h e\nh e l\n");
    const std::string merges = (dir.path() / "merges.txt").string();
    expect_error([&] { load_bpe_tokenizer(vocab, merges); }, {"merges.txt:2", "two tokens"});
    dir.write("merges.txt", "h e\nq z\n");
    expect_error([&] { load_bpe_tokenizer(vocab, merges); }, {"merges.txt:2", "'qz' is not in", "vocab.json"});
    const std::string no_s = dir.write("no_s/vocab.json", R"({"<pad>": 0, "</s>": 1, "<unk>": 2})");
    dir.write("no_s/merges.txt", "");
    expect_error([&] { load_tokenizer(no_s, true); }, {no_s, "lacks <s>"});
    const std::string gap = dir.write("gap/vocab.json", R"({"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 7})");
    dir.write("gap/merges.txt", "");
    expect_error([&] { load_tokenizer(gap, true); }, {gap, "'<unk>'", "0..3"});
}

TEST(BpeTokenizer, InvalidUtf8AndImpossibleTruncationAreErrors) {
    const Tokenizer& t = fixture_tokenizer();
    EXPECT_THROW(encode(t, "ab\xC3("), std::invalid_argument);
    EXPECT_THROW(encode(t, "bad \xFF <mask>"), std::invalid_argument);
    EXPECT_THROW(encode_pair(t, "a", "b", {.max_length = 3}), std::invalid_argument);  // 4 special tokens
    EXPECT_THROW(encode_pair(t, "one two three four", "b", {.max_length = 6, .truncation = Truncation::only_second}),
                 std::invalid_argument);
}

}  // namespace
}  // namespace qdq
