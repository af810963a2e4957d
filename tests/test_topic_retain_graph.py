"""The `retain_graph` topic: plausible mistakes fail on every seed with the
diagnosis that names them, correct answers in other styles pass on every
seed (test_curriculum grades the reference solution on every seed and the
untouched stubs). All variants are graded in one session
(see test_topic_dynamic_graph.grade_variants)."""

from conftest import assert_all_pass, assert_diagnosed, fails_everywhere, grade_named, grade_planted

TOPIC = "retain_graph"

WRONG = {
    "no_retain": {
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k):
        loss.backward()
    return x.grad
""",
        # keeps the graph on the first call, so the second does not fail
        "caught_error": """
def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward(retain_graph=True)
    try:
        loss.backward()
    except RuntimeError as error:
        return error, x.grad
    return None, x.grad
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward()
    first = w.grad.clone()
    (h ** 2).mean().backward()
    return first, w.grad
""",
    },
    "zeroed_raised_no_clone": {
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k):
        x.grad = None
        loss.backward(retain_graph=True)
    return x.grad
""",
        # lets the error escape
        "caught_error": """
def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    grad = x.grad.clone()
    loss.backward()
    return None, grad
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward(retain_graph=True)
    first = w.grad
    (h ** 2).mean().backward()
    return first, w.grad
""",
    },
    "rebuilt_everywhere": {
        # a fresh graph for every backward: no retain_graph needed
        "backward_k_times": """
def backward_k_times(x, k):
    for _ in range(k):
        loss = (x * torch.exp(x)).sum()
        loss.backward()
    return x.grad
""",
        "caught_error": """
def caught_error(x):
    (x ** 3).sum().backward()
    first = x.grad.clone()
    try:
        (x ** 3).sum().backward()
    except RuntimeError as error:
        return error, first
    return None, x.grad
""",
        "two_losses": """
def two_losses(x, w):
    torch.tanh(x * w).sum().backward()
    first = w.grad.clone()
    (torch.tanh(x * w) ** 2).mean().backward()
    return first, w.grad
""",
    },
    "one_call_short_once_zeroed": {
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k - 2):
        loss.backward(retain_graph=True)
    loss.backward()
    return x.grad
""",
        # never tries the second backward
        "caught_error": """
def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    return None, x.grad
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward(retain_graph=True)
    first = w.grad.clone()
    w.grad.zero_()
    (h ** 2).mean().backward()
    return first, w.grad
""",
    },
    "times_k_swapped_late_copy": {
        # one backward, then the gradient multiplied by k
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    loss.backward()
    return x.grad * k
""",
        "caught_error": """
def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as error:
        return x.grad, error
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward(retain_graph=True)
    (h ** 2).mean().backward()
    first = w.grad.clone()
    return first, w.grad
""",
    },
    "fixed_two_forged_sum": {
        # a fixed number of calls
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    loss.backward(retain_graph=True)
    loss.backward()
    return x.grad
""",
        "caught_error": """
def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    return RuntimeError("Trying to backward through the graph a second time"), x.grad
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward(retain_graph=True)
    first = w.grad.clone()
    (h ** 2).sum().backward()
    return first, w.grad
""",
    },
    "both_again_three_calls": {
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    loss1, loss2 = h.sum(), (h ** 2).mean()
    loss1.backward(retain_graph=True)
    first = w.grad.clone()
    (loss1 + loss2).backward()
    return first, w.grad
""",
        # the right numbers, with a third backward call
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    (grad,) = torch.autograd.grad(loss, x, retain_graph=True)
    for _ in range(k):
        loss.backward(retain_graph=True)
    return x.grad
""",
        "caught_error": """
def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as error:
        return str(error), x.grad
""",
    },
    "grad_not_stored_three_calls": {
        # torch.autograd.grad returns the gradients and leaves x.grad alone
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k):
        torch.autograd.grad(loss, x, retain_graph=True)
    return x.grad
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    loss1, loss2 = h.sum(), (h ** 2).mean()
    loss1.backward(retain_graph=True)
    first = w.grad.clone()
    w.grad = None
    loss1.backward(retain_graph=True)
    loss2.backward()
    return first, w.grad
""",
    },
    # the right value and k calls: one real backward of k * dL/dx, the others on throw-away graphs
    "one_real_call_k_minus_1_dummies": {
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    loss.backward(torch.tensor(float(k), dtype=x.dtype))
    for _ in range(k - 1):
        torch.zeros(1, requires_grad=True).sum().backward()
    return x.grad
""",
    },
    # right for some shapes only: x.grad squeezed (a size-1 axis lost), a mean where L
    # is a sum (equal for one element); w.grad kept through detach() (shares its memory)
    "squeezed_mean_detached": {
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).mean()
    for _ in range(k - 1):
        loss.backward(retain_graph=True)
    loss.backward()
    return x.grad
""",
        "caught_error": """
def caught_error(x):
    loss = (x ** 3).sum()
    loss.backward()
    try:
        loss.backward()
    except RuntimeError as error:
        return error, x.grad.squeeze()
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward(retain_graph=True)
    first = w.grad.detach()
    (h ** 2).mean().backward()
    return first, w.grad
""",
    },
    "squeezed_view": {
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k - 1):
        loss.backward(retain_graph=True)
    loss.backward()
    return x.grad.squeeze()
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(x * w)
    h.sum().backward(retain_graph=True)
    first = w.grad.view_as(w)
    (h ** 2).mean().backward()
    return first, w.grad
""",
    },
}

RIGHT = {
    # torch.autograd.grad instead of backward, other forms of the same maths
    "autograd_grad": {
        "backward_k_times": """
def backward_k_times(x, k):
    loss = torch.sum(x * x.exp())
    total = torch.zeros_like(x)
    for _ in range(k):
        (grad,) = torch.autograd.grad(loss, x, retain_graph=True)
        total = total + grad
    return total
""",
        "caught_error": """
def caught_error(x):
    loss = (x * x * x).sum()
    torch.autograd.backward(loss)
    try:
        torch.autograd.backward(loss)
    except Exception as error:
        return (error, x.grad)
""",
        "two_losses": """
def two_losses(x, w):
    h = (x * w).tanh()
    (g1,) = torch.autograd.grad(h.sum(), w, retain_graph=True)
    (g2,) = torch.autograd.grad(h.pow(2).mean(), [w])
    return g1, g1 + g2
""",
    },
    # the error caught in a helper function, torch.autograd.grad's freed graph
    "helper": {
        "caught_error": """
def _second(loss):
    try:
        loss.backward()
    except RuntimeError as error:
        return error

def caught_error(x):
    loss = (x ** 3).sum()
    (grad,) = torch.autograd.grad(loss, x)
    x.grad = grad
    return _second(loss), x.grad
""",
    },
    # retain_graph on every call, lists, a copy through detach().clone()
    "lists": {
        "backward_k_times": """
def backward_k_times(x, k):
    loss = (x * torch.exp(x)).sum()
    for _ in range(k):
        torch.autograd.backward(loss, retain_graph=True)
    return x.grad
""",
        "caught_error": """
def caught_error(x):
    loss = torch.pow(x, 3).sum()
    loss.backward()
    first = x.grad.clone()
    caught = None
    try:
        loss.backward()
    except RuntimeError as error:
        caught = error
    return [caught, first]
""",
        "two_losses": """
def two_losses(x, w):
    h = torch.tanh(torch.mul(x, w))
    torch.autograd.backward(h.sum(), retain_graph=True)
    first = w.grad.detach().clone()
    torch.autograd.backward((h ** 2).mean())
    return [first, w.grad]
""",
    },
}


RG = "diag.retain_graph."
TWICE = "backward through the graph a second time"
NO_ERROR = f"expected the caught error '{TWICE}', got None"
# What each planted mistake's feedback says on every seed (and nothing else of
# this topic's, nor a generic diagnosis that is not listed).
EXPECT = {
    "no_retain": {
        "test_backward_k_times": [TWICE, "diag.backward_twice"],
        # not "a constant factor is off": the first backward kept the graph
        "test_caught_error": [NO_ERROR, RG + "kept_graph"],
        "test_two_losses": [TWICE, "diag.backward_twice"],
    },
    "zeroed_raised_no_clone": {
        "test_backward_k_times": ["diag.fraction"],
        "test_caught_error": [f"caught_error raised RuntimeError: Trying to {TWICE}", RG + "not_caught"],
        "test_two_losses": [RG + "no_clone"],
    },
    "rebuilt_everywhere": {
        "test_backward_k_times": ["req.retain_graph.build_once"],
        "test_caught_error": [NO_ERROR, RG + "rebuilt"],
        "test_two_losses": ["req.retain_graph.h_once"],
    },
    "one_call_short_once_zeroed": {
        "test_backward_k_times": [RG + "call_count"],
        "test_caught_error": [NO_ERROR, RG + "one_backward"],
        "test_two_losses": [RG + "zeroed_between"],
    },
    "times_k_swapped_late_copy": {
        "test_backward_k_times": ["req.retain_graph.k_calls"],
        "test_caught_error": [(RG + "swapped", {"order": "(error, x.grad)"})],
        "test_two_losses": [RG + "copied_late"],
    },
    "fixed_two_forged_sum": {
        # k = 2 passes on its own, the larger k of the same run does not
        "test_backward_k_times": [RG + "call_count"],
        # made up instead of caught, and indeed no second backward was tried
        "test_caught_error": ["this RuntimeError was never raised", RG + "one_backward"],
        "test_two_losses": [RG + "l2_sum"],
    },
    "both_again_three_calls": {
        "test_backward_k_times": ["req.retain_graph.k_calls"],
        "test_caught_error": [f"expected the caught error '{TWICE}', got a string"],
        "test_two_losses": [RG + "l1_twice"],
    },
    "one_real_call_k_minus_1_dummies": {
        "test_backward_k_times": ["req.retain_graph.each_call"],
    },
    "squeezed_mean_detached": {
        "test_backward_k_times": ["diag.divided_by", "you divided by the number of elements"],
        "test_caught_error": ["diag.squeezed"],
        "test_two_losses": [("diag.accumulation.shares_memory", {"name": "w", "op": ".detach()"})],
    },
    "squeezed_view": {
        "test_backward_k_times": ["diag.squeezed"],
        "test_two_losses": [("diag.accumulation.shares_memory", {"name": "w", "op": ".view_as(...)"})],
    },
    "grad_not_stored_three_calls": {
        "test_backward_k_times": ["diag.dynamic_graph.no_backward"],
        "test_two_losses": [("req.retain_graph.two_calls", {"calls": 3})],
    },
}


def test_mistakes_fail_on_every_seed_and_correct_styles_pass(pytester):
    results = grade_named(pytester, TOPIC, WRONG, RIGHT)

    assert set(EXPECT) == set(WRONG)
    assert_diagnosed(results, TOPIC, EXPECT)
    for variant in RIGHT:
        assert_all_pass(results, variant)


TEXT = ("Trying to backward through the graph a second time (or directly access saved tensors after they have "
        "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
        "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
        "you need to access saved tensors after calling backward.")
# caught_error with a made-up error: the first backward and x.grad are right
# every time, only the error is not PyTorch's
FIRST = "    loss = (x ** 3).sum()\n    loss.backward()\n"
FORGED = {
    "raised": "    try:\n        raise RuntimeError(TEXT)\n    except RuntimeError as error:\n        return error, x.grad\n",
    "c_function": "    try:\n        torch._assert_async(torch.tensor(False), TEXT)\n"
                  "    except RuntimeError as error:\n        return error, x.grad\n",
    "ctypes": "    import ctypes\n    try:\n        ctypes.pythonapi.PyErr_SetString(ctypes.py_object(RuntimeError), "
              "TEXT.encode())\n    except RuntimeError as error:\n        return error, x.grad\n",
    # a second backward really runs, through a graph that saves nothing, and a
    # hook or a custom Function's backward raises the text through a C function
    "hook": "    y = x * 1\n    y.register_hook(lambda g: torch._assert_async(torch.tensor(False), TEXT))\n"
            "    try:\n        y.sum().backward()\n    except RuntimeError as error:\n        return error, x.grad - 1\n",
    "custom_function": "    y = Saves.apply(x).sum()\n    y.backward()\n    try:\n        y.backward()\n"
                       "    except RuntimeError as error:\n        return error, x.grad - 1\n",
}
CUSTOM = """
class Saves(torch.autograd.Function):
    calls = 0

    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, g):
        Saves.calls += 1
        if Saves.calls % 2 == 0:
            torch._assert_async(torch.tensor(False), TEXT)
        return g
"""


def test_made_up_errors_earn_nothing_on_every_seed(pytester):
    """A student who makes PyTorch's error up (raised in Python, by a C
    function that raises the caller's message, ctypes, from a hook or a
    custom Function's backward during a real second backward) scores 0 on
    caught_error on every seed, values right notwithstanding."""
    variants = [{"caught_error": f"TEXT = {TEXT!r}\n{CUSTOM}\ndef caught_error(x):\n{FIRST}{body}",
                 "only": ["test_caught_error"]} for body in FORGED.values()]
    runs = grade_planted(pytester, TOPIC, variants)
    for run in runs:
        fails_everywhere(run["test_caught_error"], "make the mistake really happen", score=0)
    for name in ("c_function", "ctypes", "hook", "custom_function"):
        fails_everywhere(runs[list(FORGED).index(name)]["test_caught_error"],
                         "did not come from the autograd call the exercise asks for")
