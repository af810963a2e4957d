"""The `retain_graph` topic: plausible mistakes fail on every seed with the
diagnosis that names them, correct answers in other styles pass on every
seed (test_curriculum grades the reference solution on every seed and the
untouched stubs). The planted mistakes (mistakes/retain_graph/) and correct
styles are graded in one session (``grade_planted_named``)."""

from conftest import assert_all_pass, assert_diagnosed, fails_everywhere, grade_planted
from planted_mistakes import grade_planted_named, planted_named

TOPIC = "retain_graph"


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
# What a planted mistake's feedback (mistakes/retain_graph/<name>.py) says on every seed
# besides its file's expected diagnoses (and nothing else of this topic's, nor
# a generic diagnosis that is not listed).
EXPECT = {
    "k_times_no_retain": [TWICE],
    "caught_no_retain": [NO_ERROR],
    "two_losses_no_retain": [TWICE],
    "caught_raised": [f"caught_error raised RuntimeError: Trying to {TWICE}"],
    "caught_rebuilt": [NO_ERROR],
    "caught_once": [NO_ERROR],
    "caught_swapped": [(RG + "swapped", {"order": "(error, x.grad)"})],
    "caught_forged": ["this RuntimeError was never raised"],
    "caught_str": [f"expected the caught error '{TWICE}', got a string"],
    "k_times_mean": ["you divided by the number of elements"],
    "two_losses_detached": [("diag.accumulation.shares_memory", {"name": "w", "op": ".detach()"})],
    "two_losses_view": [("diag.accumulation.shares_memory", {"name": "w", "op": ".view_as(...)"})],
    "two_losses_three_calls": [("req.retain_graph.two_calls", {"calls": 3})],
}


def test_mistakes_fail_on_every_seed_and_correct_styles_pass(pytester):
    results = grade_planted_named(pytester, TOPIC, RIGHT)

    assert_diagnosed(results, TOPIC, planted_named(TOPIC, EXPECT))
    for variant in RIGHT:
        assert_all_pass(results, variant)


TEXT = (
    "Trying to backward through the graph a second time (or directly access saved tensors after they have "
    "already been freed). Saved intermediate values of the graph are freed when you call .backward() or "
    "autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if "
    "you need to access saved tensors after calling backward."
)
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
    variants = [
        {
            "caught_error": f"TEXT = {TEXT!r}\n{CUSTOM}\ndef caught_error(x):\n{FIRST}{body}",
            "only": ["test_caught_error"],
        }
        for body in FORGED.values()
    ]
    runs = grade_planted(pytester, TOPIC, variants)
    for run in runs:
        fails_everywhere(run["test_caught_error"], "make the mistake really happen", score=0)
    for name in ("c_function", "ctypes", "hook", "custom_function"):
        fails_everywhere(
            runs[list(FORGED).index(name)]["test_caught_error"],
            "did not come from the autograd call the exercise asks for",
        )
