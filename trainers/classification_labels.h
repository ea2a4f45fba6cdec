// The labels of a classification run: the data set preset's names and order
// (data/classification_reader.h, e.g. NLI's entailment 0, neutral 1, contradiction 2) against the
// class ids a model gives them. A fine-tuned checkpoint may name its labels in config.json
// (nn/bert_config.h) in another order: roberta-large-mnli's are CONTRADICTION 0, NEUTRAL 1,
// ENTAILMENT 2. Scored by the data set's ids, its predictions would be compared with shuffled
// classes. So, as Hugging Face's run_glue.py does ("Some models have set the order of the labels
// to use"), when the model's names, lowercased, are the data set's in another order, every example's
// label becomes the model's id for it; names that are not the data set's are ignored with a
// warning, and the data set's order is kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/classification_reader.h"

namespace qdq {

struct LabelOrder {
    // [the data set's label index] -> the model's class id; empty when the two are the same.
    std::vector<int32_t> model_ids;
    // By the model's class id: the data set's names, in the order the model uses them.
    std::vector<std::string> names;
    // A line for stderr: the mapping, or the warning that the model's names are ignored; empty
    // when the model names no labels or names them in the data set's order.
    std::string message;
};

// `model_names` (by class id; empty when the model names none) against `dataset_names`;
// `where` says whose names they are (a file) in the message.
LabelOrder label_order(const std::vector<std::string>& model_names, const std::vector<std::string>& dataset_names,
                       const std::string& where);

// The reader options of data.dataset's preset (IMDB: its JSONL's, whose labels aclImdb's folders share).
ClassificationOptions dataset_preset(ClassificationDataset dataset);

}  // namespace qdq
