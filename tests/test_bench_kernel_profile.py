"""bench.kernel_profile: a step's time split by kind of work, from kernel and operator names."""

from __future__ import annotations

import pytest
import torch

from bench.kernel_profile import OTHER, StepProfile, kind_of


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "matmul"),
        ("nvjet_tst_192x128_64x4_2x1_v_bz_coopB_TNT", "matmul"),
        ("aten::addmm", "matmul"),
        ("pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128>>", "attention"),
        ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80", "attention"),
        ("aten::bmm", "attention"),
        ("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16>", "normalisation"),
        ("void at::native::fused_dropout_kernel_vec<float, float>", "dropout"),
        ("aten::random_", "dropout"),
        ("void at::native::(anonymous namespace)::fused_adamw_kernel", "optimizer"),
        ("aten::_softmax", "softmax_and_loss"),
        ("aten::index_select", "copies"),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", OTHER),
    ],
)
def test_kernels_and_operators_are_sorted_into_kinds_of_work_by_name(name, kind):
    assert kind_of(name) == kind


def test_a_profile_of_some_steps_splits_their_busy_time_by_kind():
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.LayerNorm(256))
    optimizer = torch.optim.AdamW(model.parameters(), fused=True)
    profile = StepProfile(torch.device("cpu"))
    profile.start()
    for _ in range(2):
        model(torch.randn(128, 64)).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
    profile.stop(2)
    figures = profile.summary(top=5)
    assert figures["profiled_steps"] == 2 and figures["measured_on"] == "CPU operators (self time)"
    kinds = figures["ms_per_step_by_kind"]
    assert {"matmul", "normalisation", "optimizer"} <= set(kinds)
    assert figures["busy_ms_per_step"] == pytest.approx(sum(kinds.values()))
    assert len(figures["top"]) == 5 and figures["top"][0]["ms_per_step"] >= figures["top"][-1]["ms_per_step"]


def test_a_profile_that_was_never_stopped_says_so():
    with pytest.raises(ValueError, match="never stopped"):
        StepProfile(torch.device("cpu")).summary()
