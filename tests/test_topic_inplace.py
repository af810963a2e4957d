"""The `inplace` topic: every plausible mistake fails on every seed with the
diagnosis that names it, no diagnosis is given without its evidence, and
correct solutions in other styles pass on every seed.

One grading session grades many submissions (a session costs seconds to
start, a check milliseconds): variant i is the reference solution with a
mistake, or a correct other style, planted in some functions, graded by a
copy of the topic's checks for those functions in checks/v{i}/ (same file
name, so each check gets exactly the inputs `--grade-seed S` gives it) that
loads the module inplace_v{i}."""

from conftest import fails_everywhere, grade_planted, passes_everywhere

from pytest_autograd_grader.i18n import msg

TOPIC = "inplace"
CHECKS = ("test_sgd_step_keeps_leaf", "test_sgd_steps", "test_repaired")

BROKEN = """
def repaired(x):
    e = x.exp()
    e.add_(1)
    return e.log() * x
"""

SGD = """
def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
{update}
    return w
"""

VARIANTS = [
    {  # 0: the out-of-place update; the unrepaired function
        "sgd": SGD.format(update="        w = w - lr * w.grad"),
        "repaired": BROKEN,
    },
    {  # 1: the out-of-place update under no_grad; the saved tensor cut off with detach()
        "sgd": SGD.format(update="        with torch.no_grad():\n            w = w - lr * w.grad"),
        "repaired": """
def repaired(x):
    e = x.exp().detach()
    e.add_(1)
    return e.log() * x
""",
    },
    {  # 2: the in-place update with gradients on; repaired in another style
        "sgd": SGD.format(update="        w -= lr * w.grad\n        w.grad = None"),
        "repaired": """
def repaired(x):
    return torch.log1p(torch.exp(x)) * x
""",
        "only": ("test_sgd_steps", "test_repaired"),
    },
    {  # 3: w.grad never cleared; repaired by a clone before the change
        "sgd": SGD.format(update="        with torch.no_grad():\n            w -= lr * w.grad"),
        "repaired": """
def repaired(x):
    e = x.exp().clone()
    e.add_(1)
    return e.log() * x
""",
        "only": ("test_sgd_steps", "test_repaired"),
    },
    {  # 4: the update through w.data; the exp computed under no_grad
        "sgd": SGD.format(update="        w.data -= lr * w.grad\n        w.grad.zero_()"),
        "repaired": """
def repaired(x):
    with torch.no_grad():
        e = x.exp()
        e.add_(1)
    return e.log() * x
""",
        "only": ("test_sgd_step_keeps_leaf", "test_repaired"),
    },
    {  # 5: gradient ascent; repaired with softplus
        "sgd": SGD.format(update="        with torch.no_grad():\n            w += lr * w.grad\n        w.grad = None"),
        "repaired": """
def repaired(x):
    return x * torch.nn.functional.softplus(x)
""",
        "only": ("test_sgd_steps", "test_repaired"),
    },
    {  # 6: one step too few
        "sgd": """
def sgd(w, x, y, lr, steps):
    for _ in range(1, steps):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
        w.grad = None
    return w
""",
        "only": ("test_sgd_steps",),
    },
    {  # 7: a sum where the mean was asked (zero_() guarded, sub_: the rest is right)
        "sgd": """
def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        if w.grad is not None:
            w.grad.zero_()
        ((x @ w - y) ** 2).sum().backward()
        with torch.no_grad():
            w.sub_(lr * w.grad)
    return w
""",
        "only": ("test_sgd_steps",),
    },
    {  # 8: w.grad.zero_() before the first backward, when w.grad is still None
        "sgd": SGD.format(update="        with torch.no_grad():\n            w -= lr * w.grad").replace(
            "    for _ in range(steps):\n", "    for _ in range(steps):\n        w.grad.zero_()\n"),
        "only": ("test_sgd_steps",),
    },
    {  # 9: updated in place with gradients off, then a detached copy returned
        "sgd": SGD.format(update="        with torch.no_grad():\n            w -= lr * w.grad\n        w.grad = None").replace(
            "    return w\n", "    return w.detach().clone()\n"),
        "only": ("test_sgd_step_keeps_leaf",),
    },
    {  # 10: correct in another style (an optimizer's step() is tried in test_topic_accumulation)
        "sgd": """
def sgd(w, x, y, lr, steps):
    for _ in range(steps):
        torch.nn.functional.mse_loss(torch.mv(x, w), y).backward()
        with torch.no_grad():
            w[:] = torch.sub(w, w.grad, alpha=lr)
            w.grad.zero_()
    return w
""",
    },
    {  # 11: momentum where plain gradient descent is asked; f squeezed (a size-1 axis lost)
        "sgd": """
def sgd(w, x, y, lr, steps):
    opt = torch.optim.SGD([w], lr=lr, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w - y) ** 2).mean().backward()
        opt.step()
    return w
""",
        "repaired": """
def repaired(x):
    return (torch.log1p(x.exp()) * x).squeeze()
""",
        "only": ("test_sgd_steps", "test_repaired"),
    },
    {  # 12: weight decay where plain gradient descent is asked
        "sgd": """
def sgd(w, x, y, lr, steps):
    opt = torch.optim.SGD([w], lr=lr, weight_decay=0.05)
    for _ in range(steps):
        opt.zero_grad()
        ((x @ w - y) ** 2).mean().backward()
        opt.step()
    return w
""",
    },
    {  # 13: Nesterov momentum, written by hand with a velocity kept across steps
        "sgd": """
def sgd(w, x, y, lr, steps):
    velocity = None
    for _ in range(steps):
        ((x @ w - y) ** 2).mean().backward()
        with torch.no_grad():
            g = w.grad
            velocity = g.clone() if velocity is None else 0.8 * velocity + g
            w -= lr * (g + 0.8 * velocity)
        w.grad = None
    return w
""",
        "only": ("test_sgd_steps",),
    },
]


FUNCTION_CHECKS = {"sgd": ("test_sgd_step_keeps_leaf", "test_sgd_steps"), "repaired": ("test_repaired",)}


OUT_OF_PLACE = msg("diag.accumulation.out_of_place_update", name="w", grad_fn="SubBackward0")
REBOUND = msg("diag.accumulation.rebound_no_grad", name="w")
RAW = ["TypeError", "NoneType", "UserWarning", "not a leaf Tensor is being accessed", "Create parameters directly"]
REQUIREMENT = "your code never changed a tensor in place with gradients off"
DETACHED = msg("diag.inplace.detached_path")


def test_mistakes_fail_on_every_seed_with_their_diagnosis(pytester):
    v = grade_planted(pytester, TOPIC, VARIANTS, FUNCTION_CHECKS)

    # 0: w = w - lr * w.grad: one step returns a non-leaf, more steps fail at the
    # second; both are named as the update, never as a raw TypeError
    fails_everywhere(v[0]["test_sgd_step_keeps_leaf"], "w after 1 step: expected is_leaf = True, got False",
                     OUT_OF_PLACE, absent=RAW)
    fails_everywhere(v[0]["test_sgd_steps"], "your code stopped with an error after updating w once", OUT_OF_PLACE,
                     absent=RAW)
    for run in v[0]["test_repaired"]:
        assert run["score"] == 1.0  # the forward values are right
    fails_everywhere(v[0]["test_repaired"], "modified by an inplace operation", msg("diag.inplace_saved"),
                     absent=[DETACHED])

    # 1: w rebound under no_grad; detach() cuts the path through log(1 + e^x)
    fails_everywhere(v[1]["test_sgd_step_keeps_leaf"], "w after 1 step: expected requires_grad = True, got False",
                     REBOUND, absent=[OUT_OF_PLACE])
    fails_everywhere(v[1]["test_sgd_steps"], REBOUND, absent=RAW + ["does not require grad and does not have"])
    fails_everywhere(v[1]["test_repaired"], "gradient through your f(x): values differ", DETACHED)

    # 2: the update with gradients on is PyTorch's in-place error, not an out-of-place update
    fails_everywhere(v[2]["test_sgd_steps"],
                     "a leaf Variable that requires grad is being used in an in-place operation",
                     msg("diag.inplace_leaf"), absent=[OUT_OF_PLACE, REBOUND])

    # 3: w.grad never cleared
    fails_everywhere(v[3]["test_sgd_steps"], msg("diag.inplace.grad_not_cleared"), absent=[REQUIREMENT])

    # 4: w.data: right values, but the requirement names the update; exp under no_grad
    fails_everywhere(v[4]["test_sgd_step_keeps_leaf"], REQUIREMENT, absent=[OUT_OF_PLACE])
    fails_everywhere(v[4]["test_repaired"], DETACHED)

    # 5: gradient ascent
    fails_everywhere(v[5]["test_sgd_steps"], msg("diag.inplace.ascent"),
                     absent=[msg("diag.inplace.grad_not_cleared")])

    # 6: one step too few
    for run in v[6]["test_sgd_steps"]:
        steps = int(run["feedback"].split("w after ")[1].split(" ")[0])
        fails_everywhere([run], msg("diag.inplace.step_count", made=steps - 1, steps=steps))

    # 7: a summed loss
    fails_everywhere(v[7]["test_sgd_steps"], "used the gradient of the sum of the squared errors",
                     absent=[msg("diag.inplace.ascent"), msg("diag.inplace.step_count", made=1, steps=2)])

    # 8: zero_() on a None .grad
    fails_everywhere(v[8]["test_sgd_steps"], "'NoneType' object has no attribute 'zero_'",
                     msg("diag.accumulation.zero_none", name="w"), absent=[OUT_OF_PLACE])

    # correct in other styles
    for i in (2, 3, 5):
        passes_everywhere(v[i]["test_repaired"])
    for name in FUNCTION_CHECKS["sgd"]:
        passes_everywhere(v[10][name])

    # 9: the update was right, what came back is a copy of w
    fails_everywhere(v[9]["test_sgd_step_keeps_leaf"], "w after 1 step: expected requires_grad = True, got False",
                     msg("diag.accumulation.returned_copy", name="w"), absent=[REBOUND])

    # 11-13: an SGD variant where plain SGD is asked, named; a squeezed f
    for variant in (11, 13):
        fails_everywhere(v[variant]["test_sgd_steps"], "w followed SGD with momentum",
                         absent=[msg("diag.inplace.grad_not_cleared")])
    for name in FUNCTION_CHECKS["sgd"]:
        fails_everywhere(v[12][name], "w followed SGD with weight decay")
    fails_everywhere(v[11]["test_repaired"], "an axis of size 1 was dropped")
