// The task readers on small files written here: CSV/TSV quoting as RFC 4180 and GLUE's
// csv.QUOTE_NONE define them, each reader's layouts, and every kind of bad input, which must be a
// std::runtime_error naming the file and line (or the SQuAD question). The counts of the real
// data are in test_reader_data.cpp.
#include <gtest/gtest.h>

#include <functional>

#include "data/classification_reader.h"
#include "data/delimited_file.h"
#include "data/imdb_reader.h"
#include "data/squad_reader.h"
#include "tests/support/expect_error.h"
#include "tests/support/temp_dir.h"

namespace qdq {
namespace {

using testing::TempDir;
using qdq::testing::expect_error;

std::vector<std::vector<std::string>> read_all(const std::string& path, const DelimitedFormat& format) {
    DelimitedReader reader(path, format);
    std::vector<std::vector<std::string>> rows{reader.header()};
    std::vector<std::string> fields;
    while (reader.next(fields)) rows.push_back(fields);
    return rows;
}

TEST(DelimitedReader, CsvQuotingFollowsRfc4180) {
    TempDir dir;
    const std::string path = dir.write("quoted.csv",
                                       "id,text,label\r\n"
                                       "1,\"a, b\",x\r\n"
                                       "2,\"she said \"\"hi\"\"\",y\r\n"
                                       "3,\"two\r\nlines\",z\r\n"
                                       "4,,\"\"\r\n"
                                       "\r\n"
                                       "5,plain,last");
    DelimitedReader reader(path, csv_format());
    EXPECT_EQ(reader.header(), (std::vector<std::string>{"id", "text", "label"}));
    std::vector<std::string> fields;
    const std::vector<std::pair<int64_t, std::vector<std::string>>> expected = {
        {2, {"1", "a, b", "x"}},
        {3, {"2", "she said \"hi\"", "y"}},
        {4, {"3", "two\r\nlines", "z"}},  // the newline inside quotes is the field's, CR and all
        {6, {"4", "", ""}},
        {8, {"5", "plain", "last"}},  // no final newline; the empty line 7 holds no record
    };
    for (const auto& [line, values] : expected) {
        ASSERT_TRUE(reader.next(fields));
        EXPECT_EQ(fields, values);
        EXPECT_EQ(reader.record_line(), line);
    }
    EXPECT_FALSE(reader.next(fields));
}

TEST(DelimitedReader, TsvDefaultsToNoQuotingLikeGlue) {
    TempDir dir;
    // MNLI's text holds bare quotes; csv.QUOTE_NONE keeps them as text.
    const std::string path = dir.write("glue.tsv", "sentence1\tsentence2\n\"Yes,\" he said.\tA \"\"quote\n");
    EXPECT_EQ(read_all(path, tsv_format()), (std::vector<std::vector<std::string>>{
                                                {"sentence1", "sentence2"}, {"\"Yes,\" he said.", "A \"\"quote"}}));
    DelimitedFormat quoted_tsv = tsv_format();
    quoted_tsv.quoting = Quoting::rfc4180;
    const std::string quoted = dir.write("quoted.tsv", "a\tb\n\"x\ty\"\t\"z\"\"\"\n");
    EXPECT_EQ(read_all(quoted, quoted_tsv), (std::vector<std::vector<std::string>>{{"a", "b"}, {"x\ty", "z\""}}));
}

TEST(DelimitedReader, FormatFollowsFileNameAndHeaderlessColumnsAreNumbered) {
    EXPECT_EQ(format_for_path("x/dev.csv.gz").quoting, Quoting::rfc4180);
    EXPECT_EQ(format_for_path("x/dev.csv").delimiter, ',');
    EXPECT_EQ(format_for_path("x/dev.tsv.gz").quoting, Quoting::none);
    EXPECT_EQ(format_for_path("x/SICK.txt").delimiter, '\t');
    TempDir dir;
    DelimitedFormat headerless = tsv_format();
    headerless.has_header = false;
    // A byte order mark is not part of the first field.
    EXPECT_EQ(
        read_all(dir.write("h.tsv", "\xEF\xBB\xBFneutral\ta\tb\nentailment\tc\td\n"), headerless),
        (std::vector<std::vector<std::string>>{{"0", "1", "2"}, {"neutral", "a", "b"}, {"entailment", "c", "d"}}));
}

TEST(DelimitedReader, MalformedRecordsNameFileAndLine) {
    TempDir dir;
    const std::string fields = dir.write("fields.tsv", "a\tb\n1\t2\n1\t2\t3\n");
    expect_error([&] { read_all(fields, tsv_format()); }, {fields + ":3", "3 fields", "header has 2"});
    const std::string open_quote = dir.write("open.csv", "a,b\n1,\"never\nclosed\n");
    expect_error([&] { read_all(open_quote, csv_format()); }, {open_quote + ":2", "not closed"});
    const std::string stray = dir.write("stray.csv", "a,b\n1,x\"y\n");
    expect_error([&] { read_all(stray, csv_format()); }, {stray + ":2", "quote inside an unquoted field"});
    const std::string after = dir.write("after.csv", "a,b\n1,\"x\"y\n");
    expect_error([&] { read_all(after, csv_format()); }, {after + ":2", "after the closing quote"});
    const std::string empty = dir.write("empty.tsv", "");
    expect_error([&] { read_all(empty, tsv_format()); }, {empty, "empty file"});
    expect_error([&] { read_all(dir.path().string() + "/absent.tsv", tsv_format()); }, {"cannot open", "absent.tsv"});
}

TEST(DelimitedReader, InvalidUtf8NamesFileAndLine) {
    TempDir dir;
    const std::string tsv =
        dir.write("bad.tsv", "sentence1\tsentence2\tgold_label\nok\tok\tneutral\nbad \xC3\x28\tx\tneutral\n");
    expect_error([&] { read_classification(tsv); }, {tsv + ":3", "invalid UTF-8"});
    // Inside a quoted field, the line of the bad byte, not the record's first line.
    const std::string csv = dir.write("bad.csv", "a,b\n1,\"x\nover\xFF\"\n");
    expect_error([&] { read_all(csv, csv_format()); }, {csv + ":3", "invalid UTF-8"});
    const std::string jsonl = dir.write(
        "bad.jsonl", "{\"sentence1\": \"a\", \"sentence2\": \"\xED\xA0\x80\", \"gold_label\": \"neutral\"}\n");
    expect_error([&] { read_classification(jsonl); }, {jsonl + ":1", "UTF-8"});
}

TEST(DelimitedReader, GzipIsReadAndTruncatedGzipIsAnError) {
    TempDir dir;
    // "a\tb\n1\t2\n" through gzip -9 -n: 10 bytes of header, the deflate stream, then the CRC and
    // length trailer (8 bytes).
    const std::string whole(
        "\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\x4b\xe4\x4c\xe2\x32\xe4\x34\xe2\x02\x00\x4b\x95\x94\xa9\x08\x00"
        "\x00\x00",
        28);
    EXPECT_EQ(read_all(dir.write("whole.tsv.gz", whole), tsv_format()),
              (std::vector<std::vector<std::string>>{{"a", "b"}, {"1", "2"}}));
    for (size_t cut : {20, 14}) {
        const std::string path = dir.write("cut" + std::to_string(cut) + ".tsv.gz", whole.substr(0, cut));
        expect_error([&] { read_all(path, tsv_format()); }, {path, "truncated or corrupt"});
    }
    const std::string fake = dir.write("fake.tsv.gz", "a\tb\n");
    expect_error([&] { read_all(fake, tsv_format()); }, {fake, "not gzip"});
}

TEST(ClassificationReader, NliLabelsColumnsAndSkippedGoldLabels) {
    TempDir dir;
    const std::string path = dir.write("dev.tsv",
                                       "pairID\tgold_label\tsentence1\tsentence2\n"
                                       "a1\tentailment\tp1\th1\n"
                                       "a2\t-\tp2\th2\n"
                                       "a3\tContradiction\tp3\th3\n"
                                       "a4\t1\tp4\th4\n");
    const ClassificationData data = read_classification(path);
    ASSERT_EQ(data.examples.size(), 3u);
    EXPECT_EQ(data.stats.records, 4);
    EXPECT_EQ(data.stats.skipped_no_gold, 1);
    EXPECT_EQ(data.stats.label_counts, (std::vector<int64_t>{1, 1, 1}));
    EXPECT_EQ(data.examples[1].id, "a3");
    EXPECT_EQ(data.examples[1].text_a, "p3");
    EXPECT_EQ(data.examples[1].text_b, "h3");
    EXPECT_EQ(data.examples[1].label, 2);
    EXPECT_EQ(data.examples[2].label, 1);  // numeric labels are indices in the same order

    // Without an id column the id is "<file name>:<line>"; gold_label wins over label.
    const std::string glue_mnli = dir.write("glue_mnli.tsv",
                                            "index\tsentence1_parse\tsentence1\tsentence2\tlabel1\tgold_label\n"
                                            "0\t(ROOT)\tp\th\tneutral\tentailment\n");
    const ClassificationData mnli = read_classification(glue_mnli);
    EXPECT_EQ(mnli.examples.at(0).id, "glue_mnli.tsv:2");
    EXPECT_EQ(mnli.examples.at(0).label, 0);
}

TEST(ClassificationReader, JsonLinesLikeTheMultiNliRelease) {
    TempDir dir;
    const std::string path =
        dir.write("dev.jsonl",
                  "{\"gold_label\": \"neutral\", \"pairID\": \"p1\", \"sentence1\": \"a \\\"q\\\"\", "
                  "\"sentence2\": \"b\", \"annotator_labels\": [\"neutral\"]}\n"
                  "\n"
                  "{\"gold_label\": \"-\", \"pairID\": \"p2\", \"sentence1\": \"c\", \"sentence2\": \"d\"}\n"
                  "{\"label\": -1, \"sentence1\": \"e\", \"sentence2\": \"f\"}\n"
                  "{\"label\": 2, \"pairID\": 7, \"sentence1\": \"g\", \"sentence2\": \"h\"}\n");
    const ClassificationData data = read_classification(path);
    ASSERT_EQ(data.examples.size(), 2u);
    EXPECT_EQ(data.stats.skipped_no_gold, 2);
    EXPECT_EQ(data.examples[0].text_a, "a \"q\"");
    EXPECT_EQ(data.examples[0].label, 1);
    EXPECT_EQ(data.examples[1].id, "7");
    EXPECT_EQ(data.examples[1].label, 2);
}

TEST(ClassificationReader, BadInputNamesFileAndLine) {
    TempDir dir;
    const std::string missing = dir.write("missing.tsv", "sentence1\tgold_label\na\tneutral\n");
    expect_error([&] { read_classification(missing); }, {missing, "no column 'sentence2'"});
    const std::string no_label = dir.write("no_label.tsv", "sentence1\tsentence2\na\tb\n");
    expect_error([&] { read_classification(no_label); }, {no_label, "no label column (gold_label, label;"});
    const std::string bad_label =
        dir.write("bad_label.tsv", "sentence1\tsentence2\tgold_label\na\tb\tneutral\nc\td\tmaybe\n");
    expect_error([&] { read_classification(bad_label); }, {bad_label + ":3", "label 'maybe'"});
    const std::string range = dir.write("range.tsv", "sentence1\tsentence2\tlabel\na\tb\t3\n");
    expect_error([&] { read_classification(range); }, {range + ":2", "label '3'"});
    const std::string cut = dir.write("cut.jsonl",
                                      "{\"sentence1\": \"a\", \"sentence2\": \"b\", \"gold_label\": \"neutral\"}\n"
                                      "{\"sentence1\": \"a\", \"sente");
    expect_error([&] { read_classification(cut); }, {cut + ":2: not valid JSON: parse error at column 26: syntax error"});
    // A folder given as a data file is refused by name, not read as no examples.
    expect_error([&] { read_classification(dir.path().string()); }, {dir.path().string() + " is a directory, not a file"});
    const std::string key = dir.write("key.jsonl", "{\"sentence1\": \"a\", \"gold_label\": \"neutral\"}\n");
    expect_error([&] { read_classification(key); }, {key + ":1", "no key 'sentence2'"});
    const std::string unlabelled = dir.write("unlabelled.jsonl", "{\"sentence1\": \"a\", \"sentence2\": \"b\"}\n");
    expect_error([&] { read_classification(unlabelled); }, {unlabelled + ":1", "no label key (gold_label, label)"});
}

TEST(ClassificationReader, RteWnliSst2AndSickLayouts) {
    TempDir dir;
    ClassificationOptions rte = rte_options();
    rte.columns = premise_hypothesis_columns();
    const ClassificationData pairs = read_classification(
        dir.write("rte.csv", "premise,hypothesis,label\n\"A, B\",C,not_entailment\nD,E,entailment\n"), rte);
    EXPECT_EQ(pairs.stats.label_counts, (std::vector<int64_t>{1, 1}));
    EXPECT_EQ(pairs.examples.at(0).text_a, "A, B");
    EXPECT_EQ(pairs.examples.at(0).label, 1);
    // WNLI numbers its labels the other way round from RTE: GLUE's 1, like the name, is entailment.
    const ClassificationData wnli = read_classification(
        dir.write("wnli.tsv", "index\tsentence1\tsentence2\tlabel\n0\tThe pin made a hole.\tIt had a hole.\t1\n"
                              "1\tHe is short.\tBilly is short.\tnot_entailment\n"),
        wnli_options());
    EXPECT_EQ(wnli.examples.at(0).label, 1);
    EXPECT_EQ(wnli.examples.at(1).label, 0);
    EXPECT_EQ(wnli_options().label_names.at(1), "entailment");
    const ClassificationData sst2 =
        read_classification(dir.write("sst.tsv", "sentence\tlabel\ngood \t1\nbad \t0\n"), sst2_options());
    EXPECT_EQ(sst2.examples.at(0).text_a, "good ");
    EXPECT_TRUE(sst2.examples.at(0).text_b.empty());
    EXPECT_EQ(sst2.stats.label_counts, (std::vector<int64_t>{1, 1}));
    ClassificationOptions sick = sick_options();
    sick.keep_only = RowFilter{"SemEval_set", "TRAIN"};
    const std::string sick_path = dir.write("SICK.txt",
                                            "pair_ID\tsentence_A\tsentence_B\tentailment_label\tSemEval_set\r\n"
                                            "1\ta\tb\tNEUTRAL\tTRAIN\r\n"
                                            "2\tc\td\tENTAILMENT\tTEST\r\n"
                                            "3\te\tf\tCONTRADICTION\tTRAIN");
    const ClassificationData train = read_classification(sick_path, sick);
    EXPECT_EQ(train.stats.filtered_out, 1);
    ASSERT_EQ(train.examples.size(), 2u);
    EXPECT_EQ(train.examples[1].id, "3");
    EXPECT_EQ(train.examples[1].label, 2);
}

TEST(ImdbReader, AclImdbFolderLayout) {
    TempDir dir;
    dir.write("aclImdb/train/pos/10_7.txt", "Ten.");
    dir.write("aclImdb/train/pos/2_9.txt", "Two <br /><br />caf\xC3\xA9");
    dir.write("aclImdb/train/neg/0_1.txt", "Zero.");
    dir.write("aclImdb/train/unsup/5_0.txt", "Five.");
    dir.write("aclImdb/train/urls_pos.txt", "not a review, beside the folders");
    const ClassificationData data = read_imdb((dir.path() / "aclImdb/train/").string());
    ASSERT_EQ(data.examples.size(), 3u);
    EXPECT_EQ(data.examples[0].id, "train_neg_0");
    EXPECT_EQ(data.examples[0].label, 0);
    EXPECT_EQ(data.examples[1].id, "train_pos_2");  // by number, not by name: 2 before 10
    EXPECT_EQ(data.examples[1].text_a, "Two <br /><br />caf\xC3\xA9");
    EXPECT_EQ(data.examples[2].id, "train_pos_10");
    EXPECT_EQ(data.stats.label_counts, (std::vector<int64_t>{1, 2}));
    const ClassificationData unsup = read_imdb((dir.path() / "aclImdb/train/unsup").string(), false);
    ASSERT_EQ(unsup.examples.size(), 1u);
    EXPECT_EQ(unsup.examples[0].id, "unsup_5");
    EXPECT_EQ(unsup.examples[0].label, -1);

    const std::string wrong_rating = dir.write("aclImdb/test/pos/3_2.txt", "rated 2 but filed as positive");
    dir.write("aclImdb/test/neg/1_3.txt", "fine");
    expect_error([&] { read_imdb((dir.path() / "aclImdb/test").string()); }, {wrong_rating, "rating 2 outside 7..10"});
    const std::string stray = dir.write("aclImdb/extra/neg/notes.txt", "x");
    dir.write("aclImdb/extra/pos/1_8.txt", "x");
    expect_error([&] { read_imdb((dir.path() / "aclImdb/extra").string()); }, {stray, "<n>_<rating>.txt"});
    const std::string bad_text = dir.write("aclImdb/utf/neg/1_1.txt", "bad \x80 byte");
    dir.write("aclImdb/utf/pos/1_8.txt", "x");
    expect_error([&] { read_imdb((dir.path() / "aclImdb/utf").string()); }, {bad_text, "invalid UTF-8"});
}

TEST(ImdbReader, KaggleCsvLayout) {
    TempDir dir;
    const std::string path = dir.write("IMDB Dataset.csv",
                                       "review,sentiment\n"
                                       "\"Great, \"\"really\"\" great.<br /><br />Second line\nthird\",positive\n"
                                       "Dull.,negative\n");
    const ClassificationData data = read_imdb(path);
    ASSERT_EQ(data.examples.size(), 2u);
    EXPECT_EQ(data.examples[0].text_a, "Great, \"really\" great.<br /><br />Second line\nthird");
    EXPECT_EQ(data.examples[0].label, 1);
    EXPECT_EQ(data.examples[0].id, "IMDB Dataset.csv:2");
    EXPECT_EQ(data.examples[1].id, "IMDB Dataset.csv:4");
    EXPECT_EQ(data.examples[1].label, 0);
}

// A SQuAD file with one article; `qas` is the JSON of its questions.
std::string squad_json(const std::string& context, const std::string& qas) {
    return "{\"version\": \"1.1\", \"data\": [{\"title\": \"T\", \"paragraphs\": [{\"context\": \"" + context +
           "\", \"qas\": [" + qas + "]}]}]}";
}

TEST(SquadReader, OffsetsCountCodePoints) {
    TempDir dir;
    // "é" is two bytes but one Python index: "Zürich" starts at code point 9, byte 10.
    const std::string path = dir.write(
        "one.json",
        squad_json(
            "Caf\u00e9 in Z\u00fcrich.",
            "{\"id\": \"q1\", \"question\": \"Where?\", \"answers\": ["
            "{\"text\": \"Z\u00fcrich\", \"answer_start\": 8}, {\"text\": \"Caf\u00e9\", \"answer_start\": 0}]}"));
    const SquadData data = read_squad(path);
    ASSERT_EQ(data.examples.size(), 1u);
    const SquadExample& q = data.examples[0];
    EXPECT_EQ(data.version, "1.1");
    EXPECT_EQ(q.id, "q1");
    EXPECT_EQ(q.title, "T");
    EXPECT_EQ(q.context, "Caf\xC3\xA9 in Z\xC3\xBCrich.");
    ASSERT_EQ(q.answers.size(), 2u);
    EXPECT_EQ(q.answers[0].text, "Z\xC3\xBCrich");
    EXPECT_EQ(q.answers[0].answer_start, 8);
    EXPECT_FALSE(q.is_impossible);
}

TEST(SquadReader, BadOffsetsNameTheQuestionUnlessSkipped) {
    TempDir dir;
    const std::string qas =
        "{\"id\": \"good\", \"question\": \"?\", \"answers\": [{\"text\": \"Z\u00fcrich\", \"answer_start\": 8}]},"
        "{\"id\": \"byte_offset\", \"question\": \"?\", \"answers\": [{\"text\": \"Z\u00fcrich\", \"answer_start\": 9},"
        " {\"text\": \"Z\u00fcrich\", \"answer_start\": 8}]},"
        "{\"id\": \"past_end\", \"question\": \"?\", \"answers\": [{\"text\": \"rich.\", \"answer_start\": 12}]}";
    const std::string path = dir.write("bad.json", squad_json("Caf\u00e9 in Z\u00fcrich.", qas));
    expect_error([&] { read_squad(path); }, {path, "question byte_offset", "answer_start 9"});
    const SquadData skipped = read_squad(path, {.skip_mismatched_answers = true});
    EXPECT_EQ(skipped.stats.questions, 3);
    EXPECT_EQ(skipped.stats.answers, 4);
    EXPECT_EQ(skipped.stats.skipped_answers, 2);
    EXPECT_EQ(skipped.stats.skipped_questions, 1);
    ASSERT_EQ(skipped.examples.size(), 2u);
    EXPECT_EQ(skipped.examples[1].id, "byte_offset");
    EXPECT_EQ(skipped.examples[1].answers.size(), 1u);
}

TEST(SquadReader, MalformedFilesNameFileOrQuestion) {
    TempDir dir;
    const std::string whole = squad_json(
        "ctx", "{\"id\": \"q\", \"question\": \"?\", \"answers\": [{\"text\": \"c\", \"answer_start\": 0}]}");
    const std::string cut = dir.write("cut.json", whole.substr(0, whole.size() - 7));
    expect_error([&] { read_squad(cut); }, {cut, "not valid JSON", "line 1"});
    const std::string no_question = dir.write("q.json", squad_json("ctx", "{\"id\": \"q7\", \"answers\": []}"));
    expect_error([&] { read_squad(no_question); }, {no_question, "question q7", "no \"question\""});
    const std::string no_answer =
        dir.write("a.json", squad_json("ctx", "{\"id\": \"q8\", \"question\": \"?\", \"answers\": []}"));
    expect_error([&] { read_squad(no_answer); }, {no_answer, "question q8", "no answers"});
    const std::string bad_utf8 =
        dir.write("u.json", squad_json("c\xFFtx", "{\"id\": \"q\", \"question\": \"?\", \"answers\": []}"));
    expect_error([&] { read_squad(bad_utf8); }, {bad_utf8, "UTF-8"});
    expect_error([&] { read_squad(dir.path().string() + "/absent.json.gz"); }, {"absent.json.gz"});
}

TEST(SquadReader, V2ImpossibleQuestionsAndPlausibleAnswers) {
    TempDir dir;
    const std::string path =
        dir.write("v2.json", squad_json("abc def",
                                        "{\"id\": \"x\", \"question\": \"?\", \"answers\": [], \"is_impossible\": true,"
                                        " \"plausible_answers\": [{\"text\": \"def\", \"answer_start\": 4}]},"
                                        "{\"id\": \"y\", \"question\": \"?\", \"is_impossible\": false,"
                                        " \"answers\": [{\"text\": \"abc\", \"answer_start\": 0}]}"));
    const SquadData data = read_squad(path);
    ASSERT_EQ(data.examples.size(), 2u);
    EXPECT_TRUE(data.examples[0].is_impossible);
    EXPECT_TRUE(data.examples[0].answers.empty());
    EXPECT_FALSE(data.examples[1].is_impossible);
    EXPECT_EQ(data.stats.impossible, 1);
}

}  // namespace
}  // namespace qdq
