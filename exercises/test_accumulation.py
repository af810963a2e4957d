import pytest

pytestmark = pytest.mark.grade(concept="accumulation")


def one_pass(x):
    return ((x + 2) ** 2).mean()


def batch_loss(w, x, y):
    return ((x @ w - y) ** 2).mean()


def inputs(grade_rng, grade_device):
    """The tutorial's x = ones(2, 2), then a random x of at least 3 elements:
    a sum and a mean differ, and a mean over 2 elements cannot be mistaken
    for two gradients added up."""
    import torch

    ndim = grade_rng.integers(1, 2)
    shape = grade_rng.shape(ndim=ndim, low=3 if ndim == 1 else 2, high=5)
    return [torch.ones(2, 2, dtype=torch.float64, device=grade_device, requires_grad=True),
            grade_rng.randn(*shape, requires_grad=True)]


@pytest.mark.grade(points=2)
def test_accumulated_grad(submission, autograd, grade_rng, grade_device):
    for x in inputs(grade_rng, grade_device):
        k = grade_rng.integers(2, 5)
        got = submission("accumulation").accumulated_grad(x, k)
        autograd.check_grad(got, one_pass, (x,), scale=k, calls=k, mean_over=x.numel(),
                            names=(f"x.grad after {k} passes (x of shape {tuple(x.shape)})",))


@pytest.mark.grade(points=2)
def test_zeroed_grads(submission, autograd, grade_rng, grade_device):
    for x in inputs(grade_rng, grade_device):
        k = grade_rng.integers(2, 5)
        grads = autograd.unpack(submission("accumulation").zeroed_grads(x, k), k, "the returned list of gradients")
        for i, got in enumerate(grads):
            autograd.check_grad(got, one_pass, (x,), mean_over=x.numel(),
                                names=(f"gradient {i + 1} of {k} (x of shape {tuple(x.shape)})",))


@pytest.mark.grade(points=3)
def test_train_loop(submission, autograd, grade_rng, grade_device):
    # b >= 3: step 2 of the repeated batch sees 2x the gradient, and 2 must not read as
    # "sum instead of a mean over b samples"
    k, b, n = grade_rng.integers(2, 5), grade_rng.integers(3, 5), grade_rng.integers(2, 4)
    w = grade_rng.randn(n, requires_grad=True)
    xs, ys = grade_rng.randn(k, b, n), grade_rng.randn(k, b)
    # First the same batch k times with lr 0: every step must see the same
    # gradient (a step that did not clear w.grad shows up as a multiple).
    same = (xs[0].expand(k, b, n).clone(), ys[0].expand(k, b).clone())
    for (bxs, bys), lr in ((same, 0.0), ((xs, ys), grade_rng.choice([0.01, 0.05, 0.1]))):
        what = f"lr {lr}, {'one batch repeated' if lr == 0 else f'{k} different batches'}"
        final, grads = autograd.unpack(submission("accumulation").train_loop(w, bxs, bys, lr), 2,
                             f"the returned (w, grads) ({what})")
        grads = autograd.unpack(grads, k, f"grads ({what})")
        reference, previous = w.detach(), []
        for i in range(k):
            autograd.check_grad(grads[i], batch_loss, (reference, bxs[i], bys[i]), wrt=(0,), mean_over=b,
                                previous=previous, names=(f"gradient of step {i + 1} of {k} ({what})",))
            previous.append(autograd.grad(batch_loss, (reference, bxs[i], bys[i]), wrt=(0,))[0])
            reference = reference - lr * previous[-1]
        autograd.assert_close(final, reference, f"w after {k} steps ({what})")


@pytest.mark.grade(points=2)
def test_microbatch_grad(submission, autograd, grade_rng, grade_device):
    k, b, n = grade_rng.integers(2, 4), grade_rng.integers(1, 4), grade_rng.integers(2, 4)
    w = grade_rng.randn(n, requires_grad=True)
    xs, ys = grade_rng.randn(k, b, n), grade_rng.randn(k, b)
    got = submission("accumulation").microbatch_grad(w, xs, ys)
    whole = (w, xs.reshape(k * b, n), ys.reshape(k * b))
    autograd.check_grad(got, batch_loss, whole, wrt=(0,), mean_over=k, calls=k,
                        names=(f"w.grad accumulated over {k} micro-batches",))
