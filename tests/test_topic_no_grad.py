"""The `no_grad` topic: every plausible mistake fails on every seed with the
diagnosis that names it, no diagnosis is given without its evidence, and
correct solutions in other styles pass on every seed.

One grading session grades many submissions (a session costs seconds to
start, a check milliseconds): variant i is the reference solution with a
mistake, or a correct other style, planted in some functions, graded by a
copy of the topic's checks for those functions in checks/v{i}/ (same file
name, so each check gets exactly the inputs `--grade-seed S` gives it) that
loads the module no_grad_v{i}. The mistakes are mistakes/no_grad/<name>.py
(what `autograd-grader audit` reads), planted by name (``planted_source``)."""

from conftest import fails_everywhere, grade_planted, passes_everywhere
from planted_mistakes import planted_source

from pytest_autograd_grader.i18n import msg

TOPIC = "no_grad"
CHECKS = ("test_predict_requires_grad", "test_frozen_features", "test_td_grad")
FUNCTION_CHECKS = {
    function: (f"test_{function}",) for function in ("predict_requires_grad", "frozen_features", "td_grad")
}


TD = """
def td_grad(w, x, x_next, r, gamma):
    q = x @ w
{target}
    loss = ((q - target) ** 2).{reduce}()
    loss.backward()
    return target, w.grad
"""

VARIANTS = [
    {  # 0
        # no_grad ignored
        "predict_requires_grad": planted_source(TOPIC, "predict_no_grad_ignored"),
        # detach() where no_grad was asked
        "frozen_features": planted_source(TOPIC, "frozen_detach"),
        # the target left in the graph
        "td_grad": planted_source(TOPIC, "td_target_in_graph"),
    },
    {  # 1
        # detach() thought to switch off its source for the later ops
        "predict_requires_grad": planted_source(TOPIC, "predict_detach_switches_off"),
        # x @ W1 recorded, only tanh under no_grad
        "frozen_features": planted_source(TOPIC, "frozen_only_tanh"),
        # detach() called, its result thrown away
        "td_grad": planted_source(TOPIC, "td_detach_thrown_away"),
    },
    {  # 2
        # detach() thought to change its source in place: the source's own entry flips too
        "predict_requires_grad": planted_source(TOPIC, "predict_detach_in_place"),
        # the loss computed inside the no_grad block too
        "frozen_features": planted_source(TOPIC, "frozen_loss_inside"),
        # the prediction cut off instead of the target
        "td_grad": planted_source(TOPIC, "td_prediction_cut"),
    },
    {  # 3
        # every input must require grad
        "predict_requires_grad": planted_source(TOPIC, "predict_all_inputs"),
        # no_grad forgotten altogether
        "frozen_features": planted_source(TOPIC, "frozen_no_grad_forgotten"),
        # a sum of squared errors
        "td_grad": planted_source(TOPIC, "td_sum"),
    },
    {  # 4
        # detach() thought to keep its source's flag
        "predict_requires_grad": planted_source(TOPIC, "predict_detach_keeps_flag"),
        # W1 frozen with requires_grad_(False) instead of no_grad
        "frozen_features": planted_source(TOPIC, "frozen_requires_grad_false"),
        # correct: the target under no_grad
        "td_grad": TD.format(
            target="    with torch.no_grad():\n        target = r + gamma * (x_next @ w)", reduce="mean"
        ),
    },
    {  # 5
        # right answers from tensors built to find out
        "predict_requires_grad": planted_source(TOPIC, "predict_with_tensors"),
        # a sum of squared outputs
        "frozen_features": planted_source(TOPIC, "frozen_sum"),
        # correct: the target from w.detach()
        "td_grad": TD.format(target="    target = r + gamma * (x_next @ w.detach())", reduce="mean"),
    },
    {  # 6: every computed tensor thought to require grad
        "predict_requires_grad": planted_source(TOPIC, "predict_every_op_requires"),
    },
    {  # 7: correct in other styles
        "predict_requires_grad": """
import numpy

def predict_requires_grad(nodes):
    flags = numpy.zeros(len(nodes), dtype=bool)
    for k, node in enumerate(nodes):
        if node[0] == "input":
            flags[k] = node[1]
        elif node[0] != "detach" and "no_grad" not in node:
            flags[k] = any(flags[i] for i in node[1:])
    return list(flags)
""",
        "frozen_features": """
def frozen_features(x, W1, W2):
    with torch.set_grad_enabled(False):
        h = (x @ W1).tanh()
    torch.mean(torch.pow(h @ W2, 2)).backward()
    return (h, W1.grad, W2.grad)
""",
    },
]


VARIANTS += [
    {  # 8
        # a mean over the batch rows only
        "frozen_features": planted_source(TOPIC, "frozen_mean_rows"),
        # the half squared error
        "td_grad": planted_source(TOPIC, "td_half"),
    },
    {  # 9
        # .squeeze() on h: wrong wherever N or H is 1
        "frozen_features": planted_source(TOPIC, "frozen_squeezed_h"),
        # divided by the length of w instead of the number of samples
        "td_grad": planted_source(TOPIC, "td_divided_by_len_w"),
    },
    {  # 10
        # a mean over the outputs only
        "frozen_features": planted_source(TOPIC, "frozen_mean_outputs"),
        # x.squeeze(): wrong where D is 1
        "td_grad": planted_source(TOPIC, "td_squeezed_x"),
    },
    {  # 11: correct in other styles
        "frozen_features": """
def frozen_features(x, W1, W2):
    torch.set_grad_enabled(False)
    h = torch.tanh(torch.matmul(x, W1))
    torch.set_grad_enabled(True)
    torch.mean(torch.square(torch.mm(h, W2))).backward()
    return h, W1.grad, W2.grad
""",
        "td_grad": """
def td_grad(w, x, x_next, r, gamma):
    q = (x * w).sum(1)
    target = (r + gamma * (x_next * w).sum(1)).detach()
    loss = torch.nn.functional.mse_loss(q, target)
    w.grad = torch.autograd.grad(loss, w)[0]
    return target, w.grad
""",
    },
    {  # 12: correct in other styles
        "predict_requires_grad": """
import numpy

def predict_requires_grad(nodes):
    out = []
    for node in nodes:
        if node[0] == "input":
            out.append(bool(node[1]))
        elif node[0] == "detach" or node[-1] == "no_grad":
            out.append(False)
        else:
            out.append(any(out[i] for i in node[1:] if type(i) is int))
    return numpy.array(out)
""",
        "frozen_features": """
def frozen_features(x, W1, W2):
    h = torch.no_grad()(lambda: torch.tanh(x @ W1))()
    ((h @ W2) ** 2).mean().backward()
    return h, W1.grad, W2.grad
""",
        "td_grad": """
def td_grad(w, x, x_next, r, gamma):
    q = torch.stack([torch.dot(row, w) for row in x])
    with torch.no_grad():
        target = r + gamma * torch.mv(x_next, w)
    ((q - target) ** 2).mean().backward()
    return target, w.grad
""",
    },
]


def test_mistakes_fail_on_every_seed_with_their_diagnosis(pytester):
    v = grade_planted(pytester, TOPIC, VARIANTS, FUNCTION_CHECKS)

    # predict_requires_grad: each wrong rule is named at the first node where it shows
    fails_everywhere(
        v[0]["test_predict_requires_grad"],
        "graph 1, requires_grad of t",
        "under no_grad: expected False, got True",
        "a result computed inside torch.no_grad() never requires grad",
    )
    for i in (1, 2):
        fails_everywhere(
            v[i]["test_predict_requires_grad"],
            ".detach() made a new tensor and left t",
            absent=["a result requires grad as soon as one of its inputs does"],
        )
    fails_everywhere(
        v[3]["test_predict_requires_grad"],
        "a result requires grad as soon as one of its inputs does",
        absent=[".detach() made a new tensor"],
    )
    fails_everywhere(
        v[4]["test_predict_requires_grad"],
        "always gives a tensor with requires_grad=False",
        absent=["never requires grad, even when its inputs do", "none of its inputs requires grad"],
    )
    fails_everywhere(v[5]["test_predict_requires_grad"], "without building tensors; your code called torch (ones")
    fails_everywhere(
        v[6]["test_predict_requires_grad"],
        "none of its inputs requires grad, so neither does the result",
        absent=["a result requires grad as soon as one of its inputs does"],
    )
    passes_everywhere(v[7]["test_predict_requires_grad"])

    # frozen_features: the trace shows how h was made
    fails_everywhere(v[0]["test_frozen_features"], msg("req.no_grad.frozen_detach"))
    fails_everywhere(v[1]["test_frozen_features"], msg("req.no_grad.frozen_partly", node="MmBackward0"))
    fails_everywhere(
        v[2]["test_frozen_features"],
        "does not require grad and does not have a grad_fn",
        msg("diag.no_grad.loss_under_no_grad"),
        absent=[msg("diag.requires_grad")],
    )
    for i in (3, 4):
        fails_everywhere(v[i]["test_frozen_features"], msg("req.no_grad.frozen_no_grad"))
    fails_everywhere(
        v[5]["test_frozen_features"], "W2.grad: values differ", "is the number of elements averaged: you used a sum"
    )
    passes_everywhere(v[7]["test_frozen_features"])

    # td_grad: the gradient tells which part stayed in the graph
    target_not_cut = msg("diag.no_grad.target_not_cut")
    fails_everywhere(
        v[0]["test_td_grad"],
        "target: expected requires_grad = False, got True",
        target_not_cut,
        "w.grad: values differ",
        absent=[msg("diag.no_grad.detach_unused")],
    )
    fails_everywhere(v[1]["test_td_grad"], msg("diag.no_grad.detach_unused"))
    fails_everywhere(v[2]["test_td_grad"], msg("diag.no_grad.wrong_side"), absent=[msg("diag.no_grad.detach_unused")])
    fails_everywhere(
        v[3]["test_td_grad"], "is the number of elements averaged: you used a sum", absent=[target_not_cut]
    )
    for i in (4, 5):
        passes_everywhere(v[i]["test_td_grad"])

    # input-dependent mistakes and misnamed reductions, named on every seed
    fails_everywhere(
        v[8]["test_frozen_features"], "averages over the N axis only", absent=[".grad adds up over backward calls"]
    )
    fails_everywhere(
        v[10]["test_frozen_features"], "averages over the C axis only", absent=[".grad adds up over backward calls"]
    )
    fails_everywhere(v[9]["test_frozen_features"], msg("diag.no_grad.squeeze"))
    fails_everywhere(v[8]["test_td_grad"], msg("diag.no_grad.halved"), absent=["accumulate with +="])
    fails_everywhere(v[9]["test_td_grad"], "instead of", "the number of samples (the rows of x)")
    fails_everywhere(v[10]["test_td_grad"], msg("diag.no_grad.squeeze"))
    for i in (11, 12):
        passes_everywhere(v[i]["test_frozen_features"])
        passes_everywhere(v[i]["test_td_grad"])
    passes_everywhere(v[12]["test_predict_requires_grad"])
