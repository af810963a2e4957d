import pytest

pytestmark = pytest.mark.grade(concept="vector_backward")


def product(x, Y):
    return x @ Y


def two_losses(w, x):
    return ((x @ w) ** 2).mean(), w.exp().sum()


@pytest.mark.grade(points=3)
def test_jacobian_rows(submission, autograd, grade_rng, grade_device):
    import torch

    from pytest_autograd_grader import TensorRecord

    n, m = grade_rng.shape(ndim=2, low=1, high=5)
    tutorial = (torch.tensor([[1.0, 2.0]], dtype=torch.float64, device=grade_device),
                torch.tensor([[3.0, 4.0], [5.0, 6.0]], dtype=torch.float64, device=grade_device))
    # Equal columns first: their Jacobian rows are equal, so rows that were
    # not zeroed in between come out as exact multiples and get a diagnosis.
    equal_columns = grade_rng.randn(n, 1).repeat(1, grade_rng.integers(2, 4))
    cases = [(grade_rng.randn(1, n), equal_columns), (grade_rng.randn(1, n), grade_rng.randn(n, m)), tutorial]
    for x, Y in cases:
        got = submission("vector_backward").jacobian_rows(x.requires_grad_(True), Y)
        rows = []
        for j in range(Y.shape[1]):
            e = torch.zeros(1, Y.shape[1], dtype=x.dtype, device=x.device)
            e[0, j] = 1.0
            rows.append(autograd.grad(product, (x, Y), e, wrt=(0,))[0])
        what = f"Jacobian rows for x of shape {tuple(x.shape)}, Y of shape {tuple(Y.shape)}"
        if isinstance(got, TensorRecord) and got.shape == (len(rows), x.shape[1]):
            for j, row in enumerate(rows):  # row by row, so each row's mistake can be named
                autograd.assert_grad(got.data[j:j + 1], row, f"{what}: row {j}")
        autograd.assert_grad(got, torch.cat(rows), what)


@pytest.mark.grade(points=3)
def test_vjp_matmul(submission, autograd, grade_rng, grade_device):
    b, n, m = grade_rng.shape(ndim=3, low=1, high=5)
    x = grade_rng.randn(b, n, requires_grad=True)
    Y = grade_rng.randn(n, m, requires_grad=True)
    v = grade_rng.randn(b, m)
    got = submission("vector_backward").vjp_matmul(x, Y, v)
    autograd.check_grad(got, product, (x, Y), grad_outputs=v, names=("x.grad", "Y.grad"))


@pytest.mark.grade(points=3)
def test_weighted_losses(submission, autograd, grade_rng, grade_device):
    b, n = grade_rng.shape(ndim=2, low=1, high=5)
    w = grade_rng.randn(n, requires_grad=True)
    x = grade_rng.randn(b, n)
    weights = grade_rng.randn(2, low=0.1)
    got = submission("vector_backward").weighted_losses(w, x, weights)
    autograd.check_grad(got, two_losses, (w, x), grad_outputs=(weights[0], weights[1]), wrt=(0,), names=("w.grad",))
