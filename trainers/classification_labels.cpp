#include "trainers/classification_labels.h"

#include <algorithm>
#include <stdexcept>

#include "data/imdb_reader.h"

namespace qdq {

namespace {

// run_glue.py lowercases the model's names ("Some have all caps in their config"): Python's
// str.lower(), of which ASCII is all that label names here need.
std::string lowercase(std::string s) {
    for (char& ch : s)
        if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
    return s;
}

// "CONTRADICTION 0, NEUTRAL 1, ENTAILMENT 2"
std::string with_ids(const std::vector<std::string>& names) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
        if (i) out += ", ";
        out += names[i] + " " + std::to_string(i);
    }
    return out;
}

}  // namespace

LabelOrder label_order(const std::vector<std::string>& model_names, const std::vector<std::string>& dataset_names,
                       const std::string& where) {
    LabelOrder order{.model_ids = {}, .names = dataset_names, .message = {}};
    if (model_names.empty()) return order;
    std::vector<std::string> lowered(model_names.size());
    std::transform(model_names.begin(), model_names.end(), lowered.begin(), lowercase);
    std::vector<std::string> model_set = lowered, dataset_set = dataset_names;
    std::sort(model_set.begin(), model_set.end());
    std::sort(dataset_set.begin(), dataset_set.end());
    if (model_set != dataset_set) {
        order.message = "qdqtrain: warning: " + where + " names the labels " + with_ids(model_names) +
                        ", which are not the data set's (" + with_ids(dataset_names) +
                        "); the model's labels are ignored and the data set's order is kept, as Hugging Face's "
                        "run_glue.py does\n";
        return order;
    }
    if (lowered == dataset_names) return order;
    order.model_ids.resize(dataset_names.size());
    for (size_t d = 0; d < dataset_names.size(); ++d) {
        const size_t id = (size_t)(std::find(lowered.begin(), lowered.end(), dataset_names[d]) - lowered.begin());
        order.model_ids[d] = (int32_t)id;
        order.names[id] = dataset_names[d];
    }
    order.message = "qdqtrain: " + where + " sets the order of the labels (" + with_ids(model_names) +
                    "): the examples' labels are mapped to the model's ids, as Hugging Face's run_glue.py does\n";
    return order;
}

ClassificationOptions dataset_preset(ClassificationDataset dataset) {
    switch (dataset) {
    case ClassificationDataset::nli: return nli_options();
    case ClassificationDataset::headerless_nli: return headerless_nli_options();
    case ClassificationDataset::sick: return sick_options();
    case ClassificationDataset::rte: return rte_options();
    case ClassificationDataset::wnli: return wnli_options();
    case ClassificationDataset::sst2: return sst2_options();
    case ClassificationDataset::imdb: return imdb_jsonl_options();
    }
    throw std::logic_error("dataset_preset: unknown dataset");
}

}  // namespace qdq
