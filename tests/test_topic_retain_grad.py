"""The `retain_grad` topic: plausible mistakes fail on every seed with the
diagnosis that names them (and no other), and correct solutions in other
styles pass.

Every planted mistake and every correct style is graded under the 20 seeds
of ``grade_seeds``, all in one grading session."""


from conftest import Mistake, assert_planted

from pytest_autograd_grader.i18n import msg

TOPIC = "retain_grad"

COMMON = ("diag.none_intermediate", "diag.retain_grad.too_late", "diag.retain_grad.cloned",
          "diag.retain_grad.detached", "diag.retain_grad.other_tensor", "diag.retain_grad.elsewhere",
          "diag.retain_grad.off_path", "diag.retain_grad.returns_none", "diag.leaf.no_backward", "diag.multiple_calls", "diag.factor", "diag.multiple",
          "diag.running_sum", "diag.implicit_grad")
# The ids each check may answer with; a planted mistake must get its own and none of the others.
SPECIFIC = {
    "test_intermediate_grads": COMMON + ("diag.retain_grad.weights", "diag.graph.sum_not_mean",
                                         "diag.retain_grad.matmul_loss"),
    "test_hidden_grads": COMMON + ("diag.mean_sum", "diag.retain_grad.mean_one_axis", "diag.retain_grad.squeeze"),
    "test_chain_grads": COMMON + ("diag.graph.sum_not_mean",),
}


def intermediate(what, body, diagnosis, texts=()):
    return Mistake("intermediate_grads", what, "\ndef intermediate_grads(x, w, v):" + body, diagnosis, texts)


def hidden(what, body, diagnosis, texts=()):
    return Mistake("hidden_grads", what, "\ndef hidden_grads(x, W1, W2):" + body, diagnosis, texts)


def chain(what, body, diagnosis, texts=()):
    return Mistake("chain_grads", what, "\ndef chain_grads(x, c):" + body, diagnosis, texts)


MISTAKES = [
    intermediate("retain_grad() never called", """
    a = x + w
    b = w + 1
    y = a * b
    (v * y).sum().backward()
    return a, b, y
""", "diag.none_intermediate", ("a.grad: expected a gradient, got None",)),
    intermediate("retained, then copies returned (told they did call retain_grad, and what the copy is)", """
    a = x + w
    a.retain_grad()
    b = w + 1
    b.retain_grad()
    y = a * b
    y.retain_grad()
    (v * y).sum().backward()
    return a.clone(), b.clone(), y.clone()
""", "diag.retain_grad.cloned", ("a.grad: expected a gradient, got None",
                                 msg("diag.retain_grad.cloned", what="a", grad_fn="CloneBackward0"))),
    intermediate("the weights v left out of the loss", """
    a = x + w
    a.retain_grad()
    b = w + 1
    b.retain_grad()
    y = a * b
    y.retain_grad()
    y.sum().backward()
    return a, b, y
""", "diag.retain_grad.weights", ("a.grad: values differ",)),
    intermediate("a mean where the loss is a sum", """
    a = x + w
    a.retain_grad()
    b = w + 1
    b.retain_grad()
    y = a * b
    y.retain_grad()
    (v * y).mean().backward()
    return a, b, y
""", "diag.graph.sum_not_mean", ("a.grad: values differ",)),
    intermediate("backward twice: every retained gradient doubles", """
    a = x + w
    a.retain_grad()
    b = w + 1
    b.retain_grad()
    y = a * b
    y.retain_grad()
    loss = (v * y).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return a, b, y
""", "diag.multiple_calls", (msg("diag.multiple_calls", k=2, calls=2, name="x"),)),
    hidden("only the hidden layer retained: told which tensor was", """
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = h @ W2
    (out ** 2).mean().backward()
    return h, out
""", "diag.retain_grad.other_tensor", ("out.grad: expected a gradient, got None",
                                      msg("diag.retain_grad.other_tensor", other="h", what="out"))),
    hidden("retain_grad() after backward", """
    h = torch.tanh(x @ W1)
    out = h @ W2
    (out ** 2).mean().backward()
    h.retain_grad()
    out.retain_grad()
    return h, out
""", "diag.retain_grad.too_late", (msg("diag.retain_grad.too_late", what="h"),)),
    hidden("a sum where the loss is a mean (hidden when out has one element)", """
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = h @ W2
    out.retain_grad()
    (out ** 2).sum().backward()
    return h, out
""", "diag.mean_sum", ("h.grad: values differ",)),
    hidden("retained, returned detached", """
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = h @ W2
    out.retain_grad()
    (out ** 2).mean().backward()
    return h.detach(), out
""", "diag.retain_grad.detached", (msg("diag.retain_grad.detached", what="h"),)),
    chain("retain_grad() after backward", """
    zs = [x]
    for k in range(c.shape[0]):
        zs.append(torch.tanh(c[k] * zs[-1]))
    zs[-1].sum().backward()
    for z in zs[1:]:
        z.retain_grad()
    return zs[1:]
""", "diag.retain_grad.too_late", ("z_1.grad: expected a gradient, got None",
                                   msg("diag.retain_grad.too_late", what="z_1"))),
    chain("each z retained one step late: the last one never is", """
    zs = []
    z = x
    for k in range(c.shape[0]):
        z.retain_grad()
        z = torch.tanh(c[k] * z)
        zs.append(z)
    z.sum().backward()
    return zs
""", "diag.retain_grad.other_tensor", (".grad: expected a gradient, got None",
                                      "calls retain_grad() on x, not on z_")),
    chain("only the last step retained: right when there is one step", """
    zs = []
    z = x
    for k in range(c.shape[0]):
        z = torch.tanh(c[k] * z)
        zs.append(z)
    z.retain_grad()
    z.sum().backward()
    return zs
""", "diag.retain_grad.other_tensor", ("z_1.grad: expected a gradient, got None", ", not on z_1;")),
    chain("retained, but no backward", """
    zs = []
    z = x
    for k in range(c.shape[0]):
        z = torch.tanh(c[k] * z)
        z.retain_grad()
        zs.append(z)
    loss = z.sum()
    return zs
""", "diag.leaf.no_backward"),
    chain("copies of the retained steps returned", """
    zs = []
    z = x
    for k in range(c.shape[0]):
        z = torch.tanh(c[k] * z)
        z.retain_grad()
        zs.append(z)
    z.sum().backward()
    return [t.clone() for t in zs]
""", "diag.retain_grad.cloned", (msg("diag.retain_grad.cloned", what="z_1", grad_fn="CloneBackward0"),)),
]

MISTAKES += [
    intermediate("retain_grad() on the leaves x and w instead of a and b", """
    x.retain_grad()
    w.retain_grad()
    a = x + w
    b = w + 1
    y = a * b
    y.retain_grad()
    (v * y).sum().backward()
    return a, b, y
""", "diag.retain_grad.other_tensor", (msg("diag.retain_grad.other_tensor", other=msg("label.retain_grad.and",
                                                                                      first="x", last="w"),
                                          what="a"),)),
    intermediate("retain_grad() on a copy made before, the original returned", """
    a = x + w
    a_kept = a.clone()
    a_kept.retain_grad()
    b = w + 1
    b.retain_grad()
    y = a * b
    y.retain_grad()
    (v * y).sum().backward()
    return a, b, y
""", "diag.retain_grad.other_tensor", (msg("label.retain_grad.made_from", what="a", grad_fn="CloneBackward0"),)),
    intermediate("the weighted sum as v @ y: right for 1-D inputs only", """
    a = x + w
    a.retain_grad()
    b = w + 1
    b.retain_grad()
    y = a * b
    y.retain_grad()
    (v @ y).backward()
    return a, b, y
""", "diag.retain_grad.matmul_loss"),
    hidden("retain_grad() on the pre-activation x @ W1 instead of h", """
    z = x @ W1
    z.retain_grad()
    h = torch.tanh(z)
    out = h @ W2
    out.retain_grad()
    (out ** 2).mean().backward()
    return h, out
""", "diag.retain_grad.other_tensor", (msg("diag.retain_grad.other_tensor", what="h", other=msg(
        "label.retain_grad.input_of", what="h", grad_fn="MmBackward0")),)),
    hidden("retain_grad() on the output only, the hidden layer forgotten", """
    h = torch.tanh(x @ W1)
    out = h @ W2
    out.retain_grad()
    (out ** 2).mean().backward()
    return h, out
""", "diag.retain_grad.other_tensor", (msg("diag.retain_grad.other_tensor", other="out", what="h"),)),
    hidden("h retained, but the loss computed from h made a second time", """
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = torch.tanh(x @ W1) @ W2
    out.retain_grad()
    (out ** 2).mean().backward()
    return h, out
""", "diag.retain_grad.off_path", (msg("diag.retain_grad.off_path", what="h"),)),
    hidden("a mean over the batch rows only (a sum over the outputs)", """
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = h @ W2
    out.retain_grad()
    (out ** 2).sum(dim=1).mean().backward()
    return h, out
""", "diag.retain_grad.mean_one_axis", ("averages over the N axis of out only",)),
    hidden(".squeeze() on h: wrong wherever N or H is 1", """
    h = torch.tanh(x @ W1).squeeze()
    h.retain_grad()
    out = h @ W2
    out.retain_grad()
    (out ** 2).mean().backward()
    return h, out
""", "diag.retain_grad.squeeze"),
    chain("retain_grad() on copies of the steps, the steps returned", """
    zs = []
    z = x
    for k in range(c.shape[0]):
        z = torch.tanh(c[k] * z)
        kept = z.clone()
        kept.retain_grad()
        zs.append(z)
    z.sum().backward()
    return zs
""", "diag.retain_grad.other_tensor", (msg("label.retain_grad.made_from", what="z_1", grad_fn="CloneBackward0"),)),
    chain("z = (...).retain_grad(): the None it returns used as the next step", """
    zs = []
    z = x
    for k in range(c.shape[0]):
        z = torch.tanh(c[k] * z).retain_grad()
        zs.append(z)
    z.sum().backward()
    return zs
""", "diag.retain_grad.returns_none", ("NoneType",)),
    hidden("out = (h @ W2).retain_grad(): out is None", """
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = (h @ W2).retain_grad()
    (out ** 2).mean().backward()
    return h, out
""", "diag.retain_grad.returns_none"),
    chain("a mean where the loss is a sum", """
    zs = []
    z = x
    for k in range(c.shape[0]):
        z = torch.tanh(c[k] * z)
        z.retain_grad()
        zs.append(z)
    z.mean().backward()
    return zs
""", "diag.graph.sum_not_mean"),
]

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
    assert_planted(pytester, TOPIC, MISTAKES, CORRECT, SPECIFIC)


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
    trace = Trace(ops=(Op("add", True, "AddBackward0"), Op("retain_grad", True), Op("backward", True)),
                  calls=(BackwardCall("backward", None, False, 1, False, None),))
    a = TensorRecord(data=torch.zeros(2), grad=None, requires_grad=True, is_leaf=False, grad_fn="AddBackward0",
                     retains_grad=False, dtype="float64", device="cpu", shape=(2,))
    assert checks.why_none(a, "a", "AddBackward0", trace, "aby", ("x", "w", "v")) == \
        msg("diag.retain_grad.elsewhere", what="a")
