"""The `vector_backward` topic: plausible mistakes fail on every seed with
the diagnosis that names them (and the vector-of-ones diagnosis only where
the answer is that product), correct answers in other styles pass on every
seed (test_curriculum grades the reference solution on every seed and the
untouched stubs). The planted mistakes (mistakes/vector_backward/) and
correct styles are graded in one session (``grade_planted_named``)."""

from conftest import assert_all_pass, assert_diagnosed
from planted_mistakes import grade_planted_named, planted_named

from pytest_autograd_grader.i18n import msg

TOPIC = "vector_backward"


RIGHT = {
    # torch.autograd.grad, a weighted sum of the losses
    "autograd_grad": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    L = torch.matmul(x, Y)
    rows = []
    for j in range(Y.shape[1]):
        e = torch.zeros(1, Y.shape[1], dtype=x.dtype, device=x.device)
        e[0, j] = 1
        (row,) = torch.autograd.grad(L, x, grad_outputs=e, retain_graph=True)
        rows.append(row)
    return torch.cat(rows, dim=0)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    return torch.autograd.grad(x @ Y, (x, Y), v)
""",
        "weighted_losses": """
def weighted_losses(w, x, weights):
    total = weights[0] * ((x @ w) ** 2).mean() + weights[1] * torch.exp(w).sum()
    total.backward()
    return w.grad
""",
    },
    # detach() where x.grad = None makes the next gradient a new tensor; a
    # detached clone; a one-hot by indexing
    "detach_then_none": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    L = x @ Y
    out = []
    for j in range(L.shape[-1]):
        e = torch.zeros_like(L)
        e[..., j] = 1
        L.backward(e, retain_graph=True)
        out.append(x.grad.detach())
        x.grad = None
    return torch.cat(out)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    L = x @ Y
    L.backward(v)
    return x.grad.detach().clone(), Y.grad.reshape(Y.shape)
""",
    },
    # backward of one element per row, (L * v).sum(), positional grad_tensors, lists
    "elements_lists": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    L = x @ Y
    rows = []
    for j in range(L.shape[1]):
        L[0, j].backward(retain_graph=True)
        rows.append(x.grad.clone())
        x.grad = None
    return torch.cat(rows)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    ((x @ Y) * v).sum().backward()
    return [x.grad, Y.grad]
""",
        "weighted_losses": """
def weighted_losses(w, x, weights):
    losses = (((x @ w) ** 2).mean(), w.exp().sum())
    torch.autograd.backward(losses, (weights[0], weights[1]))
    return w.grad
""",
    },
}


VB = "diag.vector_backward."
# What a planted mistake's feedback (mistakes/vector_backward/<name>.py) says on every seed
# besides its file's expected diagnoses (and nothing else of this topic's, nor
# a generic diagnosis that is not listed): the vector of
# ones is named only where the answer is that product.
EXPECT = {
    "vjp_by_hand": [("req.vector_backward.vjp_one_call", {"calls": 0})],
    "vjp_twice": ["the gradient is 2 times too large, and your code called backward 2 times"],
    "weighted_two_calls": [("req.vector_backward.weighted_one_call", {"calls": 2})],
    "vjp_doubled": [(VB + "scaled_v", {"k": 2})],
    "weighted_by_hand": [("req.vector_backward.weighted_one_call", {"calls": 0})],
    "vjp_squeezed_v": ["Mismatch in shape"],
    "rows_detach_copy": [("diag.accumulation.shares_memory", {"name": "x", "op": ".detach()"})],
    "rows_slice_copy": [("diag.accumulation.shares_memory", {"name": "x", "op": "[:]"})],
}
# backward() without a gradient raises for a non-scalar L, and silently
# backpropagates ones when L has one element (b = m = 1)
MAY = {("vjp_no_gradient", "test_vjp_matmul"): ["diag.implicit_grad", VB + "sum_not_v"]}


def test_mistakes_fail_on_every_seed_and_correct_styles_pass(pytester):
    results = grade_planted_named(pytester, TOPIC, RIGHT)

    assert_diagnosed(results, TOPIC, planted_named(TOPIC, EXPECT), MAY)
    for run in results["vjp_no_gradient"]["test_vjp_matmul"]:
        feedback = run["feedback"]
        assert ("grad can be implicitly created only for" in feedback and msg("diag.implicit_grad") in feedback) or msg(
            VB + "sum_not_v"
        ) in feedback, feedback
    for variant in RIGHT:
        assert_all_pass(results, variant)
