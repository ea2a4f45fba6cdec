"""PyTorch reference for bench_gemm and bench_train: the same workloads, shapes, timing
method (median of N after warm-up) and output format, so run.sh can join the two by name.

Plain torch.nn.functional code written as Hugging Face's BERT computes (transformers is not
needed), mirroring the product's steps that bench_train times: AdamW with HF's weight-decay
groups, gradient clipping at 1.0, QDQBERT's fake quantization for QAT, a masked-LM head that
decodes only the masked positions. With --bf16 every workload runs under
torch.autocast("cpu", dtype=torch.bfloat16), as Hugging Face's Trainer runs with bf16, and its
rows are named <workload>_bf16 as ours are; PyTorch's oneDNN uses AMX where it can. On some VMs
that dies (oneDNN 2.6 reads a CPUID leaf they hide), so run.sh runs the bf16 rows in a process
of their own. Run with a Python that has torch (on Debian: /usr/bin/python3 with python3-torch).
With --device cuda (PyTorch 2) every tensor lives on the GPU and --bf16 autocasts there; FP32
products stay FP32 (PyTorch leaves TF32 off for matmuls, as the product does), unless --tf32
allows it (torch.backends.cuda.matmul.allow_tf32, what Hugging Face's tf32 sets), as
training.tf32 does for the product's <workload>_tf32 rows. On cuda each training workload also
prints its peak device memory (torch.cuda.max_memory_allocated), as bench_train prints ours.

Usage: bench_torch.py [--warmup N] [--reps N] [--steps N] [--threads N] [--only SUBSTRING]
                      [--no-gemm] [--no-train] [--bf16 | --tf32] [--device cpu|cuda]
--warmup overrides every workload's default; --reps counts GEMM repetitions, --steps
training steps, as in bench_gemm and bench_train.
"""

import argparse
import contextlib
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

def precision(args):
    """The context every timed call runs in: autocast to bf16 with --bf16, else nothing."""
    if args.bf16:
        return torch.autocast(args.device, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def row_name(name, args):
    return name + ("_bf16" if args.bf16 else "_tf32" if args.tf32 else "")


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
        if args.bf16:  # autocast converts the FP32 operands, as ours do, and returns bf16
            products = (
                (f"gemm_fwd_{io}", lambda: torch.mm(x, w.t()), tokens * d_out * d_in),
                (f"gemm_dx_{io}", lambda: torch.mm(dy, w), tokens * d_in * d_out),
                (f"gemm_dw_{io}", lambda: torch.mm(dy.t(), x), d_out * d_in * tokens),
            )
        for name, fn, mnk in products:
            if args.only in name:
                with precision(args):
                    print_row(row_name(name, args), time_it(pick(args.warmup, 2), args.reps, fn), 2.0 * mnk)


# ---- BERT ----------------------------------------------------------------------------------

class Config:
    def __init__(self, name, layers, hidden, heads, ffn):
        self.name, self.layers, self.hidden, self.heads, self.ffn = name, layers, hidden, heads, ffn
        self.vocab, self.max_positions, self.type_vocab, self.labels = 30522, 512, 2, 2
        self.dropout, self.eps, self.mlm_probability = 0.1, 1e-12, 0.15


SIZES = (Config("tiny", 2, 128, 2, 512), Config("mini", 4, 256, 4, 1024), Config("base", 12, 768, 12, 3072))
DEFAULT_STEPS = {"tiny": 10, "mini": 6, "base": 3}


def normal(*shape):
    return (torch.randn(*shape) * 0.02).requires_grad_()


def zeros(*shape):
    return torch.zeros(*shape).requires_grad_()


def ones(*shape):
    return torch.ones(*shape).requires_grad_()


class Quantizers:
    """QDQBERT's fake quantization as pytorch-quantization runs it with use_fb_fake_quant (torch's
    own fake-quantize ops, the fastest path): signed 8 bits, narrow range [-127, 127], inputs per
    tensor with a calibrated amax (8 here), weights per output channel with amax max|w| (as
    bench_train's calibrate_weights). Off: every call is the identity."""

    def __init__(self, on):
        self.on = on

    def input(self, x):
        return torch.fake_quantize_per_tensor_affine(x, 8.0 / 127, 0, -127, 127) if self.on else x

    def linear(self, x, weight, bias):
        if not self.on:
            return F.linear(x, weight, bias)
        scale = weight.detach().abs().amax(dim=1) / 127
        zero = torch.zeros(weight.shape[0], dtype=torch.int32)
        w = torch.fake_quantize_per_channel_affine(weight, scale, zero, 0, -127, 127)
        return F.linear(self.input(x), w, bias)


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


def layer_forward(w, x, mask, c, training, q):
    """Hugging Face's BertLayer, with QDQBERT's quantizers where q is on."""
    B, T, C = x.shape
    H, D = c.heads, C // c.heads

    def heads(t):  # [B, T, C] -> [B, H, T, D]
        return t.view(B, T, H, D).permute(0, 2, 1, 3)

    qh = heads(q.linear(x, w["query.weight"], w["query.bias"]))
    kh = heads(q.linear(x, w["key.weight"], w["key.bias"]))
    vh = heads(q.linear(x, w["value.weight"], w["value.bias"]))
    scores = torch.matmul(q.input(qh), q.input(kh).transpose(-1, -2)) / math.sqrt(D) + mask
    probs = F.dropout(F.softmax(scores, dim=-1), c.dropout, training)
    context = torch.matmul(q.input(probs), q.input(vh)).permute(0, 2, 1, 3).reshape(B, T, C)
    attn = F.dropout(q.linear(context, w["attn_out.weight"], w["attn_out.bias"]), c.dropout, training)
    h = F.layer_norm(q.input(attn) + q.input(x), (C,), w["attn_ln.weight"], w["attn_ln.bias"], c.eps)
    inter = F.gelu(q.linear(h, w["inter.weight"], w["inter.bias"]))
    out = F.dropout(q.linear(inter, w["out.weight"], w["out.bias"]), c.dropout, training)
    return F.layer_norm(q.input(out) + q.input(h), (C,), w["out_ln.weight"], w["out_ln.bias"], c.eps)


def make_bert(c, mlm):
    """BertForSequenceClassification, or with mlm BertForMaskedLM (decoder tied to the word
    embeddings); named_params lists (name, tensor) as HF names them, near enough for the
    weight-decay groups."""
    params = []
    m = {
        "word": normal(c.vocab, c.hidden), "position": normal(c.max_positions, c.hidden),
        "token_type": normal(c.type_vocab, c.hidden),
        "emb_ln.weight": ones(c.hidden), "emb_ln.bias": zeros(c.hidden),
    }
    params.extend(("embeddings." + k, v) for k, v in m.items())
    m["layers"] = [make_layer(c, params, f"layer.{i}.") for i in range(c.layers)]
    if mlm:
        head = {
            "transform.weight": normal(c.hidden, c.hidden), "transform.bias": zeros(c.hidden),
            "transform_ln.weight": ones(c.hidden), "transform_ln.bias": zeros(c.hidden),
            "decoder.bias": zeros(c.vocab),
        }
    else:
        head = {
            "pooler.weight": normal(c.hidden, c.hidden), "pooler.bias": zeros(c.hidden),
            "classifier.weight": normal(c.labels, c.hidden), "classifier.bias": zeros(c.labels),
        }
    params.extend(head.items())
    m.update(head)
    return m, params


def make_batch(c, mlm):
    """Classification: sequence b has length SEQ - 16 * (b % 4), as bench_task.cpp writes them;
    masked LM: every sequence full."""
    lengths = torch.tensor([SEQ if mlm else SEQ - 16 * (b % 4) for b in range(BATCH)])
    valid = torch.arange(SEQ)[None, :] < lengths[:, None]
    ids = torch.randint(5, c.vocab, (BATCH, SEQ)) * valid
    mask = torch.where(valid, 0.0, -10000.0).view(BATCH, 1, 1, SEQ)
    return {
        "input_ids": ids, "token_type_ids": torch.zeros(BATCH, SEQ, dtype=torch.long),
        "position_ids": torch.arange(SEQ)[None, :], "mask": mask,
        "labels": torch.arange(BATCH) % 2,
    }


def encoder(m, c, batch, training, q):
    x = F.embedding(batch["input_ids"], m["word"]) + F.embedding(batch["token_type_ids"], m["token_type"])
    x = x + F.embedding(batch["position_ids"], m["position"])
    x = F.dropout(F.layer_norm(x, (c.hidden,), m["emb_ln.weight"], m["emb_ln.bias"], c.eps), c.dropout, training)
    for layer in m["layers"]:
        x = layer_forward(layer, x, batch["mask"], c, training, q)
    return x


def classification_loss(m, c, batch, training, q):
    x = encoder(m, c, batch, training, q)
    pooled = torch.tanh(F.linear(x[:, 0], m["pooler.weight"], m["pooler.bias"]))
    logits = F.linear(F.dropout(pooled, c.dropout, training), m["classifier.weight"], m["classifier.bias"])
    return F.cross_entropy(logits, batch["labels"])


def mlm_loss(m, c, batch, training, q):
    """15% of the tokens masked (as [MASK]: the ids' values do not change the work); the
    prediction head and decoder run only on those rows, as the product's forward_masked."""
    selected = torch.rand(BATCH, SEQ) < c.mlm_probability
    x = encoder(m, c, batch, training, q)
    picked = x[selected]
    h = F.gelu(F.linear(picked, m["transform.weight"], m["transform.bias"]))
    # .float(): under 1.13's CPU autocast the bf16 GELU output would meet FP32 LayerNorm weights
    # and fail; the product runs LayerNorm in FP32 too. A no-op in FP32.
    h = F.layer_norm(h.float(), (c.hidden,), m["transform_ln.weight"], m["transform_ln.bias"], c.eps)
    logits = F.linear(h, m["word"], m["decoder.bias"])
    return F.cross_entropy(logits, batch["input_ids"][selected])


def make_adamw(named):
    """HF Trainer's groups: no weight decay for biases and LayerNorm weights."""
    no_decay = [p for n, p in named if n.endswith("bias") or "ln" in n]
    decay = [p for n, p in named if not (n.endswith("bias") or "ln" in n)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01},
                              {"params": no_decay, "weight_decay": 0.0}], lr=1e-4, eps=1e-8)


def train_step(loss_fn, m, named, optimizer, c, batch, q, args):
    with precision(args):
        loss = loss_fn(m, c, batch, True, q)
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for _, p in named], 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.item()


def step_flops(c, training):
    """As bench_train.cpp: 2 per multiply-add of the layers' weights per token, plus attention."""
    C, Fd, tokens = c.hidden, c.ffn, BATCH * SEQ
    per_layer = 2.0 * tokens * (4 * C * C + 2 * C * Fd) + 4.0 * tokens * SEQ * C
    return (3.0 if training else 1.0) * c.layers * per_layer


def pick(option, default):
    return option if option is not None else default


def bench_size(c, args):
    warmup, steps = pick(args.warmup, 1), pick(args.steps, DEFAULT_STEPS[c.name])
    workloads = [(f"step_{c.name}_train", False, False), (f"step_{c.name}_qat", False, True),
                 (f"step_{c.name}_eval", False, False)]
    if c.name == "mini":
        workloads.append((f"mlm_{c.name}_train", True, False))
    for name, mlm, quantized in workloads:
        if args.only not in name:
            continue
        m, named = make_bert(c, mlm)
        batch = make_batch(c, mlm)
        q = Quantizers(quantized)
        loss_fn = mlm_loss if mlm else classification_loss
        try:
            if name.endswith("_eval"):
                def evaluate():
                    with torch.no_grad(), precision(args):
                        return loss_fn(m, c, batch, False, q).item()
                print_row(row_name(name, args), time_it(warmup, steps, evaluate), step_flops(c, False))
                continue
            optimizer = make_adamw(named)
            losses = []
            if args.device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            timing = time_it(warmup, steps,
                             lambda: losses.append(train_step(loss_fn, m, named, optimizer, c, batch, q, args)))
        except RuntimeError as e:  # an op without a bf16 kernel here: no row, and say why
            print(f"# {row_name(name, args)}: not run: {str(e).splitlines()[0]}", flush=True)
            continue
        print(f"# {row_name(name, args)}: first loss {losses[0]:.4f}")
        if args.device == "cuda":
            peak = torch.cuda.max_memory_allocated() / 2**20
            print(f"# {row_name(name, args)}: peak device memory {peak:.0f} MiB")
        print_row(row_name(name, args), timing, 0 if mlm else step_flops(c, True))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warmup", type=int, default=None, help="untimed repetitions first")
    parser.add_argument("--steps", type=int, default=None, help="timed steps per training workload")
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions per GEMM")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only", default="", help="run the workloads whose name contains this")
    parser.add_argument("--no-gemm", action="store_true")
    parser.add_argument("--no-train", action="store_true")
    parser.add_argument("--bf16", action="store_true", help="autocast to bf16; rows named <workload>_bf16")
    parser.add_argument("--tf32", action="store_true",
                        help="FP32 products in TF32 on the GPU; rows named <workload>_tf32")
    parser.add_argument("--device", default="cpu",
                        help="cuda: every tensor on the GPU (PyTorch 2), as bench_train runs where one is present")
    args = parser.parse_args()
    if args.tf32 and (args.bf16 or args.device == "cpu"):
        parser.error("--tf32 is for FP32 products on the GPU: with --device cuda, without --bf16")
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    if args.device != "cpu":
        torch.set_default_device(args.device)

    torch.set_num_threads(args.threads)
    blas, blas_path = loaded_openblas()
    if blas is not None:
        # torch.set_num_threads does not reach OpenBLAS's own thread pool.
        blas.openblas_set_num_threads(args.threads)
    torch.manual_seed(0)
    print(f"# bench_torch.py (PyTorch {torch.__version__}), {torch.get_num_threads()} threads, "
          f"batch {BATCH} x seq {SEQ}, median of N, on {args.device}")
    print(f"# gemm: {blas_description(blas, blas_path)}")
    print_header()
    with torch.no_grad():
        if not args.no_gemm:
            bench_gemm(args)
    if not args.no_train:
        for c in SIZES:
            bench_size(c, args)


if __name__ == "__main__":
    main()
