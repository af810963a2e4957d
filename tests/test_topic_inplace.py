"""The `inplace` topic: every plausible mistake fails on every seed with the
diagnosis that names it, no diagnosis is given without its evidence, and
correct solutions in other styles pass on every seed.

One grading session grades many submissions (a session costs seconds to
start, a check milliseconds): variant i is the reference solution with a
mistake, or a correct other style, planted in some functions, graded by a
copy of the topic's checks for those functions in checks/v{i}/ (same file
name, so each check gets exactly the inputs `--grade-seed S` gives it) that
loads the module inplace_v{i}. The mistakes are mistakes/inplace/<name>.py
(what `autograd-grader audit` reads), planted by name (``planted_source``)."""

from conftest import fails_everywhere, grade_planted, passes_everywhere
from planted_mistakes import planted_source

from pytest_autograd_grader.i18n import msg

TOPIC = "inplace"
CHECKS = ("test_sgd_step_keeps_leaf", "test_sgd_steps", "test_repaired")

VARIANTS = [
    {  # 0: the out-of-place update; the unrepaired function
        "sgd": planted_source(TOPIC, "sgd_out_of_place"),
        "repaired": planted_source(TOPIC, "repaired_unrepaired"),
    },
    {  # 1: the out-of-place update under no_grad; the saved tensor cut off with detach()
        "sgd": planted_source(TOPIC, "sgd_rebound_no_grad"),
        "repaired": planted_source(TOPIC, "repaired_detached"),
    },
    {  # 2: the in-place update with gradients on; repaired in another style
        "sgd": planted_source(TOPIC, "sgd_grad_on"),
        "repaired": """
def repaired(x):
    return torch.log1p(torch.exp(x)) * x
""",
        "only": ("test_sgd_steps", "test_repaired"),
    },
    {  # 3: w.grad never cleared; repaired by a clone before the change
        "sgd": planted_source(TOPIC, "sgd_grad_not_cleared"),
        "repaired": """
def repaired(x):
    e = x.exp().clone()
    e.add_(1)
    return e.log() * x
""",
        "only": ("test_sgd_steps", "test_repaired"),
    },
    {  # 4: the update through w.data; the exp computed under no_grad
        "sgd": planted_source(TOPIC, "sgd_data"),
        "repaired": planted_source(TOPIC, "repaired_no_grad"),
        "only": ("test_sgd_step_keeps_leaf", "test_repaired"),
    },
    {  # 5: gradient ascent; repaired with softplus
        "sgd": planted_source(TOPIC, "sgd_ascent"),
        "repaired": """
def repaired(x):
    return x * torch.nn.functional.softplus(x)
""",
        "only": ("test_sgd_steps", "test_repaired"),
    },
    {  # 6: one step too few
        "sgd": planted_source(TOPIC, "sgd_step_short"),
        "only": ("test_sgd_steps",),
    },
    {  # 7: a sum where the mean was asked (zero_() guarded, sub_: the rest is right)
        "sgd": planted_source(TOPIC, "sgd_sum"),
        "only": ("test_sgd_steps",),
    },
    {  # 8: w.grad.zero_() before the first backward, when w.grad is still None
        "sgd": planted_source(TOPIC, "sgd_zero_none"),
        "only": ("test_sgd_steps",),
    },
    {  # 9: updated in place with gradients off, then a detached copy returned
        "sgd": planted_source(TOPIC, "sgd_returned_copy"),
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
        "sgd": planted_source(TOPIC, "sgd_momentum"),
        "repaired": planted_source(TOPIC, "repaired_squeezed"),
        "only": ("test_sgd_steps", "test_repaired"),
    },
    {  # 12: weight decay where plain gradient descent is asked
        "sgd": planted_source(TOPIC, "sgd_weight_decay"),
    },
    {  # 13: Nesterov momentum, written by hand with a velocity kept across steps
        "sgd": planted_source(TOPIC, "sgd_nesterov"),
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
    fails_everywhere(
        v[0]["test_sgd_step_keeps_leaf"], "w after 1 step: expected is_leaf = True, got False", OUT_OF_PLACE, absent=RAW
    )
    fails_everywhere(
        v[0]["test_sgd_steps"], "your code stopped with an error after updating w once", OUT_OF_PLACE, absent=RAW
    )
    for run in v[0]["test_repaired"]:
        assert run["score"] == 1.0  # the forward values are right
    fails_everywhere(
        v[0]["test_repaired"], "modified by an inplace operation", msg("diag.inplace_saved"), absent=[DETACHED]
    )

    # 1: w rebound under no_grad; detach() cuts the path through log(1 + e^x)
    fails_everywhere(
        v[1]["test_sgd_step_keeps_leaf"],
        "w after 1 step: expected requires_grad = True, got False",
        REBOUND,
        absent=[OUT_OF_PLACE],
    )
    fails_everywhere(v[1]["test_sgd_steps"], REBOUND, absent=RAW + ["does not require grad and does not have"])
    fails_everywhere(v[1]["test_repaired"], "gradient through your f(x): values differ", DETACHED)

    # 2: the update with gradients on is PyTorch's in-place error, not an out-of-place update
    fails_everywhere(
        v[2]["test_sgd_steps"],
        "a leaf Variable that requires grad is being used in an in-place operation",
        msg("diag.inplace_leaf"),
        absent=[OUT_OF_PLACE, REBOUND],
    )

    # 3: w.grad never cleared
    fails_everywhere(v[3]["test_sgd_steps"], msg("diag.inplace.grad_not_cleared"), absent=[REQUIREMENT])

    # 4: w.data: right values, but the requirement names the update; exp under no_grad
    fails_everywhere(v[4]["test_sgd_step_keeps_leaf"], REQUIREMENT, absent=[OUT_OF_PLACE])
    fails_everywhere(v[4]["test_repaired"], DETACHED)

    # 5: gradient ascent
    fails_everywhere(v[5]["test_sgd_steps"], msg("diag.inplace.ascent"), absent=[msg("diag.inplace.grad_not_cleared")])

    # 6: one step too few
    for run in v[6]["test_sgd_steps"]:
        steps = int(run["feedback"].split("w after ")[1].split(" ")[0])
        fails_everywhere([run], msg("diag.inplace.step_count", made=steps - 1, steps=steps))

    # 7: a summed loss
    fails_everywhere(
        v[7]["test_sgd_steps"],
        "used the gradient of the sum of the squared errors",
        absent=[msg("diag.inplace.ascent"), msg("diag.inplace.step_count", made=1, steps=2)],
    )

    # 8: zero_() on a None .grad
    fails_everywhere(
        v[8]["test_sgd_steps"],
        "'NoneType' object has no attribute 'zero_'",
        msg("diag.accumulation.zero_none", name="w"),
        absent=[OUT_OF_PLACE],
    )

    # correct in other styles
    for i in (2, 3, 5):
        passes_everywhere(v[i]["test_repaired"])
    for name in FUNCTION_CHECKS["sgd"]:
        passes_everywhere(v[10][name])

    # 9: the update was right, what came back is a copy of w
    fails_everywhere(
        v[9]["test_sgd_step_keeps_leaf"],
        "w after 1 step: expected requires_grad = True, got False",
        msg("diag.accumulation.returned_copy", name="w"),
        absent=[REBOUND],
    )

    # 11-13: an SGD variant where plain SGD is asked, named; a squeezed f
    for variant in (11, 13):
        fails_everywhere(
            v[variant]["test_sgd_steps"], "w followed SGD with momentum", absent=[msg("diag.inplace.grad_not_cleared")]
        )
    for name in FUNCTION_CHECKS["sgd"]:
        fails_everywhere(v[12][name], "w followed SGD with weight decay")
    fails_everywhere(v[11]["test_repaired"], "an axis of size 1 was dropped")
