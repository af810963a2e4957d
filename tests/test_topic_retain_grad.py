"""The `retain_grad` topic: plausible mistakes fail on every seed with the
diagnosis that names them (and no other), and correct solutions in other
styles pass.

Every planted mistake (mistakes/retain_grad/<name>.py) and every correct style is
graded under the 20 seeds of ``grade_seeds``, all in one grading session."""

from conftest import assert_planted
from planted_mistakes import Expect, planted

from pytest_autograd_grader.i18n import msg

TOPIC = "retain_grad"

COMMON = (
    "diag.none_intermediate",
    "diag.retain_grad.too_late",
    "diag.retain_grad.cloned",
    "diag.retain_grad.detached",
    "diag.retain_grad.other_tensor",
    "diag.retain_grad.elsewhere",
    "diag.retain_grad.off_path",
    "diag.retain_grad.returns_none",
    "diag.leaf.no_backward",
    "diag.multiple_calls",
    "diag.factor",
    "diag.multiple",
    "diag.running_sum",
    "diag.implicit_grad",
)
# The ids each check may answer with; a planted mistake must get its own and none of the others.
SPECIFIC = {
    "test_intermediate_grads": COMMON
    + ("diag.retain_grad.weights", "diag.graph.sum_not_mean", "diag.retain_grad.matmul_loss"),
    "test_hidden_grads": COMMON + ("diag.mean_sum", "diag.retain_grad.mean_one_axis", "diag.retain_grad.squeeze"),
    "test_chain_grads": COMMON + ("diag.graph.sum_not_mean",),
}


# What the test asserts of a planted mistake (mistakes/retain_grad/<name>.py) beyond its
# file's diagnosis: more feedback text, a partial score, text that must be absent.
EXPECT = {
    "never_retained": Expect(texts=("a.grad: expected a gradient, got None",)),
    "intermediate_copies": Expect(
        texts=(
            "a.grad: expected a gradient, got None",
            msg("diag.retain_grad.cloned", what="a", grad_fn="CloneBackward0"),
        )
    ),
    "weights_left_out": Expect(texts=("a.grad: values differ",)),
    "intermediate_mean": Expect(texts=("a.grad: values differ",)),
    "backward_twice": Expect(texts=(msg("diag.multiple_calls", k=2, calls=2, name="x"),)),
    "hidden_only": Expect(
        texts=("out.grad: expected a gradient, got None", msg("diag.retain_grad.other_tensor", other="h", what="out"))
    ),
    "hidden_too_late": Expect(texts=(msg("diag.retain_grad.too_late", what="h"),)),
    "hidden_sum": Expect(texts=("h.grad: values differ",)),
    "hidden_detached": Expect(texts=(msg("diag.retain_grad.detached", what="h"),)),
    "chain_too_late": Expect(
        texts=("z_1.grad: expected a gradient, got None", msg("diag.retain_grad.too_late", what="z_1"))
    ),
    "chain_one_late": Expect(texts=(".grad: expected a gradient, got None", "calls retain_grad() on x, not on z_")),
    "chain_last_only": Expect(texts=("z_1.grad: expected a gradient, got None", ", not on z_1;")),
    "chain_copies": Expect(texts=(msg("diag.retain_grad.cloned", what="z_1", grad_fn="CloneBackward0"),)),
    "leaves_retained": Expect(
        texts=(msg("diag.retain_grad.other_tensor", other=msg("label.retain_grad.and", first="x", last="w"), what="a"),)
    ),
    "copy_retained": Expect(texts=(msg("label.retain_grad.made_from", what="a", grad_fn="CloneBackward0"),)),
    "pre_activation": Expect(
        texts=(
            msg(
                "diag.retain_grad.other_tensor",
                what="h",
                other=msg("label.retain_grad.input_of", what="h", grad_fn="MmBackward0"),
            ),
        )
    ),
    "output_only": Expect(texts=(msg("diag.retain_grad.other_tensor", other="out", what="h"),)),
    "h_made_twice": Expect(texts=(msg("diag.retain_grad.off_path", what="h"),)),
    "mean_one_axis": Expect(texts=("averages over the N axis of out only",)),
    "chain_copies_retained": Expect(texts=(msg("label.retain_grad.made_from", what="z_1", grad_fn="CloneBackward0"),)),
    "chain_returns_none": Expect(texts=("NoneType",)),
}


# Correct, in other styles than the reference's.
OTHER_STYLES = {
    "intermediate_grads": """
def intermediate_grads(x, w, v):
    a = x + w
    b = w + 1
    a.retain_grad()
    b.retain_grad()
    y = a * b
    y.retain_grad()
    y.backward(v)
    return [a, b, y]
""",
    # backward(inputs=...) fills the intermediates' .grad without retain_grad().
    "hidden_grads": """
def hidden_grads(x, W1, W2):
    h = torch.matmul(x, W1).tanh()
    out = torch.matmul(h, W2)
    torch.autograd.backward(out.pow(2).mean(), inputs=[h, out, W1, W2])
    return [h, out]
""",
    "chain_grads": """
def chain_grads(x, c):
    zs = []
    for k in range(len(c)):
        z = torch.nn.functional.tanh((zs[-1] if zs else x) * c[k].item())
        z.retain_grad()
        zs.append(z)
    # torch.autograd.grad fills retained gradients as backward does.
    torch.autograd.grad(torch.sum(zs[-1]), x)
    return tuple(zs)
""",
}

# Correct again: retain_grad() in a loop after the forward pass, an einsum
# loss, a recursion, a loss divided by numel.
MORE_STYLES = {
    "intermediate_grads": """
def intermediate_grads(x, w, v):
    a, b = x + w, w + 1
    y = a * b
    for t in (a, b, y):
        t.retain_grad()
    torch.einsum('...,...->', v, y).backward()
    return (a, b, y)
""",
    "hidden_grads": """
def hidden_grads(x, W1, W2):
    h = torch.einsum('nd,dh->nh', x, W1).tanh()
    h.retain_grad()
    out = torch.mm(h, W2)
    out.retain_grad()
    loss = out.pow(2).sum() / out.numel()
    loss.backward()
    return h, out
""",
    "chain_grads": """
def chain_grads(x, c):
    def go(z, k):
        if k == len(c):
            return []
        nz = c[k].mul(z).tanh()
        nz.retain_grad()
        return [nz] + go(nz, k + 1)
    zs = go(x, 0)
    torch.autograd.backward(zs[-1].sum())
    return zs
""",
}

CORRECT = {"styles": OTHER_STYLES, "more": MORE_STYLES}


def test_planted_mistakes_fail_and_other_styles_pass_on_every_seed(pytester):
    assert_planted(pytester, TOPIC, planted(TOPIC, EXPECT), CORRECT, SPECIFIC)


def test_retain_grad_on_a_tensor_the_trace_cannot_name_is_still_told():
    # a trace without retained entries (more than the trace keeps, or a
    # worker that sent none): the feedback still says retain_grad() went elsewhere
    import importlib.util

    import torch
    from conftest import EXERCISES

    from pytest_autograd_grader import TensorRecord
    from pytest_autograd_grader.boundary.tracing import BackwardCall, Op, Trace

    spec = importlib.util.spec_from_file_location("retain_grad_checks", EXERCISES / "test_retain_grad.py")
    checks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(checks)
    trace = Trace(
        ops=(Op("add", True, "AddBackward0"), Op("retain_grad", True), Op("backward", True)),
        calls=(BackwardCall("backward", None, False, 1, False, None),),
    )
    a = TensorRecord(
        data=torch.zeros(2),
        grad=None,
        requires_grad=True,
        is_leaf=False,
        grad_fn="AddBackward0",
        retains_grad=False,
        dtype="float64",
        device="cpu",
        shape=(2,),
    )
    assert checks.why_none(a, "a", "AddBackward0", trace, "aby", ("x", "w", "v")) == msg(
        "diag.retain_grad.elsewhere", what="a"
    )
