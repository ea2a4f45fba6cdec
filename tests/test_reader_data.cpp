// Every data set in the shared data dir, read by the task readers, against the counts that the
// data dir's PROVENANCE.md gives (computed there independently, with Python's csv/json). A file
// that is missing fails under CI=true and skips otherwise (tests/support/data.h).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "data/classification_reader.h"
#include "data/data_dir.h"
#include "data/gzip_file.h"
#include "data/imdb_reader.h"
#include "data/squad_reader.h"
#include "tests/support/data.h"
#include "tests/support/temp_dir.h"

namespace qdq {
namespace {

// Label counts are in label_names order: entailment, neutral, contradiction for 3-way NLI.
void expect_counts(const ClassificationData& data, int64_t examples, int64_t skipped_no_gold,
                   const std::vector<int64_t>& label_counts) {
    EXPECT_EQ((int64_t)data.examples.size(), examples);
    EXPECT_EQ(data.stats.skipped_no_gold, skipped_no_gold);
    EXPECT_EQ(data.stats.records, examples + skipped_no_gold + data.stats.filtered_out);
    EXPECT_EQ(data.stats.label_counts, label_counts);
}

void expect_same_examples(const ClassificationData& a, const ClassificationData& b) {
    ASSERT_EQ(a.examples.size(), b.examples.size());
    for (size_t i = 0; i < a.examples.size(); ++i) {
        const TextExample &x = a.examples[i], &y = b.examples[i];
        ASSERT_EQ(std::tie(x.id, x.text_a, x.text_b, x.label), std::tie(y.id, y.text_a, y.text_b, y.label))
            << "example " << i;
    }
}

int64_t code_points(const std::string& text) {
    return std::count_if(text.begin(), text.end(), [](char c) { return ((unsigned char)c & 0xC0) != 0x80; });
}

TEST(SharedDataReader, MnliGlueLayoutTsv) {
    QDQ_REQUIRE_DATA_FILE("mnli/dev_matched.tsv.gz");
    QDQ_REQUIRE_DATA_FILE("mnli/dev_mismatched.tsv.gz");
    QDQ_REQUIRE_DATA_FILE("mnli/taxinli_mnli_train_subset.tsv");
    const ClassificationData matched = read_classification(data_path("mnli/dev_matched.tsv.gz"));
    expect_counts(matched, 9815, 0, {3479, 3123, 3213});
    EXPECT_EQ(matched.examples[0].id, "63735n");
    EXPECT_EQ(matched.examples[0].text_b, "Everyone really likes the newest benefits ");  // whitespace kept
    expect_counts(read_classification(data_path("mnli/dev_mismatched.tsv.gz")), 9832, 0, {3463, 3129, 3240});
    expect_counts(read_classification(data_path("mnli/taxinli_mnli_train_subset.tsv")), 2121, 0, {596, 965, 560});
}

// The CSV copies still hold the "-" rows that the derived TSVs dropped: with those skipped, both
// must give the same examples, which checks the CSV quoting on 20k rows of real text.
TEST(SharedDataReader, MultiNliAndSnliCsvMatchTheirTsv) {
    const std::vector<std::tuple<std::string, std::string, int64_t, std::vector<int64_t>>> files = {
        {"mnli/multinli_1.0_dev_matched.csv.gz", "mnli/dev_matched.tsv.gz", 185, {3479, 3123, 3213}},
        {"mnli/multinli_1.0_dev_mismatched.csv.gz", "mnli/dev_mismatched.tsv.gz", 168, {3463, 3129, 3240}},
        {"snli/snli_1.0_dev.csv.gz", "snli/dev.tsv.gz", 158, {3329, 3235, 3278}},
        {"snli/snli_1.0_test.csv.gz", "snli/test.tsv.gz", 176, {3368, 3219, 3237}},
    };
    for (const auto& [csv, tsv, skipped, labels] : files) {
        SCOPED_TRACE(csv);
        QDQ_REQUIRE_DATA_FILE(csv);
        QDQ_REQUIRE_DATA_FILE(tsv);
        const ClassificationData from_csv = read_classification(data_path(csv));
        const ClassificationData from_tsv = read_classification(data_path(tsv));
        expect_counts(from_csv, 10000 - skipped, skipped, labels);
        expect_counts(from_tsv, 10000 - skipped, 0, labels);
        expect_same_examples(from_csv, from_tsv);
    }
}

TEST(SharedDataReader, TextFoolerHeaderlessSamples) {
    QDQ_REQUIRE_DATA_FILE("mnli/textfooler_mnli_matched_1000.tsv");
    QDQ_REQUIRE_DATA_FILE("mnli/textfooler_mnli_mismatched_1000.tsv");
    const ClassificationData matched =
        read_classification(data_path("mnli/textfooler_mnli_matched_1000.tsv"), headerless_nli_options());
    expect_counts(matched, 1000, 0, {373, 311, 316});
    EXPECT_EQ(matched.examples[0].id, "textfooler_mnli_matched_1000.tsv:1");
    EXPECT_EQ(matched.examples[0].text_b, "There is a bookshop at the gallery .");
    expect_counts(read_classification(data_path("mnli/textfooler_mnli_mismatched_1000.tsv"), headerless_nli_options()),
                  1000, 0, {346, 319, 335});
}

TEST(SharedDataReader, SickWithItsSemEvalSets) {
    QDQ_REQUIRE_DATA_FILE("sick/SICK.txt.gz");
    const std::string path = data_path("sick/SICK.txt.gz");
    const ClassificationData all = read_classification(path, sick_options());
    expect_counts(all, 9840, 0, {2821, 5595, 1424});
    // SemEval_set is the last column, so this also checks that the CR of CRLF is not part of it.
    int64_t total = 0;
    for (const auto& [set, rows] : std::map<std::string, int64_t>{{"TRAIN", 4439}, {"TRIAL", 495}, {"TEST", 4906}}) {
        ClassificationOptions options = sick_options();
        options.keep_only = RowFilter{"SemEval_set", set};
        const ClassificationData part = read_classification(path, options);
        EXPECT_EQ((int64_t)part.examples.size(), rows) << set;
        EXPECT_EQ(part.stats.filtered_out, 9840 - rows) << set;
        total += (int64_t)part.examples.size();
    }
    EXPECT_EQ(total, 9840);
}

TEST(SharedDataReader, GlueSst2RteWnli) {
    for (const char* file : {"glue/SST-2/train.tsv.gz", "glue/SST-2/dev.tsv", "glue/SST-2/test.tsv",
                             "glue/RTE/train.csv", "glue/RTE/dev.csv", "glue/WNLI/train.csv", "glue/WNLI/dev.csv"})
        QDQ_REQUIRE_DATA_FILE(file);
    expect_counts(read_classification(data_path("glue/SST-2/train.tsv.gz"), sst2_options()), 67349, 0, {29780, 37569});
    expect_counts(read_classification(data_path("glue/SST-2/dev.tsv"), sst2_options()), 872, 0, {428, 444});
    ClassificationOptions unlabelled = sst2_options();
    unlabelled.labelled = false;
    unlabelled.columns.id = "index";
    const ClassificationData test = read_classification(data_path("glue/SST-2/test.tsv"), unlabelled);
    ASSERT_EQ(test.examples.size(), 1821u);
    EXPECT_EQ(test.examples.back().id, "1820");
    EXPECT_EQ(test.examples.back().label, -1);

    ClassificationOptions two_way = rte_options();
    two_way.columns = premise_hypothesis_columns();
    expect_counts(read_classification(data_path("glue/RTE/train.csv"), two_way), 2490, 0, {1249, 1241});
    expect_counts(read_classification(data_path("glue/RTE/dev.csv"), two_way), 277, 0, {146, 131});
    ClassificationOptions wnli = wnli_options();  // not_entailment 0, entailment 1
    wnli.columns = premise_hypothesis_columns();
    expect_counts(read_classification(data_path("glue/WNLI/train.csv"), wnli), 635, 0, {323, 312});
    expect_counts(read_classification(data_path("glue/WNLI/dev.csv"), wnli), 71, 0, {40, 31});
}

// STS-B is regression (a 0-5 score), which TextExample's class label cannot hold; the delimited
// layer still reads it whole.
TEST(SharedDataReader, StsbThroughTheDelimitedReader) {
    for (const auto& [file, rows] : std::map<std::string, int64_t>{
             {"glue/STS-B/train.tsv", 5749}, {"glue/STS-B/dev.tsv", 1500}, {"glue/STS-B/test.tsv", 1379}}) {
        QDQ_REQUIRE_DATA_FILE(file);
        DelimitedReader reader(data_path(file), tsv_format());
        const auto score = reader.find_column("score");
        EXPECT_EQ(score.has_value(), file != "glue/STS-B/test.tsv") << file;
        int64_t count = 0;
        std::vector<std::string> fields;
        while (reader.next(fields)) {
            ++count;
            if (score) {
                const double value = std::stod(fields[*score]);
                ASSERT_TRUE(value >= 0 && value <= 5) << reader.where();
            }
        }
        EXPECT_EQ(count, rows) << file;
    }
}

// One test per IMDB file, so each of the big files is read once. Characters as PROVENANCE.md
// counts them (Python len, code points), to its 0.1 M precision.
void expect_imdb(const std::string& file, bool labelled, int64_t rows, double million_chars) {
    QDQ_REQUIRE_DATA_FILE(file);
    const ClassificationData data = read_imdb(data_path(file), labelled);
    ASSERT_EQ((int64_t)data.examples.size(), rows);
    int64_t chars = 0;
    for (const TextExample& e : data.examples) chars += code_points(e.text_a);
    EXPECT_EQ(std::round(chars / 1e5), std::round(million_chars * 10)) << chars;
    if (labelled) {
        EXPECT_EQ(data.stats.label_counts, (std::vector<int64_t>{rows / 2, rows / 2}));
    }
    std::set<std::string> ids;
    for (const TextExample& e : data.examples) ids.insert(e.id);
    EXPECT_EQ((int64_t)ids.size(), rows);
}

TEST(SharedDataReader, ImdbTrain) { expect_imdb("imdb/imdb_train.jsonl.gz", true, 25000, 33.1); }
TEST(SharedDataReader, ImdbTest) { expect_imdb("imdb/imdb_test.jsonl.gz", true, 25000, 32.3); }
TEST(SharedDataReader, ImdbUnsup) { expect_imdb("imdb/imdb_unsup.jsonl.gz", false, 50000, 66.5); }

TEST(SharedDataReader, WikipediaJsonLines) {
    QDQ_REQUIRE_DATA_FILE("wiki/enwiki_wikiextractor_AA.jsonl.gz");
    ClassificationOptions options;
    options.columns = {.id = "id", .text_a = "text", .text_b = "", .label = {}};
    options.labelled = false;
    const ClassificationData wiki = read_classification(data_path("wiki/enwiki_wikiextractor_AA.jsonl.gz"), options);
    ASSERT_EQ(wiki.examples.size(), 6510u);
    EXPECT_EQ(wiki.examples[0].id, "12");  // Anarchism; the ids are JSON numbers
    int64_t chars = 0;
    for (const TextExample& e : wiki.examples) chars += code_points(e.text_a);
    EXPECT_EQ(std::round(chars / 1e5), 1018) << chars;
}

TEST(SharedDataReader, SquadDev) {
    QDQ_REQUIRE_DATA_FILE("squad/dev-v1.1.json.gz");
    const SquadData squad = read_squad(data_path("squad/dev-v1.1.json.gz"));
    EXPECT_EQ(squad.version, "1.1");
    EXPECT_EQ(squad.stats.articles, 48);
    EXPECT_EQ(squad.stats.paragraphs, 2067);
    EXPECT_EQ(squad.stats.questions, 10570);
    EXPECT_EQ(squad.stats.answers, 34726);
    ASSERT_EQ(squad.examples.size(), 10570u);
    int64_t answers = 0, shifted = 0;
    std::set<std::string> titles, ids;
    for (const SquadExample& q : squad.examples) {
        answers += (int64_t)q.answers.size();
        titles.insert(q.title);
        ids.insert(q.id);
        // Answers after non-ASCII text: their byte offset differs from answer_start.
        for (const SquadAnswer& a : q.answers) shifted += q.context.compare(a.answer_start, a.text.size(), a.text) != 0;
    }
    EXPECT_EQ(answers, 34726);
    EXPECT_EQ(titles.size(), 48u);
    EXPECT_EQ(ids.size(), 10570u);
    EXPECT_GT(shifted, 0) << "no answer tests code point offsets";
    const SquadExample& first = squad.examples.front();
    EXPECT_EQ(first.id, "56be4db0acb8001400a502ec");
    EXPECT_EQ(first.title, "Super_Bowl_50");
    EXPECT_EQ(first.answers.at(0).text, "Denver Broncos");
    EXPECT_EQ(first.answers.at(0).answer_start, 177);
}

TEST(SharedDataReader, GzipAndPlainReadTheSame) {
    QDQ_REQUIRE_DATA_FILE("squad/dev-v1.1.json.gz");
    QDQ_REQUIRE_DATA_FILE("mnli/multinli_1.0_dev_matched.csv.gz");
    QDQ_REQUIRE_DATA_FILE("sick/SICK.txt.gz");
    testing::TempDir dir;
    const auto plain_copy = [&](const std::string& file, const std::string& name) {
        return dir.write(name, read_gzip_file(data_path(file)));
    };
    const SquadData gz = read_squad(data_path("squad/dev-v1.1.json.gz"));
    const SquadData plain = read_squad(plain_copy("squad/dev-v1.1.json.gz", "dev-v1.1.json"));
    ASSERT_EQ(gz.examples.size(), plain.examples.size());
    for (size_t i = 0; i < gz.examples.size(); ++i) {
        const SquadExample &a = gz.examples[i], &b = plain.examples[i];
        ASSERT_EQ(std::tie(a.id, a.title, a.context, a.question), std::tie(b.id, b.title, b.context, b.question));
        ASSERT_EQ(a.answers.size(), b.answers.size());
        for (size_t k = 0; k < a.answers.size(); ++k)
            ASSERT_EQ(std::tie(a.answers[k].text, a.answers[k].answer_start),
                      std::tie(b.answers[k].text, b.answers[k].answer_start));
    }
    expect_same_examples(
        read_classification(data_path("mnli/multinli_1.0_dev_matched.csv.gz")),
        read_classification(plain_copy("mnli/multinli_1.0_dev_matched.csv.gz", "multinli_1.0_dev_matched.csv")));
    expect_same_examples(read_classification(data_path("sick/SICK.txt.gz"), sick_options()),
                         read_classification(plain_copy("sick/SICK.txt.gz", "SICK.txt"), sick_options()));
}

// The split rule is pinned: the eval articles for seed 0 are written out (computed with a few
// lines of Python implementing the documented rule), so that a change of hash, rounding or
// tie-break, which would move articles between a run's train and eval parts, fails here.
TEST(SharedDataReader, SquadSplitByArticle) {
    QDQ_REQUIRE_DATA_FILE("squad/dev-v1.1.json.gz");
    const SquadData squad = read_squad(data_path("squad/dev-v1.1.json.gz"));
    const SquadSplit split = split_squad_by_article(squad.examples, 0.1, 0);
    const auto titles = [](const std::vector<SquadExample>& part) {
        std::set<std::string> out;
        for (const SquadExample& q : part) out.insert(q.title);
        return out;
    };
    const std::set<std::string> train = titles(split.train), eval = titles(split.eval);
    EXPECT_EQ(eval.size(), 5u);  // round(0.1 x 48)
    EXPECT_EQ(train.size() + eval.size(), 48u);
    for (const auto& title : eval) EXPECT_EQ(train.count(title), 0u) << title;
    EXPECT_EQ(split.train.size() + split.eval.size(), squad.examples.size());
    EXPECT_EQ(eval, (std::set<std::string>{"Doctor_Who", "Geology", "Intergovernmental_Panel_on_Climate_Change",
                                           "Packet_switching", "Super_Bowl_50"}));

    const SquadSplit again = split_squad_by_article(squad.examples, 0.1, 0);
    EXPECT_EQ(titles(again.eval), eval);
    ASSERT_EQ(again.eval.size(), split.eval.size());
    for (size_t i = 0; i < split.eval.size(); ++i) EXPECT_EQ(again.eval[i].id, split.eval[i].id);
    EXPECT_NE(titles(split_squad_by_article(squad.examples, 0.1, 1).eval), eval);
    EXPECT_TRUE(split_squad_by_article(squad.examples, 0.0, 0).eval.empty());
    EXPECT_TRUE(split_squad_by_article(squad.examples, 1.0, 0).train.empty());
}

}  // namespace
}  // namespace qdq
