"""DP fine-tuning through opacus: the plain-SGD limit, hooks against ghost clipping, the ledger against
dp-accounting, accuracy on real digits, and the refusals."""

from __future__ import annotations

import math

import pytest
import torch
from sklearn.datasets import load_digits

from pillar_cli.embedding.networks import NetworkSpec
from pillar_cli.errors import DataError, UsageError
from pillar_cli.finetune import FinetuneConfig, finetune, network
from pillar_cli.privacy import gaussian_segments
from pillar_cli.randomness import NoiseSource

DIGITS_CNN = NetworkSpec("cnn", (8, 8, 1), 10)


@pytest.fixture(scope="module")
def digits():
    bunch = load_digits()
    return torch.tensor(bunch.images[:, None] / 16.0, dtype=torch.float32), bunch.target


def test_without_noise_or_clipping_the_opacus_path_is_plain_sgd_on_the_same_batches(digits):
    """Same Poisson batches (opacus' sampler on the generator a seeded source gives the run), physical batches
    of 16 accumulated: SGD on the sum of the losses over the expected batch size, as DP-SGD averages."""
    from opacus.utils.uniform_sampler import UniformWithReplacementSampler

    images, labels = digits[0][:300], digits[1][:300]
    config = FinetuneConfig(
        epsilon=math.inf,
        clip=math.inf,
        steps=6,
        lr=0.3,
        batch_size=40,
        seed=3,
        max_physical_batch=16,
        noise=NoiseSource(11),
    )
    trained = finetune(network(DIGITS_CNN, seed=1), images, labels, config).model
    reference = network(DIGITS_CNN, seed=1)
    sgd = torch.optim.SGD(reference.parameters(), lr=0.3)
    sampler = UniformWithReplacementSampler(
        num_samples=300, sample_rate=40 / 300, generator=NoiseSource(11).child("batches", 3, math.inf).torch()
    )
    targets = torch.as_tensor(labels)
    for _, batch in zip(range(6), sampler):
        sgd.zero_grad()
        loss = (
            torch.nn.functional.cross_entropy(reference(images[batch]), targets[batch], reduction="sum") / 40
        )
        loss.backward()
        sgd.step()
    for ours, theirs in zip(trained.parameters(), reference.parameters()):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "spec", [DIGITS_CNN, NetworkSpec("resnet10t", (8, 8, 1), 10)], ids=["cnn", "resnet10t"]
)
def test_ghost_clipping_equals_hooks_with_clipping_active(digits, spec):
    """Also for a timm ResNet, whose residual `x += shortcut` runs in place after a hooked normalisation
    layer."""
    images, labels = digits[0][:300], digits[1][:300]
    models = {}
    for mode in ("hooks", "ghost"):
        config = FinetuneConfig(
            epsilon=math.inf,
            clip=0.05,
            steps=5,
            lr=1.0,
            batch_size=50,
            grad_sample_mode=mode,
            noise=NoiseSource(0),
        )  # both modes on the same batches
        models[mode] = finetune(network(spec, seed=2), images, labels, config).model
    for hooks, ghost in zip(models["hooks"].parameters(), models["ghost"].parameters()):
        torch.testing.assert_close(hooks, ghost, rtol=1e-4, atol=1e-6)


def test_fine_tuned_ledger_recomputes_with_dp_accounting_and_beats_chance(digits):
    from dp_accounting import dp_event, pld

    images, labels = digits
    config = FinetuneConfig(epsilon=4.0, steps=80, lr=2.0, batch_size=200, grad_sample_mode="ghost", seed=0)
    result = finetune(network(DIGITS_CNN), images[:1400], labels[:1400], config)
    ((sigma, rate, steps),) = gaussian_segments(result.event)
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.GaussianDpEvent(result.count.noise_multiplier))  # n is private: counted first
    accountant.compose(dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma)), steps)
    assert accountant.get_epsilon(config.delta) <= result.epsilon_spent * 1.01
    assert (
        result.epsilon_spent <= 4.0 and result.steps_run == steps == 80 and rate == 200 / result.count.value
    )
    accuracy = (result.model.eval()(images[1400:]).argmax(1).numpy() == labels[1400:]).mean()
    assert accuracy > 0.4, accuracy  # chance: 0.1; the noise is secret: 12 fits gave 0.56-0.75 (mean 0.63)


def test_refusals(digits, tmp_path):
    images, labels = digits[0][:100], digits[1][:100]
    with pytest.raises(UsageError, match=r"^epsilon must be > 0"):
        finetune(network(DIGITS_CNN), images, labels, FinetuneConfig(epsilon=0.0, batch_size=10))
    with pytest.raises(DataError, match=r"^the network cannot take images of shape \(1, 8, 8\)"):
        finetune(
            network(NetworkSpec("cnn", (8, 8, 3), 10)),
            images,
            labels,
            FinetuneConfig(epsilon=1.0, batch_size=10),
        )
    torch.save(network(NetworkSpec("cnn", (8, 8, 1), 4)).state_dict(), tmp_path / "other.pt")
    with pytest.raises(DataError, match=rf"^checkpoint {tmp_path / 'other.pt'} does not fit network 'cnn'"):
        network(DIGITS_CNN, weights=tmp_path / "other.pt")
