// The task features built with the byte-level BPE tokenizer (tests/fixtures/bpe): RoBERTa's frame
// in a classification pair, in SQuAD windows ("<s> question </s></s> context </s>", 4 special
// tokens) with answer spans that map back to the context's characters, and masked-LM's mask and
// special ids and packing. The token ids themselves are checked in test_bpe_tokenizer.cpp.
#include <gtest/gtest.h>

#include "data/classification_features.h"
#include "data/mlm_masking.h"
#include "data/python_text.h"
#include "data/squad_features.h"
#include "data/text_corpus.h"
#include "data/tokenizer.h"
#include "tests/support/temp_dir.h"

namespace qdq {
namespace {

const Tokenizer& bpe() {
    static const Tokenizer t = load_tokenizer(std::string(QDQ_FIXTURE_DIR) + "/bpe/vocab.json", true);
    return t;
}

std::vector<int32_t> ids_of(std::string_view text) {
    TokenizeScratch scratch;
    WordPieces pieces;
    tokenize(bpe(), text, scratch, pieces);
    return pieces.ids;
}

TEST(BpeFeatures, ClassificationPairInRobertasFrame) {
    const TextExample example{"p", "The cat sat on the mat.", "A cat is sitting.", 1};
    const Encoding e = classification_encoding(bpe(), example, 128);
    const std::vector<int32_t> a = ids_of(example.text_a), b = ids_of(example.text_b);
    std::vector<int32_t> expected = {0};
    expected.insert(expected.end(), a.begin(), a.end());
    expected.insert(expected.end(), {2, 2});
    expected.insert(expected.end(), b.begin(), b.end());
    expected.push_back(2);
    EXPECT_EQ(e.ids, expected);
    EXPECT_EQ(e.token_type_ids, std::vector<int32_t>(expected.size(), 0));
    EXPECT_EQ(e.attention_mask, std::vector<int32_t>(expected.size(), 1));
    EXPECT_TRUE(e.offsets.empty());
    // Longest first with room for twice the hypothesis: the longer premise is cut to its length,
    // the hypothesis stays whole after "</s></s>".
    ASSERT_GT(a.size(), b.size());
    const Encoding cut = classification_encoding(bpe(), example, (int32_t)(2 * b.size() + 4));
    ASSERT_EQ(cut.ids.size(), 2 * b.size() + 4);
    EXPECT_EQ(std::vector<int32_t>(cut.ids.begin() + 1, cut.ids.begin() + 1 + (std::ptrdiff_t)b.size()),
              std::vector<int32_t>(a.begin(), a.begin() + (std::ptrdiff_t)b.size()));
    EXPECT_EQ(std::vector<int32_t>(cut.ids.end() - (std::ptrdiff_t)b.size() - 1, cut.ids.end() - 1), b);
}

// The context's characters [begin, end), code points as SQuAD counts them.
std::string context_chars(const SquadExample& example, int32_t begin, int32_t end) {
    return python_text::encode(python_text::decode(example.context).substr(begin, end - begin));
}

TEST(BpeFeatures, SquadWindowsMapAnswersBackToTheContext) {
    SquadExample example;
    example.id = "q";
    example.question = "  Where did the café owner go after the rain?";
    example.context =
        "The morning was quiet. Later the café owner went to Zürich by train, and then the rain came down hard "
        "over the old town, where everybody stayed inside until the evening.";
    const std::string answer = "Zürich";
    const int64_t start = (int64_t)python_text::decode(example.context.substr(0, example.context.find(answer))).size();
    example.answers = {{answer, start}};
    const std::vector<SquadWindow> windows = squad_windows(bpe(), {example}, {.max_seq_length = 32, .doc_stride = 8});
    ASSERT_GE(windows.size(), 2u);
    const size_t n_question = ids_of(python_text::lstrip(example.question)).size();
    int labelled = 0;
    for (const SquadWindow& w : windows) {
        const Encoding& e = w.encoding;
        ASSERT_EQ(e.ids.size(), 32u);
        EXPECT_EQ(w.context_begin, (int32_t)n_question + 3);  // <s> question </s></s>
        EXPECT_EQ(e.ids[0], 0);
        EXPECT_EQ(e.ids[w.context_begin - 2], 2);
        EXPECT_EQ(e.ids[w.context_begin - 1], 2);
        EXPECT_EQ(e.ids[w.context_end], 2);
        EXPECT_EQ(e.token_type_ids, std::vector<int32_t>(32, 0));
        for (int32_t i = 0; i < w.context_begin; ++i) EXPECT_EQ(e.offsets[i], TokenSpan{}) << i;
        // Context spans exclude the space a token carries: " Zürich" spans "Zürich".
        for (int32_t i = w.context_begin; i < w.context_end; ++i) {
            const std::string span = context_chars(example, e.offsets[i].begin, e.offsets[i].end);
            const TokenSpan bytes = e.byte_offsets[i];
            EXPECT_EQ(span, example.context.substr(bytes.begin, bytes.end - bytes.begin));
            EXPECT_TRUE(span.empty() || span[0] != ' ') << i;
        }
        if (w.start_position == 0) continue;
        ++labelled;
        EXPECT_EQ(context_chars(example, e.offsets[w.start_position].begin, e.offsets[w.end_position].end), answer);
    }
    EXPECT_GE(labelled, 1);
    EXPECT_THROW(squad_windows(bpe(), {example}, {.max_seq_length = 4, .doc_stride = 0}), std::invalid_argument);
}

TEST(BpeFeatures, MaskedLmUsesRobertasSpecialTokens) {
    const MlmMasking masking = mlm_masking(bpe(), 0.15);
    EXPECT_EQ(masking.mask_id, bpe().mask_id);
    EXPECT_EQ(masking.vocab_size, vocab_size(bpe()));
    EXPECT_EQ(masking.special_ids, (std::vector<int32_t>{0, 2, 1}));  // <s> </s> <pad>
    testing::TempDir dir;
    const std::string corpus = dir.write("c.txt", "The cat sat.\n\nThe dog ran.\n");
    const PackedSequences packed = pack_documents({corpus}, bpe(), 8);
    std::vector<int32_t> stream = ids_of("The cat sat.");
    stream.push_back(2);
    const std::vector<int32_t> second = ids_of("The dog ran.");
    stream.insert(stream.end(), second.begin(), second.end());
    std::vector<int32_t> interiors;
    for (int64_t i = 0; i < sequence_count(packed); ++i) {
        const std::vector<int32_t> ids = sequence_encoding(packed, i).ids;
        EXPECT_EQ(ids.front(), 0);
        EXPECT_EQ(ids.back(), 2);
        interiors.insert(interiors.end(), ids.begin() + 1, ids.end() - 1);
    }
    EXPECT_EQ(interiors, stream);
}

}  // namespace
}  // namespace qdq
