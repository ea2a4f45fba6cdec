#include "data/squad_reader.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "autograd/rng.h"
#include "data/text_file.h"
#include "data/utf8.h"
#include "json/json_file.h"

namespace qdq {
namespace {

using nlohmann::json;

const json& field(const json& object, const char* key, json::value_t type, const std::string& where) {
    if (!object.is_object()) throw std::runtime_error(where + ": not a JSON object");
    const auto found = object.find(key);
    if (found == object.end()) throw std::runtime_error(where + ": no \"" + key + "\"");
    const bool matches =
        found->type() == type || (type == json::value_t::number_integer && found->is_number_unsigned());
    if (!matches) throw std::runtime_error(where + ": \"" + key + "\" is a " + found->type_name());
    return *found;
}

// byte_of[i] is where code point i starts; byte_of[code points] = bytes.
std::vector<size_t> code_point_starts(const std::string& text) {
    std::vector<size_t> byte_of;
    byte_of.reserve(text.size() + 1);
    for (size_t pos = 0; pos < text.size();) {
        byte_of.push_back(pos);
        decode_utf8(text, pos);
    }
    byte_of.push_back(text.size());
    return byte_of;
}

int64_t code_point_count(const std::string& text) {
    return std::count_if(text.begin(), text.end(), [](char c) { return ((unsigned char)c & 0xC0) != 0x80; });
}

bool answer_matches(const std::string& context, const std::vector<size_t>& byte_of, const SquadAnswer& answer) {
    const int64_t begin = answer.answer_start, end = begin + code_point_count(answer.text);
    if (begin < 0 || end >= (int64_t)byte_of.size()) return false;
    return std::string_view(context).substr(byte_of[begin], byte_of[end] - byte_of[begin]) == answer.text;
}

void read_question(const json& qa, const std::string& title, const std::string& context,
                   const std::vector<size_t>& byte_of, const std::string& where, const SquadReadOptions& options,
                   SquadData& out) {
    SquadExample example;
    example.id = field(qa, "id", json::value_t::string, where).get<std::string>();
    const std::string question_where = where + " question " + example.id;
    example.title = title;
    example.context = context;
    example.question = field(qa, "question", json::value_t::string, question_where).get<std::string>();
    if (qa.contains("is_impossible"))
        example.is_impossible = field(qa, "is_impossible", json::value_t::boolean, question_where).get<bool>();
    ++out.stats.questions;
    out.stats.impossible += example.is_impossible;
    const json& answers = field(qa, "answers", json::value_t::array, question_where);
    for (const json& given : answers) {
        ++out.stats.answers;
        SquadAnswer answer;
        answer.text = field(given, "text", json::value_t::string, question_where).get<std::string>();
        answer.answer_start =
            field(given, "answer_start", json::value_t::number_integer, question_where).get<int64_t>();
        if (answer_matches(context, byte_of, answer)) {
            example.answers.push_back(std::move(answer));
            continue;
        }
        if (!options.skip_mismatched_answers)
            throw std::runtime_error(question_where + ": answer \"" + answer.text + "\" is not at answer_start " +
                                     std::to_string(answer.answer_start) + " (code points) of the context");
        ++out.stats.skipped_answers;
    }
    if (example.answers.empty() && !example.is_impossible) {
        if (answers.empty()) throw std::runtime_error(question_where + ": no answers, and not is_impossible");
        ++out.stats.skipped_questions;
        return;
    }
    out.examples.push_back(std::move(example));
}

}  // namespace

SquadData read_squad(const std::string& path, const SquadReadOptions& options) {
    json root;
    try {
        root = json::parse(read_text_file(path));
    } catch (const json::parse_error& e) {
        throw std::runtime_error(path + ": not valid JSON: " + json_error_text(e));
    }
    SquadData out;
    if (root.is_object() && root.contains("version"))
        out.version = field(root, "version", json::value_t::string, path).get<std::string>();
    for (const json& article : field(root, "data", json::value_t::array, path)) {
        const std::string article_where = path + ": article " + std::to_string(out.stats.articles);
        const std::string title = field(article, "title", json::value_t::string, article_where).get<std::string>();
        ++out.stats.articles;
        const std::string paragraphs_where = path + ": article \"" + title + "\"";
        for (const json& paragraph : field(article, "paragraphs", json::value_t::array, paragraphs_where)) {
            const std::string where = paragraphs_where + " paragraph " + std::to_string(out.stats.paragraphs);
            ++out.stats.paragraphs;
            const std::string context = field(paragraph, "context", json::value_t::string, where).get<std::string>();
            const std::vector<size_t> byte_of = code_point_starts(context);
            for (const json& qa : field(paragraph, "qas", json::value_t::array, where))
                read_question(qa, title, context, byte_of, where, options, out);
        }
    }
    return out;
}

SquadSplit split_squad_by_article(const std::vector<SquadExample>& examples, double eval_fraction, uint64_t seed) {
    if (!(eval_fraction >= 0.0 && eval_fraction <= 1.0))
        throw std::invalid_argument("split_squad_by_article: eval_fraction must be in [0, 1]");
    const auto fnv1a = [](const std::string& text) {
        uint64_t hash = 0xcbf29ce484222325ull;
        for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
        return hash;
    };
    std::vector<std::pair<uint64_t, std::string>> ranked;
    std::unordered_set<std::string> seen;
    for (const SquadExample& example : examples)
        if (seen.insert(example.title).second) ranked.emplace_back(mix64(seed ^ fnv1a(example.title)), example.title);
    std::sort(ranked.begin(), ranked.end());
    const size_t eval_articles = (size_t)std::llround(eval_fraction * (double)ranked.size());
    std::unordered_set<std::string> eval_titles;
    for (size_t i = 0; i < eval_articles; ++i) eval_titles.insert(ranked[i].second);

    SquadSplit split;
    for (const SquadExample& example : examples)
        (eval_titles.count(example.title) ? split.eval : split.train).push_back(example);
    return split;
}

}  // namespace qdq
