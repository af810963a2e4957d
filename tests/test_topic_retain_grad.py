"""The `retain_grad` topic: plausible mistakes fail on every seed with the
diagnosis that names them (and no other), and correct solutions in other
styles pass.

Every planted mistake and every correct style is graded under the 20 seeds
of ``grade_seeds``, all in one grading session."""


from conftest import Mistake, assert_planted

from pytest_autograd_grader.i18n import msg

TOPIC = "retain_grad"

COMMON = ("diag.none_intermediate", "diag.retain_grad.too_late", "diag.retain_grad.cloned",
          "diag.retain_grad.detached", "diag.leaf.no_backward", "diag.multiple_calls", "diag.factor", "diag.multiple")
# The ids each check may answer with; a planted mistake must get its own and none of the others.
SPECIFIC = {
    "test_intermediate_grads": COMMON + ("diag.retain_grad.weights", "diag.graph.sum_not_mean"),
    "test_hidden_grads": COMMON + ("diag.mean_sum",),
    "test_chain_grads": COMMON,
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
    hidden("only the hidden layer retained", """
    h = torch.tanh(x @ W1)
    h.retain_grad()
    out = h @ W2
    (out ** 2).mean().backward()
    return h, out
""", "diag.none_intermediate", ("out.grad: expected a gradient, got None",)),
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
""", "diag.none_intermediate", (".grad: expected a gradient, got None",)),
    chain("only the last step retained: right when there is one step", """
    zs = []
    z = x
    for k in range(c.shape[0]):
        z = torch.tanh(c[k] * z)
        zs.append(z)
    z.retain_grad()
    z.sum().backward()
    return zs
""", "diag.none_intermediate", ("z_1.grad: expected a gradient, got None",)),
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

CORRECT = {"styles": OTHER_STYLES}


def test_planted_mistakes_fail_and_other_styles_pass_on_every_seed(pytester):
    assert_planted(pytester, TOPIC, MISTAKES, CORRECT, SPECIFIC)
