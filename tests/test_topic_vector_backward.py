"""The `vector_backward` topic: plausible mistakes fail on every seed with
the diagnosis that names them (and the vector-of-ones diagnosis only where
the answer is that product), correct answers in other styles pass on every
seed (test_curriculum grades the reference solution on every seed and the
untouched stubs). All variants are graded in one session
(see test_topic_dynamic_graph.grade_variants)."""

from conftest import assert_all_pass, assert_diagnosed, grade_named

from pytest_autograd_grader.i18n import msg

TOPIC = "vector_backward"

WRONG = {
    "not_zeroed_sum_unweighted": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad.clone())
    return torch.cat(rows)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    (x @ Y).sum().backward()
    return x.grad, Y.grad
""",
        "weighted_losses": """
def weighted_losses(w, x, weights):
    loss = ((x @ w) ** 2).mean() + torch.exp(w).sum()
    loss.backward()
    return w.grad
""",
    },
    "zeroed_alias_ones_swapped": {
        # keeps x.grad itself, then zeroes it in place
        "jacobian_rows": """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad)
        x.grad.zero_()
    return torch.cat(rows)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    loss = x @ Y
    loss.backward(gradient=torch.ones_like(loss))
    return x.grad, Y.grad
""",
        "weighted_losses": """
def weighted_losses(w, x, weights):
    loss1 = ((x @ w) ** 2).mean()
    loss2 = torch.exp(w).sum()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[1], weights[0]])
    return w.grad
""",
    },
    "kept_alias_no_gradient_twice": {
        # keeps x.grad itself and never zeroes it
        "jacobian_rows": """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad)
    return torch.cat(rows)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    (x @ Y).backward()
    return x.grad, Y.grad
""",
        "weighted_losses": """
def weighted_losses(w, x, weights):
    loss1 = weights[0] * ((x @ w) ** 2).mean()
    loss2 = weights[1] * torch.exp(w).sum()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[0], weights[1]])
    return w.grad
""",
    },
    "ones_by_hand_l1_sum": {
        # one call per row, but with a vector of ones every time
        "jacobian_rows": """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        loss.backward(gradient=torch.ones_like(loss), retain_graph=True)
        rows.append(x.grad.clone())
        x.grad.zero_()
    return torch.cat(rows)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    return v @ Y.T, x.T @ v
""",
        "weighted_losses": """
def weighted_losses(w, x, weights):
    loss1 = ((x @ w) ** 2).sum()
    loss2 = torch.exp(w).sum()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[0], weights[1]])
    return w.grad
""",
    },
    "rebuilt_twice_two_calls": {
        # a new L for every row, so no retain_graph is needed
        "jacobian_rows": """
def jacobian_rows(x, Y):
    rows = []
    for j in range(Y.shape[1]):
        loss = x @ Y
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e)
        rows.append(x.grad.clone())
        x.grad = None
    return torch.cat(rows)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    loss = x @ Y
    loss.backward(gradient=v, retain_graph=True)
    loss.backward(gradient=v)
    return x.grad, Y.grad
""",
        # the right numbers, with two backward calls
        "weighted_losses": """
def weighted_losses(w, x, weights):
    ((x @ w) ** 2).mean().backward(gradient=weights[0])
    torch.exp(w).sum().backward(gradient=weights[1])
    return w.grad
""",
    },
    "stacked_doubled_by_hand": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad.clone())
        x.grad = None
    return torch.stack(rows)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    (x @ Y).backward(gradient=2 * v)
    return x.grad, Y.grad
""",
        "weighted_losses": """
def weighted_losses(w, x, weights):
    return weights[0] * 2 * (x @ w) @ x / x.shape[0] + weights[1] * torch.exp(w)
""",
    },
    "read_off_swapped_grad_not_stored": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    return Y.T.clone()
""",
        # the two gradients in the wrong order
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    (x @ Y).backward(gradient=v)
    return Y.grad, x.grad
""",
        # torch.autograd.grad returns the gradient and leaves w.grad alone
        "weighted_losses": """
def weighted_losses(w, x, weights):
    loss1 = ((x @ w) ** 2).mean()
    loss2 = torch.exp(w).sum()
    torch.autograd.grad([loss1, loss2], w, grad_outputs=[weights[0], weights[1]])
    return w.grad
""",
    },
    # right for n >= 2 only: .squeeze() drops the size-1 axis of x (1, 1), v.squeeze() that of v
    "squeezed_l2_mean": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad.squeeze().clone())
        x.grad.zero_()
    return torch.stack(rows)
""",
        "vjp_matmul": """
def vjp_matmul(x, Y, v):
    loss = x @ Y
    loss.backward(gradient=v.squeeze())
    return x.grad, Y.grad
""",
        # the mean equals the sum when w has one element
        "weighted_losses": """
def weighted_losses(w, x, weights):
    loss1 = ((x @ w) ** 2).mean()
    loss2 = torch.exp(w).mean()
    torch.autograd.backward([loss1, loss2], grad_tensors=[weights[0], weights[1]])
    return w.grad
""",
    },
    # "copies" that share x.grad's memory, zeroed in place afterwards
    "detach_copy": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad.detach())
        x.grad.zero_()
    return torch.cat(rows)
""",
    },
    "slice_copy_never_zeroed": {
        "jacobian_rows": """
def jacobian_rows(x, Y):
    loss = x @ Y
    rows = []
    for j in range(loss.shape[1]):
        e = torch.zeros_like(loss)
        e[0, j] = 1.0
        loss.backward(gradient=e, retain_graph=True)
        rows.append(x.grad[:])
    return torch.cat(rows)
""",
    },
}

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
# What each planted mistake's feedback says on every seed (and nothing else of
# this topic's, nor a generic diagnosis that is not listed): the vector of
# ones is named only where the answer is that product.
EXPECT = {
    "not_zeroed_sum_unweighted": {
        "test_jacobian_rows": [VB + "rows_not_zeroed"],
        "test_vjp_matmul": [VB + "sum_not_v"],
        "test_weighted_losses": [VB + "unweighted"],
    },
    "zeroed_alias_ones_swapped": {
        "test_jacobian_rows": [VB + "rows_zero"],
        "test_vjp_matmul": [VB + "ones_not_v"],
        "test_weighted_losses": [VB + "weights_swapped"],
    },
    "kept_alias_no_gradient_twice": {
        "test_jacobian_rows": [VB + "rows_alias"],
        "test_vjp_matmul": [],  # see MAY
        "test_weighted_losses": [VB + "weights_twice"],
    },
    "ones_by_hand_l1_sum": {
        "test_jacobian_rows": [VB + "rows_ones"],
        "test_vjp_matmul": [("req.vector_backward.vjp_one_call", {"calls": 0})],
        "test_weighted_losses": [VB + "l1_sum"],
    },
    "rebuilt_twice_two_calls": {
        "test_jacobian_rows": ["req.vector_backward.build_once"],
        "test_vjp_matmul": ["the gradient is 2 times too large, and your code called backward 2 times",
                            "diag.multiple_calls"],
        "test_weighted_losses": [("req.vector_backward.weighted_one_call", {"calls": 2})],
    },
    "stacked_doubled_by_hand": {
        "test_jacobian_rows": [VB + "stacked"],
        "test_vjp_matmul": [(VB + "scaled_v", {"k": 2})],
        "test_weighted_losses": [("req.vector_backward.weighted_one_call", {"calls": 0})],
    },
    "squeezed_l2_mean": {
        "test_jacobian_rows": ["diag.squeezed"],
        "test_vjp_matmul": ["Mismatch in shape", "diag.shape_mismatch"],
        "test_weighted_losses": [VB + "l2_mean"],
    },
    "detach_copy": {
        "test_jacobian_rows": [("diag.accumulation.shares_memory", {"name": "x", "op": ".detach()"})],
    },
    "slice_copy_never_zeroed": {
        "test_jacobian_rows": [("diag.accumulation.shares_memory", {"name": "x", "op": "[:]"})],
    },
    "read_off_swapped_grad_not_stored": {
        "test_jacobian_rows": ["req.vector_backward.rows_calls"],
        "test_vjp_matmul": [],
        "test_weighted_losses": ["diag.dynamic_graph.no_backward"],
    },
}
# backward() without a gradient raises for a non-scalar L, and silently
# backpropagates ones when L has one element (b = m = 1)
MAY = {("kept_alias_no_gradient_twice", "test_vjp_matmul"): ["diag.implicit_grad", VB + "sum_not_v"]}


def test_mistakes_fail_on_every_seed_and_correct_styles_pass(pytester):
    results = grade_named(pytester, TOPIC, WRONG, RIGHT)

    assert set(EXPECT) == set(WRONG)
    assert_diagnosed(results, TOPIC, EXPECT, MAY)
    for run in results["kept_alias_no_gradient_twice"]["test_vjp_matmul"]:
        feedback = run["feedback"]
        assert ("grad can be implicitly created only for" in feedback and msg("diag.implicit_grad") in feedback) \
            or msg(VB + "sum_not_v") in feedback, feedback
    for variant in RIGHT:
        assert_all_pass(results, variant)
