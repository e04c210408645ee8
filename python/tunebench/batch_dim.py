"""What a step's `samples` count: the batch dimension of the model's input, which is not always its first.

A language model trained the way the public examples do it feeds sequence-first tensors, (bptt, batch) token
ids cut from one long tensor, to an LSTM or a TransformerEncoder made with batch_first=False: the first
dimension is the sequence length. The model's own sequence modules (recurrent layers and cells, attention,
transformer layers) know which dimension is their batch: their `batch_first` attribute says so, so the first
of them the iteration's first training forward calls gives the batch (and the sequence length) of what it
reads. That batch is the step's count when it is a dimension of the model's input; the input's first dimension
is the count otherwise, as for every model without sequence modules.

The unit says what was counted: "samples" (the first dimension: a DataLoader's batch, an image model's input),
"sequences" (a sequence model's batch dimension; `tokens` is then batch x sequence length), or "time steps"
when the model's input begins with its sequence length and its batch could not be found in it (the count is
then the sequence length, and the launcher says so once)."""

import torch
from torch.nn.utils.rnn import PackedSequence

# The modules whose input layout their own `batch_first` states. A transformer layer's is its attention's;
# nn.Transformer and nn.TransformerEncoder call their layers, which are found first.
SEQUENCE_MODULES = (torch.nn.RNNBase, torch.nn.RNNCellBase, torch.nn.MultiheadAttention,
                    torch.nn.TransformerEncoderLayer, torch.nn.TransformerDecoderLayer)


def _first(x, depth=0):
    """The first tensor or PackedSequence in a call's arguments (tuples, lists and dicts searched in order)."""
    if isinstance(x, (torch.Tensor, PackedSequence)):
        return x
    if depth < 3:
        if isinstance(x, (list, tuple)):
            for v in x[:8]:
                found = _first(v, depth + 1)
                if found is not None:
                    return found
        elif isinstance(x, dict):
            for v in list(x.values())[:8]:
                found = _first(v, depth + 1)
                if found is not None:
                    return found
    return None


def _packed(p):
    """(batch, longest sequence, tokens) of a PackedSequence: batch_sizes[t] is the batch at time step t."""
    sizes = p.batch_sizes
    return int(sizes[0]) if len(sizes) else 0, int(len(sizes)), int(p.data.shape[0])


def model_input(args):
    """What the rule needs of the model's input: ("packed", (batch, time, tokens)) for a PackedSequence, else
    ("shape", the first tensor's shape as a tuple; () when there is none)."""
    x = _first(args)
    if isinstance(x, PackedSequence):
        return "packed", _packed(x)
    if isinstance(x, torch.Tensor):
        return "shape", tuple(int(n) for n in x.shape)
    return "shape", ()


def _batch_first(module):
    bf = getattr(module, "batch_first", None)
    if bf is None:  # a transformer layer keeps it on its attention
        bf = getattr(getattr(module, "self_attn", None), "batch_first", None)
    return bool(bf)


def sequence_batch(module, args):
    """(batch, sequence length or None) of what a sequence module is called with, by its own layout; None
    when its input is not a tensor it can read (keyword arguments: the hooks see positional ones only)."""
    x = args[0] if args else None
    if isinstance(x, PackedSequence):
        b, t, _ = _packed(x)
        return b, t
    if not isinstance(x, torch.Tensor):
        return None
    if isinstance(module, torch.nn.RNNCellBase):  # one time step: (batch, features), or (features,)
        return (int(x.shape[0]) if x.dim() == 2 else 1), None
    if x.dim() < 3:  # unbatched: (time, features)
        return 1, (int(x.shape[0]) if x.dim() == 2 else None)
    if _batch_first(module):
        return int(x.shape[0]), int(x.shape[1])
    return int(x.shape[1]), int(x.shape[0])


def decide(inp, seq, loader_count=None):
    """(samples, unit, tokens) of an iteration; tokens is None unless a sequence model counted them.

    inp: model_input() of the iteration's first training forward; seq: sequence_batch() of the first sequence
    module it called (None: none); loader_count: the samples of the iteration's DataLoader batch (the first
    dimension of its first tensor; None without a DataLoader)."""
    kind, what = inp
    if kind == "packed":
        b, _, tokens = what
        return b, "sequences", tokens
    shape = what
    n0 = loader_count if loader_count is not None else (shape[0] if shape else 0)
    if seq is None or not shape:
        return n0, "samples", None
    b, t = seq
    tokens = b * t if t else None
    # Token ids (batch, time) or per-step features (batch, time, features), either way round; an image (or
    # anything of more dimensions) read by attention stays a sample however its patches are laid out.
    unit = "sequences" if len(shape) <= 3 else "samples"
    if b == n0:
        return b, unit, tokens
    if shape[0] == n0 and b in shape[1:]:
        return b, "sequences", tokens  # sequence-first: the batch is a later dimension
    if t and shape[0] == t:
        if b == 1:
            return 1, "sequences", t  # one unbatched sequence
        return n0, "time steps", None  # it begins with its time steps, and its batch is not among the others
    # The sequence module reads something the model made (sub-sequences of each sample): the first dimension
    # of the model's input is the batch.
    return n0, "samples", None
