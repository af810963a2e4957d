"""The `accumulation` topic: every plausible mistake fails on every seed with
the diagnosis that names it, no diagnosis is given without its evidence, and
correct solutions in other styles pass on every seed.

One grading session grades many submissions (a session costs seconds to
start, a check milliseconds): variant i is the reference solution with a
mistake, or a correct other style, planted in some functions, graded by a
copy of the topic's checks for those functions in checks/v{i}/ (same file
name, so each check gets exactly the inputs `--grade-seed S` gives it) that
loads the module accumulation_v{i}. The mistakes are
mistakes/accumulation/<name>.py (what `autograd-grader audit` reads),
planted by name (``planted_source``)."""

from conftest import fails_everywhere, grade_planted, instruction_only, passes_everywhere
from planted_mistakes import planted_source

from pytest_autograd_grader.i18n import msg

TOPIC = "accumulation"
CHECKS = ("test_accumulated_grad", "test_zeroed_grads", "test_train_loop", "test_microbatch_grad")

VARIANTS = [
    {  # 0
        # .grad zeroed in every pass where accumulation was asked for
        "accumulated_grad": planted_source(TOPIC, "accumulated_zeroed_each_pass"),
        # .grad never cleared: pass i holds the sum of passes 1..i
        "zeroed_grads": planted_source(TOPIC, "zeroed_never_cleared"),
        # w.grad saved without clone(), zeroed in place: every entry is the last gradient
        "train_loop": planted_source(TOPIC, "train_saved_without_clone"),
        # the micro-batch losses are not divided by k
        "microbatch_grad": planted_source(TOPIC, "microbatch_not_divided"),
    },
    {  # 1
        # the tutorial's two passes, whatever k is
        "accumulated_grad": planted_source(TOPIC, "accumulated_two_passes"),
        # saved without clone(), zeroed in place after each pass: every entry is zero
        "zeroed_grads": planted_source(TOPIC, "zeroed_saved_without_clone"),
        # the out-of-place update: w is no longer a leaf after one step
        "train_loop": planted_source(TOPIC, "train_out_of_place"),
        # w.grad cleared before every micro-batch: only the last one is left
        "microbatch_grad": planted_source(TOPIC, "microbatch_last_only"),
    },
    {  # 2
        # one forward pass, k backward calls through the same graph
        "accumulated_grad": planted_source(TOPIC, "accumulated_one_forward"),
        # x.grad.zero_() before the first backward, when x.grad is still None
        "zeroed_grads": planted_source(TOPIC, "zeroed_zero_none"),
        # w.grad never cleared between steps
        "train_loop": planted_source(TOPIC, "train_never_cleared"),
        # each micro-batch summed instead of averaged
        "microbatch_grad": planted_source(TOPIC, "microbatch_summed"),
    },
    {  # 3
        # a sum where the mean was asked
        "accumulated_grad": planted_source(TOPIC, "accumulated_sum"),
        # torch.autograd.grad: right values, but .grad is never used
        "zeroed_grads": planted_source(TOPIC, "zeroed_autograd_grad"),
        # the out-of-place update under no_grad: w stops requiring grad
        "train_loop": planted_source(TOPIC, "train_rebound_no_grad"),
        # the whole batch's mean in one backward call
        "microbatch_grad": planted_source(TOPIC, "microbatch_one_backward"),
    },
    {  # 4: the update through w.data: right values, but w was not updated with gradients off
        "train_loop": planted_source(TOPIC, "train_data"),
    },
    {  # 5: w.grad.zero_() before the first backward, when w.grad is still None
        "train_loop": planted_source(TOPIC, "train_zero_none"),
    },
    {  # 6: malformed returns are the student's failure, never the check's error
        "zeroed_grads": planted_source(TOPIC, "zeroed_malformed"),
        "train_loop": planted_source(TOPIC, "train_malformed"),
    },
    {  # 7: updated in place, then a detached copy returned
        "train_loop": planted_source(TOPIC, "train_returned_copy"),
    },
    {  # 8: correct solutions in other styles
        "accumulated_grad": """
def accumulated_grad(x, k):
    for _ in range(k):
        torch.autograd.backward(torch.mean(torch.pow(torch.add(x, 2), 2)), retain_graph=True)
    return x.grad.clone()
""",
        "zeroed_grads": """
def zeroed_grads(x, scales):
    grads = []
    for c in scales:
        if x.grad is not None:
            x.grad.zero_()
        out = ((x + 2) ** 2).mean() * c
        out.backward()
        grads.append(torch.clone(x.grad))
    return tuple(grads)
""",
        # an optimizer; w.grad appended without clone() is right here: zero_grad()
        # sets it to None, so every step's backward makes a new tensor
        "train_loop": """
def train_loop(w, xs, ys, lr):
    opt = torch.optim.SGD([w], lr=lr)
    grads = []
    for i in range(len(xs)):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(xs[i] @ w, ys[i])
        loss.backward()
        grads.append(w.grad)
        opt.step()
    return [w, grads]
""",
        "microbatch_grad": """
def microbatch_grad(w, xs, ys):
    k = len(xs)
    for i in range(k):
        loss = torch.nn.functional.mse_loss(torch.matmul(xs[i], w), ys[i])
        loss.backward(gradient=torch.tensor(1.0 / k, dtype=w.dtype, device=w.device))
    return w.grad
""",
    },
    {  # 9: correct in more styles: passes through a helper, micro-batches backwards,
        # torch.autograd.backward with inputs=, divided by k at the end
        "accumulated_grad": """
def _one_pass(x):
    torch.autograd.backward([((x + 2) ** 2).mean()], inputs=[x])

def accumulated_grad(x, k):
    for _ in range(k):
        _one_pass(x)
    return x.grad
""",
        "microbatch_grad": """
def microbatch_grad(w, xs, ys):
    for i in reversed(range(len(xs))):
        torch.autograd.backward(((xs[i] @ w - ys[i]) ** 2).mean(), inputs=[w])
    w.grad /= len(xs)
    return w.grad
""",
    },
    {  # 10: the right values and the right number of backward calls, all but one
        # of them on throw-away graphs that never reach the tensor in question
        "zeroed_grads": planted_source(TOPIC, "zeroed_throw_away_calls"),
        "accumulated_grad": planted_source(TOPIC, "accumulated_throw_away_calls"),
        "microbatch_grad": planted_source(TOPIC, "microbatch_throw_away_calls"),
    },
    {  # 11: dummy calls that do reach the tensor, adding nothing, or the whole batch k times
        "accumulated_grad": planted_source(TOPIC, "accumulated_dummy_calls"),
        "microbatch_grad": planted_source(TOPIC, "microbatch_whole_batch_k_times"),
    },
    {  # 12: a mean over one axis where the mean runs over every element; .grad kept through
        # detach() and zeroed in place; momentum; micro-batch losses divided by b instead of k
        "accumulated_grad": planted_source(TOPIC, "accumulated_mean_one_axis"),
        "zeroed_grads": planted_source(TOPIC, "zeroed_detach_alias"),
        "train_loop": planted_source(TOPIC, "train_momentum"),
        "microbatch_grad": planted_source(TOPIC, "microbatch_divided_by_b"),
    },
    {  # 13: a mean over the batch rows of x; a squeeze that drops a size-1 axis;
        # weight decay; w.grad kept through .data and zeroed in place
        "accumulated_grad": planted_source(TOPIC, "accumulated_mean_rows"),
        "zeroed_grads": planted_source(TOPIC, "zeroed_squeezed"),
        "train_loop": planted_source(TOPIC, "train_weight_decay"),
    },
    {  # 14: a velocity kept across steps by hand; w.grad kept through .data and zeroed in place
        "train_loop": planted_source(TOPIC, "train_velocity"),
    },
    {  # 15: .grad kept through .data, zeroed in place
        "train_loop": planted_source(TOPIC, "train_data_alias"),
    },
    {  # 16: correct: detach() is a copy enough where .grad is set to None before the next
        # backward; a mean written as a sum over numel; micro-batch losses scaled by 1 / k
        "zeroed_grads": """
def zeroed_grads(x, scales):
    grads = []
    for c in scales:
        x.grad = None
        (c * ((x + 2) ** 2).sum() / x.numel()).backward()
        grads.append(x.grad.detach())
    return grads
""",
        "accumulated_grad": """
def accumulated_grad(x, k):
    for _ in range(k):
        ((x + 2) ** 2).sum().div(x.numel()).backward()
    return x.grad
""",
        "train_loop": """
def train_loop(w, xs, ys, lr):
    grads = []
    for i in range(xs.shape[0]):
        ((xs[i] @ w - ys[i]) ** 2).mean().backward()
        grads.append(w.grad.detach())
        with torch.no_grad():
            w.sub_(w.grad, alpha=lr)
        w.grad = None
    return w, grads
""",
        "microbatch_grad": """
def microbatch_grad(w, xs, ys):
    k = xs.shape[0]
    for i in range(k):
        ((xs[i] @ w - ys[i]).pow(2).mean() * (1 / k)).backward()
    return w.grad
""",
    },
]


FUNCTION_CHECKS = {
    function: (f"test_{function}",)
    for function in ("accumulated_grad", "zeroed_grads", "train_loop", "microbatch_grad")
}


ALIAS_X = msg("diag.accumulation.saved_grad_alias", name="x")
ALIAS_W = msg("diag.accumulation.saved_grad_alias", name="w")
RUNNING_SUM = "is the sum of the gradients of steps 1 and 2: .grad was never cleared"
OUT_OF_PLACE = "made a new tensor (grad_fn SubBackward0) instead of updating w"
LAST = msg("diag.accumulation.last_microbatch")


def test_mistakes_fail_on_every_seed_with_their_diagnosis(pytester):
    v = grade_planted(pytester, TOPIC, VARIANTS, FUNCTION_CHECKS)

    # 0: zeroed where accumulation was asked; never zeroed; w.grad saved without
    # clone; micro-batches not divided by k
    fails_everywhere(
        v[0]["test_accumulated_grad"], "Accumulation was asked for: do not zero .grad between the", absent=[ALIAS_X]
    )
    # the advice names the tensor of the exercise: x here, w in train_loop
    fails_everywhere(
        v[0]["test_zeroed_grads"],
        "gradient 2 of",
        RUNNING_SUM,
        "Zero it (x.grad = None",
        absent=[ALIAS_X, "w.grad = None"],
    )
    fails_everywhere(v[0]["test_train_loop"], "(lr 0.", "different batches)", ALIAS_W, absent=[RUNNING_SUM])
    for run in v[0]["test_microbatch_grad"]:
        k = run["feedback"].split("accumulated over ")[1].split(" ")[0]
        fails_everywhere([run], msg("diag.accumulation.microbatch_no_divide", k=int(k)), absent=[LAST])

    # 1: a fixed pass count; saved without clone and zeroed in place; w = w - lr * w.grad;
    # w.grad cleared between micro-batches
    fails_everywhere(v[1]["test_accumulated_grad"], "your code called backward 2 time(s); the task asks for exactly")
    fails_everywhere(v[1]["test_zeroed_grads"], "gradient 1 of", ALIAS_X)
    fails_everywhere(
        v[1]["test_train_loop"],
        "your code stopped with an error after updating w once",
        OUT_OF_PLACE,
        absent=["TypeError", "NoneType", "UserWarning", "not a leaf Tensor is being accessed"],
    )
    fails_everywhere(v[1]["test_microbatch_grad"], LAST)

    # 2: one graph, k backward calls; zero_() on a None .grad; w.grad never cleared; sums
    fails_everywhere(v[2]["test_accumulated_grad"], msg("req.accumulation.fresh_forward", what="").strip(": "))
    fails_everywhere(
        v[2]["test_zeroed_grads"],
        "'NoneType' object has no attribute 'zero_'",
        msg("diag.accumulation.zero_none", name="x"),
    )
    fails_everywhere(
        v[2]["test_train_loop"],
        "gradient of step 2 of",
        "(lr 0.0, one batch repeated)",
        RUNNING_SUM,
        "Zero it (w.grad = None",
        absent=[ALIAS_W, OUT_OF_PLACE],
    )
    for run in v[2]["test_microbatch_grad"]:
        b = run["feedback"].split(" micro-batches of ")[1].split(" ")[0]
        fails_everywhere([run], msg("diag.accumulation.microbatch_sum", b=int(b)), absent=[LAST])

    # 3: a sum; torch.autograd.grad instead of backward; w rebound under no_grad; one backward
    fails_everywhere(v[3]["test_accumulated_grad"], "is the number of elements averaged: you used a sum")
    fails_everywhere(
        v[3]["test_zeroed_grads"], "your code called backward 0 time(s); the task asks for one out.backward() per pass"
    )
    fails_everywhere(
        v[3]["test_train_loop"],
        msg("diag.accumulation.rebound_no_grad", name="w"),
        absent=[OUT_OF_PLACE, "does not require grad and does not have a grad_fn"],
    )
    fails_everywhere(v[3]["test_microbatch_grad"], "your code called backward 1 time(s); the task asks for exactly")

    # 4: w.data; 5: zero_() on a None .grad
    fails_everywhere(
        v[4]["test_train_loop"],
        msg("req.inplace.update_no_grad", what="", name="w").strip(": "),
        absent=[ALIAS_W, OUT_OF_PLACE],
    )
    fails_everywhere(
        v[5]["test_train_loop"],
        "'NoneType' object has no attribute 'zero_'",
        msg("diag.accumulation.zero_none", name="w"),
        absent=[OUT_OF_PLACE],
    )

    # 6: malformed returns
    fails_everywhere(v[6]["test_zeroed_grads"], "the returned list of gradients: expected a tuple or list of")
    fails_everywhere(v[6]["test_train_loop"], "the returned (w, grads) (lr 0.0, one batch repeated): expected a tuple")

    # 7: the update was right; the copy returned is named, not a rebinding under no_grad
    fails_everywhere(
        v[7]["test_train_loop"],
        "expected requires_grad = True, got False",
        msg("diag.accumulation.returned_copy", name="w"),
        absent=[msg("diag.accumulation.rebound_no_grad", name="w")],
    )

    # 8, 9: correct in other styles
    for name in CHECKS:
        passes_everywhere(v[8][name])
    for name in ("test_accumulated_grad", "test_microbatch_grad"):
        passes_everywhere(v[9][name])

    # 10, 11: k backward calls, but not one per pass or micro-batch: the values
    # are right and keep their points, the instruction's share is lost
    fails_everywhere(v[10]["test_zeroed_grads"], "were not one per pass", score=instruction_only(2))
    for variant in (10, 11):
        fails_everywhere(v[variant]["test_accumulated_grad"], "were not one per pass", score=instruction_only(2))
        fails_everywhere(v[variant]["test_microbatch_grad"], "were not one per micro-batch", score=instruction_only(2))

    # 12, 13: which reduction a factor-of-k diagnosis found
    one_axis = msg(
        "diag.divided_by", ratio="2", got=msg("label.divisor.one_axis", n=2), want=msg("label.divisor.elements", n=4)
    )
    fails_everywhere(v[12]["test_accumulated_grad"], one_axis, absent=["a constant factor in your derivative"])
    fails_everywhere(v[13]["test_accumulated_grad"], one_axis, absent=["a constant factor in your derivative"])
    for run in v[12]["test_microbatch_grad"]:
        k, b = (int(run["feedback"].split(sep)[1].split(" ")[0]) for sep in ("accumulated over ", " micro-batches of "))
        fails_everywhere(
            [run],
            f"you divided by the micro-batch size b={b} instead of the number of micro-batches k={k}",
            absent=[LAST],
        )
    # .grad kept through a view of it
    fails_everywhere(
        v[12]["test_zeroed_grads"], msg("diag.accumulation.shares_memory", name="x", op=".detach()"), absent=[ALIAS_X]
    )
    fails_everywhere(
        v[15]["test_train_loop"], msg("diag.accumulation.shares_memory", name="w", op=".data"), absent=[ALIAS_W]
    )
    # a size-1 axis squeezed away
    fails_everywhere(v[13]["test_zeroed_grads"], "an axis of size 1 was dropped")
    # an SGD variant where plain SGD is asked
    for variant in (12, 14):
        fails_everywhere(v[variant]["test_train_loop"], "w followed SGD with momentum", absent=[RUNNING_SUM])
    fails_everywhere(v[13]["test_train_loop"], "w followed SGD with weight decay", absent=[RUNNING_SUM])
    for name in CHECKS:
        passes_everywhere(v[16][name])
