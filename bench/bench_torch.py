"""PyTorch reference for bench_gemm and bench_train: the same workloads, shapes, timing
method (median of N after warm-up) and output format, so run.sh can join the two by name.

Plain torch.nn.functional code mirroring bench/bert_step.cpp (transformers is not needed).
Run with a Python that has torch (on Debian: /usr/bin/python3 with python3-torch).

Usage: bench_torch.py [--warmup N] [--reps N] [--steps N] [--threads N] [--only SUBSTRING]
                      [--no-gemm] [--no-train]
--warmup overrides every workload's default; --reps counts GEMM repetitions, --steps
training steps, as in bench_gemm and bench_train.
"""

import argparse
import ctypes
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F

BATCH, SEQ = 32, 128


def time_it(warmup, reps, fn):
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - start) * 1e3)
    return reps, statistics.median(ms), min(ms)


def print_header():
    print(f"{'name':<28} {'reps':>5} {'median_ms':>11} {'min_ms':>11} {'GFLOP/s':>9}")


def print_row(name, timing, flops):
    reps, median, low = timing
    gflops = f"{flops / (median * 1e6):9.1f}" if flops > 0 else f"{'-':>9}"
    print(f"{name:<28} {reps:5d} {median:11.3f} {low:11.3f} {gflops}", flush=True)


def loaded_openblas():
    """The OpenBLAS library torch loaded (Debian's torch calls BLAS through it), or None."""
    with open("/proc/self/maps") as maps:
        paths = sorted({line.split()[-1] for line in maps if "libopenblas" in line})
    if not paths:
        return None, None
    lib = ctypes.CDLL(paths[0])
    lib.openblas_get_corename.restype = ctypes.c_char_p
    return lib, paths[0]


def blas_description(lib, path):
    """Which OpenBLAS kernel torch's GEMMs run, read from the library itself."""
    if lib is None:
        return "not OpenBLAS: " + torch.__config__.show().split("BLAS_INFO=")[-1].split(",")[0]
    core = lib.openblas_get_corename().decode()
    source = os.environ.get("OPENBLAS_CORETYPE")
    chosen = f"OPENBLAS_CORETYPE={source} from the environment" if source else "its own CPU detection"
    return f"OpenBLAS ({os.path.basename(path)}), kernel {core}, {chosen}"


# ---- GEMM --------------------------------------------------------------------------------

def bench_gemm(args):
    tokens = 4096
    for d_in, d_out in ((768, 768), (768, 3072), (3072, 768)):
        io = f"{d_in}x{d_out}"
        x = torch.rand(tokens, d_in) - 0.5
        w = torch.rand(d_out, d_in) - 0.5
        dy = torch.rand(tokens, d_out) - 0.5
        y, dx, dw = torch.empty(tokens, d_out), torch.empty(tokens, d_in), torch.empty(d_out, d_in)
        # As autograd's linear does it: the transposes are strides, passed to BLAS as flags.
        # Into preallocated outputs, as bench_gemm: a fresh 48 MB result would add its page
        # faults (tens of ms) to the product's time.
        products = (
            (f"gemm_fwd_{io}", lambda: torch.mm(x, w.t(), out=y), tokens * d_out * d_in),
            (f"gemm_dx_{io}", lambda: torch.mm(dy, w, out=dx), tokens * d_in * d_out),
            (f"gemm_dw_{io}", lambda: torch.mm(dy.t(), x, out=dw), d_out * d_in * tokens),
        )
        for name, fn, mnk in products:
            if args.only in name:
                print_row(name, time_it(pick(args.warmup, 2), args.reps, fn), 2.0 * mnk)


# ---- BERT ----------------------------------------------------------------------------------

class Config:
    def __init__(self, name, layers=12, hidden=768, heads=12, ffn=3072):
        self.name, self.layers, self.hidden, self.heads, self.ffn = name, layers, hidden, heads, ffn
        self.vocab, self.max_positions, self.type_vocab, self.labels = 30522, 512, 2, 2
        self.dropout, self.eps = 0.1, 1e-12


def normal(*shape):
    return (torch.randn(*shape) * 0.02).requires_grad_()


def zeros(*shape):
    return torch.zeros(*shape).requires_grad_()


def ones(*shape):
    return torch.ones(*shape).requires_grad_()


def make_layer(c, params, prefix):
    C, Fd = c.hidden, c.ffn
    layer = {
        "query.weight": normal(C, C), "query.bias": zeros(C),
        "key.weight": normal(C, C), "key.bias": zeros(C),
        "value.weight": normal(C, C), "value.bias": zeros(C),
        "attn_out.weight": normal(C, C), "attn_out.bias": zeros(C),
        "attn_ln.weight": ones(C), "attn_ln.bias": zeros(C),
        "inter.weight": normal(Fd, C), "inter.bias": zeros(Fd),
        "out.weight": normal(C, Fd), "out.bias": zeros(C),
        "out_ln.weight": ones(C), "out_ln.bias": zeros(C),
    }
    params.extend((prefix + k, v) for k, v in layer.items())
    return layer


def layer_forward(w, x, mask, c, training):
    B, T, C = x.shape
    H, D = c.heads, C // c.heads

    def heads(t):  # [B, T, C] -> [B, H, T, D]
        return t.view(B, T, H, D).permute(0, 2, 1, 3)

    q = heads(F.linear(x, w["query.weight"], w["query.bias"]))
    k = heads(F.linear(x, w["key.weight"], w["key.bias"]))
    v = heads(F.linear(x, w["value.weight"], w["value.bias"]))
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D) + mask
    probs = F.dropout(F.softmax(scores, dim=-1), c.dropout, training)
    context = torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, C)
    attn = F.dropout(F.linear(context, w["attn_out.weight"], w["attn_out.bias"]), c.dropout, training)
    h = F.layer_norm(attn + x, (C,), w["attn_ln.weight"], w["attn_ln.bias"], c.eps)
    inter = F.gelu(F.linear(h, w["inter.weight"], w["inter.bias"]))
    out = F.dropout(F.linear(inter, w["out.weight"], w["out.bias"]), c.dropout, training)
    return F.layer_norm(out + h, (C,), w["out_ln.weight"], w["out_ln.bias"], c.eps)


def make_bert(c):
    params = []
    m = {
        "word": normal(c.vocab, c.hidden), "position": normal(c.max_positions, c.hidden),
        "token_type": normal(c.type_vocab, c.hidden),
        "emb_ln.weight": ones(c.hidden), "emb_ln.bias": zeros(c.hidden),
    }
    params.extend(("embeddings." + k, v) for k, v in m.items())
    m["layers"] = [make_layer(c, params, f"layer.{i}.") for i in range(c.layers)]
    head = {
        "pooler.weight": normal(c.hidden, c.hidden), "pooler.bias": zeros(c.hidden),
        "classifier.weight": normal(c.labels, c.hidden), "classifier.bias": zeros(c.labels),
    }
    params.extend(head.items())
    m.update(head)
    return m, [p for _, p in params], params


def make_batch(c):
    """Sequence b has length SEQ - 16 * (b % 4), as in bert_step.cpp."""
    lengths = torch.tensor([SEQ - 16 * (b % 4) for b in range(BATCH)])
    valid = torch.arange(SEQ)[None, :] < lengths[:, None]
    ids = torch.randint(1, c.vocab, (BATCH, SEQ)) * valid
    mask = torch.where(valid, 0.0, -10000.0).view(BATCH, 1, 1, SEQ)
    return {
        "input_ids": ids, "token_type_ids": torch.zeros(BATCH, SEQ, dtype=torch.long),
        "position_ids": torch.arange(SEQ)[None, :], "mask": mask,
        "labels": torch.randint(0, c.labels, (BATCH,)),
    }


def bert_logits(m, c, batch, training):
    x = F.embedding(batch["input_ids"], m["word"]) + F.embedding(batch["token_type_ids"], m["token_type"])
    x = x + F.embedding(batch["position_ids"], m["position"])
    x = F.dropout(F.layer_norm(x, (c.hidden,), m["emb_ln.weight"], m["emb_ln.bias"], c.eps), c.dropout, training)
    for layer in m["layers"]:
        x = layer_forward(layer, x, batch["mask"], c, training)
    pooled = torch.tanh(F.linear(x[:, 0], m["pooler.weight"], m["pooler.bias"]))
    pooled = F.dropout(pooled, c.dropout, training)
    return F.linear(pooled, m["classifier.weight"], m["classifier.bias"])


def train_step(m, params, c, batch, lr):
    loss = F.cross_entropy(bert_logits(m, c, batch, True), batch["labels"])
    loss.backward()
    with torch.no_grad():
        for p in params:
            p.add_(p.grad, alpha=-lr)
            p.grad = None
    return loss.item()


def eval_step(m, c, batch):
    with torch.no_grad():
        return F.cross_entropy(bert_logits(m, c, batch, False), batch["labels"]).item()


def bert_flops(c, named_params, training):
    params = sum(p.numel() for name, p in named_params if not name.startswith("embeddings."))
    per_token = 2.0 * params + c.layers * 4.0 * SEQ * c.hidden
    return (3.0 if training else 1.0) * per_token * BATCH * SEQ


def pick(option, default):
    return option if option is not None else default


def bench_layer(args):
    name = "layer_base_train"
    if args.only not in name:
        return
    c = Config("base")
    params = []
    layer = make_layer(c, params, "layer.")
    batch = make_batch(c)
    x = torch.randn(BATCH, SEQ, c.hidden, requires_grad=True)
    grad_out = torch.randn(BATCH, SEQ, c.hidden)

    def step():
        layer_forward(layer, x, batch["mask"], c, True).backward(grad_out)
        for _, p in params:
            p.grad = None
        x.grad = None

    C, Fd, tokens = c.hidden, c.ffn, BATCH * SEQ
    forward = 2.0 * tokens * (4 * C * C + 2 * C * Fd) + 4.0 * tokens * SEQ * C
    print_row(name, time_it(pick(args.warmup, 1), pick(args.steps, 5), step), 3.0 * forward)


def bench_bert(c, default_steps, args):
    train_name, eval_name = f"step_{c.name}_train", f"step_{c.name}_eval"
    if args.only not in train_name and args.only not in eval_name:
        return
    m, params, named = make_bert(c)
    batch = make_batch(c)
    warmup, steps = pick(args.warmup, 2), pick(args.steps, default_steps)
    if args.only in train_name:
        losses = []
        timing = time_it(warmup, steps, lambda: losses.append(train_step(m, params, c, batch, 1e-3)))
        print(f"# {train_name}: first loss {losses[0]:.4f}")
        print_row(train_name, timing, bert_flops(c, named, True))
    if args.only in eval_name:
        print_row(eval_name, time_it(warmup, steps, lambda: eval_step(m, c, batch)), bert_flops(c, named, False))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=int, default=None, help="untimed repetitions first")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per training workload")
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions per GEMM")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="run the workloads whose name contains this")
    parser.add_argument("--no-gemm", action="store_true")
    parser.add_argument("--no-train", action="store_true")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    blas, blas_path = loaded_openblas()
    if blas is not None:
        # torch.set_num_threads does not reach OpenBLAS's own thread pool.
        blas.openblas_set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"# bench_torch.py (PyTorch {torch.__version__}), {torch.get_num_threads()} threads, "
          f"batch {BATCH} x seq {SEQ}, median of N")
    print(f"# gemm: {blas_description(blas, blas_path)}")
    print_header()
    with torch.no_grad():
        if not args.no_gemm:
            bench_gemm(args)
    if not args.no_train:
        bench_layer(args)
        bench_bert(Config("tiny", layers=2, hidden=128, heads=2, ffn=512), 10, args)
        bench_bert(Config("mini", layers=4, hidden=256, heads=4, ffn=1024), 6, args)


if __name__ == "__main__":
    main()
