"""hetrun.layer_moves in one process: a layer's parameters and AdamW state exported and imported
into a fresh optimizer continue bit for bit (with and without amsgrad); bad input is named. The
transfers between processes are covered by test_pipeline_rebalance.py (3 Gloo ranks)."""

from __future__ import annotations

import pytest
import torch

import hetrun.layer_moves as lm


def _train(opt, params, steps, offset=0):
    for step in range(offset, offset + steps):
        opt.zero_grad()
        ((params[0] * (step + 1)).sin().sum() + (params[1] ** 2).sum()).backward()
        opt.step()


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_state_round_trip_continues_exactly(amsgrad):
    torch.manual_seed(3)
    a = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(5, dtype=torch.float64, requires_grad=True)
    source = torch.optim.AdamW([a, b], lr=1e-2, amsgrad=amsgrad)
    _train(source, [a, b], 3)
    tensors = lm.export_adam_layer(source, [a, b])
    assert len(tensors) == 10
    a2 = torch.zeros(4, 3, dtype=torch.float64, requires_grad=True)
    b2 = torch.zeros(5, dtype=torch.float64, requires_grad=True)
    states = lm.import_adam_layer([a2, b2], tensors, amsgrad=amsgrad)
    target = torch.optim.AdamW([a2, b2], lr=1e-2, amsgrad=amsgrad)
    for p, state in states.items():
        target.state[p] = state
    _train(source, [a, b], 4, offset=3)
    _train(target, [a2, b2], 4, offset=3)
    assert torch.equal(a, a2) and torch.equal(b, b2)


def test_parameters_never_stepped_carry_no_state():
    p = torch.ones(2, requires_grad=True)
    opt = torch.optim.AdamW([p])
    q = torch.zeros(2, requires_grad=True)
    assert lm.import_adam_layer([q], lm.export_adam_layer(opt, [p])) == {}
    assert torch.equal(q, p.detach())


def test_mismatched_tensors_are_named():
    p = torch.ones(2, requires_grad=True)
    tensors = lm.export_adam_layer(torch.optim.AdamW([p]), [p])
    with pytest.raises(ValueError, match="5 per parameter"):
        lm.import_adam_layer([p, p], tensors)
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        lm.import_adam_layer([torch.zeros(3, requires_grad=True)], tensors)
    with pytest.raises(ValueError, match="dtype"):
        lm._header([torch.zeros(1, dtype=torch.complex64)])
