"""Encoder presets: feature sizes, scaling, architecture and input errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from wanderlust.agent.encoders import ENCODER_NAMES, make_encoder

EXPECTED_DIM = {"nature": 512, "impala": 256, "seed": 128}


@pytest.mark.parametrize("name", ENCODER_NAMES)
@pytest.mark.parametrize("height,width", [(64, 64), (84, 84), (120, 160)])
def test_encoder_output_dim_for_common_frame_sizes(name: str, height: int, width: int) -> None:
    torch.manual_seed(0)
    encoder = make_encoder(name, (4, height, width))
    obs = torch.randint(0, 256, (3, 4, height, width), dtype=torch.uint8)
    features = encoder(obs)
    assert encoder.output_dim == EXPECTED_DIM[name]
    assert features.shape == (3, EXPECTED_DIM[name])
    assert features.dtype == torch.float32
    assert torch.isfinite(features).all()
    assert (features >= 0).all()  # every preset ends with a ReLU


@pytest.mark.parametrize("name", ENCODER_NAMES)
def test_encoder_scales_uint8_and_float_the_same_way(name: str) -> None:
    torch.manual_seed(0)
    encoder = make_encoder(name, (3, 40, 48))
    obs = torch.randint(0, 256, (2, 3, 40, 48), dtype=torch.uint8)
    from_uint8 = encoder(obs)
    torch.testing.assert_close(from_uint8, encoder(obs.to(torch.float32)))
    # The /255 happens inside, before the conv trunk.
    torch.testing.assert_close(from_uint8, encoder.head(encoder.trunk(obs.to(torch.float32) / 255.0)))


def test_nature_architecture() -> None:
    encoder = make_encoder("nature", (4, 84, 84))
    convs = [m for m in encoder.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size, c.stride) for c in convs] == [
        (32, (8, 8), (4, 4)), (64, (4, 4), (2, 2)), (64, (3, 3), (1, 1)),
    ]
    linear = [m for m in encoder.modules() if isinstance(m, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in linear] == [(64 * 7 * 7, 512)]


def test_impala_architecture() -> None:
    encoder = make_encoder("impala", (4, 64, 64))
    convs = [m for m in encoder.modules() if isinstance(m, nn.Conv2d)]
    # 3 stacks x (1 conv + 2 residual blocks x 2 convs) = 15 convs.
    assert len(convs) == 15
    assert [c.out_channels for c in convs[::5]] == [16, 32, 32]
    assert sum(isinstance(m, nn.MaxPool2d) for m in encoder.modules()) == 3
    linear = [m for m in encoder.modules() if isinstance(m, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in linear] == [(32 * 8 * 8, 256)]


def test_seed_architecture() -> None:
    encoder = make_encoder("seed", (3, 64, 64))
    convs = [m for m in encoder.modules() if isinstance(m, nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size, c.padding) for c in convs] == [
        (16, (3, 3), (1, 1)), (32, (3, 3), (1, 1)), (64, (3, 3), (1, 1)),
    ]
    linear = [m for m in encoder.modules() if isinstance(m, nn.Linear)]
    assert [(lin.in_features, lin.out_features) for lin in linear] == [(64 * 8 * 8, 128)]


def test_unknown_encoder_lists_choices() -> None:
    with pytest.raises(ValueError, match="nature, impala, seed"):
        make_encoder("resnet", (3, 64, 64))


def test_nature_rejects_too_small_frames_and_accepts_the_minimum() -> None:
    with pytest.raises(ValueError, match="at least 36x36"):
        make_encoder("nature", (1, 16, 16))
    with pytest.raises(ValueError, match="at least 36x36"):
        make_encoder("nature", (1, 35, 64))
    encoder = make_encoder("nature", (1, 36, 36))
    assert encoder(torch.zeros(1, 1, 36, 36, dtype=torch.uint8)).shape == (1, 512)


def test_small_frames_work_with_impala_and_seed() -> None:
    assert make_encoder("impala", (1, 4, 4))(torch.zeros(2, 1, 4, 4)).shape == (2, 256)
    assert make_encoder("seed", (1, 8, 8))(torch.zeros(2, 1, 8, 8)).shape == (2, 128)
    with pytest.raises(ValueError, match="at least 8x8"):
        make_encoder("seed", (1, 7, 8))


def test_bad_obs_shape_and_wrong_input_are_rejected() -> None:
    with pytest.raises(ValueError, match=r"\(C, H, W\)"):
        make_encoder("seed", (64, 64))
    encoder = make_encoder("seed", (3, 16, 16))
    with pytest.raises(ValueError, match=r"\[B, 3, 16, 16\]"):
        encoder(torch.zeros(2, 16, 16, 3, dtype=torch.uint8))


@pytest.mark.parametrize("name", ENCODER_NAMES)
def test_centered_encoder_feeds_x_over_255_minus_half(name: str) -> None:
    torch.manual_seed(0)
    centered = make_encoder(name, (3, 40, 48), center=True)
    plain = make_encoder(name, (3, 40, 48))
    plain.load_state_dict(centered.state_dict())  # same weights: centring adds no parameter
    obs = torch.randint(0, 256, (2, 3, 40, 48), dtype=torch.uint8)
    torch.testing.assert_close(centered(obs), plain.head(plain.trunk(obs.to(torch.float32) / 255.0 - 0.5)))
    if name != "nature":
        return  # the other presets pad their first conv with zeros, so the bias identity below fails at the edges
    # Centring is the same as lowering each first-layer bias by 0.5 * (sum of its weights).
    first = plain.trunk[0]
    with torch.no_grad():
        first.bias -= 0.5 * first.weight.sum(dim=(1, 2, 3))
    torch.testing.assert_close(centered(obs), plain(obs), rtol=1e-4, atol=1e-5)


def test_centering_keeps_a_negative_filter_alive() -> None:
    # A first-layer filter whose weights all turned negative never fires on [0, 1] inputs (a dead
    # ReLU), but on centred inputs it fires wherever the frame is dark.
    torch.manual_seed(0)
    obs = torch.randint(0, 256, (4, 3, 40, 48), dtype=torch.uint8)
    fired = {}
    for center in (False, True):
        encoder = make_encoder("nature", (3, 40, 48), center=center)
        with torch.no_grad():
            encoder.trunk[0].weight[0] = -encoder.trunk[0].weight[0].abs()
            encoder.trunk[0].bias[0] = 0.0
        seen = []
        encoder.trunk[1].register_forward_hook(lambda module, args, out: seen.append(out[:, 0].clone()))
        encoder(obs)
        fired[center] = bool((seen[0] > 0).any())
    assert fired == {False: False, True: True}
