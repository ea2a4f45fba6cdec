"""PyTorch's counterpart of bench_model_files: a BERT question-answering model's tensors made
with Hugging Face's initialisation (normal(0, 0.02) for every Linear and Embedding weight, zero
biases, LayerNorm at one and zero), written with torch.save (no compression) and read back with
torch.load, and a model's start from that file (from_pretrained's: no initial values for what the
file holds). transformers is not needed: the tensors are made by name and shape as its
BertForQuestionAnswering holds them. Output format as bench_torch.py's.

Usage: bench_model_files.py [--model base|large] [--reps N] [--threads N] [--dir DIR]
"""

import argparse
import os
import statistics
import tempfile
import time

import torch


def shapes(model):
    hidden, layers = (1024, 24) if model == "large" else (768, 12)
    inner = 4 * hidden
    out = {"bert.embeddings.word_embeddings.weight": (30522, hidden),
           "bert.embeddings.position_embeddings.weight": (512, hidden),
           "bert.embeddings.token_type_embeddings.weight": (2, hidden),
           "bert.embeddings.LayerNorm.weight": (hidden,), "bert.embeddings.LayerNorm.bias": (hidden,)}
    for i in range(layers):
        p = f"bert.encoder.layer.{i}."
        for name, rows, cols in [("attention.self.query", hidden, hidden), ("attention.self.key", hidden, hidden),
                                 ("attention.self.value", hidden, hidden), ("attention.output.dense", hidden, hidden),
                                 ("intermediate.dense", inner, hidden), ("output.dense", hidden, inner)]:
            out[p + name + ".weight"] = (rows, cols)
            out[p + name + ".bias"] = (rows,)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            out[p + norm + ".weight"] = (hidden,)
            out[p + norm + ".bias"] = (hidden,)
    out["qa_outputs.weight"] = (2, hidden)
    out["qa_outputs.bias"] = (2,)
    return out


def build(model):
    torch.manual_seed(42)
    state = {}
    for name, shape in shapes(model).items():
        if name.endswith("LayerNorm.weight"):
            state[name] = torch.ones(shape)
        elif name.endswith("bias"):
            state[name] = torch.zeros(shape)
        else:
            state[name] = torch.empty(shape).normal_(0.0, 0.02)
    return state


def start_from_file(model, path):
    """A model's start from a file as from_pretrained makes it: tensors left uninitialised (its
    fast init skips the weights the file holds), then the file's values copied in."""
    state = {name: torch.empty(shape) for name, shape in shapes(model).items()}
    loaded = torch.load(path)
    for name, tensor in state.items():
        tensor.copy_(loaded[name])
    return state


def row(name, ms):
    print(f"{name:<28} {len(ms):5d} {statistics.median(ms):11.3f} {min(ms):11.3f} {'-':>9}", flush=True)


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return (time.perf_counter() - start) * 1e3, result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["base", "large"], default="base")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    path = os.path.join(args.dir, f"bench_model_{os.getpid()}.pt")
    print(f"# torch {torch.__version__}, bert-{args.model}, {torch.get_num_threads()} threads")
    print(f"{'name':<28} {'reps':>5} {'median_ms':>11} {'min_ms':>11} {'GFLOP/s':>9}")
    built = [timed(lambda: build(args.model)) for _ in range(args.reps)]
    row(f"build_{args.model}", [ms for ms, _ in built])
    state = built[-1][1]
    row(f"save_pt_{args.model}", [timed(lambda: torch.save(state, path))[0] for _ in range(args.reps)])
    row(f"load_pt_{args.model}", [timed(lambda: torch.load(path))[0] for _ in range(args.reps)])
    row(f"start_from_file_{args.model}", [timed(lambda: start_from_file(args.model, path))[0] for _ in range(args.reps)])
    print(f"# model.pt {os.path.getsize(path) / 1e6:.1f} MB")
    os.remove(path)


if __name__ == "__main__":
    main()
