#include "tests/support/official_data.h"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/data_dir.h"
#include "data/gzip_file.h"

namespace qdq::testing {

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& path, const std::string& text) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary);
    out << text;
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

int64_t code_points(const std::string& utf8) {
    int64_t n = 0;
    for (const unsigned char byte : utf8) n += (byte & 0xC0) != 0x80;
    return n;
}

// Articles [first, first + count) of the shared dev file, each as one paragraph: its first four
// paragraphs joined into a context of 500 tokens or more, which a 384-token window cannot hold, so that
// windows run full and doc_stride splits them; two questions of each part, answer offsets
// shifted with it. With only_first_answer, each question keeps its first answer (the training
// file's form).
nlohmann::json squad_articles(size_t first, size_t count, bool only_first_answer) {
    const nlohmann::json dev = nlohmann::json::parse(read_gzip_file(data_path("squad/dev-v1.1.json.gz")));
    nlohmann::json articles = nlohmann::json::array();
    for (size_t a = first; a < first + count; ++a) {
        std::string context;
        nlohmann::json qas = nlohmann::json::array();
        for (size_t p = 0; p < 4; ++p) {
            const nlohmann::json& paragraph = dev["data"][a]["paragraphs"][p];
            if (!context.empty()) context += " ";
            const int64_t shift = code_points(context);  // SQuAD's offsets count characters
            context += paragraph["context"].get<std::string>();
            for (size_t q = 0; q < 2; ++q) {
                nlohmann::json qa = paragraph["qas"][q];
                if (only_first_answer) qa["answers"].erase(qa["answers"].begin() + 1, qa["answers"].end());
                for (nlohmann::json& answer : qa["answers"]) answer["answer_start"] = answer["answer_start"].get<int64_t>() + shift;
                qas.push_back(qa);
            }
        }
        const nlohmann::json paragraph = {{"context", context}, {"qas", qas}};
        articles.push_back({{"title", dev["data"][a]["title"]}, {"paragraphs", nlohmann::json::array({paragraph})}});
    }
    return articles;
}

struct NliPair {
    std::string pair_id, label, premise, hypothesis;
};

std::vector<NliPair> mnli_pairs(size_t count) {
    std::istringstream lines(read_gzip_file(data_path("mnli/dev_matched.tsv.gz")));
    std::string line;
    std::getline(lines, line);  // pairID gold_label sentence1 sentence2
    std::vector<NliPair> pairs;
    while (pairs.size() < count && std::getline(lines, line)) {
        std::istringstream cells(line);
        NliPair p;
        std::getline(cells, p.pair_id, '\t');
        std::getline(cells, p.label, '\t');
        std::getline(cells, p.premise, '\t');
        std::getline(cells, p.hypothesis, '\t');
        pairs.push_back(p);
    }
    return pairs;
}

// One GLUE MNLI row: the parse columns hold a bracketed copy of the sentence, as GLUE's do.
std::string mnli_row(size_t index, const NliPair& p, int annotator_labels) {
    std::string row = std::to_string(index) + "\t" + std::to_string(1000 + index) + "\t" + p.pair_id + "\tfiction\t( " +
                      p.premise + " )\t( " + p.hypothesis + " )\t(ROOT " + p.premise + ")\t(ROOT " + p.hypothesis + ")\t" +
                      p.premise + "\t" + p.hypothesis;
    for (int i = 0; i < annotator_labels; ++i) row += "\t" + p.label;
    return row + "\t" + p.label + "\n";
}

}  // namespace

void write_official_squad(const fs::path& dir) {
    write_file(dir / "train-v1.1.json", nlohmann::json{{"data", squad_articles(0, 2, true)}, {"version", "1.1"}}.dump());
    write_file(dir / "dev-v1.1.json", nlohmann::json{{"data", squad_articles(2, 1, false)}, {"version", "1.1"}}.dump());
}

void write_squad_as_json_lines(const fs::path& file) {
    std::string text;
    for (const nlohmann::json& article : squad_articles(0, 2, true))
        for (const nlohmann::json& paragraph : article["paragraphs"])
            for (const nlohmann::json& qa : paragraph["qas"]) {
                nlohmann::json answers = {{"text", nlohmann::json::array()}, {"answer_start", nlohmann::json::array()}};
                for (const nlohmann::json& a : qa["answers"]) {
                    answers["text"].push_back(a["text"]);
                    answers["answer_start"].push_back(a["answer_start"]);
                }
                text += nlohmann::json{{"id", qa["id"]}, {"title", article["title"]}, {"context", paragraph["context"]},
                                       {"question", qa["question"]}, {"answers", answers}}.dump() + "\n";
            }
    write_file(file, text);
}

void write_official_mnli(const fs::path& dir) {
    const std::vector<NliPair> pairs = mnli_pairs(24);
    const std::string columns = "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
                                "sentence1_parse\tsentence2_parse\tsentence1\tsentence2";
    std::string train = columns + "\tlabel1\tgold_label\n", dev = columns + "\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n";
    for (size_t i = 0; i < pairs.size(); ++i) (i < 16 ? train : dev) += mnli_row(i, pairs[i], i < 16 ? 1 : 5);
    write_file(dir / "train.tsv", train);
    write_file(dir / "dev_matched.tsv", dev);
}

}  // namespace qdq::testing
