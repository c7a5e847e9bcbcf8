"""Candidate TMA (tensor-descriptor) persistent matmul for the sweep."""
import torch
import triton
import triton.language as tl


@triton.jit
def _tile(tile_id, num_pid_in_group, num_pid_m, GROUP_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def mm_tma_kernel(a_ptr, b_ptr, c_ptr, sa_ptr, sb_ptr, M, N, K, stride_am, stride_b, stride_cm,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  NUM_SMS: tl.constexpr, B_KMAJOR: tl.constexpr, SCALED: tl.constexpr, IMPRECISE: tl.constexpr,
                  PREC: tl.constexpr = 0, SUBTILE: tl.constexpr = False):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    if B_KMAJOR:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[stride_b, 1], block_shape=[BLOCK_N, BLOCK_K])
    else:
        b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_b, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1],
                                       block_shape=[BLOCK_M, BLOCK_N // 2 if SUBTILE else BLOCK_N])
    start_pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    num_pid_in_group = GROUP_M * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _tile(tile_id, num_pid_in_group, num_pid_m, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([offs_m, ki * BLOCK_K])
            if B_KMAJOR:
                b = b_desc.load([offs_n, ki * BLOCK_K]).T
            else:
                b = b_desc.load([ki * BLOCK_K, offs_n])
            if IMPRECISE or not SCALED:
                acc = tl.dot(a, b, acc)
            elif PREC == 0:
                acc = tl.dot(a, b, acc, max_num_imprecise_acc=BLOCK_K)
            elif PREC == 1:
                acc += tl.dot(a, b)
            else:
                acc = tl.dot(a, b, acc, max_num_imprecise_acc=128)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _tile(tile_id_c, num_pid_in_group, num_pid_m, GROUP_M)
        offs_cm = pid_m * BLOCK_M
        offs_cn = pid_n * BLOCK_N
        if SCALED:
            rows = offs_cm + tl.arange(0, BLOCK_M)
            cols = offs_cn + tl.arange(0, BLOCK_N)
            acc = acc * tl.load(sa_ptr + rows, mask=rows < M, other=0.0)[:, None] * tl.load(sb_ptr + cols, mask=cols < N, other=0.0)[None, :]
        if SUBTILE:
            acc0, acc1 = tl.split(tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1)))
            c_desc.store([offs_cm, offs_cn], acc0.to(c_desc.dtype))
            c_desc.store([offs_cm, offs_cn + BLOCK_N // 2], acc1.to(c_desc.dtype))
        else:
            c_desc.store([offs_cm, offs_cn], acc.to(c_desc.dtype))


def _alloc(size, alignment, stream):
    return torch.empty(size, device="cuda", dtype=torch.int8)


def mm_tma(a, b, c, cfg, sa=None, sb=None, imprecise=False):
    triton.set_allocator(_alloc)
    M, K = a.shape
    N = b.shape[1]
    kmajor = b.stride(0) == 1
    nsm = torch.cuda.get_device_properties("cuda").multi_processor_count
    tiles = triton.cdiv(M, cfg["BLOCK_M"]) * triton.cdiv(N, cfg["BLOCK_N"])
    grid = (min(nsm, tiles),) if cfg.get("PERSISTENT", 1) else (tiles,)
    nprog = grid[0]
    return mm_tma_kernel[grid](a, b, c, sa if sa is not None else c, sb if sb is not None else c, M, N, K, a.stride(0),
                               b.stride(1) if kmajor else b.stride(0), c.stride(0), BLOCK_M=cfg["BLOCK_M"],
                               BLOCK_N=cfg["BLOCK_N"], BLOCK_K=cfg["BLOCK_K"], GROUP_M=cfg.get("GROUP_M", 8),
                               NUM_SMS=nprog, B_KMAJOR=kmajor, SCALED=sa is not None, IMPRECISE=imprecise,
                               PREC=cfg.get("PREC", 0), SUBTILE=cfg.get("SUBTILE", False),
                               num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
