"""Experimental variants for the H100 sweep (not shipped)."""
import triton
import triton.language as tl
from kernels.tiles import grouped_tile


@triton.jit
def _blk(acc, l_i, m_i, q, k_desc, v_desc, offs_m, start_n, S, qk_scale,
         MASKED: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    k = k_desc.load([start_n, 0])
    qk = tl.dot(q, k.T)
    if MASKED:
        cols = start_n + tl.arange(0, BLOCK_N)
        keep = cols[None, :] < S
        if CAUSAL:
            keep = keep & (cols[None, :] <= offs_m[:, None])
        qk = tl.where(keep, qk * qk_scale, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
    else:
        m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        p = tl.math.exp2(qk * qk_scale - m_new[:, None])
    alpha = tl.math.exp2(m_i - m_new)
    l_i = l_i * alpha + tl.sum(p, 1)
    v = v_desc.load([start_n, 0])
    acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
    return acc, l_i, m_new


@triton.jit
def attention_desc_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, S, sm_scale,
                          stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                          stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
                          CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
                          WS: tl.constexpr, TAIL: tl.constexpr = True):
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    q_desc = tl.make_tensor_descriptor(q_ptr + b * stride_qb + h * stride_qh, shape=[S, BLOCK_D], strides=[stride_qs, 1],
                                       block_shape=[BLOCK_M, BLOCK_D])
    k_desc = tl.make_tensor_descriptor(k_ptr + b * stride_kb + h * stride_kh, shape=[S, BLOCK_D], strides=[stride_ks, 1],
                                       block_shape=[BLOCK_N, BLOCK_D])
    v_desc = tl.make_tensor_descriptor(v_ptr + b * stride_vb + h * stride_vh, shape=[S, BLOCK_D], strides=[stride_vs, 1],
                                       block_shape=[BLOCK_N, BLOCK_D])
    o_desc = tl.make_tensor_descriptor(o_ptr + b * stride_ob + h * stride_oh, shape=[S, BLOCK_D], strides=[stride_os, 1],
                                       block_shape=[BLOCK_M, BLOCK_D])
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = q_desc.load([start_m * BLOCK_M, 0])
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = tl.minimum(S, (start_m + 1) * BLOCK_M) if CAUSAL else S
    lo = tl.minimum(S, start_m * BLOCK_M + 1) if CAUSAL else S
    full = (lo // BLOCK_N) * BLOCK_N
    for start_n in tl.range(0, full, BLOCK_N, warp_specialize=WS):
        acc, l_i, m_i = _blk(acc, l_i, m_i, q, k_desc, v_desc, offs_m, start_n, S, qk_scale, False, CAUSAL, BLOCK_N)
    if TAIL:
      for start_n in range(full, hi, BLOCK_N):
        acc, l_i, m_i = _blk(acc, l_i, m_i, q, k_desc, v_desc, offs_m, start_n, S, qk_scale, True, CAUSAL, BLOCK_N)
    out = acc / l_i[:, None]
    o_desc.store([start_m * BLOCK_M, 0], out.to(o_desc.dtype))


@triton.jit
def fp8_ws_kernel(a_ptr, b_ptr, c_ptr, a_scale_ptr, b_scale_ptr, M, N, K, stride_am, stride_b, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  PROMOTE: tl.constexpr, WS_OUTER: tl.constexpr, WS_INNER: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_b, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0), flatten=False, warp_specialize=WS_OUTER):
        pid_m, pid_n = grouped_tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WS_INNER):
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([off_n, k * BLOCK_K]).T
            acc = tl.dot(a, b, acc, max_num_imprecise_acc=PROMOTE)
        rows = off_m + tl.arange(0, BLOCK_M)
        cols = off_n + tl.arange(0, BLOCK_N)
        acc = (acc * tl.load(a_scale_ptr + rows, mask=rows < M, other=0.0)[:, None]
               * tl.load(b_scale_ptr + cols, mask=cols < N, other=0.0)[None, :])
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def attention_ws_masked_kernel(q_ptr, k_ptr, v_ptr, o_ptr, H, S, sm_scale,
                               stride_qb, stride_qh, stride_qs, stride_kb, stride_kh, stride_ks,
                               stride_vb, stride_vh, stride_vs, stride_ob, stride_oh, stride_os,
                               CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    """One warp-specialized loop over every key block up to the causal bound, each block masked."""
    start_m = tl.num_programs(0) - 1 - tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    q_desc = tl.make_tensor_descriptor(q_ptr + b * stride_qb + h * stride_qh, shape=[S, BLOCK_D], strides=[stride_qs, 1],
                                       block_shape=[BLOCK_M, BLOCK_D])
    k_desc = tl.make_tensor_descriptor(k_ptr + b * stride_kb + h * stride_kh, shape=[S, BLOCK_D], strides=[stride_ks, 1],
                                       block_shape=[BLOCK_N, BLOCK_D])
    v_desc = tl.make_tensor_descriptor(v_ptr + b * stride_vb + h * stride_vh, shape=[S, BLOCK_D], strides=[stride_vs, 1],
                                       block_shape=[BLOCK_N, BLOCK_D])
    o_desc = tl.make_tensor_descriptor(o_ptr + b * stride_ob + h * stride_oh, shape=[S, BLOCK_D], strides=[stride_os, 1],
                                       block_shape=[BLOCK_M, BLOCK_D])
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    q = q_desc.load([start_m * BLOCK_M, 0])
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = tl.minimum(S, (start_m + 1) * BLOCK_M) if CAUSAL else S
    for start_n in tl.range(0, hi, BLOCK_N, warp_specialize=True):
        acc, l_i, m_i = _blk(acc, l_i, m_i, q, k_desc, v_desc, offs_m, start_n, S, qk_scale, True, CAUSAL, BLOCK_N)
    o_desc.store([start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(o_desc.dtype))
