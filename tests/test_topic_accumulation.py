"""The `accumulation` topic: solutions pass, stubs say "not implemented", and
plausible mistakes get their diagnosis."""

from conftest import solution_with

TOO_LARGE = "times too large. .grad adds up over backward calls: zero it"
FRACTION = "of the expected one. Accumulation was asked for: do not zero .grad between the"
MEAN_SUM = "is the number of elements averaged: you used a sum where a mean was asked"


def test_forgetting_to_zero_is_diagnosed(grade_topics):
    wrong = solution_with("accumulation", "zeroed_grads", """
def zeroed_grads(x, k):
    grads = []
    for _ in range(k):
        out = ((x + 2) ** 2).mean()
        out.backward()
        grads.append(x.grad.clone())
    return grads
""")
    graded = grade_topics(["accumulation"], modules={"accumulation": wrong})
    check = graded.check("test_zeroed_grads")
    assert check["status"] == "failed"
    assert "gradient 2 of" in check["feedback"]
    assert "the gradient is 2 " + TOO_LARGE in check["feedback"]


def test_zeroing_where_accumulation_was_asked_is_diagnosed(grade_topics):
    wrong = solution_with("accumulation", "accumulated_grad", """
def accumulated_grad(x, k):
    for _ in range(k):
        x.grad = None
        out = ((x + 2) ** 2).mean()
        out.backward()
    return x.grad
""")
    graded = grade_topics(["accumulation"], modules={"accumulation": wrong})
    check = graded.check("test_accumulated_grad")
    assert check["status"] == "failed"
    assert "the gradient is 1/" in check["feedback"] and FRACTION in check["feedback"]


def test_sum_instead_of_mean_is_diagnosed(grade_topics):
    wrong = solution_with("accumulation", "accumulated_grad", """
def accumulated_grad(x, k):
    for _ in range(k):
        out = ((x + 2) ** 2).sum()
        out.backward()
    return x.grad
""")
    graded = grade_topics(["accumulation"], modules={"accumulation": wrong})
    check = graded.check("test_accumulated_grad")
    assert check["status"] == "failed"
    # the tutorial's x = ones(2, 2) comes first: a mean over 4 elements
    assert "the gradient is 4 times too large, and 4 " + MEAN_SUM in check["feedback"]


def test_micro_batches_without_dividing_by_k_are_diagnosed(grade_topics):
    wrong = solution_with("accumulation", "microbatch_grad", """
def microbatch_grad(w, xs, ys):
    for x, y in zip(xs, ys):
        ((x @ w - y) ** 2).mean().backward()
    return w.grad
""")
    graded = grade_topics(["accumulation"], modules={"accumulation": wrong})
    check = graded.check("test_microbatch_grad")
    assert check["status"] == "failed"
    assert MEAN_SUM in check["feedback"]


def test_training_loop_without_zeroing_is_diagnosed(grade_topics):
    wrong = solution_with("accumulation", "train_loop", """
def train_loop(w, xs, ys, lr):
    grads = []
    for x, y in zip(xs, ys):
        loss = ((x @ w - y) ** 2).mean()
        loss.backward()
        grads.append(w.grad.clone())
        with torch.no_grad():
            w -= lr * w.grad
    return w, grads
""")
    graded = grade_topics(["accumulation"], modules={"accumulation": wrong})
    check = graded.check("test_train_loop")
    assert check["status"] == "failed"
    # the first case repeats one batch with lr 0, so step 2 sees twice the gradient
    assert "gradient of step 2 of" in check["feedback"] and "(lr 0.0, one batch repeated)" in check["feedback"]
    assert "the gradient of step 2 is the sum of the gradients of steps 1 to 2: .grad was never cleared" \
        in check["feedback"]


def test_malformed_return_is_a_failure_not_an_error(grade_topics):
    wrong = solution_with("accumulation", "train_loop", """
def train_loop(w, xs, ys, lr):
    return w
""")
    wrong = wrong.replace("def zeroed_grads(x, k):", "def zeroed_grads(x, k):\n    return x\n\n\ndef _unused(x, k):")
    graded = grade_topics(["accumulation"], modules={"accumulation": wrong})
    for name in ("test_train_loop", "test_zeroed_grads"):
        check = graded.check(name)
        assert check["status"] == "failed"
        assert "expected a list, got a tensor" in check["feedback"] or "expected a tuple" in check["feedback"]
